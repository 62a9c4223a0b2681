"""ops.onednn beyond square kernels: rectangular kernels (1x7, 7x1, 1x3, 3x1), per-axis strides, padding per side,
NHWC activations, conv + bias + ReLU, constant (inference) weights, and oneDNN pooling, against numpy references
(float64) and MindSpore's own convolution for the gradients."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import mindspore as ms
import numpy as np
import pytest
from mindspore import Parameter, Tensor, nn
from mindspore import ops as msops

from ops import onednn
from ops.build import cpu_identity
from tests.helpers import needs_onednn, script_env

pytestmark = needs_onednn()

# (cin, cout, (kh, kw), (sh, sw), (top, bottom, left, right), (h, w))
CASES = [(5, 7, (1, 7), (1, 1), (0, 0, 3, 3), (9, 11)), (6, 4, (7, 1), (1, 1), (3, 3, 0, 0), (10, 8)),
         (3, 8, (3, 3), (2, 2), (0, 0, 0, 0), (15, 15)), (4, 5, (1, 3), (1, 1), (0, 0, 1, 1), (8, 8)),
         (4, 6, (3, 1), (2, 1), (1, 0, 2, 1), (9, 7)), (17, 19, (5, 5), (1, 1), (2, 2, 2, 2), (9, 9)),
         (32, 48, (3, 3), (1, 2), (1, 1, 0, 2), (12, 13))]


def reference_conv(x: np.ndarray, w: np.ndarray, stride, pads) -> np.ndarray:
    """float64 cross-correlation of NCHW x by OIHW w with zero padding (top, bottom, left, right)."""
    top, bottom, left, right = pads
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (top, bottom), (left, right)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, w.shape[2:], axis=(2, 3))
    windows = windows[:, :, ::stride[0], ::stride[1]]  # (N, C, Ho, Wo, kh, kw)
    return np.einsum("nchwij,ocij->nohw", windows, w.astype(np.float64))


def reference_pool(x: np.ndarray, kind: str, k: int, s: int, p: int) -> np.ndarray:
    """float64 pooling of NCHW x: max (-inf padding), avg over the window's input pixels, or avg including pads."""
    fill = {"max": -np.inf, "avg": np.nan, "avg_include_pad": 0.0}[kind]
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (p, p), (p, p)), constant_values=fill)
    windows = np.lib.stride_tricks.sliding_window_view(padded, (k, k), axis=(2, 3))[:, :, ::s, ::s]
    reduce = {"max": np.max, "avg": np.nanmean, "avg_include_pad": np.mean}[kind]
    return reduce(windows, axis=(-1, -2))


def _data(case, seed=0):
    cin, cout, k, _, _, (h, w) = case
    rng = np.random.default_rng(seed + sum(k))
    return (rng.standard_normal((2, cin, h, w)).astype(np.float32),
            rng.standard_normal((cout, cin, *k)).astype(np.float32) / np.sqrt(cin * k[0] * k[1]),
            rng.standard_normal(cout).astype(np.float32))


def _nhwc(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a.transpose(0, 2, 3, 1))


def _close(got: np.ndarray, want: np.ndarray) -> None:
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(want).max())))


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_rectangular_conv_matches_numpy(case, layout):
    x, w, _ = _data(case)
    stride, pads = case[3], case[4]
    want = reference_conv(x, w, stride, pads)
    xin = _nhwc(x) if layout == "NHWC" else x
    got = onednn.conv2d(Tensor(xin), Tensor(w), stride, pads, layout=layout).asnumpy()
    _close(got, _nhwc(want) if layout == "NHWC" else want)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("constant_weights", [False, True])
def test_conv_bias_relu_matches_numpy(case, layout, constant_weights):
    x, w, b = _data(case, seed=1)
    want = np.maximum(reference_conv(x, w, case[3], case[4]) + b[None, :, None, None], 0)
    xin = _nhwc(x) if layout == "NHWC" else x
    for _ in range(2):  # the second call of constant weights reuses their reordered copy
        got = onednn.conv2d_act(Tensor(xin), Tensor(w), Tensor(b), case[3], case[4], 0.0, layout=layout,
                                constant_weights=constant_weights).asnumpy()
        _close(got, _nhwc(want) if layout == "NHWC" else want)


class _ConstantConv(nn.Cell):
    """conv + bias + ReLU with constant_weights; `new_weight`, when given, is assigned to its Parameter first (the
    same buffer gets new bytes inside the graph)."""

    def __init__(self, w: np.ndarray, b: np.ndarray, stride, pads) -> None:
        super().__init__()
        self.w, self.b = Parameter(Tensor(w), name="w"), Parameter(Tensor(b), name="b")
        self.stride, self.pads = stride, pads

    def construct(self, x, new_weight=None):
        if new_weight is not None:
            msops.assign(self.w, new_weight)
        return onednn.conv2d_act(x, self.w, self.b, self.stride, self.pads, 0.0, layout="NHWC", constant_weights=True)


