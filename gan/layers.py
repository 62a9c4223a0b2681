"""Convolution layers with interchangeable implementations (same parameter names and shapes).

`native` is MindSpore's nn.Conv2d / nn.Conv2dTranspose. `gemm` subclasses them (so parameters, names,
shapes and initialisation are identical by construction and checkpoints move between the two) and
only replaces `construct`: MindSpore's CPU convolutions run oneDNN's reference kernel on NCHW and are
about 100x slower than PyTorch on the same cores, while its matmul is fast. The gemm path is im2col
(`ops.im2col`, a C++ kernel) + one MatMul with the weights for Conv2d, and one MatMul + col2im for
Conv2dTranspose; im2col and col2im are each other's gradient, so the backward is MatMuls and the
other kernel. One Transpose swaps the batch and channel axes of the (small) output or input; see
docs/performance.md for the design and the measurements. `onednn` (CPU only) subclasses them the same way
and calls oneDNN's convolution primitives in blocked layouts (`ops.onednn`, MindSpore's own oneDNN).
"""
from __future__ import annotations

import functools

import mindspore as ms
import numpy as np
from mindspore import Parameter, Tensor, nn, ops
from mindspore.ops import constexpr

from ops import col2im, im2col, onednn

CONV_IMPLS = ("auto", "native", "gemm", "onednn")
# The MatMul primitive, not ops.matmul: its gradient uses transpose flags, while ops.matmul's gradient
# materialises transposed copies of both operands (the largest cost of a training step on CPU here).
_MM, _MM_TA, _MM_TB = ops.MatMul(), ops.MatMul(transpose_a=True), ops.MatMul(transpose_b=True)


@constexpr
def _out_hw(shape: tuple, k: int, s: int, p: int) -> tuple[int, int]:
    """(Ho, Wo) of a convolution of an (N, C, H, W) input."""
    return (shape[2] + 2 * p - k) // s + 1, (shape[3] + 2 * p - k) // s + 1


def resolve_conv_impl(impl: str, device_target: str) -> str:
    """Map `auto` to the fastest implementation for the device: on CPU onednn when its kernels build and load
    here (else gemm), native elsewhere. `onednn` itself is CPU only (ValueError naming the device otherwise)."""
    if impl not in CONV_IMPLS:
        raise ValueError(f"model.conv_impl={impl!r} is not one of {CONV_IMPLS}")
    if impl == "auto":
        if device_target != "CPU":
            return "native"
        return "onednn" if onednn.available() else "gemm"
    if impl == "onednn" and device_target != "CPU":
        raise ValueError(f"model.conv_impl=onednn runs on CPU only, not on runtime.device_target={device_target!r}; "
                         f"use model.conv_impl=auto")
    if impl == "onednn":
        onednn.dnnl_info()  # RuntimeError now, naming the missing headers or library, not at the first step
    return impl


