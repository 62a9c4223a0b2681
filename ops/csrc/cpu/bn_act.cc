// Fused per-channel affine (batch normalisation or bias) + LeakyReLU + gain + clamp, CPU aot kernels.
//
// x has shape (N, C, *inner) (channel axis 1, NCHW). Per channel c the kernels read a float32 (4, C)
// tensor `chan` = {gamma, beta, mean, rstd} and compute
//     z = (x - mean[c]) * (gamma[c] * rstd[c]) + beta[c]
//     y = clamp(gain * (z > 0 ? z : slope * z))       (clamp to [-clamp, clamp], NaN kept)
// in float32 and round once to x's dtype. A plain bias is gamma = 1, mean = 0, rstd = 1, beta = bias.
// Scalars travel as a float32[5] tensor {slope, clamp (+inf = none), gain, threads, batch_stats}.
//
// BnActStats  (x, scalars)              -> stats (2, C) float32: batch mean and biased variance
// BnActForward(x, chan, scalars)        -> y
// BnActBackward(x, dy, chan, scalars)   -> dx, dchan (4, C) = {dgamma, dbeta, 0, 0}
// With batch_stats = 1, mean and rstd are the batch statistics of x, and dx includes their
// dependence on x (the BatchNorm training backward); with 0 they are constants (eval mode, bias).
//
// Every kernel walks the shared tiling plan (kernel_common.h). Inside a tile the elements form runs
// of one channel, so the inner loops see per-channel constants. Per-channel reductions go into one
// partial row per tile and are summed in tile order after the threads join: deterministic results.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernel_common.h"

