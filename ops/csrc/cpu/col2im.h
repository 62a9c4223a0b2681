// The col2im of one image plane, shared by the gemm layers' Col2Im kernel (im2col.cc) and oneDNN's backward-data
// into few channels (onednn_conv.cc), and the padded-plane index table Im2Col gathers through (built only there).
//
// For a K x K kernel, stride S and padding P over an H x W plane with an Ho x Wo output, the K*K rows
// (ki, kj) of one channel's cols each hold Ho*Wo entries (oy, ox) that belong at image position
// (S*oy + ki - P, S*ox + kj - P). Position (S*Y + pi, S*X + pj) of the zero-padded plane (pi, pj < S) collects
// the entries of the rows ki = S*a + pi, kj = S*b + pj at (oy, ox) = (Y - a, X - b): col2im adds each row as
// contiguous runs into the float32 plane of its phase (pi, pj), in row order, then interleaves the phases, crops
// the padding and rounds once. Every position gets its entries in the order of an indexed scatter over the rows
// (the same float32 sums), at the cost of contiguous adds instead of one indexed add per entry.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace lrelu::cpu {

struct PaddedPlane {
  int64_t h, w, p, padded_h, padded_w, taps, seg;  // taps = K*K rows, seg = Ho*Wo entries per row

  PaddedPlane(int64_t h_, int64_t w_, int64_t k, int64_t s, int64_t p_, int64_t ho, int64_t wo)
      : h(h_), w(w_), p(p_), padded_h(h_ + 2 * p_), padded_w(w_ + 2 * p_), taps(k * k), seg(ho * wo), k_(k), s_(s),
        ho_(ho), wo_(wo), phase_h_(ho + (k - 1) / s), phase_w_(wo + (k - 1) / s) {
    // image column x reads column X of phase pj (x + P = S X + pj); past the last column any row reaches: -1
    column_.resize(static_cast<size_t>(w));
    for (int64_t x = 0; x < w; ++x) {
      const int64_t big = (x + p) / s, pj = (x + p) % s;
      column_[x] = big < phase_w_ ? static_cast<int32_t>(pj * phase_h_ * phase_w_ + big) : -1;
    }
  }

  size_t padded_size() const { return static_cast<size_t>(padded_h * padded_w); }

  // Im2Col's gather table (K*K, Ho*Wo): entry (ki, kj, oy, ox) is (S*oy + ki) * padded_w + S*ox + kj.
  std::vector<int32_t> index() const {
    std::vector<int32_t> table(static_cast<size_t>(taps * seg));
    int32_t* ix = table.data();
    for (int64_t ki = 0; ki < k_; ++ki)
      for (int64_t kj = 0; kj < k_; ++kj)
        for (int64_t oy = 0; oy < ho_; ++oy)
          for (int64_t ox = 0; ox < wo_; ++ox) *ix++ = static_cast<int32_t>((s_ * oy + ki) * padded_w + s_ * ox + kj);
    return table;
  }
  // The scratch col2im needs: one float32 plane per phase.
  size_t acc_size() const { return static_cast<size_t>(s_ * s_ * phase_h_ * phase_w_); }

  // image (H, W) = the sum of one channel's K*K cols rows (row r at cols + r * row_stride), rounded once to T;
  // acc is scratch of acc_size() floats.
  template <typename C, typename T>
  void col2im(const C* cols, int64_t row_stride, float* acc, T* image) const {
    std::fill(acc, acc + acc_size(), 0.0f);
    const int64_t phase = phase_h_ * phase_w_;
    for (int64_t ki = 0; ki < k_; ++ki) {
      for (int64_t kj = 0; kj < k_; ++kj) {
        const C* row = cols + (ki * k_ + kj) * row_stride;
        float* plane = acc + (ki % s_ * s_ + kj % s_) * phase + ki / s_ * phase_w_ + kj / s_;
        for (int64_t oy = 0; oy < ho_; ++oy) add_run(row + oy * wo_, plane + oy * phase_w_, wo_);
      }
    }
    for (int64_t y = 0; y < h; ++y) {
      const int64_t big = (y + p) / s_;
      T* out = image + y * w;
      if (big >= phase_h_) {  // a row no entry reaches
        std::fill(out, out + w, T(0.0f));
        continue;
      }
      const float* rows = acc + (y + p) % s_ * s_ * phase + big * phase_w_;
      for (int64_t x = 0; x < w; ++x) out[x] = static_cast<T>(column_[x] < 0 ? 0.0f : rows[column_[x]]);
    }
  }

 private:
  template <typename C>
  static void add_run(const C* __restrict__ src, float* __restrict__ dst, int64_t len) {
    for (int64_t i = 0; i < len; ++i) dst[i] += static_cast<float>(src[i]);
  }

  int64_t k_, s_, ho_, wo_, phase_h_, phase_w_;
  std::vector<int32_t> column_;  // per image column: its offset in the phase planes of its row, or -1
};

}  // namespace lrelu::cpu
