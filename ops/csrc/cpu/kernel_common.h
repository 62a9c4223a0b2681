// Shared pieces of the CPU aot kernels (leaky_relu.cc, bn_act.cc, activations.cc): half/vector types, the
// rounding policies, the LeakyReLU element formula, the clamp, and the tile walk over the one
// tiling plan.
//
// The element formulas are written once over V (float, or an 8-lane float vector) and a rounding
// policy R: identity for float32, round-to-nearest-even to float16 for float16.
#ifndef LRELU_OPS_CSRC_CPU_KERNEL_COMMON_H_
#define LRELU_OPS_CSRC_CPU_KERNEL_COMMON_H_

#include <cstdint>
#include <cstring>
#if defined(__F16C__)
#include <immintrin.h>
#endif
#if defined(__SSE__)
#include <xmmintrin.h>
#endif
#include <vector>

#include "../params.h"
#include "../tiling.h"
#include "worker_pool.h"

namespace lrelu {
namespace cpu {

using half = _Float16;
#if defined(__F16C__)
using f8 = __m256;  // 8 floats; GCC vector extensions give it +, *, comparisons and ?: like a float
#endif

constexpr int64_t kAlignBytes = 64;        // one cache line (and one AVX-512 register)
constexpr double kUsableFraction = 0.5;    // leave half of L2 to the other core's traffic and the stack
inline int64_t element_count(int ndim, const int64_t* shape) {
  int64_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= shape[i];
  return n;
}

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
inline f8 load8(const float* p) { return _mm256_loadu_ps(p); }
inline void store8(float* p, f8 v) { _mm256_storeu_ps(p, v); }
inline double lane_sum(f8 v) {
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, v);
  double s = 0.0;
  for (float f : lanes) s += f;
  return s;
}
#endif

// Unclamped LeakyReLU, rounded once by R. kMaxMin selects max(x,0) + slope*min(x,0). Both sides are
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

// y clamped to [-clamp, clamp]; comparisons are false for NaN, so NaN passes unchanged.
template <typename V>
inline V clamp_value(V y, float clamp) {
  y = y < -clamp ? splat<V>(-clamp) : y;
  return y > clamp ? splat<V>(clamp) : y;
}

// The tiling plan of a CPU kernel call: at most `threads` cores, one core per kMinElementsPerThread, and
// tiles of at most kMinElementsPerThread elements: with L2-sized tiles (2^17 float32 elements of two live
// tensors on a 2 MiB L2) a DCGAN-32 activation had one or two tiles, so a second thread had nothing to do.
// The tiles depend on n only, never on the thread count, so the per-tile sums of the reductions (and the
// results) are the same for every thread count.
inline lrelu::TilingPlan make_plan(int64_t n, int64_t elem_size, int64_t threads, int64_t live_tensors) {
  static const int64_t l2_bytes = lrelu::cpu_default_buffer_bytes();
  const auto cap = static_cast<int64_t>(static_cast<double>(kMinElementsPerThread * elem_size * live_tensors) /
                                        kUsableFraction);
  const int64_t buffer_bytes = cap < l2_bytes ? cap : l2_bytes;
  const int64_t by_size = n / kMinElementsPerThread > 1 ? n / kMinElementsPerThread : 1;
  const lrelu::TilingParams params = {n, elem_size, buffer_bytes, kUsableFraction, kAlignBytes,
                                      threads < by_size ? threads : by_size, 1, live_tensors};
  return lrelu::plan_tiling(params);
}

// Keeps subnormal inputs and results for its lifetime on this thread (clears the SSE flush-to-zero and
// denormals-are-zero bits, restores them after): MindSpore's graph-mode executor threads run with both
// set, which would turn e.g. 0.01 * -1e-39 into -0.0 where the reference (and PyTorch) keep it.
class IeeeSubnormals {
 public:
#if defined(__SSE__)
  IeeeSubnormals() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ & ~(kFlushToZero | kDenormalsAreZero)); }
  ~IeeeSubnormals() { _mm_setcsr(saved_); }

 private:
  static constexpr unsigned kFlushToZero = 0x8000;
  static constexpr unsigned kDenormalsAreZero = 0x0040;
  unsigned saved_;
#endif
};

