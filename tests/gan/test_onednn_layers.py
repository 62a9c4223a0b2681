"""gan.models.layers conv_impl=onednn: oneDNN's convolution primitives match the native and gemm layers; fusion=conv_act
(conv + bias + LeakyReLU + clamp as one primitive) matches the unfused layers.

Forward, input and weight gradients, with and without bias: the odd geometries of test_layers against
MindSpore's native layers, every DCGAN-32/64/128 layer geometry (real widths, batch 2) against the gemm
layers (themselves tested against native), a jitted G/D stack, and a gemm checkpoint resumed under onednn.

Tolerance: fp32, |onednn - reference| <= 1e-5 + 1e-4 * |reference| elementwise for the small cases; the
DCGAN layers sum up to 8192 products (512 channels x 4x4), so there atol scales with the output's magnitude:
1e-4 * max|reference| (summation order differs between oneDNN's blocked kernels and a GEMM).
"""
from __future__ import annotations

import importlib.metadata

import mindspore as ms
import numpy as np
import pytest
from mindspore import Tensor, nn
from test_layers import CASES, TRANSPOSE_CASES, _grads, _projected

from gan.config.schema import ActConfig, ConfigError, ModelConfig, compose_config
from gan.diagnostics.probes import attach
from gan.models.build import build_plan
from gan.models.layers import OnednnConv2d, OnednnConv2dAct, OnednnConv2dTranspose, fuse_conv_act, make_conv
from gan.models.networks import Discriminator, Generator, init_dcgan_weights, num_blocks
from gan.training.loop import run
from ops import LeakyReLU, onednn
from tests.helpers import needs_onednn

RTOL, ATOL = 1e-4, 1e-5

pytestmark = needs_onednn()


def _pair(case: tuple, transpose: bool, has_bias: bool, reference: str, batch: int = 2):
    """A reference layer, an onednn layer carrying its parameters, and an input batch."""
    cin, cout, k, s, p, h, w = case
    rng = np.random.default_rng(sum(case) + transpose)
    ref = make_conv(cin, cout, k, s, p, transpose=transpose, has_bias=has_bias, impl=reference)
    if has_bias:
        ref.bias.set_data(Tensor(rng.standard_normal(cout).astype(np.float32)))
    dnn = make_conv(cin, cout, k, s, p, transpose=transpose, has_bias=has_bias, impl="onednn")
    ms.load_param_into_net(dnn, {q.name: q.clone() for q in ref.get_parameters()}, strict_load=True)
    return ref, dnn, Tensor(rng.standard_normal((batch, cin, h, w)).astype(np.float32))


def _check(ref: nn.Cell, dnn: nn.Cell, x: Tensor, scaled: bool = False) -> None:
    want_y = ref(x).asnumpy()
    seed = np.random.default_rng(1).standard_normal(want_y.shape).astype(np.float32)
    names = ["y", "dx"] + [q.name for q in ref.trainable_params()]
    for name, got, want in zip(names, _grads(dnn, x, seed), _grads(ref, x, seed)):
        atol = 1e-4 * float(np.abs(want).max()) if scaled else ATOL
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=atol, err_msg=name)


@pytest.mark.parametrize("has_bias", [False, True])
@pytest.mark.parametrize("transpose,case", [(False, c) for c in CASES] + [(True, c) for c in TRANSPOSE_CASES])
def test_onednn_matches_native_forward_and_grads(transpose: bool, case: tuple, has_bias: bool) -> None:
    _check(*_pair(case, transpose, has_bias, "native"))


# Backward-data into <= 8 channels runs as GEMM + col2im in the kernel (kFewChannels), above as oneDNN's
# primitive: the boundary on both sides, in a Conv2d's input gradient and in a Conv2dTranspose's forward, with
# batches that leave a thread fewer samples (5 over 2 threads) and geometries whose taps miss some rows/columns.
FEW_CHANNEL_CASES = [(8, 6, 4, 2, 1, 9, 7), (9, 6, 3, 2, 0, 8, 11), (1, 4, 4, 2, 1, 7, 7), (16, 5, 3, 1, 1, 6, 5),
                     (7, 3, 5, 3, 2, 10, 8)]