namespace {

using namespace lrelu::cpu;  // NOLINT: the shared kernel pieces

struct Scalars {
  float slope;
  float clamp;  // +inf when no clamp
  float gain;
  int64_t threads;
  bool batch_stats;
};

Scalars read_scalars(const void* p) {
  const float* f = static_cast<const float*>(p);
  const int64_t threads = f[3] >= 1.0f ? static_cast<int64_t>(f[3]) : 1;
  return {f[0], f[1], f[2], threads, f[4] != 0.0f};
}

struct Layout {
  int64_t n, channels, inner;  // elements; C; product of the dims after the channel axis
};

Layout read_layout(int ndim, const int64_t* shape) {
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

// Per-channel constants of the element formulas.
struct Affine {
  float a, beta, mean;  // z = (x - mean) * a + beta, a = gamma * rstd
};

Affine channel_affine(const float* chan, int64_t channels, int64_t c) {
  return {chan[c] * chan[3 * channels + c], chan[channels + c], chan[2 * channels + c]};
}

template <typename V>
inline V pre_activation(V x, const Affine& f) { return (x - f.mean) * f.a + f.beta; }

// Upstream gradient through gain, LeakyReLU and clamp at pre-activation z (float32 math).
template <typename V>
inline V act_grad(V z, V dy, const Scalars& s) {
  const V y = s.gain * forward_unclamped<V, NoRound, false>(z, s.slope);
  const V pass = z > 0.0f ? s.gain * dy : (s.gain * s.slope) * dy;
  return (y > s.clamp) | (y < -s.clamp) ? splat<V>(0.0f) : pass;
}

template <typename V>
inline V act_value(V z, const Scalars& s) {
  return clamp_value(s.gain * forward_unclamped<V, NoRound, false>(z, s.slope), s.clamp);
}

// ---- run loops: one channel, contiguous, __restrict__ pointers; 8 lanes where F16C/AVX exist ----

template <typename T>
__attribute__((noinline)) void stats_run(const T* __restrict__ x, int64_t len, float pivot, double* acc) {
  int64_t i = 0;
  double s1 = 0.0, s2 = 0.0;
#if defined(__F16C__)
  f8 v1 = splat<f8>(0.0f), v2 = splat<f8>(0.0f);
  for (; i + 8 <= len; i += 8) {
    const f8 d = load8(x + i) - pivot;
    v1 += d;
    v2 += d * d;
  }
  s1 = lane_sum(v1);
  s2 = lane_sum(v2);
#endif
  for (; i < len; ++i) {
    const double d = static_cast<double>(static_cast<float>(x[i]) - pivot);
    s1 += d;
    s2 += d * d;
  }
  acc[0] += s1;
  acc[1] += s2;
}

template <typename T>
__attribute__((noinline)) void forward_run(const T* __restrict__ x, T* __restrict__ y, int64_t len,
                                           const Affine f, const Scalars s) {
  int64_t i = 0;
#if defined(__F16C__)
  for (; i + 8 <= len; i += 8) store8(y + i, act_value<f8>(pre_activation<f8>(load8(x + i), f), s));
#endif
  for (; i < len; ++i) y[i] = static_cast<T>(act_value<float>(pre_activation<float>(static_cast<float>(x[i]), f), s));
}

// acc += {sum dz, sum dz * (x - mean)} over the run.
template <typename T>
__attribute__((noinline)) void grad_sums_run(const T* __restrict__ x, const T* __restrict__ dy, int64_t len,
                                             const Affine f, const Scalars s, double* acc) {
  int64_t i = 0;
  double s1 = 0.0, s2 = 0.0;
#if defined(__F16C__)
  f8 v1 = splat<f8>(0.0f), v2 = splat<f8>(0.0f);
  for (; i + 8 <= len; i += 8) {
    const f8 xv = load8(x + i);
    const f8 dz = act_grad<f8>(pre_activation<f8>(xv, f), load8(dy + i), s);
    v1 += dz;
    v2 += dz * (xv - f.mean);
  }
  s1 = lane_sum(v1);
  s2 = lane_sum(v2);
#endif
  for (; i < len; ++i) {
    const float xv = static_cast<float>(x[i]);
    const float dz = act_grad<float>(pre_activation<float>(xv, f), static_cast<float>(dy[i]), s);
    s1 += dz;
    s2 += static_cast<double>(dz * (xv - f.mean));
  }
  acc[0] += s1;
  acc[1] += s2;
}

// dx = a * (dz - k1 - (x - mean) * k2); k1 = k2 = 0 unless the statistics are batch statistics.
template <typename T>
__attribute__((noinline)) void input_grad_run(const T* __restrict__ x, const T* __restrict__ dy,
                                              T* __restrict__ dx, int64_t len, const Affine f, const Scalars s,
                                              float k1, float k2) {
  int64_t i = 0;
#if defined(__F16C__)
  for (; i + 8 <= len; i += 8) {
    const f8 xv = load8(x + i);
    const f8 dz = act_grad<f8>(pre_activation<f8>(xv, f), load8(dy + i), s);
    store8(dx + i, f.a * (dz - k1 - (xv - f.mean) * k2));
  }
#endif
  for (; i < len; ++i) {
    const float xv = static_cast<float>(x[i]);
    const float dz = act_grad<float>(pre_activation<float>(xv, f), static_cast<float>(dy[i]), s);
    dx[i] = static_cast<T>(f.a * (dz - k1 - (xv - f.mean) * k2));
  }
}

// ---- whole-tensor kernels ----

template <typename T>
int stats(const void* xv, const Layout& l, const Scalars& s, float* out) {
  const T* x = static_cast<const T*>(xv);
  const int64_t m = l.channels > 0 ? l.n / l.channels : 0;  // elements per channel
  if (m == 0) return l.channels > 0 ? 3 : 0;
  const lrelu::TilingPlan plan = make_plan(l.n, sizeof(T), s.threads, 1);
  if (plan.tile_len == 0) return 2;
  // Sums of (x - pivot), pivot = the channel's first element: no cancellation when |mean| >> std.
  std::vector<float> pivot(static_cast<size_t>(l.channels));
  for (int64_t c = 0; c < l.channels; ++c) pivot[c] = static_cast<float>(x[c * l.inner]);
  const std::vector<double> sums = reduce_channels(plan, l, 2, [&](int64_t c, int64_t start, int64_t len, double* acc) {
    stats_run(x + start, len, pivot[c], acc);
  });
  for (int64_t c = 0; c < l.channels; ++c) {
    const double d = sums[2 * c] / m;
    const double var = sums[2 * c + 1] / m - d * d;
    out[c] = static_cast<float>(pivot[c] + d);
    out[l.channels + c] = static_cast<float>(var > 0.0 ? var : 0.0);
  }
  return 0;
}

template <typename T>
int forward(const void* xv, const float* chan, const Layout& l, const Scalars& s, void* yv) {
  const lrelu::TilingPlan plan = make_plan(l.n, sizeof(T), s.threads, 2);
  if (plan.tile_len == 0 && l.n > 0) return 2;
  const T* x = static_cast<const T*>(xv);
  T* y = static_cast<T*>(yv);
  std::vector<Affine> f(static_cast<size_t>(l.channels));
  for (int64_t c = 0; c < l.channels; ++c) f[c] = channel_affine(chan, l.channels, c);
  for_each_tile(plan, [&](int64_t start, int64_t len) {
    for_each_run(l, start, len, [&](int64_t c, int64_t rs, int64_t rn) { forward_run(x + rs, y + rs, rn, f[c], s); });
  });
  return 0;
}

template <typename T>
int backward(const void* xv, const void* dyv, const float* chan, const Layout& l, const Scalars& s, void* dxv,
             float* dchan) {
  const lrelu::TilingPlan plan = make_plan(l.n, sizeof(T), s.threads, 3);
  if (plan.tile_len == 0 && l.n > 0) return 2;
  const T* x = static_cast<const T*>(xv);
  const T* dy = static_cast<const T*>(dyv);
  T* dx = static_cast<T*>(dxv);
  const int64_t C = l.channels;
  std::vector<Affine> f(static_cast<size_t>(C));
  for (int64_t c = 0; c < C; ++c) f[c] = channel_affine(chan, C, c);
  const std::vector<double> sums = reduce_channels(plan, l, 2, [&](int64_t c, int64_t start, int64_t len, double* acc) {
    grad_sums_run(x + start, dy + start, len, f[c], s, acc);
  });
  const double m = C > 0 ? static_cast<double>(l.n / C) : 0.0;
  std::vector<float> k1(static_cast<size_t>(C), 0.0f), k2(static_cast<size_t>(C), 0.0f);
  for (int64_t c = 0; c < C; ++c) {
    const double rstd = chan[3 * C + c];
    dchan[c] = static_cast<float>(rstd * sums[2 * c + 1]);  // dgamma
    dchan[C + c] = static_cast<float>(sums[2 * c]);         // dbeta
    dchan[2 * C + c] = 0.0f;
    dchan[3 * C + c] = 0.0f;
    if (s.batch_stats && m > 0) {
      k1[c] = static_cast<float>(sums[2 * c] / m);
      k2[c] = static_cast<float>(rstd * rstd * sums[2 * c + 1] / m);
    }
  }
  for_each_tile(plan, [&](int64_t start, int64_t len) {
    for_each_run(l, start, len, [&](int64_t c, int64_t rs, int64_t rn) {
      input_grad_run(x + rs, dy + rs, dx + rs, rn, f[c], s, k1[c], k2[c]);
    });
  });
  return 0;
}

bool is(const char* dtype, const char* name) { return std::strcmp(dtype, name) == 0; }

}  // namespace

extern "C" {

// Inputs: x (float32|float16, ndim >= 2), scalars (float32[5]); output: stats (float32 (2, C)).
// Returns 3 when a channel has no elements (a batch statistic is undefined).
int BnActStats(int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes,
               void* /*stream*/, void* /*extra*/) {
  if (nparam != 3 || ndims[0] < 2 || !is(dtypes[1], "float32") || !is(dtypes[2], "float32")) return 1;
  const Layout l = read_layout(ndims[0], shapes[0]);
  const Scalars s = read_scalars(params[1]);
  float* out = static_cast<float*>(params[2]);
  if (is(dtypes[0], "float32")) return stats<float>(params[0], l, s, out);
  if (is(dtypes[0], "float16")) return stats<half>(params[0], l, s, out);
  return 1;
}

// Inputs: x (float32|float16, ndim >= 2), chan (float32 (4, C)), scalars (float32[5]); output: y.
int BnActForward(int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes,
                 void* /*stream*/, void* /*extra*/) {
  if (nparam != 4 || ndims[0] < 2 || !is(dtypes[1], "float32") || !is(dtypes[2], "float32")) return 1;
  const Layout l = read_layout(ndims[0], shapes[0]);
  const Scalars s = read_scalars(params[2]);
  const float* chan = static_cast<const float*>(params[1]);
  if (is(dtypes[0], "float32")) return forward<float>(params[0], chan, l, s, params[3]);
  if (is(dtypes[0], "float16")) return forward<half>(params[0], chan, l, s, params[3]);
  return 1;
}

// Inputs: x, dy (same dtype), chan (float32 (4, C)), scalars (float32[5]); outputs: dx, dchan (4, C).
int BnActBackward(int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes,
                  void* /*stream*/, void* /*extra*/) {
  if (nparam != 6 || ndims[0] < 2 || !is(dtypes[0], dtypes[1]) || !is(dtypes[2], "float32") ||
      !is(dtypes[3], "float32")) {
    return 1;
  }
  const Layout l = read_layout(ndims[0], shapes[0]);
  const Scalars s = read_scalars(params[3]);
  const float* chan = static_cast<const float*>(params[2]);
  float* dchan = static_cast<float*>(params[5]);
  if (is(dtypes[0], "float32")) return backward<float>(params[0], params[1], chan, l, s, params[4], dchan);
  if (is(dtypes[0], "float16")) return backward<half>(params[0], params[1], chan, l, s, params[4], dchan);
  return 1;
}

}  // extern "C"
