"""ops.onednn in bfloat16: bf16 activations (and float32 weights, as precision=bf16 passes them) make bf16
convolutions with float32 accumulation, one rounding of the output and float32 weight gradients.

The reference is the float32 oneDNN path (tests/gan/test_onednn_layers.py holds it to MindSpore's native and
the gemm layers) on the same values rounded to bfloat16 (x and dy are bf16 already, the weights are rounded
as the kernel's reorder rounds them): forward, backward-data and the transposed conv's outputs within one
rounding of it, |got - want| <= 2^-8 |want| + 1e-5 max|want| (half a bf16 ulp, plus float32 summation order);
the float32 weight gradient within 1e-5 max|want| (summation order only). Accumulating in bfloat16 would miss
both bounds by orders of magnitude at these widths (up to 8192 products per output).

Runs where oneDNN has bf16 convolutions (AVX-512 and later; natively with AVX512_BF16 or AMX, emulated on plain
AVX-512); on an AVX2 CPU oneDNN has none, which ops.onednn reports in a RuntimeError (tested here by faking the
instruction set, so that branch runs on every CPU).
"""
from __future__ import annotations

import math
import os

import mindspore as ms
import numpy as np
import pytest
from test_layers import CASES, TRANSPOSE_CASES
from test_onednn_layers import FEW_CHANNEL_CASES, FEW_CHANNEL_TRANSPOSE_CASES, _dcgan_geometries

from ops import onednn
from ops import reference as ref
from tests.helpers import BF16, as_numpy, needs_onednn

pytestmark = needs_onednn()
needs_bf16 = pytest.mark.skipif(onednn.available() and not onednn.cpu_isa().bf16,
                                reason="oneDNN has no bfloat16 convolution on this CPU (it needs AVX-512)")

DCGAN = [c for c in _dcgan_geometries(32, 64, 32) + _dcgan_geometries(64, 100, 64)]


def _inputs(case: tuple, transpose: bool, batch: int = 2):
    cin, cout, k, s, p, h, w = case
    rng = np.random.default_rng(list(case) + [transpose])
    x = rng.standard_normal((batch, cin, h, w)).astype(BF16)
    wt = (rng.standard_normal((cin, cout, k, k) if transpose else (cout, cin, k, k)) / math.sqrt(cin * k * k))
    return x, wt.astype(np.float32), s, p


def _vjp(fn, x, wt, dy_of):
    """(y, dx, dw) of fn(x, wt) with the upstream gradient dy_of(y's shape)."""
    y, pullback = ms.vjp(fn, ms.Tensor(x), ms.Tensor(wt))
    dy = dy_of(y.shape, x.dtype)
    dx, dw = pullback(ms.Tensor(dy))
    return as_numpy(y), as_numpy(dx), as_numpy(dw), dy


def assert_one_rounding(got: np.ndarray, want: np.ndarray, name: str) -> None:
    """bf16 `got` is the float32 `want` rounded once (up to float32 summation order)."""
    assert got.dtype == BF16, name
    g, w = got.astype(np.float64), want.astype(np.float64)
    bound = 2.0 ** -8 * np.abs(w) + 1e-5 * np.abs(w).max()
    excess = np.abs(g - w) - bound
    assert excess.max() <= 0, f"{name}: {int((excess > 0).sum())} elements off by more than one rounding"


def _nhwc(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a.transpose(0, 2, 3, 1))


def _nchw(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a.transpose(0, 3, 1, 2))


def _check(case: tuple, transpose: bool, batch: int = 2, layout: str = "NCHW", out_layout: str | None = None) -> None:
    """The bf16 conv of `case` against the float32 one on rounded inputs; layout / out_layout "NHWC" give the bf16
    side's input / output channels last (the reference stays NCHW)."""
    x, wt, s, p = _inputs(case, transpose, batch)
    x_in = (_nhwc if layout == "NHWC" else np.asarray)(x)
    from_out = _nchw if (out_layout or layout) == "NHWC" else np.asarray
    conv = onednn.conv_transpose2d if transpose else onednn.conv2d
    fn = lambda a, b: conv(a, b, s, p)  # noqa: E731
    rng = np.random.default_rng(7)
    y, dx, dw, dy = _vjp(lambda a, b: conv(a, b, s, p, layout, out_layout=out_layout), x_in, wt,
                         lambda shape, dtype: rng.standard_normal(shape).astype(dtype))
    y, dx, dy = from_out(y), (_nchw if layout == "NHWC" else np.asarray)(dx), from_out(dy)
    assert dw.dtype == np.float32  # float32 master weights get float32 gradients
    wt_rounded = wt.astype(BF16).astype(np.float32)
    ref_y, pullback = ms.vjp(fn, ms.Tensor(x.astype(np.float32)), ms.Tensor(wt_rounded))
    ref_dx, ref_dw = (t.asnumpy() for t in pullback(ms.Tensor(dy.astype(np.float32))))
    assert_one_rounding(y, ref_y.asnumpy(), "y")
    assert_one_rounding(dx, ref_dx, "dx")
    np.testing.assert_allclose(dw, ref_dw, rtol=0, atol=1e-5 * float(np.abs(ref_dw).max()), err_msg="dw")


