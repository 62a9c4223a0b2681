// LeakyReluCustom kernel entry: y = x > 0 ? x : negative_slope * x, optionally clamped to [-clamp, clamp].
// Not built with CANN here (no toolkit); g++ runs it against the Ascend C twin (docs/ascend_twin.md).
#include "leaky_relu_kernel.h"

extern "C" __global__ __aicore__ void leaky_relu_custom(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
  GET_TILING_DATA(t, tiling);
  lrelu::LeakyReluKernel<DTYPE_X, false> op;
  op.Init(x, nullptr, y, lrelu::PlanFrom(t), t.negative_slope, t.has_clamp != 0, t.clamp);
  op.Process();
}
