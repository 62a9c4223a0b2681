// The twin's launcher, as a C API for ctypes (tools/ascend_twin/twin.py): runs the op's host tiling
// (op_host, registered by OP_ADD), then launches the kernel once per block, one simulated AI Vector core
// after another, on GM tensors it owns, and checks that every output byte was written exactly once.
// The kernels are compiled per dtype with their entry renamed <entry>_<dtype> (see twin.py).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kernel_operator.h"
#include "leaky_relu_custom_tiling.h"
#include "lrelu_ascend_layout.h"
#include "register/op_def_registry.h"

// Weak: a library built for one dtype only (the broken variants) reports the others as not built.
extern "C" {
__attribute__((weak)) void leaky_relu_custom_float(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling);
__attribute__((weak)) void leaky_relu_custom_half(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling);
__attribute__((weak)) void leaky_relu_grad_custom_float(GM_ADDR dy, GM_ADDR x, GM_ADDR dx, GM_ADDR workspace, GM_ADDR tiling);
__attribute__((weak)) void leaky_relu_grad_custom_half(GM_ADDR dy, GM_ADDR x, GM_ADDR dx, GM_ADDR workspace, GM_ADDR tiling);
__attribute__((weak)) void leaky_relu_custom_bfloat16_t(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling);
__attribute__((weak)) void leaky_relu_grad_custom_bfloat16_t(GM_ADDR dy, GM_ADDR x, GM_ADDR dx, GM_ADDR workspace,
                                                             GM_ADDR tiling);
}

namespace {

using Launch = void (*)(GM_ADDR* inputs, GM_ADDR output, GM_ADDR workspace, GM_ADDR tiling);

struct Kernel {
  const char* op;
  ge::DataType dtype;
  bool built;
  Launch launch;
};

const Kernel kKernels[] = {
    {"LeakyReluCustom", ge::DT_FLOAT, leaky_relu_custom_float != nullptr,
     [](GM_ADDR* in, GM_ADDR out, GM_ADDR ws, GM_ADDR t) { leaky_relu_custom_float(in[0], out, ws, t); }},
    {"LeakyReluCustom", ge::DT_FLOAT16, leaky_relu_custom_half != nullptr,
     [](GM_ADDR* in, GM_ADDR out, GM_ADDR ws, GM_ADDR t) { leaky_relu_custom_half(in[0], out, ws, t); }},
    {"LeakyReluCustom", ge::DT_BF16, leaky_relu_custom_bfloat16_t != nullptr,
     [](GM_ADDR* in, GM_ADDR out, GM_ADDR ws, GM_ADDR t) { leaky_relu_custom_bfloat16_t(in[0], out, ws, t); }},
    {"LeakyReluGradCustom", ge::DT_FLOAT, leaky_relu_grad_custom_float != nullptr,
     [](GM_ADDR* in, GM_ADDR out, GM_ADDR ws, GM_ADDR t) { leaky_relu_grad_custom_float(in[0], in[1], out, ws, t); }},
    {"LeakyReluGradCustom", ge::DT_FLOAT16, leaky_relu_grad_custom_half != nullptr,
     [](GM_ADDR* in, GM_ADDR out, GM_ADDR ws, GM_ADDR t) { leaky_relu_grad_custom_half(in[0], in[1], out, ws, t); }},
    {"LeakyReluGradCustom", ge::DT_BF16, leaky_relu_grad_custom_bfloat16_t != nullptr,
     [](GM_ADDR* in, GM_ADDR out, GM_ADDR ws, GM_ADDR t) { leaky_relu_grad_custom_bfloat16_t(in[0], in[1], out, ws, t); }},
};

constexpr size_t kTilingCapacity = 64 * 1024;
constexpr uint32_t kLibApiWorkspace = 16 * 1024 * 1024;  // the twin's figure; the device reports its own

void set_error(char* err, size_t len, const std::string& message) {
  if (len > 0) std::snprintf(err, len, "%s", message.c_str());
}

ops::OpDef* find_op(const char* op) {
  auto it = ops::op_registry().find(op);
  return it == ops::op_registry().end() ? nullptr : it->second;
}

// Runs the op's tiling function and returns its status; what it printed on stderr goes to `log`.
ge::graphStatus run_tiling(ops::OpDef& def, gert::TilingContext& ctx, std::string& log) {
  std::fflush(stderr);
  std::FILE* capture = std::tmpfile();
  const int saved = dup(fileno(stderr));
  dup2(fileno(capture), fileno(stderr));
  ge::graphStatus status = ge::GRAPH_FAILED;
  try {
    status = def.aicore.tiling(&ctx);
  } catch (const std::exception& e) {
    log = e.what();
  }
  std::fflush(stderr);
  dup2(saved, fileno(stderr));
  close(saved);
  std::rewind(capture);
  char line[512];
  while (std::fgets(line, sizeof(line), capture) != nullptr) log += line;
  std::fclose(capture);
  while (!log.empty() && log.back() == '\n') log.pop_back();
  return status;
}

struct Launched {
  std::unique_ptr<gert::TilingContext> ctx;
  std::string error;
};

// Builds the tiling context (one dtype for every input, shape [n], attrs slope and clamp) and tiles.
Launched tile(const char* op, int dtype, int64_t n, float slope, float clamp, uint64_t ub, uint32_t cores) {
  Launched l;
  ops::OpDef* def = find_op(op);
  if (def == nullptr || def->aicore.tiling == nullptr) {
    l.error = std::string("op ") + op + " is not registered with a tiling function by the op_host source";
    return l;
  }
  static float attrs[2];
  attrs[0] = slope;
  attrs[1] = clamp;
  const auto dt = static_cast<ge::DataType>(dtype);
  std::vector<gert::CompileTimeTensorDesc> descs(def->inputs.size(), gert::CompileTimeTensorDesc(dt));
  std::vector<gert::StorageShape> shapes(def->inputs.size(), gert::StorageShape(gert::Shape({n})));
  l.ctx = std::make_unique<gert::TilingContext>(descs, shapes, gert::RuntimeAttrs({&attrs[0], &attrs[1]}),
                                                fe::PlatFormInfos{ub, cores, kLibApiWorkspace}, kTilingCapacity);
  std::string log;
  if (run_tiling(*def, *l.ctx, log) != ge::GRAPH_SUCCESS) {
    l.error = std::string("[host tiling] ") + op + " tiling returned GRAPH_FAILED: " + log;
  }
  return l;
}

const optiling::LeakyReluCustomTilingData& tiling_data(gert::TilingContext& ctx) {
  return *static_cast<const optiling::LeakyReluCustomTilingData*>(ctx.GetRawTilingData()->GetData());
}

std::string dump_text;

}  // namespace

