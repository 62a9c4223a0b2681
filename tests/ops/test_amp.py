"""The custom ops under MindSpore mixed precision (amp O2 and O3), in graph mode (ms.jit) and PyNative.

amp casts every floating-point input of an op in a float16 cell to float16, the cell's tensor attributes
and Parameters included; the ops' scalars travel as int32 bit patterns, so slope and clamp stay float32
(`ops.api.pack_scalars`). Tolerances:
- LeakyReLU: bit-exact against `ops.reference` (float32 math with the float32 slope, one rounding to
  float16) applied to the float16 pre-activation the same network produced; the gradient too.
- BatchNormAct, vs the float64 reference on the same float16 conv output: O2 runs it in float32 (amp keeps
  BatchNorm2d subclasses in float32), O3 feeds it float16 gamma and beta, in PyNative also float16 batch
  statistics (amp casts every op input there). y within rtol/atol 4e-3 (measured: bit-exact except O3
  PyNative, 1 float16 ulp); dgamma and dbeta rtol 4e-3, atol 2e-3 * sqrt(m) (measured rel 4.4e-4). Moving
  statistics (float32 Parameters): rtol 1e-5, except O3 in PyNative, where amp casts the value assigned to
  them to float16 (one float16 rounding per update, measured): rtol 1e-3, atol 1e-7 (the float16 subnormal
  spacing is 6e-8).
"""
from collections.abc import Callable

import mindspore as ms
import numpy as np
import pytest
from mindspore import amp, nn

from ops import BatchNormAct, LeakyReLU
from ops import reference as ref

MODES = ["graph", "pynative"]
LEVELS = ["O2", "O3"]
SLOPE = 0.2


def execute(mode: str, fn: Callable, *args):
    """fn(*args) compiled with ms.jit (graph) or run op by op (pynative)."""
    return (ms.jit(fn) if mode == "graph" else fn)(*args)


class ConvAct(nn.Cell):
    """conv -> activation layer; returns (pre-activation, output) so tests can apply the reference."""

    def __init__(self, act: nn.Cell, channels: int = 6) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, channels, 3, pad_mode="pad", padding=1, weight_init="normal")
        self.act = act

    def construct(self, x: ms.Tensor) -> tuple[ms.Tensor, ms.Tensor]:
        h = self.conv(x)
        return h, self.act(h)


def mixed(cell: nn.Cell, level: str) -> nn.Cell:
    """Apply amp to cell in place and return it: its own outputs stay float16 (the wrapper amp returns only
    casts the final output to float32)."""
    amp.auto_mixed_precision(cell, level, ms.float16)
    return cell


def images(seed: int = 0, scale: float = 30.0) -> ms.Tensor:
    """A float32 batch large enough that conv outputs reach a clamp of 4 and underflow float16 when scaled."""
    return ms.Tensor((np.random.default_rng(seed).standard_normal((4, 3, 8, 8)) * scale).astype(np.float32))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("clamp", [None, 4.0])
def test_leaky_relu_in_a_mixed_network_is_float16_with_float32_slope_math(mode, level, clamp):
    net = mixed(ConvAct(LeakyReLU(SLOPE, clamp=clamp)), level)
    pre, out = (t.asnumpy() for t in execute(mode, net, images()))
    assert pre.dtype == np.float16 and out.dtype == np.float16
    expected = ref.forward(pre, SLOPE, clamp)
    np.testing.assert_array_equal(out, expected)
    # A float16-rounded slope (what amp would make of a float scalars tensor) gives other values here,
    # so the equality above checks that the slope reached the kernel in float32.
    assert not np.array_equal(ref.forward(pre, float(np.float16(SLOPE)), clamp), expected)
    if clamp is not None:
        assert (np.abs(out) == clamp).any()  # the clamp acted


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("level", LEVELS)
def test_leaky_relu_gradient_in_a_mixed_cell_matches_the_reference(mode, level):
    net = mixed(LeakyReLU(SLOPE), level)
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((5, 7, 9)) * 3).astype(np.float16)
    dy = rng.standard_normal(x.shape).astype(np.float16)

    def grad_x(t, d):
        _, vjp_fn = ms.vjp(net, t)
        return vjp_fn(d)[0]

    dx = execute(mode, grad_x, ms.Tensor(x), ms.Tensor(dy)).asnumpy()
    assert dx.dtype == np.float16
    np.testing.assert_array_equal(dx, ref.backward(x, dy, SLOPE))
    assert not np.array_equal(ref.backward(x, dy, float(np.float16(SLOPE))), dx)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("level", LEVELS)
def test_batch_norm_act_in_a_mixed_network_matches_the_reference(mode, level):
    rng = np.random.default_rng(2)
    bn = BatchNormAct(6, SLOPE)
    gamma, beta = rng.normal(1, 0.3, 6).astype(np.float32), rng.normal(0, 0.3, 6).astype(np.float32)
    bn.gamma.set_data(ms.Tensor(gamma))
    bn.beta.set_data(ms.Tensor(beta))
    net = mixed(ConvAct(bn), level)
    net.set_train(True)
    x = images(scale=1.0)
    pre, out = (t.asnumpy() for t in execute(mode, net, x))
    assert pre.dtype == np.float16 and out.dtype == np.float16
    y_ref, mean, var = ref.bn_act_forward(pre, gamma, beta, SLOPE)
    np.testing.assert_allclose(out.astype(np.float32), y_ref.astype(np.float32), rtol=4e-3, atol=4e-3)
    m = pre.size // pre.shape[1]
    stats_tol = {"rtol": 1e-3, "atol": 1e-7} if (mode, level) == ("pynative", "O3") else {"rtol": 1e-5, "atol": 1e-9}
    np.testing.assert_allclose(bn.moving_mean.asnumpy(), 0.1 * mean, **stats_tol)
    np.testing.assert_allclose(bn.moving_variance.asnumpy(), 0.9 + 0.1 * var * m / (m - 1), **stats_tol)

    dy = rng.standard_normal(pre.shape).astype(np.float16)
    dy_t = ms.Tensor(dy.astype(np.float32))

    def loss(t):
        return (net(t)[1].astype(ms.float32) * dy_t).sum()

    _, (dgamma, dbeta) = execute(mode, ms.value_and_grad(loss, None, [bn.gamma, bn.beta]), x)
    _, dgamma_ref, dbeta_ref = ref.bn_act_backward(pre, dy, gamma, beta, SLOPE)
    for got, want in ((dgamma, dgamma_ref), (dbeta, dbeta_ref)):
        assert got.dtype == ms.float32  # the Parameters' dtype, whatever amp computed in
        np.testing.assert_allclose(got.asnumpy(), want, rtol=4e-3, atol=2e-3 * np.sqrt(m))
