"""`python train.py` as a user runs it: --help, config errors at start, a dry run, Ctrl-C."""
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import REPO, script_env

pytestmark = pytest.mark.slow  # every test here is end-to-end


def train_cmd(*args: str) -> list[str]:
    return [sys.executable, str(REPO / "train.py"), *args]


def run_train(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(train_cmd(*args), cwd=REPO, env=script_env(), capture_output=True, text=True,
                          timeout=timeout)


def test_help_lists_groups_and_options():
    out = run_train("--help").stdout
    for line in ("model: dcgan128, dcgan32, dcgan64", "data: fashion_mnist, folder, grid25, mnist, ring8, shapes",
                 "precision: bf16, fp16, fp32",
                 "act: adaptive, default, elu, prelu, preset_highres, preset_lowres, preset_pointcloud, "
                 "preset_video, rrelu",
                 "fusion: auto, bn_act, conv_act, graph_kernel, none",
                 "runtime: default", "train: default", "diagnostics: default", "eval: default",
                 "experiment: dead_channels, grid25, ring8, slope_study, sngan_mnist, wgan_gp_mnist"):
        assert line in out


@pytest.mark.parametrize("override, key", [("train.stepz=3", "train.stepz"), ("train.steps=abc", "train.steps"),
                                           ("runtime.mode=fast", "runtime.mode='fast'")])
def test_config_error_fails_at_start_naming_the_key(override, key, tmp_path):
    result = run_train(override, f"hydra.run.dir={tmp_path}")
    assert result.returncode != 0
    assert key in result.stderr
    assert not (tmp_path / "samples").exists()


@pytest.mark.parametrize("override, message", [
    ("data=folder", "error: ConfigError: data=folder needs data.root=PATH"),
    ("train.resume={junk}", "error: CheckpointError: checkpoint '{junk}' is truncated or was not written by lrelu-gan"),
])
def test_an_error_the_user_can_fix_is_one_line_without_a_traceback(override, message, tmp_path):
    """Errors raised once training has started (gan.training.loop.USER_ERRORS) are one line naming what to change, with
    Hydra's HYDRA_FULL_ERROR hint below it and no traceback (that is for the project's own bugs); the run folder
    still records the failure."""
    junk = tmp_path / "junk.ckpt"
    junk.write_bytes(b"not a checkpoint")
    result = run_train(override.format(junk=junk), f"hydra.run.dir={tmp_path / 'run'}")
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert any(line.startswith(message.format(junk=junk)) for line in result.stderr.splitlines())
    status = json.loads((tmp_path / "run" / "status.json").read_text())
    assert status["state"] == "failed" and status["error"].startswith(message.format(junk=junk)[len("error: "):])


def test_dry_run_from_the_command_line(tmp_path, tiny_overrides):
    result = run_train(*tiny_overrides, "train.dry_run=true", f"hydra.run.dir={tmp_path}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"run directory: {tmp_path}" in result.stdout and "negative_slope: 0.2" in result.stdout
    assert "loss_d=" in result.stderr and "img/s=" in result.stderr  # the progress bar
    assert (tmp_path / "samples" / "step_000002.png").is_file()
    assert (tmp_path / "checkpoints" / "step_00000002.ckpt").is_file()


def training_at_step_1(run_dir: Path, tiny: list[str], *overrides: str) -> subprocess.Popen:
    """`train.py` of the TINY model (`tiny`: the tiny_overrides fixture) sampling every step into run_dir (stdout
    and stderr in one pipe), once it finished step 1."""
    args = train_cmd(*tiny, "train.steps=100000", "train.sample_every=1", *overrides, f"hydra.run.dir={run_dir}")
    proc = subprocess.Popen(args, cwd=REPO, env=script_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    deadline = time.monotonic() + 240
    while not (run_dir / "samples" / "step_000001.png").exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"training did not reach step 1: {proc.communicate()[0][-3000:]}")
        time.sleep(0.5)
    return proc


def test_ctrl_c_saves_a_checkpoint_and_exits_130(tmp_path, tiny_overrides):
    proc = training_at_step_1(tmp_path, tiny_overrides)
    try:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130, out[-3000:]  # not 0: scripts and sweeps can tell it from a finished run
    assert "stopping after this step (saving a checkpoint); Ctrl-C again to abort without saving" in out
    assert "interrupted: saved" in out
    assert list((tmp_path / "checkpoints").glob("step_*.ckpt"))


def test_ctrl_c_twice_aborts_without_saving_and_exits_130(tmp_path, tiny_overrides):
    """The second Ctrl-C comes right after the first one's notice, while the step still writes its 4096-image
    sample grid (slow on purpose): the run stops there, saves nothing, says so, no traceback, exit 130."""
    proc = training_at_step_1(tmp_path, tiny_overrides, "train.num_samples=4096", "train.ckpt_every=100000")
    try:
        proc.send_signal(signal.SIGINT)
        seen = []
        for line in proc.stdout:  # the notice comes from the signal handler, at once
            seen.append(line)
            if "Ctrl-C again to abort without saving" in line:
                proc.send_signal(signal.SIGINT)
                break
        out = "".join(seen) + proc.communicate(timeout=120)[0]
    finally:
        proc.kill()
    assert proc.returncode == 130, out[-3000:]
    assert "aborted by a second Ctrl-C (or SIGTERM) without saving: nothing was saved since the last checkpoint, " \
           "and this run has none" in out, out[-3000:]
    assert "Traceback" not in out and "interrupted: saved" not in out
    assert not list((tmp_path / "checkpoints").glob("*.ckpt"))


def test_an_empty_run_dir_is_refused_before_anything_is_written(tmp_path):
    """Issue 51, L9: hydra.run.dir='' wrote the run (checkpoints, logs, lock, .hydra/) into the current folder."""
    result = subprocess.run(train_cmd("hydra.run.dir=''", "train.dry_run=true", "eval.enabled=false"), cwd=tmp_path,
                            env=script_env(), capture_output=True, text=True, timeout=300)
    assert result.returncode != 0
    assert "the run directory is empty ('')" in result.stderr and "hydra.run.dir=outputs/my_run" in result.stderr
    assert list(tmp_path.iterdir()) == []
