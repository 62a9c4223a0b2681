// LeakyReLU CPU kernels for MindSpore `ops.Custom(func_type="aot")`: forward (two formulations) and backward.
//
// y = x > 0 ? x : slope * x, then optionally clamped to [-clamp, clamp] with NaN kept.
// float16 values are widened to float, multiplied by the float32 slope and rounded to half once.
// The scalar parameters travel as a float32[3] tensor {slope, clamp (+inf = none), threads} rather than
// as primitive attributes, because a second CustomRegOp registration with the same name keeps the
// first attribute value (REFERENCE.md).
//
// Work is split by the shared tiling plan (../tiling.h): each worker thread is a "core" that walks its
// full tiles and, on the last core, the tail; the per-tile loops are plain __restrict__ pointer loops
// that the compiler vectorises.
#include <cmath>
#include <cstdint>
#include <cstring>
#if defined(__F16C__)
#include <immintrin.h>
#endif
#include <mutex>
#include <thread>
#include <vector>

#include "../tiling.h"

namespace {

using half = _Float16;
#if defined(__F16C__)
using f8 = __m256;  // 8 floats; GCC vector extensions give it +, *, comparisons and ?: like a float
#endif

constexpr int64_t kAlignBytes = 64;        // one cache line (and one AVX-512 register)
constexpr double kUsableFraction = 0.5;    // leave half of L2 to the other core's traffic and the stack

struct Scalars {
  float slope;
  float clamp;  // +inf when no clamp
  int64_t threads;
};

Scalars read_scalars(const void* p) {
  const float* f = static_cast<const float*>(p);
  const int64_t threads = f[2] >= 1.0f ? static_cast<int64_t>(f[2]) : 1;
  return {f[0], f[1], threads};
}

int64_t element_count(int ndim, const int64_t* shape) {
  int64_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= shape[i];
  return n;
}

// The element formulas are written once over V (float, or an 8-lane float vector for float16 tiles)
// and a rounding policy R: identity for float32, round-to-nearest-even to float16 for float16.
template <typename V> inline V splat(float s) { return s; }

struct NoRound {
  template <typename V> static V apply(V v) { return v; }
};

struct HalfRound {
  static float apply(float v) { return static_cast<float>(static_cast<half>(v)); }
#if defined(__F16C__)
  static f8 apply(f8 v) { return _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT)); }
#endif
};

