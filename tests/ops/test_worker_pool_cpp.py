"""ops/csrc/cpu/worker_pool.h: threads_for's rule and for_each_chunk's cover of [0, n), compiled with g++."""

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import ops

HEADER_DIR = Path(ops.__file__).parent / "csrc" / "cpu"
PER_THREAD = 1 << 16  # kMinElementsPerThread

C_API = r"""
#include "worker_pool.h"
extern "C" {
int64_t capi_threads_for(int64_t n, int64_t threads) { return lrelu::cpu::threads_for(n, threads); }
// counts[i] += 1 for every element fn sees; returns the number of calls, -1 if a chunk starts off a 16 boundary.
int64_t capi_cover(int64_t n, int64_t threads, int32_t* counts) {
  std::atomic<int64_t> calls{0}, misaligned{0};
  lrelu::cpu::for_each_chunk(n, threads, [&](int64_t start, int64_t len) {
    calls += 1;
    misaligned += start % 16 != 0;
    for (int64_t i = start; i < start + len; ++i) counts[i] += 1;
  });
  return misaligned ? -1 : calls.load();
}
}
"""


@pytest.fixture(scope="module")
def capi(tmp_path_factory) -> ctypes.CDLL:
    """The header compiled with -Wall -Werror into a shared library, once per module."""
    if shutil.which("g++") is None:
        pytest.fail("g++ is required to test ops/csrc/cpu/worker_pool.h")
    build = tmp_path_factory.mktemp("worker_pool_capi")
    (build / "capi.cc").write_text(C_API)
    library = build / "libworker_pool_capi.so"
    subprocess.run(["g++", "-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-pthread",
                    f"-I{HEADER_DIR}", str(build / "capi.cc"), "-o", str(library)], check=True)
    lib = ctypes.CDLL(str(library))
    lib.capi_threads_for.argtypes = [ctypes.c_int64, ctypes.c_int64]
    lib.capi_threads_for.restype = ctypes.c_int64
    lib.capi_cover.argtypes = [ctypes.c_int64, ctypes.c_int64, np.ctypeslib.ndpointer(np.int32, flags="C")]
    lib.capi_cover.restype = ctypes.c_int64
    return lib


@pytest.mark.parametrize("n, threads, expected", [
    (0, 4, 1), (1, 4, 1), (2 * PER_THREAD - 1, 4, 1), (2 * PER_THREAD, 4, 2), (3 * PER_THREAD + 5, 4, 3),
    (100 * PER_THREAD, 4, 4), (100 * PER_THREAD, 1, 1), (100 * PER_THREAD, 0, 1), (100 * PER_THREAD, -3, 1)])
def test_threads_for_is_one_per_64k_elements_within_1_to_threads(capi, n, threads, expected):
    assert capi.capi_threads_for(n, threads) == expected


@pytest.mark.parametrize("n", [0, 1, 17, PER_THREAD, 2 * PER_THREAD, 2 * PER_THREAD + 1, 2 * PER_THREAD + 15,
                               3 * PER_THREAD + 2, 4 * PER_THREAD + 3, 7 * PER_THREAD + 6])
@pytest.mark.parametrize("threads", [-1, 1, 2, 3, 4, 7])
def test_for_each_chunk_visits_every_element_once(capi, n, threads):
    """2 * 2^16 + 1 with 2 threads: n / 2 rounded down is a multiple of 16, and the last element was skipped."""
    counts = np.zeros(n + 1, np.int32)  # one guard element past the end
    calls = capi.capi_cover(n, threads, counts)
    assert calls != -1, "a chunk started off a 16-element boundary"
    assert calls <= capi.capi_threads_for(n, threads)  # one call per thread at most (none for n = 0)
    np.testing.assert_array_equal(counts[:n], 1)
    assert counts[n] == 0
