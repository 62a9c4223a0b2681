"""Public LeakyReLU API: argument checks, one cached Custom primitive per configuration, bprop wiring.

`leaky_relu(x, negative_slope)` computes `x if x > 0 else negative_slope * x` with the C++ CPU kernel
(ops/csrc/cpu/leaky_relu.cc) through `mindspore.ops.Custom(func_type="aot")`; the exact semantics are
specified in `ops.reference`. The slope has no default on purpose: PyTorch (0.01), TensorFlow (0.2),
Keras (0.3), MindSpore (0.2) and CANN (0.0) disagree.

The slope, clamp and thread count reach the kernel as a small tensor input (`pack_scalars`), not as
primitive attributes: MindSpore keeps the attribute value of the first registration of a Custom op name,
so two layers with different slopes would silently share one.
"""
from __future__ import annotations

import functools
import logging
import math
import os
from numbers import Real

import mindspore as ms
import numpy as np
from mindspore import nn
from mindspore import ops as msops
from mindspore.ops import constexpr

from . import build
from .reference import FORMULATIONS

logger = logging.getLogger("ops")

FLOAT_DTYPES = (ms.float32, ms.float16)


def check_negative_slope(negative_slope: float) -> float:
    """The slope as float; ValueError unless it is a finite real number in [0, 1]."""
    if isinstance(negative_slope, bool) or not isinstance(negative_slope, Real) \
            or not math.isfinite(negative_slope) or not 0.0 <= negative_slope <= 1.0:
        raise ValueError(f"negative_slope={negative_slope!r} is not allowed: it must be a finite number "
                         f"with 0 <= negative_slope <= 1")
    return float(negative_slope)


def check_clamp(clamp: float | None) -> float | None:
    """The clamp as float (or None); ValueError unless it is None or a number > 0."""
    if clamp is None:
        return None
    if isinstance(clamp, bool) or not isinstance(clamp, Real) or not clamp > 0:
        raise ValueError(f"clamp={clamp!r} is not allowed: it must be None or a number > 0")
    return float(clamp)


def check_options(formulation: str, inplace: bool, clamp: float | None) -> None:
    """ValueError for an unknown formulation or for inplace combined with a clamp."""
    if formulation not in FORMULATIONS:
        raise ValueError(f"formulation={formulation!r} is not one of {FORMULATIONS}")
    if inplace and clamp is not None:
        raise ValueError(f"inplace=True cannot be combined with clamp={clamp!r}: the backward of an in-place "
                         f"op sees only the output, which does not tell where the clamp cut it off")


def num_threads() -> int:
    """Kernel worker threads: $LRELU_NUM_THREADS, else MindSpore's runtime_num_threads, else all CPUs."""
    env = os.environ.get("LRELU_NUM_THREADS")
    if env is not None:
        if not env.isdigit() or int(env) < 1:
            raise ValueError(f"LRELU_NUM_THREADS={env!r} is not allowed: it must be a positive integer")
        return int(env)
    return int(ms.get_context("runtime_num_threads") or os.cpu_count() or 1)


def pack_scalars(values: tuple[float, ...]) -> ms.Tensor:
    """float32 values as an int32 tensor of their bit patterns, which the kernels read back as float32.

    Mixed precision (amp O2/O3) casts every floating-point input of an op in a float16 cell to float16,
    integer inputs never: this keeps the slope and clamp exact in fp32 under amp.
    """
    return ms.Tensor(np.array(values, np.float32).view(np.int32))


def _same(x, *_):
    """Custom out_shape/out_dtype: the output is shaped and typed like the first input."""
    return x


def device_target() -> str:
    """The device MindSpore runs on: "CPU", "GPU" or "Ascend"."""
    return ms.get_context("device_target")


@functools.lru_cache(maxsize=None)
def kernel(negative_slope: float, clamp: float | None, formulation: str, inplace: bool,
           threads: int, device: str = "CPU") -> tuple[msops.Custom | nn.Cell, ms.Tensor | None]:
    """The forward Custom primitive (with its bprop) and its scalar tensor, cached per configuration.

    On CPU one primitive serves float32 and float16 (the kernel dispatches on the dtype at run time) and
    takes the scalars tensor as its second input; in place it is an InplaceLeakyReLU cell holding its
    scalars (None is returned beside it). On Ascend it is the Ascend C op of ops/csrc/ascendc
    (untested here: no CANN), which carries slope and clamp as attributes; the scalars are None.
    """
    if device == "Ascend":
        if formulation != "select" or inplace:
            raise ValueError(f"on Ascend only formulation='select' without inplace is built, got "
                             f"formulation={formulation!r}, inplace={inplace!r}")
        from .ascend import ascend_leaky_relu_primitive
        return ascend_leaky_relu_primitive(negative_slope, clamp), None
    lib = build.library_path()
    scalars = pack_scalars((negative_slope, math.inf if clamp is None else clamp, threads))
    grad = grad_kernel(lib)
    name = "LeakyReluForwardSelect" if formulation == "select" else "LeakyReluForwardMaxMin"
    if inplace:
        token = msops.Custom(f"{lib}:{name}Inplace", out_shape=_token_shape, out_dtype=_same, func_type="aot")
        return InplaceLeakyReLU(token, grad, scalars), None

    def bprop(x, params, out, dout):
        return grad(x, dout, params), msops.zeros_like(params)

    return msops.Custom(f"{lib}:{name}", out_shape=_same, out_dtype=_same, func_type="aot", bprop=bprop), scalars


