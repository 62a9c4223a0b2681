"""Fusion of a conv's bias with the activation after it (D without BatchNorm under fusion=bn_act|conv_act):
forward and gradients against the unfused conv + activation on every conv path, with and without spectral norm;
the discriminators built that way; the dead-channel probes on fused layers; D unfused under a gradient penalty."""
import json

import mindspore as ms
import numpy as np
import pytest
from mindspore import Tensor, nn

from gan.config.schema import ActConfig, ModelConfig
from gan.diagnostics.probes import attach, set_probing
from gan.models.build import build_plan
from gan.models.layers import BiasAct, OnednnConv2dAct, SpectralNorm, fuse_conv_act, make_conv
from gan.models.networks import Discriminator, init_dcgan_weights
from ops import LeakyReLU, PReLU, onednn
from tests.helpers import needs_onednn

IMPLS = ["native", "gemm"] + (["onednn"] if onednn.available() else [])
ACTS = {"leaky0.2": lambda c: LeakyReLU(0.2), "relu_clamp": lambda c: LeakyReLU(0.0, clamp=0.5),
        "prelu": lambda c: PReLU(c, 0.25), "prelu_shared_clamp": lambda c: PReLU(1, 0.1, clamp=1.0)}
RTOL, ATOL = 1e-4, 1e-5


def _layers(impl: str, spectral: bool, act_name: str, fusion: str = "bn_act"):
    """(unfused conv + act, fused layer with the same parameters, input x), seeded."""
    rng = np.random.default_rng(0)
    conv = make_conv(3, 6, 4, 2, 1, has_bias=True, impl=impl, spectral_norm=spectral)
    conv.weight.set_data(Tensor(rng.normal(0, 0.3, conv.weight.shape).astype(np.float32)))
    conv.bias.set_data(Tensor(rng.normal(0, 0.5, 6).astype(np.float32)))
    if spectral:
        conv.reset_u(rng)
    act = ACTS[act_name](6)
    if isinstance(act, PReLU):
        act.weight.set_data(Tensor(rng.uniform(0.0, 0.5, act.weight.shape).astype(np.float32)))
    fused = fuse_conv_act(conv, act, fusion)
    ms.load_param_into_net(fused, {q.name: q.clone() for q in conv.get_parameters()}, strict_load=False)
    if isinstance(act, PReLU):
        fused.prelu_weight.set_data(act.weight.value().copy())
    x = Tensor(rng.standard_normal((2, 3, 8, 8)).astype(np.float32))
    return nn.SequentialCell([conv, act]), fused, x


def _grads(net: nn.Cell, x: Tensor, seed: np.ndarray) -> list[np.ndarray]:
    """[y, dL/dx, dL/dparams...] of L = sum(net(x) * seed), in the order of net.trainable_params()."""
    params = net.trainable_params()
    y, (gx, gp) = ms.value_and_grad(lambda t: (net(t) * Tensor(seed)).sum(), 0, params)(x)
    return [net(x).asnumpy(), gx.asnumpy()] + [g.asnumpy() for g in gp]


@pytest.mark.parametrize("act_name", list(ACTS))
@pytest.mark.parametrize("spectral", [False, True])
@pytest.mark.parametrize("impl", IMPLS)
def test_fused_bias_act_matches_conv_then_activation(impl, spectral, act_name):
    unfused, fused, x = _layers(impl, spectral, act_name)
    assert isinstance(fused, BiasAct) and isinstance(fused, SpectralNorm) == spectral
    names = [q.name.rsplit(".", 1)[-1] for q in fused.trainable_params()]
    assert names == ["weight", "bias"] + (["prelu_weight"] if "prelu" in act_name else [])
    seed = np.random.default_rng(1).standard_normal((2, 6, 4, 4)).astype(np.float32)
    got, want = _grads(fused, x, seed), _grads(unfused, x, seed)
    assert len(got) == len(want)
    for name, g, w in zip(["y", "dx", *names], got, want):
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL * max(1.0, float(np.abs(w).max())), err_msg=name)


@needs_onednn()
def test_conv_act_fuses_the_spectral_onednn_conv_into_one_primitive():
    unfused, fused, x = _layers("onednn", True, "leaky0.2", fusion="conv_act")
    assert isinstance(fused, OnednnConv2dAct) and isinstance(fused, SpectralNorm)
    seed = np.random.default_rng(1).standard_normal((2, 6, 4, 4)).astype(np.float32)
    for name, g, w in zip(["y", "dx", "weight", "bias"], _grads(fused, x, seed), _grads(unfused, x, seed)):
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL * max(1.0, float(np.abs(w).max())), err_msg=name)
    _, prelu_fused, _ = _layers("onednn", True, "prelu", fusion="conv_act")  # no oneDNN PReLU post-op: bias_act
    assert isinstance(prelu_fused, BiasAct)


def test_nothing_to_fuse_keeps_two_layers():
    assert fuse_conv_act(make_conv(3, 6, 4, 2, 1, impl="gemm"), LeakyReLU(0.2), "bn_act") is None  # no bias
    assert fuse_conv_act(make_conv(3, 6, 4, 2, 1, has_bias=True, impl="gemm"), LeakyReLU(0.2), "none") is None
    from ops import ELU
    assert fuse_conv_act(make_conv(3, 6, 4, 2, 1, has_bias=True, impl="gemm"), ELU(), "bn_act") is None


