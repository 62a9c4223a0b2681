"""Run directories (gan.run.directory and the loop around it): a used directory refuses a fresh run, one run at a time
holds the lock, status.json, resume checks of the data and of the length, images vanishing, a double Ctrl-C."""
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from gan.config.schema import ConfigError
from gan.data import sources as gdata
from gan.data.sources import DataError
from gan.models.checkpoint import checkpoint_path, latest_checkpoint
from gan.run.directory import LOCK_FILE, RunDirError, hold, let_go, run_state
from gan.run.files import read_events, read_jsonl
from gan.training.loop import TrainingAborted
from gan.training.outputs import RunOutputs
from tests.helpers import REPO, script_env

pytestmark = pytest.mark.slow  # every test here is end-to-end


@pytest.fixture(scope="module")
def used(tmp_path_factory, tiny_run):
    """A finished 4-step run with checkpoints at steps 2 and 4."""
    run_dir = tmp_path_factory.mktemp("used")
    tiny_run(run_dir, "train.steps=4", "train.ckpt_every=2")
    return run_dir


def snapshot(run_dir: Path) -> dict[str, str]:
    """Every file below run_dir with a hash of its content."""
    return {str(p.relative_to(run_dir)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(run_dir.rglob("*")) if p.is_file()}


def test_a_finished_run_records_its_state(used):
    status = run_state(used)
    assert status["state"] == "finished" and status["step"] == 4 and status["pid"] == os.getpid()
    assert json.loads((used / LOCK_FILE).read_text())["pid"] == os.getpid()  # the holder it named


def test_a_fresh_run_in_a_used_directory_is_refused_and_changes_nothing(used, tmp_path, tiny_run):
    copy = tmp_path / "copy"
    shutil.copytree(used, copy)
    before = snapshot(copy)
    with pytest.raises(RunDirError) as info:  # it would have lost its checkpoints to the old run's step 4
        tiny_run(copy, "train.steps=2", "train.ckpt_every=1", "seed=5")
    for text in (str(copy), "already holds the files of another run", "checkpoints, losses.jsonl",
                 "train.resume=auto", "hydra.run.dir=PATH"):
        assert text in str(info.value), text
    with pytest.raises(RunDirError, match="a checkpoint of another directory"):  # two runs' files mixed, also
        tiny_run(copy, "train.steps=6", f"train.resume={checkpoint_path(tmp_path / 'elsewhere', 2)}")
    assert snapshot(copy) == before


def test_resume_auto_without_a_checkpoint_starts_over_at_step_0(tmp_path, tiny_run):
    """An earlier attempt died before its first checkpoint: its records past step 0 are dropped, as a resume
    drops those past its checkpoint, instead of being mixed with the new ones."""
    for step in (1, 2, 3):
        with open(tmp_path / "losses.jsonl", "a") as f:
            f.write(json.dumps({"step": step, "loss_d": 9.0, "loss_g": 9.0, "d_x": 0.5, "d_g_z": 0.5}) + "\n")
    summary = tiny_run(tmp_path, "train.steps=2", "train.resume=auto")
    assert summary.start_step == 0
    assert [r["step"] for r in read_jsonl(tmp_path / "losses.jsonl")] == [1, 2]
    assert all(r["loss_d"] != 9.0 for r in read_jsonl(tmp_path / "losses.jsonl"))


HOLDER = ("import sys, time; from gan.run.directory import hold; hold(sys.argv[1], None); "
          "print('held', flush=True); time.sleep(600)")


def test_a_second_run_in_a_locked_directory_fails_at_start_naming_the_holder(tmp_path, tiny_run):
    run_dir = tmp_path / "run"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(run_dir)], env=script_env(), stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        named = rf"in use by another training run \(pid {holder.pid} on {socket.gethostname()}, started "
        with pytest.raises(RunDirError, match=named):
            tiny_run(run_dir, "train.steps=1")
        cli = subprocess.run([sys.executable, str(REPO / "train.py"), "train.dry_run=true", f"hydra.run.dir={run_dir}"],
                             cwd=REPO, env=script_env(), capture_output=True, text=True, timeout=300)
        assert cli.returncode == 1 and "Traceback" not in cli.stderr
        assert f"error: {run_dir} is in use by another training run (pid {holder.pid}" in cli.stderr
        assert not (run_dir / ".hydra").exists()  # refused before Hydra wrote into the directory
    finally:
        holder.kill()
        holder.wait()
    assert hold(run_dir, None)  # the kernel dropped the dead holder's lock
    let_go(run_dir)


