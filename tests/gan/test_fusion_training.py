"""fusion= in the DCGAN: config enum, block layout, checkpoints across fusion values, amp O2, graph_kernel on CPU
(which kind auto picks: tests/gan/test_plan.py).

Tolerances: fused and unfused runs share weights, data and latents; their losses differ only by float32
rounding order (fused kernel vs BatchNorm2d + LeakyReLU), amplified by each Adam step (lr 1e-3): rtol 1e-4
on the first step, 5e-3 after four. Under amp O2 (float16 convs), outputs and weight gradients of a
conv + norm/act block match nn.BatchNorm2d + nn.LeakyReLU within float16 rounding (rtol/atol 1e-2).
"""
from collections import OrderedDict
from typing import Callable

import mindspore as ms
import numpy as np
import pytest
from hydra.errors import ConfigCompositionException
from mindspore import amp, nn

from gan.config.plan import FUSION_KINDS
from gan.config.schema import ActConfig, ConfigError, Fusion, ModelConfig, RuntimeConfig, compose_config
from gan.models.checkpoint import CheckpointError, checkpoint_path
from gan.models.networks import Discriminator, Generator
from gan.training.runtime import setup_runtime
from ops import BatchNormAct, LeakyReLU, norm_act_layers

FUSION_RUN = ["diagnostics.enabled=false", "train.ckpt_every=1", "train.sample_every=100"]  # on top of TINY

# run() selects the device, which MindSpore refuses once any kernel ran: select it at collection, before any test.
setup_runtime(RuntimeConfig())


@pytest.fixture(scope="module")
def train(tiny_run) -> Callable:
    """train(run_dir, *overrides): a tiny fp32 graph-mode run in run_dir (conftest's TINY and FUSION_RUN)."""
    return lambda run_dir, *overrides: tiny_run(run_dir, *FUSION_RUN, *overrides)


def losses(summary) -> np.ndarray:
    return np.array([(s.loss_d, s.loss_g) for s in summary.history])


@pytest.mark.slow
def test_a_default_run_says_what_each_network_built(tmp_path, capsys, train):
    train(tmp_path, "train.dry_run=true", "model.conv_impl=gemm")
    out = capsys.readouterr().out
    assert "build plan:\n  G: model.conv_impl=gemm -> gemm, fusion=auto -> bn_act, act leaky_relu, norm batch, " \
           "layout NCHW\n  D: model.conv_impl=gemm -> gemm, fusion=auto -> bn_act, act leaky_relu, norm batch, " \
           "layout NCHW\n" in out


@pytest.mark.slow
def test_the_start_line_shows_d_unfused_under_a_gradient_penalty(tmp_path, capsys, train):
    """D's own plan is printed: under a penalty it runs unfused while G keeps the fused kernels."""
    train(tmp_path, "train.dry_run=true", "model.conv_impl=gemm", "train.loss=wgan_gp", "model.d_norm=none")
    lines = capsys.readouterr().out.split("build plan:\n")[1].splitlines()
    assert lines[0] == ("  G: model.conv_impl=gemm -> gemm, fusion=auto -> bn_act, act leaky_relu, norm batch, "
                        "layout NCHW")
    assert lines[1] == ("  D: model.conv_impl=gemm -> gemm, fusion=auto -> none, act leaky_relu, norm none, "
                        "layout NCHW (train.loss=wgan_gp differentiates D twice, and the fused kernels have first "
                        "derivatives only)")


def test_fusion_is_a_validated_enum_with_one_plan_row_per_kind():
    assert [f.value for f in Fusion] == ["auto", *FUSION_KINDS]  # auto: resolved by gan.config.plan.resolve_fusion
    assert compose_config(["fusion=bn_act"]).fusion.name == Fusion.bn_act
    with pytest.raises(ConfigCompositionException) as info:
        compose_config(["fusion.name=fused"])
    assert ("fusion.name" in str(info.value.__cause__)
            and "auto, none, bn_act, graph_kernel" in str(info.value.__cause__))


@pytest.mark.parametrize("net", [Generator, Discriminator])
def test_blocks_follow_fusion_with_the_same_parameters(net):
    model = ModelConfig(ngf=8, ndf=8, nz=16, conv_impl="native")
    unfused, fused = (net(model, ActConfig(clamp=64.0), 1, "native", kind) for kind in ("none", "bn_act"))
    cells = fused.layers.name_cells()
    bn_blocks = [name[2:] for name in cells if name.startswith("bn")]
    assert bn_blocks and all(type(cells[f"bn{i}"]) is BatchNormAct and f"act{i}" not in cells for i in bn_blocks)
    assert all(cells[f"bn{i}"].clamp == 64.0 for i in bn_blocks)
    plain = unfused.layers.name_cells()
    assert all(type(plain[f"bn{i}"]) is nn.BatchNorm2d and type(plain[f"act{i}"]) is LeakyReLU for i in bn_blocks)
    assert [(p.name, p.shape) for p in fused.get_parameters()] == [(p.name, p.shape) for p in unfused.get_parameters()]


