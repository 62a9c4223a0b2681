"""Conv2d and Conv2dTranspose through oneDNN's convolution primitives (ops/csrc/cpu/onednn_conv.cc), CPU only.

Which oneDNN: the one MindSpore 2.10 ships and loads itself (`mindspore/lib/libdnnl.so.3`, oneDNN 3.10.1,
a threadpool build). The kernel library links that file by path (rpath), so the process holds one library
with the SONAME libdnnl.so.3 and the kernels cannot bind to another copy. It compiles with the headers of
the `onednn-devel` package (pinned in pyproject.toml, extra `onednn`): oneDNN keeps its C API backward
compatible within a major version and the C++ API is an inline wrapper over it, so headers of an older 3.x
release work with the newer library; `dnnl_info()` checks that at load time and reports the library's file.
Install the headers with `pip install --no-deps onednn-devel==2025.3.0`: the package's own dependency
`onednn` is a second (SYCL) libdnnl.so.3 with about 1 GB of Intel runtimes that nothing here loads.

`conv2d(x, w, s, p)` is a Conv2d with OIHW weights (O, C, K, K); `conv_transpose2d(x, w, s, p)` is its
adjoint with weights (C_in, C_out, K, K), as nn.Conv2dTranspose stores them; `conv2d_act` fuses bias +
LeakyReLU (+ clamp) into the Conv2d. Each is differentiable in its tensors: the three primitives (forward,
backward-data, backward-weights) are each other's gradients. float32, float16 and bfloat16 tensors (each input
on its own, as amp casts them) are converted by the reorders. The compute type follows the activations x:
bfloat16 x makes bfloat16 convolutions (bf16 data, float32 accumulation; oneDNN picks AMX or AVX512-BF16
kernels where the CPU has them, emulation or nothing elsewhere, see `cpu_isa`), whose weight gradient comes
out in the weight's own dtype (float32 master weights: float32 gradients) and whose float32 weights are rounded
to bfloat16 inside the kernel's reorder; every other dtype computes in float32.
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
from .api import check_clamp, check_negative_slope, num_threads
from .im2col import check_geometry, conv_output_size

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
    kernels): the kernels here, and scripts/bench_peak.cc. headers_used: the ops/csrc/cpu headers it includes."""
    include, lib = headers(), mindspore_dnnl()
    flags = (f"-I{include}", f"-L{lib.parent}", "-l:libdnnl.so.3", f"-Wl,-rpath,{lib.parent}", "-Wl,--no-undefined")
    sources = (source, *(build.CSRC / "cpu" / h for h in headers_used), include / "oneapi" / "dnnl" / "dnnl_version.h")
    return build.library_path(stem, (source,), sources, flags)


@functools.lru_cache(maxsize=None)
def library_path() -> str:
    """The compiled oneDNN kernel library."""
    return build_with_onednn("onednn_conv", SOURCE, ("worker_pool.h", "col2im.h", "bfloat16.h", "dnnl_pool.h"))


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


def _geometry(stride: int, padding: int, threads: int, slope: float, clamp: float, bf16: bool) -> ms.Tensor:
    """The kernels' int32 geometry input {stride, padding, threads, slope, clamp, compute}, the floats as float32
    bits (an integer input, so amp never casts it), compute 1 for a bfloat16 primitive."""
    floats = np.array([slope, clamp], np.float32).view(np.int32)
    return ms.Tensor(np.concatenate([np.array([stride, padding, threads], np.int32), floats,
                                     np.array([int(bf16)], np.int32)]))


class ConvDtypes(NamedTuple):
    """The dtypes of one convolution: of x, of the weight (its gradient gets it), of the output, and whether it
    computes in bfloat16 (bf16 data, float32 accumulation) rather than float32."""

    x: ms.Type
    w: ms.Type
    out: ms.Type
    bf16: bool


