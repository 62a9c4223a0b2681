// Shared pieces of the CPU aot kernels (leaky_relu.cc, bn_act.cc, activations.cc): half/vector types, the
// rounding policies, the LeakyReLU element formula, the clamp, and the tile walk over the one
// tiling plan.
//
// The element formulas are written once over V (float, an 8-lane f8 or the widest vector fv) and a
// rounding policy R: identity for float32, round-to-nearest-even to float16 for float16 and to bfloat16 for
// bfloat16 (bfloat16.h: integer rounding, subnormals kept, the same bits in every path). map_elements
// writes a tile of an element-wise output in fv vectors (streaming stores for outputs far larger than the
// cache, see kStreamMinBytes) and floats for the rest.
#ifndef LRELU_OPS_CSRC_CPU_KERNEL_COMMON_H_
#define LRELU_OPS_CSRC_CPU_KERNEL_COMMON_H_

#include <cstdint>
#include <cstring>
#include <type_traits>
#if defined(__F16C__) || defined(__AVX512F__)
#include <immintrin.h>
#endif
#if defined(__SSE__)
#include <xmmintrin.h>
#endif
#include <vector>

#include "../params.h"
#include "../tiling.h"
#include "bfloat16.h"
#include "worker_pool.h"

namespace lrelu {
namespace cpu {

using half = _Float16;
#if defined(__F16C__)
using f8 = __m256;  // 8 floats; GCC vector extensions give it +, *, comparisons and ?: like a float
#endif
// fv: the widest float vector, one cache line of floats with AVX-512 (16 lanes), else f8.
#if defined(__AVX512F__)
#define LRELU_FV_LANES 16
using fv = __m512;
#elif defined(__F16C__)
#define LRELU_FV_LANES 8
using fv = f8;
#else
#define LRELU_FV_LANES 1
using fv = float;
#endif

constexpr int64_t kAlignBytes = 64;        // one cache line (and one AVX-512 register)
constexpr double kUsableFraction = 0.5;    // leave half of L2 to the other core's traffic and the stack
// Outputs of at least this many bytes are written with streaming (non-temporal) stores: they bypass the
// caches, which saves the read-for-ownership of every written line (1/3 of the traffic of a one-input
// element-wise op) but leaves the output out of cache for the next op. A one-off C++ measurement on this
// machine under load (one thread, 16-lane LeakyReLU then a pass reading the output back; ms plain /
// streaming): 16 MB 5.37 / 5.48, 32 MB 15.9 / 13.3, 64 MB 31.7 / 26.5; hence 32 MB. A DCGAN activation is at
// most 2 MB, so training never streams; scripts/bench/bench_op.py at 16M float32 (64 MB) does.
constexpr int64_t kStreamMinBytes = int64_t(32) << 20;

// Software prefetch distance of the kernels with a long per-vector formula (ELU's expm1/exp): 4 KiB ahead of
// the vector being loaded, one page, so the next page is in L1 before its first vector (the hardware
// prefetchers stop at page boundaries). It brings the ELU forward close to the LeakyReLU forward, the memory
// floor, which a prefetch does not change; other distances from 2 to 16 KiB do about as well
// (scripts/bench/bench_kernel.py times builds side by side).
constexpr int64_t kPrefetchBytes = 4096;

template <typename T>
inline void prefetch_ahead(const T* p) {
#if defined(__SSE__)
  // A prefetch never faults: the addresses past the end of the last tile are harmless.
  _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(p) + kPrefetchBytes), _MM_HINT_T0);
#endif
}

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
#if defined(__AVX512F__)
  static __m512 apply(__m512 v) { return _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT)); }
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
#endif
// The double sum of the float lanes of v (f8, or fv of 16 lanes), in lane order.
template <typename V>
inline double lane_sum(V v) {
  float lanes[sizeof(V) / sizeof(float)];
  std::memcpy(lanes, &v, sizeof v);
  double s = 0.0;
  for (float f : lanes) s += f;
  return s;
}
// ---- bfloat16 vectors: widen by shifting the bits up, narrow by bf16::round_bits's integer rounding, written
// once over GCC vector types: U is the uint32 vector as wide as the float vector V ----
typedef uint32_t u32x8 __attribute__((vector_size(32)));
typedef uint32_t u32x16 __attribute__((vector_size(64)));

