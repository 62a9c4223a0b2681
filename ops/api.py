"""Public LeakyReLU API: argument checks, one cached Custom primitive per configuration, bprop wiring.

`leaky_relu(x, negative_slope)` computes `x if x > 0 else negative_slope * x` with the C++ CPU kernel
(ops/csrc/cpu/leaky_relu.cc) through `mindspore.ops.Custom(func_type="aot")`; the exact semantics are
specified in `ops.reference`. The slope has no default on purpose: PyTorch (0.01), TensorFlow (0.2),
Keras (0.3), MindSpore (0.2) and CANN (0.0) disagree.

The slope, clamp and thread count reach the kernel as a small tensor input (the ActParams struct of
ops/csrc/params.h, packed by ops.params), not as primitive attributes (see ops._custom). Its row in the
activation table is ops.activations.ACTIVATIONS["leaky_relu"].
"""
from __future__ import annotations

import functools
import logging
import math

import mindspore as ms
from mindspore import nn
from mindspore import ops as msops
from mindspore.ops import constexpr
from mindspore.ops.operations._inner_ops import CopyWithSlice

from . import params
from ._custom import FLOAT_DTYPES, aot, check_dtype, device_target, in_graph, num_threads
from .activations import check_clamp, check_negative_slope
from .reference import FORMULATIONS

logger = logging.getLogger("ops")

__all__ = ["FLOAT_DTYPES", "LAYOUTS", "LeakyReLU", "check_clamp", "check_negative_slope", "device_target", "kernel",
           "layout_code", "leaky_relu", "num_threads", "pack_scalars"]


LAYOUTS = ("NCHW", "NHWC")  # of 4-d activations: channels on axis 1, or last; oneDNN weights are OIHW in both


def layout_code(layout: str) -> int:
    """0 for "NCHW", 1 for "NHWC" (the kernels' code); ValueError naming any other value."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout={layout!r} is not one of {LAYOUTS}")
    return LAYOUTS.index(layout)


def check_options(formulation: str, inplace: bool, clamp: float | None) -> None:
    """ValueError for an unknown formulation or for inplace combined with a clamp."""
    if formulation not in FORMULATIONS:
        raise ValueError(f"formulation={formulation!r} is not one of {FORMULATIONS}")
    if inplace and clamp is not None:
        raise ValueError(f"inplace=True cannot be combined with clamp={clamp!r}: the backward of an in-place "
                         f"op sees only the output, which does not tell where the clamp cut it off")


def pack_scalars(negative_slope: float, clamp: float | None, threads: int) -> ms.Tensor:
    """The kernels' ActParams (ops/csrc/params.h) of one LeakyReLU configuration."""
    return params.pack("act", slope=negative_slope, clamp=math.inf if clamp is None else clamp, threads=threads)


@functools.lru_cache(maxsize=None)
def kernel(negative_slope: float, clamp: float | None, formulation: str, inplace: bool,
           threads: int, device: str = "CPU") -> tuple[msops.Custom | nn.Cell, ms.Tensor | None]:
    """The forward Custom primitive (with its bprop) and its scalar tensor, cached per configuration.

    On CPU one primitive serves float32, float16 and bfloat16 (the kernel dispatches on the dtype at run time) and
    takes the scalars tensor as its second input; in place it is an InplaceLeakyReLU cell holding its
    kernels and scalars (None is returned beside it). On Ascend it is the Ascend C op of ops/csrc/ascendc
    (untested here: no CANN), which carries slope and clamp as attributes; the scalars are None.
    """
    if device == "Ascend":
        if formulation != "select" or inplace:
            raise ValueError(f"on Ascend only formulation='select' without inplace is built, got "
                             f"formulation={formulation!r}, inplace={inplace!r}")
        from .ascend import ascend_leaky_relu_primitive
        return ascend_leaky_relu_primitive(negative_slope, clamp), None
    scalars = pack_scalars(negative_slope, clamp, threads)
    name = "LeakyReluForwardSelect" if formulation == "select" else "LeakyReluForwardMaxMin"
    grad = backward_kernel()
    if inplace:
        return InplaceLeakyReLU(aot(name), grad, scalars), None

    def bprop(x, params, out, dout):
        return grad(x, dout, params), msops.zeros_like(params)

    return aot(name, bprop=bprop), scalars


