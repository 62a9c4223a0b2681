"""Fused per-channel affine (BatchNorm or bias) + LeakyReLU + gain + clamp: one kernel pass each way.

`fused_bn_act` and `bias_act` run the C++ kernels of ops/csrc/cpu/bn_act.cc through the same
`ops.Custom(func_type="aot")` route, build and tiling plan as the LeakyReLU op. `BatchNormAct` is a drop-in
for `nn.BatchNorm2d` followed by `ops.LeakyReLU`: it subclasses `nn.BatchNorm2d`, so its parameters
(gamma, beta, moving_mean, moving_variance), their initialisation and checkpoint names are identical
by construction. `make_norm_act` is the block factory behind the `fusion=` switch; the exact semantics
are specified by `ops.reference.bn_act_forward` / `bn_act_backward`.
"""
from __future__ import annotations

import functools
import math
from numbers import Real

import mindspore as ms
import numpy as np
from mindspore import nn
from mindspore import ops as msops
from mindspore.ops import constexpr

from . import build
from .api import FLOAT_DTYPES, LeakyReLU, check_clamp, check_negative_slope, num_threads

FUSION_KINDS = ("none", "bn_act")
GRAPH_KERNEL_DEVICES = ("GPU", "Ascend")


def check_gain(gain: float) -> float:
    """The gain as float; ValueError unless it is a finite number > 0."""
    if isinstance(gain, bool) or not isinstance(gain, Real) or not math.isfinite(gain) or not gain > 0:
        raise ValueError(f"gain={gain!r} is not allowed: it must be a finite number > 0")
    return float(gain)


def check_fusion_kind(kind: str) -> str:
    """The kind unchanged; ValueError naming it unless it is one of FUSION_KINDS."""
    if kind not in FUSION_KINDS:
        raise ValueError(f"fusion={kind!r} is not one of {FUSION_KINDS} (graph_kernel is a compiler setting, "
                         f"see check_graph_kernel_supported)")
    return kind


def check_graph_kernel_supported(device_target: str) -> None:
    """RuntimeError unless MindSpore's graph-kernel fusion (jit level O1) is supported on device_target.

    Measured with MindSpore 2.10 on CPU: `enable_graph_kernel=True` is accepted (with a deprecation
    warning) and only fuses the elementwise tail (LeakyReLU as Mul+Maximum), never BatchNorm;
    `jit_config={"jit_level": "O1"}` compiles no fused kernel at all. Fusion of BatchNorm needs GPU or Ascend.
    """
    if device_target not in GRAPH_KERNEL_DEVICES:
        raise RuntimeError(f"fusion=graph_kernel is not supported on device_target={device_target!r}: "
                           f"MindSpore's graph-kernel fusion (jit_level O1) fuses BatchNorm only on "
                           f"{' and '.join(GRAPH_KERNEL_DEVICES)}; on CPU use fusion=bn_act")


def _stats_shape(x, _scalars):
    """BnActStats output shape: (2, C)."""
    return [2, x[1]]


def _float32(*_):
    """Custom out_dtype: float32 statistics."""
    return ms.float32


def _same(x, *_):
    """Custom out_shape/out_dtype: shaped and typed like the first input."""
    return x


def _grad_shapes(x, _dy, chan, _scalars):
    """BnActBackward outputs: dx like x, dchan like chan."""
    return x, chan


@functools.lru_cache(maxsize=None)
def kernel(negative_slope: float, clamp: float | None, gain: float, batch_stats: bool,
           threads: int) -> tuple[msops.Custom, msops.Custom, ms.Tensor]:
    """(forward primitive with its bprop, statistics primitive, scalars tensor), cached per configuration.

    Scalars travel as a float32[5] tensor input (not attributes: MindSpore keeps the attribute values of
    the first registration of a Custom op name). One primitive serves float32 and float16.
    """
    lib = build.library_path()
    scalars = ms.Tensor(np.array([negative_slope, math.inf if clamp is None else clamp, gain, threads,
                                  float(batch_stats)], np.float32))
    grad = msops.Custom(f"{lib}:BnActBackward", out_shape=_grad_shapes, out_dtype=_grad_shapes, func_type="aot")

    def bprop(x, chan, params, out, dout):
        dx, dchan = grad(x, dout, chan, params)
        return dx, dchan, msops.zeros_like(params)

    forward = msops.Custom(f"{lib}:BnActForward", out_shape=_same, out_dtype=_same, func_type="aot", bprop=bprop)
    stats = msops.Custom(f"{lib}:BnActStats", out_shape=_stats_shape, out_dtype=_float32, func_type="aot")
    return forward, stats, scalars


@constexpr
def _check_input(dtype: ms.Type, shape: tuple, channels: int, batch_stats: bool) -> None:
    """TypeError/ValueError naming the bad dtype or shape (runs at compile time under ms.jit)."""
    if dtype not in FLOAT_DTYPES:
        raise TypeError(f"fused_bn_act supports float32 and float16 inputs, got dtype {dtype}")
    if len(shape) < 2 or shape[1] != channels:
        raise ValueError(f"fused_bn_act expects an input of shape (N, {channels}, ...) with the channels on "
                         f"axis 1, got shape {shape}")
    per_channel = math.prod(shape) // channels if channels else 0
    if batch_stats and per_channel < 2:
        raise ValueError(f"batch statistics need more than one value per channel, got input shape {shape}")


