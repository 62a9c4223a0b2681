"""ops/tiling.py mirrors ops/csrc/tiling.h exactly: both are run on the same random inputs and compared.

The header is compiled once per test session (g++) into a small ctypes-loadable library.
"""

import ctypes
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ops import tiling

HEADER = Path(tiling.__file__).parent / "csrc" / "tiling.h"

C_API = r"""
#include "tiling.h"
extern "C" {
const char* capi_plan(const int64_t* in, double fraction, int64_t* out) {
  const lrelu::TilingParams p = {in[0], in[1], in[2], fraction, in[3], in[4], in[5], in[6]};
  const lrelu::TilingPlan plan = lrelu::plan_tiling(p);
  const int64_t fields[6] = {plan.n, plan.tile_len, plan.used_cores, plan.total_tiles,
                             plan.base_tiles, plan.extra_tiles};
  for (int i = 0; i < 6; ++i) out[i] = fields[i];
  return lrelu::tiling_error(p);
}
void capi_core_range(const int64_t* plan_fields, int64_t core, int64_t* out) {
  const lrelu::TilingPlan plan = {plan_fields[0], plan_fields[1], plan_fields[2],
                                  plan_fields[3], plan_fields[4], plan_fields[5]};
  const lrelu::CoreRange r = lrelu::core_range(plan, core);
  out[0] = r.start; out[1] = r.end; out[2] = r.full_tiles; out[3] = r.tail_len;
}
int64_t capi_parse_cache_size(const char* text) { return lrelu::parse_cache_size(text); }
int64_t capi_cpu_default_buffer_bytes() { return lrelu::cpu_default_buffer_bytes(); }
}
"""

I64 = ctypes.c_int64
I64P = ctypes.POINTER(ctypes.c_int64)


@pytest.fixture(scope="session")
def capi(tmp_path_factory) -> ctypes.CDLL:
    """The header compiled with -Wall -Werror into a shared library, once per session."""
    if shutil.which("g++") is None:
        pytest.fail("g++ is required to compare ops/csrc/tiling.h with ops/tiling.py")
    build = tmp_path_factory.mktemp("tiling_capi")
    source = build / "capi.cc"
    source.write_text(C_API)
    library = build / "libtiling_capi.so"
    subprocess.run(["g++", "-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC",
                    f"-I{HEADER.parent}", str(source), "-o", str(library)], check=True)
    lib = ctypes.CDLL(str(library))
    lib.capi_plan.argtypes = [I64P, ctypes.c_double, I64P]
    lib.capi_plan.restype = ctypes.c_char_p
    lib.capi_core_range.argtypes = [I64P, I64, I64P]
    lib.capi_parse_cache_size.argtypes = [ctypes.c_char_p]
    lib.capi_parse_cache_size.restype = I64
    lib.capi_cpu_default_buffer_bytes.restype = I64
    return lib


def cpp_plan(lib: ctypes.CDLL, p: tiling.TilingParams) -> tuple[tuple[int, ...], str | None]:
    """The C++ plan's fields and its error message (None when valid)."""
    ints = (I64 * 7)(p.n, p.elem_size, p.buffer_bytes, p.align_bytes, p.cores, p.buffers, p.live_tensors)
    out = (I64 * 6)()
    error = lib.capi_plan(ints, p.usable_fraction, out)
    return tuple(out), None if error is None else error.decode()


def cpp_core_range(lib: ctypes.CDLL, plan_fields: tuple[int, ...], core: int) -> tuple[int, ...]:
    """The C++ range of one core."""
    out = (I64 * 4)()
    lib.capi_core_range((I64 * 6)(*plan_fields), core, out)
    return tuple(out)


# Parameters like real ones (mostly valid), and wild ones (mostly invalid), within the header's int64 range.
realistic_params = st.integers(0, 3).flatmap(lambda log_elem: st.builds(
    tiling.TilingParams,
    n=st.one_of(st.integers(0, 5000), st.integers(0, 2**40)),
    elem_size=st.just(1 << log_elem),
    buffer_bytes=st.integers(1024, 4 << 20),
    usable_fraction=st.floats(0.01, 1.0),
    align_bytes=st.sampled_from([1, 4, 16, 32, 64]).map(lambda k: k << log_elem),
    cores=st.integers(1, 64),
    buffers=st.integers(1, 4),
    live_tensors=st.integers(1, 4),
))
wild_params = st.builds(
    tiling.TilingParams,
    n=st.integers(-2, 2**40),
    elem_size=st.integers(-1, 70),
    buffer_bytes=st.integers(-1, 2**41),
    usable_fraction=st.floats(allow_nan=True, allow_infinity=True),
    align_bytes=st.integers(-1, 2**21),
    cores=st.integers(0, 2**31),
    buffers=st.integers(0, 66),
    live_tensors=st.integers(0, 66),
)
any_params = st.one_of(realistic_params, wild_params)


@settings(max_examples=1500, deadline=None)
@given(any_params, st.data())
def test_cpp_and_python_plans_are_identical(capi: ctypes.CDLL, p: tiling.TilingParams, data) -> None:
    fields, error = cpp_plan(capi, p)
    assert error == tiling.tiling_error(p)
    if error is not None:
        assert fields == (0,) * 6  # the header's error convention: tile_len 0
        return
    plan = tiling.plan_tiling(p)
    assert fields == (plan.n, plan.tile_len, plan.used_cores, plan.total_tiles, plan.base_tiles,
                      plan.extra_tiles)
    cores = {0, plan.used_cores - 1, plan.used_cores, plan.used_cores + 3,
             data.draw(st.integers(0, max(plan.used_cores - 1, 0)))}
    for core in sorted(c for c in cores if c >= 0):
        r = tiling.core_range(plan, core)
        assert cpp_core_range(capi, fields, core) == (r.start, r.end, r.full_tiles, r.tail_len)


def test_cpp_negative_core_is_idle(capi: ctypes.CDLL) -> None:
    plan = tiling.plan_tiling(tiling.TilingParams(n=1000, elem_size=4, buffer_bytes=4096, cores=4))
    fields = (plan.n, plan.tile_len, plan.used_cores, plan.total_tiles, plan.base_tiles, plan.extra_tiles)
    assert cpp_core_range(capi, fields, -1) == (1000, 1000, 0, 0)


@pytest.mark.parametrize("text", ["2048K\n", "1M", "512", "3G", "", "K", "x1K"])
def test_cpp_and_python_parse_cache_size_agree(capi: ctypes.CDLL, text: str) -> None:
    assert capi.capi_parse_cache_size(text.encode()) == tiling.parse_cache_size(text)


def test_cpp_and_python_cpu_default_buffer_agree(capi: ctypes.CDLL) -> None:
    assert capi.capi_cpu_default_buffer_bytes() == tiling.cpu_default_buffer_bytes()
