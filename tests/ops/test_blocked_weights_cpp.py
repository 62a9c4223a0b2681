"""blocked_weights.h's gather writes the same bytes as oneDNN's own reorder into the bf16 weight layouts oneDNN's
convolutions pick on this CPU (forward and backward-data, DCGAN's and other weight shapes).

A small C API over the header and MindSpore's oneDNN asks oneDNN for each convolution's bf16 weight layout, fills
it once by oneDNN's reorder and once by the gather from the same float32 OIHW weights (ties, subnormals, infinities,
signed zeros, a quiet NaN, random values), and returns both buffers.
"""
from __future__ import annotations

import ctypes
import shutil
import subprocess

import numpy as np
import pytest

from ops import build, onednn

C_API = r"""
#include <cstring>
#include "oneapi/dnnl/dnnl.hpp"
#include "blocked_weights.h"
using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;

// The bf16 weight layout of a convolution (o, i, k, k), stride s, padding p, on an nhwc batch of 8 at 16x16, for
// its forward or backward-data; 0 where the gather cannot fill it (not blocked, padded), else its inner blocks,
// with oneDNN's reorder of w in ref and the gather's in ours (bytes of both in *bytes).
extern "C" int capi_weights(int64_t o, int64_t i, int64_t k, int64_t s, int64_t p, int backward, const float* w,
                            uint16_t* ours, uint16_t* ref, int64_t capacity, int64_t* bytes) {
  engine eng(engine::kind::cpu, 0);
  stream st(eng);
  const int64_t size = 16, out = (size + 2 * p - k) / s + 1;
  const memory::desc src({8, i, size, size}, dt::bf16, tag::nhwc), dst({8, o, out, out}, dt::bf16, tag::nhwc);
  const memory::desc any({o, i, k, k}, dt::bf16, tag::any);
  auto fwd = convolution_forward::primitive_desc(eng, prop_kind::forward_training, algorithm::convolution_direct,
                                                 src, any, dst, {s, s}, {p, p}, {p, p});
  memory::desc chosen = fwd.weights_desc();
  if (backward) {
    chosen = convolution_backward_data::primitive_desc(eng, algorithm::convolution_direct, src, any, dst, {s, s},
                                                       {p, p}, {p, p}, fwd).weights_desc();
  }
  *bytes = static_cast<int64_t>(chosen.get_size());
  const std::optional<lrelu::cpu::BlockedLayout> l = lrelu::cpu::blocked_layout(chosen);
  if (!l || !lrelu::cpu::BlockedGather::fits(*l) || *bytes > capacity) return 0;
  memory plain(memory::desc({o, i, k, k}, dt::f32, tag::oihw), eng, const_cast<float*>(w)), theirs(chosen, eng, ref);
  reorder(plain, theirs).execute(st, plain, theirs);
  st.wait();
  lrelu::cpu::BlockedGather(*l).run(w, ours, 2);
  return l->nblks;
}
"""

# (O, I, kernel, stride, padding): DCGAN-32/64's D and G weights, and a 3x3 and a 1x1 convolution
SHAPES = [(128, 64, 4, 2, 1), (64, 32, 4, 2, 1), (256, 128, 4, 2, 1), (512, 256, 4, 2, 1), (32, 3, 4, 2, 1),
          (1, 128, 4, 1, 0), (64, 64, 3, 1, 1), (128, 256, 1, 1, 0)]


@pytest.fixture(scope="module")
def capi(tmp_path_factory) -> ctypes.CDLL:
    if not onednn.available():
        pytest.skip(f"the oneDNN kernels are unavailable: {onednn.unavailable_reason()}")
    if not onednn.cpu_isa().bf16:
        pytest.skip(f"oneDNN has no bfloat16 convolution on this CPU ({onednn.cpu_isa().name})")
    if shutil.which(build.compiler_name()) is None:
        pytest.fail(f"{build.compiler_name()} is required to build the kernels")
    tmp = tmp_path_factory.mktemp("blocked_weights")
    source, library, dnnl = tmp / "capi.cc", tmp / "capi.so", onednn.mindspore_dnnl()
    source.write_text(C_API)
    subprocess.run([build.compiler_name(), "-std=c++17", "-O2", "-shared", "-fPIC", "-pthread", "-march=native",
                    f"-I{build.CSRC / 'cpu'}", f"-I{onednn.headers()}", str(source), "-o", str(library),
                    f"-L{dnnl.parent}", "-l:libdnnl.so.3", f"-Wl,-rpath,{dnnl.parent}"], check=True)
    return ctypes.CDLL(str(library))


def weights(shape: tuple[int, ...]) -> np.ndarray:
    """float32 weights with bf16 ties and near-ties, subnormals, infinities, signed zeros and a quiet NaN."""
    rng = np.random.default_rng(0)
    w = rng.normal(0, 0.05, shape).astype(np.float32).ravel()
    bits = w.view(np.uint32)
    bits[::5] = (bits[::5] & 0xFFFF0000) | 0x8000  # exact ties
    bits[1::7] = (bits[1::7] & 0xFFFF0000) | 0x7FFF
    special = np.array([0x00000001, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x00800000, 0x3F808000],
                       np.uint32)
    bits[:special.size] = special[:bits.size]
    return w.reshape(shape)


@pytest.mark.parametrize("backward", [False, True], ids=["forward", "backward_data"])
def test_gather_equals_onednns_reorder(capi: ctypes.CDLL, backward: bool) -> None:
    filled = []
    for o, i, k, s, p in SHAPES:
        w = weights((o, i, k, k))
        capacity = 4 * w.size + 4096
        ours, ref = np.full(capacity // 2, 0x1111, np.uint16), np.full(capacity // 2, 0x2222, np.uint16)
        nbytes = ctypes.c_int64()
        ptr = lambda a: a.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
        blocks = capi.capi_weights(ctypes.c_int64(o), ctypes.c_int64(i), ctypes.c_int64(k), ctypes.c_int64(s),
                                   ctypes.c_int64(p), ctypes.c_int(int(backward)), ptr(w), ptr(ours), ptr(ref),
                                   ctypes.c_int64(capacity), ctypes.byref(nbytes))
        if blocks:
            n = nbytes.value // 2
            np.testing.assert_array_equal(ours[:n], ref[:n], err_msg=f"weights {(o, i, k, k)}, {blocks} inner blocks")
            filled.append(blocks)
    assert filled, "no convolution here took a blocked bf16 weight layout the gather can fill"
    if "amx" in onednn.cpu_isa().name:  # with avx512_core_bf16 alone oneDNN picks two-block layouts for these shapes
        assert max(filled) >= 3, "oneDNN's AMX bf16 kernels take VNNI weight layouts (three inner blocks)"