@functools.lru_cache(maxsize=None)
def grad_kernel(lib: str) -> msops.Custom:
    """The backward Custom primitive dx = dy * (1 if x > 0 else slope), 0 where clamped, with its own bprop.

    dx is linear in dy and piecewise constant in x, so its derivative w.r.t. dy is the same kernel applied to
    the incoming gradient, and w.r.t. x it is 0 (almost everywhere, as for ReLU). This makes the op
    differentiable twice: gradient penalties (WGAN-GP, R1) differentiate a network's input gradient.
    """
    def bprop(x, dy, params, out, ddx):
        return msops.zeros_like(x), grad(x, ddx, params), msops.zeros_like(params)

    grad = msops.Custom(f"{lib}:LeakyReluBackward", out_shape=_same, out_dtype=_same, func_type="aot", bprop=bprop)
    return grad


def _token_shape(*_):
    """Custom out_shape of the in-place kernels: a one-element token, the result is in the input."""
    return (1,)


class InplaceLeakyReLU(nn.Cell):
    """Runs the in-place kernel, which writes y over x, and returns x; the backward reads only y's sign.

    The kernel's own output is a one-element token; `depend` orders the returned x after the kernel.
    A Cell with its own bprop (not a Custom bprop) carries the gradient because the token is not the
    result: the gradient of y is turned into dx from y itself (y > 0 <=> x > 0 for slope >= 0), so no
    copy of x is kept and no second full-size buffer is allocated.
    """

    def __init__(self, token_kernel: msops.Custom, grad_kernel: msops.Custom, scalars: ms.Tensor) -> None:
        super().__init__()
        self.token_kernel = token_kernel
        self.grad_kernel = grad_kernel
        self.scalars = scalars

    def construct(self, x: ms.Tensor) -> ms.Tensor:
        return msops.depend(x, self.token_kernel(x, self.scalars))

    def bprop(self, x: ms.Tensor, out: ms.Tensor, dout: ms.Tensor) -> tuple[ms.Tensor]:
        return (self.grad_kernel(out, dout, self.scalars),)


@constexpr
def _check_dtype(dtype: ms.Type) -> None:
    """TypeError naming the dtype unless the device's kernel supports it (runs at compile time under ms.jit).

    float32 and float16 everywhere; bfloat16 on Ascend only.
    """
    on_ascend = device_target() == "Ascend"
    if dtype not in FLOAT_DTYPES + ((ms.bfloat16,) if on_ascend else ()):
        names = "float32, float16 and bfloat16" if on_ascend else "float32 and float16"
        raise TypeError(f"leaky_relu supports {names} tensors on {device_target()}, got dtype {dtype}")


@constexpr
def _resolve(negative_slope: float, clamp: float | None, inplace: bool,
             formulation: str) -> tuple[msops.Custom, ms.Tensor]:
    """Checked arguments -> cached (primitive, scalars); constexpr so it also runs inside ms.jit."""
    slope = check_negative_slope(negative_slope)
    clamp = check_clamp(clamp)
    check_options(formulation, inplace, clamp)
    return kernel(slope, clamp, formulation, bool(inplace), num_threads(), device_target())


def leaky_relu(x: ms.Tensor, negative_slope: float, *, clamp: float | None = None, inplace: bool = False,
               formulation: str = "select") -> ms.Tensor:
    """LeakyReLU with PyTorch semantics (strict x > 0, gradient slope at 0); see ops.reference for details.

    inplace=True makes the backward read only the output's sign, so the input is not needed for the
    gradient (it is not aliased: MindSpore allocates a separate output for aot kernels).
    """
    if not isinstance(x, ms.Tensor):
        raise TypeError(f"leaky_relu expects a mindspore.Tensor, got {type(x).__name__}")
    _check_dtype(x.dtype)
    forward, scalars = _resolve(negative_slope, clamp, inplace, formulation)
    return forward(x) if scalars is None else forward(x, scalars)


class LeakyReLU(nn.Cell):
    """LeakyReLU layer; the slope is required, logged once at build time, and the op is built once."""

    def __init__(self, negative_slope: float, clamp: float | None = None, inplace: bool = False,
                 formulation: str = "select") -> None:
        super().__init__()
        self.negative_slope = check_negative_slope(negative_slope)
        self.clamp = check_clamp(clamp)
        check_options(formulation, inplace, self.clamp)
        self.inplace = bool(inplace)
        self.formulation = formulation
        self.op, self.scalars = kernel(self.negative_slope, self.clamp, formulation, self.inplace,
                                       num_threads(), device_target())
        logger.info("LeakyReLU: negative_slope=%s", self.negative_slope)

    def construct(self, x: ms.Tensor) -> ms.Tensor:
        _check_dtype(x.dtype)
        if self.scalars is None:
            return self.op(x)
        return self.op(x, self.scalars)

    def extend_repr(self) -> str:
        return (f"negative_slope={self.negative_slope}, clamp={self.clamp}, inplace={self.inplace}, "
                f"formulation={self.formulation!r}")
