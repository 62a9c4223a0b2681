"""Convolution layers with interchangeable implementations (same parameter names and shapes).

`native` is MindSpore's nn.Conv2d / nn.Conv2dTranspose. `gemm` subclasses them (so parameters, names,
shapes and initialisation are identical by construction and checkpoints move between the two) and
only replaces `construct`: MindSpore's CPU convolutions run oneDNN's reference kernel on NCHW and are
far slower than PyTorch's on the same cores, while its matmul is fast. The gemm path is im2col
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

from gan.config.plan import fusion_kind
from ops import LeakyReLU, PReLU, bias_act, col2im, im2col, onednn

# The MatMul primitive, not ops.matmul: its gradient uses transpose flags, while ops.matmul's gradient
# materialises transposed copies of both operands (the largest cost of a training step on CPU here).
_MM, _MM_TA, _MM_TB = ops.MatMul(), ops.MatMul(transpose_a=True), ops.MatMul(transpose_b=True)


@constexpr
def _out_hw(shape: tuple, k: int, s: int, p: int) -> tuple[int, int]:
    """(Ho, Wo) of a convolution of an (N, C, H, W) input."""
    return (shape[2] + 2 * p - k) // s + 1, (shape[3] + 2 * p - k) // s + 1


class _ChannelBias:
    """Mixin for the conv layers that add their bias themselves (after their own convolution). `layout` is where
    their output keeps the channels: "NCHW", or "NHWC" (channels last; the oneDNN layers only, make_conv), and
    `in_layout` where their input does (None: the same)."""

    layout = "NCHW"
    in_layout = None

    def layouts(self) -> dict:
        """The layout and out_layout arguments of the layer's oneDNN call."""
        return {"layout": self.in_layout or self.layout, "out_layout": self.layout}

    def _plus_bias(self, y: Tensor, dtype: ms.Type) -> Tensor:
        """y plus the layer's per-channel bias (cast to `dtype`, the input's), or y for a layer without one."""
        shape = (1, 1, 1, -1) if self.layout == "NHWC" else (1, -1, 1, 1)
        return y + self.bias.astype(dtype).reshape(shape) if self.has_bias else y


