// Fused per-channel affine (batch normalisation or bias) + LeakyReLU + gain + clamp, CPU aot kernels.
//
// x has shape (N, C, *inner) (channel axis 1, NCHW), or (N, *inner, C) with the scalars' channels_last (NHWC);
// float32, float16 or bfloat16. With per-channel gamma, beta,
// mean, var (float32, or float16/bfloat16 where mixed precision O3 cast them; widened to float32 once per call):
//     z = (x - mean[c]) * (gamma[c] / sqrt(var[c] + eps)) + beta[c]
//     y = clamp(gain * (z > 0 ? z : slope * z))       (clamp to [-clamp, clamp], NaN kept)
// in float32, rounded once to x's dtype. A plain bias is gamma = 1, mean = 0, var = 1 - eps, beta = bias.
// Scalars travel as one lrelu::BnActParams (../params.h: slope, clamp (+inf = none), gain, threads, batch_stats,
// eps, momentum, channels_last) in an int32 tensor of float32 bit patterns, which mixed precision does not cast. Separate (C,) tensors rather than one packed tensor keep the MindSpore graph free of
// concat/split ops, whose launch costs more than the kernels at DCGAN sizes.
//
// BnActStats   (x, moving_mean, moving_var, scalars)  -> mean, var (biased), new moving_mean, moving_var
//              (moving = momentum * moving + (1 - momentum) * batch, unbiased batch variance)
// BnActForward (x, gamma, beta, mean, var, scalars)     -> y
// BnActBackward(x, dy, gamma, beta, mean, var, scalars) -> dx, dgamma, dbeta
// BnPreluForward / BnPreluBackward: the same with a PReLU weight input ((1,) or (C,)) before the scalars
//              replacing the slope per channel; the backward also returns dweight[c] = sum over z <= 0 (not
//              clamped) of gain * dy * z, reduced in the same pass as dgamma and dbeta.
// With batch_stats = 1, mean and var are the batch statistics of x, and dx includes their dependence
// on x (the BatchNorm training backward); with 0 they are constants (eval mode, bias).
//
// Every kernel walks the shared tiling plan (kernel_common.h). Inside a tile the elements form runs
// of one channel, so the inner loops see per-channel constants. Per-channel reductions go into one
// partial row per tile and are summed in tile order after the threads join: deterministic results.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernel_common.h"

