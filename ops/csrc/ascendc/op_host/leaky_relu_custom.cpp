// Op definitions and host tiling of LeakyReluCustom (y = x > 0 ? x : s * x, optional clamp to [-c, c])
// and LeakyReluGradCustom (dx = x > 0 ? dy : s * dy, 0 where the forward output was clamped).
// The tiling is lrelu::plan_tiling from the shared tiling.h (copied next to this file by
// scripts/build_ascend_ops.sh), fed with the UB size and vector core count of the platform.
// Not built with CANN here (no toolkit); g++ runs it against the Ascend C twin (docs/ascend_twin.md).
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <vector>

#include "leaky_relu_custom_tiling.h"
#include "lrelu_ascend_layout.h"
#include "register/op_def_registry.h"
#include "tiling.h"
#include "tiling/platform/platform_ascendc.h"

namespace optiling {

static int64_t ElemSize(ge::DataType dtype) {
  switch (dtype) {
    case ge::DT_FLOAT: return 4;
    case ge::DT_FLOAT16:
    case ge::DT_BF16: return 2;
    default: return 0;
  }
}

// Attribute 0 is negative_slope (required), attribute 1 is clamp (optional; < 0 or +inf = no clamp).
template <bool kBackward>
static ge::graphStatus LeakyReluTiling(gert::TilingContext* context) {
  const char* op = kBackward ? "LeakyReluGradCustom" : "LeakyReluCustom";
  const int64_t elem_size = ElemSize(context->GetInputDesc(0)->GetDataType());
  if (elem_size == 0) {
    std::fprintf(stderr, "%s: dtype must be float32, float16 or bfloat16\n", op);
    return ge::GRAPH_FAILED;
  }
  const gert::RuntimeAttrs* attrs = context->GetAttrs();
  const float slope = *attrs->GetAttrPointer<float>(0);
  const float* clamp_attr = attrs->GetAttrPointer<float>(1);
  const float clamp = clamp_attr != nullptr ? *clamp_attr : -1.0f;
  if (!std::isfinite(slope) || slope < 0.0f) {
    std::fprintf(stderr, "%s: negative_slope must be finite and >= 0, got %g\n", op, slope);
    return ge::GRAPH_FAILED;
  }
  const bool has_clamp = clamp >= 0.0f && std::isfinite(clamp);

  const auto platform = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());
  uint64_t ub_bytes = 0;
  platform.GetCoreMemSize(platform_ascendc::CoreMemType::UB, ub_bytes);
  const lrelu::TilingParams params = {
      context->GetInputShape(0)->GetStorageShape().GetShapeSize(),
      elem_size,
      static_cast<int64_t>(ub_bytes),
      lrelu::kAscendUsableFraction,
      lrelu::kAscendAlignElems * elem_size,
      static_cast<int64_t>(platform.GetCoreNumAiv()),
      lrelu::kAscendBuffers,
      lrelu::ascend_live_tensors(elem_size, kBackward, has_clamp)};
  const lrelu::TilingPlan plan = lrelu::plan_tiling(params);
  if (plan.tile_len == 0) {
    std::fprintf(stderr, "%s: tiling failed: %s\n", op, lrelu::tiling_error(params));
    return ge::GRAPH_FAILED;
  }

  LeakyReluCustomTilingData tiling;
  tiling.set_n(plan.n);
  tiling.set_tile_len(plan.tile_len);
  tiling.set_used_cores(plan.used_cores);
  tiling.set_total_tiles(plan.total_tiles);
  tiling.set_base_tiles(plan.base_tiles);
  tiling.set_extra_tiles(plan.extra_tiles);
  tiling.set_negative_slope(slope);
  tiling.set_clamp(has_clamp ? clamp : 0.0f);
  tiling.set_has_clamp(has_clamp ? 1 : 0);
  tiling.set_reserved(0);
  tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());
  context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
  // An empty tensor still launches one block; core_range gives it the empty range.
  context->SetBlockDim(static_cast<uint32_t>(plan.used_cores > 0 ? plan.used_cores : 1));
  size_t* workspace = context->GetWorkspaceSizes(1);
  workspace[0] = platform.GetLibApiWorkSpaceSize();
  return ge::GRAPH_SUCCESS;
}

}  // namespace optiling

namespace ge {

// Output 0 has the shape and dtype of input 0 (forward: x -> y; backward: dy -> dx).
static graphStatus SameShape(gert::InferShapeContext* context) {
  *context->GetOutputShape(0) = *context->GetInputShape(0);
  return GRAPH_SUCCESS;
}

static graphStatus SameDataType(gert::InferDataTypeContext* context) {
  context->SetOutputDataType(0, context->GetInputDataType(0));
  return GRAPH_SUCCESS;
}

}  // namespace ge

namespace ops {

static const std::vector<ge::DataType> kDtypes = {ge::DT_FLOAT, ge::DT_FLOAT16, ge::DT_BF16};
static const std::vector<ge::Format> kFormats = {ge::FORMAT_ND, ge::FORMAT_ND, ge::FORMAT_ND};

// Inputs and output of one op, then the shared attributes, inference and tiling.
template <typename TilingFn>
static void DefineLeakyRelu(OpDef& def, std::initializer_list<const char*> inputs, const char* output,
                            TilingFn tiling) {
  for (const char* name : inputs) {
    def.Input(name).ParamType(REQUIRED).DataType(kDtypes).Format(kFormats);
  }
  def.Output(output).ParamType(REQUIRED).DataType(kDtypes).Format(kFormats);
  def.Attr("negative_slope").AttrType(REQUIRED).Float();
  def.Attr("clamp").AttrType(OPTIONAL).Float(-1.0f);
  def.SetInferShape(ge::SameShape).SetInferDataType(ge::SameDataType);
  def.AICore().SetTiling(tiling);
  def.AICore().AddConfig("ascend910b");  // bf16 needs Atlas A2 (910B) or newer
}

class LeakyReluCustom : public OpDef {
 public:
  explicit LeakyReluCustom(const char* name) : OpDef(name) {
    DefineLeakyRelu(*this, {"x"}, "y", optiling::LeakyReluTiling<false>);
  }
};

class LeakyReluGradCustom : public OpDef {
 public:
  explicit LeakyReluGradCustom(const char* name) : OpDef(name) {
    DefineLeakyRelu(*this, {"dy", "x"}, "dx", optiling::LeakyReluTiling<true>);
  }
};

OP_ADD(LeakyReluCustom);
OP_ADD(LeakyReluGradCustom);

}  // namespace ops