class _SquareConv(_ChannelBias):
    """Mixin for the gemm and oneDNN layers: builds the native layer unchanged, keeps kernel/stride/padding as
    ints."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._k, self._s, self._p = self.kernel_size[0], self.stride[0], self.padding


class _ConvOnly(_SquareConv):
    """Mixin for the Conv2d layers computed by their `conv_only(x, weight)`: the bias added after it."""

    def construct(self, x: Tensor) -> Tensor:
        return self.forward_with(x, self.weight)

    def forward_with(self, x: Tensor, weight: Tensor) -> Tensor:
        """The layer on `weight` (its own, or spectral norm's weight / sigma)."""
        y = self.conv_only(x, weight)
        return self._plus_bias(y, y.dtype)  # y's: a oneDNN layer's out_dtype may differ from x's


class NativeConv2d(nn.Conv2d):
    """nn.Conv2d with its computation also callable on another weight (the spectral-norm layers need it)."""

    def conv_only(self, x: Tensor, weight: Tensor) -> Tensor:
        """The convolution with `weight`, without the bias."""
        return self.conv2d(x, weight.astype(x.dtype))

    def forward_with(self, x: Tensor, weight: Tensor) -> Tensor:
        y = self.conv_only(x, weight)
        return self.bias_add(y, self.bias.astype(x.dtype)) if self.has_bias else y


class GemmConv2d(_ConvOnly, nn.Conv2d):
    """nn.Conv2d (pad mode 'pad', square kernel) computed as im2col + one weight matmul.

    A kernel that covers the whole unpadded input (D's last layer, 4x4 -> 1x1) is a dense layer: one
    MatMul on the flattened input, no im2col and no transpose.
    """

    def conv_only(self, x: Tensor, weight: Tensor) -> Tensor:
        """The convolution with `weight`, without the bias."""
        n, c, h, w = x.shape
        k, s, p, o = self._k, self._s, self._p, self.out_channels
        weight = weight.astype(x.dtype).reshape(o, c * k * k)
        if p == 0 and h == k and w == k:
            return _MM_TB(x.reshape(n, c * k * k), weight).reshape(n, o, 1, 1)
        cols = im2col(x, k, s, p)                                            # (c kh kw, n ho wo)
        y = _MM(weight, cols)                                                # (o, n ho wo)
        return y.reshape(o, n, -1).transpose(1, 0, 2).reshape(n, o, *_out_hw(x.shape, k, s, p))


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
        return self._plus_bias(y, x.dtype)


class OnednnDtypes:
    """Mixin of the oneDNN layers: the compute dtype and output dtype their convolution uses (None: float32
    compute, or bfloat16 for bfloat16 inputs, and the input's dtype out). precision=bf16 sets them per layer
    (gan.training.precision); the weight reaches the kernel in its own dtype (float32 master weights stay float32)."""

    compute_dtype = None
    out_dtype = None

    def dtypes(self) -> dict:
        return {"compute": self.compute_dtype, "out_dtype": self.out_dtype}


class OnednnConv2d(OnednnDtypes, _ConvOnly, nn.Conv2d):
    """nn.Conv2d (pad mode 'pad', square kernel) as oneDNN's convolution primitive."""

    def conv_only(self, x: Tensor, weight: Tensor) -> Tensor:
        """The convolution with `weight`, without the bias."""
        return onednn.conv2d(x, weight, self._s, self._p, **self.layouts(), **self.dtypes())


class OnednnConv2dTranspose(OnednnDtypes, _SquareConv, nn.Conv2dTranspose):
    """nn.Conv2dTranspose (pad mode 'pad', square kernel) as oneDNN's convolution backward-data primitive."""

    def construct(self, x: Tensor) -> Tensor:
        y = onednn.conv_transpose2d(x, self.weight, self._s, self._p, **self.layouts(), **self.dtypes())
        return self._plus_bias(y, y.dtype)


class ConvAct(_ChannelBias):
    """Mixin of a Conv2d fused with the activation that follows it (`forward_with` computes both). The weight
    it uses is `effective_weight()` (SpectralNorm divides it by sigma); `preactivation(x)` is what the
    activation receives, conv + bias, recomputed by the dead-channel probes (gan.diagnostics.probes) at check steps."""

    def effective_weight(self) -> Tensor:
        return self.weight

    def construct(self, x: Tensor) -> Tensor:
        return self.forward_with(x, self.effective_weight())

    def preactivation(self, x: Tensor) -> Tensor:
        return self._plus_bias(self.conv_only(x, self.effective_weight()), x.dtype)


class OnednnConv2dAct(ConvAct, OnednnConv2d):
    """OnednnConv2d followed by LeakyReLU (+ clamp) as one oneDNN primitive (bias and activation as post-ops).

    Same parameters as the conv (the activation has none), so checkpoints move to and from the unfused layers.
    """

    def __init__(self, *args, negative_slope: float, clamp: float | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.negative_slope, self.clamp = negative_slope, clamp

    def forward_with(self, x: Tensor, weight: Tensor) -> Tensor:
        bias = self.bias if self.has_bias else ops.zeros((self.out_channels,), weight.dtype)
        return onednn.conv2d_act(x, weight, bias, self._s, self._p, self.negative_slope, self.clamp, **self.layouts(),
                                 **self.dtypes())


class BiasAct(ConvAct):
    """Mixin for a Conv2d with a bias: the bias and the LeakyReLU or PReLU after it as one fused kernel
    (ops.bias_act), after the convolution without bias. A PReLU's per-channel slopes are `prelu_weight`."""

    def __init__(self, *args, negative_slope: float, clamp: float | None = None, prelu: PReLU | None = None,
                 **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.negative_slope, self.clamp = negative_slope, clamp
        self.prelu_weight = None if prelu is None else Parameter(Tensor(prelu.weight.asnumpy()), name="prelu_weight")

    def forward_with(self, x: Tensor, weight: Tensor) -> Tensor:
        return bias_act(self.conv_only(x, weight), self.bias, self.negative_slope, clamp=self.clamp,
                        weight=self.prelu_weight, layout=self.layout)


@functools.lru_cache(maxsize=None)
def bias_act_class(layer_class: type) -> type:
    """`layer_class` (which has conv_only(x, weight)) with its bias and activation fused (BiasAct)."""
    return type(f"{layer_class.__name__}BiasAct", (BiasAct, layer_class), {})


def _rebuild(conv: nn.Cell, cls: type, **kwargs) -> nn.Cell:
    """A fresh `cls` layer with the geometry and layouts of `conv` (and its parameter names: weight, bias, sn_u)."""
    layer = cls(conv.in_channels, conv.out_channels, conv.kernel_size[0], conv.stride[0], pad_mode="pad",
                padding=conv.padding, has_bias=conv.has_bias, weight_init="normal", **kwargs)
    layer.layout, layer.in_layout = getattr(conv, "layout", "NCHW"), getattr(conv, "in_layout", None)
    return layer


def fuse_conv_act(conv: nn.Cell, act: nn.Cell, fusion: str) -> nn.Cell | None:
    """`conv` followed by `act` as one layer for fusion=bn_act or conv_act, else None (keep two layers).

    conv_act: an OnednnConv2d (spectral or not) and a LeakyReLU become one oneDNN primitive (OnednnConv2dAct).
    bn_act, and conv_act otherwise: a Conv2d with a bias (D without BatchNorm) followed by a LeakyReLU or a
    PReLU gets the bias and the activation as one kernel (BiasAct). Parameter names stay the conv's (plus
    `prelu_weight`), so checkpoints of LeakyReLU runs move between fusion kinds.
    """
    spectral_norm = isinstance(conv, SpectralNorm)
    base = next((_FUSIBLE[c] for c in type(conv).__mro__ if c in _FUSIBLE), None)
    leaky = type(act) is LeakyReLU
    kind = fusion_kind(fusion)
    if base is None:
        return None
    if kind.onednn_conv and leaky and base is OnednnConv2d:
        fused = OnednnConv2dAct
        kwargs = {"negative_slope": act.negative_slope, "clamp": act.clamp}
    elif kind.fused_kernels and conv.has_bias and (leaky or type(act) is PReLU):
        fused = bias_act_class(base)
        kwargs = {"negative_slope": act.negative_slope if leaky else 0.0, "clamp": act.clamp,
                  "prelu": None if leaky else act}
    else:
        return None
    return _rebuild(conv, spectral(fused) if spectral_norm else fused, **kwargs)


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
    update by the trainer (gan.training.loop), so micro-batches, D's several forwards per step and the penalties'
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

    def effective_weight(self) -> Tensor:
        """weight / sigma: the weight the layer computes with."""
        return self.weight / self.sigma().astype(self.weight.dtype)

    def construct(self, x: Tensor) -> Tensor:
        return self.forward_with(x, self.effective_weight())


@functools.lru_cache(maxsize=None)
def spectral(layer_class: type) -> type:
    """`layer_class` (which has forward_with(x, weight)) with spectral normalisation; same parameter names
    plus `sn_u`."""
    return type(f"Spectral{layer_class.__name__}", (SpectralNorm, layer_class), {})


class PowerIteration(nn.Cell):
    """One power iteration, u <- W W^T u / ||W W^T u||, in every spectral-norm layer of a network; returns the
    new sigma estimates. Holds the Parameters themselves (as gan.training.loop.EMA does): their names stay put."""

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


# Conv classes fuse_conv_act rebuilds -> the class with conv_only it builds on (nn.Conv2d: the native layer).
_FUSIBLE = {GemmConv2d: GemmConv2d, OnednnConv2d: OnednnConv2d, NativeConv2d: NativeConv2d, nn.Conv2d: NativeConv2d}


def make_conv(in_channels: int, out_channels: int, kernel_size: int, stride: int, padding: int, *,
              transpose: bool = False, has_bias: bool = False, impl: str = "native",
              spectral_norm: bool = False, layout: str = "NCHW", in_layout: str | None = None) -> nn.Cell:
    """A Conv2d (or Conv2dTranspose) with parameters `weight` (and `bias`) shaped like MindSpore's;
    spectral_norm=True (Conv2d only) adds spectral normalisation (SpectralNorm). layout="NHWC" (impl onednn only):
    it returns channels-last activations (N, H, W, C), and takes them unless in_layout says otherwise (a network's
    first layer reads NCHW images: in_layout="NCHW"); the weights stay OIHW."""
    classes = {"native": (nn.Conv2d, nn.Conv2dTranspose), "gemm": (GemmConv2d, GemmConv2dTranspose),
               "onednn": (OnednnConv2d, OnednnConv2dTranspose)}
    if spectral_norm:
        if transpose:
            raise ValueError("spectral_norm=True is built for Conv2d (discriminators), not Conv2dTranspose")
        classes = {"native": (spectral(NativeConv2d),), "gemm": (spectral(GemmConv2d),),
                   "onednn": (spectral(OnednnConv2d),)}
    if impl not in classes:
        raise ValueError(f"conv impl {impl!r} is not one of {tuple(classes)} "
                         f"(resolve 'auto' with gan.config.plan.resolve_conv_impl)")
    for name, value, low in (("in_channels", in_channels, 1), ("out_channels", out_channels, 1),
                             ("kernel_size", kernel_size, 1), ("stride", stride, 1), ("padding", padding, 0)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ValueError(f"conv {name}={value!r} must be an int >= {low}")
    for key, value in (("layout", layout), ("in_layout", in_layout or layout)):
        if value not in ("NCHW", "NHWC") or (value == "NHWC" and impl != "onednn"):
            raise ValueError(f"conv {key}={value!r} is not allowed with impl {impl!r}: NCHW, or NHWC with onednn")
    conv = classes[impl][transpose](in_channels, out_channels, kernel_size, stride, pad_mode="pad",
                                    padding=padding, has_bias=has_bias, weight_init="normal")
    if (in_layout or layout, layout) != ("NCHW", "NCHW"):
        conv.layout, conv.in_layout = layout, in_layout
    return conv
