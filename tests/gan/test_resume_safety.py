"""What a run keeps when something goes wrong (issue 51): a refused resume changes no file of the run (every meta
entry a resume reads, the arrays and the step range are checked before checkpoints are set aside or logs truncated;
item 4); SIGTERM during the final FID stops it and records the run as interrupted (item 9); a kernel cache deleted
mid-run checkpoints and says to resume (item 5)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gan.config.schema import ConfigError
from gan.models.checkpoint import CheckpointError, checkpoint_path, load_checkpoint, save_checkpoint


def snapshot(run_dir: Path) -> dict[str, bytes]:
    """Every file of a run folder (but the lock and status, which any start rewrites) with its content."""
    return {str(p.relative_to(run_dir)): p.read_bytes() for p in sorted(run_dir.rglob("*"))
            if p.is_file() and p.name not in ("run.lock", "status.json") and "tensorboard" not in p.parts}


@pytest.fixture(scope="module")
def trained(tmp_path_factory, tiny_run) -> Path:
    """3 steps, a checkpoint after each (all kept)."""
    run_dir = tmp_path_factory.mktemp("trained")
    tiny_run(run_dir, "train.steps=3", "train.ckpt_every=1", "train.keep_last=5", "eval.enabled=false",
             "diagnostics.interval=1")
    return run_dir


def copy_with_meta(trained: Path, tmp_path: Path, **changes) -> Path:
    """A copy of `trained` whose newest checkpoint's meta has `changes` (None: the entry removed)."""
    import shutil

    run_dir = tmp_path / "run"
    shutil.copytree(trained, run_dir)
    path = checkpoint_path(run_dir, 3)
    arrays, meta = load_checkpoint(path)
    meta = {**meta, **changes}
    save_checkpoint(path, arrays, {k: v for k, v in meta.items() if v is not None})
    return run_dir


@pytest.mark.slow
@pytest.mark.parametrize("changes, said", [
    ({"step": -5}, "step"),
    ({"step": None}, "its meta has no 'step'"),
    ({"step": "../../pwn"}, "step"),
    ({"step": True}, "step"),
    ({"step": 2.5}, "step"),
    ({"config": 7}, "config"),
    ({"skipped_steps": -1}, "skipped_steps"),
    ({"skipped_steps": "many"}, "skipped_steps"),
    ({"diagnostics": ["x"]}, "diagnostics"),
    ({"diagnostics": {"checks": 1, "streaks": {"D/act1": ["a"]}}}, "diagnostics"),
])
def test_a_resume_refused_for_its_meta_changes_no_file(trained, tmp_path, tiny_run, changes, said):
    run_dir = copy_with_meta(trained, tmp_path, **changes)
    before = snapshot(run_dir)
    with pytest.raises(CheckpointError, match=said):
        tiny_run(run_dir, "train.steps=5", "train.ckpt_every=1", "train.keep_last=5", "eval.enabled=false",
                 "diagnostics.interval=1", "train.resume=auto")
    assert snapshot(run_dir) == before
    assert not (run_dir / "checkpoints" / "superseded").exists()


@pytest.mark.slow
def test_a_resume_refused_for_its_arrays_or_its_length_changes_no_file(trained, tmp_path, tiny_run):
    run_dir = copy_with_meta(trained, tmp_path)
    common = ["train.ckpt_every=1", "train.keep_last=5", "eval.enabled=false", "diagnostics.interval=1"]
    before = snapshot(run_dir)
    # an older checkpoint of the run, with train.steps below its step: nothing to train
    with pytest.raises(ConfigError, match="past train.steps=1"):
        tiny_run(run_dir, "train.steps=1", *common, f"train.resume={checkpoint_path(run_dir, 2)}")
    assert snapshot(run_dir) == before
    # a weight of the right shape but an integer dtype
    path = checkpoint_path(run_dir, 3)
    arrays, meta = load_checkpoint(path)
    name = next(k for k, a in arrays.items() if k.startswith("generator.") and a.ndim == 4)
    save_checkpoint(path, {**arrays, name: arrays[name].astype(np.int32)}, meta)
    before = snapshot(run_dir)
    with pytest.raises(CheckpointError, match=f"'{name}' is int32"):
        tiny_run(run_dir, "train.steps=5", *common, "train.resume=auto")
    assert snapshot(run_dir) == before


