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
backward-weights) are each other's gradients. float32, float16 and bfloat16 tensors (each input on its own, as
amp casts them) are converted by the reorders. The compute type follows the activations x: bfloat16 x makes
bfloat16 convolutions (bf16 data, float32 accumulation; oneDNN picks AMX or AVX512-BF16 kernels where the CPU
has them, emulation or nothing elsewhere, see `cpu_isa`), whose weight gradient comes out in the weight's own
dtype (float32 master weights: float32 gradients) and whose float32 weights are rounded to bfloat16 inside the
kernel's reorder; every other dtype computes in float32. Conv2d, conv2d_act and `pool2d` (max or average
pooling, float32, forward only), conv_transpose2d and their gradients also take NHWC activations
(layout="NHWC"), which oneDNN computes in place of its blocked layouts: a network kept in NHWC (gan.metrics.inception)
never reorders them.
"""
from __future__ import annotations

import ctypes
import functools
import importlib.metadata
import logging
import math
from pathlib import Path
from typing import Callable, NamedTuple

import mindspore as ms
import numpy as np
from mindspore import ops as msops
from mindspore.ops import constexpr

from . import build
from ._custom import KERNEL_DTYPES
from .api import check_clamp, check_negative_slope, layout_code, num_threads

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


def build_with_onednn(stem: str, source: Path, headers_used: tuple[str, ...]) -> str:
    """A library of one C++ unit linked against MindSpore's oneDNN (built on first use, cached like the other
    kernels): the kernels here, and scripts/bench/bench_peak.cc. headers_used: the ops/csrc/cpu headers it includes."""
    include, lib = headers(), mindspore_dnnl()
    flags = (f"-I{include}", f"-L{lib.parent}", "-l:libdnnl.so.3", f"-Wl,-rpath,{lib.parent}", "-Wl,--no-undefined")
    sources = (source, *(build.CSRC / "cpu" / h for h in headers_used), include / "oneapi" / "dnnl" / "dnnl_version.h")
    return build.library_path(stem, (source,), sources, flags)


@functools.lru_cache(maxsize=None)
def library_path() -> str:
    """The compiled oneDNN kernel library."""
    return build_with_onednn("onednn_conv", SOURCE,
                             ("worker_pool.h", "col2im.h", "bfloat16.h", "blocked16.h", "blocked_weights.h",
                              "dnnl_pool.h"))


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


# dnnl_cpu_isa_t (oneapi/dnnl/dnnl_types.h): each ISA's bit mask contains those of the ISAs it extends.
CPU_ISAS = {0x0: "default", 0x1: "sse41", 0x3: "avx", 0x7: "avx2", 0xF: "avx2_vnni", 0x1F: "avx2_vnni_2",
            0x27: "avx512_core", 0x67: "avx512_core_vnni", 0xE7: "avx512_core_bf16", 0x1EF: "avx10_1_512",
            0xFEF: "avx10_1_512_amx", 0x1FEF: "avx10_1_512_amx_fp16", 0x201FF: "avx10_2_512",
            0x22FFF: "avx10_2_512_amx_2"}
BF16_ISA, BF16_DOT_ISA = 0x27, 0xE7  # avx512_core (bf16 emulated), avx512_core_bf16 (vdpbf16ps; AMX contains it)


class CpuIsa(NamedTuple):
    """The instruction set oneDNN dispatches to here ($ONEDNN_MAX_CPU_ISA lowers it) and what it means for
    bfloat16 convolutions: `bf16` whether oneDNN 3.10 has them at all (AVX-512 and later: on AVX2 it has none),
    `bf16_dot` whether they run on bf16 dot-product instructions (AVX512_BF16 or AMX-BF16) rather than an
    emulation (several times slower than float32 here)."""

    name: str
    bf16: bool
    bf16_dot: bool


@functools.lru_cache(maxsize=None)
def cpu_isa() -> CpuIsa:
    """oneDNN's effective CPU ISA (read once per process)."""
    lib = ctypes.CDLL(library_path())
    lib.LreluDnnlCpuIsa.restype = ctypes.c_int64
    isa = int(lib.LreluDnnlCpuIsa())
    return CpuIsa(CPU_ISAS.get(isa, hex(isa)), isa & BF16_ISA == BF16_ISA, isa & BF16_DOT_ISA == BF16_DOT_ISA)


