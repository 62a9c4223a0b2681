// LeakyReluGradCustom kernel entry: dx = x > 0 ? dy : negative_slope * dy, and 0 where the forward output
// was clamped.
// Not built with CANN here (no toolkit); g++ runs it against the Ascend C twin (docs/ascend_twin.md).
#include "leaky_relu_kernel.h"

extern "C" __global__ __aicore__ void leaky_relu_grad_custom(GM_ADDR dy, GM_ADDR x, GM_ADDR dx, GM_ADDR workspace,
                                                             GM_ADDR tiling) {
  GET_TILING_DATA(t, tiling);
  lrelu::LeakyReluKernel<DTYPE_DY, true> op;
  op.Init(dy, x, dx, lrelu::PlanFrom(t), t.negative_slope, t.has_clamp != 0, t.clamp);
  op.Process();
}
