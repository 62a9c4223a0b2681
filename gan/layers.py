"""Convolution layers with interchangeable implementations (same parameter names and shapes).

`native` is MindSpore's nn.Conv2d / nn.Conv2dTranspose. `gemm` subclasses them (so parameters, names,
shapes and initialisation are identical by construction and checkpoints move between the two) and
only replaces `construct`: MindSpore's CPU convolutions run oneDNN's reference kernel on NCHW and are
about 100x slower than PyTorch on the same cores, while its matmul is fast. The gemm path expresses
padding, striding and im2col (or col2im for the transpose) as products with small constant 0/1 "tap"
matrices along each spatial axis, plus one large matmul with the weights. Only matmul, reshape and
transpose run, all with fast CPU kernels and fast gradients (strided slicing, pad and unfold/fold
backward are slow on CPU here; see docs/performance.md).
"""
from __future__ import annotations

import mindspore as ms
from mindspore import Tensor, nn, ops

CONV_IMPLS = ("auto", "native", "gemm")
# The MatMul primitive, not ops.matmul: its gradient uses transpose flags, while ops.matmul's gradient
# materialises transposed copies of both operands (the largest cost of a training step on CPU here).
_MM, _MM_TA, _MM_TB = ops.MatMul(), ops.MatMul(transpose_a=True), ops.MatMul(transpose_b=True)


def resolve_conv_impl(impl: str, device_target: str) -> str:
    """Map `auto` to the fastest implementation for the device: gemm on CPU, native elsewhere."""
    if impl not in CONV_IMPLS:
        raise ValueError(f"model.conv_impl={impl!r} is not one of {CONV_IMPLS}")
    if impl == "auto":
        return "gemm" if device_target == "CPU" else "native"
    return impl


def _taps(size_in: int, size_out: int, kernel: int, stride: int, padding: int, dtype: ms.Type) -> Tensor:
    """0/1 matrix (size_in, kernel * size_out): column (k, o) selects input stride*o + k - padding.

    Positions that fall into the zero padding select nothing, so padding costs no copy. The same matrix
    read transposed scatters (k, o) back to positions: col2im for the transposed convolution.
    """
    wanted = stride * ops.arange(size_out).reshape(1, -1) + ops.arange(kernel).reshape(-1, 1) - padding
    taps = ops.arange(size_in).reshape(-1, 1) == wanted.reshape(1, -1)
    return ops.stop_gradient(taps.astype(dtype))


class _SquareConv:
    """Mixin for the gemm layers: builds the native layer unchanged, keeps kernel/stride/padding as ints."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._k, self._s, self._p = self.kernel_size[0], self.stride[0], self.padding


class GemmConv2d(_SquareConv, nn.Conv2d):
    """nn.Conv2d (pad mode 'pad', square kernel) computed as tap-matrix im2col + one weight matmul."""

    def construct(self, x: Tensor) -> Tensor:
        n, c, h, w = x.shape
        k, s, p, o = self._k, self._s, self._p, self.out_channels
        ho, wo = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
        # Width taps: (n c h, w) @ (w, kw wo); then height taps from the left: (kh ho, h) @ (h, n c kw wo).
        cols = _MM(x.reshape(n * c * h, w), _taps(w, wo, k, s, p, x.dtype))
        cols = cols.reshape(n, c, h, k * wo).transpose(2, 0, 1, 3).reshape(h, n * c * k * wo)
        cols = _MM_TA(_taps(h, ho, k, s, p, x.dtype), cols)
        cols = cols.reshape(k, ho, n, c, k, wo).transpose(3, 0, 4, 2, 1, 5).reshape(c * k * k, n * ho * wo)
        y = _MM(self.weight.astype(x.dtype).reshape(o, c * k * k), cols)   # (o, n ho wo)
        y = y.reshape(o, n, ho, wo).transpose(1, 0, 2, 3)
        if self.has_bias:
            y = y + self.bias.astype(x.dtype).reshape(1, o, 1, 1)
        return y


class GemmConv2dTranspose(_SquareConv, nn.Conv2dTranspose):
    """nn.Conv2dTranspose (pad mode 'pad', square kernel) computed as one weight matmul + tap-matrix col2im."""

    def construct(self, x: Tensor) -> Tensor:
        n, c, h, w = x.shape
        k, s, p, o = self._k, self._s, self._p, self.out_channels
        ho, wo = (h - 1) * s - 2 * p + k, (w - 1) * s - 2 * p + k
        # (n h w, c) @ (c, o kh kw), then col2im along width and height with transposed tap matrices.
        y = _MM(x.transpose(0, 2, 3, 1).reshape(n * h * w, c), self.weight.astype(x.dtype).reshape(c, -1))
        y = y.reshape(n, h, w, o, k, k).transpose(0, 3, 4, 1, 5, 2).reshape(n * o * k * h, k * w)
        y = _MM_TB(y, _taps(wo, w, k, s, p, x.dtype))                        # (n o kh h, wo)
        y = y.reshape(n, o, k * h, wo).transpose(0, 1, 3, 2).reshape(n * o * wo, k * h)
        y = _MM_TB(y, _taps(ho, h, k, s, p, x.dtype))                        # (n o wo, ho)
        y = y.reshape(n, o, wo, ho).transpose(0, 1, 3, 2)
        if self.has_bias:
            y = y + self.bias.astype(x.dtype).reshape(1, o, 1, 1)
        return y


def make_conv(in_channels: int, out_channels: int, kernel_size: int, stride: int, padding: int, *,
              transpose: bool = False, has_bias: bool = False, impl: str = "native") -> nn.Cell:
    """A Conv2d (or Conv2dTranspose) with parameters `weight` (and `bias`) shaped like MindSpore's."""
    classes = {"native": (nn.Conv2d, nn.Conv2dTranspose), "gemm": (GemmConv2d, GemmConv2dTranspose)}
    if impl not in classes:
        raise ValueError(f"conv impl {impl!r} is not one of {tuple(classes)} (resolve 'auto' with resolve_conv_impl)")
    for name, value, low in (("in_channels", in_channels, 1), ("out_channels", out_channels, 1),
                             ("kernel_size", kernel_size, 1), ("stride", stride, 1), ("padding", padding, 0)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ValueError(f"conv {name}={value!r} must be an int >= {low}")
    return classes[impl][transpose](in_channels, out_channels, kernel_size, stride, pad_mode="pad",
                                    padding=padding, has_bias=has_bias, weight_init="normal")
