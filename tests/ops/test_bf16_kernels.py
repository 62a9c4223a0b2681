"""bfloat16 in the CPU kernels: the activation family, the fused BatchNorm/bias + activation and the conv_act
activation gradient read and write bfloat16 with float32 math and one rounding (round to nearest even,
subnormals kept, NaN -> +-0x7FC0 as ml_dtypes rounds; strict x > 0; clamp), against ops.reference applied to
ml_dtypes bfloat16 arrays, bit for bit where the op is element-wise; the same guarantees as float16.

Every test here runs on any x86-64 CPU: element-wise bfloat16 is integer arithmetic in the kernels, no bf16
instruction is involved (the convolutions are tests/ops/test_onednn_bf16.py).

Fused BatchNorm + act (per-channel sums): bfloat16 y and dx against the float32 kernel on the same
(exactly widened) input, rounded once to bfloat16: within 1 bfloat16 ulp everywhere, and equal on at least 99%
of the elements (the two dtypes' tiling plans sum the statistics in another order, which moves ties); dgamma
and dbeta (float32 outputs) within the float32 tolerance of tests/ops/test_fused.py on the same data.
"""
import json
from pathlib import Path

import mindspore as ms
import numpy as np
import pytest
from leaky_relu_cases import BF16, SLOPES, as_numpy, assert_bitwise, bits_of, boundary_values, random_values

from ops import bias_act, elu, fused_bn_act, leaky_relu, prelu, rrelu
from ops import reference as ref