def copy_of_kernels(cache: Path) -> Path:
    """A kernel cache folder holding copies of the compiled kernels of this process's cache (no compiler run)."""
    import shutil

    from ops.build import cache_dir

    cache.mkdir()
    for entry in cache_dir().glob("*.so*"):
        shutil.copy(entry, cache / entry.name)
    return cache


class TermOnFirstBatch:
    """A stand-in Inception extractor that sends this process SIGTERM while it computes its first batch (a user
    pressing Ctrl-C during the end-of-run FID); counts the batches it was given."""

    def __init__(self) -> None:
        from tests.helpers import FakeExtractor

        self.fake, self.batches = FakeExtractor(), 0
        self.convention, self.sha256, self.describe = self.fake.convention, self.fake.sha256, self.fake.describe

    def features(self, images: np.ndarray, progress: bool = False) -> np.ndarray:
        import os
        import signal

        self.batches += 1
        if self.batches == 1:
            os.kill(os.getpid(), signal.SIGTERM)
        return self.fake.features(images)


@pytest.mark.slow
def test_sigterm_during_the_final_fid_stops_it_and_the_run_is_interrupted(monkeypatch, tmp_path, tiny_run):
    """Issue 51, item 9: the FID evaluation stops at the next feature batch, the step is checkpointed, and the run is
    recorded as interrupted (not finished, no metrics)."""
    import json

    from gan.metrics import inception

    extractor = TermOnFirstBatch()
    monkeypatch.setenv("LRELU_CACHE_DIR", str(copy_of_kernels(tmp_path / "cache")))  # no cached FID reference
    monkeypatch.setattr(inception, "FeatureExtractor", lambda **options: extractor)
    monkeypatch.setattr(inception, "archive_path", lambda path=None: tmp_path / "default_1.pt")
    monkeypatch.setattr(inception, "verify_archive", lambda path: inception.ARCHIVE_SHA256)
    run_dir = tmp_path / "run"
    summary = tiny_run(run_dir, "train.steps=2", "train.ckpt_every=100", "eval.fid=true", "eval.fid_samples=8",
                       "eval.fid_reference=40", "eval.interval=1000", "diagnostics.enabled=false")
    assert summary.interrupted and "fid" not in summary.metrics
    assert extractor.batches == 1  # of the reference's 5 batches of 8
    assert checkpoint_path(run_dir, 2).is_file()
    assert json.loads((run_dir / "status.json").read_text())["state"] == "interrupted"
    assert not (run_dir / "metrics.json").exists()


KERNEL_CACHE_GONE = """
import shutil, sys
from ops.build import cache_dir
from gan.config.schema import compose_config
from gan.training import outputs
from gan.training.loop import run

sample = outputs.RunOutputs._sample
def sample_without_cache(self, done):  # the user deletes the kernel cache folder while the run goes on
    shutil.rmtree(cache_dir())
    sample(self, done)
outputs.RunOutputs._sample = sample_without_cache
run(compose_config(sys.argv[2:]), sys.argv[1])
"""


@pytest.mark.slow
def test_deleting_the_kernel_cache_mid_run_checkpoints_and_says_to_resume(tmp_path, tiny_overrides):
    """Issue 51, item 5: the next kernel load (here the sample grid after step 3) fails; the run checkpoints that step
    and stops with one clear message and status failed; train.resume=auto then continues."""
    import json
    import subprocess
    import sys

    from tests.helpers import REPO, script_env

    cache = copy_of_kernels(tmp_path / "cache")
    run_dir = tmp_path / "run"
    overrides = [*tiny_overrides, "train.steps=3", "train.sample_every=3", "train.ckpt_every=100",
                 "eval.enabled=false", "diagnostics.enabled=false"]
    script = tmp_path / "gone.py"
    script.write_text(KERNEL_CACHE_GONE)
    done = subprocess.run([sys.executable, str(script), str(run_dir), *overrides], cwd=REPO, capture_output=True,
                          text=True, timeout=600, env={**script_env(), "LRELU_CACHE_DIR": str(cache)})
    assert done.returncode != 0
    assert "KernelCacheError: training stopped after step 3: the compiled kernel" in done.stderr
    assert "train.resume=auto" in done.stderr and str(cache) in done.stderr
    assert checkpoint_path(run_dir, 3).is_file()
    assert json.loads((run_dir / "status.json").read_text())["state"] == "failed"
