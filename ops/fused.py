"""Fused per-channel affine (BatchNorm or bias) + LeakyReLU + gain + clamp: one kernel pass each way.

`fused_bn_act` and `bias_act` run the C++ kernels of ops/csrc/cpu/bn_act.cc through the same
`ops.Custom(func_type="aot")` route, build and tiling plan as the LeakyReLU op. `BatchNormAct` is a drop-in
for `nn.BatchNorm2d` followed by `ops.LeakyReLU`: it subclasses `nn.BatchNorm2d`, so its parameters
(gamma, beta, moving_mean, moving_variance), their initialisation and checkpoint names are identical
by construction. `norm_act_layers` builds one block's BatchNorm and activation, fused or as two layers;
the exact semantics are specified by `ops.reference.bn_act_forward` / `bn_act_backward`.

Synchronised BatchNorm (data parallel, `sync=True`): `batch_moments` sums per-channel statistics over the
ranks with AllReduce, so every rank normalises with the statistics of the global batch. The statistics stay
ordinary differentiable ops; the AllReduce's gradient is again an AllReduce, which carries the global
statistics' dependence on every rank's input into the backward. `SyncBatchNorm2d` (fusion=none) and
`BatchNormAct(sync=True)` (fusion=bn_act, whose kernel then takes the statistics as inputs) use it.
(`nn.SyncBatchNorm` has no CPU kernel in MindSpore 2.10: "Kernel select failed".)
"""
from __future__ import annotations

import functools
import math
from numbers import Real
from typing import Callable

import mindspore as ms
import numpy as np
from mindspore import Parameter, nn
from mindspore import ops as msops
from mindspore.ops import constexpr

from . import params
from ._custom import KERNEL_DTYPES, aot, num_threads
from .activations import PReLU, check_clamp, check_finite, check_negative_slope
from .api import LeakyReLU, layout_code


def check_gain(gain: float) -> float:
    """The gain as float; ValueError unless it is a finite number > 0."""
    if isinstance(gain, bool) or not isinstance(gain, Real) or not math.isfinite(gain) or not gain > 0:
        raise ValueError(f"gain={gain!r} is not allowed: it must be a finite number > 0")
    return float(gain)


def _stats_shapes(_x, moving_mean, *_):
    """BnActStats outputs: mean, var, new moving_mean, new moving_var, each shaped like moving_mean."""
    return moving_mean, moving_mean, moving_mean, moving_mean


def _stats_dtypes(*_):
    """BnActStats outputs are float32."""
    return ms.float32, ms.float32, ms.float32, ms.float32


def _grad_outputs(x, _dy, gamma, *_):
    """BnActBackward outputs: dx like x, dgamma and dbeta like gamma."""
    return x, gamma, gamma


def _prelu_grad_outputs(x, _dy, gamma, _beta, _mean, _var, weight, _params):
    """BnPreluBackward outputs: dx like x, dgamma and dbeta like gamma, dweight like the PReLU weight."""
    return x, gamma, gamma, weight


