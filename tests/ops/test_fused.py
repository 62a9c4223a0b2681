"""Fused BatchNorm/bias + LeakyReLU + clamp: numpy reference, unfused MindSpore layers, checkpoints, errors.

Tolerances (outputs are O(1); sums over m values per channel):
- vs the float64 reference: float32 forward and dx atol 2e-5 (about 100 ulp at 1.0, the float32 kernel
  math); float16 forward and dx within 2 float16 ulp (rtol 2e-3, atol 2e-3); dgamma, dbeta rtol 1e-4
  (float32 data) / 2e-3 (float16 data, whose inputs are already rounded), atol 1e-4 * sqrt(m).
- vs nn.BatchNorm2d + ops.LeakyReLU (the fusion=none layers): the same, widened to rtol 1e-2 for float16
  dgamma/dbeta (MindSpore's float16 BatchNorm rounds its own intermediates); moving statistics rtol 1e-5.
"""
import math
from collections import OrderedDict

import mindspore as ms
import numpy as np
import pytest
from leaky_relu_cases import BF16
from mindspore import nn

from ops import LeakyReLU
from ops import reference as ref
from ops.fused import BatchNormAct, SyncBatchNorm2d, bias_act, fused_bn_act, norm_act_layers

SHAPES = [(3, 5, 7, 3), (2, 3, 1, 1), (1, 4, 9, 5), (4, 7)]
DTYPES = [np.float32, np.float16]


def tol(dtype) -> dict:
    return {"rtol": 2e-3, "atol": 2e-3} if dtype == np.float16 else {"rtol": 0.0, "atol": 2e-5}


def sums_tol(dtype, m: int) -> dict:
    return {"rtol": 2e-3 if dtype == np.float16 else 1e-4, "atol": 1e-4 * math.sqrt(m)}


def data(shape, dtype, seed=0):
    """x with a non-zero mean per channel, gamma and beta near (1, 0), and an upstream gradient."""
    rng = np.random.default_rng(seed)
    c = shape[1]
    x = (rng.standard_normal(shape) * 2 + rng.normal(3, 1, (1, c) + (1,) * (len(shape) - 2))).astype(dtype)
    gamma = rng.normal(1, 0.3, c).astype(np.float32)
    beta = rng.normal(0, 0.3, c).astype(np.float32)
    dy = rng.standard_normal(shape).astype(dtype)
    return x, gamma, beta, dy


def moving(c: int, stats=None) -> tuple[ms.Parameter, ms.Parameter]:
    """Moving mean and variance Parameters: the given stats, else BatchNorm's initial zeros and ones."""
    mean, var = stats if stats is not None else (np.zeros(c, np.float32), np.ones(c, np.float32))
    return ms.Parameter(ms.Tensor(mean), name="mm"), ms.Parameter(ms.Tensor(var), name="mv")


def run_fused(x, gamma, beta, dy, slope, stats=None, **kw):
    """(y, dx, dgamma, dbeta) of fused_bn_act as the vjp with dy; training (batch statistics) unless stats."""
    mm, mv = moving(x.shape[1], stats)

    def f(t, g, b):
        return fused_bn_act(t, mm, mv, g, b, slope, training=stats is None, **kw)
    y, vjp = ms.vjp(f, ms.Tensor(x), ms.Tensor(gamma), ms.Tensor(beta))
    return (y.asnumpy(), *(g.asnumpy() for g in vjp(ms.Tensor(dy))))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("training", [True, False])