def bf16_data(n: int = 1000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Boundary values (bf16 limits, subnormals, +-0, +-inf, NaN) and random ones, with an upstream gradient."""
    x = np.concatenate([boundary_values(BF16), np.array([1e-39, -1e-39, -2e-38, -1e-6, 3.3e38, -3.3e38], BF16),
                        random_values(BF16, (n,), seed)])
    dy = (random_values(np.float32, x.shape, seed + 1) / 10).astype(BF16)
    return x, dy


def vjp(fn, *inputs, dy):
    """(output, gradients) of fn at inputs with upstream dy, as numpy (bfloat16 as ml_dtypes)."""
    y, pullback = ms.vjp(fn, *(ms.Tensor(i) for i in inputs))
    grads = pullback(ms.Tensor(dy))
    return as_numpy(y), [as_numpy(g) for g in (grads if isinstance(grads, tuple) else (grads,))]


# float32 values and the bf16 bits round-to-nearest-even gives: ties to even both ways, a carry into the
# exponent, the largest finite bf16 and the overflow past it, subnormals, -0.0, and NaN (sign kept, payload
# made 0x7FC0).
ROUNDING = [(1.00390625, 0x3F80), (1.01171875, 0x3F82), (1.0 + 2 ** -8 + 2 ** -20, 0x3F81),
            (1.9999999, 0x4000), (3.3961e38, 0x7F7F), (3.3963e38, 0x7F80), (1e-40, 0x0001), (-1e-40, 0x8001),
            (1.4e-45, 0x0000), (-0.0, 0x8000), (np.uint32(0x7FC00001).view(np.float32), 0x7FC0),
            (np.uint32(0xFFC12345).view(np.float32), 0xFFC0), (np.uint32(0x7F800001).view(np.float32), 0x7FC0)]


def test_rounding_is_nearest_even_keeps_subnormals_and_the_sign_of_nan():
    """prelu(-1, w) = -w exactly in float32, then rounded once: the kernels' narrowing in their 16-lane vectors,
    8-lane vectors and scalar tails (runs of 37 per channel), bit for bit including NaN's, as ml_dtypes rounds."""
    w = -np.array([f for f, _ in ROUNDING], np.float32)
    w[-3:] = np.array([f for f, _ in ROUNDING[-3:]], np.float32)  # -1 * NaN is that NaN (quieted), sign kept
    want = np.array([b for _, b in ROUNDING], np.uint16)
    x = -np.ones((1, len(w), 37), BF16)
    y = as_numpy(prelu(ms.Tensor(x), ms.Tensor(w)))
    np.testing.assert_array_equal(bits_of(y), np.broadcast_to(want[None, :, None], y.shape))
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(bits_of((np.float32(-1) * w).astype(BF16)), want)  # = ml_dtypes' rounding


@pytest.mark.parametrize("slope", SLOPES)
@pytest.mark.parametrize("formulation", ("select", "maxmin"))
def test_leaky_relu_forward_and_backward_bitwise(slope, formulation):
    x, dy = bf16_data()
    y, (dx,) = vjp(lambda t: leaky_relu(t, slope, formulation=formulation), x, dy=dy)
    assert y.dtype == BF16 and dx.dtype == BF16
    assert_bitwise(y, ref.forward(x, slope, formulation=formulation))
    assert_bitwise(dx, ref.backward(x, dy, slope))


def test_leaky_relu_product_is_rounded_once_from_float32():
    """slope * x in float32, rounded once: a double rounding (bf16 slope, or bf16 math) gives other bits here."""
    x = random_values(BF16, (4096,), seed=3)
    y = as_numpy(leaky_relu(ms.Tensor(x), 0.2))
    assert_bitwise(y, ref.forward(x, 0.2))
    bf16_slope = ref.forward(x, float(np.float32(0.2).astype(BF16)))
    assert not np.array_equal(bits_of(y), bits_of(bf16_slope))


@pytest.mark.parametrize("clamp", [None, 3.0, 256.0])
def test_leaky_relu_clamp_keeps_nan_and_zeroes_the_clamped_gradient(clamp):
    x, dy = bf16_data(seed=2)
    y, (dx,) = vjp(lambda t: leaky_relu(t, 0.2, clamp=clamp), x, dy=dy)
    assert_bitwise(y, ref.forward(x, 0.2, clamp))
    assert_bitwise(dx, ref.backward(x, dy, 0.2, clamp))
    assert np.isnan(y[np.isnan(x)]).all()


def test_leaky_relu_inplace_multithreaded_and_in_graph_mode(monkeypatch):
    monkeypatch.setenv("LRELU_NUM_THREADS", "2")
    x = np.concatenate([boundary_values(BF16), random_values(BF16, (1_000_003,), seed=4)])
    t = ms.Tensor(x.copy())
    leaky_relu(t, 0.01, inplace=True)
    assert_bitwise(as_numpy(t), ref.forward(x, 0.01))

    @ms.jit
    def forward(a):
        return leaky_relu(a, 0.01)

    assert_bitwise(as_numpy(forward(ms.Tensor(x))), ref.forward(x, 0.01))  # graph mode keeps the subnormals


@pytest.mark.parametrize("shape", [(), (1,), (7,), (3, 5), (2, 3, 17), (1, 3, 64, 67)])
def test_odd_shapes(shape):
    x = np.asarray(random_values(BF16, shape, seed=5))
    y = as_numpy(leaky_relu(ms.Tensor(x), 0.2))
    assert y.shape == shape
    assert_bitwise(y, ref.forward(x, 0.2))


@pytest.mark.parametrize("weight", [np.float32([0.25]), np.float32([0.0, 0.2, 1.5])])
@pytest.mark.parametrize("clamp", [None, 3.0])
def test_prelu_bitwise_with_a_float32_weight(weight, clamp):
    """bf16 activations with the float32 weight (precision=bf16 keeps parameters in float32): dx in bf16,
    dweight in float32 (float32 products summed in double, rounded once)."""
    x, dy = bf16_data(n=1002)
    x, dy = x.reshape(2, 3, -1), dy.reshape(2, 3, -1)
    y, (dx, dw) = vjp(lambda t, w: prelu(t, w, clamp=clamp), x, weight, dy=dy)
    assert y.dtype == BF16 and dx.dtype == BF16 and dw.dtype == np.float32
    assert_bitwise(y, ref.prelu_forward(x, weight, clamp))
    want_dx, want_dw = ref.prelu_backward(x, dy, weight, clamp)
    assert_bitwise(dx, want_dx)
    np.testing.assert_allclose(dw, want_dw, rtol=2e-7)


@pytest.mark.parametrize("alpha", [1.0, 0.5])
@pytest.mark.parametrize("clamp", [None, 1.5])
def test_elu_bitwise(alpha, clamp):
    x, dy = bf16_data()
    x = np.concatenate([x, np.array([-20.0, -1e-3, -88.0, -104.0, 1e-8], BF16)])
    dy = np.resize(dy, x.shape)
    y, (dx,) = vjp(lambda t: elu(t, alpha, clamp=clamp), x, dy=dy)
    assert_bitwise(y, ref.elu_forward(x, alpha, clamp))
    assert_bitwise(dx, ref.elu_backward(x, dy, alpha, clamp))


@pytest.mark.parametrize("training", [False, True])
def test_rrelu_bitwise(training):
    x, dy = bf16_data()
    key = (7, 3)
    kwargs = {"training": True, "key": ms.Tensor(np.int32(key))} if training else {}
    y, (dx,) = vjp(lambda t: rrelu(t, 0.1, 0.3, **kwargs), x, dy=dy)
    assert_bitwise(y, ref.rrelu_forward(x, 0.1, 0.3, training=training, key=key))
    assert_bitwise(dx, ref.rrelu_backward(x, dy, 0.1, 0.3, training=training, key=key))


def _bn_inputs(shape, seed=0):
    rng = np.random.default_rng(seed)
    c = shape[1]
    x = (rng.standard_normal(shape) * 2 + rng.normal(3, 1, (1, c) + (1,) * (len(shape) - 2))).astype(BF16)
    gamma, beta = rng.normal(1, 0.3, c).astype(np.float32), rng.normal(0, 0.3, c).astype(np.float32)
    return x, gamma, beta, rng.standard_normal(shape).astype(BF16)


def _fused(x, gamma, beta, dy, training, **kw):
    c = x.shape[1]
    mm = ms.Parameter(ms.Tensor(np.linspace(2.0, 4.0, c).astype(np.float32)), name="mm")
    mv = ms.Parameter(ms.Tensor(np.linspace(0.5, 5.0, c).astype(np.float32)), name="mv")
    y, pullback = ms.vjp(lambda t, g, b: fused_bn_act(t, mm, mv, g, b, 0.2, training=training, **kw),
                         ms.Tensor(x), ms.Tensor(gamma), ms.Tensor(beta))
    return [as_numpy(y)] + [as_numpy(g) for g in pullback(ms.Tensor(dy))] + [mm.asnumpy(), mv.asnumpy()]


def assert_one_rounding_of(got: np.ndarray, f32: np.ndarray) -> None:
    """got (bf16) is f32 (the float32 kernel's result) rounded to bfloat16: within 1 ulp, mostly equal."""
    want = f32.astype(BF16)
    ulps = np.abs(bits_of(got).astype(np.int32) - bits_of(want).astype(np.int32))
    same_sign = np.sign(got.astype(np.float32)) == np.sign(want.astype(np.float32))
    assert (ulps[same_sign] <= 1).all() and (np.abs(want[~same_sign].astype(np.float32)) < 1e-30).all()
    assert (ulps == 0).mean() >= 0.99


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("clamp", [None, 1.0])
def test_fused_bn_act_rounds_the_float32_result_once(training, clamp):
    x, gamma, beta, dy = _bn_inputs((4, 5, 9, 7), seed=1)
    got = _fused(x, gamma, beta, dy, training, clamp=clamp)
    f32 = _fused(x.astype(np.float32), gamma, beta, dy.astype(np.float32), training, clamp=clamp)
    assert got[0].dtype == BF16 and got[1].dtype == BF16 and got[2].dtype == np.float32
    assert_one_rounding_of(got[0], f32[0])
    assert_one_rounding_of(got[1], f32[1])
    for g, w in zip(got[2:], f32[2:]):  # dgamma, dbeta, moving mean and variance: float32 from equal inputs
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    y_ref, _, _ = ref.bn_act_forward(x, gamma, beta, 0.2, clamp=clamp, stats=None if training else (
        np.linspace(2.0, 4.0, 5), np.linspace(0.5, 5.0, 5)))
    np.testing.assert_allclose(got[0].astype(np.float64), y_ref.astype(np.float64), rtol=2 ** -7, atol=2 ** -7)


def test_bias_act_rounds_once_and_keeps_the_float32_bias_gradient():
    x, _, bias, dy = _bn_inputs((2, 5, 3, 7), seed=4)
    out = {}
    for name, xs, dys in (("bf16", x, dy), ("f32", x.astype(np.float32), dy.astype(np.float32))):
        y, pullback = ms.vjp(lambda t, b: bias_act(t, b, 0.2, clamp=2.0), ms.Tensor(xs), ms.Tensor(bias))
        out[name] = [as_numpy(y)] + [as_numpy(g) for g in pullback(ms.Tensor(dys))]
    assert_one_rounding_of(out["bf16"][0], out["f32"][0])
    assert_one_rounding_of(out["bf16"][1], out["f32"][1])
    assert out["bf16"][2].dtype == np.float32
    np.testing.assert_allclose(out["bf16"][2], out["f32"][2], rtol=1e-6, atol=1e-6)


# ---- PyTorch's bfloat16 ops on the same data (fixture written by scripts/bench/crosscheck_torch_bf16.py) ----

FIXTURE = Path(__file__).parent / "data" / "torch_bf16_activations.json"


def _from_hex(text: str) -> np.ndarray:
    return np.frombuffer(bytes.fromhex(text), "<u2").astype(np.uint16).view(BF16)


def _torch_cases():
    fixture = json.loads(FIXTURE.read_text())
    x, dy = _from_hex(fixture["x"]), _from_hex(fixture["dy"])
    return [(c["op"], c["params"], x, dy, _from_hex(c["y"]), _from_hex(c["dx"])) for c in fixture["cases"]]


REFERENCE = {"leaky_relu": (lambda x, p: ref.forward(x, p["negative_slope"]),
                            lambda x, dy, p: ref.backward(x, dy, p["negative_slope"]),
                            lambda t, p: leaky_relu(t, p["negative_slope"])),
             "prelu": (lambda x, p: ref.prelu_forward(x, np.float32(p["weight"])),
                       lambda x, dy, p: ref.prelu_backward(x, dy, np.float32(p["weight"]))[0],
                       lambda t, p: prelu(t, ms.Tensor(np.float32(p["weight"])))),
             "elu": (lambda x, p: ref.elu_forward(x, p["alpha"]), lambda x, dy, p: ref.elu_backward(x, dy, p["alpha"]),
                     lambda t, p: elu(t, p["alpha"]))}


@pytest.mark.parametrize("op,params,x,dy,torch_y,torch_dx", _torch_cases(),
                         ids=[f"{c[0]}-{c[1]}" for c in _torch_cases()])
def test_reference_and_kernels_are_bitwise_pytorch_bf16(op, params, x, dy, torch_y, torch_dx):
    """The numpy reference gives PyTorch 2.13's bfloat16 bits (NaN: position only; PyTorch writes 0x7FC0 in its
    scalar path and 0xFFFF in its AVX-512 one, the kernels sign | 0x7FC0), and the kernels give the
    reference's, forward and input gradient. PReLU runs on (2, 3, n) with the float32 weight of the kernels'
    bf16 policy (values bfloat16 holds exactly, so PyTorch's bf16 weight is the same number)."""
    if op == "prelu":
        x, dy, torch_y, torch_dx = (a.reshape(2, 3, -1) for a in (x, dy, torch_y, torch_dx))
    forward, backward, kernel = REFERENCE[op]
    want_y, want_dx = forward(x, params), backward(x, dy, params)
    assert_bitwise(want_y, torch_y)
    assert_bitwise(want_dx, torch_dx)
    y, pullback = ms.vjp(lambda t: kernel(t, params), ms.Tensor(x))
    assert_bitwise(as_numpy(y), want_y)
    assert_bitwise(as_numpy(pullback(ms.Tensor(dy))[0]), want_dx)
