"""kill -9 while checkpoints are written: every checkpoint left loads, the logs stay readable, resume=auto works.

Each round starts (or resumes) a tiny run that checkpoints every step and SIGKILLs it the moment a
checkpoint write is under way (its temporary file exists), after 1-2 more finished checkpoints (random)
and a random extra delay of 0-3 ms. PyNative mode keeps each process's start short.
"""
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gan.models.checkpoint import CHECKPOINT_DIR, latest_checkpoint, load_checkpoint

REPO = Path(__file__).resolve().parents[1]
RUN = ["train.num_samples=4", "train.sample_every=100000", "train.ckpt_every=1", "train.keep_last=2",
       "runtime.mode=pynative", "train.resume=auto"]  # on top of conftest's TINY
CODE = ("import sys; from gan.config.schema import compose_config; from gan.training.loop import run; "
        "run(compose_config(sys.argv[2:]), sys.argv[1])")
ROUNDS = 3


def start(run_dir: Path, tiny: list[str], *overrides: str) -> subprocess.Popen:
    env = {**os.environ, "GLOG_v": "3", "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-c", CODE, str(run_dir), *tiny, *RUN, *overrides], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def finished(run_dir: Path) -> list[Path]:
    return sorted((run_dir / CHECKPOINT_DIR).glob("step_*.ckpt"))


def kill_during_a_write(proc: subprocess.Popen, run_dir: Path, after: int, rng: random.Random) -> bool:
    """SIGKILL `proc` once a checkpoint write is under way after `after` more checkpoints; whether one was."""
    folder = run_dir / CHECKPOINT_DIR
    newest = latest_checkpoint(run_dir)
    target = (int(newest.stem.split("_")[1]) if newest else 0) + after
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"training exited early: {proc.stderr.read()[-3000:]}"
        names = os.listdir(folder) if folder.is_dir() else []
        writing = any(n.startswith(f".partial-{proc.pid}-") for n in names)  # not a leftover of the last kill
        reached = max((int(n[5:13]) for n in names if n.startswith("step_") and n.endswith(".ckpt")), default=0)
        if writing and reached >= target - 1:
            time.sleep(rng.uniform(0, 0.003))
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            return True
        time.sleep(0.0002)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return False


def assert_run_dir_is_sound(run_dir: Path) -> int:
    """Every finished checkpoint loads; returns the newest step."""
    steps = []
    for path in finished(run_dir):
        _, meta = load_checkpoint(path)  # CheckpointError if a kill left a torn file under a final name
        steps.append(meta["step"])
    assert steps, "no checkpoint survived"
    return max(steps)


@pytest.mark.slow
def test_kill_9_during_checkpoint_writes_leaves_loadable_checkpoints_and_resume_works(tmp_path, tiny_overrides):
    rng = random.Random(13)
    caught = 0
    for _ in range(ROUNDS):
        proc = start(tmp_path, tiny_overrides, "train.steps=1000000")
        caught += kill_during_a_write(proc, tmp_path, rng.randint(1, 2), rng)
        assert_run_dir_is_sound(tmp_path)
    assert caught >= ROUNDS // 2, f"only {caught} of {ROUNDS} kills landed during a checkpoint write"
    newest = assert_run_dir_is_sound(tmp_path)
    proc = start(tmp_path, tiny_overrides, f"train.steps={newest + 2}")
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-3000:]
    assert assert_run_dir_is_sound(tmp_path) == newest + 2
    # Killed appends were repaired on resume: complete records only, each step once, none missing.
    steps = [json.loads(line)["step"] for line in (tmp_path / "losses.jsonl").read_text().splitlines()]
    assert steps == list(range(1, newest + 3))
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert [e["kind"] for e in events].count("resume") >= ROUNDS  # every round after the first resumed