def _relu_conv(x, w, b, case) -> np.ndarray:
    return _nhwc(np.maximum(reference_conv(x, w, case[3], case[4]) + b[None, :, None, None], 0))


def test_constant_weights_of_equal_shapes_stay_apart_and_follow_new_bytes():
    """Two layers of one shape keep their own reordered copies; a Parameter assigned new values in the graph (same
    buffer, new bytes) is reordered again; in PyNative, alternating weight tensors each give their own result."""
    case = CASES[0]
    x, w1, b = _data(case, seed=2)
    w2 = (w1[::-1] * 0.5).copy()
    pair = nn.CellList([_ConstantConv(w1, b, case[3], case[4]), _ConstantConv(w2, b, case[3], case[4])])

    @ms.jit
    def both(t):
        return pair[0](t), pair[1](t)

    for _ in range(2):
        got = both(Tensor(_nhwc(x)))
        _close(got[0].asnumpy(), _relu_conv(x, w1, b, case))
        _close(got[1].asnumpy(), _relu_conv(x, w2, b, case))
    assigned = _ConstantConv(w1, b, case[3], case[4])
    step = ms.jit(assigned.construct)
    for w in (w1, w2, w2, w1):
        _close(step(Tensor(_nhwc(x)), Tensor(w)).asnumpy(), _relu_conv(x, w, b, case))
    for w in (w1, w2, w1):
        got = onednn.conv2d_act(Tensor(_nhwc(x)), Tensor(w), Tensor(b), case[3], case[4], 0.0, layout="NHWC",
                                constant_weights=True)
        _close(got.asnumpy(), _relu_conv(x, w, b, case))


@pytest.mark.parametrize("case", CASES[:5])
def test_rectangular_conv_gradients_match_mindspore(case):
    x, w, _ = _data(case, seed=3)
    stride, pads = case[3], case[4]

    def native(a, b):  # MindSpore's conv2d pads both sides alike: pad first
        top, bottom, left, right = pads
        return msops.conv2d(msops.pad(a, (left, right, top, bottom)), b, None, stride, "valid")

    def dnn(a, b):
        return onednn.conv2d(a, b, stride, pads)

    seed = np.random.default_rng(4).standard_normal(reference_conv(x, w, stride, pads).shape).astype(np.float32)
    grads = [ms.grad(lambda a, b, f=f: (f(a, b) * Tensor(seed)).sum(), grad_position=(0, 1))(Tensor(x), Tensor(w))
             for f in (dnn, native)]
    for got, want in zip(*grads):
        _close(got.asnumpy(), want.asnumpy())


def _nchw(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a.transpose(0, 3, 1, 2))


# DCGAN geometries (4x4 kernels, stride 2, padding 1): an image's 3 channels (NCHW's backward-data there is the
# few-channel GEMM, NHWC's is oneDNN's primitive) and 32 -> 48 channels.
@pytest.mark.parametrize("op", ["conv2d", "conv2d_act", "conv_transpose2d"])
@pytest.mark.parametrize("cin, cout, size", [(3, 16, 16), (32, 48, 8), (16, 3, 8)])
def test_nhwc_gradients_match_nchw(op, cin, cout, size):
    """Output and the gradients of x, weight (and bias) with the activations NHWC: NCHW's, moved."""
    rng = np.random.default_rng(cin + cout + size)
    x = rng.standard_normal((2, cin, size, size)).astype(np.float32)
    w_shape = (cin, cout, 4, 4) if op == "conv_transpose2d" else (cout, cin, 4, 4)
    w = (rng.standard_normal(w_shape) / np.sqrt(cin * 16)).astype(np.float32)
    b = rng.standard_normal(cout).astype(np.float32)
    calls = {"conv2d": lambda a, k, c, layout: onednn.conv2d(a, k, 2, 1, layout),
             "conv2d_act": lambda a, k, c, layout: onednn.conv2d_act(a, k, c, 2, 1, 0.2, 2.0, layout),
             "conv_transpose2d": lambda a, k, c, layout: onednn.conv_transpose2d(a, k, 2, 1, layout)}
    out = size * 2 if op == "conv_transpose2d" else size // 2
    dy = rng.standard_normal((2, cout, out, out)).astype(np.float32)
    results = []
    for layout, move, back in (("NCHW", lambda a: a, lambda a: a), ("NHWC", _nhwc, _nchw)):
        def loss(a, k, c, layout=layout, move=move):
            return (calls[op](a, k, c, layout) * Tensor(move(dy))).sum()
        y = calls[op](Tensor(move(x)), Tensor(w), Tensor(b), layout).asnumpy()
        dx, dw, db = ms.grad(loss, grad_position=(0, 1, 2))(Tensor(move(x)), Tensor(w), Tensor(b))
        results.append((back(y), back(dx.asnumpy()), dw.asnumpy(), db.asnumpy()))
    for got, want in zip(*results[::-1]):
        _close(got, want)