// The rounded bf16 bits of each float lane of v, one per 32-bit lane (bf16::round_bits on each lane).
template <typename U, typename V>
inline U bf16_bits(V v) {
  U u;
  std::memcpy(&u, &v, sizeof u);
  const U high = u >> 16;
  const U rounded = (u + ((high & 1u) + 0x7FFFu)) >> 16;
  const U nan = (high & 0x8000u) | 0x7FC0u;
  return v != v ? nan : rounded;  // NaN compares unequal to itself
}

// The floats whose upper halves are the bf16 bits in each 32-bit lane.
template <typename V, typename U>
inline V bf16_widen(U bits) {
  const U shifted = bits << 16;
  V v;
  std::memcpy(&v, &shifted, sizeof v);
  return v;
}

struct Bf16Round {
  static float apply(float v) { return bf16::round(v); }
#if defined(__F16C__)
  static f8 apply(f8 v) { return bf16_widen<f8>(bf16_bits<u32x8>(v)); }
#endif
#if defined(__AVX512F__)
  static __m512 apply(__m512 v) { return bf16_widen<__m512>(bf16_bits<u32x16>(v)); }
#endif
};

#if defined(__F16C__)
inline f8 load8(const bf16* p) {
#if defined(__AVX2__)
  return bf16_widen<f8>(reinterpret_cast<u32x8>(_mm256_cvtepu16_epi32(_mm_loadu_si128(
      reinterpret_cast<const __m128i*>(p)))));
#else
  alignas(32) float lanes[8];
  for (int i = 0; i < 8; ++i) lanes[i] = static_cast<float>(p[i]);
  return _mm256_load_ps(lanes);
#endif
}
inline void store8(bf16* p, f8 v) {
#if defined(__AVX2__)
  const __m256i bits = reinterpret_cast<__m256i>(bf16_bits<u32x8>(v));  // 8 x 32-bit; pack to 16 bits, then
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(bits, bits), 0x08);  // join the halves
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(packed));
#else
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, v);
  for (int i = 0; i < 8; ++i) p[i] = bf16(lanes[i]);
#endif
}
#endif

#if LRELU_FV_LANES == 16
template <> inline fv splat<fv>(float s) { return _mm512_set1_ps(s); }
inline fv load_v(const float* p) { return _mm512_loadu_ps(p); }
inline fv load_v(const half* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
inline void store_v(float* p, fv v) { _mm512_storeu_ps(p, v); }
inline void store_v(half* p, fv v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}
inline fv load_v(const bf16* p) {
  return bf16_widen<fv>(reinterpret_cast<u32x16>(_mm512_cvtepu16_epi32(_mm256_loadu_si256(
      reinterpret_cast<const __m256i*>(p)))));
}
inline void store_v(bf16* p, fv v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(reinterpret_cast<__m512i>(
      bf16_bits<u32x16>(v))));
}
inline void stream_v(float* p, fv v) { _mm512_stream_ps(p, v); }  // p 64-byte aligned: one whole line
#elif LRELU_FV_LANES == 8
inline fv load_v(const float* p) { return load8(p); }
inline fv load_v(const half* p) { return load8(p); }
inline fv load_v(const bf16* p) { return load8(p); }
inline void store_v(float* p, fv v) { store8(p, v); }
inline void store_v(half* p, fv v) { store8(p, v); }
inline void store_v(bf16* p, fv v) { store8(p, v); }
#else
inline fv load_v(const float* p) { return *p; }
inline fv load_v(const half* p) { return static_cast<float>(*p); }
inline fv load_v(const bf16* p) { return static_cast<float>(*p); }
inline void store_v(float* p, fv v) { *p = v; }
inline void store_v(half* p, fv v) { *p = static_cast<half>(v); }
inline void store_v(bf16* p, fv v) { *p = bf16(v); }
#endif