@needs_bf16
@pytest.mark.parametrize("transpose,case", [(False, c) for c in CASES] + [(True, c) for c in TRANSPOSE_CASES])
def test_bf16_conv_is_one_rounding_of_float32_on_rounded_inputs(transpose: bool, case: tuple) -> None:
    _check(case, transpose)


@needs_bf16
@pytest.mark.parametrize("transpose,case", [(False, c) for c in FEW_CHANNEL_CASES]
                         + [(True, c) for c in FEW_CHANNEL_TRANSPOSE_CASES])
def test_bf16_backward_data_into_few_channels(transpose: bool, case: tuple) -> None:
    """float32 runs these as GEMM + col2im; bfloat16 runs oneDNN's primitive on both sides of that boundary."""
    _check(case, transpose, batch=5)


@needs_bf16
@pytest.mark.parametrize("transpose,case", [(False, FEW_CHANNEL_CASES[0]), (True, FEW_CHANNEL_TRANSPOSE_CASES[0])])
def test_bf16_compute_rounds_float32_tensors_into_few_channels(transpose: bool, case: tuple) -> None:
    """compute=bfloat16 on float32 tensors (precision=bf16's edges): x, dy and the weights are rounded to bf16 once,
    as the primitive's reorders round them, also on the few-channel GEMM path; y and dx are float32 tensors holding
    the bf16 primitive's outputs (one rounding of the float32 result), dw float32 sums."""
    x, wt, s, p = _inputs(case, transpose, batch=5)
    x = x.astype(np.float32) + np.float32(2.0 ** -12)  # not a bf16 value: the kernel must round it
    conv = onednn.conv_transpose2d if transpose else onednn.conv2d
    rng = np.random.default_rng(9)
    y, dx, dw, dy = _vjp(lambda a, b: conv(a, b, s, p, compute=ms.bfloat16), x, wt,
                         lambda shape, dtype: (rng.standard_normal(shape) + 2.0 ** -12).astype(dtype))
    assert y.dtype == dx.dtype == dw.dtype == np.float32
    rounded = lambda a: a.astype(BF16).astype(np.float32)  # noqa: E731
    ref_y, pullback = ms.vjp(lambda a, b: conv(a, b, s, p), ms.Tensor(rounded(x)), ms.Tensor(rounded(wt)))
    ref_dx, ref_dw = (g.asnumpy() for g in pullback(ms.Tensor(rounded(dy))))
    for got, want, name in ((y, ref_y.asnumpy(), "y"), (dx, ref_dx, "dx")):
        assert_one_rounding(got.astype(BF16), want, name)
        np.testing.assert_array_equal(got, rounded(got), err_msg=f"{name} holds bf16 values")
    np.testing.assert_allclose(dw, ref_dw, rtol=0, atol=1e-5 * float(np.abs(ref_dw).max()), err_msg="dw")


# Backward-weights from >= 16 channels into planes of <= 16x16 runs as one GEMM over a channels-last gather on CPUs
# without AMX (<= 4x4 with AMX): odd kernels, strides, paddings and planes, wider ones around the 16x16 limit.
GEMM_WEIGHTS_CASES = [(16, 8, 3, 1, 1, 7, 9), (24, 4, 5, 3, 2, 11, 10), (16, 3, 4, 2, 1, 32, 32),
                      (17, 5, 2, 2, 0, 34, 32), (32, 16, 4, 1, 0, 4, 4)]


@needs_bf16
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("transpose,case", [(False, c) for c in GEMM_WEIGHTS_CASES]
                         + [(True, (c[1], c[0], *c[2:])) for c in GEMM_WEIGHTS_CASES[:2]])
def test_bf16_backward_weights_as_gemm(transpose: bool, case: tuple, layout: str) -> None:
    """In NHWC the GEMM reads a bf16 dy in place as the transpose of its (N Ho Wo, O) rows."""
    _check(case, transpose, batch=3, layout=layout)


@needs_bf16
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("transpose,case", DCGAN, ids=[f"{'T' if t else 'C'}{c}" for t, c in DCGAN])
def test_bf16_conv_on_dcgan_layers(transpose: bool, case: tuple, layout: str) -> None:
    _check(case, transpose, layout=layout)


@needs_bf16
@pytest.mark.parametrize("layout, out_layout", [("NCHW", "NHWC"), ("NHWC", "NCHW")])
@pytest.mark.parametrize("transpose,case", [(False, (3, 16, 4, 2, 1, 16, 16)), (True, (16, 3, 4, 2, 1, 8, 8)),
                                            (True, (24, 32, 4, 1, 0, 1, 1)), (False, (32, 48, 4, 2, 1, 8, 8))])
