// The indexed col2im of one image plane, shared by the gemm layers' Col2Im kernel (im2col.cc) and oneDNN's
// backward-data into few channels (onednn_conv.cc), and the padded-plane index table Im2Col gathers through.
//
// For a K x K kernel, stride S and padding P over an H x W plane with an Ho x Wo output, the K*K rows
// (ki, kj) of one channel's cols each hold Ho*Wo entries (oy, ox) that belong at image position
// (S*oy + ki - P, S*ox + kj - P). col2im adds them into a float32 plane zero-padded by P on each side, through
// a table of padded-plane indices (no bounds tests), then crops the padding and rounds once.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace lrelu::cpu {

struct PaddedPlane {
  int64_t h, w, p, padded_h, padded_w, taps, seg;  // taps = K*K rows, seg = Ho*Wo entries per row
  std::vector<int32_t> index;                       // (K*K, Ho*Wo): (S*oy + ki) * padded_w + S*ox + kj

  PaddedPlane(int64_t h_, int64_t w_, int64_t k, int64_t s, int64_t p_, int64_t ho, int64_t wo)
      : h(h_), w(w_), p(p_), padded_h(h_ + 2 * p_), padded_w(w_ + 2 * p_), taps(k * k), seg(ho * wo) {
    index.resize(static_cast<size_t>(taps * seg));
    int32_t* ix = index.data();
    for (int64_t ki = 0; ki < k; ++ki)
      for (int64_t kj = 0; kj < k; ++kj)
        for (int64_t oy = 0; oy < ho; ++oy)
          for (int64_t ox = 0; ox < wo; ++ox) *ix++ = static_cast<int32_t>((s * oy + ki) * padded_w + s * ox + kj);
  }

  size_t padded_size() const { return static_cast<size_t>(padded_h * padded_w); }

  // image (H, W) = the sum of one channel's K*K cols rows (row r at cols + r * row_stride), rounded once to T;
  // acc is scratch of padded_size() floats.
  template <typename C, typename T>
  void col2im(const C* cols, int64_t row_stride, float* acc, T* image) const {
    std::fill(acc, acc + padded_size(), 0.0f);
    for (int64_t r = 0; r < taps; ++r) scatter_add(cols + r * row_stride, index.data() + r * seg, acc, seg);
    for (int64_t y = 0; y < h; ++y) {
      const float* row = acc + (y + p) * padded_w + p;
      for (int64_t x = 0; x < w; ++x) image[y * w + x] = static_cast<T>(row[x]);
    }
  }

 private:
  // Within one (ki, kj) the indices are distinct, so the adds do not depend on each other.
  template <typename T>
  static void scatter_add(const T* __restrict__ src, const int32_t* __restrict__ index, float* __restrict__ padded,
                          int64_t len) {
#pragma GCC ivdep
    for (int64_t i = 0; i < len; ++i) padded[index[i]] += static_cast<float>(src[i]);
  }
};

}  // namespace lrelu::cpu
