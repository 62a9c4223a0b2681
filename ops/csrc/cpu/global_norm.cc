// The L2 norm over a list of tensors in one CPU aot kernel: what a training step computes over all gradients
// before the finite check and clipping (one kernel instead of a Square, a ReduceSum per tensor and an AddN).
//
// GlobalNorm(t_1, ..., t_k, threads) -> norm, float32 of shape (1,)
// t_i: float32 or float16, any shape (each on its own dtype); threads: int32[1], the worker count.
// Squares are summed in float64 over fixed chunks of kChunk elements, then the chunk sums in order, so the
// result does not depend on the thread count; sqrt in float64, rounded once to float32. inf/NaN propagate.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "worker_pool.h"

namespace {

constexpr int64_t kChunk = int64_t(1) << 16;

struct Chunk {
  const void* data;
  bool half;
  int64_t start, len;
};

template <typename T>
double sum_squares(const T* __restrict__ x, int64_t n) {
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};  // eight independent lanes: the loop vectorises
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) {
      const double v = static_cast<double>(x[i + j]);
      acc[j] += v * v;
    }
  }
  for (; i < n; ++i) acc[0] += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

}  // namespace

extern "C" {

int GlobalNorm(int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes, void*, void*) {
  const int tensors = nparam - 2, threads_at = nparam - 2, out = nparam - 1;
  if (tensors < 1 || std::strcmp(dtypes[threads_at], "int32") != 0 || ndims[threads_at] != 1 ||
      shapes[threads_at][0] != 1 || std::strcmp(dtypes[out], "float32") != 0 || ndims[out] != 1 || shapes[out][0] != 1) {
    return 1;
  }
  std::vector<Chunk> chunks;
  for (int t = 0; t < tensors; ++t) {
    const bool half = std::strcmp(dtypes[t], "float16") == 0;
    if (!half && std::strcmp(dtypes[t], "float32") != 0) return 1;
    int64_t n = 1;
    for (int d = 0; d < ndims[t]; ++d) n *= shapes[t][d];
    for (int64_t s = 0; s < n; s += kChunk) chunks.push_back({params[t], half, s, n - s < kChunk ? n - s : kChunk});
  }
  std::vector<double> sums(chunks.size(), 0.0);
  const int32_t asked = *static_cast<const int32_t*>(params[threads_at]);
  const int64_t count = static_cast<int64_t>(chunks.size());
  const int workers = static_cast<int>(count < asked ? count : (asked > 1 ? asked : 1));
  if (workers > 0) {
    lrelu::cpu::WorkerPool::instance().run(workers, [&](int first) {
      for (int64_t c = first; c < count; c += workers) {
        const Chunk& k = chunks[c];
        sums[c] = k.half ? sum_squares(static_cast<const _Float16*>(k.data) + k.start, k.len)
                         : sum_squares(static_cast<const float*>(k.data) + k.start, k.len);
      }
    });
  }
  double total = 0.0;
  for (double s : sums) total += s;
  *static_cast<float*>(params[out]) = static_cast<float>(std::sqrt(total));
  return 0;
}

}  // extern "C"
