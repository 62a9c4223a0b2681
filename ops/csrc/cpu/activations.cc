// CPU aot kernels of the activation family beyond LeakyReLU (ops/activations.py has the table):
//
//   prelu  y = x > 0 ? x : w[c] * x           dx = x > 0 ? dy : w[c] * dy    dw[c] = sum_{x <= 0} x * dy
//   elu    y = x > 0 ? x : alpha * expm1(x)   dx = x > 0 ? dy : dy * (alpha * exp(x)), with expm1 and exp
//          of x <= 0 in float32, 16 or 8 lanes (elu_expm1 / elu_exp below; mirrored by reference.elu_expm1/elu_exp)
//   rrelu  (training) y = x > 0 ? x : s_i * x, dx = x > 0 ? dy : s_i * dy, with per-element slopes
//          s_i = lower + (upper - lower) * u_i, u_i = counter_uniform(seed, counter, i) (below); in eval
//          RReLU is leaky_relu with slope (lower + upper) / 2 and runs leaky_relu.cc's kernels.
//
// Every output is then clamped to [-clamp, clamp] (NaN kept) and the gradient is 0 where the forward output
// was clamped. Math in float32, one rounding to the
// tensor's dtype; c is the index on axis 1 (one weight of shape (1,) serves every channel). The PReLU
// weight gradient is reduced per channel inside the backward kernel: float32 products, double sums, one
// partial row per tile added in tile order (deterministic for any thread count).
// Scalars: one lrelu::ActParams (../params.h).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernel_common.h"