#if defined(__F16C__)
template <> inline f8 splat<f8>(float s) { return _mm256_set1_ps(s); }
inline f8 load8(const half* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
inline void store8(half* p, f8 v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}
#endif

// Unclamped forward, rounded once by R. kMaxMin selects max(x,0) + slope*min(x,0). Both sides are
// computed and then selected, which keeps the tile loops branch-free.
template <typename V, typename R, bool kMaxMin>
inline V forward_unclamped(V x, float slope) {
  if (kMaxMin) {
    // -0.0f (not +0.0f) as the "max" part keeps the sign of slope*x when it is -0.0 (slope 0, underflow),
    // so both formulations agree bit for bit on every finite input except x == -0.0.
    const V pos = x > 0.0f ? x : splat<V>(-0.0f);
    const V neg = x < 0.0f ? x : splat<V>(0.0f);
    return R::apply(pos + slope * neg);
  }
  const V neg = R::apply(slope * x);
  return x > 0.0f ? x : neg;
}

// Forward with the clamp to [-clamp, clamp]; comparisons are false for NaN, so NaN passes unchanged.
template <typename V, typename R, bool kMaxMin>
inline V forward_value(V x, float slope, float clamp) {
  V y = forward_unclamped<V, R, kMaxMin>(x, slope);
  y = y < -clamp ? splat<V>(-clamp) : y;
  return R::apply(y > clamp ? splat<V>(clamp) : y);
}

// dx = dy where m > 0 else slope * dy, and 0 where the forward output was clamped.
// m is the forward input x, or the forward output y when the op ran in place (y > 0 <=> x > 0 for
// slope >= 0; the API forbids clamp together with inplace, so clamp is +inf then).
template <typename V, typename R>
inline V backward_value(V m, V dy, float slope, float clamp) {
  const V y = forward_unclamped<V, R, false>(m, slope);
  const V pass = m > 0.0f ? dy : R::apply(slope * dy);
  return (y > clamp) | (y < -clamp) ? splat<V>(0.0f) : pass;
}

template <bool kMaxMin>
__attribute__((noinline)) void forward_tile(const float* __restrict__ x, float* __restrict__ y, int64_t len,
                                            float slope, float clamp) {
  for (int64_t i = 0; i < len; ++i) y[i] = forward_value<float, NoRound, kMaxMin>(x[i], slope, clamp);
}

template <bool kMaxMin>
__attribute__((noinline)) void forward_tile(const half* __restrict__ x, half* __restrict__ y, int64_t len,
                                            float slope, float clamp) {
  int64_t i = 0;
#if defined(__F16C__)  // GCC 12 does not vectorise _Float16 conversions, so use F16C explicitly
  for (; i + 8 <= len; i += 8) store8(y + i, forward_value<f8, HalfRound, kMaxMin>(load8(x + i), slope, clamp));
#endif
  for (; i < len; ++i) {
    y[i] = static_cast<half>(forward_value<float, HalfRound, kMaxMin>(static_cast<float>(x[i]), slope, clamp));
  }
}

__attribute__((noinline)) void backward_tile(const float* __restrict__ m, const float* __restrict__ dy,
                                             float* __restrict__ dx, int64_t len, float slope, float clamp) {
  for (int64_t i = 0; i < len; ++i) dx[i] = backward_value<float, NoRound>(m[i], dy[i], slope, clamp);
}

__attribute__((noinline)) void backward_tile(const half* __restrict__ m, const half* __restrict__ dy,
                                             half* __restrict__ dx, int64_t len, float slope, float clamp) {
  int64_t i = 0;
#if defined(__F16C__)
  for (; i + 8 <= len; i += 8) {
    store8(dx + i, backward_value<f8, HalfRound>(load8(m + i), load8(dy + i), slope, clamp));
  }
#endif
  for (; i < len; ++i) {
    dx[i] = static_cast<half>(backward_value<float, HalfRound>(static_cast<float>(m[i]),
                                                               static_cast<float>(dy[i]), slope, clamp));
  }
}

lrelu::TilingPlan make_plan(int64_t n, int64_t elem_size, int64_t threads, int64_t live_tensors) {
  static const int64_t buffer_bytes = lrelu::cpu_default_buffer_bytes();
  const lrelu::TilingParams params = {n, elem_size, buffer_bytes, kUsableFraction, kAlignBytes,
                                      threads, 1, live_tensors};
  return lrelu::plan_tiling(params);
}

// Run tile_fn(start, len) over every tile of the plan: core 0 on the calling thread, the others on
// their own threads. The tail is the last core's extra call, so the tile loops carry no tail branch.
template <typename TileFn>
void for_each_tile(const lrelu::TilingPlan& plan, const TileFn& tile_fn) {
  auto run_core = [&plan, &tile_fn](int64_t core) {
    const lrelu::CoreRange r = lrelu::core_range(plan, core);
    int64_t start = r.start;
    for (int64_t t = 0; t < r.full_tiles; ++t, start += plan.tile_len) tile_fn(start, plan.tile_len);
    if (r.tail_len > 0) tile_fn(start, r.tail_len);
  };
  std::vector<std::thread> workers;
  workers.reserve(static_cast<size_t>(plan.used_cores > 1 ? plan.used_cores - 1 : 0));
  for (int64_t core = 1; core < plan.used_cores; ++core) workers.emplace_back(run_core, core);
  if (plan.used_cores > 0) run_core(0);
  for (std::thread& w : workers) w.join();
}

template <typename T, bool kMaxMin>
int forward(void* x, const Scalars& s, void* y, int64_t n) {
  const lrelu::TilingPlan plan = make_plan(n, sizeof(T), s.threads, 2);
  if (plan.tile_len == 0 && n > 0) return 2;
  const T* xp = static_cast<const T*>(x);
  T* yp = static_cast<T*>(y);
  for_each_tile(plan, [xp, yp, &s](int64_t start, int64_t len) {
    forward_tile<kMaxMin>(xp + start, yp + start, len, s.slope, s.clamp);
  });
  return 0;
}

template <typename T>
int backward(void* m, void* dy, const Scalars& s, void* dx, int64_t n) {
  const lrelu::TilingPlan plan = make_plan(n, sizeof(T), s.threads, 3);
  if (plan.tile_len == 0 && n > 0) return 2;
  const T* mp = static_cast<const T*>(m);
  const T* dyp = static_cast<const T*>(dy);
  T* dxp = static_cast<T*>(dx);
  for_each_tile(plan, [mp, dyp, dxp, &s](int64_t start, int64_t len) {
    backward_tile(mp + start, dyp + start, dxp + start, len, s.slope, s.clamp);
  });
  return 0;
}

template <bool kMaxMin>
int forward_entry(int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes) {
  if (nparam != 3 || std::strcmp(dtypes[1], "float32") != 0) return 1;
  const int64_t n = element_count(ndims[0], shapes[0]);
  const Scalars s = read_scalars(params[1]);
  if (std::strcmp(dtypes[0], "float32") == 0) return forward<float, kMaxMin>(params[0], s, params[2], n);
  if (std::strcmp(dtypes[0], "float16") == 0) return forward<half, kMaxMin>(params[0], s, params[2], n);
  return 1;
}

}  // namespace

