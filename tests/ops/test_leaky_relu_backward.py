"""Backward of the custom LeakyReLU: reference, finite differences, clamp, inplace, graph-mode training."""
import mindspore as ms
import numpy as np
import pytest
from leaky_relu_cases import SLOPES, assert_bitwise, boundary_values, random_values
from mindspore import nn

from ops import LeakyReLU, leaky_relu
from ops import reference as ref


def grad_of(x: np.ndarray, dy: np.ndarray, slope: float, **kw) -> np.ndarray:
    """The vector-Jacobian product with dy: the backward kernel applied to dy, with no other op between."""
    _, vjp = ms.vjp(lambda t: leaky_relu(t, slope, **kw), ms.Tensor(x))
    return vjp(ms.Tensor(dy))[0].asnumpy()


@pytest.mark.parametrize("dtype", (np.float32, np.float16))
@pytest.mark.parametrize("slope", SLOPES)
def test_gradient_matches_reference(dtype, slope):
    x = np.concatenate([boundary_values(dtype), random_values(dtype, (1001,))])
    dy = random_values(dtype, x.shape, seed=3) / 10
    assert_bitwise(grad_of(x, dy, slope), ref.backward(x, dy, slope))


def test_gradient_at_zero_is_the_slope_and_subnormals_survive():
    x = np.array([0.0, -0.0, 1e-45, -1e-45], np.float32)
    dy = np.array([1.0, 1.0, 1.0, 1e-40], np.float32)
    np.testing.assert_array_equal(grad_of(x, dy, 0.2), np.float32([0.2, 0.2, 1.0, np.float32(0.2) * np.float32(1e-40)]))


def test_gradient_matches_central_finite_differences():
    x = random_values(np.float64, (64,), seed=5) / 100
    x = x[np.abs(x) > 1e-3].astype(np.float32)
    h = np.float32(1e-3)
    numeric = (ref.forward(x + h, 0.2).astype(np.float64) - ref.forward(x - h, 0.2).astype(np.float64)) / (2 * h)
    np.testing.assert_allclose(grad_of(x, np.ones_like(x), 0.2), numeric, rtol=1e-3)
    # At x == 0 the one-sided difference from the left (strict x > 0) gives the slope, as in PyTorch.
    left = (ref.forward(np.float32([0.0]), 0.2) - ref.forward(np.float32([-h]), 0.2)) / h
    np.testing.assert_allclose(grad_of(np.float32([0.0]), np.float32([1.0]), 0.2), left, rtol=1e-6)


def test_gradient_is_zero_where_clamped():
    x = np.array([-300.0, -256.0, 10.0, 256.0, 300.0, np.inf], np.float16)
    g = grad_of(x, np.ones_like(x), 1.0, clamp=256.0)
    np.testing.assert_array_equal(g, np.float16([0.0, 1.0, 1.0, 1.0, 0.0, 0.0]))
    assert_bitwise(g, ref.backward(x, np.ones_like(x), 1.0, clamp=256.0))


@pytest.mark.parametrize("slope", SLOPES)
def test_inplace_backward_from_output_sign_equals_input_backward(slope):
    x = np.concatenate([boundary_values(np.float32), random_values(np.float32, (513,))])
    dy = random_values(np.float32, x.shape, seed=7)
    assert_bitwise(grad_of(x, dy, slope, inplace=True), grad_of(x, dy, slope))


def test_builtin_gradient_differs_at_zero():
    # Same values away from 0; at x == 0 MindSpore's built-in sends the gradient to 1, ours (and
    # PyTorch/TensorFlow) to the slope. This documents the difference.
    x = ms.Tensor(np.float32([-2.0, 0.0, 3.0]))
    builtin = ms.grad(lambda t: ms.ops.leaky_relu(t, 0.2).sum())(x).asnumpy()
    ours = ms.grad(lambda t: leaky_relu(t, 0.2).sum())(x).asnumpy()
    np.testing.assert_allclose(builtin[[0, 2]], ours[[0, 2]])
    assert ours[1] == np.float32(0.2) and builtin[1] != ours[1]


class TwoSlopes(nn.Cell):
    """Several layers with different slopes in one network (the CustomRegOp registration pitfall)."""

    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(4, 4, weight_init="ones", bias_init="zeros")
        self.acts = nn.CellList([LeakyReLU(0.0), LeakyReLU(0.1), LeakyReLU(0.5)])

    def construct(self, x):
        h = self.dense(x)
        return self.acts[0](h) + self.acts[1](h) + self.acts[2](h)


def test_layers_with_different_slopes_train_in_graph_mode():
    net = TwoSlopes()
    x = ms.Tensor(np.float32([[-1.0, -1.0, 0.5, 0.0]]))
    h = -1.5  # every unit of the dense output
    expected = 0.0 * h + 0.1 * h + 0.5 * h
    def loss_fn(inp):
        return net(inp).sum()

    step = ms.jit(ms.value_and_grad(loss_fn, None, net.trainable_params()))
    for _ in range(2):  # the second call runs the compiled graph
        loss, grads = step(x)
    np.testing.assert_allclose(loss.asnumpy(), 4 * expected, rtol=1e-6)
    # d loss / d W[i, j] = (0 + 0.1 + 0.5) * x[j] for h < 0
    np.testing.assert_allclose(grads[0].asnumpy(), np.tile(0.6 * x.asnumpy(), (4, 1)), rtol=1e-6)
    pynative_loss = net(x).sum().asnumpy()
    np.testing.assert_allclose(pynative_loss, loss.asnumpy())


def test_functional_inside_jit_with_two_slopes():
    @ms.jit
    def two(t):
        return leaky_relu(t, 0.1) - leaky_relu(t, 0.3, formulation="maxmin")

    x = np.float32([-1.0, 2.0])
    np.testing.assert_allclose(two(ms.Tensor(x)).asnumpy(), np.float32([0.2, 0.0]), rtol=1e-6)


@pytest.mark.parametrize("mode", ("pynative", "graph"))
@pytest.mark.parametrize("clamp, inplace", [(None, False), (1.5, False), (None, True)])
def test_second_derivative_differentiates_the_backward_kernel(mode, clamp, inplace):
    """The backward dx = g(x) * dy is linear in dy: its gradient w.r.t. dy is the same kernel on the incoming
    gradient, w.r.t. x it is 0 (a.e.). Gradient penalties (WGAN-GP, R1) need this second derivative."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal(64).astype(np.float32) * 2
    dy, v = rng.standard_normal(64).astype(np.float32), rng.standard_normal(64).astype(np.float32)

    act = LeakyReLU(0.2, clamp=clamp, inplace=inplace)

    def weighted(t, d):
        return (act(t) * d).sum()

    backward = ms.grad(weighted, grad_position=0)  # (t, d) -> the backward kernel's dx for upstream d

    def backward_dot_v(t, d):
        return (backward(t, d) * ms.Tensor(v)).sum()

    fn = ms.grad(backward_dot_v, grad_position=(0, 1))
    dx2, ddy = (ms.jit(fn) if mode == "graph" else fn)(ms.Tensor(x), ms.Tensor(dy))
    np.testing.assert_array_equal(ddy.asnumpy(), ref.backward(x, v, 0.2, clamp))
    np.testing.assert_array_equal(dx2.asnumpy(), np.zeros_like(x))