class _SquareConv:
    """Mixin for the gemm layers: builds the native layer unchanged, keeps kernel/stride/padding as ints."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._k, self._s, self._p = self.kernel_size[0], self.stride[0], self.padding


class NativeConv2d(nn.Conv2d):
    """nn.Conv2d with its computation also callable on another weight (the spectral-norm layers need it)."""

    def forward_with(self, x: Tensor, weight: Tensor) -> Tensor:
        y = self.conv2d(x, weight.astype(x.dtype))
        return self.bias_add(y, self.bias.astype(x.dtype)) if self.has_bias else y


class GemmConv2d(_SquareConv, nn.Conv2d):
    """nn.Conv2d (pad mode 'pad', square kernel) computed as im2col + one weight matmul.

    A kernel that covers the whole unpadded input (D's last layer, 4x4 -> 1x1) is a dense layer: one
    MatMul on the flattened input, no im2col and no transpose.
    """

    def construct(self, x: Tensor) -> Tensor:
        return self.forward_with(x, self.weight)

    def forward_with(self, x: Tensor, weight: Tensor) -> Tensor:
        n, c, h, w = x.shape
        k, s, p, o = self._k, self._s, self._p, self.out_channels
        weight = weight.astype(x.dtype).reshape(o, c * k * k)
        if p == 0 and h == k and w == k:
            y = _MM_TB(x.reshape(n, c * k * k), weight).reshape(n, o, 1, 1)
        else:
            cols = im2col(x, k, s, p)                                        # (c kh kw, n ho wo)
            y = _MM(weight, cols)                                            # (o, n ho wo)
            y = y.reshape(o, n, -1).transpose(1, 0, 2).reshape(n, o, *_out_hw(x.shape, k, s, p))
        if self.has_bias:
            y = y + self.bias.astype(x.dtype).reshape(1, o, 1, 1)
        return y


class GemmConv2dTranspose(_SquareConv, nn.Conv2dTranspose):
    """nn.Conv2dTranspose (pad mode 'pad', square kernel) computed as one weight matmul + col2im.

    From a 1x1 input without padding (G's first layer, z -> 4x4) it is a dense layer: one MatMul whose
    (n, o kh kw) output already is NCHW, no transpose and no col2im.
    """

    def construct(self, x: Tensor) -> Tensor:
        n, c, h, w = x.shape
        k, s, p, o = self._k, self._s, self._p, self.out_channels
        ho, wo = (h - 1) * s - 2 * p + k, (w - 1) * s - 2 * p + k
        weight = self.weight.astype(x.dtype).reshape(c, o * k * k)
        if p == 0 and h == 1 and w == 1:
            y = _MM(x.reshape(n, c), weight).reshape(n, o, k, k)
        else:
            x_cn = x.reshape(n, c, h * w).transpose(1, 0, 2).reshape(c, n * h * w)
            y = col2im(_MM_TA(weight, x_cn), (n, o, ho, wo), k, s, p)          # cols: (o kh kw, n h w)
        if self.has_bias:
            y = y + self.bias.astype(x.dtype).reshape(1, o, 1, 1)
        return y


class OnednnConv2d(_SquareConv, nn.Conv2d):
    """nn.Conv2d (pad mode 'pad', square kernel) as oneDNN's convolution primitive (float32 compute)."""

    def construct(self, x: Tensor) -> Tensor:
        return self.forward_with(x, self.weight)

    def forward_with(self, x: Tensor, weight: Tensor) -> Tensor:
        y = onednn.conv2d(x, weight.astype(x.dtype), self._s, self._p)
        if self.has_bias:
            y = y + self.bias.astype(x.dtype).reshape(1, -1, 1, 1)
        return y


class OnednnConv2dTranspose(_SquareConv, nn.Conv2dTranspose):
    """nn.Conv2dTranspose (pad mode 'pad', square kernel) as oneDNN's convolution backward-data primitive."""

    def construct(self, x: Tensor) -> Tensor:
        y = onednn.conv_transpose2d(x, self.weight.astype(x.dtype), self._s, self._p)
        if self.has_bias:
            y = y + self.bias.astype(x.dtype).reshape(1, -1, 1, 1)
        return y


class OnednnConv2dAct(OnednnConv2d):
    """OnednnConv2d followed by LeakyReLU (+ clamp) as one oneDNN primitive (bias and activation as post-ops).

    Same parameters as the conv (the activation has none), so checkpoints move to and from the unfused layers.
    """

    def __init__(self, *args, negative_slope: float, clamp: float | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.negative_slope, self.clamp = negative_slope, clamp

    def construct(self, x: Tensor) -> Tensor:
        bias = self.bias.astype(x.dtype) if self.has_bias else ops.zeros((self.out_channels,), x.dtype)
        return onednn.conv2d_act(x, self.weight.astype(x.dtype), bias, self._s, self._p, self.negative_slope,
                                 self.clamp)


def fuse_conv_act(conv: nn.Cell, negative_slope: float, clamp: float | None) -> nn.Cell | None:
    """A fresh OnednnConv2dAct with the geometry and parameter names of `conv` (an OnednnConv2d), else None."""
    if type(conv) is not OnednnConv2d:
        return None
    return OnednnConv2dAct(conv.in_channels, conv.out_channels, conv._k, conv._s, pad_mode="pad", padding=conv._p,
                           has_bias=conv.has_bias, weight_init="normal", negative_slope=negative_slope, clamp=clamp)


def check_fusion_impl(fusion: str, impl: str) -> None:
    """ValueError naming both keys when fusion=conv_act runs with a conv impl other than onednn."""
    if fusion == "conv_act" and impl != "onednn":
        raise ValueError(f"fusion=conv_act fuses convolutions through oneDNN and needs model.conv_impl=onednn "
                         f"(auto on CPU), not {impl!r}; use fusion=bn_act with other implementations")


def _l2_normalise(v: Tensor) -> Tensor:
    return v / (ops.norm(v) + 1e-12)


def _matrix(weight: Tensor) -> Tensor:
    """A layer's weight as the (out, -1) float32 matrix whose spectral norm is taken."""
    return weight.astype(ms.float32).reshape(weight.shape[0], -1)


class SpectralNorm:
    """Mixin: the layer computes with weight / sigma, sigma the largest singular value of the weight as an
    (out, -1) matrix (Miyato et al. 2018), estimated by power iteration.

    The left singular vector estimate `sn_u` is a non-trainable Parameter (so checkpoints hold it and resume
    is exact). The forward does not update it: `PowerIteration(net)()` does one iteration, called once per D
    update by the trainer (gan.training), so micro-batches, D's several forwards per step and the penalties'
    extra forwards all see the same sigma. The gradient flows through sigma into the weight, with u and v
    treated as constants, as in PyTorch's torch.nn.utils.spectral_norm.
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        rows = self.weight.shape[0]
        self.sn_u = Parameter(Tensor(np.full(rows, 1.0 / np.sqrt(rows), np.float32)), name="sn_u",
                              requires_grad=False)

    def reset_u(self, rng: np.random.Generator) -> None:
        """Seeded random unit start vector (a constant start could be orthogonal to the top singular vector)."""
        u = rng.standard_normal(self.sn_u.shape[0]).astype(np.float32)
        self.sn_u.set_data(Tensor(u / np.linalg.norm(u)))

    def sigma(self) -> Tensor:
        """u^T W v with v = W^T u / ||W^T u||; differentiable w.r.t. W only."""
        w = _matrix(self.weight)
        u = ops.stop_gradient(self.sn_u)
        v = ops.stop_gradient(_l2_normalise(ops.matmul(u, w)))
        return (u * ops.matmul(w, v)).sum()

    def construct(self, x: Tensor) -> Tensor:
        return self.forward_with(x, self.weight / self.sigma().astype(self.weight.dtype))


@functools.lru_cache(maxsize=None)
def spectral(layer_class: type) -> type:
    """`layer_class` (which has forward_with(x, weight)) with spectral normalisation; same parameter names
    plus `sn_u`."""
    return type(f"Spectral{layer_class.__name__}", (SpectralNorm, layer_class), {})


class PowerIteration(nn.Cell):
    """One power iteration, u <- W W^T u / ||W W^T u||, in every spectral-norm layer of a network; returns the
    new sigma estimates. Holds the Parameters themselves (as gan.training.EMA does): their names stay put."""

    def __init__(self, net: nn.Cell) -> None:
        super().__init__()
        layers = [c for _, c in net.cells_and_names() if isinstance(c, SpectralNorm)]
        if not layers:
            raise ValueError(f"{type(net).__name__} has no spectral-norm layer")
        self.weights = ms.ParameterTuple([c.weight for c in layers])
        self.us = ms.ParameterTuple([c.sn_u for c in layers])

    def construct(self) -> Tensor:
        sigmas = ()
        for weight, u in zip(self.weights, self.us):
            w = ops.stop_gradient(_matrix(weight))
            new_u = _l2_normalise(ops.matmul(w, _l2_normalise(ops.matmul(u, w))))
            ops.assign(u, new_u)
            sigmas = sigmas + (ops.norm(ops.matmul(new_u, w)),)
        return ops.stack(sigmas)


def make_conv(in_channels: int, out_channels: int, kernel_size: int, stride: int, padding: int, *,
              transpose: bool = False, has_bias: bool = False, impl: str = "native",
              spectral_norm: bool = False) -> nn.Cell:
    """A Conv2d (or Conv2dTranspose) with parameters `weight` (and `bias`) shaped like MindSpore's;
    spectral_norm=True (Conv2d only) adds spectral normalisation (SpectralNorm)."""
    classes = {"native": (nn.Conv2d, nn.Conv2dTranspose), "gemm": (GemmConv2d, GemmConv2dTranspose),
               "onednn": (OnednnConv2d, OnednnConv2dTranspose)}
    if spectral_norm:
        if transpose:
            raise ValueError("spectral_norm=True is built for Conv2d (discriminators), not Conv2dTranspose")
        classes = {"native": (spectral(NativeConv2d),), "gemm": (spectral(GemmConv2d),),
                   "onednn": (spectral(OnednnConv2d),)}
    if impl not in classes:
        raise ValueError(f"conv impl {impl!r} is not one of {tuple(classes)} (resolve 'auto' with resolve_conv_impl)")
    for name, value, low in (("in_channels", in_channels, 1), ("out_channels", out_channels, 1),
                             ("kernel_size", kernel_size, 1), ("stride", stride, 1), ("padding", padding, 0)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ValueError(f"conv {name}={value!r} must be an int >= {low}")
    return classes[impl][transpose](in_channels, out_channels, kernel_size, stride, pad_mode="pad",
                                    padding=padding, has_bias=has_bias, weight_init="normal")
