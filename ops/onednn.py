"""Conv2d and Conv2dTranspose through oneDNN's convolution primitives (ops/csrc/cpu/onednn_conv.cc), CPU only.

Which oneDNN: the one MindSpore 2.10 ships and loads itself (`mindspore/lib/libdnnl.so.3`, oneDNN 3.10.1,
a threadpool build). The kernel library links that file by path (rpath), so the process holds one library
with the SONAME libdnnl.so.3 and the kernels cannot bind to another copy. It compiles with the headers of
the `onednn-devel` package (pinned in pyproject.toml, extra `onednn`): oneDNN keeps its C API backward
compatible within a major version and the C++ API is an inline wrapper over it, so headers of an older 3.x
release work with the newer library; `dnnl_info()` checks that at load time and reports the library's file.
Install the headers with `pip install --no-deps onednn-devel==2025.3.0`: the package's own dependency
`onednn` is a second (SYCL) libdnnl.so.3 with about 1 GB of Intel runtimes that nothing here loads.

`conv2d(x, w, s, p)` is a Conv2d with OIHW weights (O, C, Kh, Kw); `conv_transpose2d(x, w, s, p)` is its
adjoint with weights (C_in, C_out, Kh, Kw), as nn.Conv2dTranspose stores them; `conv2d_act` fuses bias +
LeakyReLU (+ clamp) into the Conv2d. Strides are an int or (h, w), paddings an int, (h, w) or (top, bottom,
left, right). Each is differentiable in its tensors: the three primitives (forward, backward-data,
backward-weights) are each other's gradients. float32 and float16 tensors (each input on its own, as amp
casts them) are converted by the reorders; the convolutions compute in float32. Conv2d, conv2d_act and
`pool2d` (max or average pooling, forward only) also take NHWC activations (layout="NHWC"), which oneDNN
computes in place of its blocked layouts: a network kept in NHWC (gan.inception) never reorders them.
"""
from __future__ import annotations

import ctypes
import functools
import importlib.metadata
import logging
import math
from pathlib import Path
from typing import Callable

import mindspore as ms
import numpy as np
from mindspore import ops as msops
from mindspore.ops import constexpr

from . import build
from .api import FLOAT_DTYPES, check_clamp, check_negative_slope, num_threads

SOURCE = build.CSRC / "cpu" / "onednn_conv.cc"
HEADERS_PACKAGE, HEADERS_VERSION = "onednn-devel", "2025.3.0"  # oneDNN 3.9.1 headers; pinned in pyproject.toml
_log = logging.getLogger(__name__)


def mindspore_dnnl() -> Path:
    """MindSpore's bundled oneDNN library (the one the kernels link); RuntimeError when the wheel lacks it."""
    lib = Path(ms.__file__).resolve().parent / "lib" / "libdnnl.so.3"
    if not lib.is_file():
        raise RuntimeError(f"conv_impl=onednn links MindSpore's own oneDNN, but {lib} does not exist in this "
                           f"MindSpore {ms.__version__} installation; use model.conv_impl=gemm")
    return lib


def headers() -> Path:
    """The include directory holding oneapi/dnnl/dnnl.hpp, from the onednn-devel package."""
    try:
        files = importlib.metadata.files(HEADERS_PACKAGE) or []
    except importlib.metadata.PackageNotFoundError:
        files = []
    for f in files:
        if str(f).endswith("include/oneapi/dnnl/dnnl_version.h"):
            return Path(f.locate()).resolve().parents[2]
    raise RuntimeError(f"conv_impl=onednn compiles against the oneDNN headers of the {HEADERS_PACKAGE} package, "
                       f"which is not installed; run `pip install --no-deps {HEADERS_PACKAGE}=={HEADERS_VERSION}` "
                       f"or use model.conv_impl=gemm")


@functools.lru_cache(maxsize=None)
def library_path() -> str:
    """The compiled oneDNN kernel library (built on first use, cached like the other kernels)."""
    include, lib = headers(), mindspore_dnnl()
    flags = (f"-I{include}", f"-L{lib.parent}", "-l:libdnnl.so.3", f"-Wl,-rpath,{lib.parent}", "-Wl,--no-undefined")
    sources = (SOURCE, *(build.CSRC / "cpu" / h for h in ("worker_pool.h", "col2im.h")),
               include / "oneapi" / "dnnl" / "dnnl_version.h")
    return build.library_path("onednn_conv", (SOURCE,), sources, flags)