def test_a_run_directory_that_cannot_be_written_is_named_before_hydra_fails_on_it(tmp_path):
    """(On a read-only filesystem the last line was Hydra's `Unable to configure handler 'file'`.) Here the
    folder cannot be made: its parent is a file."""
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    with pytest.raises(RunDirError, match=r"the run directory .*a_file/run is not writable \(Not a directory\); "
                                          r"choose a writable hydra.run.dir=PATH"):
        hold(blocker / "run", None)
    cli = subprocess.run([sys.executable, str(REPO / "train.py"), f"hydra.run.dir={blocker / 'run'}"], cwd=REPO,
                         env=script_env(), capture_output=True, text=True, timeout=300)
    assert cli.returncode == 1 and "Traceback" not in cli.stderr
    assert cli.stderr.strip().endswith("is not writable (Not a directory); choose a writable hydra.run.dir=PATH")


def test_train_py_refuses_a_used_directory_before_hydra_rewrites_its_config(tmp_path):
    run_dir = tmp_path / "old"
    (run_dir / ".hydra").mkdir(parents=True)
    (run_dir / ".hydra" / "config.yaml").write_text("seed: 1\n")
    (run_dir / "losses.jsonl").write_text('{"step": 1, "loss_d": 1.0, "loss_g": 1.0, "d_x": 0.5, "d_g_z": 0.5}\n')
    before = snapshot(run_dir)
    cli = subprocess.run([sys.executable, str(REPO / "train.py"), "seed=2", f"hydra.run.dir={run_dir}"], cwd=REPO,
                         env=script_env(), capture_output=True, text=True, timeout=300)
    assert cli.returncode == 1 and "already holds the files of another run (losses.jsonl)" in cli.stderr
    after = snapshot(run_dir)
    assert {k: v for k, v in after.items() if k != LOCK_FILE} == before  # .hydra/config.yaml still says seed 1


def test_a_failed_run_records_why(tmp_path, tiny_run):
    with pytest.raises(FileNotFoundError):
        tiny_run(tmp_path, "data=folder", f"data.root={tmp_path / 'missing'}")
    status = run_state(tmp_path)
    assert status["state"] == "failed" and "FileNotFoundError: data.root=" in status["error"]


def test_resume_with_fewer_steps_than_the_checkpoint_is_an_error_and_equal_is_nothing_to_do(used, tmp_path,
                                                                                           tiny_run):
    copy = tmp_path / "copy"
    shutil.copytree(used, copy)
    with pytest.raises(ConfigError, match=r"step_00000004.ckpt is at step 4, past train.steps=3: there is nothing "
                                          r"to train; set train.steps above 4"):
        tiny_run(copy, "train.steps=3", "train.resume=auto")
    done = tiny_run(copy, "train.steps=4", "train.resume=auto")
    assert (done.start_step, done.end_step, done.history) == (4, 4, [])
    assert done.checkpoint == checkpoint_path(copy, 4) and done.checkpoint.is_file()  # not "checkpoint None"


def _folder(root: Path, count: int, first: int = 0) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(first)
    for i in range(first, first + count):
        Image.fromarray(rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)).save(root / f"img_{i:02d}.png")
    return root


def test_resume_notices_other_data_in_the_folder(tmp_path, tiny_run):
    root = _folder(tmp_path / "images", 16)
    folder = ["data=folder", f"data.root={root}", "data.num_images=null"]
    tiny_run(tmp_path / "run", *folder, "train.steps=2", "train.ckpt_every=2")
    _folder(root, 2, first=16)  # two images added after the checkpoint
    with pytest.raises(ConfigError, match=r"data.fingerprint: \{.*'images': 16.*\} -> \{.*'images': 18"):
        tiny_run(tmp_path / "run", *folder, "train.steps=3", "train.resume=auto")
    tiny_run(tmp_path / "run", *folder, "train.steps=3", "train.resume=auto", "train.resume_override=true")
    override = [e for e in read_events(tmp_path / "run") if e["kind"] == "resume_override"]
    assert list(override[0]["detail"]["changed"]) == ["data.fingerprint"]