def unavailable_reason() -> str | None:
    """Why the oneDNN kernels cannot run here (the headers missing, a failed build, a version mismatch), or None."""
    try:
        dnnl_info()
    except (RuntimeError, OSError) as err:
        return str(err)
    return None


def available() -> bool:
    """True when the oneDNN kernels build and load here (CPU with MindSpore's oneDNN and the headers)."""
    reason = unavailable_reason()
    if reason is not None:
        _log.info("oneDNN convolutions unavailable: %s", reason)
    return reason is None


def _shape_of(shape: tuple) -> Callable[..., list[int]]:
    """Custom out_shape: always `shape`."""
    return lambda *_: list(shape)


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


def _geometry(stride: tuple[int, int], padding: tuple[int, int, int, int], threads: int, slope: float,
              clamp: float, layouts: tuple[str, str], constant_weights: bool, bf16: bool) -> ms.Tensor:
    """The kernels' int32 geometry input {stride h/w, padding top/bottom/left/right, threads, slope, clamp,
    layout, constant_weights, compute}, the floats as float32 bits (an integer input, so amp never casts it),
    compute 1 for a bfloat16 primitive. `layouts` are the conv's (src, dst) layouts; the kernels' layout code is
    0 (both NCHW), 1 (both NHWC), 2 (src NCHW, dst NHWC) or 3 (src NHWC, dst NCHW)."""
    src, dst = map(layout_code, layouts)
    floats = np.array([slope, clamp], np.float32).view(np.int32)
    head = np.array([*stride, *padding, threads], np.int32)
    tail = np.array([src if src == dst else 2 + src, int(constant_weights), int(bf16)], np.int32)
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


class ConvDtypes(NamedTuple):
    """The dtypes of one convolution: of x, of the weight (its gradient gets it), of the output, and whether it
    computes in bfloat16 (bf16 data, float32 accumulation) rather than float32."""

    x: ms.Type
    w: ms.Type
    out: ms.Type
    bf16: bool


