// The one tiling plan shared by every LeakyReLU kernel (CPU aot kernels, Ascend C host tiling).
//
// Header-only and free of STL containers so that it also compiles inside Ascend C host code.
// ops/tiling.py mirrors this file exactly (same names, same integer arithmetic); the tests compare both.
//
// A tensor of n elements is cut into tiles of tile_len elements that fit the usable part of an
// on-chip buffer (Ascend UB, or the CPU's L2 cache), and the tiles are spread over cores so that
// core loads differ by at most one tile. Only the globally last tile may be partial (the tail);
// it belongs to the last used core.
//
// Error convention (C++): plan_tiling() returns a plan whose tile_len is 0 (and every other field 0)
// when the parameters are invalid; tiling_error() returns the reason as a static string naming the
// bad parameter and what is allowed, or nullptr when the parameters are valid.
#ifndef LRELU_OPS_CSRC_TILING_H_
#define LRELU_OPS_CSRC_TILING_H_

// Inside an Ascend C kernel (__CCE_AICORE__) only the structs and core_range() are compiled, as
// __aicore__ functions; the host parts need the C library.
#if defined(__CCE_AICORE__)
#define LRELU_DEVICE_FN __aicore__ inline
#else
#define LRELU_DEVICE_FN inline
#include <cmath>
#include <cstdint>
#include <cstdio>
#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif
#endif