extern "C" {

// Inputs: x (float32|float16), scalars (float32[3]); output: y (dtype of x).
int LeakyReluForwardSelect(int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes,
                           void* /*stream*/, void* /*extra*/) {
  return forward_entry<false>(nparam, params, ndims, shapes, dtypes);
}

int LeakyReluForwardMaxMin(int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes,
                           void* /*stream*/, void* /*extra*/) {
  return forward_entry<true>(nparam, params, ndims, shapes, dtypes);
}

// Inputs: m (forward input x, or output y in place), dy, scalars (float32[3]); output: dx.
int LeakyReluBackward(int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes,
                      void* /*stream*/, void* /*extra*/) {
  if (nparam != 4 || std::strcmp(dtypes[0], dtypes[1]) != 0 || std::strcmp(dtypes[2], "float32") != 0) return 1;
  const int64_t n = element_count(ndims[0], shapes[0]);
  const Scalars s = read_scalars(params[2]);
  if (std::strcmp(dtypes[0], "float32") == 0) return backward<float>(params[0], params[1], s, params[3], n);
  if (std::strcmp(dtypes[0], "float16") == 0) return backward<half>(params[0], params[1], s, params[3], n);
  return 1;
}

// Index check without touching memory: runs the kernels' tile schedule (same plan, same threads) for n
// elements and reports {lowest start, highest end, sum of tile lengths, tile count}; covers n > 2^31.
void LeakyReluTileCoverage(int64_t n, int64_t elem_size, int64_t threads, int64_t* out) {
  const lrelu::TilingPlan plan = make_plan(n, elem_size, threads, 2);
  std::mutex mu;
  int64_t lo = n, hi = 0, total = 0, tiles = 0;
  for_each_tile(plan, [&](int64_t start, int64_t len) {
    std::lock_guard<std::mutex> lock(mu);
    lo = start < lo ? start : lo;
    hi = start + len > hi ? start + len : hi;
    total += len;
    ++tiles;
  });
  out[0] = lo;
  out[1] = hi;
  out[2] = total;
  out[3] = tiles;
}

}  // extern "C"
