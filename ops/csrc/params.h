// The named scalar layouts of the CPU aot kernels: each kernel's scalars input is one of these structs,
// shipped as an int32 tensor of float32 bit patterns (mixed precision casts float inputs to float16,
// integer inputs never). ops/params.py mirrors the field lists; tests/ops/test_params_layout.py compares
// both through LreluParamsLayout below, so the two orders cannot drift apart.
//
// Each list is an X-macro: X(name) once per field, in layout order; every field is one float32.
#ifndef LRELU_OPS_CSRC_PARAMS_H_
#define LRELU_OPS_CSRC_PARAMS_H_

#include <cstdint>
#include <cstring>

// Element-wise activations (leaky_relu, prelu, rrelu, elu).
//   slope   leaky_relu: negative_slope; elu: alpha; rrelu in eval: (lower + upper) / 2; prelu: unused
//   clamp   outputs limited to [-clamp, clamp] (+inf: no clamp), NaN kept
//   threads worker threads (>= 1)
//   lower, upper  rrelu in training: per-element slopes drawn uniformly in [lower, upper)
#define LRELU_ACT_PARAMS(X) X(slope) X(clamp) X(threads) X(lower) X(upper)

// Fused per-channel affine + LeakyReLU (bn_act.cc); batch_stats is 0 or 1; channels_last 1: x is (N, ..., C) (NHWC),
// 0: (N, C, ...) (NCHW).
#define LRELU_BN_ACT_PARAMS(X) X(slope) X(clamp) X(gain) X(threads) X(batch_stats) X(eps) X(momentum) X(channels_last)

// Quantised LeakyReLU (quantized_leaky_relu.cc); the zero points are integral values.
#define LRELU_QUANTIZED_PARAMS(X) X(slope) X(in_scale) X(in_zero_point) X(out_scale) X(out_zero_point) X(threads)

namespace lrelu {

#define LRELU_PARAM_FIELD(name) float name;
struct ActParams {
  LRELU_ACT_PARAMS(LRELU_PARAM_FIELD)
};
struct BnActParams {
  LRELU_BN_ACT_PARAMS(LRELU_PARAM_FIELD)
};
struct QuantizedParams {
  LRELU_QUANTIZED_PARAMS(LRELU_PARAM_FIELD)
};
#undef LRELU_PARAM_FIELD

// True when `dtype`/`shape` describe the int32 tensor of exactly one P.
template <typename P>
inline bool params_ok(const char* dtype, int ndim, const int64_t* shape) {
  return std::strcmp(dtype, "int32") == 0 && ndim == 1 && shape[0] * 4 == static_cast<int64_t>(sizeof(P));
}

template <typename P>
inline P read_params(const void* p) {
  P out;
  std::memcpy(&out, p, sizeof out);
  return out;
}

// Worker threads from the float field: at least 1.
inline int64_t thread_count(float threads) { return threads >= 1.0f ? static_cast<int64_t>(threads) : 1; }

}  // namespace lrelu

#endif  // LRELU_OPS_CSRC_PARAMS_H_
