"""The activation family (PReLU, RReLU, ELU, AdaptiveLeakyReLU) against the numpy reference: forward and
backward bit for bit (the PReLU weight gradient within 1 float32 ulp: double sums in another order), with
the LeakyReLU suite's boundary data (+-0, subnormals, +-inf, NaN, float16 limits), float32 and float16,
PyNative and graph mode; RReLU's training draws; argument checks."""
import math

import mindspore as ms
import numpy as np
import pytest
from leaky_relu_cases import DTYPES, assert_bitwise, boundary_values, random_values

from ops import ACTIVATIONS, ELU, AdaptiveLeakyReLU, LeakyReLU, PReLU, RReLU, elu, leaky_relu, prelu, rrelu
from ops import reference as ref

SHAPE = (2, 3, 172)  # 1032 = 24 boundary values + 1008 random ones; 3 channels on axis 1


def data(dtype, seed=0):
    x = np.concatenate([boundary_values(dtype), random_values(dtype, (1008,), seed)]).reshape(SHAPE)
    dy = (random_values(dtype, SHAPE, seed + 1) / 10).astype(dtype)
    return x, dy


def vjp(fn, *inputs, dy):
    """(output, gradients for every input) of fn with upstream gradient dy, as numpy."""
    y, pullback = ms.vjp(fn, *(ms.Tensor(i) for i in inputs))
    grads = pullback(ms.Tensor(dy))
    return y.asnumpy(), [g.asnumpy() for g in (grads if isinstance(grads, tuple) else (grads,))]


def assert_within_one_ulp(actual, expected):
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    np.testing.assert_array_equal(np.isnan(actual), np.isnan(expected))
    finite = np.isfinite(expected)
    np.testing.assert_array_equal(actual[~finite & ~np.isnan(expected)], expected[~finite & ~np.isnan(expected)])
    ulp = np.spacing(np.abs(expected[finite]).astype(expected.dtype))
    assert np.all(np.abs(actual[finite].astype(np.float64) - expected[finite]) <= ulp)


# ---- PReLU ----

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("weight", [np.float32([0.25]), np.float32([0.0, 0.2, 1.5]), np.float32([-0.3, 1e-30, 0.01])])
@pytest.mark.parametrize("clamp", [None, 3.0])
def test_prelu_matches_reference(dtype, weight, clamp):
    x, dy = data(dtype)
    y, (dx, dw) = vjp(lambda t, w: prelu(t, w, clamp=clamp), x, weight, dy=dy)
    assert_bitwise(y, ref.prelu_forward(x, weight, clamp))
    ref_dx, ref_dw = ref.prelu_backward(x, dy, weight, clamp)
    assert_bitwise(dx, ref_dx)
    assert_within_one_ulp(dw, ref_dw)