template <typename T> struct RoundOf { using type = NoRound; };  // the rounding policy of a tensor dtype
template <> struct RoundOf<half> { using type = HalfRound; };
template <> struct RoundOf<bf16> { using type = Bf16Round; };

inline float widen1(float v) { return v; }
inline float widen1(half v) { return static_cast<float>(v); }
inline float widen1(bf16 v) { return static_cast<float>(v); }

// Unclamped LeakyReLU, rounded once by R. kMaxMin selects max(x,0) + slope*min(x,0). Both sides are
// computed and then selected, which keeps the tile loops branch-free. The slope is a float, or a V of
// per-lane slopes (the channels-last BatchNorm + activation kernels).
template <typename V, typename R, bool kMaxMin, typename S = float>
inline V forward_unclamped(V x, S slope) {
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

// The tiling plan of a CPU kernel call: threads_for(n, threads) cores (worker_pool.h), and
// tiles of at most kMinElementsPerThread elements: with L2-sized tiles (2^17 float32 elements of two live
// tensors on a 2 MiB L2) a DCGAN-32 activation had one or two tiles, so a second thread had nothing to do.
// The tiles depend on n only, never on the thread count, so the per-tile sums of the reductions (and the
// results) are the same for every thread count.
inline lrelu::TilingPlan make_plan(int64_t n, int64_t elem_size, int64_t threads, int64_t live_tensors) {
  static const int64_t l2_bytes = lrelu::cpu_default_buffer_bytes();
  const auto cap = static_cast<int64_t>(static_cast<double>(kMinElementsPerThread * elem_size * live_tensors) /
                                        kUsableFraction);
  const int64_t buffer_bytes = cap < l2_bytes ? cap : l2_bytes;
  const lrelu::TilingParams params = {n, elem_size, buffer_bytes, kUsableFraction, kAlignBytes,
                                      threads_for(n, threads), 1, live_tensors};
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
#if defined(__SSE__)
    _mm_sfence();  // this thread's streaming stores (map_elements) are visible before the join / return
#endif
  };
  WorkerPool::instance().run(static_cast<int>(plan.used_cores), [&run_core](int core) { run_core(core); });
}

// Whether a call writing n elements of elem_size bytes uses streaming stores: float32 outputs of at least
// kStreamMinBytes, with 16-lane vectors (one store fills a whole line; 32-byte streaming stores spread
// over a long formula leave lines half written, which is slower than plain stores).
inline bool streams(int64_t n, int64_t elem_size) {
#if LRELU_FV_LANES == 16
  return elem_size == 4 && n * elem_size >= kStreamMinBytes;
#else
  return false;
#endif
}