@functools.lru_cache(maxsize=None)
def dnnl_info() -> dict:
    """{"version", "headers", "library"} of the oneDNN the kernels call, logged once.

    RuntimeError when the loaded library's major version differs from the headers' or its minor version is
    older (the C API is only backward compatible).
    """
    lib = ctypes.CDLL(library_path())
    values, path = (ctypes.c_int32 * 6)(), ctypes.create_string_buffer(4096)
    lib.LreluDnnlVersion(values, path, len(path))
    loaded, compiled = tuple(values[:3]), tuple(values[3:])
    info = {"version": ".".join(map(str, loaded)), "headers": ".".join(map(str, compiled)),
            "library": path.value.decode()}
    if loaded[0] != compiled[0] or loaded[1] < compiled[1]:
        raise RuntimeError(f"the oneDNN kernels were compiled with oneDNN {info['headers']} headers but bound to "
                           f"oneDNN {info['version']} ({info['library']}); install {HEADERS_PACKAGE} with "
                           f"headers of major {loaded[0]} and minor <= {loaded[1]}")
    _log.info("oneDNN convolutions: oneDNN %s from %s (headers %s)", info["version"], info["library"],
              info["headers"])
    return info


def available() -> bool:
    """True when the oneDNN kernels build and load here (CPU with MindSpore's oneDNN and the headers)."""
    try:
        dnnl_info()
    except (RuntimeError, OSError) as err:
        _log.info("oneDNN convolutions unavailable: %s", err)
        return False
    return True


def _shape_of(shape: tuple) -> Callable[..., list[int]]:
    """Custom out_shape: always `shape`."""
    return lambda *_: list(shape)


LAYOUTS = ("NCHW", "NHWC")  # of the activations; weights are OIHW in both
POOLS = ("max", "avg", "avg_include_pad")  # max; average over the window's input pixels; ... over all of it


def pair(value: int | tuple[int, int], name: str) -> tuple[int, int]:
    """(h, w) of an int or a pair of ints (a stride or a kernel size)."""
    items = _ints(value, name, (1, 2), low=1)
    return items * 2 if len(items) == 1 else items


def pads(value: int | tuple[int, ...]) -> tuple[int, int, int, int]:
    """(top, bottom, left, right) of a padding given as an int, (h, w) or (top, bottom, left, right) (MindSpore's
    order)."""
    p = _ints(value, "padding", (1, 2, 4), low=0)
    if len(p) == 4:
        return p
    return (p[0],) * 4 if len(p) == 1 else (p[0], p[0], p[1], p[1])


def _ints(value, name: str, lengths: tuple[int, ...], low: int) -> tuple[int, ...]:
    """value as a tuple of ints >= low of one of the lengths; ValueError naming it otherwise."""
    items = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    if len(items) not in lengths or any(not isinstance(v, int) or isinstance(v, bool) or v < low for v in items):
        raise ValueError(f"{name}={value!r} is not allowed: give an int >= {low} or {' or '.join(map(str, lengths))} "
                         f"of them")
    return items


def _layout_code(layout: str) -> int:
    if layout not in LAYOUTS:
        raise ValueError(f"layout={layout!r} is not one of {LAYOUTS}")
    return LAYOUTS.index(layout)


def _geometry(stride: tuple[int, int], padding: tuple[int, int, int, int], threads: int, slope: float,
              clamp: float, layout: str, constant_weights: bool) -> ms.Tensor:
    """The kernels' int32 geometry input {stride h/w, padding top/bottom/left/right, threads, slope, clamp,
    layout, constant_weights}, the floats as float32 bits (an integer input, so amp never casts it)."""
    floats = np.array([slope, clamp], np.float32).view(np.int32)
    head = np.array([*stride, *padding, threads], np.int32)
    tail = np.array([_layout_code(layout), int(constant_weights)], np.int32)
    return ms.Tensor(np.concatenate([head, floats, tail]))


def _spatial(shape: tuple[int, ...], layout: str) -> tuple[int, int, int, int]:
    """(N, C, H, W) of an activation shape in `layout`."""
    n, a, b, c = shape
    return (n, c, a, b) if layout == "NHWC" else (n, a, b, c)


def _in_layout(n: int, c: int, h: int, w: int, layout: str) -> tuple[int, int, int, int]:
    """The activation shape of (N, C, H, W) in `layout`."""
    return (n, h, w, c) if layout == "NHWC" else (n, c, h, w)


def _out_size(size: int, kernel: int, stride: int, before: int, after: int) -> int:
    """Output length along one axis; ValueError naming the values when the window does not fit."""
    span = size + before + after - kernel
    if span < 0:
        raise ValueError(f"kernel size {kernel} does not fit an input of size {size} with padding {before}+{after}")
    return span // stride + 1