@pytest.mark.parametrize("kind", ["max", "avg", "avg_include_pad"])
@pytest.mark.parametrize("k, s, p, size", [(3, 1, 1, 9), (3, 2, 0, 11), (8, 8, 0, 8), (3, 2, 1, 10)])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_pooling_matches_numpy(kind, k, s, p, size, layout):
    x = np.random.default_rng(k + s + p).standard_normal((2, 19, size, size)).astype(np.float32)
    want = reference_pool(x, kind, k, s, p)
    got = onednn.pool2d(Tensor(_nhwc(x) if layout == "NHWC" else x), kind, k, s, p, layout=layout).asnumpy()
    _close(got, _nhwc(want) if layout == "NHWC" else want)


def test_bad_geometry_is_refused_with_its_name():
    x, w = Tensor(np.zeros((1, 3, 8, 8), np.float32)), Tensor(np.zeros((4, 3, 3, 3), np.float32))
    with pytest.raises(ValueError, match="padding"):
        onednn.conv2d(x, w, 1, (1, 2, 3))
    with pytest.raises(ValueError, match="stride"):
        onednn.conv2d(x, w, 0, 1)
    with pytest.raises(ValueError, match="layout"):
        onednn.conv2d(x, w, 1, 1, layout="NCWH")
    with pytest.raises(ValueError, match=r"\(N, H, W, C\) with C=3"):
        onednn.conv2d(x, w, 1, 1, layout="NHWC")
    with pytest.raises(ValueError, match="pooling kind"):
        onednn.pool2d(x, "min", 3, 1, 1)
    with pytest.raises(ValueError, match="smaller than the kernel"):
        onednn.pool2d(x, "max", 3, 1, 3)


_DISPATCH = textwrap.dedent("""
    import sys
    import mindspore as ms
    import numpy as np
    from ops import onednn
    cin = int(sys.argv[1])
    x = ms.Tensor(np.ones((2, cin, 8, 8), np.float32))
    w = ms.Tensor(np.full((64, cin, 4, 4), 0.01, np.float32))
    ms.grad(lambda a, b: onednn.conv2d(a, b, 2, 1).sum(), grad_position=(0, 1))(x, w)
""")


def _executed(cin: int, isa: str) -> dict[str, str]:
    """{prop_kind: "implementation src-layout"} of the convolutions of one NCHW conv's forward and gradients, from
    oneDNN's verbose log in a fresh process whose oneDNN is capped at instruction set `isa`."""
    env = script_env() | {"ONEDNN_VERBOSE": "1", "ONEDNN_MAX_CPU_ISA": isa}
    run = subprocess.run([sys.executable, "-c", _DISPATCH, str(cin)], env=env, capture_output=True, text=True,
                         timeout=300, cwd=Path(__file__).resolve().parents[2])
    assert run.returncode == 0, run.stderr[-2000:]
    fields = [line.split(",") for line in run.stdout.splitlines() if ",exec,cpu,convolution," in line]
    return {f[7]: f"{f[6]} {f[8].split()[0]}" for f in fields}


@pytest.mark.skipif("avx2" not in cpu_identity().split(), reason="the rule is about CPUs with AVX2 and without AVX-512")
def test_without_avx512_nchw_forward_and_backward_data_compute_in_nhwc():
    """Capped at AVX2 (what a CPU without AVX-512 runs), an NCHW conv from 32 or more channels computes its forward
    and backward-data in nhwc (brgemm kernels, src acdb); backward-weights and a conv from fewer channels keep
    oneDNN's blocked choice."""
    wide, narrow = _executed(32, "AVX2"), _executed(16, "AVX2")
    assert wide["forward_training"].startswith("brg_conv_fwd") and ":acdb:" in wide["forward_training"]
    assert wide["backward_data"].startswith("brgconv") and ":acdb:" in wide["backward_data"]
    assert ":acdb:" not in wide["backward_weights"]
    assert all(":acdb:" not in v for v in narrow.values()), narrow