def test_matches_reference_forward_and_backward(shape, dtype, training):
    x, gamma, beta, dy = data(shape, dtype)
    m = x.size // shape[1]
    stats = None if training else (np.linspace(2.0, 4.0, shape[1]).astype(np.float32),
                                   np.linspace(0.5, 5.0, shape[1]).astype(np.float32))
    y, dx, dgamma, dbeta = run_fused(x, gamma, beta, dy, 0.2, stats=stats)
    y_ref, mean_ref, var_ref = ref.bn_act_forward(x, gamma, beta, 0.2, stats=stats)
    dx_ref, dgamma_ref, dbeta_ref = ref.bn_act_backward(x, dy, gamma, beta, 0.2, stats=stats)
    assert y.dtype == dtype and dx.dtype == dtype
    np.testing.assert_allclose(y.astype(np.float64), y_ref.astype(np.float64), **tol(dtype))
    np.testing.assert_allclose(dx.astype(np.float64), dx_ref.astype(np.float64), **tol(dtype))
    np.testing.assert_allclose(dgamma, dgamma_ref, **sums_tol(dtype, m))
    np.testing.assert_allclose(dbeta, dbeta_ref, **sums_tol(dtype, m))


@pytest.mark.parametrize("dtype", DTYPES)
def test_gain_and_clamp_match_reference(dtype):
    x, gamma, beta, dy = data((3, 4, 5, 5), dtype, seed=1)
    y, dx, dgamma, dbeta = run_fused(x, gamma, beta, dy, 0.1, gain=math.sqrt(2), clamp=1.0)
    y_ref, _, _ = ref.bn_act_forward(x, gamma, beta, 0.1, gain=math.sqrt(2), clamp=1.0)
    dx_ref, dgamma_ref, dbeta_ref = ref.bn_act_backward(x, dy, gamma, beta, 0.1, gain=math.sqrt(2), clamp=1.0)
    assert (np.abs(y_ref) == 1.0).mean() > 0.1  # the clamp is active on a good share of the elements
    np.testing.assert_allclose(y.astype(np.float64), y_ref.astype(np.float64), **tol(dtype))
    np.testing.assert_allclose(dx.astype(np.float64), dx_ref.astype(np.float64), **tol(dtype))
    np.testing.assert_allclose(dgamma, dgamma_ref, **sums_tol(dtype, 75))
    np.testing.assert_allclose(dbeta, dbeta_ref, **sums_tol(dtype, 75))


@pytest.mark.parametrize("layout, channels", [("NCHW", 3), ("NHWC", 24)])
def test_large_mean_does_not_lose_the_variance(layout, channels):
    # Shifted sums in the statistics kernel: mean 1e4, std 1e-1 would lose all digits in E[x^2] - E[x]^2.
    # momentum 0 makes the moving statistics the batch mean and the unbiased batch variance.
    x, gamma, beta, _ = data((4, channels, 8, 8), np.float32, seed=2)
    x = (1e4 + x / 20).astype(np.float32)
    mm, mv = moving(channels)
    fused_bn_act(ms.Tensor(to_nhwc(x) if layout == "NHWC" else x), mm, mv, ms.Tensor(gamma), ms.Tensor(beta), 0.2,
                 training=True, momentum=0.0, layout=layout)
    _, mean_ref, var_ref = ref.bn_act_forward(x, gamma, beta, 0.2)
    np.testing.assert_allclose(mm.asnumpy(), mean_ref, rtol=1e-7)
    np.testing.assert_allclose(mv.asnumpy(), var_ref * 256 / 255, rtol=1e-4)


@pytest.mark.parametrize("layout, shape", [("NCHW", (2, 16, 80, 80)), ("NHWC", (2, 40, 50, 50))])
def test_many_tiles_and_threads_give_identical_results(monkeypatch, layout, shape):
    # Both sizes span several tiles of the plan (with 40 channels last, tiles start and end inside a position);
    # the per-channel sums are added in tile order, so the result does not depend on the thread count, bit for bit.
    x, gamma, beta, dy = data(shape, np.float32, seed=3)
    results = []
    for threads in ("1", "3"):
        monkeypatch.setenv("LRELU_NUM_THREADS", threads)
        results.append((run_nhwc if layout == "NHWC" else run_fused)(x, gamma, beta, dy, 0.2))
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)
    dx_ref, dgamma_ref, dbeta_ref = ref.bn_act_backward(x, dy, gamma, beta, 0.2)
    m = x.size // shape[1]
    np.testing.assert_allclose(results[0][1], dx_ref, atol=2e-5)
    np.testing.assert_allclose(results[0][2], dgamma_ref, **sums_tol(np.float32, m))
    np.testing.assert_allclose(results[0][3], dbeta_ref, **sums_tol(np.float32, m))