@functools.lru_cache(maxsize=None)
def kernel(negative_slope: float, clamp: float | None, gain: float, batch_stats: bool, eps: float,
           momentum: float, threads: int, prelu: bool = False, channels_last: bool = False
           ) -> tuple[msops.Custom, msops.Custom, ms.Tensor]:
    """(forward primitive with its bprop, statistics primitive, scalars tensor), cached per configuration.

    Scalars travel as a tensor input (ops/csrc/params.h's BnActParams, packed by ops.params; not attributes,
    see ops._custom). One primitive serves float32, float16 and bfloat16. prelu=True: the forward takes a PReLU weight
    ((1,) or (C,)) after var, whose values replace the slope, and the backward returns its gradient too.
    channels_last=True: x is (N, ..., C) (NHWC), else (N, C, ...) (NCHW).
    """
    scalars = params.pack("bn_act", slope=negative_slope, clamp=math.inf if clamp is None else clamp, gain=gain,
                          threads=threads, batch_stats=float(batch_stats), eps=eps, momentum=momentum,
                          channels_last=float(channels_last))

    def stats_grads(gamma, mean, var, dgamma, dbeta):
        """Gradients for mean and var: 0 for x's own batch statistics (dx already includes their dependence
        on x); else, from z = gamma * (x - mean) / sqrt(var + eps) + beta with dbeta = sum(dz), dgamma =
        sum(dz * xhat), their own gradients (eval, bias_act, synchronised statistics)."""
        if batch_stats:
            return msops.zeros_like(mean), msops.zeros_like(var)
        g32, var32 = gamma.astype(ms.float32), var.astype(ms.float32)
        dmean = -g32 * dbeta.astype(ms.float32) / msops.sqrt(var32 + eps)
        dvar = -0.5 * g32 * dgamma.astype(ms.float32) / (var32 + eps)
        return dmean.astype(mean.dtype), dvar.astype(var.dtype)

    if prelu:
        grad = aot("BnPreluBackward", out_shape=_prelu_grad_outputs, out_dtype=_prelu_grad_outputs)

        def bprop(x, gamma, beta, mean, var, weight, params, out, dout):
            dx, dgamma, dbeta, dweight = grad(x, dout, gamma, beta, mean, var, weight, params)
            return (dx, dgamma, dbeta, *stats_grads(gamma, mean, var, dgamma, dbeta), dweight,
                    msops.zeros_like(params))

        forward = aot("BnPreluForward", bprop=bprop)
    else:
        grad = aot("BnActBackward", out_shape=_grad_outputs, out_dtype=_grad_outputs)

        def bprop(x, gamma, beta, mean, var, params, out, dout):
            dx, dgamma, dbeta = grad(x, dout, gamma, beta, mean, var, params)
            return dx, dgamma, dbeta, *stats_grads(gamma, mean, var, dgamma, dbeta), msops.zeros_like(params)

        forward = aot("BnActForward", bprop=bprop)
    stats = aot("BnActStats", out_shape=_stats_shapes, out_dtype=_stats_dtypes)
    return forward, stats, scalars


@constexpr
def _check_input(dtype: ms.Type, shape: tuple, channels: int, batch_stats: bool, layout: str) -> None:
    """TypeError/ValueError naming the bad dtype, shape or layout (runs at compile time under ms.jit)."""
    if dtype not in KERNEL_DTYPES:
        raise TypeError(f"fused_bn_act supports bfloat16 as well as float32 and float16 inputs, got dtype {dtype}")
    if len(shape) < 2 or shape[_channel_axis(layout, len(shape))] != channels:
        expected, where = ((f"(N, ..., {channels})", "last") if layout == "NHWC" else
                           (f"(N, {channels}, ...)", "on axis 1"))
        raise ValueError(f"fused_bn_act with layout={layout!r} expects an input of shape {expected} with the "
                         f"channels {where}, got shape {shape}")
    per_channel = math.prod(shape) // channels if channels else 0
    if batch_stats and per_channel < 2:
        raise ValueError(f"batch statistics need more than one value per channel, got input shape {shape}")


def _channel_axis(layout: str, ndim: int) -> int:
    """The channel axis of an ndim-d activation in `layout` (NHWC: the last one)."""
    return ndim - 1 if layout_code(layout) else 1


@constexpr
def _resolve(negative_slope: float, clamp: float | None, gain: float, batch_stats: bool, eps: float,
             momentum: float, prelu: bool = False, layout: str = "NCHW"
             ) -> tuple[msops.Custom, msops.Custom, ms.Tensor]:
    """Checked arguments -> cached kernels; constexpr so it also runs inside ms.jit."""
    if not (0.0 <= momentum <= 1.0 and eps > 0.0):
        raise ValueError(f"momentum={momentum!r} must be in [0, 1] and eps={eps!r} must be > 0")
    return kernel(check_negative_slope(negative_slope), check_clamp(clamp), check_gain(gain), batch_stats,
                  float(eps), float(momentum), num_threads(), prelu, bool(layout_code(layout)))


