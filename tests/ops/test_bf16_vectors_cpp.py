"""The bfloat16 vector paths of ops/csrc/cpu/kernel_common.h give the scalar rounding's bits, for every build
the kernels can have: 16-lane AVX-512, 8-lane AVX2, 8-lane F16C without AVX2 (lane by lane) and plain x86-64.

The kernels are built with -march=native, so a test of the operators exercises one of these paths only; here
a small C API over the header is compiled once per -march this CPU can execute and fed float32 bit patterns
(specials, ties, subnormals, NaN payloads, random bits), narrowed by store_v/store8 and Bf16Round::apply and
widened by load_v/load8, against bf16::round_bits (itself tested against ml_dtypes in test_bf16_kernels.py).
"""
from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from leaky_relu_cases import BF16

from ops import build

C_API = r"""
#include "kernel_common.h"
using namespace lrelu::cpu;
extern "C" int capi_bf16(const float* in, int64_t n, uint16_t* scalar, uint16_t* vec, uint16_t* vec8,
                         uint32_t* applied, uint32_t* widened) {
  for (int64_t i = 0; i < n; ++i) scalar[i] = bf16::round_bits(in[i]);
  bf16* v = reinterpret_cast<bf16*>(vec);
  bf16* v8 = reinterpret_cast<bf16*>(vec8);
  const bf16* s = reinterpret_cast<const bf16*>(scalar);
  float* a = reinterpret_cast<float*>(applied);
  float* w = reinterpret_cast<float*>(widened);
  int64_t i = 0;
  for (; i + LRELU_FV_LANES <= n; i += LRELU_FV_LANES) {
    store_v(v + i, load_v(in + i));
    store_v(a + i, Bf16Round::apply(load_v(in + i)));
    store_v(w + i, load_v(s + i));
  }
  for (; i < n; ++i) {
    v[i] = bf16(in[i]);
    a[i] = Bf16Round::apply(in[i]);
    w[i] = static_cast<float>(s[i]);
  }
  i = 0;
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8) store8(v8 + i, load8(in + i));
  for (int64_t j = 0; j + 8 <= n; j += 8) {  // load8 of bf16 widens exactly
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, load8(s + j));
    for (int k = 0; k < 8; ++k) {
      if (std::memcmp(&lanes[k], &w[j + k], 4) != 0) return -1;
    }
  }
#endif
  for (; i < n; ++i) v8[i] = bf16(in[i]);
  return LRELU_FV_LANES;
}
"""

# -march -> the /proc/cpuinfo flags it needs to run, and the vector width it gives the kernels
MARCHES = {"x86-64": (set(), 1), "ivybridge": ({"avx", "f16c"}, 8), "haswell": ({"avx2", "fma", "f16c"}, 8),
           "skylake-avx512": ({"avx512f", "avx512bw", "avx512dq", "avx512vl"}, 16)}


def cpu_flags() -> set[str]:
    with open("/proc/cpuinfo") as f:
        line = next((line for line in f if line.startswith("flags")), "flags:")
    return set(line.split(":", 1)[1].split())


def patterns() -> np.ndarray:
    """float32 bit patterns: every tie and near-tie around a few mantissas, specials, and random bits."""
    special = [0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x00008000, 0x00018000, 0x007FFFFF, 0x00800000,
               0x3F808000, 0x3F818000, 0x3F807FFF, 0x3F808001, 0x3FFFFFFF, 0x7F7F7FFF, 0x7F7F8000, 0x7F7FFFFF,
               0x7F800000, 0xFF800000, 0x7F800001, 0x7FC00000, 0x7FFFFFFF, 0xFFC12345, 0xFF800001]
    rng = np.random.default_rng(0)
    ties = (rng.integers(0, 1 << 16, 2000, dtype=np.uint32) << 16) | 0x8000
    bits = np.concatenate([np.array(special, np.uint32), ties, ties ^ 1,
                           rng.integers(0, 1 << 32, 20000, dtype=np.uint32)])
    return bits.astype(np.uint32).view(np.float32)


@pytest.mark.parametrize("march", list(MARCHES))
def test_vector_rounding_equals_the_scalar_rounding(march: str, tmp_path: Path) -> None:
    needs, lanes = MARCHES[march]
    if not needs <= cpu_flags():
        pytest.skip(f"this CPU cannot run -march={march} code (lacks {sorted(needs - cpu_flags())})")
    if shutil.which(build.compiler_name()) is None:
        pytest.fail(f"{build.compiler_name()} is required to build the kernels")
    source, library = tmp_path / "capi.cc", tmp_path / "capi.so"
    source.write_text(C_API)
    subprocess.run([build.compiler_name(), "-std=c++17", "-O2", "-shared", "-fPIC", "-pthread", f"-march={march}",
                    f"-I{build.CSRC / 'cpu'}", str(source), "-o", str(library)], check=True)
    lib = ctypes.CDLL(str(library))
    x = patterns()
    n = x.size
    scalar, vec, vec8 = (np.zeros(n, np.uint16) for _ in range(3))
    applied, widened = np.zeros(n, np.uint32), np.zeros(n, np.uint32)
    ptr = lambda a: a.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
    got_lanes = lib.capi_bf16(ptr(x), ctypes.c_int64(n), ptr(scalar), ptr(vec), ptr(vec8), ptr(applied),
                              ptr(widened))
    assert got_lanes == lanes
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(scalar, x.astype(BF16).view(np.uint16))  # the scalar rounding is ml_dtypes'
    np.testing.assert_array_equal(vec, scalar)
    np.testing.assert_array_equal(vec8, scalar)
    np.testing.assert_array_equal(widened, scalar.astype(np.uint32) << 16)
    np.testing.assert_array_equal(applied, scalar.astype(np.uint32) << 16)