// out[i] = vec(i) (an fv, already rounded) for whole vectors and one(i) (a float) for the rest, for i in
// [start, start + len). With stream (streams() true), the elements before the first 64-byte boundary go
// through one() and the vectors through streaming stores. vec and one must agree bit for bit.
template <typename T, typename VecFn, typename OneFn>
inline void map_elements(T* out, int64_t start, int64_t len, bool stream, const VecFn& vec, const OneFn& one) {
  const int64_t end = start + len;
  int64_t i = start;
#if LRELU_FV_LANES == 16
  if constexpr (std::is_same_v<T, float>) {
    if (stream) {
      for (; i < end && reinterpret_cast<uintptr_t>(out + i) % kAlignBytes != 0; ++i) out[i] = one(i);
      for (; i + LRELU_FV_LANES <= end; i += LRELU_FV_LANES) stream_v(out + i, vec(i));
    }
  }
#endif
  for (; i + LRELU_FV_LANES <= end; i += LRELU_FV_LANES) store_v(out + i, vec(i));
  for (; i < end; ++i) out[i] = static_cast<T>(one(i));
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

// Sums of `row` doubles with one partial row per tile, added in tile order (the same result for every thread
// count). tile_fn(start, len, acc) adds the tile's contribution to acc[0 .. row).
template <typename TileFn>
std::vector<double> reduce_tiles(const lrelu::TilingPlan& plan, int64_t row, const TileFn& tile_fn) {
  std::vector<double> partial(static_cast<size_t>(plan.total_tiles * row), 0.0);
  for_each_tile(plan, [&](int64_t start, int64_t len) {
    tile_fn(start, len, partial.data() + start / plan.tile_len * row);
  });
  std::vector<double> total(static_cast<size_t>(row), 0.0);
  for (int64_t t = 0; t < plan.total_tiles; ++t) {
    for (int64_t k = 0; k < row; ++k) total[k] += partial[t * row + k];
  }
  return total;
}

// Per-channel sums over x with one partial row of `width` doubles per (channel, tile), added in tile
// order. run_fn(c, start, len, acc) adds the run's contribution to acc[0 .. width).
template <typename RunFn>
std::vector<double> reduce_channels(const lrelu::TilingPlan& plan, const Layout& l, int width,
                                    const RunFn& run_fn) {
  return reduce_tiles(plan, width * l.channels, [&](int64_t start, int64_t len, double* tile_acc) {
    for_each_run(l, start, len, [&](int64_t c, int64_t s, int64_t n) { run_fn(c, s, n, tile_acc + width * c); });
  });
}


inline bool is(const char* dtype, const char* name) { return std::strcmp(dtype, name) == 0; }

inline bool is_float(const char* dtype) { return is(dtype, "float32") || is(dtype, "float16") || is(dtype, "bfloat16"); }

// True when inputs first .. first + count - 1 are float32, float16 or bfloat16.
inline bool floats_ok(const char** dtypes, int first, int count) {
  for (int k = first; k < first + count; ++k) {
    if (!is_float(dtypes[k])) return false;
  }
  return true;
}

// A per-channel tensor (float32, float16 or bfloat16, checked by floats_ok) as float32.
inline std::vector<float> widen(const void* p, const char* dtype, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  if (is(dtype, "float32")) {
    std::memcpy(out.data(), p, sizeof(float) * static_cast<size_t>(n));
  } else if (is(dtype, "float16")) {
    const half* h = static_cast<const half*>(p);
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(h[i]);
  } else {
    const bf16* b = static_cast<const bf16*>(p);
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(b[i]);
  }
  return out;
}

// Write float32 values to an output of dtype float32, float16 or bfloat16 (rounded to nearest even once).
inline void narrow(const std::vector<float>& v, const char* dtype, void* out) {
  if (is(dtype, "float32")) {
    std::memcpy(out, v.data(), sizeof(float) * v.size());
  } else if (is(dtype, "float16")) {
    half* h = static_cast<half*>(out);
    for (size_t i = 0; i < v.size(); ++i) h[i] = static_cast<half>(v[i]);
  } else {
    bf16* b = static_cast<bf16*>(out);
    for (size_t i = 0; i < v.size(); ++i) b[i] = bf16(v[i]);
  }
}

// fn(T{}) with T the element type of a float32, float16 or bfloat16 tensor; 1 (bad dtype) otherwise.
template <typename Fn>
int by_dtype(const char* dtype, const Fn& fn) {
  if (is(dtype, "float32")) return fn(float{});
  if (is(dtype, "float16")) return fn(half{});
  if (is(dtype, "bfloat16")) return fn(bf16{});
  return 1;
}

}  // namespace cpu
}  // namespace lrelu

#endif  // LRELU_OPS_CSRC_CPU_KERNEL_COMMON_H_