def _square_sum(net: nn.Cell):
    """x -> sum(net(x) ** 2) (a closure: graph mode resolves `net` from it)."""
    def loss(x: Tensor) -> Tensor:
        return (net(x) ** 2).sum()
    return loss


@pytest.mark.parametrize("d_norm", ["none", "spectral"])
def test_discriminator_without_batchnorm_fuses_every_block_in_graph_mode(d_norm):
    """D (d_norm none|spectral) with fusion=bn_act: every block one fused layer, the parameter names of
    fusion=none, and in a jitted value_and_grad the same logits and gradients."""
    model, act = ModelConfig(ngf=8, ndf=8, nz=16, conv_impl="gemm", d_norm=d_norm), ActConfig(clamp=4.0)
    nets = {kind: Discriminator(model, act, 1, "gemm", kind) for kind in ("none", "bn_act")}
    cells = nets["bn_act"].layers.name_cells()
    assert all(isinstance(cells[f"conv{i}"], BiasAct) for i in range(3)) and "act0" not in cells
    assert [q.name for q in nets["bn_act"].get_parameters()] == [q.name for q in nets["none"].get_parameters()]
    init_dcgan_weights(nets["none"], np.random.default_rng(0))
    ms.load_param_into_net(nets["bn_act"], {q.name: q.clone() for q in nets["none"].get_parameters()},
                           strict_load=True)
    x = Tensor(np.random.default_rng(1).standard_normal((4, 1, 32, 32)).astype(np.float32))
    results = {}
    for kind, net in nets.items():
        loss, (gx, grads) = ms.jit(ms.value_and_grad(_square_sum(net), 0, net.trainable_params()))(x)
        results[kind] = [loss.asnumpy(), gx.asnumpy()] + [g.asnumpy() for g in grads]
    for got, want in zip(results["bn_act"], results["none"]):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=1e-4 * float(np.abs(want).max()))


def test_probes_see_the_fused_layers_like_the_unfused_activations():
    """Dead-channel statistics (neg_frac, mean |y|) of a fused D equal those of the unfused D."""
    model, act = ModelConfig(ngf=8, ndf=8, nz=16, conv_impl="gemm", d_norm="none"), ActConfig()
    x = Tensor(np.random.default_rng(1).standard_normal((4, 1, 32, 32)).astype(np.float32))
    stats = {}
    for kind in ("none", "bn_act"):
        net = Discriminator(model, act, 1, "gemm", kind)
        init_dcgan_weights(net, np.random.default_rng(0))
        probes = attach(net, x, "D")
        set_probing(probes, True)
        net(x)
        stats[kind] = [p.collect() for p in probes]
    assert len(stats["bn_act"]) == len(stats["none"]) == 3
    for got, want in zip(stats["bn_act"], stats["none"]):
        np.testing.assert_allclose(got.neg_frac, want.neg_frac, atol=1e-6)
        np.testing.assert_allclose(got.out_abs, want.out_abs, rtol=1e-4)


def test_gradient_penalty_keeps_d_unfused(config):
    assert build_plan(config("fusion=bn_act", "model.d_norm=none")).d.fusion == "bn_act"
    assert build_plan(config("fusion=bn_act", "experiment=wgan_gp_mnist")).d.fusion == "none"
    assert build_plan(config("fusion=bn_act", "model.d_norm=spectral", "train.r1_gamma=1")).d.fusion == "none"


def test_conv_act_without_batchnorm_keeps_diagnostics(config):
    """The probes see fused conv layers, so fusion=conv_act with d_norm=none no longer needs diagnostics off."""
    cfg = config("fusion=conv_act", "model.d_norm=none")
    assert cfg.diagnostics.enabled and cfg.fusion.name == "conv_act"


@pytest.mark.slow
def test_training_with_fused_spectral_prelu_d_records_slopes_and_resumes_exactly(tiny_run, tmp_path):
    """fusion=bn_act, d_norm=spectral, PReLU in D: every D block fused, the probes record the learned slopes
    of the fused layers, and a resumed run gives the uninterrupted run's losses bit for bit."""
    opts = ["fusion=bn_act", "model.d_norm=spectral", "act.d_kind=prelu", "diagnostics.interval=1",
            "eval.enabled=false", "train.ckpt_every=2"]
    whole = tiny_run(tmp_path / "whole", *opts, "train.steps=4")
    record = [json.loads(line) for line in (tmp_path / "whole" / "diagnostics.jsonl").read_text().splitlines()][-1]
    assert sorted(record["slopes"]) == ["D/act0", "D/act1", "D/act2"]  # fused into conv<i>, named as unfused
    model, act = ModelConfig(ngf=8, ndf=8, nz=16, d_norm="spectral"), ActConfig(d_kind="prelu")
    names = {kind: [q.name for q in Discriminator(model, act, 1, "gemm", kind).get_parameters()]
             for kind in ("none", "bn_act")}
    assert sorted(names["bn_act"]) == sorted(names["none"])  # the PReLU weights stay act<i>.weight
    assert {"D/act0", "D/act1", "D/act2"} <= set(record["layers"])
    tiny_run(tmp_path / "part", *opts, "train.steps=2")
    resumed = tiny_run(tmp_path / "part", *opts, "train.steps=4", "train.resume=auto")
    assert [(s.loss_d, s.loss_g) for s in resumed.history] == [(s.loss_d, s.loss_g) for s in whole.history][2:]