namespace lrelu {

#if !defined(__CCE_AICORE__)
// Upper bounds that keep every intermediate product inside int64_t (and are far above real hardware).
constexpr int64_t kMaxBufferBytes = int64_t(1) << 40;   // 1 TiB
constexpr int64_t kMaxSmallParam = 64;                  // elem_size, buffers, live_tensors
constexpr int64_t kMaxAlignBytes = int64_t(1) << 20;    // 1 MiB
constexpr int64_t kFallbackCpuBufferBytes = int64_t(1) << 20;  // 1 MiB when the L2 size is unknown
#endif  // !__CCE_AICORE__

struct TilingParams {
  int64_t n;                // element count, >= 0
  int64_t elem_size;        // bytes per element, 1..64
  int64_t buffer_bytes;     // on-chip buffer size in bytes (Ascend UB, CPU L2), 1..2^40
  double usable_fraction;   // share of the buffer the plan may use, in (0, 1]
  int64_t align_bytes;      // tile alignment in bytes: a positive multiple of elem_size, <= 2^20
  int64_t cores;            // cores (Ascend vector cores, CPU worker threads), >= 1
  int64_t buffers;          // buffers per live tensor (2 = double buffering), 1..64
  int64_t live_tensors;     // tensors resident per tile (forward: x, y = 2), 1..64
};

struct TilingPlan {
  int64_t n, tile_len, used_cores, total_tiles, base_tiles, extra_tiles;
};

struct CoreRange {
  int64_t start, end, full_tiles, tail_len;
};

#if !defined(__CCE_AICORE__)
// Reason the parameters are invalid (static string naming the parameter), or nullptr when valid.
inline const char* tiling_error(const TilingParams& p) {
  if (p.n < 0) return "n must be >= 0";
  if (p.elem_size < 1 || p.elem_size > kMaxSmallParam) return "elem_size must be in 1..64";
  if (p.buffer_bytes < 1 || p.buffer_bytes > kMaxBufferBytes)
    return "buffer_bytes must be in 1..2^40";
  if (!(p.usable_fraction > 0.0 && p.usable_fraction <= 1.0))
    return "usable_fraction must be in (0, 1]";
  if (p.align_bytes < 1 || p.align_bytes > kMaxAlignBytes || p.align_bytes % p.elem_size != 0)
    return "align_bytes must be a positive multiple of elem_size, at most 2^20";
  if (p.cores < 1) return "cores must be >= 1";
  if (p.buffers < 1 || p.buffers > kMaxSmallParam) return "buffers must be in 1..64";
  if (p.live_tensors < 1 || p.live_tensors > kMaxSmallParam)
    return "live_tensors must be in 1..64";
  const int64_t usable = static_cast<int64_t>(std::floor(double(p.buffer_bytes) * p.usable_fraction));
  const int64_t align_elems = p.align_bytes / p.elem_size;
  if (usable / (p.buffers * p.live_tensors * p.elem_size) < align_elems)
    return "buffer_bytes * usable_fraction is too small for one aligned tile of "
           "buffers * live_tensors tensors";
  return nullptr;
}

// Plan for the parameters; tile_len == 0 (all fields 0) signals invalid parameters, see tiling_error().
inline TilingPlan plan_tiling(const TilingParams& p) {
  TilingPlan plan = {0, 0, 0, 0, 0, 0};
  if (tiling_error(p) != nullptr) return plan;
  const int64_t usable = static_cast<int64_t>(std::floor(double(p.buffer_bytes) * p.usable_fraction));
  const int64_t align_elems = p.align_bytes / p.elem_size;
  const int64_t raw_len = usable / (p.buffers * p.live_tensors * p.elem_size);
  plan.n = p.n;
  plan.tile_len = raw_len / align_elems * align_elems;
  plan.total_tiles = p.n / plan.tile_len + (p.n % plan.tile_len != 0 ? 1 : 0);
  plan.used_cores = p.cores < plan.total_tiles ? p.cores : plan.total_tiles;
  if (plan.used_cores > 0) {
    plan.base_tiles = plan.total_tiles / plan.used_cores;
    plan.extra_tiles = plan.total_tiles % plan.used_cores;
  }
  return plan;
}

#endif  // !__CCE_AICORE__

// Element range [start, end) of one core, its full tiles and its tail length.
// A core outside [0, used_cores) is idle: it gets the empty range {n, n, 0, 0}.
LRELU_DEVICE_FN CoreRange core_range(const TilingPlan& plan, int64_t core) {
  CoreRange r = {plan.n, plan.n, 0, 0};
  if (core < 0 || core >= plan.used_cores) return r;
  const int64_t tiles_before = core * plan.base_tiles + (core < plan.extra_tiles ? core : plan.extra_tiles);
  const int64_t my_tiles = plan.base_tiles + (core < plan.extra_tiles ? 1 : 0);
  const int64_t stop = (tiles_before + my_tiles) * plan.tile_len;
  r.start = tiles_before * plan.tile_len;
  r.end = stop < plan.n ? stop : plan.n;
  r.full_tiles = (r.end - r.start) / plan.tile_len;
  r.tail_len = (r.end - r.start) % plan.tile_len;
  return r;
}

#if !defined(__CCE_AICORE__)
// Parse a sysfs cache size such as "1024K" or "2M" into bytes; 0 when unreadable.
inline int64_t parse_cache_size(const char* text) {
  int64_t value = 0;
  const char* c = text;
  for (; *c >= '0' && *c <= '9'; ++c) value = value * 10 + (*c - '0');
  if (c == text) return 0;
  if (*c == 'K' || *c == 'k') return value << 10;
  if (*c == 'M' || *c == 'm') return value << 20;
  if (*c == 'G' || *c == 'g') return value << 30;
  return value;
}

// CPU buffer size for the plan: the L2 cache (sysconf, then sysfs), else kFallbackCpuBufferBytes.
inline int64_t cpu_default_buffer_bytes() {
#if defined(_SC_LEVEL2_CACHE_SIZE)
  const long from_sysconf = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (from_sysconf > 0) return static_cast<int64_t>(from_sysconf);
#endif
  if (std::FILE* f = std::fopen("/sys/devices/system/cpu/cpu0/cache/index2/size", "r")) {
    char text[32] = {0};
    const bool ok = std::fgets(text, sizeof(text), f) != nullptr;
    std::fclose(f);
    const int64_t bytes = ok ? parse_cache_size(text) : 0;
    if (bytes > 0) return bytes;
  }
  return kFallbackCpuBufferBytes;
}

#endif  // !__CCE_AICORE__

}  // namespace lrelu

#endif  // LRELU_OPS_CSRC_TILING_H_