@functools.lru_cache(maxsize=None)
def kernels(x_shape: tuple[int, ...], w_shape: tuple[int, ...], stride: tuple[int, int],
            padding: tuple[int, int, int, int], transpose: bool, threads: int, act: tuple[float, float] | None,
            layouts: tuple[str, str], constant_weights: bool, dtypes: ConvDtypes) -> tuple[msops.Custom, ms.Tensor]:
    """(primitive with its bprop, geometry tensor) of a conv (or transposed conv) of x by w, cached per shape and
    dtypes (gradients in the dtype of what they differentiate).

    stride (h, w), padding (top, bottom, left, right); x and the output in `layouts` (each NCHW or NHWC), w OIHW
    (O, C, Kh, Kw).
    act=(slope, clamp) (Conv2d only): conv + bias + LeakyReLU (+ clamp, inf for none) as one primitive; its
    backward takes the activation's gradient from the output's sign, then the conv's backward primitives.
    constant_weights (Conv2d forward): keep the weights' reordered copy while their bytes do not change.
    """
    lib = library_path()
    dnnl_info()
    layout, out_layout = layouts
    geometry = _geometry(stride, padding, threads, *(act or (0.0, math.inf)), layouts[::-1] if transpose else layouts,
                         constant_weights, dtypes.bf16)
    n, _, h, w = _spatial(x_shape, layout)
    kh, kw = w_shape[2:]
    (sh, sw), (top, bottom, left, right) = stride, padding
    if transpose:  # x is the conv's dst (N, C_in, h, w); y its src (N, C_out, H, W)
        y_shape = _in_layout(n, w_shape[1], (h - 1) * sh - top - bottom + kh, (w - 1) * sw - left - right + kw,
                             out_layout)
    else:
        y_shape = _in_layout(n, w_shape[0], _out_size(h, kh, sh, top, bottom), _out_size(w, kw, sw, left, right),
                             out_layout)
    channel_axes = (0, 1, 2) if out_layout == "NHWC" else (0, 2, 3)

    def custom(name: str, shape: tuple, dtype: ms.Type, bprop=None) -> msops.Custom:
        prim = msops.Custom(f"{lib}:{name}", out_shape=_shape_of(shape), out_dtype=lambda *_: dtype,
                            func_type="aot", bprop=bprop)
        # A distinct attribute per geometry: MindSpore reuses the bprop graph of the first equal primitive.
        prim.add_prim_attr("conv_geometry", (*x_shape, *w_shape, *stride, *padding, transpose, *(act or ()),
                                             *layouts, constant_weights, *map(str, dtypes)))
        return prim

    weights_grad = custom("DnnlConvBackwardWeights", tuple(w_shape), dtypes.w)
    if transpose:
        forward = custom("DnnlConvForward", x_shape, dtypes.x)

        def bprop(x, wt, params, out, dout):
            return forward(dout, wt, params), weights_grad(dout, x, params), msops.zeros_like(params)
        return custom("DnnlConvBackwardData", y_shape, dtypes.out, bprop), geometry
    backward_data = custom("DnnlConvBackwardData", x_shape, dtypes.x)
    if act is None:
        def bprop(x, wt, params, out, dout):
            return backward_data(dout, wt, params), weights_grad(x, dout, params), msops.zeros_like(params)
        return custom("DnnlConvForward", y_shape, dtypes.out, bprop), geometry
    act_grad = custom("DnnlActBackward", y_shape, dtypes.out)

    def act_bprop(x, wt, bias, params, out, dout):
        dz = act_grad(out, dout, params)
        dbias = dz.astype(ms.float32).sum(channel_axes).astype(bias.dtype)
        return backward_data(dz, wt, params), weights_grad(x, dz, params), dbias, msops.zeros_like(params)
    return custom("DnnlConvActForward", y_shape, dtypes.out, act_bprop), geometry


@constexpr
def _conv_kernels(x_shape: tuple, w_shape: tuple, stride, padding, transpose: bool, dtype: ms.Type,
                  w_dtype: ms.Type, out_dtype: ms.Type | None, compute: ms.Type | None,
                  act: tuple[float, float] | None, layout: str, out_layout: str | None,
                  constant_weights: bool) -> tuple[msops.Custom, ms.Tensor]:
    """Checked shapes and dtypes -> cached kernels; constexpr so it also runs inside ms.jit.

    Every argument is passed explicitly (no defaults) and the name is unique among the package's constexprs:
    a DCGAN-64 step once failed to compile with "Miss argument input for parameter:transpose" here."""
    for name, t in (("x", dtype), ("weight", w_dtype), ("out_dtype", out_dtype or dtype)):
        if t not in KERNEL_DTYPES:
            raise TypeError(f"the oneDNN convolutions take float32, float16 and bfloat16 tensors, got {name} "
                            f"dtype {t}")
    if compute not in (None, ms.float32, ms.bfloat16):
        raise TypeError(f"the oneDNN convolutions compute in float32 or bfloat16, got compute={compute}")
    bf16 = compute == ms.bfloat16 or (compute is None and dtype == ms.bfloat16)
    if bf16 and not cpu_isa().bf16:
        raise RuntimeError(f"oneDNN has no bfloat16 convolution on this CPU (instruction set {cpu_isa().name}; "
                           f"it needs AVX-512, natively AVX512_BF16 or AMX-BF16): use float32 tensors")
    stride, padding = pair(stride, "stride"), pads(padding)
    channels = w_shape[0] if transpose else w_shape[1]
    if len(x_shape) != 4 or len(w_shape) != 4 or _spatial(tuple(x_shape), layout)[1] != channels:
        shape = "(N, H, W, C)" if layout == "NHWC" else "(N, C, H, W)"
        raise ValueError(f"oneDNN conv{'_transpose' if transpose else ''}2d needs x {shape} with C={channels} "
                         f"({layout}) and a 4-d OIHW weight, got x {tuple(x_shape)} and weight {tuple(w_shape)}")
    layouts = (layout, out_layout or layout)
    for value in layouts:
        layout_code(value)
    return kernels(tuple(map(int, x_shape)), tuple(map(int, w_shape)), stride, padding, transpose, num_threads(),
                   act, layouts, bool(constant_weights), ConvDtypes(dtype, w_dtype, out_dtype or dtype, bf16))