namespace {

using namespace lrelu::cpu;  // NOLINT: the shared kernel pieces

using Scalars = lrelu::BnActParams;

// Threads as an integer, read once per call.
inline int64_t threads_of(const Scalars& s) { return lrelu::thread_count(s.threads); }

// Per-channel constants of the element formulas.
struct Affine {
  float a, beta, mean, rstd, slope;  // slope: the LeakyReLU slope, or the channel's PReLU weight  // z = (x - mean) * a + beta, a = gamma * rstd, rstd = 1 / sqrt(var + eps)
};

// Per-channel inputs as float32: gamma, beta, mean, var.
struct Channels {
  std::vector<float> gamma, beta, mean, var, slope;  // slope: the LeakyReLU slope or the PReLU weight per channel
};

std::vector<Affine> channel_affines(const Channels& ch, int64_t channels, float eps) {
  std::vector<Affine> f(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) {
    const float rstd = 1.0f / std::sqrt(ch.var[c] + eps);
    f[c] = {ch.gamma[c] * rstd, ch.beta[c], ch.mean[c], rstd, ch.slope[c]};
  }
  return f;
}

// The per-channel constants as one lane's: an Affine (floats), or a LaneAffine of V (channels-last, a channel per lane).
template <typename V>
struct LaneAffine {
  V a, beta, mean, slope;
};

template <typename V, typename F>
inline V pre_activation(V x, const F& f) { return (x - f.mean) * f.a + f.beta; }

// Upstream gradient through gain, LeakyReLU and clamp at pre-activation z (float32 math).
template <typename V, typename F>
inline V act_grad(V z, V dy, const F& f, const Scalars& s) {
  const V y = s.gain * forward_unclamped<V, NoRound, false>(z, f.slope);
  const V pass = z > 0.0f ? s.gain * dy : (s.gain * f.slope) * dy;
  return (y > s.clamp) | (y < -s.clamp) ? splat<V>(0.0f) : pass;
}

// The slope's gradient contribution at z: gain * dy * z where z <= 0 and the output was not clamped.
template <typename V, typename F>
inline V slope_grad(V z, V dy, const F& f, const Scalars& s) {
  const V y = s.gain * forward_unclamped<V, NoRound, false>(z, f.slope);
  return (z > 0.0f) | (y > s.clamp) | (y < -s.clamp) ? splat<V>(0.0f) : s.gain * dy * z;
}

template <typename V, typename F>
inline V act_value(V z, const F& f, const Scalars& s) {
  return clamp_value(s.gain * forward_unclamped<V, NoRound, false>(z, f.slope), s.clamp);
}

// ---- run loops: one channel, contiguous, __restrict__ pointers. Each runs its V-wide loop (*_lanes) 16 lanes
// at a time where AVX-512 exists, then 8 where F16C/AVX do, then one by one (the element-wise results are the
// same bits at every width; the sums add their lanes in another order) ----

#if defined(__F16C__)
// The loads and stores of a V-wide loop: V is f8, or fv where it has 16 lanes.
template <typename V, typename T>
inline V load_lanes(const T* p) {
  if constexpr (sizeof(V) == sizeof(f8)) return load8(p); else return load_v(p);
}
template <typename V, typename T>
inline void store_lanes(T* p, V v) {
  if constexpr (sizeof(V) == sizeof(f8)) store8(p, v); else store_v(p, v);
}

// Each *_lanes loop starts at element i, stops before the first V-wide group that does not fit in len, adds its
// lane sums (if any) to the doubles, and returns where it stopped.
template <typename V, typename T>
inline int64_t stats_lanes(const T* __restrict__ x, int64_t i, int64_t len, float pivot, double* s) {
  constexpr int64_t n = sizeof(V) / sizeof(float);
  V v1 = splat<V>(0.0f), v2 = splat<V>(0.0f);
  for (; i + n <= len; i += n) {
    const V d = load_lanes<V>(x + i) - pivot;
    v1 += d;
    v2 += d * d;
  }
  s[0] += lane_sum(v1);
  s[1] += lane_sum(v2);
  return i;
}

template <typename V, typename T>
inline int64_t forward_lanes(const T* __restrict__ x, T* __restrict__ y, int64_t i, int64_t len, const Affine& f,
                             const Scalars& s) {
  constexpr int64_t n = sizeof(V) / sizeof(float);
  for (; i + n <= len; i += n) store_lanes<V>(y + i, act_value<V>(pre_activation<V>(load_lanes<V>(x + i), f), f, s));
  return i;
}

template <typename V, typename T, bool kSlopeGrad>
inline int64_t grad_sums_lanes(const T* __restrict__ x, const T* __restrict__ dy, int64_t i, int64_t len,
                               const Affine& f, const Scalars& s, double* sums) {
  constexpr int64_t n = sizeof(V) / sizeof(float);
  V v1 = splat<V>(0.0f), v2 = splat<V>(0.0f), v3 = splat<V>(0.0f);
  for (; i + n <= len; i += n) {
    const V xv = load_lanes<V>(x + i);
    const V z = pre_activation<V>(xv, f);
    const V dyv = load_lanes<V>(dy + i);
    const V dz = act_grad<V>(z, dyv, f, s);
    v1 += dz;
    v2 += dz * (xv - f.mean);
    if (kSlopeGrad) v3 += slope_grad<V>(z, dyv, f, s);
  }
  sums[0] += lane_sum(v1);
  sums[1] += lane_sum(v2);
  if (kSlopeGrad) sums[2] += lane_sum(v3);
  return i;
}

template <typename V, typename T>
inline int64_t input_grad_lanes(const T* __restrict__ x, const T* __restrict__ dy, T* __restrict__ dx, int64_t i,
                                int64_t len, const Affine& f, const Scalars& s, float k1, float k2) {
  constexpr int64_t n = sizeof(V) / sizeof(float);
  for (; i + n <= len; i += n) {
    const V xv = load_lanes<V>(x + i);
    const V dz = act_grad<V>(pre_activation<V>(xv, f), load_lanes<V>(dy + i), f, s);
    store_lanes<V>(dx + i, f.a * (dz - k1 - (xv - f.mean) * k2));
  }
  return i;
}

#endif  // __F16C__

template <typename T>
__attribute__((noinline)) void stats_run(const T* __restrict__ x, int64_t len, float pivot, double* acc) {
  int64_t i = 0;
  double s[2] = {0.0, 0.0};
#if LRELU_FV_LANES == 16
  i = stats_lanes<fv>(x, i, len, pivot, s);
#endif
#if defined(__F16C__)
  i = stats_lanes<f8>(x, i, len, pivot, s);
#endif
  for (; i < len; ++i) {
    const double d = static_cast<double>(static_cast<float>(x[i]) - pivot);
    s[0] += d;
    s[1] += d * d;
  }
  acc[0] += s[0];
  acc[1] += s[1];
}

template <typename T>
__attribute__((noinline)) void forward_run(const T* __restrict__ x, T* __restrict__ y, int64_t len,
                                           const Affine f, const Scalars s) {
  int64_t i = 0;
#if LRELU_FV_LANES == 16
  i = forward_lanes<fv>(x, y, i, len, f, s);
#endif
#if defined(__F16C__)
  i = forward_lanes<f8>(x, y, i, len, f, s);
#endif
  for (; i < len; ++i) y[i] = static_cast<T>(act_value<float>(pre_activation<float>(static_cast<float>(x[i]), f), f, s));
}

// acc += {sum dz, sum dz * (x - mean)} over the run, and with kSlopeGrad also the PReLU weight's sum.
template <typename T, bool kSlopeGrad>
__attribute__((noinline)) void grad_sums_run(const T* __restrict__ x, const T* __restrict__ dy, int64_t len,
                                             const Affine f, const Scalars s, double* acc) {
  int64_t i = 0;
  double sums[3] = {0.0, 0.0, 0.0};
#if LRELU_FV_LANES == 16
  i = grad_sums_lanes<fv, T, kSlopeGrad>(x, dy, i, len, f, s, sums);
#endif
#if defined(__F16C__)
  i = grad_sums_lanes<f8, T, kSlopeGrad>(x, dy, i, len, f, s, sums);
#endif
  for (; i < len; ++i) {
    const float xv = static_cast<float>(x[i]);
    const float z = pre_activation<float>(xv, f);
    const float dyv = static_cast<float>(dy[i]);
    const float dz = act_grad<float>(z, dyv, f, s);
    sums[0] += dz;
    sums[1] += static_cast<double>(dz * (xv - f.mean));
    if (kSlopeGrad) sums[2] += static_cast<double>(slope_grad<float>(z, dyv, f, s));
  }
  acc[0] += sums[0];
  acc[1] += sums[1];
  if (kSlopeGrad) acc[2] += sums[2];
}

// dx = a * (dz - k1 - (x - mean) * k2); k1 = k2 = 0 unless the statistics are batch statistics.
template <typename T>
__attribute__((noinline)) void input_grad_run(const T* __restrict__ x, const T* __restrict__ dy,
                                              T* __restrict__ dx, int64_t len, const Affine f, const Scalars s,
                                              float k1, float k2) {
  int64_t i = 0;
#if LRELU_FV_LANES == 16
  i = input_grad_lanes<fv>(x, dy, dx, i, len, f, s, k1, k2);
#endif
#if defined(__F16C__)
  i = input_grad_lanes<f8>(x, dy, dx, i, len, f, s, k1, k2);
#endif
  for (; i < len; ++i) {
    const float xv = static_cast<float>(x[i]);
    const float dz = act_grad<float>(pre_activation<float>(xv, f), static_cast<float>(dy[i]), f, s);
    dx[i] = static_cast<T>(f.a * (dz - k1 - (xv - f.mean) * k2));
  }
}

// ---- channels-last (NHWC: x is (N, *spatial, C), the channel of element i is i % C) ----
// The V-wide loops run across the consecutive channels of one position, with a LaneAffine of per-lane constants:
// the same element formulas as the runs above, so the same bits. The sums add kRowBlock positions at a time in
// float, in memory order, then each channel's float sum goes into its double.

// Loads and stores of V lanes (f8, fv) or of one float.
template <typename V, typename T>
inline V load_any(const T* p) {
#if defined(__F16C__)
  if constexpr (!std::is_same_v<V, float>) return load_lanes<V>(p); else
#endif
  return static_cast<float>(*p);
}

template <typename V, typename T>
inline void store_any(T* p, V v) {
#if defined(__F16C__)
  if constexpr (!std::is_same_v<V, float>) { store_lanes<V>(p, v); return; }
#endif
  if constexpr (std::is_same_v<V, float>) *p = static_cast<T>(v);
}

// The per-channel constants as arrays, read V channels at a time.
struct LaneTables {
  std::vector<float> a, beta, mean, slope;
};

LaneTables lane_tables(const std::vector<Affine>& f) {
  LaneTables t;
  for (const Affine& g : f) {
    t.a.push_back(g.a);
    t.beta.push_back(g.beta);
    t.mean.push_back(g.mean);
    t.slope.push_back(g.slope);
  }
  return t;
}

template <typename V>
inline LaneAffine<V> lane_affine(const LaneTables& t, int64_t c) {
  return {load_any<V>(t.a.data() + c), load_any<V>(t.beta.data() + c), load_any<V>(t.mean.data() + c),
          load_any<V>(t.slope.data() + c)};
}

// fn(V{}, i, c) over the elements [start, start + len) of a tensor of C channels: groups of V lanes of consecutive
// channels of one position, 16 lanes where AVX-512 exists, then 8, then one float.
template <typename Fn>
void for_each_lane_group(int64_t C, int64_t start, int64_t len, const Fn& fn) {
  const int64_t end = start + len;
  for (int64_t i = start, c = start % C; i < end; c = 0) {
    const int64_t stop = std::min(end, i + C - c);  // the end of this position's channels
#if LRELU_FV_LANES == 16
    for (; i + 16 <= stop; i += 16, c += 16) fn(fv{}, i, c);
#endif
#if defined(__F16C__)
    for (; i + 8 <= stop; i += 8, c += 8) fn(f8{}, i, c);
#endif
    for (; i < stop; ++i, ++c) fn(0.0f, i, c);
  }
}

constexpr int64_t kRowBlock = 32;  // positions summed in float lanes before they go into the doubles

// acc[W * c + k] += the sum of term(V{}, i, c)[k] (a std::array<V, W>) over the elements i of channel c in
// [start, start + len). The positions are read in memory order (the hardware prefetchers follow it), kRowBlock at a
// time into W rows of C floats, which are then added to the doubles.
template <int W, typename Term>
void channels_last_sums(int64_t C, int64_t start, int64_t len, double* acc, const Term& term) {
  std::vector<float> block(static_cast<size_t>(W * C));
  auto add = [&](int64_t from, int64_t to) {
    std::fill(block.begin(), block.end(), 0.0f);
    for_each_lane_group(C, from, to - from, [&](auto v, int64_t i, int64_t c) {
      using V = decltype(v);
      const std::array<V, W> t = term(v, i, c);
      for (int k = 0; k < W; ++k) {
        float* b = block.data() + k * C + c;
        store_any<V>(b, load_any<V>(b) + t[k]);
      }
    });
    for (int k = 0; k < W; ++k) {
      for (int64_t c = 0; c < C; ++c) acc[W * c + k] += block[k * C + c];
    }
  };
  const int64_t end = start + len;
  for (int64_t from = start; from < end;) {  // blocks ending at position boundaries: kRowBlock positions or fewer
    const int64_t to = std::min(end, (from / C + kRowBlock) * C);
    add(from, to);
    from = to;
  }
}

// The channel layout of x: channels on axis 1, or the last axis with channels_last.
Layout layout_of(int ndim, const int64_t* shape, const Scalars& s) {
  if (s.channels_last == 0.0f) return read_layout(ndim, shape);
  return {element_count(ndim, shape), shape[ndim - 1], 1};
}

// ---- whole-tensor kernels ----

// out: mean, var, moving_mean, moving_var (C each); moving_* are read from `moving` and updated.
template <typename T>
int stats(const void* xv, const float* moving_mean, const float* moving_var, const Layout& l, const Scalars& s,
          float* const out[4]) {
  const T* x = static_cast<const T*>(xv);
  const int64_t m = l.channels > 0 ? l.n / l.channels : 0;  // elements per channel
  if (m == 0) return l.channels > 0 ? 3 : 0;
  const lrelu::TilingPlan plan = make_plan(l.n, sizeof(T), threads_of(s), 1);
  if (plan.tile_len == 0) return 2;
  // Sums of (x - pivot), pivot = the channel's first element: no cancellation when |mean| >> std.
  std::vector<float> pivot(static_cast<size_t>(l.channels));
  for (int64_t c = 0; c < l.channels; ++c) pivot[c] = static_cast<float>(x[c * l.inner]);
  const std::vector<double> sums =
      s.channels_last != 0.0f
          ? reduce_tiles(plan, 2 * l.channels, [&](int64_t start, int64_t len, double* acc) {
              channels_last_sums<2>(l.channels, start, len, acc, [&](auto v, int64_t i, int64_t c) {
                using V = decltype(v);
                const V d = load_any<V>(x + i) - load_any<V>(pivot.data() + c);
                return std::array<V, 2>{d, d * d};
              });
            })
          : reduce_channels(plan, l, 2, [&](int64_t c, int64_t start, int64_t len, double* acc) {
              stats_run(x + start, len, pivot[c], acc);
            });
  for (int64_t c = 0; c < l.channels; ++c) {
    const double d = sums[2 * c] / m;
    const double var = sums[2 * c + 1] / m - d * d;
    const double biased = var > 0.0 ? var : 0.0;
    out[0][c] = static_cast<float>(pivot[c] + d);
    out[1][c] = static_cast<float>(biased);
    out[2][c] = static_cast<float>(s.momentum * moving_mean[c] + (1.0 - s.momentum) * (pivot[c] + d));
    out[3][c] = static_cast<float>(s.momentum * moving_var[c] + (1.0 - s.momentum) * biased * m / (m - 1));
  }
  return 0;
}

template <typename T>
int forward(const void* xv, const Channels& ch, const Layout& l, const Scalars& s, void* yv) {
  const lrelu::TilingPlan plan = make_plan(l.n, sizeof(T), threads_of(s), 2);
  if (plan.tile_len == 0 && l.n > 0) return 2;
  const T* x = static_cast<const T*>(xv);
  T* y = static_cast<T*>(yv);
  const std::vector<Affine> f = channel_affines(ch, l.channels, s.eps);
  if (s.channels_last != 0.0f) {
    const LaneTables t = lane_tables(f);
    for_each_tile(plan, [&](int64_t start, int64_t len) {
      for_each_lane_group(l.channels, start, len, [&](auto v, int64_t i, int64_t c) {
        using V = decltype(v);
        const LaneAffine<V> g = lane_affine<V>(t, c);
        store_any<V>(y + i, act_value<V>(pre_activation<V>(load_any<V>(x + i), g), g, s));
      });
    });
    return 0;
  }
  for_each_tile(plan, [&](int64_t start, int64_t len) {
    for_each_run(l, start, len, [&](int64_t c, int64_t rs, int64_t rn) { forward_run(x + rs, y + rs, rn, f[c], s); });
  });
  return 0;
}

// With kSlopeGrad also dslope[c] = sum gain * dy * z over z <= 0 (not clamped): the PReLU weight's gradient.
template <typename T, bool kSlopeGrad>
int backward(const void* xv, const void* dyv, const Channels& ch, const Layout& l, const Scalars& s, void* dxv,
             float* dgamma, float* dbeta, float* dslope) {
  const lrelu::TilingPlan plan = make_plan(l.n, sizeof(T), threads_of(s), 3);
  if (plan.tile_len == 0 && l.n > 0) return 2;
  const T* x = static_cast<const T*>(xv);
  const T* dy = static_cast<const T*>(dyv);
  T* dx = static_cast<T*>(dxv);
  const int64_t C = l.channels;
  const std::vector<Affine> f = channel_affines(ch, C, s.eps);
  constexpr int kWidth = kSlopeGrad ? 3 : 2;
  const bool last = s.channels_last != 0.0f;
  const LaneTables t = last ? lane_tables(f) : LaneTables{};
  const std::vector<double> sums =
      last ? reduce_tiles(plan, kWidth * C, [&](int64_t start, int64_t len, double* acc) {
               channels_last_sums<kWidth>(C, start, len, acc, [&](auto v, int64_t i, int64_t c) {
                 using V = decltype(v);
                 const LaneAffine<V> g = lane_affine<V>(t, c);
                 const V xv = load_any<V>(x + i), dyv = load_any<V>(dy + i);
                 const V z = pre_activation<V>(xv, g);
                 const V dz = act_grad<V>(z, dyv, g, s);
                 std::array<V, kWidth> out;
                 out[0] = dz;
                 out[1] = dz * (xv - g.mean);
                 if constexpr (kSlopeGrad) out[2] = slope_grad<V>(z, dyv, g, s);
                 return out;
               });
             })
           : reduce_channels(plan, l, kWidth, [&](int64_t c, int64_t start, int64_t len, double* acc) {
               grad_sums_run<T, kSlopeGrad>(x + start, dy + start, len, f[c], s, acc);
             });
  const double m = C > 0 ? static_cast<double>(l.n / C) : 0.0;
  std::vector<float> k1(static_cast<size_t>(C), 0.0f), k2(static_cast<size_t>(C), 0.0f);
  for (int64_t c = 0; c < C; ++c) {
    const double rstd = f[c].rstd;
    dgamma[c] = static_cast<float>(rstd * sums[kWidth * c + 1]);
    dbeta[c] = static_cast<float>(sums[kWidth * c]);
    if (kSlopeGrad) dslope[c] = static_cast<float>(sums[kWidth * c + 2]);
    if (s.batch_stats != 0.0f && m > 0) {
      k1[c] = static_cast<float>(sums[kWidth * c] / m);
      k2[c] = static_cast<float>(rstd * rstd * sums[kWidth * c + 1] / m);
    }
  }
  for_each_tile(plan, [&](int64_t start, int64_t len) {
    if (last) {
      for_each_lane_group(C, start, len, [&](auto v, int64_t i, int64_t c) {
        using V = decltype(v);
        const LaneAffine<V> g = lane_affine<V>(t, c);
        const V xv = load_any<V>(x + i);
        const V dz = act_grad<V>(pre_activation<V>(xv, g), load_any<V>(dy + i), g, s);
        store_any<V>(dx + i, g.a * (dz - load_any<V>(k1.data() + c) - (xv - g.mean) * load_any<V>(k2.data() + c)));
      });
      return;
    }
    for_each_run(l, start, len, [&](int64_t c, int64_t rs, int64_t rn) {
      input_grad_run(x + rs, dy + rs, dx + rs, rn, f[c], s, k1[c], k2[c]);
    });
  });
  return 0;
}

// gamma, beta, mean, var from inputs first .. first + 3; the slope of every channel is `slope`.
Channels read_channels(void** params, const char** dtypes, int first, int64_t channels, float slope) {
  return {widen(params[first], dtypes[first], channels), widen(params[first + 1], dtypes[first + 1], channels),
          widen(params[first + 2], dtypes[first + 2], channels), widen(params[first + 3], dtypes[first + 3], channels),
          std::vector<float>(static_cast<size_t>(channels), slope)};
}

// The PReLU weight at input k ((1,) or (C,), float32|float16|bfloat16) as the per-channel slopes; false if misshapen.
bool read_weight_slopes(void** params, int* ndims, int64_t** shapes, const char** dtypes, int k, int64_t channels,
                        std::vector<float>* slope) {
  const int64_t count = ndims[k] == 1 ? shapes[k][0] : -1;
  if (!is_float(dtypes[k]) || (count != 1 && count != channels)) return false;
  const std::vector<float> w = widen(params[k], dtypes[k], count);
  for (int64_t c = 0; c < channels; ++c) (*slope)[c] = w[count == 1 ? 0 : c];
  return true;
}

}  // namespace

