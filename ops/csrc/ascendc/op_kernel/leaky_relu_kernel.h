// LeakyReLU forward and backward Ascend C kernels (one class, kBackward selects the formula).
// Each AI vector core takes its element range from lrelu::core_range (shared tiling.h) and walks it:
// full tiles with DataCopy, then at most one tail with DataCopyPad, so nothing is read or written past
// the end and the tail is computed on its own (64-aligned) length, not a full tile.
// fp16/bf16 are cast to fp32, computed there, and cast back once with round-to-nearest-even.
// Not built with CANN here (no toolkit); g++ runs it against the Ascend C twin (docs/ascend_twin.md).
#ifndef LRELU_ASCENDC_LEAKY_RELU_KERNEL_H_
#define LRELU_ASCENDC_LEAKY_RELU_KERNEL_H_

#include "kernel_operator.h"
#include "lrelu_ascend_layout.h"
#include "tiling.h"

namespace lrelu {

using AscendC::LocalTensor;

template <typename T, bool kBackward>
class LeakyReluKernel {
 public:
  static constexpr bool kIsFloat = AscendC::IsSameType<T, float>::value;
  static constexpr int kInputs = kBackward ? 2 : 1;

  // inputs: forward {x}; backward {dy, x}. output: y or dx.
  __aicore__ inline void Init(GM_ADDR in0, GM_ADDR in1, GM_ADDR out, const TilingPlan& plan, float slope,
                              bool has_clamp, float clamp) {
    plan_ = plan;
    range_ = core_range(plan, AscendC::GetBlockIdx());
    slope_ = slope;
    has_clamp_ = has_clamp;
    clamp_ = clamp;
    // GM_ADDR is a macro (__gm__ uint8_t*): `const GM_ADDR` would make the bytes const, not the pointers.
    GM_ADDR const inputs[2] = {in0, in1};
    for (int i = 0; i < kInputs; ++i) {
      in_gm_[i].SetGlobalBuffer(reinterpret_cast<__gm__ T*>(inputs[i]) + range_.start, range_.end - range_.start);
      pipe_.InitBuffer(in_q_[i], kAscendBuffers, plan.tile_len * sizeof(T));
    }
    out_gm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(out) + range_.start, range_.end - range_.start);
    pipe_.InitBuffer(out_q_, kAscendBuffers, plan.tile_len * sizeof(T));
    pipe_.InitBuffer(scratch_, ascend_scratch_tiles(sizeof(T), kBackward, has_clamp) * plan.tile_len * sizeof(float));
    pipe_.InitBuffer(mask_buf_, plan.tile_len);  // >= tile_len / 8 bytes of compare bits
    mask_ = mask_buf_.Get<uint8_t>();
    if (has_clamp_) {
      // Constant tiles after the working tiles: forward {+clamp, -clamp}; backward {zeros, y}.
      const int64_t first = ascend_scratch_tiles(sizeof(T), kBackward, false);
      AscendC::Duplicate(Scratch(first), kBackward ? 0.0f : clamp_, plan.tile_len);
      if (!kBackward) AscendC::Duplicate(Scratch(first + 1), -clamp_, plan.tile_len);
    }
  }

  __aicore__ inline void Process() {
    int64_t offset = 0;
    for (int64_t t = 0; t < range_.full_tiles; ++t, offset += plan_.tile_len) Step<false>(offset, plan_.tile_len);
    if (range_.tail_len > 0) Step<true>(offset, range_.tail_len);
  }

 private:
  template <bool kTail>
  __aicore__ inline void Step(int64_t offset, int64_t len) {
    // Vector instructions work on whole 256-byte repeats: round the tail up inside its tile buffer.
    // The extra lanes hold stale UB data; they are computed but never copied out.
    const uint32_t count = static_cast<uint32_t>((len + kAscendAlignElems - 1) / kAscendAlignElems * kAscendAlignElems);
    for (int i = 0; i < kInputs; ++i) {
      LocalTensor<T> local = in_q_[i].template AllocTensor<T>();
      if (kTail) {
        AscendC::DataCopyPad(local, in_gm_[i][offset], Bytes(len), AscendC::DataCopyPadExtParams<T>{false, 0, 0, 0});
      } else {
        AscendC::DataCopy(local, in_gm_[i][offset], static_cast<uint32_t>(len));
      }
      in_q_[i].EnQue(local);
    }
    Compute(count);
    LocalTensor<T> result = out_q_.template DeQue<T>();
    if (kTail) {
      AscendC::DataCopyPad(out_gm_[offset], result, Bytes(len));
    } else {
      AscendC::DataCopy(out_gm_[offset], result, static_cast<uint32_t>(len));
    }
    out_q_.FreeTensor(result);
  }