def batch_moments(x: ms.Tensor, sum_across: Callable[[ms.Tensor], ms.Tensor] | None = None, layout: str = "NCHW"
                  ) -> tuple[ms.Tensor, ms.Tensor, ms.Tensor]:
    """(mean, biased variance, count) per channel (axis 1, or the last axis for NHWC) of x in float32; over all
    ranks with `sum_across`.

    `sum_across` is an AllReduce (sum) for synchronised BatchNorm: every rank then gets the statistics of the
    concatenated batches; None: this batch alone. Two passes (the mean, then the centred squares) keep the
    variance exact when the mean is large. Differentiable: gradients reach x through both passes.
    """
    axis = _channel_axis(layout, x.ndim)
    axes = tuple(a for a in range(x.ndim) if a != axis)
    xf = x.astype(ms.float32)
    totals = msops.concat((xf.sum(axes), msops.full((1,), x.size // x.shape[axis], dtype=ms.float32)))
    if sum_across is not None:
        totals = sum_across(totals)
    count = totals[-1]
    mean = totals[:-1] / count
    centred = xf - mean.reshape(_channel_view(axis, x.ndim))
    squares = (centred * centred).sum(axes)
    if sum_across is not None:
        squares = sum_across(squares)
    return mean, squares / count, count


def _channel_view(axis: int, ndim: int) -> tuple[int, ...]:
    """The shape that broadcasts a (C,) tensor along the channel axis of an ndim-d activation."""
    return tuple(-1 if a == axis else 1 for a in range(ndim))


def normalise(x: ms.Tensor, mean: ms.Tensor, var: ms.Tensor, gamma: ms.Tensor, beta: ms.Tensor,
              eps: float, layout: str = "NCHW") -> ms.Tensor:
    """BatchNorm's (x - mean) / sqrt(var + eps) * gamma + beta in float32, per channel (axis 1, or last: NHWC)."""
    view = _channel_view(_channel_axis(layout, x.ndim), x.ndim)
    return ((x.astype(ms.float32) - mean.reshape(view)) / msops.sqrt(var.reshape(view) + eps) * gamma.reshape(view)
            + beta.reshape(view))


def moving_update(moving_mean: ms.Tensor, moving_variance: ms.Tensor, mean: ms.Tensor, var: ms.Tensor,
                  count: ms.Tensor, keep: float) -> tuple[ms.Tensor, ms.Tensor]:
    """New moving statistics, as nn.BatchNorm2d updates them: keep * moving + (1 - keep) * batch, with the
    unbiased batch variance; no gradient flows into them."""
    mean, var, count = msops.stop_gradient(mean), msops.stop_gradient(var), msops.stop_gradient(count)
    new_mean = keep * moving_mean + (1.0 - keep) * mean.astype(moving_mean.dtype)
    new_var = keep * moving_variance + (1.0 - keep) * (var * count / (count - 1.0)).astype(moving_variance.dtype)
    return new_mean, new_var


def _bn_act(x: ms.Tensor, moving_mean: ms.Tensor, moving_variance: ms.Tensor, gamma: ms.Tensor, beta: ms.Tensor,
            negative_slope: float, *, training: bool, momentum: float, eps: float, gain: float,
            clamp: float | None, sum_across: Callable[[ms.Tensor], ms.Tensor] | None = None,
            weight: ms.Tensor | None = None, layout: str = "NCHW"
            ) -> tuple[ms.Tensor, ms.Tensor | None, ms.Tensor | None]:
    """(y, new moving mean, new moving variance) of fused_bn_act without the update; the statistics are
    None unless training. The caller assigns them: see BatchNormAct.construct for why. With `sum_across`
    (synchronised BatchNorm) training uses batch_moments over the ranks and the kernel takes them as inputs.
    `weight`: a PReLU weight ((1,) or (C,)) in place of the slope (BatchNormPReLU). `layout`: "NCHW" or "NHWC"."""
    _check_input(x.dtype, x.shape, gamma.shape[0], training, layout)
    prelu = weight is not None
    tail = (weight,) if prelu else ()
    if training and sum_across is not None:
        forward, _, scalars = _resolve(negative_slope, clamp, gain, False, eps, momentum, prelu, layout)
        mean, var, count = batch_moments(x, sum_across, layout)
        new_mean, new_var = moving_update(moving_mean, moving_variance, mean, var, count, momentum)
        return forward(x, gamma, beta, mean, var, *tail, scalars), new_mean, new_var
    forward, stats_op, scalars = _resolve(negative_slope, clamp, gain, training, eps, momentum, prelu, layout)
    if training:
        mean, var, new_mean, new_var = stats_op(x, moving_mean, moving_variance, scalars)
        y = forward(x, gamma, beta, msops.stop_gradient(mean), msops.stop_gradient(var), *tail, scalars)
        return y, new_mean, new_var
    y = forward(x, gamma, beta, msops.stop_gradient(moving_mean), msops.stop_gradient(moving_variance), *tail,
                scalars)
    return y, None, None


def fused_bn_act(x: ms.Tensor, moving_mean: ms.Tensor, moving_variance: ms.Tensor, gamma: ms.Tensor,
                 beta: ms.Tensor, negative_slope: float, *, training: bool, momentum: float = 0.9,
                 eps: float = 1e-5, gain: float = 1.0, clamp: float | None = None, layout: str = "NCHW") -> ms.Tensor:
    """clamp(gain * leaky_relu(batch_norm(x))), like `mindspore.ops.batch_norm` followed by the activation.

    training=True normalises with the batch mean and biased variance of x (the backward includes their
    dependence on x) and updates the moving statistics (Parameters) in place:
    moving = momentum * moving + (1 - momentum) * batch, with the unbiased batch variance.
    training=False normalises with the moving statistics. x is (N, C, ...), or (N, ..., C) with layout="NHWC",
    float32, float16 or bfloat16; the per-channel tensors are float32 (or float16) of length C. Inside a float16 (amp)
    cell use BatchNormAct: amp in graph mode casts Parameters passed to a function, and the update cannot assign to
    that copy.
    """
    y, new_mean, new_var = _bn_act(x, moving_mean, moving_variance, gamma, beta, negative_slope, training=training,
                                   momentum=momentum, eps=eps, gain=gain, clamp=clamp, layout=layout)
    if training:
        msops.assign(moving_mean, new_mean)
        msops.assign(moving_variance, new_var)
    return y


def bias_act(x: ms.Tensor, bias: ms.Tensor, negative_slope: float, *, gain: float = 1.0,
             clamp: float | None = None, weight: ms.Tensor | None = None, layout: str = "NCHW") -> ms.Tensor:
    """clamp(gain * leaky_relu(x + bias[channel])) in one pass; x is (N, C, ...) (or (N, ..., C) with
    layout="NHWC"), bias float32 (C,).

    `weight`: a PReLU weight ((1,) or (C,)) in place of the slope (x + bias <= 0 gives weight[c] * (x + bias));
    its gradient comes from the same backward kernel."""
    _check_input(x.dtype, x.shape, bias.shape[0], False, layout)
    forward, _, scalars = _resolve(negative_slope, clamp, gain, False, 1e-5, 0.9, weight is not None, layout)
    ones = msops.ones_like(bias)
    tail = () if weight is None else (weight,)
    return forward(x, ones, bias, msops.zeros_like(bias), ones - 1e-5, *tail, scalars)


class SyncBatchNorm2d(nn.BatchNorm2d):
    """nn.BatchNorm2d whose training statistics are those of the global batch (all ranks, via AllReduce).

    Same parameters and checkpoint names as nn.BatchNorm2d; set_train(False) normalises with the moving
    statistics, which are updated from the global statistics, so they stay equal on every rank. Needs
    `mindspore.communication.init()`; `sum_across` is the AllReduce (a test may swap in another sum).
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.9) -> None:
        super().__init__(num_features, eps=eps, momentum=momentum)
        self.keep = float(momentum)  # nn.BatchNorm2d stores 1 - momentum as self.momentum
        self.sum_across = msops.AllReduce()

    def construct(self, x: ms.Tensor) -> ms.Tensor:
        if not self.training:
            return super().construct(x)
        mean, var, count = batch_moments(x, self.sum_across)
        new_mean, new_var = moving_update(self.moving_mean, self.moving_variance, mean, var, count, self.keep)
        msops.assign(self.moving_mean, new_mean)
        msops.assign(self.moving_variance, new_var)
        return normalise(x, mean, var, self.gamma, self.beta, self.eps).astype(x.dtype)


class BatchNormAct(nn.BatchNorm2d):
    """nn.BatchNorm2d + LeakyReLU (+ gain, clamp) as one fused op; same parameters and checkpoint names.

    Training: batch mean and biased variance normalise x; the moving statistics are updated like
    nn.BatchNorm2d's (moving = momentum * moving + (1 - momentum) * batch, with the unbiased batch
    variance). sync=True takes those statistics over the global batch of all ranks (see SyncBatchNorm2d).
    set_train(False) normalises with the moving statistics. layout="NHWC": x is (N, ..., C), the channels last.
    Mixed precision: amp O2 keeps it in
    float32 like every BatchNorm2d; under O3 the kernels take float16 x, gamma and beta, compute in float32
    and return float16 (in PyNative amp also rounds the assigned moving statistics to float16).
    """

    def __init__(self, num_features: int, negative_slope: float, *, clamp: float | None = None,
                 gain: float = 1.0, eps: float = 1e-5, momentum: float = 0.9, sync: bool = False,
                 layout: str = "NCHW") -> None:
        super().__init__(num_features, eps=eps, momentum=momentum)
        layout_code(layout)
        self.layout = layout
        self.negative_slope = check_negative_slope(negative_slope)
        self.clamp = check_clamp(clamp)
        self.gain = check_gain(gain)
        self.keep = float(momentum)  # nn.BatchNorm2d stores 1 - momentum as self.momentum
        self.sum_across = msops.AllReduce() if sync else None  # per-rank statistics without sync

    def construct(self, x: ms.Tensor) -> ms.Tensor:
        # The update is assigned here, to the attributes: under amp O3 in graph mode a Parameter handed to a
        # function arrives cast to float16, and assign() refuses that copy as its target.
        y, new_mean, new_var = _bn_act(x, self.moving_mean, self.moving_variance, self.gamma, self.beta,
                                       self.negative_slope, training=self.training, momentum=self.keep, eps=self.eps,
                                       gain=self.gain, clamp=self.clamp, sum_across=self.sum_across,
                                       layout=self.layout)
        if self.training:
            msops.assign(self.moving_mean, new_mean)
            msops.assign(self.moving_variance, new_var)
        return y

    def preactivation(self, x: ms.Tensor) -> ms.Tensor:
        """What the fused activation receives, in float32: x normalised (batch statistics in training, without
        updating the moving ones; the moving statistics in eval), times gamma plus beta. For inspection tools
        (ops.ranges), which see only the cell's input; training does not call it."""
        if self.training:
            mean, var, _ = batch_moments(x, self.sum_across, self.layout)
        else:
            mean, var = self.moving_mean, self.moving_variance
        return normalise(x, mean, var, self.gamma, self.beta, self.eps, self.layout)

    def extend_repr(self) -> str:
        return (f"{super().extend_repr()}, negative_slope={self.negative_slope}, clamp={self.clamp}, "
                f"gain={self.gain}, layout={self.layout}")


class BatchNormPReLU(BatchNormAct):
    """nn.BatchNorm2d + PReLU (+ gain, clamp) as one fused op: BatchNormAct whose slope is the learnable
    `prelu_weight` of `num_parameters` values (1 or the channels), initialised to `init`; its gradient is
    reduced per channel inside the backward kernel. BatchNorm parameter names as nn.BatchNorm2d's."""

    def __init__(self, num_features: int, num_parameters: int = 1, init: float = 0.25, *,
                 clamp: float | None = None, gain: float = 1.0, eps: float = 1e-5, momentum: float = 0.9,
                 sync: bool = False, layout: str = "NCHW") -> None:
        super().__init__(num_features, 0.0, clamp=clamp, gain=gain, eps=eps, momentum=momentum, sync=sync,
                         layout=layout)
        if num_parameters not in (1, num_features):
            raise ValueError(f"num_parameters={num_parameters!r} is not allowed: it must be 1 or num_features="
                             f"{num_features}")
        self.init = check_finite("init", init)
        self.prelu_weight = Parameter(ms.Tensor(np.full(num_parameters, self.init, np.float32)), name="prelu_weight")

    def construct(self, x: ms.Tensor) -> ms.Tensor:
        # BatchNormAct.construct with the weight; not a shared helper method: calling a method of self there
        # changed amp O3's graph-mode casting of gamma/beta (tests/ops/test_amp.py caught it).
        y, new_mean, new_var = _bn_act(x, self.moving_mean, self.moving_variance, self.gamma, self.beta, 0.0,
                                       training=self.training, momentum=self.keep, eps=self.eps, gain=self.gain,
                                       clamp=self.clamp, sum_across=self.sum_across, weight=self.prelu_weight,
                                       layout=self.layout)
        if self.training:
            msops.assign(self.moving_mean, new_mean)
            msops.assign(self.moving_variance, new_var)
        return y

    def extend_repr(self) -> str:
        return (f"{nn.BatchNorm2d.extend_repr(self)}, num_parameters={self.prelu_weight.shape[0]}, init={self.init}, "
                f"clamp={self.clamp}, gain={self.gain}, layout={self.layout}")


class SharedWeight(nn.Cell):
    """The PReLU weight of a fused BatchNorm + PReLU block, held where the unfused block keeps its PReLU
    (`act<i>.weight`), so checkpoints move between fusion kinds; passes its input through unchanged."""

    def __init__(self, weight: Parameter) -> None:
        super().__init__()
        self.weight = weight

    def construct(self, x: ms.Tensor) -> ms.Tensor:
        return x


def norm_act_layers(channels: int | None, negative_slope: float, *, fused: bool = False, clamp: float | None = None,
                    sync: bool = False, act: nn.Cell | None = None, layout: str = "NCHW") -> dict[str, nn.Cell]:
    """The normalisation + activation layers of one block, keyed "bn" / "act".

    fused=False: nn.BatchNorm2d(channels) then the activation as separate layers; fused=True: one BatchNormAct
    under the "bn" key, with the same parameter names, so checkpoints move between the two. channels=None
    (no BatchNorm): the activation alone either way. sync=True (data parallel, after
    `mindspore.communication.init()`): BatchNorm statistics over all ranks (SyncBatchNorm2d, BatchNormAct(sync)).
    `act`: the activation cell to use instead of LeakyReLU(negative_slope, clamp); fused=True fuses BatchNorm
    with a LeakyReLU (its slope and clamp) or a PReLU (BatchNormPReLU, its weight's size, init and clamp;
    a SharedWeight under "act", before "bn", holds that weight, so it keeps the unfused name act<i>.weight)
    and nothing else (ValueError). layout="NHWC" (channels last) needs fused=True or no BatchNorm: the fused cells
    take it, and an element-wise activation alone is the same in either layout; nn.BatchNorm2d is NCHW only.
    """
    layout_code(layout)
    if layout == "NHWC" and channels is not None and not fused:
        raise ValueError("layout='NHWC' needs fused=True: nn.BatchNorm2d normalises NCHW tensors only")
    layers = {"act": LeakyReLU(negative_slope, clamp=clamp) if act is None else act}
    if layout == "NHWC":
        layers["act"].layout = layout  # element-wise, so it computes the same; diagnostics read its channels last
    if channels is None:
        return layers
    if fused:
        a = layers["act"]
        if type(a) is PReLU:
            fused_layer = BatchNormPReLU(channels, a.weight.shape[0], a.init, clamp=a.clamp, sync=sync, layout=layout)
            # "act" first: a network names a shared Parameter by the first path that reaches it, act<i>.weight
            return {"act": SharedWeight(fused_layer.prelu_weight), "bn": fused_layer}
        if type(a) is not LeakyReLU:
            raise ValueError(f"fused=True fuses BatchNorm with LeakyReLU or PReLU only, got {type(a).__name__}")
        return {"bn": BatchNormAct(channels, a.negative_slope, clamp=a.clamp, sync=sync, layout=layout)}
    return {"bn": SyncBatchNorm2d(channels) if sync else nn.BatchNorm2d(channels), **layers}