extern "C" {

// Inputs: x (float32|float16|bfloat16, ndim >= 2), moving_mean, moving_var (float32|float16|bfloat16 (C,)),
// scalars (BnActParams);
// outputs: mean, var, new moving_mean, new moving_var (float32 (C,)).
// Returns 3 when a channel has no elements (a batch statistic is undefined).
int BnActStats(int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes,
               void* /*stream*/, void* /*extra*/) {
  if (nparam != 8 || ndims[0] < 2 || !floats_ok(dtypes, 1, 2) || !lrelu::params_ok<Scalars>(dtypes[3], ndims[3], shapes[3])) return 1;
  for (int k = 4; k < 8; ++k) {
    if (!is(dtypes[k], "float32")) return 1;
  }
  const Scalars s = lrelu::read_params<Scalars>(params[3]);
  const Layout l = layout_of(ndims[0], shapes[0], s);
  const std::vector<float> mm = widen(params[1], dtypes[1], l.channels);
  const std::vector<float> mv = widen(params[2], dtypes[2], l.channels);
  float* const out[4] = {static_cast<float*>(params[4]), static_cast<float*>(params[5]),
                         static_cast<float*>(params[6]), static_cast<float*>(params[7])};
  return by_dtype(dtypes[0], [&](auto t) { return stats<decltype(t)>(params[0], mm.data(), mv.data(), l, s, out); });
}

// Inputs: x (float32|float16|bfloat16, ndim >= 2), gamma, beta, mean, var (float32|float16|bfloat16 (C,)),
// scalars (BnActParams);
// output: y (dtype of x).
int BnActForward(int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes,
                 void* /*stream*/, void* /*extra*/) {
  if (nparam != 7 || ndims[0] < 2 || !floats_ok(dtypes, 1, 4) || !lrelu::params_ok<Scalars>(dtypes[5], ndims[5], shapes[5])) return 1;
  const Scalars s = lrelu::read_params<Scalars>(params[5]);
  const Layout l = layout_of(ndims[0], shapes[0], s);
  const Channels ch = read_channels(params, dtypes, 1, l.channels, s.slope);
  return by_dtype(dtypes[0], [&](auto t) { return forward<decltype(t)>(params[0], ch, l, s, params[6]); });
}

// Inputs: x, dy (same dtype), gamma, beta, mean, var (float32|float16|bfloat16 (C,)), scalars (BnActParams);
// outputs: dx (dtype of x), dgamma, dbeta (dtype of gamma, float32 math).
int BnActBackward(int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes,
                  void* /*stream*/, void* /*extra*/) {
  if (nparam != 10 || ndims[0] < 2 || !is(dtypes[0], dtypes[1]) || !floats_ok(dtypes, 2, 4) ||
      !lrelu::params_ok<Scalars>(dtypes[6], ndims[6], shapes[6]) || !floats_ok(dtypes, 8, 2)) {
    return 1;
  }
  const Scalars s = lrelu::read_params<Scalars>(params[6]);
  const Layout l = layout_of(ndims[0], shapes[0], s);
  const Channels ch = read_channels(params, dtypes, 2, l.channels, s.slope);
  std::vector<float> dgamma(static_cast<size_t>(l.channels)), dbeta(static_cast<size_t>(l.channels));
  const int status = by_dtype(dtypes[0], [&](auto t) {
    return backward<decltype(t), false>(params[0], params[1], ch, l, s, params[7], dgamma.data(), dbeta.data(), nullptr);
  });
  if (status != 0) return status;
  narrow(dgamma, dtypes[8], params[8]);
  narrow(dbeta, dtypes[9], params[9]);
  return 0;
}

// BatchNorm + PReLU: as BnActForward with one more input, the PReLU weight ((1,) or (C,)) before the scalars,
// whose values replace the slope. Inputs: x, gamma, beta, mean, var, weight, scalars; output: y.
int BnPreluForward(int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes,
                   void* /*stream*/, void* /*extra*/) {
  if (nparam != 8 || ndims[0] < 2 || !floats_ok(dtypes, 1, 4) || !lrelu::params_ok<Scalars>(dtypes[6], ndims[6], shapes[6])) {
    return 1;
  }
  const Scalars s = lrelu::read_params<Scalars>(params[6]);
  const Layout l = layout_of(ndims[0], shapes[0], s);
  Channels ch = read_channels(params, dtypes, 1, l.channels, 0.0f);
  if (!read_weight_slopes(params, ndims, shapes, dtypes, 5, l.channels, &ch.slope)) return 1;
  return by_dtype(dtypes[0], [&](auto t) { return forward<decltype(t)>(params[0], ch, l, s, params[7]); });
}

// Inputs: x, dy, gamma, beta, mean, var, weight, scalars; outputs: dx, dgamma, dbeta, dweight (dtype of weight;
// with a (1,) weight the sum over all channels).
int BnPreluBackward(int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes,
                    void* /*stream*/, void* /*extra*/) {
  if (nparam != 12 || ndims[0] < 2 || !is(dtypes[0], dtypes[1]) || !floats_ok(dtypes, 2, 4) ||
      !lrelu::params_ok<Scalars>(dtypes[7], ndims[7], shapes[7]) || !floats_ok(dtypes, 9, 3)) {
    return 1;
  }
  const Scalars s = lrelu::read_params<Scalars>(params[7]);
  const Layout l = layout_of(ndims[0], shapes[0], s);
  Channels ch = read_channels(params, dtypes, 2, l.channels, 0.0f);
  if (!read_weight_slopes(params, ndims, shapes, dtypes, 6, l.channels, &ch.slope)) return 1;
  const size_t C = static_cast<size_t>(l.channels);
  std::vector<float> dgamma(C), dbeta(C), dslope(C);
  const int status = by_dtype(dtypes[0], [&](auto t) {
    return backward<decltype(t), true>(params[0], params[1], ch, l, s, params[8], dgamma.data(), dbeta.data(),
                                       dslope.data());
  });
  if (status != 0) return status;
  narrow(dgamma, dtypes[9], params[9]);
  narrow(dbeta, dtypes[10], params[10]);
  if (shapes[6][0] == 1) {
    double total = 0.0;
    for (float v : dslope) total += v;
    dslope.assign(1, static_cast<float>(total));
  }
  narrow(dslope, dtypes[11], params[11]);
  return 0;
}

}  // extern "C"