def test_prelu_weight_gradient_is_the_sum_over_negative_inputs():
    x = np.float32([[[-1.0, 2.0], [-3.0, -4.0]], [[0.0, -5.0], [6.0, -0.5]]])  # (N=2, C=2, 2)
    _, (dx, dw) = vjp(lambda t, w: prelu(t, w), x, np.float32([0.1, 0.2]), dy=np.ones_like(x))
    np.testing.assert_array_equal(dw, np.float32([-1.0 + 0.0 - 5.0, -3.0 - 4.0 - 0.5]))
    np.testing.assert_allclose(dx, np.where(x > 0, 1.0, np.float32([0.1, 0.2]).reshape(1, 2, 1)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_prelu_fp16_weight_under_amp_is_accepted(dtype):
    x, dy = data(dtype)
    w = np.float16([0.25, 0.5, 0.125])
    y, (dx, dw) = vjp(lambda t, v: prelu(t, v), x, w, dy=dy)
    assert_bitwise(y, ref.prelu_forward(x, w))
    assert dw.dtype == np.float16
    assert_within_one_ulp(dw, ref.prelu_backward(x, dy, w)[1])


def test_prelu_multithreaded_and_in_graph_mode(monkeypatch):
    monkeypatch.setenv("LRELU_NUM_THREADS", "2")
    x = random_values(np.float32, (4, 8, 256, 129), seed=4)
    dy = random_values(np.float32, x.shape, seed=5)
    w = np.linspace(0, 1, 8, dtype=np.float32)
    def loss(t, v):
        return (prelu(t, v) * ms.Tensor(dy)).sum()

    dx, dw = ms.jit(ms.grad(loss, (0, 1)))(ms.Tensor(x), ms.Tensor(w))
    ref_dx, ref_dw = ref.prelu_backward(x, dy, w)
    assert_bitwise(dx.asnumpy(), ref_dx)
    assert_within_one_ulp(dw.asnumpy(), ref_dw)


def test_prelu_cell_trains_its_weight():
    layer = PReLU(3, init=0.25)
    assert layer.weight.asnumpy().tolist() == [0.25] * 3 and "num_parameters=3" in repr(layer)
    grads = ms.grad(lambda t: layer(t).sum(), None,
                    layer.trainable_params())(ms.Tensor(-np.ones((2, 3, 4), np.float32)))
    np.testing.assert_array_equal(grads[0].asnumpy(), np.float32([-8.0] * 3))


def test_prelu_bad_weight_shape_and_dtype():
    x = ms.Tensor(np.ones((2, 3, 4), np.float32))
    with pytest.raises(ValueError, match=r"weight of shape \(1,\) or \(C,\) with C = x.shape\[1\] = 3"):
        prelu(x, ms.Tensor(np.ones(4, np.float32)))
    with pytest.raises(TypeError, match="prelu supports float32 and float16"):
        prelu(ms.Tensor(np.ones(3, np.int32)), ms.Tensor(np.ones(1, np.float32)))


# ---- ELU ----

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("alpha", [1.0, 0.5, 2.0])
@pytest.mark.parametrize("clamp", [None, 1.5])
def test_elu_matches_reference(dtype, alpha, clamp):
    x, dy = data(dtype)
    x = np.concatenate([x.ravel(), np.array([-20.0, -1e-3, -88.0, -104.0, 1e-8], dtype)])
    dy = np.resize(dy.ravel(), x.shape)
    y, (dx,) = vjp(lambda t: elu(t, alpha, clamp=clamp), x, dy=dy)
    assert_bitwise(y, ref.elu_forward(x, alpha, clamp))
    assert_bitwise(dx, ref.elu_backward(x, dy, alpha, clamp))


def test_elu_is_within_one_ulp_of_the_exact_function():
    x = np.concatenate([-np.logspace(-8, 1.3, 20000), np.linspace(-110, 0, 30001)]).astype(np.float32)
    y, (dx,) = vjp(lambda t: elu(t, 1.0), x, dy=np.ones_like(x))
    for got, exact in ((y, np.expm1(x.astype(np.float64))), (dx, np.exp(x.astype(np.float64)))):
        ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
        assert np.max(np.abs(got - exact) / ulp) < 1.0


def test_elu_matches_reference_on_every_float_near_its_range_limits():
    # The kernel limits x to [-17.5, 0] for expm1 and to [-104, 0] for exp, and exp's results turn subnormal
    # below about -87.3: every float32 around those limits, forward and backward.
    lo_hi = [(-17.6, -17.4), (-87.6, -86.9), (-104.05, -103.95)]
    x = np.concatenate([np.arange(np.float32(lo).view(np.int32), np.float32(hi).view(np.int32), -1,
                                  dtype=np.int32).view(np.float32) for lo, hi in lo_hi])
    y, (dx,) = vjp(lambda t: elu(t, 1.0), x, dy=np.ones_like(x))
    assert_bitwise(y, ref.elu_forward(x, 1.0))
    assert_bitwise(dx, ref.elu_backward(x, np.ones_like(x), 1.0))
    assert (y == -1).all() and (dx[x < -87.4] < np.finfo(np.float32).tiny).all()


def test_elu_special_values():
    x = np.float32([-np.inf, np.inf, np.nan, 0.0, -0.0, -1.0])
    y = elu(ms.Tensor(x), 1.0).asnumpy()
    np.testing.assert_array_equal(y[[0, 1, 3, 5]], np.float32([-1.0, np.inf, 0.0, math.expm1(-1.0)]))
    assert np.isnan(y[2]) and np.signbit(y[4])
    g = ms.grad(lambda t: elu(t, 0.5).sum())(ms.Tensor(x)).asnumpy()
    np.testing.assert_array_equal(g[[0, 1, 3]], np.float32([0.0, 1.0, 0.5]))


def test_elu_cell_in_graph_mode():
    layer = ELU(0.7, clamp=4.0)
    x = random_values(np.float32, (3, 5))
    assert_bitwise(ms.jit(layer.construct)(ms.Tensor(x)).asnumpy(), ref.elu_forward(x, 0.7, 4.0))
    assert repr(layer) == "ELU(alpha=0.7, clamp=4.0)"


# ---- RReLU ----

@pytest.mark.parametrize("dtype", DTYPES)
def test_rrelu_eval_is_leaky_relu_with_the_mean_slope(dtype):
    x, dy = data(dtype)
    y, (dx,) = vjp(lambda t: rrelu(t, 0.1, 0.3), x, dy=dy)
    assert_bitwise(y, ref.forward(x, 0.2))
    assert_bitwise(dx, ref.backward(x, dy, 0.2))
    assert_bitwise(y, ref.rrelu_forward(x, 0.1, 0.3))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("clamp", [None, 2.0])
def test_rrelu_training_matches_reference(dtype, clamp):
    x, dy = data(dtype)
    key = np.int32([7, 12])
    y, (dx, _) = vjp(lambda t, k: rrelu(t, 1 / 8, 1 / 3, training=True, clamp=clamp, key=k), x, key, dy=dy)
    kw = {"training": True, "key": (7, 12), "clamp": clamp}
    assert_bitwise(y, ref.rrelu_forward(x, 1 / 8, 1 / 3, **kw))
    assert_bitwise(dx, ref.rrelu_backward(x, dy, 1 / 8, 1 / 3, **kw))


def test_rrelu_training_slopes_are_uniform_and_the_gradient_uses_them(monkeypatch):
    monkeypatch.setenv("LRELU_NUM_THREADS", "2")
    n = 1 << 21
    x = -np.ones(n, np.float32)
    y, (dx, _) = vjp(lambda t, k: rrelu(t, 0.1, 0.4, training=True, key=k), x, np.int32([3, 0]), dy=np.ones_like(x))
    slopes = -y.astype(np.float64)
    np.testing.assert_array_equal(dx, -y)  # the backward uses exactly the forward's slopes
    assert slopes.min() >= np.float32(0.1) and slopes.max() <= np.float32(0.4)
    # Kolmogorov-Smirnov distance to U[0.1, 0.4]: the 0.1% critical value is 1.95 / sqrt(n).
    u = np.sort((slopes - 0.1) / 0.3)
    ks = max(np.max(np.arange(1, n + 1) / n - u), np.max(u - np.arange(n) / n))
    assert ks < 1.95 / math.sqrt(n)
    # 16 equal bins, chi-square with 15 degrees of freedom below its 0.1% critical value 37.7
    counts = np.histogram(u, bins=16, range=(0, 1))[0]
    assert ((counts - n / 16) ** 2 / (n / 16)).sum() < 37.7
    # another key draws other slopes; the same key the same ones
    other = rrelu(ms.Tensor(x), 0.1, 0.4, training=True, key=ms.Tensor(np.int32([3, 1]))).asnumpy()
    again = rrelu(ms.Tensor(x), 0.1, 0.4, training=True, key=ms.Tensor(np.int32([3, 0]))).asnumpy()
    assert (other != y).mean() > 0.99 and np.array_equal(again, y)


def test_rrelu_cell_counts_its_draws_and_follows_the_mode():
    layer = RReLU(0.1, 0.3, seed=5)
    x = -np.ones((2, 3, 8), np.float32)
    layer.set_train(True)
    first, second = layer(ms.Tensor(x)).asnumpy(), layer(ms.Tensor(x)).asnumpy()
    assert layer.counter.asnumpy().tolist() == [2]
    assert_bitwise(first, ref.rrelu_forward(x, 0.1, 0.3, training=True, key=(5, 0)))
    assert_bitwise(second, ref.rrelu_forward(x, 0.1, 0.3, training=True, key=(5, 1)))
    layer.set_train(False)
    assert_bitwise(layer(ms.Tensor(x)).asnumpy(), ref.forward(x, 0.2))
    assert layer.counter.asnumpy().tolist() == [2]


def test_rrelu_cell_trains_in_graph_mode_with_the_drawn_slopes():
    layer = RReLU(0.1, 0.3, seed=9)
    layer.set_train(True)
    x = -np.ones((4, 16), np.float32)
    def loss(t):
        return layer(t).sum()

    step = ms.jit(ms.value_and_grad(loss))
    for counter in range(2):
        loss, dx = step(ms.Tensor(x))
        slopes = ref.rrelu_slopes(9, counter, x.shape, 0.1, 0.3)
        np.testing.assert_array_equal(dx.asnumpy(), slopes)
        np.testing.assert_allclose(loss.asnumpy(), -slopes.astype(np.float64).sum(), rtol=1e-5)
    assert layer.counter.asnumpy().tolist() == [2]


def test_rrelu_bounds_are_checked():
    x = ms.Tensor(np.ones(3, np.float32))
    with pytest.raises(ValueError, match="lower=0.5, upper=0.2 .* 0 <= lower <= upper <= 1"):
        rrelu(x, 0.5, 0.2)
    with pytest.raises(ValueError, match=r"upper=1.5 is not allowed: .*0 <= upper <= 1"):
        RReLU(0.1, 1.5)
    with pytest.raises(ValueError, match="needs key=Tensor"):
        rrelu(x, training=True)


# ---- AdaptiveLeakyReLU ----

def test_adaptive_forward_and_gradients():
    layer = AdaptiveLeakyReLU(0.3, num_parameters=3)
    x = (random_values(np.float32, (4, 3, 5, 5), seed=2) / 100 + np.float32([0.5, -0.5, 0.0]).reshape(1, 3, 1, 1))
    np.testing.assert_allclose(layer(ms.Tensor(x)).asnumpy(), ref.adaptive_forward(x, np.full(3, 0.3)), rtol=1e-5,
                               atol=1e-6)
    slopes = layer.slopes(ms.Tensor(x)).asnumpy()
    assert np.all((0 < slopes) & (slopes < 0.3))
    np.testing.assert_allclose(slopes, ref.adaptive_slopes(x, np.full(3, 0.3)), rtol=1e-5)

    def loss64(alpha, inp):
        y = np.where(inp > 0, inp, ref.adaptive_slopes(inp, alpha).reshape(1, 3, 1, 1) * inp)
        return (y * np.cos(np.arange(y.size).reshape(y.shape))).sum()

    weights = ms.Tensor(np.cos(np.arange(x.size).reshape(x.shape)).astype(np.float32))
    dx, (dalpha,) = ms.grad(lambda t: (layer(t) * weights).sum(), 0, layer.trainable_params())(ms.Tensor(x))
    h = 1e-6
    x64 = x.astype(np.float64)
    for c in range(3):
        e = np.eye(3)[c] * h
        numeric = (loss64(0.3 + e, x64) - loss64(0.3 - e, x64)) / (2 * h)
        np.testing.assert_allclose(dalpha.asnumpy()[c], numeric, rtol=1e-3)
    # through the mean and variance too: the gradient for x differs from the one with frozen slopes
    i = (0, 1, 0, 0)
    e = np.zeros_like(x64)
    e[i] = 1e-4
    numeric = (loss64(np.full(3, 0.3), x64 + e) - loss64(np.full(3, 0.3), x64 - e)) / 2e-4
    np.testing.assert_allclose(dx.asnumpy()[i], numeric, rtol=2e-3)


def test_adaptive_constant_input_uses_eps():
    layer = AdaptiveLeakyReLU(0.2)
    x = np.full((2, 1, 3), -1.0, np.float32)
    expected = -0.2 / (1 + math.exp(1.0 / math.sqrt(1e-5)))
    np.testing.assert_allclose(layer(ms.Tensor(x)).asnumpy(), np.full(x.shape, expected, np.float32), rtol=1e-5)


# ---- the table and the checks shared by every row ----

def test_table_rows_name_their_facts():
    assert set(ACTIVATIONS) == {"leaky_relu", "prelu", "rrelu", "elu", "adaptive"}
    assert [n for n, a in ACTIVATIONS.items() if a.learnable] == ["prelu", "adaptive"]
    assert [n for n, a in ACTIVATIONS.items() if a.random] == ["rrelu"]
    assert [n for n, a in ACTIVATIONS.items() if a.inplace] == ["leaky_relu"]
    assert [n for n, a in ACTIVATIONS.items() if a.bn_fusable] == ["leaky_relu", "prelu"]  # ops.fused's kernels
    # tests/ops/test_leaky_relu_backward.py differentiates LeakyReLU's backward
    assert [n for n, a in ACTIVATIONS.items() if a.second_derivative] == ["leaky_relu"]
    assert ACTIVATIONS["rrelu"].resolve() == {"lower": 0.125, "upper": 1 / 3}
    with pytest.raises(TypeError, match="leaky_relu needs negative_slope"):
        ACTIVATIONS["leaky_relu"].resolve()


@pytest.mark.parametrize("make", [lambda: leaky_relu(ms.Tensor(np.ones(3, np.float32)), 0.2, clamp=1e-50),
                                  lambda: LeakyReLU(0.2, clamp=1e-50),
                                  lambda: elu(ms.Tensor(np.ones(3, np.float32)), clamp=1e-50),
                                  lambda: PReLU(clamp=1e-50), lambda: RReLU(clamp=1e-50), lambda: ELU(clamp=1e-50),
                                  lambda: AdaptiveLeakyReLU(clamp=1e-50)])
def test_clamp_that_float32_cannot_hold_is_rejected(make):
    with pytest.raises(ValueError,
                       match=r"clamp=1e-50 is not allowed: the kernels compute in float32, where it becomes 0.0"):
        make()


_TINY_PARAMETERS = [
    ("negative_slope", lambda v: leaky_relu(ms.Tensor(np.ones(3, np.float32)), v)),
    ("negative_slope", lambda v: LeakyReLU(v)),
    ("alpha", lambda v: ELU(v)), ("init", lambda v: PReLU(init=v)), ("lower", lambda v: RReLU(v, 0.3)),
    ("init_alpha", lambda v: AdaptiveLeakyReLU(v))]


# negative tiny values only where negatives are allowed at all (slopes and RReLU bounds live in [0, 1])
@pytest.mark.parametrize("name, make, value", [
    (name, make, value) for name, make in _TINY_PARAMETERS for value in (1e-50, -1e-40)
    if value > 0 or name not in ("negative_slope", "lower")])
def test_parameters_that_float32_cannot_hold_are_rejected(name, make, value):
    with pytest.raises(ValueError, match=rf"{name}={value!r} is not allowed: the kernels compute in float32"):
        make(value)
    with pytest.raises(ValueError, match=r"alpha=1e\+39 is not allowed: .*becomes inf"):
        ELU(1e39)


def test_negative_slope_one_is_the_identity():
    x = random_values(np.float32, (101,))
    assert_bitwise(leaky_relu(ms.Tensor(x), 1.0).asnumpy(), x)


def max_ulps(actual, expected) -> float:
    """Largest distance in units of the expected value's last place; NaN/inf must match exactly."""
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    same = (a == e) | (np.isnan(a) & np.isnan(e))
    assert np.isfinite(e[~same]).all() and np.isfinite(a[~same]).all(), "special values differ"
    if same.all():
        return 0.0
    return float((np.abs(a - e)[~same] / np.spacing(np.abs(expected[~same]))).max())


@pytest.mark.parametrize("dtype", DTYPES)
def test_optional_torch_agreement(dtype):
    """Measured with torch 2.13.0+cpu: prelu (x side) and rrelu in eval bit-exact, forward and backward; the
    prelu weight gradient within 4 ulp (PyTorch sums in float32, this kernel in double: within 1 ulp of the exact
    sum); elu within 1 ulp forward and backward in float32 (two float32 expm1/exp implementations, each within 1 ulp
    of the exact value), bit-exact in float16."""
    torch = pytest.importorskip("torch", reason="torch is an optional cross-check, not a dependency")
    F = torch.nn.functional
    x, dy = data(dtype)
    w = np.float32([0.0, 0.2, 1.5]).astype(dtype)
    cases = [("prelu", lambda t, v: F.prelu(t, v), lambda t, v: prelu(t, v), (0, 0, 4)),
             ("rrelu", lambda t, v: F.rrelu(t, 0.1, 0.3), lambda t, v: rrelu(t, 0.1, 0.3), (0, 0)),
             ("elu", lambda t, v: F.elu(t), lambda t, v: elu(t), (1, 1) if dtype == np.float32 else (0, 0))]
    for name, theirs, ours, bounds in cases:
        tx, tw = torch.from_numpy(x).requires_grad_(), torch.from_numpy(w).requires_grad_()
        ty = theirs(tx, tw)
        ty.backward(torch.from_numpy(dy))
        y, pullback = ms.vjp(ours, ms.Tensor(x), ms.Tensor(w))
        grads = pullback(ms.Tensor(dy))
        pairs = [(y.asnumpy(), ty.detach().numpy()), (grads[0].asnumpy(), tx.grad.numpy())]
        if name == "prelu":
            pairs.append((grads[1].asnumpy(), tw.grad.numpy()))
        for (got, want), bound in zip(pairs, bounds):
            assert max_ulps(got, want) <= bound, name



# ---- BatchNorm + PReLU fused (fusion=bn_act with act.*_kind=prelu) ----

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("num_parameters", [1, 5])
@pytest.mark.parametrize("training", [True, False])
def test_fused_bn_prelu_matches_batchnorm_then_prelu(dtype, num_parameters, training):
    from mindspore import nn

    from ops import BatchNormPReLU

    rng = np.random.default_rng(1)
    x = (rng.standard_normal((4, 5, 6, 3)) * 2 + 1).astype(dtype)
    dy = rng.standard_normal(x.shape).astype(dtype)
    init = rng.uniform(-0.5, 0.8, num_parameters).astype(np.float32)
    fused, bn, act = BatchNormPReLU(5, num_parameters, 0.25), nn.BatchNorm2d(5), PReLU(num_parameters, 0.25)
    moving = rng.normal(0, 1, 5).astype(np.float32)
    for cell in (fused, bn):
        cell.moving_mean.set_data(ms.Tensor(moving))
        cell.set_train(training)
    fused.prelu_weight.set_data(ms.Tensor(init))
    act.weight.set_data(ms.Tensor(init))

    def unfused(t):
        return act(bn(t))

    results = []
    for f, params in ((fused, fused.trainable_params()), (unfused, bn.trainable_params() + act.trainable_params())):
        y, grads = ms.value_and_grad(lambda t: (f(t) * ms.Tensor(dy)).sum(), 0, params)(ms.Tensor(x))
        results.append([g.asnumpy().astype(np.float64) for g in (grads[0], *grads[1])])
    names = ["dx", "dgamma", "dbeta", "dweight"]
    for name, a, b in zip(names, *results):
        scale = np.abs(b).max() + 1
        tol = 2e-2 if dtype == np.float16 else 1e-4
        assert np.abs(a - b).max() <= tol * scale, (name, a, b)
    np.testing.assert_allclose(fused.moving_mean.asnumpy(), bn.moving_mean.asnumpy(), rtol=1e-5, atol=1e-6)


def test_kinds_without_an_ascend_kernel_say_so(monkeypatch):
    from ops import _custom

    monkeypatch.setattr(_custom, "device_target", lambda: "Ascend")
    with pytest.raises(RuntimeError, match="elu has a CPU kernel only"):
        elu(ms.Tensor(np.ones(3, np.float32)))
