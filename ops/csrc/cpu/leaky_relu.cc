// LeakyReLU CPU kernels for MindSpore `ops.Custom(func_type="aot")`: forward (two formulations) and backward.
//
// y = x > 0 ? x : slope * x, then optionally clamped to [-clamp, clamp] with NaN kept.
// float16 and bfloat16 values are widened to float, multiplied by the float32 slope and rounded once to the
// tensor's dtype (round to nearest even).
// The scalar parameters travel as one lrelu::ActParams (../params.h: slope, clamp (+inf = none), threads, ...)
// in an int32 tensor of float32 bit patterns, rather than as primitive attributes, because a second
// CustomRegOp registration with the same name keeps the first attribute value (MindSpore 2.10:
// the second registration silently runs with the first slope).
//
// Work is split by the shared tiling plan (../tiling.h): each worker thread is a "core" that walks its
// full tiles and, on the last core, the tail; the per-tile loops are kernel_common.h's map_elements.
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "kernel_common.h"

namespace {

using namespace lrelu::cpu;  // NOLINT: the shared kernel pieces

using Scalars = lrelu::ActParams;

template <typename V, typename R, bool kMaxMin>
inline V forward_value(V x, float slope, float clamp) {
  return R::apply(clamp_value(forward_unclamped<V, R, kMaxMin>(x, slope), clamp));
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

// The forward tiles may run in place (y == x): element i is read before y[i] is written and no other
// element is involved. Vectors of fv lanes (map_elements), streaming stores for large float32 outputs.
template <typename T, bool kMaxMin>
void forward_tile(const T* x, T* y, int64_t start, int64_t len, const Scalars& s, bool stream) {
  using R = typename RoundOf<T>::type;
  map_elements(y, start, len, stream,
               [&](int64_t i) { return forward_value<fv, R, kMaxMin>(load_v(x + i), s.slope, s.clamp); },
               [&](int64_t i) { return forward_value<float, R, kMaxMin>(widen1(x[i]), s.slope, s.clamp); });
}

template <typename T>
void backward_tile(const T* m, const T* dy, T* dx, int64_t start, int64_t len, const Scalars& s, bool stream) {
  using R = typename RoundOf<T>::type;
  map_elements(dx, start, len, stream,
               [&](int64_t i) { return backward_value<fv, R>(load_v(m + i), load_v(dy + i), s.slope, s.clamp); },
               [&](int64_t i) { return backward_value<float, R>(widen1(m[i]), widen1(dy[i]), s.slope, s.clamp); });
}

template <typename T, bool kMaxMin>
int forward(void* x, const Scalars& s, void* y, int64_t n) {
  const lrelu::TilingPlan plan = make_plan(n, sizeof(T), lrelu::thread_count(s.threads), 2);
  if (plan.tile_len == 0 && n > 0) return 2;
  const T* xp = static_cast<const T*>(x);
  T* yp = static_cast<T*>(y);
  const bool stream = streams(n, sizeof(T));
  for_each_tile(plan, [xp, yp, &s, stream](int64_t start, int64_t len) {
    forward_tile<T, kMaxMin>(xp, yp, start, len, s, stream);
  });
  return 0;
}

template <typename T>
int backward(void* m, void* dy, const Scalars& s, void* dx, int64_t n) {
  const lrelu::TilingPlan plan = make_plan(n, sizeof(T), lrelu::thread_count(s.threads), 3);
  if (plan.tile_len == 0 && n > 0) return 2;
  const T* mp = static_cast<const T*>(m);
  const T* dyp = static_cast<const T*>(dy);
  T* dxp = static_cast<T*>(dx);
  const bool stream = streams(n, sizeof(T));
  for_each_tile(plan, [mp, dyp, dxp, &s, stream](int64_t start, int64_t len) {
    backward_tile(mp, dyp, dxp, start, len, s, stream);
  });
  return 0;
}

// The result goes to the output params[2] (inplace=True computes out of place too: ops/api.py InplaceLeakyReLU).
template <bool kMaxMin>
int forward_entry(int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes) {
  if (nparam != 3 || !lrelu::params_ok<Scalars>(dtypes[1], ndims[1], shapes[1])) return 1;
  const int64_t n = element_count(ndims[0], shapes[0]);
  const Scalars s = lrelu::read_params<Scalars>(params[1]);
  return by_dtype(dtypes[0], [&](auto t) {
    using T = decltype(t);
    return forward<T, kMaxMin>(params[0], s, params[2], n);
  });
}

}  // namespace

extern "C" {

// Inputs: x (float32|float16|bfloat16), scalars (ActParams); output: y (dtype of x).
int LeakyReluForwardSelect(int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes,
                           void* /*stream*/, void* /*extra*/) {
  return forward_entry<false>(nparam, params, ndims, shapes, dtypes);
}

int LeakyReluForwardMaxMin(int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes,
                           void* /*stream*/, void* /*extra*/) {
  return forward_entry<true>(nparam, params, ndims, shapes, dtypes);
}

// Inputs: m (forward input x, or output y in place), dy, scalars (ActParams); output: dx.
int LeakyReluBackward(int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes,
                      void* /*stream*/, void* /*extra*/) {
  if (nparam != 4 || std::strcmp(dtypes[0], dtypes[1]) != 0 || !lrelu::params_ok<Scalars>(dtypes[2], ndims[2], shapes[2])) return 1;
  const int64_t n = element_count(ndims[0], shapes[0]);
  const Scalars s = lrelu::read_params<Scalars>(params[2]);
  return by_dtype(dtypes[0], [&](auto t) { return backward<decltype(t)>(params[0], params[1], s, params[3], n); });
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

// Stress check of the worker pool: `callers` threads at once each run `rounds` jobs of n indices (a busy pool
// runs a second caller's job on that caller's thread); returns how many (job, index) pairs did not run
// exactly once.
int64_t WorkerPoolMiscount(int n, int rounds, int callers) {
  std::atomic<int64_t> wrong{0};
  auto caller = [&] {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    for (int r = 0; r < rounds; ++r) {
      for (auto& h : hits) h.store(0);
      lrelu::cpu::WorkerPool::instance().run(n, [&hits](int i) { hits[static_cast<size_t>(i)].fetch_add(1); });
      for (auto& h : hits) wrong += h.load() != 1;
    }
  };
  std::vector<std::thread> others;
  for (int c = 1; c < callers; ++c) others.emplace_back(caller);
  caller();
  for (std::thread& t : others) t.join();
  return wrong.load();
}

}  // extern "C"