def test_nan_propagates_through_the_clamp_in_eval():
    x = np.array([[[[np.nan, 100.0, -100.0, 0.5]]]], np.float32)
    one = ms.Tensor(np.ones(1, np.float32))
    zero = ms.Tensor(np.zeros(1, np.float32))
    y = fused_bn_act(ms.Tensor(x), zero, one - 1e-5, one, zero, 0.2, training=False, clamp=4.0).asnumpy()
    assert np.isnan(y[0, 0, 0, 0])
    np.testing.assert_allclose(y[0, 0, 0, 1:], [4.0, -4.0, 0.5], rtol=1e-6)


@pytest.mark.parametrize("dtype", DTYPES)
def test_bias_act_matches_reference(dtype):
    x, _, bias, dy = data((2, 5, 3, 7), dtype, seed=4)
    y, vjp = ms.vjp(lambda t, b: bias_act(t, b, 0.2, clamp=2.0), ms.Tensor(x), ms.Tensor(bias))
    dx, dbias = (g.asnumpy() for g in vjp(ms.Tensor(dy)))
    ones, zeros = np.ones(5, np.float32), np.zeros(5, np.float32)
    stats = (zeros, ones - 1e-5)  # (x - 0) / sqrt(1 - eps + eps) = x
    y_ref, _, _ = ref.bn_act_forward(x, ones, bias, 0.2, stats=stats, clamp=2.0)
    dx_ref, _, dbias_ref = ref.bn_act_backward(x, dy, ones, bias, 0.2, stats=stats, clamp=2.0)
    np.testing.assert_allclose(y.asnumpy().astype(np.float64), y_ref.astype(np.float64), **tol(dtype))
    np.testing.assert_allclose(dx.astype(np.float64), dx_ref.astype(np.float64), **tol(dtype))
    np.testing.assert_allclose(dbias, dbias_ref, **sums_tol(dtype, 42))


class Block(nn.Cell):
    """The norm + act layers of one DCGAN block, fused or not, named as gan.models.networks names them."""

    def __init__(self, fused: bool, channels: int, slope: float = 0.2, clamp: float | None = None,
                 sync: bool = False) -> None:
        super().__init__()
        self.layers = nn.SequentialCell(OrderedDict(norm_act_layers(channels, slope, fused=fused, clamp=clamp,
                                                                    sync=sync)))

    @property
    def bn(self) -> nn.BatchNorm2d:
        return self.layers.name_cells()["bn"]

    def construct(self, x):
        return self.layers(x)


def same_affine(cells, channels, seed=0):
    """Give every block's BatchNorm the same random gamma and beta; return the blocks."""
    rng = np.random.default_rng(seed)
    gamma, beta = rng.normal(1, 0.3, channels).astype(np.float32), rng.normal(0, 0.3, channels).astype(np.float32)
    for cell in cells:
        cell.bn.gamma.set_data(ms.Tensor(gamma))
        cell.bn.beta.set_data(ms.Tensor(beta))
    return cells


def pair(channels, slope=0.2, clamp=None, seed=0):
    """A fused (fusion=bn_act) and an unfused (fusion=none) block with the same gamma and beta."""
    return same_affine((Block(True, channels, slope, clamp), Block(False, channels, slope, clamp)), channels, seed)


def one_rank_sum(t):
    """The cross-rank sum of a job of one rank: what AllReduce returns there."""
    return t


