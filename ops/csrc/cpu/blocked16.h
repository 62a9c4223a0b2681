// bfloat16 activations between NCHW and oneDNN's nChw16c or nhwc, for the oneDNN convolution kernels
// (onednn_conv.cc) and their layout benchmark (scripts/bench/bench_conv_layouts.cc). oneDNN's own bf16 reorders between
// these layouts (jit:uni) are several times slower per byte than its float32 ones (jit:blk), which these
// transposes match.
#ifndef LRELU_OPS_CSRC_CPU_BLOCKED16_H_
#define LRELU_OPS_CSRC_CPU_BLOCKED16_H_

#include <cstdint>
#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "worker_pool.h"

namespace lrelu {
namespace cpu {

// out[j * os + i] = in[i * is + j] for i, j < 16: one 16 x 16 tile of 16-bit values transposed.
inline void transpose16x16(const uint16_t* in, int64_t is, uint16_t* out, int64_t os) {
#if defined(__AVX2__)
  __m256i r[16], a[16], b[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i * is));
  // Within each 128-bit lane (columns 0-7, and 8-15): pairs of rows, pairs of pairs, then quadruples.
  for (int k = 0; k < 8; ++k) {  // a[2k + h]: rows 2k, 2k + 1 interleaved, lane-local columns 4h .. 4h + 3
    a[2 * k] = _mm256_unpacklo_epi16(r[2 * k], r[2 * k + 1]);
    a[2 * k + 1] = _mm256_unpackhi_epi16(r[2 * k], r[2 * k + 1]);
  }
  for (int m = 0; m < 4; ++m) {  // b[4m + 2h + s]: rows 4m .. 4m + 3 of lane-local columns 4h + 2s, 4h + 2s + 1
    for (int h = 0; h < 2; ++h) {
      b[4 * m + 2 * h] = _mm256_unpacklo_epi32(a[4 * m + h], a[4 * m + 2 + h]);
      b[4 * m + 2 * h + 1] = _mm256_unpackhi_epi32(a[4 * m + h], a[4 * m + 2 + h]);
    }
  }
  for (int q = 0; q < 2; ++q) {  // a[8q + c]: rows 8q .. 8q + 7 of lane-local column c
    for (int t = 0; t < 4; ++t) {
      a[8 * q + 2 * t] = _mm256_unpacklo_epi64(b[8 * q + t], b[8 * q + 4 + t]);
      a[8 * q + 2 * t + 1] = _mm256_unpackhi_epi64(b[8 * q + t], b[8 * q + 4 + t]);
    }
  }
  for (int c = 0; c < 8; ++c) {  // column c in lane 0, column 8 + c in lane 1; rows 0-7 in a[c], 8-15 in a[8 + c]
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + c * os), _mm256_permute2x128_si256(a[c], a[8 + c], 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + (8 + c) * os),
                        _mm256_permute2x128_si256(a[c], a[8 + c], 0x31));
  }
#else
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 16; ++j) out[j * os + i] = in[i * is + j];
  }
#endif
}

// The channels-interleaved layouts a bf16 activation (N, C, H, W), C a multiple of 16, moves to from nchw:
// nChw16c (the 16 channels of a block interleaved per pixel, blocks one after the other) and nhwc (all C channels
// interleaved per pixel, the layout oneDNN's AMX convolutions compute in).
enum class Interleaved { kBlocked16, kNhwc };

// A bf16 activation (dims d) between nchw and `layout`: 16 x 16 tiles of (channel, pixel) transposed, the pixels
// past the last whole tile one by one. The (sample, block) pairs are split over the pool in contiguous runs, so two
// workers write the same nhwc rows only where their runs meet. Why: oneDNN's bf16 reorders between nchw and
// nChw16c are several times slower than its float32 ones, and this transpose runs at the float32 reorders' speed
// (scripts/bench/bench_conv_layouts.cc bf16 times both).
template <bool kToInterleaved>
void move_interleaved(Interleaved layout, const int64_t* d, const uint16_t* from, uint16_t* to, int threads) {
  const int64_t c = d[1], blocks = c / 16, hw = d[2] * d[3], tasks = d[0] * blocks, whole = hw / 16 * 16;
  // Where tile (block b of a sample, pixel p) starts in the interleaved tensor, and its row (pixel) stride.
  const bool nhwc = layout == Interleaved::kNhwc;
  const int64_t row = nhwc ? c : 16, block = nhwc ? 16 : 16 * hw;
  const int workers = static_cast<int>(tasks < threads ? tasks : threads);
  WorkerPool::instance().run(workers, [&](int worker) {
    for (int64_t t = tasks * worker / workers; t < tasks * (worker + 1) / workers; ++t) {
      const int64_t n = t / blocks, b = t % blocks;
      const int64_t plain = n * c * hw + b * 16 * hw, inter = n * c * hw + b * block;  // the tile row's offsets
      for (int64_t p = 0; p < whole; p += 16) {
        if (kToInterleaved) transpose16x16(from + plain + p, hw, to + inter + p * row, row);
        else transpose16x16(from + inter + p * row, row, to + plain + p, hw);
      }
      for (int64_t p = whole; p < hw; ++p) {
        for (int64_t i = 0; i < 16; ++i) {
          if (kToInterleaved) to[inter + p * row + i] = from[plain + i * hw + p];
          else to[plain + i * hw + p] = from[inter + p * row + i];
        }
      }
    }
  });
}

}  // namespace cpu
}  // namespace lrelu

#endif  // LRELU_OPS_CSRC_CPU_BLOCKED16_H_
