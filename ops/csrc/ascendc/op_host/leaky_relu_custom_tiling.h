// TilingData of LeakyReluCustom and LeakyReluGradCustom: the lrelu::TilingPlan fields plus the attributes.
// Not built with CANN here (no toolkit); g++ runs it against the Ascend C twin (docs/ascend_twin.md).
#ifndef LRELU_ASCENDC_LEAKY_RELU_CUSTOM_TILING_H_
#define LRELU_ASCENDC_LEAKY_RELU_CUSTOM_TILING_H_

#include "register/tilingdata_base.h"

namespace optiling {
BEGIN_TILING_DATA_DEF(LeakyReluCustomTilingData)
TILING_DATA_FIELD_DEF(int64_t, n);
TILING_DATA_FIELD_DEF(int64_t, tile_len);
TILING_DATA_FIELD_DEF(int64_t, used_cores);
TILING_DATA_FIELD_DEF(int64_t, total_tiles);
TILING_DATA_FIELD_DEF(int64_t, base_tiles);
TILING_DATA_FIELD_DEF(int64_t, extra_tiles);
TILING_DATA_FIELD_DEF(float, negative_slope);
TILING_DATA_FIELD_DEF(float, clamp);       // meaningful only when has_clamp == 1
TILING_DATA_FIELD_DEF(uint32_t, has_clamp);
TILING_DATA_FIELD_DEF(uint32_t, reserved);  // keeps the struct a multiple of 8 bytes
END_TILING_DATA_DEF;

REGISTER_TILING_DATA_CLASS(LeakyReluCustom, LeakyReluCustomTilingData)
REGISTER_TILING_DATA_CLASS(LeakyReluGradCustom, LeakyReluCustomTilingData)
}  // namespace optiling

#endif  // LRELU_ASCENDC_LEAKY_RELU_CUSTOM_TILING_H_
