// Quantised LeakyReLU CPU kernel for MindSpore `ops.Custom(func_type="aot")`: int8 and uint8, per-tensor
// scale and zero point, with the semantics of ONNX Runtime's com.microsoft.QLinearLeakyRelu.
//
// A 256-entry table is built from the parameters, once per call, in float32 and in this order:
//   x   = in_scale * float(int(code) - int(in_zp))           one rounding
//   y   = x >= 0 ? x : slope * x                               one rounding
//   q   = clamp(y / out_scale, qmin - out_zp, qmax - out_zp)   true division, one rounding
//   out = round_half_to_even(q) + out_zp                       exact (q is clamped to integers' range)
// then every element is looked up in it. The rounding mode is the C library's default (to nearest even)
// and nothing is contracted into fused multiply-adds (three separate operations).
//
// The lookup runs over the shared tiling plan; with AVX-512 VBMI a 64-byte block takes two two-table
// byte permutations (128 entries each) and a blend on the code's top bit, otherwise a scalar loop.
//
// Scalars travel as an int32 tensor of float32 bit patterns (ops.api.pack_scalars):
// {slope, in_scale, in_zero_point, out_scale, out_zero_point, threads}; zero points are integers in the
// dtype's range, exactly representable in float32. The Python API validates them.
#include <cmath>
#include <cstdint>
#include <cstring>
#if defined(__AVX512VBMI__)
#include <immintrin.h>
#endif

#include "kernel_common.h"

namespace {

using namespace lrelu::cpu;  // NOLINT: the shared kernel pieces

struct QuantParams {
  float slope, in_scale, out_scale;
  int32_t in_zp, out_zp;
  int64_t threads;
};

QuantParams read_params(const void* p) {
  const auto s = lrelu::read_params<lrelu::QuantizedParams>(p);  // ../params.h
  return {s.slope, s.in_scale, s.out_scale, static_cast<int32_t>(s.in_zero_point),
          static_cast<int32_t>(s.out_zero_point), lrelu::thread_count(s.threads)};
}

// table[b] is the output byte for the input byte b (the code's bit pattern, so int8 -1 is entry 255).
template <typename T, int32_t kMin, int32_t kMax>
void build_table(const QuantParams& p, uint8_t* table) {
  const float lo = static_cast<float>(kMin - p.out_zp);
  const float hi = static_cast<float>(kMax - p.out_zp);
  for (int b = 0; b < 256; ++b) {
    const T code = static_cast<T>(static_cast<uint8_t>(b));
    const float x = p.in_scale * static_cast<float>(static_cast<int32_t>(code) - p.in_zp);
    const float y = x >= 0.0f ? x : p.slope * x;
    float q = y / p.out_scale;
    q = q < lo ? lo : q;
    q = q > hi ? hi : q;
    const T out = static_cast<T>(static_cast<int32_t>(std::nearbyint(q)) + p.out_zp);
    std::memcpy(&table[b], &out, 1);
  }
}

__attribute__((noinline)) void lookup_tile(const uint8_t* __restrict__ x, uint8_t* __restrict__ y, int64_t len,
                                           const uint8_t* __restrict__ table) {
  int64_t i = 0;
#if defined(__AVX512VBMI__)
  const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64);
  const __m512i t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
  for (; i + 64 <= len; i += 64) {
    const __m512i v = _mm512_loadu_si512(x + i);
    const __m512i low = _mm512_permutex2var_epi8(t0, v, t1);   // entries 0..127 by bits 0..6
    const __m512i high = _mm512_permutex2var_epi8(t2, v, t3);  // entries 128..255 by bits 0..6
    _mm512_storeu_si512(y + i, _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), low, high));
  }
#endif
  for (; i < len; ++i) y[i] = table[x[i]];
}

int lookup(const uint8_t* x, uint8_t* y, int64_t n, int64_t threads, const uint8_t* table) {
  const lrelu::TilingPlan plan = make_plan(n, 1, threads, 2);
  if (plan.tile_len == 0 && n > 0) return 2;
  for_each_tile(plan, [x, y, table](int64_t start, int64_t len) { lookup_tile(x + start, y + start, len, table); });
  return 0;
}

}  // namespace

extern "C" {

// Inputs: q (int8|uint8), scalars (lrelu::QuantizedParams); output: y (dtype of q).
int QuantizedLeakyRelu(int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes,
                       void* /*stream*/, void* /*extra*/) {
  if (nparam != 3 || !lrelu::params_ok<lrelu::QuantizedParams>(dtypes[1], ndims[1], shapes[1]) || std::strcmp(dtypes[0], dtypes[2]) != 0) return 1;
  const QuantParams p = read_params(params[1]);
  alignas(64) uint8_t table[256];
  const IeeeSubnormals ieee;  // subnormal scales and products as IEEE (graph-mode threads flush them)
  if (std::strcmp(dtypes[0], "int8") == 0) {
    build_table<int8_t, -128, 127>(p, table);
  } else if (std::strcmp(dtypes[0], "uint8") == 0) {
    build_table<uint8_t, 0, 255>(p, table);
  } else {
    return 1;
  }
  return lookup(static_cast<const uint8_t*>(params[0]), static_cast<uint8_t*>(params[2]),
                element_count(ndims[0], shapes[0]), p.threads, table);
}

}  // extern "C"
