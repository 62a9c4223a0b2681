// im2col and col2im CPU aot kernels for the gemm convolutions (gan/models/layers.py), each the other's adjoint.
//
// image: (N, C, H, W), NCHW. cols: (C * K * K, N * Ho * Wo), row (c, ki, kj), column (n, oy, ox), with
// Ho = (H + 2P - K) / S + 1 (same for Wo) and
//     cols[(c, ki, kj), (n, oy, ox)] = image[n, c, S * oy + ki - P, S * ox + kj - P]  (0 inside the padding).
// A Conv2d is then weight (O, C K K) @ cols -> (O, N Ho Wo); a Conv2dTranspose is col2im of
// weight (C, O K K)^T @ x: col2im adds every column entry back onto its image position.
//
// Im2Col (image, geometry) -> cols       Col2Im (cols, geometry) -> image
// geometry is an int32 tensor {K, S, P, threads}; shapes come from the input and output tensors.
// float16 copies are exact; col2im sums each image plane in float32 and rounds once.
// Each image plane is copied once into a zero-padded buffer; then every cols entry is one indexed load
// (im2col) or add (col2im) through a per-call table of padded-plane indices, with no bounds tests (col2im.h,
// shared with onednn_conv.cc).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "col2im.h"
#include "kernel_common.h"

namespace {

using namespace lrelu::cpu;  // NOLINT: the shared kernel pieces

// cols entries per extra thread. A started thread waits for a time slice, which costs more than the copy of a
// small cols matrix: threading every DCGAN-32 call made its step several times slower. DCGAN-32's largest cols
// have 2M entries, DCGAN-64's 16M, so only DCGAN-64's largest layers use a second thread.
constexpr int64_t kMinColsPerThread = int64_t(1) << 22;

struct Geometry {
  int64_t n, c, h, w, k, s, p, ho, wo, threads;
};

bool read_geometry(const int64_t* image, const int64_t* cols, const void* params, Geometry* g) {
  const int32_t* v = static_cast<const int32_t*>(params);
  *g = {image[0], image[1], image[2], image[3], v[0], v[1], v[2], 0, 0, std::max<int32_t>(v[3], 1)};
  if (g->k < 1 || g->s < 1 || g->p < 0 || g->h + 2 * g->p < g->k || g->w + 2 * g->p < g->k) return false;
  if ((g->h + 2 * g->p) * (g->w + 2 * g->p) > INT32_MAX) return false;  // padded-plane indices are int32
  g->ho = (g->h + 2 * g->p - g->k) / g->s + 1;
  g->wo = (g->w + 2 * g->p - g->k) / g->s + 1;
  return cols[0] == g->c * g->k * g->k && cols[1] == g->n * g->ho * g->wo;
}

// fn(first_unit, last_unit) over the C * N units (c, b) = (u / N, u % N), in contiguous blocks, one per
// thread. Unit (c, b) owns image plane (b, c) and the segments b of the K * K rows (c, ki, kj) of cols, so
// threads never write to the same memory; consecutive units write each of those rows sequentially.
template <typename Fn>
void for_each_unit_block(const Geometry& g, const Fn& fn) {
  const int64_t units = g.n * g.c;
  const int64_t by_size = std::max<int64_t>(1, g.c * g.k * g.k * g.n * g.ho * g.wo / kMinColsPerThread);
  const int64_t threads = std::max<int64_t>(1, std::min({g.threads, units, by_size}));
  WorkerPool::instance().run(static_cast<int>(threads),
                             [&](int t) { fn(units * t / threads, units * (t + 1) / threads); });
}

PaddedPlane plane_of(const Geometry& g) { return PaddedPlane(g.h, g.w, g.k, g.s, g.p, g.ho, g.wo); }

template <typename T>
void gather(const T* __restrict__ padded, const int32_t* __restrict__ index, T* __restrict__ dst, int64_t len) {
  for (int64_t i = 0; i < len; ++i) dst[i] = padded[index[i]];
}

template <typename T>
void im2col(const Geometry& g, const T* image, T* cols) {
  const PaddedPlane layout = plane_of(g);
  const std::vector<int32_t> index = layout.index();
  const int64_t seg = layout.seg, row_len = g.n * seg, kk = layout.taps;
  for_each_unit_block(g, [&](int64_t first, int64_t last) {
    std::vector<T> padded(layout.padded_size(), T(0));  // borders stay 0
    for (int64_t u = first; u < last; ++u) {
      const int64_t c = u / g.n, b = u % g.n;
      const T* src = image + (b * g.c + c) * g.h * g.w;
      for (int64_t y = 0; y < g.h; ++y) {
        std::memcpy(padded.data() + (y + g.p) * layout.padded_w + g.p, src + y * g.w, sizeof(T) * g.w);
      }
      T* dst = cols + c * kk * row_len + b * seg;
      for (int64_t r = 0; r < kk; ++r) gather(padded.data(), index.data() + r * seg, dst + r * row_len, seg);
    }
  });
}

template <typename T>
void col2im(const Geometry& g, const T* cols, T* image) {
  const PaddedPlane layout = plane_of(g);
  const int64_t row_len = g.n * layout.seg;
  for_each_unit_block(g, [&](int64_t first, int64_t last) {
    std::vector<float> acc(layout.acc_size());
    for (int64_t u = first; u < last; ++u) {
      const int64_t c = u / g.n, b = u % g.n;
      layout.col2im(cols + c * layout.taps * row_len + b * layout.seg, row_len, acc.data(),
                    image + (b * g.c + c) * g.h * g.w);
    }
  });
}

// params: {input, geometry, output}; the image is the input of Im2Col and the output of Col2Im.
template <bool kToCols>
int entry(int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes) {
  const int image = kToCols ? 0 : 2, cols = kToCols ? 2 : 0;
  if (nparam != 3 || ndims[image] != 4 || ndims[cols] != 2 || std::strcmp(dtypes[1], "int32") != 0 ||
      shapes[1][0] != 4 || std::strcmp(dtypes[0], dtypes[2]) != 0) {
    return 1;
  }
  Geometry g;
  if (!read_geometry(shapes[image], shapes[cols], params[1], &g)) return 2;
  const bool f32 = std::strcmp(dtypes[0], "float32") == 0;
  if (!f32 && std::strcmp(dtypes[0], "float16") != 0) return 1;
  if (kToCols) {
    if (f32) im2col(g, static_cast<const float*>(params[0]), static_cast<float*>(params[2]));
    else im2col(g, static_cast<const half*>(params[0]), static_cast<half*>(params[2]));
  } else {
    if (f32) col2im(g, static_cast<const float*>(params[0]), static_cast<float*>(params[2]));
    else col2im(g, static_cast<const half*>(params[0]), static_cast<half*>(params[2]));
  }
  return 0;
}

}  // namespace

extern "C" {

// Inputs: image (N, C, H, W) float32|float16, geometry int32[4] {K, S, P, threads}; output: cols.
int Im2Col(int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes, void* /*stream*/,
           void* /*extra*/) {
  return entry<true>(nparam, params, ndims, shapes, dtypes);
}

// Inputs: cols (C K K, N Ho Wo) float32|float16, geometry int32[4] {K, S, P, threads}; output: image.
int Col2Im(int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes, void* /*stream*/,
           void* /*extra*/) {
  return entry<false>(nparam, params, ndims, shapes, dtypes);
}

}  // extern "C"