def train_steps(cell: nn.Cell, xs, dy):
    """Two training steps' outputs and (dx, dgamma, dbeta) with upstream dy, then the eval output."""
    cell.set_train(True)
    grad = ms.grad(lambda t: (cell(t).astype(ms.float32) * ms.Tensor(dy).astype(ms.float32)).sum(),
                   grad_position=0, weights=cell.trainable_params())
    outs = []
    for x in xs:
        y = cell(ms.Tensor(x)).asnumpy()
        dx, (dgamma, dbeta) = grad(ms.Tensor(x))
        outs.append((y, dx.asnumpy(), dgamma.asnumpy(), dbeta.asnumpy()))
    cell.set_train(False)
    return outs, cell(ms.Tensor(xs[0])).asnumpy()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 5, 7, 3), (2, 6, 4, 4)])
def test_matches_unfused_batchnorm_and_leaky_relu(shape, dtype):
    fused, unfused = pair(shape[1], clamp=2.5)
    xs = [data(shape, dtype, seed=s)[0] for s in (5, 6)]
    dy = data(shape, dtype, seed=7)[3]
    m = xs[0].size // shape[1]
    got, got_eval = train_steps(fused, xs, dy)
    want, want_eval = train_steps(unfused, xs, dy)
    for g, w in zip(got, want):
        for a, b in zip(g[:2], w[:2]):  # y, dx
            np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), **tol(dtype))
        for a, b in zip(g[2:], w[2:]):  # dgamma, dbeta
            np.testing.assert_allclose(a, b, rtol=1e-2 if dtype == np.float16 else 1e-4, atol=1e-4 * math.sqrt(m))
    np.testing.assert_allclose(got_eval.astype(np.float64), want_eval.astype(np.float64), **tol(dtype))
    for name in ("moving_mean", "moving_variance"):
        np.testing.assert_allclose(getattr(fused.bn, name).asnumpy(), getattr(unfused.bn, name).asnumpy(), rtol=1e-5)
    # Six batch updates (two forward calls and two grad calls each, see train_steps) moved the statistics.
    assert not np.allclose(fused.bn.moving_variance.asnumpy(), 1.0)


@pytest.mark.slow
@pytest.mark.parametrize("fused", [False, True])
def test_synchronised_batchnorm_of_one_rank_is_batchnorm(fused):
    """The sync path (statistics as differentiable sums, the kernel with statistics as inputs and their
    gradients in its bprop) on one rank equals per-batch BatchNorm + LeakyReLU: outputs, dx, dgamma, dbeta,
    moving statistics. (Two ranks: tests/gan/test_distributed.py.)"""
    synced, plain = same_affine((Block(fused, 6, clamp=2.5, sync=True), Block(False, 6, clamp=2.5)), 6)
    assert type(synced.bn) is (BatchNormAct if fused else SyncBatchNorm2d)
    synced.bn.sum_across = one_rank_sum  # instead of the AllReduce, which needs an msrun job
    shape = (3, 6, 5, 4)
    xs = [data(shape, np.float32, seed=s)[0] for s in (5, 6)]
    dy = data(shape, np.float32, seed=7)[3]
    got, got_eval = train_steps(synced, xs, dy)
    want, want_eval = train_steps(plain, xs, dy)
    for g, w in zip(got, want):
        for a, b in zip(g[:2], w[:2]):  # y, dx
            np.testing.assert_allclose(a, b, **tol(np.float32))
        for a, b in zip(g[2:], w[2:]):  # dgamma, dbeta
            np.testing.assert_allclose(a, b, **sums_tol(np.float32, 60))
    np.testing.assert_allclose(got_eval, want_eval, **tol(np.float32))
    for name in ("moving_mean", "moving_variance"):
        np.testing.assert_allclose(getattr(synced.bn, name).asnumpy(), getattr(plain.bn, name).asnumpy(), rtol=1e-5)


