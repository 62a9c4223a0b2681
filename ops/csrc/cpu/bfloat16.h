// bfloat16 storage for the CPU kernels: the upper 16 bits of a float32 (8 exponent bits, 7 mantissa bits).
//
// Widening is exact (the bits shifted up). Narrowing rounds to nearest, ties to even, in integer arithmetic:
// subnormals are kept (bf16 has float32's exponent range), values past the largest finite bf16 become inf,
// and NaN becomes the quiet NaN 0x7FC0 with the input's sign (as ml_dtypes and Eigen narrow; the hardware
// instruction VCVTNEPS2BF16 would flush subnormals to zero, so it is not used). Every kernel rounds through
// bf16::round / round_bits here, so the scalar and vector paths give the same bits.
#ifndef LRELU_OPS_CSRC_CPU_BFLOAT16_H_
#define LRELU_OPS_CSRC_CPU_BFLOAT16_H_

#include <cstdint>
#include <cstring>

namespace lrelu {
namespace cpu {

struct bf16 {
  uint16_t bits;

  bf16() = default;
  explicit bf16(float f) : bits(round_bits(f)) {}
  explicit operator float() const {
    const uint32_t u = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
  }

  // float32 -> bf16 bits, round to nearest even; NaN -> sign | 0x7FC0.
  static uint16_t round_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>(((u >> 16) & 0x8000u) | 0x7FC0u);
    return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
  }

  // f rounded to the nearest bf16, as a float32.
  static float round(float f) { return static_cast<float>(bf16(f)); }
};

static_assert(sizeof(bf16) == 2, "bf16 is two bytes, as MindSpore's bfloat16 tensors store it");

}  // namespace cpu
}  // namespace lrelu

#endif  // LRELU_OPS_CSRC_CPU_BFLOAT16_H_