@functools.lru_cache(maxsize=None)
def backward_kernel() -> msops.Custom:
    """The backward primitive dx = dy * (1 if x > 0 else slope), 0 where clamped, with its own bprop.

    dx is linear in dy and piecewise constant in x, so its derivative w.r.t. dy is the same kernel applied to
    the incoming gradient, and w.r.t. x it is 0 (almost everywhere, as for ReLU). This makes LeakyReLU
    differentiable twice: gradient penalties (WGAN-GP, R1) differentiate a network's input gradient.
    (Not the generic `primitive` of ops._custom: for smooth activations such as ELU the derivative w.r.t. x
    is not 0, so this rule holds for the piecewise-linear LeakyReLU only.)
    """
    def bprop(x, dy, params, out, ddx):
        return msops.zeros_like(x), grad(x, ddx, params), msops.zeros_like(params)

    grad = aot("LeakyReluBackward", bprop=bprop)
    return grad


_BITS = {ms.float32: ms.int32, ms.float16: ms.int16, ms.bfloat16: ms.int16}  # same-width integer views


class InplaceLeakyReLU(nn.Cell):
    """LeakyReLU for inplace=True: its backward reads only the result's sign (y > 0 <=> x > 0 for slope >= 0), so
    x is not kept for the backward; in PyNative the result is also written over x (docs/operator.md, "inplace").

    PyNative: the kernel computes the result out of place and CopyWithSlice (the view-aware copy behind
    MindSpore's own `tensor[:] = value`) copies it into x, through a view into its base as PyTorch's `leaky_relu_`
    does; x is returned. A kernel writing its input cannot do this: MindSpore hands a Custom kernel a contiguous
    copy of any view (transpose, slice, broadcast, even a reshape), so the view and its base would keep their values.
    Graph (ms.jit, GRAPH_MODE): the result is a new tensor and x is not written. Inside a graph a view op makes a new
    value, and a view passed into a graph reaches a Custom kernel as a contiguous copy, so a write could not reach
    the base; and the backward reading only the result is what saves the memory, not writing over x.

    A Cell with its own bprop (not a Custom bprop): the gradient of the result is turned into dx from the result.
    """

    def __init__(self, forward_kernel: msops.Custom, grad_kernel: msops.Custom, scalars: ms.Tensor) -> None:
        super().__init__()
        self.forward_kernel = forward_kernel
        self.grad_kernel = grad_kernel
        self.scalars = scalars
        self.copy_into = CopyWithSlice()

    def construct(self, x: ms.Tensor) -> ms.Tensor:
        if in_graph():
            return self.forward_kernel(x, self.scalars)
        if x.size == 0:  # nothing to write (CopyWithSlice fails on 0 bytes)
            return x
        bits = _BITS[x.dtype]  # copied as integers: CopyWithSlice has no bfloat16 on CPU, and bits stay bits
        self.copy_into(x.view(bits), self.forward_kernel(x, self.scalars).view(bits))
        return x

    def bprop(self, x: ms.Tensor, out: ms.Tensor, dout: ms.Tensor) -> tuple[ms.Tensor]:
        return (self.grad_kernel(out, dout, self.scalars),)


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

    inplace=True: the backward reads only the output's sign, so x is not kept for the gradient; in PyNative the
    result is also written over x (through a view into its base) and x is returned, in a graph (ms.jit,
    GRAPH_MODE) the result is a new tensor and x is not written (InplaceLeakyReLU, docs/operator.md "inplace").
    """
    if not isinstance(x, ms.Tensor):
        raise TypeError(f"leaky_relu expects a mindspore.Tensor, got {type(x).__name__}")
    check_dtype("leaky_relu", x.dtype)
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
        check_dtype("leaky_relu", x.dtype)
        if self.scalars is None:
            return self.op(x)
        return self.op(x, self.scalars)

    def extend_repr(self) -> str:
        return (f"negative_slope={self.negative_slope}, clamp={self.clamp}, inplace={self.inplace}, "
                f"formulation={self.formulation!r}")