// The library is compiled with -fvisibility=hidden (each variant library keeps its own twin state, even
// when several are loaded in one process); only this C API is exported.
#define TWIN_API __attribute__((visibility("default")))

extern "C" {

// Host tiling only: out = {n, tile_len, used_cores, total_tiles, base_tiles, extra_tiles, block_dim,
// has_clamp, tiling bytes, workspace bytes}; slope_clamp = {slope, clamp} as written into the tiling data.
TWIN_API int twin_tiling(const char* op, int dtype, int64_t n, float slope, float clamp, uint64_t ub, uint32_t cores,
                int64_t* out, float* slope_clamp, char* err, size_t errlen) {
  Launched l = tile(op, dtype, n, slope, clamp, ub, cores);
  if (!l.error.empty()) {
    set_error(err, errlen, l.error);
    return 1;
  }
  const auto& t = tiling_data(*l.ctx);
  const int64_t fields[10] = {t.n, t.tile_len, t.used_cores, t.total_tiles, t.base_tiles, t.extra_tiles,
                              l.ctx->GetBlockDim(), t.has_clamp, int64_t(l.ctx->GetRawTilingData()->GetDataSize()),
                              l.ctx->workspace().empty() ? -1 : int64_t(l.ctx->workspace()[0])};
  std::memcpy(out, fields, sizeof(fields));
  slope_clamp[0] = t.negative_slope;
  slope_clamp[1] = t.clamp;
  return 0;
}

// Tiles, then runs the kernel on every launched block. inputs: forward {x}; backward {dy, x}.
// stats = {block_dim, largest UB allocation in bytes, tiles copied in}. The output is copied back even when a
// rule broke (poison where nothing was written). Returns 0, or 1 with the broken rule in err.
TWIN_API int twin_run(const char* op, int dtype, int64_t n, const void* in0, const void* in1, void* out, float slope, float clamp,
             uint64_t ub, uint32_t cores, int64_t dump_lo, int64_t dump_hi, int64_t* stats, char* err, size_t errlen) {
  twin::Run& r = twin::run();
  r.gm.clear();
  r.dump.str("");
  r.deferred.clear();
  r.ub_high = 0;
  r.tiles = 0;
  r.dump_lo = dump_lo;
  r.dump_hi = dump_hi;
  dump_text.clear();

  Launched l = tile(op, dtype, n, slope, clamp, ub, cores);
  if (!l.error.empty()) {
    set_error(err, errlen, l.error);
    return 1;
  }
  const ops::OpDef& def = *find_op(op);
  const Kernel* kernel = nullptr;
  for (const Kernel& k : kKernels) {
    if (std::string(k.op) == op && k.dtype == dtype && k.built) kernel = &k;
  }
  if (kernel == nullptr) {
    set_error(err, errlen, std::string("no kernel for ") + op + " with ge::DataType " + std::to_string(dtype) +
                               " was built into this twin library");
    return 1;
  }
  // Shape and dtype inference must give the output the input's shape and dtype.
  gert::InferShapeContext shape_ctx({gert::Shape({n})}, 1);
  gert::InferDataTypeContext dtype_ctx(std::vector<ge::DataType>(def.inputs.size(), ge::DataType(dtype)), 1);
  if (def.infer_shape(&shape_ctx) != ge::GRAPH_SUCCESS || def.infer_dtype(&dtype_ctx) != ge::GRAPH_SUCCESS ||
      shape_ctx.GetOutputShape(0)->GetShapeSize() != n || dtype_ctx.GetOutputDataType(0) != dtype) {
    set_error(err, errlen, std::string("[host inference] ") + op + ": output shape or dtype differs from the input's");
    return 1;
  }

  const uint64_t esize = dtype == ge::DT_FLOAT ? 4 : 2;  // float16 and bfloat16: 2
  const uint64_t bytes = uint64_t(n) * esize;
  std::vector<std::vector<uint8_t>> memory;  // owns every GM tensor of the launch
  auto add = [&](const std::string& name, uint64_t size, const void* init, bool output) -> GM_ADDR {
    memory.emplace_back(size + twin::kBlockBytes, twin::kPoison);  // never a null pointer, even when empty
    if (init != nullptr) std::memcpy(memory.back().data(), init, size);
    twin::add_gm(name, memory.back().data(), size, output);
    return memory.back().data();
  };
  memory.reserve(def.inputs.size() + 3);
  GM_ADDR inputs[2] = {nullptr, nullptr};
  const void* data[2] = {in0, in1};
  for (size_t i = 0; i < def.inputs.size(); ++i) inputs[i] = add(def.inputs[i].name, bytes, data[i], false);
  GM_ADDR output = add(def.outputs[0].name, bytes, nullptr, true);
  GM_ADDR workspace = add("workspace", l.ctx->workspace().empty() ? 0 : l.ctx->workspace()[0], nullptr, false);
  GM_ADDR tiling = add("tiling", l.ctx->GetRawTilingData()->GetDataSize(), l.ctx->GetRawTilingData()->GetData(), false);

  const int64_t blocks = l.ctx->GetBlockDim();
  std::string error;
  for (int64_t b = 0; b < blocks && error.empty(); ++b) {
    twin::reset_core(b, blocks);
    try {
      kernel->launch(inputs, output, workspace, tiling);
    } catch (const std::exception& e) {
      error = e.what();
    }
    if (error.empty() && !r.deferred.empty()) error = r.deferred.front();
    r.ub_high = std::max(r.ub_high, r.core.ub_high);
    r.tiles += r.core.tiles;
  }
  if (error.empty()) {
    const twin::GmRegion& y = r.gm[def.inputs.size()];
    for (uint64_t i = 0; i < y.bytes; ++i) {
      if (y.writes[i] != 1) {
        error = "[GM coverage] " + y.name + " element " + std::to_string(i / esize) + " was written " +
                std::to_string(y.writes[i]) + " times by the " + std::to_string(blocks) +
                " cores (every output element must be written exactly once)";
        break;
      }
    }
  }
  std::memcpy(out, output, bytes);
  stats[0] = blocks;
  stats[1] = r.ub_high;
  stats[2] = r.tiles;
  dump_text = r.dump.str();
  r.gm.clear();
  if (!error.empty()) {
    set_error(err, errlen, error);
    return 1;
  }
  return 0;
}

TWIN_API const char* twin_dump() { return dump_text.c_str(); }

// live_tensors the host tiling gives lrelu::plan_tiling (lrelu_ascend_layout.h).
TWIN_API int64_t twin_live_tensors(int64_t elem_size, int backward, int clamp) {
  return lrelu::ascend_live_tensors(elem_size, backward != 0, clamp != 0);
}

// The op definition as text: "inputs=a,b;outputs=c;attrs=name:OPTION:type[=default],...".
TWIN_API const char* twin_op_info(const char* op) {
  static std::string text;
  const ops::OpDef* def = find_op(op);
  if (def == nullptr) return "";
  auto join = [](const std::vector<ops::OpParamDef>& params) {
    std::string s;
    for (const auto& p : params) s += (s.empty() ? "" : ",") + p.name;
    return s;
  };
  text = "inputs=" + join(def->inputs) + ";outputs=" + join(def->outputs) + ";attrs=";
  for (size_t i = 0; i < def->attrs.size(); ++i) {
    const ops::OpAttrDef& a = def->attrs[i];
    char value[32] = "";
    if (a.has_default) std::snprintf(value, sizeof(value), "=%g", a.default_value);
    text += (i ? "," : "") + a.name + ":" + (a.attr_type == ops::REQUIRED ? "required" : "optional") + ":" + a.type + value;
  }
  return text.c_str();
}

}  // extern "C"