  __aicore__ inline void Compute(uint32_t count) {
    LocalTensor<T> in[2];
    for (int i = 0; i < kInputs; ++i) in[i] = in_q_[i].template DeQue<T>();
    LocalTensor<T> out = out_q_.template AllocTensor<T>();
    // Working scratch tiles: 0 = slope * v; half types only: 1.. = fp32 copies of the inputs, then the result.
    LocalTensor<float> neg = Scratch(0);
    LocalTensor<float> result = FloatView(out, kInputs + 1);
    if (!kBackward) {
      LocalTensor<float> x = ToFloat(in[0], 1, count);
      Leaky(result, x, x, neg, count);
      if (has_clamp_) {
        const int64_t c = ascend_scratch_tiles(sizeof(T), false, false);
        ReplaceWhere(result, result, clamp_, AscendC::CMPMODE::GT, Scratch(c), count);
        ReplaceWhere(result, result, -clamp_, AscendC::CMPMODE::LT, Scratch(c + 1), count);
      }
    } else {
      LocalTensor<float> dy = ToFloat(in[0], 1, count);
      LocalTensor<float> x = ToFloat(in[1], 2, count);
      Leaky(result, x, dy, neg, count);
      if (has_clamp_) {
        const int64_t c = ascend_scratch_tiles(sizeof(T), true, false);
        LocalTensor<float> y = Scratch(c + 1);
        Leaky(y, x, x, neg, count);
        if constexpr (!kIsFloat) {
          // The clamp cut the forward output as stored in T: round y to T (through the still unused output
          // tile) before comparing, as the reference and the CPU kernel do. Comparing the fp32 s * x instead
          // gets the gradient wrong where rounding moves the output across the clamp (fp16 and bf16).
          AscendC::Cast(out, y, AscendC::RoundMode::CAST_RINT, count);
          AscendC::Cast(y, out, AscendC::RoundMode::CAST_NONE, count);
        }
        ReplaceWhere(result, y, clamp_, AscendC::CMPMODE::GT, Scratch(c), count);
        ReplaceWhere(result, y, -clamp_, AscendC::CMPMODE::LT, Scratch(c), count);
      }
    }
    if constexpr (!kIsFloat) AscendC::Cast(out, result, AscendC::RoundMode::CAST_RINT, count);
    out_q_.EnQue(out);
    for (int i = 0; i < kInputs; ++i) in_q_[i].FreeTensor(in[i]);
  }

  // dst = x > 0 ? v : slope * v (forward v = x; backward v = dy). NaN > 0 is false: NaN propagates.
  __aicore__ inline void Leaky(const LocalTensor<float>& dst, const LocalTensor<float>& x,
                               const LocalTensor<float>& v, const LocalTensor<float>& neg, uint32_t count) {
    AscendC::Muls(neg, v, slope_, count);
    AscendC::CompareScalar(mask_, x, 0.0f, AscendC::CMPMODE::GT, count);
    AscendC::Select(dst, mask_, v, neg, AscendC::SELMODE::VSEL_TENSOR_TENSOR_MODE, count);
  }

  // dst = (key <mode> threshold) ? replacement : dst. Comparisons with NaN are false: NaN is kept.
  __aicore__ inline void ReplaceWhere(const LocalTensor<float>& dst, const LocalTensor<float>& key, float threshold,
                                      AscendC::CMPMODE mode, const LocalTensor<float>& replacement, uint32_t count) {
    AscendC::CompareScalar(mask_, key, threshold, mode, count);
    AscendC::Select(dst, mask_, replacement, dst, AscendC::SELMODE::VSEL_TENSOR_TENSOR_MODE, count);
  }

  // fp32 view of a T tile: the tile itself for fp32, otherwise a lossless cast into scratch tile `slot`.
  __aicore__ inline LocalTensor<float> ToFloat(const LocalTensor<T>& src, int64_t slot, uint32_t count) {
    if constexpr (kIsFloat) {
      return src;
    } else {
      AscendC::Cast(Scratch(slot), src, AscendC::RoundMode::CAST_NONE, count);
      return Scratch(slot);
    }
  }

  // Where the fp32 result is computed: the output tile itself for fp32, otherwise scratch tile `slot`.
  __aicore__ inline LocalTensor<float> FloatView(const LocalTensor<T>& out, int64_t slot) {
    if constexpr (kIsFloat) {
      return out;
    } else {
      return Scratch(slot);
    }
  }

  __aicore__ inline LocalTensor<float> Scratch(int64_t index) {
    return scratch_.Get<float>()[index * plan_.tile_len];
  }

  __aicore__ inline AscendC::DataCopyExtParams Bytes(int64_t len) {
    return AscendC::DataCopyExtParams{1, static_cast<uint32_t>(len * sizeof(T)), 0, 0, 0};
  }

  AscendC::TPipe pipe_;
  // Depth 1: no queue is ever enqueued twice without a DeQue in between (the API's recommended depth; double
  // buffering comes from the kAscendBuffers buffers per queue given to InitBuffer, not from the depth).
  AscendC::TQue<AscendC::QuePosition::VECIN, 1> in_q_[kInputs];
  AscendC::TQue<AscendC::QuePosition::VECOUT, 1> out_q_;
  AscendC::TBuf<AscendC::QuePosition::VECCALC> scratch_;
  AscendC::TBuf<AscendC::QuePosition::VECCALC> mask_buf_;
  AscendC::GlobalTensor<T> in_gm_[kInputs];
  AscendC::GlobalTensor<T> out_gm_;
  LocalTensor<uint8_t> mask_;
  TilingPlan plan_;
  CoreRange range_;
  float slope_;
  bool has_clamp_;
  float clamp_;
};

// The plan as written by the host tiling (op_host/leaky_relu_custom.cpp).
template <typename TilingData>
__aicore__ inline TilingPlan PlanFrom(const TilingData& t) {
  return TilingPlan{t.n, t.tile_len, t.used_cores, t.total_tiles, t.base_tiles, t.extra_tiles};
}

}  // namespace lrelu

#endif  // LRELU_ASCENDC_LEAKY_RELU_KERNEL_H_