def _at_step(monkeypatch, step: int, action) -> None:
    """Run `action()` right after training step `step` (RunOutputs.after_step)."""
    original = RunOutputs.after_step

    def after_step(self, done, *args):
        original(self, done, *args)
        if done == step:
            action()

    monkeypatch.setattr(RunOutputs, "after_step", after_step)


def test_images_that_vanish_during_training_are_skipped_then_too_many_stop_with_a_checkpoint(tmp_path, tiny_run,
                                                                                            monkeypatch):
    monkeypatch.setattr(gdata, "PIPELINE_CHUNK_STEPS", 1)  # every step's files are read when the step starts
    root = _folder(tmp_path / "images", 16)
    folder = ["data=folder", f"data.root={root}", "data.num_images=null", "train.ckpt_every=100"]
    _at_step(monkeypatch, 1, lambda: (root / "img_03.png").unlink())
    summary = tiny_run(tmp_path / "one", *folder, "train.steps=4")  # batch 8 of 16: img_03 is due within 2 steps
    assert summary.end_step == 4 and summary.unreadable_images == 1
    [skip] = [e for e in read_events(tmp_path / "one") if e["kind"] == "data_skip"]
    assert skip["detail"]["file"] == "img_03.png" and skip["detail"]["count"] == 1
    assert "FileNotFoundError" in skip["detail"]["reason"]

    monkeypatch.undo()
    monkeypatch.setattr(gdata, "PIPELINE_CHUNK_STEPS", 1)
    root = _folder(tmp_path / "images2", 16)
    _at_step(monkeypatch, 2, lambda: [p.unlink() for p in sorted(root.glob("*.png"))[:8]])
    with pytest.raises(DataError, match=r"training stopped after step (2|3): .* images under data.root=.* became "
                                        r"unreadable during training .*; saved .*step_0000000(2|3).ckpt"):
        tiny_run(tmp_path / "many", *folder[:1], f"data.root={root}", *folder[2:], "train.steps=20")
    assert latest_checkpoint(tmp_path / "many") is not None  # the steps trained are not lost


def _ctrl_c() -> None:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.2)  # the handler runs before anything else happens


def test_second_ctrl_c_aborts_without_saving_naming_the_last_checkpoint(tmp_path, tiny_run, monkeypatch, capfd):
    _at_step(monkeypatch, 2, lambda: [_ctrl_c(), _ctrl_c()])
    with pytest.raises(TrainingAborted, match=r"nothing was saved since the last checkpoint, .*step_00000002.ckpt"):
        tiny_run(tmp_path, "train.steps=10", "train.ckpt_every=1", "train.keep_last=5")
    assert ("stopping after this step (saving a checkpoint); Ctrl-C again to abort without saving"
            in capfd.readouterr().err)
    assert latest_checkpoint(tmp_path) == checkpoint_path(tmp_path, 2)  # no step-3 save: the loop stopped at once
    assert run_state(tmp_path)["state"] == "aborted"


def test_second_ctrl_c_during_the_interrupt_checkpoint_aborts_it(tmp_path, tiny_run, monkeypatch):
    import gan.training.outputs

    real_save = gan.training.outputs.save_checkpoint

    def save_interrupted(path, arrays, meta):  # the second Ctrl-C lands while the interrupt checkpoint is written
        _ctrl_c()
        real_save(path, arrays, meta)

    _at_step(monkeypatch, 1, lambda: [_ctrl_c(),
                                      monkeypatch.setattr(gan.training.outputs, "save_checkpoint", save_interrupted)])
    with pytest.raises(TrainingAborted, match="nothing was saved since the last checkpoint, and this run has none"):
        tiny_run(tmp_path, "train.steps=10", "train.ckpt_every=100")
    assert not (tmp_path / "checkpoints").exists() or list((tmp_path / "checkpoints").iterdir()) == []