def conv2d(x: ms.Tensor, weight: ms.Tensor, stride: int | tuple[int, int], padding: int | tuple[int, ...],
           layout: str = "NCHW", *, compute: ms.Type | None = None, out_dtype: ms.Type | None = None,
           out_layout: str | None = None) -> ms.Tensor:
    """Conv2d of the batch x (NCHW, or NHWC with layout="NHWC") by OIHW weights (O, C, Kh, Kw); stride an int or
    (h, w), zero padding an int, (h, w) or (top, bottom, left, right).

    compute: ms.bfloat16 or ms.float32 (None: bfloat16 for bfloat16 x, else float32); out_dtype: the output's
    dtype (None: x's). Any x and weight dtype goes with either: the kernel's reorders convert them. out_layout: the
    output's layout (None: x's), e.g. images in NCHW into a network that keeps its activations in NHWC."""
    op, geometry = _conv_kernels(x.shape, weight.shape, stride, padding, False, x.dtype, weight.dtype, out_dtype,
                                 compute, None, layout, out_layout, False)
    return op(x, weight, geometry)


def conv_transpose2d(x: ms.Tensor, weight: ms.Tensor, stride: int | tuple[int, int], padding: int | tuple[int, ...],
                     layout: str = "NCHW", *, compute: ms.Type | None = None,
                     out_dtype: ms.Type | None = None, out_layout: str | None = None) -> ms.Tensor:
    """Conv2dTranspose of x (N, C_in, h, w), or (N, h, w, C_in) with layout="NHWC", by weights (C_in, C_out, Kh, Kw):
    output (h-1)*s - pads + K per axis, in out_layout (None: x's); compute and out_dtype as conv2d's."""
    op, geometry = _conv_kernels(x.shape, weight.shape, stride, padding, True, x.dtype, weight.dtype, out_dtype,
                                 compute, None, layout, out_layout, False)
    return op(x, weight, geometry)


def conv2d_act(x: ms.Tensor, weight: ms.Tensor, bias: ms.Tensor, stride: int | tuple[int, int],
               padding: int | tuple[int, ...], negative_slope: float, clamp: float | None = None,
               layout: str = "NCHW", constant_weights: bool = False, *, compute: ms.Type | None = None,
               out_dtype: ms.Type | None = None, out_layout: str | None = None) -> ms.Tensor:
    """clamp(leaky_relu(conv2d(x, weight) + bias[channel])) as one oneDNN primitive (post-ops); bias (O,);
    negative_slope 0 is conv + bias + ReLU. Geometry, layout, compute, out_dtype and out_layout as conv2d's.
    constant_weights=True (inference) keeps the weights in oneDNN's layout between calls and reorders them again
    only when their bytes change (compared on every call: correct, and cheaper than the reorder).

    The backward reads the activation's gradient from the output's sign; an output exactly at +-clamp counts
    as clamped (gradient 0), where the unfused op passes the gradient of a pre-activation exactly at +-clamp.
    """
    act = (check_negative_slope(negative_slope), math.inf if check_clamp(clamp) is None else clamp)
    op, geometry = _conv_kernels(x.shape, weight.shape, stride, padding, False, x.dtype, weight.dtype, out_dtype,
                                 compute, act, layout, out_layout, constant_weights)
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
    geometry = ms.Tensor(np.array([POOLS.index(kind), *kernel, *stride, *padding, threads, layout_code(layout)],
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