namespace {

using namespace lrelu::cpu;  // NOLINT: the shared kernel pieces
using Scalars = lrelu::ActParams;

// ---- counter-based uniform numbers (SplitMix64 finaliser): a pure function of (seed, counter, i) ----

inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Stream key of one (seed, counter) pair; element i draws mix64(key + (i + 1) * golden), top 24 bits.
inline uint64_t stream_key(uint32_t seed, uint32_t counter) {
  return mix64((static_cast<uint64_t>(seed) << 32) | counter);
}

inline float rrelu_slope(uint64_t key, int64_t i, double lower, double width) {
  const uint64_t h = mix64(key + static_cast<uint64_t>(i + 1) * 0x9E3779B97F4A7C15ull);
  const double u = static_cast<double>(h >> 40) * (1.0 / 16777216.0);
  return static_cast<float>(lower + width * u);
}

// ---- element formulas (float32 math, R rounds to the tensor's dtype) ----

template <typename R>
inline float clamped(float y, float clamp) { return R::apply(clamp_value(y, clamp)); }

template <typename R>
inline float slope_forward(float x, float slope, float clamp) {
  return clamped<R>(forward_unclamped<float, R, false>(x, slope), clamp);
}

// dx of y = (x > 0 ? x : slope * x) clamped: 0 where clamped, else dy or slope * dy.
template <typename R>
inline float slope_backward(float x, float dy, float slope, float clamp) {
  const float y = forward_unclamped<float, R, false>(x, slope);
  const float pass = x > 0.0f ? dy : R::apply(slope * dy);
  return (y > clamp) | (y < -clamp) ? 0.0f : pass;
}

// ---- expm1 and exp of x <= 0 in float32 for ELU: every step an exact float32 operation or one fused
// multiply-add, so the 8-lane and the scalar paths and the numpy mirror (reference.elu_expm1/elu_exp) give
// the same bits. Both share one reduction, exp_parts:
//   k = rint(x * log2(e)), r = x - k * ln2 (two fmas, Cody-Waite), p = expm1(r) = r + r^2 * q(r) (Taylor to
//   r^8, Horner with fmas, |r| <= 0.35), and the power of two 2^(k + kShift) built from k's bits.
// expm1 (the forward): x limited to [-17.5, 0], expm1(x) = fma(2^k, p, 2^k - 1). Below -17.5 float32
//   expm1 rounds to -1 (2^k <= 2^-25), which the limit also gives, so 2^k is always a normal number.
// exp (the backward): x limited to [-104, 0] (below, exp rounds to 0), exp(x) = fma(a, p, a) * 2^-64 with
//   a = 2^(k + 64) normal for every k >= -150; the last product rounds once into the subnormals.
constexpr float kLog2e = 1.44269504088896341f, kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
constexpr float kTaylor[7] = {1.0f / 2, 1.0f / 6, 1.0f / 24, 1.0f / 120, 1.0f / 720, 1.0f / 5040, 1.0f / 40320};
constexpr int kExpShift = 64;
constexpr float kExpUnshift = 0x1p-64f;

inline float fma_v(float a, float b, float c) { return std::fma(a, b, c); }
inline float rint_v(float v) { return std::nearbyint(v); }
inline float limit_v(float v, float lo) { return v < lo ? lo : (v > 0.0f ? 0.0f : v); }  // NaN kept
template <int kShift>
inline float pow2_v(float k) { return k == k ? std::ldexp(1.0f, static_cast<int>(k) + kShift) : k; }  // NaN kept
#if defined(__AVX2__) && defined(__FMA__)
#define LRELU_ELU_LANES 1  // the kernels run ELU in fv vectors (f8, or 16 lanes below)
inline f8 fma_v(f8 a, f8 b, f8 c) { return _mm256_fmadd_ps(a, b, c); }
inline f8 rint_v(f8 v) { return _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
// max/min return their second operand when one is NaN: the NaN lane stays NaN.
inline f8 limit_v(f8 v, float lo) { return _mm256_min_ps(splat<f8>(0.0f), _mm256_max_ps(splat<f8>(lo), v)); }
template <int kShift>
inline f8 pow2_v(f8 k) {
  const __m256i biased = _mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127 + kShift));
  return _mm256_castsi256_ps(_mm256_slli_epi32(biased, 23));
}
#endif
#if defined(__AVX512F__)  // the same four steps on 16 lanes (same instructions, so the same bits)
inline __m512 fma_v(__m512 a, __m512 b, __m512 c) { return _mm512_fmadd_ps(a, b, c); }
inline __m512 rint_v(__m512 v) { return _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
inline __m512 limit_v(__m512 v, float lo) {
  return _mm512_min_ps(splat<__m512>(0.0f), _mm512_max_ps(splat<__m512>(lo), v));
}
template <int kShift>
inline __m512 pow2_v(__m512 k) {
  const __m512i biased = _mm512_add_epi32(_mm512_cvtps_epi32(k), _mm512_set1_epi32(127 + kShift));
  return _mm512_castsi512_ps(_mm512_slli_epi32(biased, 23));
}
#endif

// 2^(k + kShift), and p = expm1(r), for x = k ln2 + r (x already limited by the caller).
template <int kShift, typename V>
inline V exp_parts(V x, V* p) {
  const V k = rint_v(x * kLog2e);
  V r = fma_v(-k, splat<V>(kLn2Hi), x);
  r = fma_v(-k, splat<V>(kLn2Lo), r);
  V q = splat<V>(kTaylor[6]);
  for (int i = 5; i >= 0; --i) q = fma_v(q, r, splat<V>(kTaylor[i]));
  *p = fma_v(r * r, q, r);
  return pow2_v<kShift>(k);
}

template <typename V>
inline V elu_expm1(V x) {
  V p;
  const V s = exp_parts<0>(limit_v(x, -17.5f), &p);
  return fma_v(s, p, s - 1.0f);
}

template <typename V>
inline V elu_exp(V x) {
  V p;
  const V a = exp_parts<kExpShift>(limit_v(x, -104.0f), &p);
  return fma_v(a, p, a) * kExpUnshift;
}

template <typename V, typename R>
inline V elu_unclamped(V x, float alpha) {
  const V neg = R::apply(alpha * (x == 0.0f ? x : elu_expm1(x)));  // keeps the sign of -0
  return x > 0.0f ? x : neg;
}

// kClamp: whether the output is clamped (a finite clamp); without one the forward is not recomputed.
template <typename V, typename R, bool kClamp>
inline V elu_forward_value(V x, float alpha, float clamp) {
  const V y = elu_unclamped<V, R>(x, alpha);
  return kClamp ? clamp_value(y, clamp) : y;
}

template <typename V, typename R, bool kClamp>
inline V elu_backward(V x, V dy, float alpha, float clamp) {
  const V pass = x > 0.0f ? dy : R::apply(dy * (alpha * elu_exp(x)));
  if (!kClamp) return pass;
  const V y = elu_unclamped<V, R>(x, alpha);
  return (y > clamp) | (y < -clamp) ? splat<V>(0.0f) : pass;
}

// ---- whole-tensor kernels ----

// Channel layout for a weight of `weights` values: per channel on axis 1, or one run over everything.
Layout weight_layout(int ndim, const int64_t* shape, int64_t weights) {
  const int64_t n = element_count(ndim, shape);
  if (weights == 1) return {n, 1, n > 0 ? n : 1};
  return read_layout(ndim, shape);
}

template <typename T>
int prelu_forward(const void* xv, const std::vector<float>& w, const Layout& l, const Scalars& s, void* yv) {
  using R = typename RoundOf<T>::type;
  const lrelu::TilingPlan plan = make_plan(l.n, sizeof(T), lrelu::thread_count(s.threads), 2);
  if (plan.tile_len == 0 && l.n > 0) return 2;
  const T* x = static_cast<const T*>(xv);
  T* y = static_cast<T*>(yv);
  const bool stream = streams(l.n, sizeof(T));
  for_each_tile(plan, [&](int64_t start, int64_t len) {
    for_each_run(l, start, len, [&](int64_t c, int64_t rs, int64_t rn) {
      const float slope = w[c];
      map_elements(y, rs, rn, stream, [&](int64_t i) {
        return R::apply(clamp_value(forward_unclamped<fv, R, false>(load_v(x + i), slope), s.clamp));
      }, [&](int64_t i) { return slope_forward<R>(widen1(x[i]), slope, s.clamp); });
    });
  });
  return 0;
}

// dx, and dw[c] = sum over the channel of x * dy where x <= 0 and the output was not clamped.
template <typename T>
int prelu_backward(const void* xv, const void* dyv, const std::vector<float>& w, const Layout& l,
                   const Scalars& s, void* dxv, std::vector<float>* dw) {
  using R = typename RoundOf<T>::type;
  const lrelu::TilingPlan plan = make_plan(l.n, sizeof(T), lrelu::thread_count(s.threads), 3);
  if (plan.tile_len == 0 && l.n > 0) return 2;
  const T* x = static_cast<const T*>(xv);
  const T* dy = static_cast<const T*>(dyv);
  T* dx = static_cast<T*>(dxv);
  const std::vector<double> sums = reduce_channels(plan, l, 1, [&](int64_t c, int64_t rs, int64_t rn, double* acc) {
    const float slope = w[c];
    const T* __restrict__ xr = x + rs;
    const T* __restrict__ dyr = dy + rs;
    T* __restrict__ dxr = dx + rs;
    double a[4] = {0.0, 0.0, 0.0, 0.0};
    int64_t i = 0;
#if defined(__F16C__)
    // 8 lanes: the same float32 products, summed in double (4 + 4 lanes), only in another order.
    __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
    for (; i + 8 <= rn; i += 8) {
      const f8 xv = load8(xr + i), dyv = load8(dyr + i);
      const f8 y = forward_unclamped<f8, R, false>(xv, slope);
      const auto cut = (y > s.clamp) | (y < -s.clamp);
      store8(dxr + i, cut ? splat<f8>(0.0f) : (xv > 0.0f ? dyv : R::apply(slope * dyv)));
      const f8 t = (xv > 0.0f) | cut ? splat<f8>(0.0f) : xv * dyv;
      lo += _mm256_cvtps_pd(_mm256_castps256_ps128(t));
      hi += _mm256_cvtps_pd(_mm256_extractf128_ps(t, 1));
    }
    alignas(32) double lanes[8];
    _mm256_store_pd(lanes, lo);
    _mm256_store_pd(lanes + 4, hi);
    for (int k = 0; k < 8; ++k) a[k & 3] += lanes[k];
#endif
    for (; i < rn; ++i) {
      const float xi = widen1(xr[i]), dyi = widen1(dyr[i]);
      const float y = forward_unclamped<float, R, false>(xi, slope);
      const bool cut = (y > s.clamp) | (y < -s.clamp);
      dxr[i] = static_cast<T>(cut ? 0.0f : (xi > 0.0f ? dyi : R::apply(slope * dyi)));
      a[i & 3] += (xi > 0.0f) | cut ? 0.0 : static_cast<double>(xi * dyi);
    }
    acc[0] += (a[0] + a[1]) + (a[2] + a[3]);
  });
  for (int64_t c = 0; c < l.channels; ++c) (*dw)[c] = static_cast<float>(sums[c]);
  return 0;
}

// One tile of the ELU forward (dy == nullptr) or backward, fv vectors where the machine has them.
template <typename T, bool kClamp>
void elu_tile(const T* x, const T* dy, T* out, int64_t start, int64_t len, const Scalars& s, bool stream) {
  using R = typename RoundOf<T>::type;
  const auto one = [&](int64_t i) {
    return dy ? elu_backward<float, R, kClamp>(widen1(x[i]), widen1(dy[i]), s.slope, s.clamp)
              : elu_forward_value<float, R, kClamp>(widen1(x[i]), s.slope, s.clamp);
  };
#if defined(LRELU_ELU_LANES) || LRELU_FV_LANES == 1
  if (dy) {
    map_elements(out, start, len, stream, [&](int64_t i) {
      prefetch_ahead(x + i);
      prefetch_ahead(dy + i);
      return elu_backward<fv, R, kClamp>(load_v(x + i), load_v(dy + i), s.slope, s.clamp);
    }, one);
  } else {
    map_elements(out, start, len, stream, [&](int64_t i) {
      prefetch_ahead(x + i);
      return elu_forward_value<fv, R, kClamp>(load_v(x + i), s.slope, s.clamp);
    }, one);
  }
#else  // F16C vectors without FMA: the float formula
  for (int64_t i = start; i < start + len; ++i) out[i] = static_cast<T>(one(i));
#endif
}

// The ELU forward (dy == nullptr: out = y) or backward (out = dx) over the whole tensor.
template <typename T>
int elu_all(const void* xv, const void* dyv, const Scalars& s, void* outv, int64_t n) {
  const lrelu::TilingPlan plan = make_plan(n, sizeof(T), lrelu::thread_count(s.threads), dyv ? 3 : 2);
  if (plan.tile_len == 0 && n > 0) return 2;
  const T* x = static_cast<const T*>(xv);
  const T* dy = static_cast<const T*>(dyv);
  T* out = static_cast<T*>(outv);
  const bool clamped = std::isfinite(s.clamp), stream = streams(n, sizeof(T));
  for_each_tile(plan, [&](int64_t start, int64_t len) {
    clamped ? elu_tile<T, true>(x, dy, out, start, len, s, stream) : elu_tile<T, false>(x, dy, out, start, len, s, stream);
  });
  return 0;
}

// RReLU in training: forward (dy == nullptr) or backward, with the slopes of (seed, counter).
template <typename T>
int rrelu_train(const void* xv, const void* dyv, const int32_t* key, const Scalars& s, void* outv, int64_t n) {
  using R = typename RoundOf<T>::type;
  const lrelu::TilingPlan plan = make_plan(n, sizeof(T), lrelu::thread_count(s.threads), dyv ? 3 : 2);
  if (plan.tile_len == 0 && n > 0) return 2;
  const T* x = static_cast<const T*>(xv);
  const T* dy = static_cast<const T*>(dyv);
  T* out = static_cast<T*>(outv);
  const uint64_t k = stream_key(static_cast<uint32_t>(key[0]), static_cast<uint32_t>(key[1]));
  const double lower = s.lower, width = static_cast<double>(s.upper) - static_cast<double>(s.lower);
  for_each_tile(plan, [&](int64_t start, int64_t len) {
    for (int64_t i = start; i < start + len; ++i) {
      const float slope = rrelu_slope(k, i, lower, width);
      out[i] = static_cast<T>(dy ? slope_backward<R>(widen1(x[i]), widen1(dy[i]), slope, s.clamp)
                                 : slope_forward<R>(widen1(x[i]), slope, s.clamp));
    }
  });
  return 0;
}

bool key_ok(const char* dtype, int ndim, const int64_t* shape) {
  return is(dtype, "int32") && ndim == 1 && shape[0] == 2;
}

// The weight as float32 and its channel layout; false unless it has 1 value or one per channel on axis 1.
bool read_weight(void** params, int* ndims, int64_t** shapes, const char** dtypes, int xi, int wi,
                 std::vector<float>* w, Layout* l) {
  const int64_t count = element_count(ndims[wi], shapes[wi]);
  if (!is_float(dtypes[wi]) || ndims[wi] != 1) return false;
  if (count != 1 && (ndims[xi] < 2 || shapes[xi][1] != count)) return false;
  *w = widen(params[wi], dtypes[wi], count);
  *l = weight_layout(ndims[xi], shapes[xi], count);
  return true;
}

template <typename Fn>
int by_dtype(const char* dtype, const Fn& fn) {
  if (is(dtype, "float32")) return fn(float{});
  if (is(dtype, "float16")) return fn(half{});
  return 1;
}

}  // namespace