@functools.lru_cache(maxsize=None)
def kernels(x_shape: tuple[int, ...], w_shape: tuple[int, ...], stride: tuple[int, int],
            padding: tuple[int, int, int, int], transpose: bool, threads: int,
            act: tuple[float, float] | None = None, layout: str = "NCHW",
            constant_weights: bool = False) -> tuple[msops.Custom, ms.Tensor]:
    """(primitive with its bprop, geometry tensor) of a conv (or transposed conv) of x by w, cached per shape.

    stride (h, w), padding (top, bottom, left, right); x in `layout` (NCHW or NHWC), w OIHW (O, C, Kh, Kw).
    act=(slope, clamp) (Conv2d only): conv + bias + LeakyReLU (+ clamp, inf for none) as one primitive; its
    backward takes the activation's gradient from the output's sign, then the conv's backward primitives.
    constant_weights (Conv2d forward): keep the weights' reordered copy while their bytes do not change.
    """
    lib = library_path()
    dnnl_info()
    geometry = _geometry(stride, padding, threads, *(act or (0.0, math.inf)), layout, constant_weights)
    n, _, h, w = _spatial(x_shape, layout)
    kh, kw = w_shape[2:]
    (sh, sw), (top, bottom, left, right) = stride, padding
    if transpose:  # x is the conv's dst (N, C_in, h, w); y its src (N, C_out, H, W)
        y_shape = _in_layout(n, w_shape[1], (h - 1) * sh - top - bottom + kh, (w - 1) * sw - left - right + kw,
                             layout)
    else:
        y_shape = _in_layout(n, w_shape[0], _out_size(h, kh, sh, top, bottom), _out_size(w, kw, sw, left, right),
                             layout)
    channel_axes = (0, 1, 2) if layout == "NHWC" else (0, 2, 3)

    def custom(name: str, shape: tuple, bprop=None) -> msops.Custom:
        prim = msops.Custom(f"{lib}:{name}", out_shape=_shape_of(shape), out_dtype=lambda a, *_: a,
                            func_type="aot", bprop=bprop)
        # A distinct attribute per geometry: MindSpore reuses the bprop graph of the first equal primitive.
        prim.add_prim_attr("conv_geometry", (*x_shape, *w_shape, *stride, *padding, transpose, *(act or ()),
                                             layout, constant_weights))
        return prim

    weights_grad = custom("DnnlConvBackwardWeights", tuple(w_shape))
    if transpose:
        forward = custom("DnnlConvForward", x_shape)

        def bprop(x, wt, params, out, dout):
            return forward(dout, wt, params), weights_grad(dout, x, params), msops.zeros_like(params)
        return custom("DnnlConvBackwardData", y_shape, bprop), geometry
    backward_data = custom("DnnlConvBackwardData", x_shape)
    if act is None:
        def bprop(x, wt, params, out, dout):
            return backward_data(dout, wt, params), weights_grad(x, dout, params), msops.zeros_like(params)
        return custom("DnnlConvForward", y_shape, bprop), geometry
    act_grad = custom("DnnlActBackward", y_shape)

    def act_bprop(x, wt, bias, params, out, dout):
        dz = act_grad(out, dout, params)
        dbias = dz.astype(ms.float32).sum(channel_axes).astype(bias.dtype)
        return backward_data(dz, wt, params), weights_grad(x, dz, params), dbias, msops.zeros_like(params)
    return custom("DnnlConvActForward", y_shape, act_bprop), geometry


@constexpr
def _conv_kernels(x_shape: tuple, w_shape: tuple, stride, padding, transpose: bool, dtype: ms.Type,
                  act: tuple[float, float] | None, layout: str, constant_weights: bool) -> tuple[msops.Custom, ms.Tensor]:
    """Checked shapes -> cached kernels; constexpr so it also runs inside ms.jit.

    Every argument is passed explicitly (no defaults) and the name is unique among the package's constexprs:
    a DCGAN-64 step once failed to compile with "Miss argument input for parameter:transpose" here."""
    if dtype not in FLOAT_DTYPES:
        raise TypeError(f"the oneDNN convolutions take float32 and float16 (computed in float32), got dtype {dtype}")
    stride, padding = pair(stride, "stride"), pads(padding)
    channels = w_shape[0] if transpose else w_shape[1]
    if len(x_shape) != 4 or len(w_shape) != 4 or _spatial(tuple(x_shape), layout)[1] != channels:
        shape = "(N, H, W, C)" if layout == "NHWC" else "(N, C, H, W)"
        raise ValueError(f"oneDNN conv{'_transpose' if transpose else ''}2d needs x {shape} with C={channels} "
                         f"({layout}) and a 4-d OIHW weight, got x {tuple(x_shape)} and weight {tuple(w_shape)}")
    return kernels(tuple(map(int, x_shape)), tuple(map(int, w_shape)), stride, padding, transpose, num_threads(),
                   act, layout, bool(constant_weights))


def conv2d(x: ms.Tensor, weight: ms.Tensor, stride: int | tuple[int, int], padding: int | tuple[int, ...],
           layout: str = "NCHW") -> ms.Tensor:
    """Conv2d of the batch x (NCHW, or NHWC with layout="NHWC") by OIHW weights (O, C, Kh, Kw); stride an int or
    (h, w), zero padding an int, (h, w) or (top, bottom, left, right)."""
    op, geometry = _conv_kernels(x.shape, weight.shape, stride, padding, False, x.dtype, None, layout, False)
    return op(x, weight, geometry)


