"""Convolution layers with interchangeable implementations (same parameter names and shapes)."""
from __future__ import annotations

from mindspore import nn

CONV_IMPLS = ("auto", "native", "gemm")


def resolve_conv_impl(impl: str, device_target: str) -> str:
    """Map `auto` to the fastest implementation for the device: gemm on CPU, native elsewhere."""
    if impl not in CONV_IMPLS:
        raise ValueError(f"model.conv_impl={impl!r} is not one of {CONV_IMPLS}")
    if impl == "auto":
        return "gemm" if device_target == "CPU" else "native"
    return impl


def make_conv(in_channels: int, out_channels: int, kernel_size: int, stride: int, padding: int, *,
              transpose: bool = False, has_bias: bool = False, impl: str = "native") -> nn.Cell:
    """A Conv2d (or Conv2dTranspose) with parameters `weight` (and `bias`) shaped like MindSpore's."""
    if impl != "native":
        raise ValueError(f"conv impl {impl!r} not available yet")  # gemm lands with the CPU speed work
    cls = nn.Conv2dTranspose if transpose else nn.Conv2d
    return cls(in_channels, out_channels, kernel_size, stride, pad_mode="pad", padding=padding,
               has_bias=has_bias, weight_init="normal")
