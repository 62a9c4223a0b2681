"""Runs written before gan/ became packages still load and resume: tests/data/legacy_run is a 2-step dry run
(`python train.py train.dry_run=true model.ngf=8 model.ndf=8 model.nz=8 eval.enabled=false`) of that layout, its
checkpoint, Hydra config and logs kept as the run left them."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

from gan.models.checkpoint import load_training_checkpoint
from gan.models.from_checkpoint import generator_from_checkpoint
from tests.helpers import REPO, script_env

LEGACY = REPO / "tests" / "data" / "legacy_run"
CKPT = LEGACY / "checkpoints" / "step_00000002.ckpt"
OVERRIDES = ["model.ngf=8", "model.ndf=8", "model.nz=8", "eval.enabled=false"]


def test_the_legacy_checkpoint_loads_with_its_keys_and_meta():
    arrays, meta = load_training_checkpoint(CKPT)
    assert meta["step"] == 2 and meta["format"] == "lrelu-gan/dcgan/1"
    assert "generator.layers.conv0.weight" in arrays and "discriminator.layers.conv0.weight" in arrays
    assert any(k.startswith("opt_g.") for k in arrays) and any(k.startswith("opt_d.") for k in arrays)
    net, conf = generator_from_checkpoint(CKPT)
    assert conf.model.ngf == 8
    import mindspore as ms
    out = net(ms.Tensor(np.zeros((2, 8, 1, 1), np.float32))).asnumpy()
    assert out.shape == (2, 1, 32, 32) and np.isfinite(out).all()


@pytest.mark.slow
def test_the_legacy_run_folder_resumes(tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(LEGACY, run_dir)
    done = subprocess.run([sys.executable, "train.py", "train.resume=auto", "train.steps=3", *OVERRIDES,
                           f"hydra.run.dir={run_dir}"], cwd=REPO, env=script_env(), capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (run_dir / "checkpoints" / "step_00000003.ckpt").is_file()
    steps = [json.loads(line)["step"] for line in (run_dir / "losses.jsonl").read_text().splitlines()]
    assert steps == [1, 2, 3]