@pytest.fixture(scope="module")
def runs(tmp_path_factory, train):
    """fusion=none for 4 steps, checkpoint every step; fusion=bn_act for 2 steps from the same seed."""
    return {kind: train(tmp_path_factory.mktemp(kind), f"fusion={kind}", f"train.steps={steps}")
            for kind, steps in (("none", 4), ("bn_act", 2))}


@pytest.mark.slow
def test_fused_training_matches_unfused(runs):
    np.testing.assert_allclose(losses(runs["bn_act"]), losses(runs["none"])[:2], rtol=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("source, target", [("none", "bn_act"), ("bn_act", "none")])
def test_resume_across_fusion_values_continues_the_run(runs, tmp_path, source, target, train):
    ckpt = checkpoint_path(runs[source].run_dir, 2)
    # fusion changes how the network is computed: allowed on resume with an override, logged as an event
    resumed = train(tmp_path, f"fusion={target}", "train.steps=4", "train.resume_override=true", f"train.resume={ckpt}")
    assert (resumed.start_step, resumed.end_step) == (2, 4)
    # Resuming loaded the weights, moving statistics and optimizer state: the run continues like fusion=none.
    np.testing.assert_allclose(losses(resumed), losses(runs["none"])[2:], rtol=5e-3)
    assert not np.allclose(losses(resumed)[0], losses(runs["none"])[0], rtol=1e-2)  # the state moved


@pytest.mark.slow
def test_fused_run_with_diagnostics_checkpoints_names_that_resume_unfused(tmp_path, train):
    # The probes wrap BatchNormAct without renaming its parameters, so the checkpoint loads under fusion=none.
    probed = ["diagnostics.enabled=true", "diagnostics.interval=1"]
    first = train(tmp_path / "fused", "fusion=bn_act", "train.steps=2", *probed)
    resumed = train(tmp_path / "unfused", "fusion=none", "train.steps=3", *probed, "train.resume_override=true",
                    f"train.resume={checkpoint_path(first.run_dir, 2)}")
    assert (resumed.start_step, resumed.end_step) == (2, 3) and np.isfinite(losses(resumed)).all()


@pytest.mark.slow
def test_resume_with_another_model_shape_is_still_an_error(runs, tmp_path, train):
    with pytest.raises(CheckpointError, match="shape"):
        train(tmp_path, "fusion=bn_act", "model.ngf=16", "train.steps=4", "train.resume_override=true",
              f"train.resume={checkpoint_path(runs['none'].run_dir, 2)}")


@pytest.mark.slow
def test_graph_kernel_on_cpu_fails_at_start(tmp_path, train):
    with pytest.raises(ConfigError, match="graph_kernel is not supported on device_target='CPU'.*GPU and Ascend"):
        train(tmp_path, "fusion=graph_kernel", "train.steps=2")
    assert not list(tmp_path.glob("checkpoints/*.ckpt"))


class ConvBlock(nn.Cell):
    """conv -> BatchNorm -> LeakyReLU as one DCGAN block, with fusion's layers or MindSpore's built-in ones."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        builtin = {"bn": nn.BatchNorm2d(6), "act": nn.LeakyReLU(0.2)}
        layers = builtin if kind == "builtin" else norm_act_layers(6, 0.2, fused=FUSION_KINDS[kind].fused_kernels)
        self.layers = nn.SequentialCell(OrderedDict(conv=nn.Conv2d(3, 6, 3, pad_mode="pad", padding=1), **layers))

    def construct(self, x):
        return self.layers(x)


def test_amp_o2_keeps_the_fused_cell_in_float32_and_matches_batchnorm():
    x = ms.Tensor(np.random.default_rng(0).standard_normal((4, 3, 7, 5)).astype(np.float32))
    results = {}
    for kind in ("builtin", "bn_act"):
        block = ConvBlock(kind)
        block.layers.name_cells()["conv"].weight.set_data(
            ms.Tensor(np.random.default_rng(1).normal(0, 0.3, (6, 3, 3, 3)).astype(np.float32)))
        block.set_train(True)
        wrapped = amp.auto_mixed_precision(block, "O2", ms.float16)
        # amp O2 treats BatchNormAct as the BatchNorm2d it subclasses: float32 inside, float16 output.
        assert type(block.layers.name_cells()["bn"]).__name__ == "_OutputTo16"

        def loss_fn(t):
            return wrapped(t).astype(ms.float32).square().mean()

        y = wrapped(x)
        loss, grads = ms.jit(ms.value_and_grad(loss_fn, None, block.trainable_params()))(x)
        results[kind] = [y.asnumpy(), loss.asnumpy()] + [g.asnumpy() for g in grads]
    for got, want in zip(results["bn_act"], results["builtin"]):
        np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2)