@functools.lru_cache(maxsize=None)
def kernels(x_shape: tuple[int, ...], w_shape: tuple[int, ...], stride: int, padding: int, transpose: bool,
            threads: int, act: tuple[float, float] | None, dtypes: ConvDtypes) -> tuple[msops.Custom, ms.Tensor]:
    """(primitive with its bprop, geometry tensor) of a conv (or transposed conv) of x by w, cached per shape and
    dtypes (gradients in the dtype of what they differentiate).

    act=(slope, clamp) (Conv2d only): conv + bias + LeakyReLU (+ clamp, inf for none) as one primitive; its
    backward takes the activation's gradient from the output's sign, then the conv's backward primitives.
    """
    lib = library_path()
    dnnl_info()
    geometry = _geometry(stride, padding, threads, *(act or (0.0, math.inf)), dtypes.bf16)
    n, _, h, w = x_shape
    k = w_shape[2]
    if transpose:  # x is the conv's dst (N, C_in, h, w); y its src (N, C_out, H, W)
        y_shape = (n, w_shape[1], (h - 1) * stride - 2 * padding + k, (w - 1) * stride - 2 * padding + k)
    else:
        y_shape = (n, w_shape[0], conv_output_size(h, k, stride, padding), conv_output_size(w, k, stride, padding))

    def custom(name: str, shape: tuple, dtype: ms.Type, bprop=None) -> msops.Custom:
        prim = msops.Custom(f"{lib}:{name}", out_shape=_shape_of(shape), out_dtype=lambda *_: dtype,
                            func_type="aot", bprop=bprop)
        # A distinct attribute per geometry: MindSpore reuses the bprop graph of the first equal primitive.
        prim.add_prim_attr("conv_geometry", (*x_shape, *w_shape, stride, padding, transpose, *(act or ()),
                                             *map(str, dtypes)))
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
        dbias = dz.astype(ms.float32).sum((0, 2, 3)).astype(bias.dtype)
        return backward_data(dz, wt, params), weights_grad(x, dz, params), dbias, msops.zeros_like(params)
    return custom("DnnlConvActForward", y_shape, dtypes.out, act_bprop), geometry


@constexpr
def _conv_kernels(x_shape: tuple, w_shape: tuple, stride: int, padding: int, transpose: bool, dtype: ms.Type,
                  w_dtype: ms.Type, out_dtype: ms.Type | None, compute: ms.Type | None,
                  act: tuple[float, float] | None) -> tuple[msops.Custom, ms.Tensor]:
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
    check_geometry(w_shape[2] if len(w_shape) == 4 else 1, stride, padding)
    channels = w_shape[0] if transpose else w_shape[1]
    if len(x_shape) != 4 or len(w_shape) != 4 or x_shape[1] != channels or w_shape[2] != w_shape[3]:
        raise ValueError(f"oneDNN conv{'_transpose' if transpose else ''}2d needs x (N, {channels}, H, W) and a "
                         f"square 4-d weight, got x {tuple(x_shape)} and weight {tuple(w_shape)}")
    return kernels(tuple(map(int, x_shape)), tuple(map(int, w_shape)), stride, padding, transpose, num_threads(),
                   act, ConvDtypes(dtype, w_dtype, out_dtype or dtype, bf16))


def conv2d(x: ms.Tensor, weight: ms.Tensor, stride: int, padding: int, *, compute: ms.Type | None = None,
           out_dtype: ms.Type | None = None) -> ms.Tensor:
    """Conv2d of the NCHW batch x by OIHW weights (O, C, K, K), square stride and zero padding.

    compute: ms.bfloat16 or ms.float32 (None: bfloat16 for bfloat16 x, else float32); out_dtype: the output's
    dtype (None: x's). Any x and weight dtype goes with either: the kernel's reorders convert them."""
    op, geometry = _conv_kernels(x.shape, weight.shape, stride, padding, False, x.dtype, weight.dtype, out_dtype,
                                 compute, None)
    return op(x, weight, geometry)


def conv_transpose2d(x: ms.Tensor, weight: ms.Tensor, stride: int, padding: int, *, compute: ms.Type | None = None,
                     out_dtype: ms.Type | None = None) -> ms.Tensor:
    """Conv2dTranspose of x (N, C_in, h, w) by weights (C_in, C_out, K, K): output (h-1)*s - 2p + K per axis;
    compute and out_dtype as conv2d's."""
    op, geometry = _conv_kernels(x.shape, weight.shape, stride, padding, True, x.dtype, weight.dtype, out_dtype,
                                 compute, None)
    return op(x, weight, geometry)


def conv2d_act(x: ms.Tensor, weight: ms.Tensor, bias: ms.Tensor, stride: int, padding: int, negative_slope: float,
               clamp: float | None = None, *, compute: ms.Type | None = None,
               out_dtype: ms.Type | None = None) -> ms.Tensor:
    """clamp(leaky_relu(conv2d(x, weight) + bias[channel])) as one oneDNN primitive (post-ops); bias (O,);
    compute and out_dtype as conv2d's.

    The backward reads the activation's gradient from the output's sign; an output exactly at +-clamp counts
    as clamped (gradient 0), where the unfused op passes the gradient of a pre-activation exactly at +-clamp.
    """
    act = (check_negative_slope(negative_slope), math.inf if check_clamp(clamp) is None else clamp)
    op, geometry = _conv_kernels(x.shape, weight.shape, stride, padding, False, x.dtype, weight.dtype, out_dtype,
                                 compute, act)
    return op(x, weight, bias, geometry)