// Run tile_fn(start, len) over every tile of the plan: core 0 on the calling thread, the others on
// the library's persistent workers (worker_pool.h). The tail is the last core's extra call, so the tile loops carry no tail branch.
// Every tile but the tail starts at a multiple of tile_len, so start / tile_len numbers the tiles.
template <typename TileFn>
void for_each_tile(const lrelu::TilingPlan& plan, const TileFn& tile_fn) {
  auto run_core = [&plan, &tile_fn](int64_t core) {
    const IeeeSubnormals ieee;
    const lrelu::CoreRange r = lrelu::core_range(plan, core);
    int64_t start = r.start;
    for (int64_t t = 0; t < r.full_tiles; ++t, start += plan.tile_len) tile_fn(start, plan.tile_len);
    if (r.tail_len > 0) tile_fn(start, r.tail_len);
  };
  WorkerPool::instance().run(static_cast<int>(plan.used_cores), [&run_core](int core) { run_core(core); });
}

// ---- channel layout (N, C, *inner) and per-channel helpers (bn_act.cc, activations.cc) ----

struct Layout {
  int64_t n, channels, inner;  // elements; C; product of the dims after the channel axis
};

inline Layout read_layout(int ndim, const int64_t* shape) {
  int64_t inner = 1;
  for (int i = 2; i < ndim; ++i) inner *= shape[i];
  return {element_count(ndim, shape), ndim >= 2 ? shape[1] : 0, inner};
}

// Call run_fn(c, start, len) for the maximal single-channel runs of elements [start, start + len).
template <typename RunFn>
void for_each_run(const Layout& l, int64_t start, int64_t len, const RunFn& run_fn) {
  const int64_t end = start + len;
  while (start < end) {
    const int64_t plane = start / l.inner;
    const int64_t stop = (plane + 1) * l.inner < end ? (plane + 1) * l.inner : end;
    run_fn(plane % l.channels, start, stop - start);
    start = stop;
  }
}

// Per-channel sums over x with one partial row of `width` doubles per (channel, tile), added in tile
// order. run_fn(c, start, len, acc) adds the run's contribution to acc[0 .. width).
template <typename RunFn>
std::vector<double> reduce_channels(const lrelu::TilingPlan& plan, const Layout& l, int width,
                                    const RunFn& run_fn) {
  const int64_t row = width * l.channels;
  std::vector<double> partial(static_cast<size_t>(plan.total_tiles * row), 0.0);
  for_each_tile(plan, [&](int64_t start, int64_t len) {
    double* tile_acc = partial.data() + start / plan.tile_len * row;
    for_each_run(l, start, len, [&](int64_t c, int64_t s, int64_t n) { run_fn(c, s, n, tile_acc + width * c); });
  });
  std::vector<double> total(static_cast<size_t>(row), 0.0);
  for (int64_t t = 0; t < plan.total_tiles; ++t) {
    for (int64_t k = 0; k < row; ++k) total[k] += partial[t * row + k];
  }
  return total;
}


inline bool is(const char* dtype, const char* name) { return std::strcmp(dtype, name) == 0; }

inline bool is_float(const char* dtype) { return is(dtype, "float32") || is(dtype, "float16"); }

// True when inputs first .. first + count - 1 are float32 or float16.
inline bool floats_ok(const char** dtypes, int first, int count) {
  for (int k = first; k < first + count; ++k) {
    if (!is_float(dtypes[k])) return false;
  }
  return true;
}

// A per-channel tensor (float32 or float16, checked by floats_ok) as float32.
inline std::vector<float> widen(const void* p, const char* dtype, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  if (is(dtype, "float32")) {
    std::memcpy(out.data(), p, sizeof(float) * static_cast<size_t>(n));
  } else {
    const half* h = static_cast<const half*>(p);
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(h[i]);
  }
  return out;
}

// Write float32 values to an output of dtype float32 or float16 (rounded to nearest even once).
inline void narrow(const std::vector<float>& v, const char* dtype, void* out) {
  if (is(dtype, "float32")) {
    std::memcpy(out, v.data(), sizeof(float) * v.size());
  } else {
    half* h = static_cast<half*>(out);
    for (size_t i = 0; i < v.size(); ++i) h[i] = static_cast<half>(v[i]);
  }
}

}  // namespace cpu
}  // namespace lrelu

#endif  // LRELU_OPS_CSRC_CPU_KERNEL_COMMON_H_
