"""precision=bf16 on CPU (gan.training.precision): bfloat16 convolutions and activations through the oneDNN kernels and
the project's element-wise kernels, float32 Parameters and Adam moments, no loss scaling; refused at start on a CPU
without bfloat16 dot-product instructions (the check is injectable, and a subprocess lowers oneDNN's instruction set, so
both branches run on any CPU); checkpoints move between fp32 and bf16 runs; resume is exact within bf16.

Tolerances: 3 bf16 steps against fp32 on the same seed, weights and data: losses within 5e-2 (bfloat16 keeps
8 significant bits: the conv outputs differ by ~2^-9 relative per layer; measured max 1.3e-2 over these runs).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import mindspore as ms
import numpy as np
import pytest
from mindspore import Tensor

from gan.config.schema import ConfigError, RuntimeConfig, compose_config
from gan.training.loop import GANTrainer, run
from gan.training.precision import BF16_FLAGS, check_bf16_cpu
from gan.training.runtime import setup_runtime
from ops import onednn
from tests.helpers import needs_onednn

pytestmark = needs_onednn()
needs_bf16_cpu = pytest.mark.skipif(onednn.available() and not onednn.cpu_isa().bf16_dot,
                                    reason="this CPU has no bfloat16 dot-product instructions (precision=bf16 refused)")
REPO = Path(__file__).resolve().parents[2]
BF16_RUN = ["train.sample_every=100", "train.ckpt_every=100", "diagnostics.enabled=false"]  # on top of TINY_ONEDNN

setup_runtime(RuntimeConfig())  # run() selects the device, which MindSpore refuses once any kernel ran


@pytest.fixture(scope="module")
def train(tiny_onednn):
    """train(run_dir, *overrides): a tiny run on oneDNN convolutions (conftest's TINY_ONEDNN and BF16_RUN)."""
    return lambda run_dir, *overrides: run(compose_config(tiny_onednn + BF16_RUN + list(overrides)), run_dir)


def losses(summary) -> np.ndarray:
    return np.array([(s.loss_d, s.loss_g) for s in summary.history])


@pytest.mark.parametrize("isa, expected", [
    (onednn.CpuIsa("avx512_core", True, False), "emulated, 4-6x slower than float32"),
    (onednn.CpuIsa("avx2", False, False), "missing \\(oneDNN has bfloat16 convolutions on AVX-512 CPUs only\\)"),
])
def test_a_cpu_without_bf16_instructions_is_refused_naming_the_feature(isa, expected):
    with pytest.raises(ConfigError, match=f"needs bfloat16 dot-product instructions \\(CPU flag {BF16_FLAGS}\\).*"
                                          f"instruction set here: {isa.name}\\).*{expected}; use precision=fp32"):
        check_bf16_cpu(lambda: isa)


def test_bf16_cpu_check_passes_with_the_instructions_and_names_missing_kernels():
    amx = onednn.CpuIsa("avx10_1_512_amx", True, True)
    assert check_bf16_cpu(lambda: amx) is amx

    def unavailable():
        raise RuntimeError("oneDNN headers missing")

    with pytest.raises(ConfigError, match="model.conv_impl=onednn.*unavailable here: oneDNN headers missing"):
        check_bf16_cpu(unavailable)


@pytest.mark.slow
def test_train_py_refuses_bf16_where_onednn_lacks_bf16_instructions(tmp_path, tiny_onednn):
    """The real check in a fresh process whose oneDNN is limited to AVX-512 without AVX512_BF16/AMX
    ($ONEDNN_MAX_CPU_ISA): the run stops at start naming the CPU flags; on a CPU without AVX-512 the cap changes
    nothing and the message says the kernels are missing."""
    env = {**os.environ, "GLOG_v": "3", "PYTHONPATH": str(REPO), "ONEDNN_MAX_CPU_ISA": "AVX512_CORE"}
    done = subprocess.run([sys.executable, str(REPO / "train.py"), *tiny_onednn, *BF16_RUN, "precision=bf16",
                           f"hydra.run.dir={tmp_path}"], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert any(line.startswith("error: ConfigError: precision=bf16 on CPU needs bfloat16 dot-product instructions "
                               f"(CPU flag {BF16_FLAGS})") for line in done.stderr.splitlines())
    assert not (tmp_path / "checkpoints").exists()


def test_models_without_bf16_kernels_name_the_layer(config):
    with pytest.raises(ConfigError, match=r"layer generator.layers.\w+ \(\w+Dense\) has no bfloat16 kernel on CPU"):
        GANTrainer(config("experiment=ring8", "precision=bf16"), channels=2)  # the 2D MLP: dense layers


@needs_bf16_cpu
def test_bf16_layers_pass_bfloat16_between_them_and_keep_float32_parameters(config, tiny_onednn):
    """Every conv computes in bf16; between layers only bfloat16 flows, except out of G's last conv (into Tanh)
    and D's last conv (the logits): the networks take and return float32, with no cast op anywhere. The layers pass
    channels-last activations between them (gan.config.plan.resolve_layout)."""
    trainer = GANTrainer(config(*tiny_onednn, *BF16_RUN, "precision=bf16"), channels=3)
    assert trainer.g_run is trainer.g and trainer.d_run is trainer.d
    assert (trainer.plan.g.layout, trainer.plan.d.layout) == ("NHWC", "NHWC")
    for net, x, fp32_tail in ((trainer.g, np.zeros((2, 16, 1, 1), np.float32), 2),
                              (trainer.d, np.zeros((2, 3, 32, 32), np.float32), 1)):
        h, dtypes = Tensor(x), []
        for cell in net.layers.cell_list:
            h = cell(h)
            dtypes.append(h.dtype)
        assert dtypes == [ms.bfloat16] * (len(dtypes) - fp32_tail) + [ms.float32] * fp32_tail
        convs = [c for c in net.layers.cell_list if hasattr(c, "compute_dtype")]
        assert convs and all(c.compute_dtype == ms.bfloat16 for c in convs)


def test_bf16_and_fp32_trainers_hold_the_same_state(config, tiny_onednn):
    """Checkpoints move between fp32 and bf16 runs: the same keys, float32 master weights, the same shapes; and the
    bf16 plan keeps channels last. Building a trainer runs no kernel, so this holds on any CPU, bf16 instructions
    or not (a run with them is refused at start)."""
    bf16 = GANTrainer(config(*tiny_onednn, *BF16_RUN, "precision=bf16"), channels=3)
    assert (bf16.plan.g.layout, bf16.plan.d.layout) == ("NHWC", "NHWC")
    state = bf16.state_arrays()
    assert {a.dtype for a in state.values()} <= {np.dtype(np.float32), np.dtype(np.int32)}
    fp32 = GANTrainer(config(*tiny_onednn, *BF16_RUN), channels=3).state_arrays()
    assert {k: (v.dtype, v.shape) for k, v in state.items()} == {k: (v.dtype, v.shape) for k, v in fp32.items()}


@pytest.mark.slow
@needs_bf16_cpu
@pytest.mark.parametrize("fusion", ["auto", "bn_act", "none"])
def test_bf16_steps_are_finite_close_to_fp32_and_unscaled(tmp_path, fusion, train):
    fp32 = train(tmp_path / "fp32", "train.steps=3", f"fusion={fusion}")
    bf16 = train(tmp_path / "bf16", "train.steps=3", f"fusion={fusion}", "precision=bf16")
    assert all(s.finite for s in bf16.history) and bf16.skipped_steps == 0
    assert {(s.loss_scale_d, s.loss_scale_g) for s in bf16.history} == {(1.0, 1.0)}
    np.testing.assert_allclose(losses(bf16), losses(fp32), rtol=0, atol=5e-2)
    assert not np.array_equal(losses(bf16), losses(fp32))  # bfloat16 really ran


@pytest.mark.slow
@needs_bf16_cpu
def test_bf16_resume_is_exact_and_checkpoints_move_between_fp32_and_bf16(tmp_path, train):
    whole = train(tmp_path / "whole", "train.steps=4", "precision=bf16")
    train(tmp_path / "parts", "train.steps=2", "train.ckpt_every=2", "precision=bf16")
    resumed = train(tmp_path / "parts", "train.steps=4", "train.resume=auto", "precision=bf16")
    assert losses(resumed).tolist() == losses(whole)[2:].tolist()  # bit for bit
    assert len(set(losses(whole)[:, 0])) == 4
    # fp32 -> bf16 -> fp32: the same keys and dtypes (float32 master weights), resumed with resume_override
    train(tmp_path / "mixed", "train.steps=2", "train.ckpt_every=2")
    to_bf16 = train(tmp_path / "mixed", "train.steps=3", "train.ckpt_every=1", "train.resume=auto",
                    "train.resume_override=true", "precision=bf16")
    back = train(tmp_path / "mixed", "train.steps=4", "train.resume=auto", "train.resume_override=true")
    fp32 = train(tmp_path / "fp32", "train.steps=4")
    assert np.isfinite(losses(to_bf16)).all() and np.isfinite(losses(back)).all()
    np.testing.assert_allclose(np.concatenate([losses(to_bf16), losses(back)]), losses(fp32)[2:], atol=5e-2)


@pytest.mark.slow
@needs_bf16_cpu
def test_bf16_with_diagnostics_probes_every_step(tmp_path, train):
    summary = train(tmp_path, "train.steps=2", "precision=bf16", "diagnostics.enabled=true", "diagnostics.interval=1")
    assert np.isfinite(losses(summary)).all()
    assert (tmp_path / "diagnostics.jsonl").read_text().count("\n") == 2
