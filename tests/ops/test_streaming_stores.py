"""The streaming-store path of the element-wise CPU kernels (kernel_common.h map_elements): float32 outputs of
at least LreluStreamMinBytes are written with 64-byte non-temporal stores after a scalar peel up to the first
64-byte boundary. MindSpore allocates aligned outputs, so these tests call the kernels' C entry points
directly on numpy views at unaligned offsets, with odd lengths and two worker threads (every tile peels), and
compare bit for bit with the numpy reference, forward and backward, for every kind that streams."""
import ctypes

import numpy as np
import pytest
from leaky_relu_cases import assert_bitwise, boundary_values

from ops import build
from ops import reference as ref

INF = float("inf")


# The library as this CPU's build makes it, and the same sources built without AVX-512 (LRELU_CXXFLAGS), so the
# 8-lane kernels, the ones a CPU without AVX-512 runs, are checked on every machine (a second build: ~30 s, once).
BUILDS = {"native": "", "no_avx512": "-mno-avx512f"}
# The extensions LreluBuildIsa can report (ops/csrc/cpu/activations.cc).
REPORTED = {"sse4.2", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512vbmi", "avx512vnni",
            "avx512bf16"}


@pytest.fixture(scope="module", params=["native", pytest.param("no_avx512", marks=pytest.mark.slow)])
def lib(request):
    """The kernel library of one BUILDS entry, with its extra flags kept in the environment while it is used."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(build.FLAGS_ENV, BUILDS[request.param])
        build.library_path.cache_clear()
        try:
            library = ctypes.CDLL(build.library_path())
        finally:
            build.library_path.cache_clear()
        library.LreluStreamMinBytes.restype = ctypes.c_int64
        library.LreluBuildIsa.restype = ctypes.c_char_p
        yield library


@pytest.fixture(scope="module")
def n(lib):
    """An odd element count just above the streaming threshold (a size that streams where the build can)."""
    min_bytes = lib.LreluStreamMinBytes()
    return (min_bytes if min_bytes > 0 else 32 << 20) // 4 + 37


def scalars(slope=0.2, clamp=INF, threads=2):
    """An ActParams as the kernels read it: int32 bit patterns of (slope, clamp, threads, lower, upper)."""
    return np.array([slope, clamp, threads, 0.125, 1 / 3], np.float32).view(np.int32)


def run(lib, entry: str, *arrays: np.ndarray) -> None:
    """Call a kernel entry (nparam, params, ndims, shapes, dtypes, stream, extra) on numpy arrays (outputs last)."""
    count = len(arrays)
    shapes = [(ctypes.c_int64 * a.ndim)(*a.shape) for a in arrays]
    status = getattr(lib, entry)(
        count, (ctypes.c_void_p * count)(*[a.ctypes.data for a in arrays]),
        (ctypes.c_int * count)(*[a.ndim for a in arrays]),
        (ctypes.POINTER(ctypes.c_int64) * count)(*[ctypes.cast(s, ctypes.POINTER(ctypes.c_int64)) for s in shapes]),
        (ctypes.c_char_p * count)(*[str(a.dtype).encode() for a in arrays]), None, None)
    assert status == 0, f"{entry} returned {status}"


def at_offset(values: np.ndarray, offset: int) -> np.ndarray:
    """A copy of values in a buffer starting `offset` floats past a 64-byte boundary."""
    buf = np.empty(values.size + 32, np.float32)
    shift = (-buf.ctypes.data % 64) // 4 + offset
    view = buf[shift:shift + values.size]
    view[...] = values
    return view


def inputs(n: int, seed: int) -> np.ndarray:
    """Normal values (ELU's curved range) with the boundary values at both ends and around the middle."""
    x = (np.random.default_rng(seed).standard_normal(n) * 4).astype(np.float32)
    special = boundary_values(np.float32)
    for at in (0, n // 2 - len(special) // 2, n - len(special)):
        x[at:at + len(special)] = special
    return x


# entry, inputs after x ("dy" or a weight), scalars, reference(x, dy)
CASES = {
    "leaky_relu select": ("LeakyReluForwardSelect", (), scalars(0.2), lambda x, dy: ref.forward(x, 0.2)),
    "leaky_relu maxmin clamp": ("LeakyReluForwardMaxMin", (), scalars(0.2, 6.0),
                                lambda x, dy: ref.forward(x, 0.2, 6.0, formulation="maxmin")),
    "leaky_relu backward clamp": ("LeakyReluBackward", ("dy",), scalars(0.2, 6.0),
                                  lambda x, dy: ref.backward(x, dy, 0.2, 6.0)),
    "prelu": ("PreluForward", ("weight",), scalars(), lambda x, dy: ref.prelu_forward(x, np.float32([0.25]))),
    "elu": ("EluForward", (), scalars(1.0), lambda x, dy: ref.elu_forward(x, 1.0)),
    "elu clamp": ("EluForward", (), scalars(1.5, 0.75), lambda x, dy: ref.elu_forward(x, 1.5, 0.75)),
    "elu backward": ("EluBackward", ("dy",), scalars(1.0), lambda x, dy: ref.elu_backward(x, dy, 1.0)),
    "elu backward clamp": ("EluBackward", ("dy",), scalars(1.5, 0.75),
                           lambda x, dy: ref.elu_backward(x, dy, 1.5, 0.75)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_streamed_output_is_bitwise_the_reference(lib, n, case):
    entry, extra, params, expected_of = CASES[case]
    x = inputs(n, seed=0)
    dy = inputs(n, seed=1)
    extras = {"dy": at_offset(dy, 5), "weight": np.float32([0.25])}
    out = at_offset(np.full(n, np.nan, np.float32), 13)  # 13 floats past a line: a 3-float peel
    run(lib, entry, at_offset(x, 3), *[extras[e] for e in extra], params, out)
    assert_bitwise(out, expected_of(x, dy))


def test_this_build_streams_where_it_has_avx512(lib):
    """The path above is the streaming one exactly where the library has AVX-512, as the library reports it (the
    macros it was compiled with), and those are the extensions the compiler enables for the build's flags, so no
    extension this CPU has is left out (g++ 12 on Zen 5 lists AVX-512 beside -march=znver3)."""
    built = set(lib.LreluBuildIsa().decode().split())
    cxx = build.compiler()
    assert built == build.enabled_extensions(cxx, build.compile_flags(cxx)) & REPORTED
    assert (lib.LreluStreamMinBytes() == 32 << 20) == ("avx512f" in built)
    if build.extra_flags() == ("-mno-avx512f",):
        assert not built & {"avx512f", "avx512bw", "avx512vl"}