@pytest.mark.parametrize("source, target", [(False, True), (True, False)])
def test_checkpoint_moves_between_fused_and_unfused(tmp_path, source, target):
    x = data((4, 3, 5, 5), np.float32, seed=8)[0]
    src = Block(source, 3)
    src.set_train(True)
    src(ms.Tensor(x))  # moves the moving statistics away from their initial values
    src.bn.gamma.set_data(ms.Tensor(np.float32([0.5, 1.5, 2.0])))
    path = str(tmp_path / "block.ckpt")
    ms.save_checkpoint(src, path)
    dst = Block(target, 3)
    not_loaded, unexpected = ms.load_param_into_net(dst, ms.load_checkpoint(path), strict_load=True)
    assert not not_loaded and not unexpected
    assert sorted(p.name for p in dst.get_parameters()) == sorted(p.name for p in src.get_parameters()) == [
        "layers.bn.beta", "layers.bn.gamma", "layers.bn.moving_mean", "layers.bn.moving_variance"]
    src.set_train(False)
    dst.set_train(False)
    np.testing.assert_allclose(dst(ms.Tensor(x)).asnumpy(), src(ms.Tensor(x)).asnumpy(), atol=2e-5)


def test_graph_mode_training_step_updates_parameters_and_statistics():
    fused, unfused = pair(4, seed=9)
    x = data((3, 4, 6, 6), np.float32, seed=10)[0]
    results = []
    for cell in (fused, unfused):
        cell.set_train(True)
        opt = nn.SGD(cell.trainable_params(), learning_rate=0.1)
        step = nn.TrainOneStepCell(nn.WithLossCell(cell, nn.MSELoss()), opt)
        step.set_train(True)
        ms.jit(step.construct)(ms.Tensor(x), ms.Tensor(np.zeros_like(x)))
        bn = cell.bn
        results.append([p.asnumpy() for p in (bn.gamma, bn.beta, bn.moving_mean, bn.moving_variance)])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert not np.allclose(results[0][0], np.random.default_rng(9).normal(1, 0.3, 4))  # gamma moved


def test_norm_act_layers_select_the_implementation():
    (fused,) = norm_act_layers(8, 0.2, fused=True, clamp=256.0).values()
    assert type(fused) is BatchNormAct and fused.clamp == 256.0
    layers = norm_act_layers(8, 0.2, clamp=256.0)
    assert list(layers) == ["bn", "act"] and type(layers["bn"]) is nn.BatchNorm2d
    assert type(layers["act"]) is LeakyReLU and layers["act"].clamp == 256.0
    for fused in (False, True):
        (act,) = norm_act_layers(None, 0.1, fused=fused).values()
        assert type(act) is LeakyReLU and act.negative_slope == 0.1


