"""Quantised LeakyReLU on int8/uint8 tensors with per-tensor scale and zero point (C++ aot kernel).

`quantized_leaky_relu(q, negative_slope, in_scale, in_zero_point, out_scale, out_zero_point)` has the
semantics of ONNX Runtime's com.microsoft.QLinearLeakyRelu: the kernel (ops/csrc/cpu/quantized_leaky_relu.cc)
builds a 256-entry table from the parameters (dequantise each code, apply the slope, requantise with
round-half-to-even and saturation, all in float32) and looks every element up in it; `ops.reference.
quantized_leaky_relu_table` specifies the table. LeakyReLU is no bare lookup on the codes as ReLU can be on
a symmetric grid: the slope and the two (scale, zero point) pairs decide every entry.
"""
from __future__ import annotations

import functools
import math
from numbers import Integral, Real

import mindspore as ms
import numpy as np
from mindspore import nn
from mindspore import ops as msops
from mindspore.ops import constexpr

from . import params
from ._custom import aot, num_threads
from .activations import check_negative_slope

QUANT_DTYPES = {ms.int8: (-128, 127), ms.uint8: (0, 255)}
_FLOAT32_MAX = float(np.finfo(np.float32).max)


def check_scale(name: str, scale: float, span: int = 1) -> float:
    """The scale as float; ValueError naming it unless it is finite and > 0 in float32, and `span` codes
    times the scale stay finite in float32 (the dequantised table must not overflow)."""
    if isinstance(scale, bool) or not isinstance(scale, Real) or not math.isfinite(scale) \
            or not np.float32(scale) > 0 or not float(np.float32(scale)) * span <= _FLOAT32_MAX:
        raise ValueError(f"{name}={scale!r} is not allowed: it must be a finite number > 0 whose float32 value "
                         f"is > 0 and at most {_FLOAT32_MAX / span:.4g} (so {span} codes stay finite)")
    return float(scale)


def check_zero_point(name: str, zero_point: int, dtype: ms.Type) -> int:
    """The zero point as int; ValueError naming it unless it is an integer within the dtype's range."""
    lo, hi = QUANT_DTYPES[dtype]
    if isinstance(zero_point, bool) or not isinstance(zero_point, Integral) or not lo <= zero_point <= hi:
        raise ValueError(f"{name}={zero_point!r} is not allowed for {dtype}: it must be an integer in [{lo}, {hi}]")
    return int(zero_point)


def check_quant_dtype(dtype: ms.Type) -> ms.Type:
    """The dtype unchanged; TypeError naming it unless it is int8 or uint8."""
    if dtype not in QUANT_DTYPES:
        raise TypeError(f"quantized_leaky_relu supports int8 and uint8 tensors, got dtype {dtype}")
    return dtype


@functools.lru_cache(maxsize=None)
def kernel() -> msops.Custom:
    """The Custom primitive (one for both dtypes: the kernel dispatches on the dtype at run time)."""
    return aot("QuantizedLeakyRelu")


def quant_scalars(dtype: ms.Type, negative_slope: float, in_scale: float, in_zero_point: int,
                  out_scale: float, out_zero_point: int) -> ms.Tensor:
    """Checked parameters packed as the kernel's scalars tensor; ValueError/TypeError naming a bad one."""
    check_quant_dtype(dtype)
    lo, hi = QUANT_DTYPES[dtype]
    return params.pack("quantized", slope=check_negative_slope(negative_slope),
                       in_scale=check_scale("in_scale", in_scale, hi - lo),
                       in_zero_point=check_zero_point("in_zero_point", in_zero_point, dtype),
                       out_scale=check_scale("out_scale", out_scale),
                       out_zero_point=check_zero_point("out_zero_point", out_zero_point, dtype), threads=num_threads())


_graph_quant_scalars = constexpr(quant_scalars)  # the same checks at compile time inside ms.jit


def quantized_leaky_relu(q: ms.Tensor, negative_slope: float, in_scale: float, in_zero_point: int,
                         out_scale: float, out_zero_point: int) -> ms.Tensor:
    """LeakyReLU of quantised codes q (int8 or uint8): codes of the same dtype in the output quantisation."""
    if not isinstance(q, ms.Tensor):
        raise TypeError(f"quantized_leaky_relu expects a mindspore.Tensor, got {type(q).__name__}")
    scalars = _graph_quant_scalars(q.dtype, negative_slope, in_scale, in_zero_point, out_scale, out_zero_point)
    return kernel()(q, scalars)


class QuantizedLeakyReLU(nn.Cell):
    """quantized_leaky_relu as a layer with fixed, checked parameters (the scalars are packed once)."""

    def __init__(self, dtype: ms.Type, negative_slope: float, in_scale: float, in_zero_point: int,
                 out_scale: float, out_zero_point: int) -> None:
        super().__init__()
        self.dtype = check_quant_dtype(dtype)
        self.scalars = quant_scalars(dtype, negative_slope, in_scale, in_zero_point, out_scale, out_zero_point)
        self.op = kernel()

    def construct(self, q: ms.Tensor) -> ms.Tensor:
        if q.dtype != self.dtype:
            raise TypeError(f"QuantizedLeakyReLU was built for {self.dtype} codes, got dtype {q.dtype}")
        return self.op(q, self.scalars)