@constexpr
def _resolve(negative_slope: float, clamp: float | None, gain: float,
             batch_stats: bool) -> tuple[msops.Custom, msops.Custom, ms.Tensor]:
    """Checked arguments -> cached kernels; constexpr so it also runs inside ms.jit."""
    return kernel(check_negative_slope(negative_slope), check_clamp(clamp), check_gain(gain), batch_stats,
                  num_threads())


def fused_bn_act(x: ms.Tensor, gamma: ms.Tensor, beta: ms.Tensor, negative_slope: float, *,
                 stats: tuple[ms.Tensor, ms.Tensor] | None = None, eps: float = 1e-5, gain: float = 1.0,
                 clamp: float | None = None) -> tuple[ms.Tensor, ms.Tensor, ms.Tensor]:
    """clamp(gain * leaky_relu(BatchNorm(x))) -> (y, mean, biased variance) of the statistics used.

    stats=None normalises with the batch statistics of x (training; the backward includes their
    dependence on x); stats=(mean, variance) uses those as constants (eval, the moving statistics).
    x is (N, C, ...) float32 or float16; gamma, beta and the statistics are float32 of length C.
    """
    batch_stats = stats is None
    _check_input(x.dtype, x.shape, gamma.shape[0], batch_stats)
    forward, stats_op, scalars = _resolve(negative_slope, clamp, gain, batch_stats)
    if batch_stats:
        mean, var = msops.unstack(msops.stop_gradient(stats_op(x, scalars)))
    else:
        mean, var = msops.stop_gradient(stats[0]), msops.stop_gradient(stats[1])
    rstd = msops.rsqrt(var + eps)
    chan = msops.concat([gamma.astype(ms.float32), beta.astype(ms.float32), mean, rstd]).reshape(4, -1)
    return forward(x, chan, scalars), mean, var


def bias_act(x: ms.Tensor, bias: ms.Tensor, negative_slope: float, *, gain: float = 1.0,
             clamp: float | None = None) -> ms.Tensor:
    """clamp(gain * leaky_relu(x + bias[channel])) in one pass; x is (N, C, ...), bias float32 (C,)."""
    _check_input(x.dtype, x.shape, bias.shape[0], False)
    forward, _, scalars = _resolve(negative_slope, clamp, gain, False)
    ones = msops.ones_like(bias).astype(ms.float32)
    chan = msops.concat([ones, bias.astype(ms.float32), msops.zeros_like(ones), ones]).reshape(4, -1)
    return forward(x, chan, scalars)


class BatchNormAct(nn.BatchNorm2d):
    """nn.BatchNorm2d + LeakyReLU (+ gain, clamp) as one fused op; same parameters and checkpoint names.

    Training: batch mean and biased variance normalise x; the moving statistics are updated like
    nn.BatchNorm2d's (moving = momentum * moving + (1 - momentum) * batch, with the unbiased batch
    variance). set_train(False) normalises with the moving statistics.
    """

    def __init__(self, num_features: int, negative_slope: float, *, clamp: float | None = None,
                 gain: float = 1.0, eps: float = 1e-5, momentum: float = 0.9) -> None:
        super().__init__(num_features, eps=eps, momentum=momentum)
        self.negative_slope = check_negative_slope(negative_slope)
        self.clamp = check_clamp(clamp)
        self.gain = check_gain(gain)
        self.keep = float(momentum)  # nn.BatchNorm2d stores 1 - momentum as self.momentum

    def construct(self, x: ms.Tensor) -> ms.Tensor:
        if self.training:
            y, mean, var = fused_bn_act(x, self.gamma, self.beta, self.negative_slope, eps=self.eps,
                                        gain=self.gain, clamp=self.clamp)
            m = x.size // x.shape[1]
            msops.assign(self.moving_mean, self.keep * self.moving_mean + (1.0 - self.keep) * mean)
            msops.assign(self.moving_variance,
                         self.keep * self.moving_variance + (1.0 - self.keep) * var * (m / (m - 1)))
            return y
        y, _, _ = fused_bn_act(x, self.gamma, self.beta, self.negative_slope,
                               stats=(self.moving_mean, self.moving_variance), eps=self.eps, gain=self.gain,
                               clamp=self.clamp)
        return y

    def extend_repr(self) -> str:
        return (f"{super().extend_repr()}, negative_slope={self.negative_slope}, clamp={self.clamp}, "
                f"gain={self.gain}")


class BatchNormThenAct(nn.BatchNorm2d):
    """The unfused reference block: nn.BatchNorm2d, then ops.LeakyReLU; same parameters as BatchNormAct."""

    def __init__(self, num_features: int, negative_slope: float, *, clamp: float | None = None,
                 eps: float = 1e-5, momentum: float = 0.9) -> None:
        super().__init__(num_features, eps=eps, momentum=momentum)
        self.act = LeakyReLU(negative_slope, clamp=clamp)

    def construct(self, x: ms.Tensor) -> ms.Tensor:
        return self.act(nn.BatchNorm2d.construct(self, x))


def make_norm_act(kind: str, channels: int, negative_slope: float, *, clamp: float | None = None,
                  use_bn: bool = True) -> nn.Cell:
    """The normalisation + activation of one block, selected by `fusion=` ("none" or "bn_act").

    Both kinds have the same parameter names, so checkpoints move between them. Without BatchNorm the
    block is the LeakyReLU alone for both kinds (the DCGAN's convs have no bias, nothing to fuse).
    """
    check_fusion_kind(kind)
    if not use_bn:
        return LeakyReLU(negative_slope, clamp=clamp)
    if kind == "bn_act":
        return BatchNormAct(channels, negative_slope, clamp=clamp)
    return BatchNormThenAct(channels, negative_slope, clamp=clamp)