@pytest.mark.parametrize("call, error, message", [
    (lambda: norm_act_layers(4, 0.2, fused=True, act=nn.ReLU()), ValueError,
     "fused=True fuses BatchNorm with LeakyReLU or PReLU only, got ReLU"),
    (lambda: BatchNormAct(4, 1.5), ValueError, "negative_slope=1.5 is not allowed"),
    (lambda: BatchNormAct(4, 0.2, gain=0.0), ValueError, "gain=0.0 is not allowed"),
    (lambda: BatchNormAct(4, 0.2, clamp=-1.0), ValueError, "clamp=-1.0 is not allowed"),
])
def test_bad_arguments_name_the_value(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_bad_inputs_name_the_problem():
    g = ms.Tensor(np.ones(3, np.float32))
    mm, mv = moving(3)
    with pytest.raises(TypeError, match="float32 and float16 inputs, got dtype Float64"):
        fused_bn_act(ms.Tensor(np.ones((2, 3, 2, 2))), mm, mv, g, g, 0.2, training=True)
    with pytest.raises(ValueError, match=r"shape \(N, 3, ...\).*got shape \(2, 4, 2, 2\)"):
        fused_bn_act(ms.Tensor(np.ones((2, 4, 2, 2), np.float32)), mm, mv, g, g, 0.2, training=False)
    with pytest.raises(ValueError, match=r"more than one value per channel, got input shape \(1, 3, 1, 1\)"):
        fused_bn_act(ms.Tensor(np.ones((1, 3, 1, 1), np.float32)), mm, mv, g, g, 0.2, training=True)
    with pytest.raises(ValueError, match="momentum=1.5 must be in"):
        fused_bn_act(ms.Tensor(np.ones((2, 3, 2, 2), np.float32)), mm, mv, g, g, 0.2, training=True, momentum=1.5)


# ---- layout="NHWC": the channels last. The kernels run across the channels of a position in V-wide lanes, so
# the element-wise results are the same bits as NCHW's on the same values; only the per-channel sums add in
# another order. ----

def to_nhwc(a: np.ndarray) -> np.ndarray:
    """(N, C, *spatial) -> (N, *spatial, C)."""
    return np.ascontiguousarray(np.moveaxis(a, 1, -1))


def to_nchw(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.moveaxis(a, -1, 1))


def run_nhwc(x, gamma, beta, dy, slope, stats=None, **kw):
    """run_fused with layout="NHWC" on the NCHW arrays moved channels-last; the results moved back to NCHW."""
    y, dx, dgamma, dbeta = run_fused_layout(to_nhwc(x), gamma, beta, to_nhwc(dy), slope, stats, x.shape[1], **kw)
    return to_nchw(y), to_nchw(dx), dgamma, dbeta


def run_fused_layout(x, gamma, beta, dy, slope, stats, channels, **kw):
    mm, mv = moving(channels, stats)

    def f(t, g, b):
        return fused_bn_act(t, mm, mv, g, b, slope, training=stats is None, layout="NHWC", **kw)
    y, vjp = ms.vjp(f, ms.Tensor(x), ms.Tensor(gamma), ms.Tensor(beta))
    return (y.asnumpy(), *(g.asnumpy() for g in vjp(ms.Tensor(dy))))


def eval_stats(c: int) -> tuple[np.ndarray, np.ndarray]:
    return np.linspace(2.0, 4.0, c).astype(np.float32), np.linspace(0.5, 5.0, c).astype(np.float32)


# Channel counts that take 16-lane, 8-lane and single-float groups (3, 5, 17, 40) and whole vectors (8, 16, 64).
NHWC_SHAPES = [(3, 5, 7, 3), (2, 3, 1, 1), (4, 17, 3, 5), (2, 40, 6, 6), (2, 64, 4, 4), (3, 8, 5, 2), (6, 16)]


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16])
@pytest.mark.parametrize("shape", NHWC_SHAPES)
def test_nhwc_eval_is_nchw_bit_for_bit(shape, dtype):
    # With given statistics y and dx are element-wise: the same bits in both layouts; dgamma, dbeta are sums.
    x, gamma, beta, dy = data(shape, dtype)
    stats = eval_stats(shape[1])
    want = run_fused(x, gamma, beta, dy, 0.2, stats=stats, clamp=2.5, gain=1.5)
    got = run_nhwc(x, gamma, beta, dy, 0.2, stats=stats, clamp=2.5, gain=1.5)
    for a, b in zip(got[:2], want[:2]):
        np.testing.assert_array_equal(a.view(np.uint16 if a.itemsize == 2 else np.uint32),
                                      b.view(np.uint16 if b.itemsize == 2 else np.uint32))
    for a, b in zip(got[2:], want[2:]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", NHWC_SHAPES)
def test_nhwc_training_matches_reference(shape, dtype):
    x, gamma, beta, dy = data(shape, dtype)
    m = x.size // shape[1]
    mm, mv = moving(shape[1])
    y, dx, dgamma, dbeta = run_nhwc(x, gamma, beta, dy, 0.2)
    y_ref, mean_ref, var_ref = ref.bn_act_forward(x, gamma, beta, 0.2)
    dx_ref, dgamma_ref, dbeta_ref = ref.bn_act_backward(x, dy, gamma, beta, 0.2)
    np.testing.assert_allclose(y.astype(np.float64), y_ref.astype(np.float64), **tol(dtype))
    np.testing.assert_allclose(dx.astype(np.float64), dx_ref.astype(np.float64), **tol(dtype))
    np.testing.assert_allclose(dgamma, dgamma_ref, **sums_tol(dtype, m))
    np.testing.assert_allclose(dbeta, dbeta_ref, **sums_tol(dtype, m))
    fused_bn_act(ms.Tensor(to_nhwc(x)), mm, mv, ms.Tensor(gamma), ms.Tensor(beta), 0.2, training=True,
                 momentum=0.0, layout="NHWC")
    np.testing.assert_allclose(mm.asnumpy(), mean_ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(mv.asnumpy(), var_ref * m / (m - 1), rtol=1e-4)


@pytest.mark.parametrize("channels", [1, 40])
def test_nhwc_prelu_and_bias_act_are_nchw_bit_for_bit(channels):
    x, _, bias, dy = data((2, 40, 3, 7), np.float32, seed=4)
    w = np.linspace(-0.3, 0.6, channels).astype(np.float32)

    def both(layout, x_, dy_):
        y, pull = ms.vjp(lambda t, b, a: bias_act(t, b, 0.0, clamp=2.0, weight=a, layout=layout),
                         ms.Tensor(x_), ms.Tensor(bias), ms.Tensor(w))
        return [y.asnumpy(), *(g.asnumpy() for g in pull(ms.Tensor(dy_)))]
    want = both("NCHW", x, dy)
    y, dx, dbias, dw = both("NHWC", to_nhwc(x), to_nhwc(dy))
    np.testing.assert_array_equal(to_nchw(y), want[0])
    np.testing.assert_array_equal(to_nchw(dx), want[1])
    np.testing.assert_allclose(dbias, want[2], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dw, want[3], rtol=1e-5, atol=1e-5)


def test_batchnorm_act_nhwc_trains_like_nchw_in_graph_mode():
    # One compiled SGD step of BatchNormAct on the same values in both layouts: the same parameters and moving
    # statistics after it.
    x = data((4, 24, 5, 5), np.float32, seed=8)[0]
    results = []
    for layout, move in (("NCHW", lambda a: a), ("NHWC", to_nhwc)):
        cell = BatchNormAct(24, 0.2, clamp=3.0, layout=layout)
        cell.set_train(True)
        step = nn.TrainOneStepCell(nn.WithLossCell(cell, nn.MSELoss()), nn.SGD(cell.trainable_params(), 0.1))
        step.set_train(True)
        ms.jit(step.construct)(ms.Tensor(move(x)), ms.Tensor(np.full_like(move(x), 0.5)))
        results.append([p.asnumpy() for p in (cell.gamma, cell.beta, cell.moving_mean, cell.moving_variance)])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert not np.allclose(results[1][0], 1.0)  # gamma moved
    assert "layout=NHWC" in repr(cell)


def test_nhwc_bad_layout_and_shape_name_the_problem():
    g = ms.Tensor(np.ones(3, np.float32))
    mm, mv = moving(3)
    with pytest.raises(ValueError, match=r"layout='NDHWC' is not one of \('NCHW', 'NHWC'\)"):
        BatchNormAct(3, 0.2, layout="NDHWC")
    with pytest.raises(ValueError, match=r"layout='NHWC' expects an input of shape \(N, ..., 3\) with the "
                                         r"channels last, got shape \(2, 3, 2, 4\)"):
        fused_bn_act(ms.Tensor(np.ones((2, 3, 2, 4), np.float32)), mm, mv, g, g, 0.2, training=False,
                     layout="NHWC")
