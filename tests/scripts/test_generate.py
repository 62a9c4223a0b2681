"""scripts/generate.py writes a sample grid from a checkpoint and rejects files that are not checkpoints."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from gan.checkpoint import latest_checkpoint
from gan.config import compose_config
from gan.training import run

REPO = Path(__file__).resolve().parents[2]


def generate(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "GLOG_v": "3", "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, str(REPO / "scripts" / "generate.py"), *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """A 2-step dry run with an EMA generator; its sample grids use 16 latents from seed 0."""
    path = tmp_path_factory.mktemp("run")
    run(compose_config(["model.ngf=8", "model.ndf=8", "model.nz=16", "model.conv_impl=native", "train.batch_size=8",
                        "data=shapes", "data.num_images=32", "train.dry_run=true", "train.ema_beta=0.5",
                        "train.num_samples=16"]), path)
    return path


def pixels(path: Path) -> np.ndarray:
    with Image.open(path) as image:
        return np.asarray(image)


def test_reproduces_the_runs_final_sample_grid(run_dir, tmp_path):
    out = tmp_path / "grid.png"
    result = generate(str(latest_checkpoint(run_dir)), "--n", "16", "--out", str(out))
    assert result.returncode == 0, result.stderr[-3000:]
    assert pixels(out).shape == (4 * 34 + 2, 4 * 34 + 2, 3)  # 4x4 tiles of 32 px, 2 px padding, RGB
    np.testing.assert_array_equal(pixels(out), pixels(run_dir / "samples" / "step_000002.png"))


def test_no_ema_uses_the_raw_generator(run_dir, tmp_path):
    result = generate(str(latest_checkpoint(run_dir)), "--n", "16", "--no-ema", "--out", str(tmp_path / "raw.png"))
    assert result.returncode == 0, result.stderr[-3000:]
    assert not np.array_equal(pixels(tmp_path / "raw.png"), pixels(run_dir / "samples" / "step_000002.png"))


def test_rejects_a_file_that_is_not_a_checkpoint(tmp_path):
    bogus = tmp_path / "bogus.ckpt"
    bogus.write_bytes(b"not a checkpoint")
    result = generate(str(bogus), "--out", str(tmp_path / "x.png"))
    assert result.returncode == 2 and "bogus.ckpt" in result.stderr
    assert not (tmp_path / "x.png").exists()