FEW_CHANNEL_TRANSPOSE_CASES = [(6, 8, 4, 2, 1, 5, 4), (6, 9, 3, 2, 0, 4, 5), (4, 1, 4, 2, 1, 3, 3),
                               (5, 16, 3, 1, 1, 6, 5), (3, 7, 5, 3, 2, 4, 3)]


@pytest.mark.parametrize("transpose,case", [(False, c) for c in FEW_CHANNEL_CASES]
                         + [(True, c) for c in FEW_CHANNEL_TRANSPOSE_CASES])
def test_backward_data_into_few_channels_matches_native(transpose: bool, case: tuple) -> None:
    _check(*_pair(case, transpose, False, "native", batch=5))


def _dcgan_geometries(size: int, nz: int, width: int, channels: int = 3) -> list[tuple[bool, tuple]]:
    """(transpose, case) of every conv layer of gan.models.networks' DCGAN G and D at `size` px."""
    n = num_blocks(size)
    g, in_ch = [], nz
    for i in range(n):
        out, side = width * 2 ** (n - 1 - i), 4 * 2 ** i
        g.append((True, (in_ch, out, 4, 1, 0, 1, 1) if i == 0 else (in_ch, out, 4, 2, 1, side // 2, side // 2)))
        in_ch = out
    g.append((True, (in_ch, channels, 4, 2, 1, size // 2, size // 2)))
    d, in_ch = [], channels
    for i in range(n):
        out = width * 2 ** i
        d.append((False, (in_ch, out, 4, 2, 1, size >> i, size >> i)))
        in_ch = out
    d.append((False, (in_ch, 1, 4, 1, 0, 4, 4)))
    return g + d


DCGAN = ([("dcgan32", t, c) for t, c in _dcgan_geometries(32, 64, 32)]
         + [("dcgan64", t, c) for t, c in _dcgan_geometries(64, 100, 64)]
         + [("dcgan128", t, c) for t, c in _dcgan_geometries(128, 100, 64)])


@pytest.mark.parametrize("model,transpose,case", DCGAN, ids=[f"{m}-{'T' if t else 'C'}{c}" for m, t, c in DCGAN])
def test_onednn_matches_gemm_on_dcgan_layers(model: str, transpose: bool, case: tuple) -> None:
    _check(*_pair(case, transpose, False, "gemm"), scaled=True)


def test_onednn_stack_grads_match_gemm_in_graph_mode() -> None:
    """A jitted G-like stack (transposed convs, BatchNorm, LeakyReLU, conv back down): loss and all grads."""
    nets = {}
    for impl in ("gemm", "onednn"):
        nets[impl] = nn.SequentialCell(
            make_conv(8, 16, 4, 1, 0, transpose=True, impl=impl), nn.BatchNorm2d(16), nn.LeakyReLU(0.2),
            make_conv(16, 8, 4, 2, 1, transpose=True, impl=impl), nn.LeakyReLU(0.2),
            make_conv(8, 4, 4, 2, 1, impl=impl), nn.LeakyReLU(0.2), make_conv(4, 1, 4, 1, 0, impl=impl))
    ms.load_param_into_net(nets["onednn"], {q.name: q.clone() for q in nets["gemm"].get_parameters()},
                           strict_load=True)
    rng = np.random.default_rng(0)
    z = Tensor(rng.standard_normal((4, 8, 1, 1)).astype(np.float32))
    seed = Tensor(rng.standard_normal((4, 1, 1, 1)).astype(np.float32))
    results = {}
    for impl, net in nets.items():
        net.set_train(True)
        _, (gz, gparams) = ms.jit(ms.value_and_grad(_projected(net, seed), 0, net.trainable_params()))(z)
        results[impl] = [net(z).asnumpy(), gz.asnumpy(), *(g.asnumpy() for g in gparams)]
    for got, want in zip(results["onednn"], results["gemm"]):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=1e-4 * float(np.abs(want).max()))


@pytest.mark.parametrize("transpose,case", [(False, CASES[0]), (True, TRANSPOSE_CASES[0])])
def test_onednn_layers_take_fp16_and_compute_in_fp32(transpose: bool, case: tuple) -> None:
    """A float16 cell (amp) keeps float16 in and out; the convolution itself runs in float32."""
    ref, dnn, x = _pair(case, transpose, True, "native")
    dnn.to_float(ms.float16)
    x16 = x.astype(ms.float16)
    got = dnn(x16)
    assert got.dtype == ms.float16
    want = ref(x16.astype(ms.float32)).asnumpy()
    np.testing.assert_allclose(got.asnumpy().astype(np.float32), want, rtol=2e-3, atol=2e-3 * np.abs(want).max())


def test_make_conv_builds_the_onednn_classes(config) -> None:
    assert type(make_conv(2, 3, 4, 2, 1, impl="onednn")) is OnednnConv2d
    assert type(make_conv(2, 3, 4, 2, 1, transpose=True, impl="onednn")) is OnednnConv2dTranspose
    assert build_plan(config("model.conv_impl=onednn")).g.conv_impl == "onednn"
    with pytest.raises(ConfigError, match="runs on CPU only"):
        config("model.conv_impl=onednn", "runtime.device_target=Ascend")


def test_kernels_call_mindspores_own_onednn() -> None:
    """One libdnnl.so.3 in the process: the kernels bind to the file inside the MindSpore wheel, version 3.x."""
    info = onednn.dnnl_info()
    assert info["library"] == str(onednn.mindspore_dnnl())
    major, minor, _ = map(int, info["version"].split("."))
    h_major, h_minor, _ = map(int, info["headers"].split("."))
    assert major == h_major == 3 and h_minor <= minor
    with open("/proc/self/maps") as maps:
        mapped = {line.split()[-1] for line in maps if "libdnnl" in line}
    assert mapped == {str(onednn.mindspore_dnnl())}


@pytest.mark.slow
def test_gemm_checkpoint_resumes_under_onednn(tmp_path, tiny_overrides) -> None:
    """4 gemm steps == 2 gemm steps, a checkpoint, then 2 onednn steps resumed from it (losses to 1e-4)."""
    tiny = [*tiny_overrides, "train.ckpt_every=2"]
    whole = run(compose_config(tiny + ["model.conv_impl=gemm", "train.steps=4"]), tmp_path / "gemm")
    run(compose_config(tiny + ["model.conv_impl=gemm", "train.steps=2"]), tmp_path / "mixed")
    resumed = run(compose_config(tiny + ["model.conv_impl=onednn", "train.steps=4", "train.resume=auto"]),
                  tmp_path / "mixed")
    got = [(s.loss_d, s.loss_g) for s in resumed.history]
    want = [(s.loss_d, s.loss_g) for s in whole.history][2:]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


# fusion=conv_act: conv + bias + LeakyReLU (+ clamp) as one primitive against the unfused onednn conv + op.
# The last case's output (2 x 64 x 32 x 32 = 2^17 elements) splits the activation gradient over 2 threads.
ACT_CASES = [(CASES[0], 0.2, None), (CASES[1], 0.0, None), (CASES[3], 0.2, 0.5), (CASES[4], 0.01, 1.0),
             ((3, 64, 4, 2, 1, 64, 64), 0.2, 0.5)]


@pytest.mark.parametrize("has_bias", [False, True])
@pytest.mark.parametrize("case,slope,clamp", ACT_CASES)
def test_conv_act_matches_conv_then_leaky_relu(case: tuple, slope: float, clamp: float | None,
                                               has_bias: bool, monkeypatch) -> None:
    monkeypatch.setenv("LRELU_NUM_THREADS", "2")
    _check_conv_act(case, slope, clamp, has_bias)


def test_conv_act_gradient_reaches_the_last_element_of_an_uneven_split(monkeypatch) -> None:
    """1 x 3 x 205 x 215 = 132,225 outputs over 2 threads: half of it rounded down (66,112) is a multiple of 16,
    where the activation gradient's chunks used to stop one element short of the end."""
    monkeypatch.setenv("LRELU_NUM_THREADS", "2")
    _check_conv_act((2, 3, 3, 1, 1, 205, 215), 0.2, None, True, batch=1)


def _check_conv_act(case: tuple, slope: float, clamp: float | None, has_bias: bool, batch: int = 2) -> None:
    """The fused conv_act layer's output and gradients against the onednn conv followed by the LeakyReLU op."""
    conv, _, x = _pair(case, False, has_bias, "onednn", batch)
    fused = fuse_conv_act(conv, LeakyReLU(slope, clamp=clamp), "conv_act")
    ms.load_param_into_net(fused, {q.name: q.clone() for q in conv.get_parameters()}, strict_load=True)
    unfused = nn.SequentialCell([conv, LeakyReLU(slope, clamp=clamp)])
    want_y = unfused(x).asnumpy()
    seed = np.random.default_rng(2).standard_normal(want_y.shape).astype(np.float32)
    names = ["y", "dx"] + [q.name for q in conv.trainable_params()]
    for name, got, want in zip(names, _grads(fused, x, seed), _grads(unfused, x, seed)):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=name)


def test_conv_act_discriminator_matches_bn_act_in_graph_mode() -> None:
    """D with fusion=conv_act (first conv + act fused, BatchNormAct after the others) == fusion=bn_act: same
    parameter names, and in a jitted step the same logits and gradients."""
    model, act = ModelConfig(ngf=8, ndf=8, nz=16, conv_impl="onednn"), ActConfig(clamp=4.0)
    nets = {kind: Discriminator(model, act, 3, "onednn", kind) for kind in ("bn_act", "conv_act")}
    assert type(nets["conv_act"].layers.conv0) is OnednnConv2dAct and "act0" not in nets["conv_act"].layers.name_cells()
    assert [q.name for q in nets["conv_act"].get_parameters()] == [q.name for q in nets["bn_act"].get_parameters()]
    rng = np.random.default_rng(1)
    _assert_same_jitted_step(nets["bn_act"], nets["conv_act"], Tensor(rng.standard_normal((4, 3, 32, 32)).astype(
        np.float32)), Tensor(rng.standard_normal(4).astype(np.float32)))


def _assert_same_jitted_step(want: nn.Cell, got: nn.Cell, x: Tensor, seed: Tensor) -> None:
    """`got`, loaded with `want`'s freshly initialised parameters, gives want's <net(x), seed> and its gradients
    (input and parameters) in a jitted training step."""
    init_dcgan_weights(want, np.random.default_rng(0))
    ms.load_param_into_net(got, {q.name: q.clone() for q in want.get_parameters()}, strict_load=True)
    results = []
    for net in (got, want):
        net.set_train(True)
        loss, (gx, grads) = ms.jit(ms.value_and_grad(_projected(net, seed), 0, net.trainable_params()))(x)
        results.append([loss.asnumpy(), gx.asnumpy()] + [g.asnumpy() for g in grads])
    for g, w in zip(*results):
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=1e-4 * float(np.abs(w).max()))


@pytest.mark.parametrize("fusion, d_norm, g_norm", [("conv_act", "batch", "batch"), ("bn_act", "batch", "batch"),
                                                    ("conv_act", "spectral", "none")])
@pytest.mark.parametrize("net_class", [Generator, Discriminator])
def test_channels_last_networks_match_nchw_in_graph_mode(net_class, fusion: str, d_norm: str, g_norm: str) -> None:
    """model.layout=nhwc (activations channels last between the layers, NCHW at the networks' edges) == NCHW: same
    parameter names and shapes, and in a jitted step the same outputs and gradients (float32 summation order). Without
    BatchNorm the convolutions' biases are added on the channels' last axis."""
    model = ModelConfig(ngf=16, ndf=16, nz=16, conv_impl="onednn", d_norm=d_norm, g_norm=g_norm)
    act = ActConfig(clamp=4.0)
    nets = {layout: net_class(model, act, 3, "onednn", fusion, layout=layout) for layout in ("NCHW", "NHWC")}
    assert [(q.name, q.shape) for q in nets["NHWC"].get_parameters()] == \
        [(q.name, q.shape) for q in nets["NCHW"].get_parameters()]
    rng = np.random.default_rng(1)
    x = Tensor(rng.standard_normal((4, 16, 1, 1) if net_class is Generator else (4, 3, 32, 32)).astype(np.float32))
    seed = Tensor(rng.standard_normal((4, 3, 32, 32) if net_class is Generator else 4).astype(np.float32))
    _assert_same_jitted_step(nets["NCHW"], nets["NHWC"], x, seed)
    # the dead-channel probes find each activation's channels on its last axis
    probes = {layout: attach(net, x, "N") for layout, net in nets.items()}
    assert [(q.layer, q.channels, q.layout) for q in probes["NHWC"]] == \
        [(q.layer, q.channels, "NHWC") for q in probes["NCHW"]]


def test_conv_act_needs_onednn(config) -> None:
    with pytest.raises(ConfigError, match="fusion=conv_act.*model.conv_impl=onednn.*'gemm'"):
        config("fusion=conv_act", "model.conv_impl=gemm")
    assert build_plan(config("fusion=conv_act", "model.conv_impl=onednn")).d.fusion == "conv_act"
    assert build_plan(config("fusion=bn_act", "model.conv_impl=gemm")).d.fusion == "bn_act"
    assert fuse_conv_act(make_conv(2, 3, 4, 2, 1, impl="gemm"), LeakyReLU(0.2), "conv_act") is None  # no bias


@pytest.mark.slow
def test_conv_act_training_matches_unfused(tmp_path, tiny_onednn) -> None:
    """2 graph-mode training steps with fusion=conv_act give fusion=none's losses (onednn both, 1e-4)."""
    tiny = [*tiny_onednn, "train.steps=2"]
    got, want = (run(compose_config(tiny + [f"fusion={kind}"]), tmp_path / kind) for kind in ("conv_act", "none"))
    np.testing.assert_allclose([(s.loss_d, s.loss_g) for s in got.history],
                               [(s.loss_d, s.loss_g) for s in want.history], rtol=1e-4, atol=1e-5)


def test_missing_headers_fall_back_to_gemm_and_name_the_package(monkeypatch, config) -> None:
    """Without onednn-devel, auto resolves to gemm on CPU, conv_impl=onednn says what to install, and
    fusion=conv_act (valid while the config is read) is refused where the networks are built."""
    def no_package(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "files", no_package)
    for cached in (onednn.dnnl_info, onednn.library_path):
        cached.cache_clear()
    try:
        plan = build_plan(config())
        assert (plan.g.conv_impl, plan.g.fusion) == ("gemm", "bn_act")
        with pytest.raises(RuntimeError, match="pip install --no-deps onednn-devel==2025.3.0"):
            build_plan(config("model.conv_impl=onednn"))
        with pytest.raises(ConfigError, match="fusion=conv_act.*not 'gemm'"):
            build_plan(config("fusion=conv_act"))
    finally:
        monkeypatch.undo()
        for cached in (onednn.dnnl_info, onednn.library_path):
            cached.cache_clear()
    assert build_plan(config()).g.conv_impl == "onednn"