def test_bf16_conv_between_layouts(transpose: bool, case: tuple, layout: str, out_layout: str) -> None:
    """A channels-last network's edges: images (few channels) in NCHW on one side, its activations in NHWC on the
    other, in one primitive (the few-channel GEMM path included: it reads an NHWC dy transposed)."""
    _check(case, transpose, batch=3, layout=layout, out_layout=out_layout)


@needs_bf16
@pytest.mark.parametrize("clamp", [None, 0.5])
def test_bf16_conv_act_rounds_the_activation_once(clamp) -> None:
    """conv + bias + LeakyReLU (+ clamp) as one bf16 primitive with a float32 bias: the post-ops act on the
    float32 accumulator and the output is rounded once. The backward takes dz from the output's sign in bf16
    (bit for bit the reference LeakyReLU gradient, 0 where |y| reached the clamp), then the bf16 conv backward
    of that dz; the weight and bias gradients stay float32."""
    x, wt, s, p = _inputs((3, 64, 4, 2, 1, 32, 32), False)
    bias = np.random.default_rng(3).standard_normal(64).astype(np.float32)
    wt_rounded = wt.astype(BF16).astype(np.float32)

    def fn(a, b, c):
        return onednn.conv2d_act(a, b, c, s, p, 0.2, clamp)

    y, pullback = ms.vjp(fn, ms.Tensor(x), ms.Tensor(wt), ms.Tensor(bias))
    dy = np.random.default_rng(4).standard_normal(y.shape).astype(BF16)
    dx, dw, db = (as_numpy(g) for g in pullback(ms.Tensor(dy)))
    ref_y = fn(ms.Tensor(x.astype(np.float32)), ms.Tensor(wt_rounded), ms.Tensor(bias)).asnumpy()
    y = as_numpy(y)
    assert_one_rounding(y, ref_y, "y")
    dz = ref.backward(y, dy, 0.2)
    if clamp is not None:
        dz[np.abs(y.astype(np.float32)) >= clamp] = 0
    _, conv_pullback = ms.vjp(lambda a, b: onednn.conv2d(a, b, s, p), ms.Tensor(x.astype(np.float32)),
                              ms.Tensor(wt_rounded))
    ref_dx, ref_dw = (g.asnumpy() for g in conv_pullback(ms.Tensor(dz.astype(np.float32))))
    assert_one_rounding(dx, ref_dx, "dx")
    assert dw.dtype == np.float32 and db.dtype == np.float32
    np.testing.assert_allclose(dw, ref_dw, rtol=0, atol=1e-5 * float(np.abs(ref_dw).max()))
    np.testing.assert_allclose(db, dz.astype(np.float64).sum((0, 2, 3)), rtol=1e-5, atol=1e-4)


@needs_bf16
def test_bf16_conv_in_graph_mode_matches_pynative() -> None:
    x, wt, s, p = _inputs((32, 64, 4, 2, 1, 16, 16), False)

    def loss(a, b):
        return (onednn.conv2d(a, b, s, p).astype(ms.float32) ** 2).sum()

    eager = [as_numpy(g) for g in ms.grad(loss, (0, 1))(ms.Tensor(x), ms.Tensor(wt))]
    graph = [as_numpy(g) for g in ms.jit(ms.grad(loss, (0, 1)))(ms.Tensor(x), ms.Tensor(wt))]
    for a, b in zip(eager, graph):
        np.testing.assert_array_equal(a.view(np.uint16) if a.dtype == BF16 else a,
                                      b.view(np.uint16) if b.dtype == BF16 else b)


def test_a_cpu_without_bf16_convolutions_is_named(monkeypatch) -> None:
    """On an AVX2 CPU oneDNN 3.10 has no bfloat16 convolution: the op says so before any kernel runs."""
    monkeypatch.setattr(onednn, "cpu_isa", lambda: onednn.CpuIsa("avx2", False, False))
    x = ms.Tensor(np.ones((1, 2, 4, 4), BF16))
    with pytest.raises(RuntimeError, match="no bfloat16 convolution on this CPU \\(instruction set avx2"):
        onednn.conv2d(x, ms.Tensor(np.ones((3, 2, 3, 3), np.float32)), 1, 1)


def test_cpu_isa_names_the_instruction_set() -> None:
    isa = onednn.cpu_isa()
    assert isa.name in onednn.CPU_ISAS.values()
    assert isa.bf16 or not isa.bf16_dot  # bf16 dot products imply AVX-512
    with open("/proc/cpuinfo") as f:
        flags = set(next(line for line in f if line.startswith("flags")).split(":", 1)[1].split())
    if "ONEDNN_MAX_CPU_ISA" not in os.environ:
        assert isa.bf16_dot == bool(flags & {"avx512_bf16", "amx_bf16"})