extern "C" {

// Inputs: x (float32|float16), weight (float32|float16, (1,) or (C,)), scalars (ActParams); output: y.
int PreluForward(int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes,
                 void* /*stream*/, void* /*extra*/) {
  if (nparam != 4 || !lrelu::params_ok<Scalars>(dtypes[2], ndims[2], shapes[2])) return 1;
  std::vector<float> w;
  Layout l;
  if (!read_weight(params, ndims, shapes, dtypes, 0, 1, &w, &l)) return 1;
  const Scalars s = lrelu::read_params<Scalars>(params[2]);
  return by_dtype(dtypes[0], [&](auto t) { return prelu_forward<decltype(t)>(params[0], w, l, s, params[3]); });
}

// Inputs: x, dy (same dtype), weight, scalars (ActParams); outputs: dx (dtype of x), dw (dtype of weight).
int PreluBackward(int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes,
                  void* /*stream*/, void* /*extra*/) {
  if (nparam != 6 || !is(dtypes[0], dtypes[1]) || !lrelu::params_ok<Scalars>(dtypes[3], ndims[3], shapes[3])) {
    return 1;
  }
  std::vector<float> w;
  Layout l;
  if (!read_weight(params, ndims, shapes, dtypes, 0, 2, &w, &l) || !is(dtypes[5], dtypes[2])) return 1;
  const Scalars s = lrelu::read_params<Scalars>(params[3]);
  std::vector<float> dw(w.size(), 0.0f);
  const int status = by_dtype(dtypes[0], [&](auto t) {
    return prelu_backward<decltype(t)>(params[0], params[1], w, l, s, params[4], &dw);
  });
  if (status == 0) narrow(dw, dtypes[5], params[5]);
  return status;
}

// Inputs: x (float32|float16), scalars (ActParams: slope = alpha); output: y.
int EluForward(int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes,
               void* /*stream*/, void* /*extra*/) {
  if (nparam != 3 || !lrelu::params_ok<Scalars>(dtypes[1], ndims[1], shapes[1])) return 1;
  const Scalars s = lrelu::read_params<Scalars>(params[1]);
  const int64_t n = element_count(ndims[0], shapes[0]);
  return by_dtype(dtypes[0], [&](auto t) { return elu_all<decltype(t)>(params[0], nullptr, s, params[2], n); });
}

// Inputs: x, dy (same dtype), scalars (ActParams); output: dx.
int EluBackward(int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes,
                void* /*stream*/, void* /*extra*/) {
  if (nparam != 4 || !is(dtypes[0], dtypes[1]) || !lrelu::params_ok<Scalars>(dtypes[2], ndims[2], shapes[2])) {
    return 1;
  }
  const Scalars s = lrelu::read_params<Scalars>(params[2]);
  const int64_t n = element_count(ndims[0], shapes[0]);
  return by_dtype(dtypes[0], [&](auto t) {
    return elu_all<decltype(t)>(params[0], params[1], s, params[3], n);
  });
}

// Inputs: x (float32|float16), key (int32[2]: seed, counter), scalars (ActParams: lower, upper); output: y.
int RreluTrainForward(int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes,
                      void* /*stream*/, void* /*extra*/) {
  if (nparam != 4 || !key_ok(dtypes[1], ndims[1], shapes[1]) ||
      !lrelu::params_ok<Scalars>(dtypes[2], ndims[2], shapes[2])) {
    return 1;
  }
  const Scalars s = lrelu::read_params<Scalars>(params[2]);
  const int32_t* key = static_cast<const int32_t*>(params[1]);
  const int64_t n = element_count(ndims[0], shapes[0]);
  return by_dtype(dtypes[0], [&](auto t) {
    return rrelu_train<decltype(t)>(params[0], nullptr, key, s, params[3], n);
  });
}

// Inputs: x, dy (same dtype), key, scalars; output: dx, with the slopes the forward drew for this key.
int RreluTrainBackward(int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes,
                       void* /*stream*/, void* /*extra*/) {
  if (nparam != 5 || !is(dtypes[0], dtypes[1]) || !key_ok(dtypes[2], ndims[2], shapes[2]) ||
      !lrelu::params_ok<Scalars>(dtypes[3], ndims[3], shapes[3])) {
    return 1;
  }
  const Scalars s = lrelu::read_params<Scalars>(params[3]);
  const int32_t* key = static_cast<const int32_t*>(params[2]);
  const int64_t n = element_count(ndims[0], shapes[0]);
  return by_dtype(dtypes[0], [&](auto t) {
    return rrelu_train<decltype(t)>(params[0], params[1], key, s, params[4], n);
  });
}

// The smallest output (bytes) the element-wise kernels write with streaming stores, or -1 where this build
// never streams (no AVX-512). The test of the streaming path sizes its tensors from it.
int64_t LreluStreamMinBytes() { return streams(lrelu::cpu::kStreamMinBytes / 4, 4) ? lrelu::cpu::kStreamMinBytes : -1; }

// The instruction-set extensions this library was compiled with, as g++ names them (-m<name>), space-separated:
// those the kernels branch on, and the AVX-512 family a -march= name alone can leave out (g++ 12 on Zen 5).
// The build test compares them with what the compiler enables for the build's flags.
const char* LreluBuildIsa() {
  return ""
#if defined(__SSE4_2__)
         " sse4.2"
#endif
#if defined(__AVX2__)
         " avx2"
#endif
#if defined(__FMA__)
         " fma"
#endif
#if defined(__F16C__)
         " f16c"
#endif
#if defined(__AVX512F__)
         " avx512f"
#endif
#if defined(__AVX512BW__)
         " avx512bw"
#endif
#if defined(__AVX512DQ__)
         " avx512dq"
#endif
#if defined(__AVX512VL__)
         " avx512vl"
#endif
#if defined(__AVX512VBMI__)
         " avx512vbmi"
#endif
#if defined(__AVX512VNNI__)
         " avx512vnni"
#endif
#if defined(__AVX512BF16__)
         " avx512bf16"
#endif
      ;
}

// The field names of a params.h layout ("act", "bn_act" or "quantized"), comma-separated, into out[0 .. cap); returns
// sizeof the struct, or -1 for an unknown layout or a too small buffer. The test of ops/params.py reads it.
int64_t LreluParamsLayout(const char* which, char* out, int64_t cap) {
#define LRELU_NAME(name) #name ","
  const char* names = nullptr;
  int64_t size = -1;
  if (std::strcmp(which, "act") == 0) {
    names = LRELU_ACT_PARAMS(LRELU_NAME);
    size = sizeof(lrelu::ActParams);
  } else if (std::strcmp(which, "bn_act") == 0) {
    names = LRELU_BN_ACT_PARAMS(LRELU_NAME);
    size = sizeof(lrelu::BnActParams);
  } else if (std::strcmp(which, "quantized") == 0) {
    names = LRELU_QUANTIZED_PARAMS(LRELU_NAME);
    size = sizeof(lrelu::QuantizedParams);
  }
#undef LRELU_NAME
  if (names == nullptr || static_cast<int64_t>(std::strlen(names)) >= cap) return -1;
  std::strcpy(out, names);
  return size;
}

}  // extern "C"
