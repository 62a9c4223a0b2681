"""precision=fp16 (amp O2 + dynamic loss scaling) trains the DCGAN through the custom LeakyReLU op.

fp16 and fp32 runs share seed, weights, data and latents. With loss scale 1024 no step overflows, so both
runs take the same 3 Adam steps (lr 1e-3) and their losses differ only by float16 rounding of the convs
and activations: atol 3e-2 (measured max 1.1e-2 over 4 steps, graph and PyNative, fusion none and bn_act; conv_act with
onednn convs too).
The default scale 65536 overflows the first steps' float16 gradients on purpose (the dynamic scaler
starts high and halves on each overflow), which makes those runs take fewer updates than fp32.
"""
from typing import Callable

import numpy as np
import pytest

from gan.config.schema import RuntimeConfig
from gan.models.layers import ConvAct
from gan.training.loop import GANTrainer
from gan.training.runtime import setup_runtime
from ops import BatchNormAct, LeakyReLU

FP16_RUN = ["train.sample_every=100", "train.ckpt_every=100", "diagnostics.enabled=false"]  # on top of TINY
CASES = [("graph", "none"), ("pynative", "none"), ("graph", "bn_act"), ("graph", "conv_act")]  # conv_act: onednn convs

# run() selects the device, which MindSpore refuses once any kernel ran: select it at collection, before any test.
setup_runtime(RuntimeConfig())


@pytest.fixture(scope="module")
def train(tiny_run) -> Callable:
    """train(run_dir, *overrides): a tiny 3-step run in run_dir (conftest's TINY and FP16_RUN)."""
    return lambda run_dir, *overrides: tiny_run(run_dir, *FP16_RUN, "train.steps=3", *overrides)


def losses(summary) -> np.ndarray:
    return np.array([(s.loss_d, s.loss_g) for s in summary.history])


@pytest.mark.parametrize("fusion", ["none", "auto"])
def test_fp16_models_use_the_custom_op(fusion, config, tiny_overrides):
    trainer = GANTrainer(config(*tiny_overrides, *FP16_RUN, "precision=fp16", f"fusion={fusion}"), channels=1)
    for net in (trainer.g, trainer.d):  # auto (bn_act with these native convs): the fused kernels carry the op
        assert any(isinstance(cell, (LeakyReLU, BatchNormAct, ConvAct)) for _, cell in net.cells_and_names())


@pytest.mark.slow
@pytest.mark.parametrize("mode, fusion", CASES)
def test_fp16_steps_are_finite_and_close_to_fp32(tmp_path, mode, fusion, train):
    common = (f"runtime.mode={mode}", f"fusion={fusion}", *(["model.conv_impl=onednn"] if fusion == "conv_act" else []))
    fp32 = train(tmp_path / "fp32", *common, "precision=fp32")
    fp16 = train(tmp_path / "fp16", *common, "precision=fp16", "precision.loss_scale=1024")
    assert all(s.finite for s in fp16.history) and fp16.skipped_steps == 0
    assert {(s.loss_scale_d, s.loss_scale_g) for s in fp16.history} == {(1024.0, 1024.0)}
    np.testing.assert_allclose(losses(fp16), losses(fp32), rtol=0, atol=3e-2)
    assert not np.array_equal(losses(fp16), losses(fp32))  # float16 really ran


@pytest.mark.slow
def test_default_loss_scale_backs_off_and_then_trains(tmp_path, train):
    summary = train(tmp_path, "precision=fp16", "train.steps=4")
    scales = [s.loss_scale_d for s in summary.history]
    assert np.isfinite(losses(summary)).all()
    assert scales == sorted(scales, reverse=True) and scales[-1] < 65536.0  # halved on overflow, not grown
    assert 0 < summary.skipped_steps < len(summary.history) and summary.history[-1].finite
