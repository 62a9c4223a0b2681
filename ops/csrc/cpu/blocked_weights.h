// OIHW weights (float32, float16 or bfloat16) into one of oneDNN's blocked bfloat16 weight layouts by a gather.
//
// oneDNN's reorder into the VNNI layouts of its AMX and AVX512-BF16 convolutions (three inner blocks, e.g.
// AcdB16b32a2b and BcdA16a64b2a) is several times slower than this gather on the DCGAN weights
// (`scripts/bench/bench_conv_layouts.cc bf16` times both); the bytes are the same
// (tests/ops/test_blocked_weights_cpp.py). The layout comes from oneDNN's memory descriptor (outer strides and
// inner blocks), so one routine serves every such layout: each position of an inner block gets its source offset
// once, and a call gathers block by block, each value rounded to bf16 once (to nearest even, as oneDNN's reorder;
// a NaN becomes the canonical sign | 0x7FC0).
#ifndef LRELU_OPS_CSRC_CPU_BLOCKED_WEIGHTS_H_
#define LRELU_OPS_CSRC_CPU_BLOCKED_WEIGHTS_H_

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "oneapi/dnnl/dnnl.hpp"
#include "bfloat16.h"
#include "worker_pool.h"

namespace lrelu {
namespace cpu {

inline uint16_t bf16_bits_of(float v) { return bf16::round_bits(v); }
inline uint16_t bf16_bits_of(_Float16 v) { return bf16::round_bits(static_cast<float>(v)); }
inline uint16_t bf16_bits_of(bf16 v) { return v.bits; }

// A 4-d blocked layout as a oneDNN memory descriptor states it: dims, outer strides in elements, and the inner
// blocks, outermost first (the dimension each splits and its size).
struct BlockedLayout {
  int64_t dims[4];
  int64_t strides[4];
  int nblks;
  int64_t blks[8];
  int idxs[8];
};

// The layout of a oneDNN descriptor, where it is a 4-d blocked one with at most 8 inner blocks and no padding.
inline std::optional<BlockedLayout> blocked_layout(const dnnl::memory::desc& d) {
  if (d.get_ndims() != 4 || d.get_format_kind() != dnnl::memory::format_kind::blocked || d.get_inner_nblks() < 1 ||
      d.get_inner_nblks() > 8 || d.get_padded_dims() != d.get_dims()) {
    return std::nullopt;
  }
  BlockedLayout l{};
  const dnnl::memory::dims dims = d.get_dims(), strides = d.get_strides(), blks = d.get_inner_blks(),
                           idxs = d.get_inner_idxs();
  l.nblks = d.get_inner_nblks();
  for (int i = 0; i < 4; ++i) {
    l.dims[i] = dims[i];
    l.strides[i] = strides[i];
  }
  for (int k = 0; k < l.nblks; ++k) {
    l.blks[k] = blks[k];
    l.idxs[k] = static_cast<int>(idxs[k]);
  }
  return l;
}

class BlockedGather {
 public:
  // Whether the gather can fill `l`: 4-d, at most 8 inner blocks, every dim a whole number of its blocks (no
  // padding to write).
  static bool fits(const BlockedLayout& l) {
    if (l.nblks < 1 || l.nblks > 8) return false;
    int64_t block[4] = {1, 1, 1, 1};
    for (int k = 0; k < l.nblks; ++k) {
      if (l.idxs[k] < 0 || l.idxs[k] > 3 || l.blks[k] < 1) return false;
      block[l.idxs[k]] *= l.blks[k];
    }
    for (int i = 0; i < 4; ++i) {
      if (l.dims[i] < 1 || l.dims[i] % block[i] != 0) return false;
    }
    return true;
  }

  explicit BlockedGather(const BlockedLayout& l) {
    int64_t inner = 1;
    for (int i = 0; i < 4; ++i) block_[i] = 1;
    for (int k = 0; k < l.nblks; ++k) {
      block_[l.idxs[k]] *= l.blks[k];
      inner *= l.blks[k];
    }
    const int64_t plain[4] = {l.dims[1] * l.dims[2] * l.dims[3], l.dims[2] * l.dims[3], l.dims[3], 1};
    for (int i = 0; i < 4; ++i) {
      strides_[i] = l.strides[i];
      outer_[i] = l.dims[i] / block_[i];
      step_[i] = block_[i] * plain[i];  // the source offset of one outer block along dim i
    }
    offsets_.resize(inner);
    for (int64_t j = 0; j < inner; ++j) {  // position j of an inner block: its index within each dim's block
      int64_t rest = j, within[4] = {0, 0, 0, 0}, scale[4] = {1, 1, 1, 1};
      for (int k = l.nblks - 1; k >= 0; --k) {
        within[l.idxs[k]] += rest % l.blks[k] * scale[l.idxs[k]];
        scale[l.idxs[k]] *= l.blks[k];
        rest /= l.blks[k];
      }
      offsets_[j] = within[0] * plain[0] + within[1] * plain[1] + within[2] * plain[2] + within[3] * plain[3];
    }
  }

  // dst (the blocked layout, bf16 bits) from src (plain OIHW), the outer blocks split over `threads` workers.
  template <typename T>
  void run(const T* src, uint16_t* dst, int threads) const {
    const int64_t blocks = outer_[0] * outer_[1] * outer_[2] * outer_[3], inner = offsets_.size();
    const int workers = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(blocks, threads)));
    WorkerPool::instance().run(workers, [&](int worker) {
      for (int64_t t = blocks * worker / workers; t < blocks * (worker + 1) / workers; ++t) {
        int64_t rest = t, from = 0, to = 0;
        for (int i = 3; i >= 0; --i) {  // t in O, I, H, W order: neighbouring blocks share source lines
          const int64_t o = rest % outer_[i];
          rest /= outer_[i];
          from += o * step_[i];
          to += o * strides_[i];
        }
        const T* in = src + from;
        uint16_t* out = dst + to;
        for (int64_t j = 0; j < inner; ++j) out[j] = bf16_bits_of(in[offsets_[j]]);
      }
    });
  }

 private:
  int64_t block_[4], outer_[4], strides_[4], step_[4];
  std::vector<int64_t> offsets_;
};

}  // namespace cpu
}  // namespace lrelu

#endif  // LRELU_OPS_CSRC_CPU_BLOCKED_WEIGHTS_H_