def conv_transpose2d(x: ms.Tensor, weight: ms.Tensor, stride: int | tuple[int, int],
                     padding: int | tuple[int, ...]) -> ms.Tensor:
    """Conv2dTranspose of x (N, C_in, h, w) by weights (C_in, C_out, Kh, Kw): output (h-1)*s - pads + K per axis."""
    op, geometry = _conv_kernels(x.shape, weight.shape, stride, padding, True, x.dtype, None, "NCHW", False)
    return op(x, weight, geometry)


def conv2d_act(x: ms.Tensor, weight: ms.Tensor, bias: ms.Tensor, stride: int | tuple[int, int],
               padding: int | tuple[int, ...], negative_slope: float, clamp: float | None = None,
               layout: str = "NCHW", constant_weights: bool = False) -> ms.Tensor:
    """clamp(leaky_relu(conv2d(x, weight) + bias[channel])) as one oneDNN primitive (post-ops); bias (O,);
    negative_slope 0 is conv + bias + ReLU. Geometry and layout as conv2d. constant_weights=True (inference) keeps
    the weights in oneDNN's layout between calls and reorders them again only when their bytes change (compared on
    every call: correct, and cheaper than the reorder).

    The backward reads the activation's gradient from the output's sign; an output exactly at +-clamp counts
    as clamped (gradient 0), where the unfused op passes the gradient of a pre-activation exactly at +-clamp.
    """
    act = (check_negative_slope(negative_slope), math.inf if check_clamp(clamp) is None else clamp)
    op, geometry = _conv_kernels(x.shape, weight.shape, stride, padding, False, x.dtype, act, layout,
                                 constant_weights)
    return op(x, weight, bias, geometry)


@functools.lru_cache(maxsize=None)
def pool_kernel(x_shape: tuple[int, ...], kind: str, kernel: tuple[int, int], stride: tuple[int, int],
                padding: tuple[int, int, int, int], threads: int, layout: str) -> tuple[msops.Custom, ms.Tensor]:
    """(pooling primitive, geometry tensor) of a float32 batch, cached per shape (forward only: no bprop)."""
    lib = library_path()
    dnnl_info()
    if kind not in POOLS:
        raise ValueError(f"pooling kind {kind!r} is not one of {POOLS}")
    n, c, h, w = _spatial(x_shape, layout)
    (kh, kw), (sh, sw), (top, bottom, left, right) = kernel, stride, padding
    if max(top, bottom) >= kh or max(left, right) >= kw:
        raise ValueError(f"pooling padding {padding} must be smaller than the kernel {kernel} on each side")
    y_shape = _in_layout(n, c, _out_size(h, kh, sh, top, bottom), _out_size(w, kw, sw, left, right), layout)
    geometry = ms.Tensor(np.array([POOLS.index(kind), *kernel, *stride, *padding, threads, _layout_code(layout)],
                                  np.int32))
    prim = msops.Custom(f"{lib}:DnnlPoolForward", out_shape=_shape_of(y_shape), out_dtype=lambda a, *_: a,
                        func_type="aot")
    prim.add_prim_attr("pool_geometry", (*x_shape, kind, *kernel, *stride, *padding, layout))
    return prim, geometry


@constexpr
def _pool_kernel(x_shape: tuple, dtype: ms.Type, kind: str, kernel, stride, padding,
                 layout: str) -> tuple[msops.Custom, ms.Tensor]:
    """Checked arguments -> the cached pooling kernel; constexpr so it also runs inside ms.jit."""
    if dtype != ms.float32:
        raise TypeError(f"the oneDNN pooling takes float32, got dtype {dtype}")
    if len(x_shape) != 4:
        raise ValueError(f"oneDNN pooling needs a 4-d batch, got shape {tuple(x_shape)}")
    return pool_kernel(tuple(map(int, x_shape)), kind, pair(kernel, "kernel_size"), pair(stride, "stride"),
                       pads(padding), num_threads(), layout)


def pool2d(x: ms.Tensor, kind: str, kernel: int | tuple[int, int], stride: int | tuple[int, int],
           padding: int | tuple[int, ...] = 0, layout: str = "NCHW") -> ms.Tensor:
    """Max ("max") or average pooling of a float32 batch through oneDNN (inference: no gradient). "avg" divides
    by the window's pixels inside the input (PyTorch's count_include_pad=False), "avg_include_pad" by the whole
    window; max pooling pads with -inf. Geometry and layout as conv2d."""
    op, geometry = _pool_kernel(x.shape, x.dtype, kind, kernel, stride, padding, layout)
    return op(x, geometry)
