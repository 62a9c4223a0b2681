// Unified-buffer layout of the LeakyReLU Ascend C kernels, shared by the host tiling and the kernels.
// Not built with CANN here (no toolkit); g++ runs it against the Ascend C twin (docs/ascend_twin.md).
//
// Per tile of tile_len elements of type T the kernels hold:
//   - one double-buffered queue per global tensor (forward x, y; backward dy, x, dx),
//   - scratch float tiles (kScratch* below) for the fp32 arithmetic and, with clamp, two constant tiles,
//   - one uint8 compare mask (tile_len / 8 bytes; budgeted as one byte per element).
// The host turns this into live_tensors for lrelu::plan_tiling so that
// tile_len * elem_size * buffers * live_tensors covers every byte above.
#ifndef LRELU_ASCENDC_LAYOUT_H_
#define LRELU_ASCENDC_LAYOUT_H_

#if defined(__CCE_AICORE__)
#define LRELU_LAYOUT_FN __aicore__ inline constexpr
#else
#include <cstdint>
#define LRELU_LAYOUT_FN inline constexpr
#endif

namespace lrelu {

constexpr int64_t kAscendBuffers = 2;          // double buffering of every queue
constexpr double kAscendUsableFraction = 0.6;  // UB share for the plan (the rest: stack, API scratch)
// CompareScalar/Select process 256-byte repeats: tiles are multiples of 256 B of fp32 = 64 elements,
// so a tail rounded up to 64 elements still fits inside its tile buffer.
constexpr int64_t kAscendAlignElems = 64;

LRELU_LAYOUT_FN int64_t ascend_queues(bool backward) { return backward ? 3 : 2; }

// Scratch fp32 tiles: fp32 needs one for slope * v; half types also hold fp32 copies of inputs and
// the result; clamp adds two constant tiles (forward: +clamp and -clamp; backward: y and zeros).
LRELU_LAYOUT_FN int64_t ascend_scratch_tiles(int64_t elem_size, bool backward, bool clamp) {
  return (elem_size == 4 ? 1 : (backward ? 4 : 3)) + (clamp ? 2 : 0);
}

// live_tensors for lrelu::plan_tiling: ceil(bytes per element / (buffers * elem_size)).
LRELU_LAYOUT_FN int64_t ascend_live_tensors(int64_t elem_size, bool backward, bool clamp) {
  return (kAscendBuffers * ascend_queues(backward) * elem_size + 4 * ascend_scratch_tiles(elem_size, backward, clamp) +
          1 + kAscendBuffers * elem_size - 1) /
         (kAscendBuffers * elem_size);
}

}  // namespace lrelu

#endif  // LRELU_ASCENDC_LAYOUT_H_
