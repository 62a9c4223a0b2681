// Twin of the host-side op definition API the op_host source uses (ge data types and status, gert tiling and
// inference contexts, ops::OpDef and OP_ADD). OP_ADD registers each op by name so the twin runner can call
// its tiling function and inspect its inputs, outputs and attributes.
#ifndef LRELU_TWIN_OP_DEF_REGISTRY_H_
#define LRELU_TWIN_OP_DEF_REGISTRY_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tiling/platform/platform_ascendc.h"

namespace ge {
enum DataType { DT_FLOAT = 0, DT_FLOAT16 = 1, DT_INT8 = 2, DT_INT32 = 3, DT_BF16 = 27, DT_UNDEFINED = 28 };
enum Format { FORMAT_NCHW = 0, FORMAT_NHWC = 1, FORMAT_ND = 2 };
using graphStatus = uint32_t;
constexpr graphStatus GRAPH_SUCCESS = 0;
constexpr graphStatus GRAPH_FAILED = 0xFFFFFFFF;
}  // namespace ge

namespace gert {

class Shape {
 public:
  Shape() = default;
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}
  int64_t GetShapeSize() const {
    int64_t size = 1;
    for (int64_t d : dims_) size *= d;
    return size;
  }
  size_t GetDimNum() const { return dims_.size(); }
  int64_t GetDim(size_t i) const { return dims_.at(i); }

 private:
  std::vector<int64_t> dims_;
};

class StorageShape {
 public:
  explicit StorageShape(Shape shape) : shape_(std::move(shape)) {}
  const Shape& GetStorageShape() const { return shape_; }
  const Shape& GetOriginShape() const { return shape_; }

 private:
  Shape shape_;
};

class CompileTimeTensorDesc {
 public:
  explicit CompileTimeTensorDesc(ge::DataType dtype) : dtype_(dtype) {}
  ge::DataType GetDataType() const { return dtype_; }

 private:
  ge::DataType dtype_;
};

// Attribute values by index, in the order of the op definition; an unset optional attribute is nullptr.
class RuntimeAttrs {
 public:
  explicit RuntimeAttrs(std::vector<const float*> floats) : floats_(std::move(floats)) {}
  template <typename T>
  const T* GetAttrPointer(size_t index) const {
    static_assert(sizeof(T) == sizeof(float), "the twin holds float attributes only");
    return index < floats_.size() ? floats_[index] : nullptr;
  }

 private:
  std::vector<const float*> floats_;
};

class TilingData {
 public:
  explicit TilingData(size_t capacity) : data_(capacity) {}
  void* GetData() { return data_.data(); }
  size_t GetCapacity() const { return data_.size(); }
  void SetDataSize(size_t size) { size_ = size; }
  size_t GetDataSize() const { return size_; }

 private:
  std::vector<uint8_t> data_;
  size_t size_ = 0;
};

class TilingContext {
 public:
  TilingContext(std::vector<CompileTimeTensorDesc> descs, std::vector<StorageShape> shapes, RuntimeAttrs attrs,
                fe::PlatFormInfos platform, size_t tiling_capacity)
      : descs_(std::move(descs)), shapes_(std::move(shapes)), attrs_(std::move(attrs)), platform_(platform),
        tiling_(tiling_capacity) {}
  const CompileTimeTensorDesc* GetInputDesc(size_t i) const { return i < descs_.size() ? &descs_[i] : nullptr; }
  const StorageShape* GetInputShape(size_t i) const { return i < shapes_.size() ? &shapes_[i] : nullptr; }
  const RuntimeAttrs* GetAttrs() const { return &attrs_; }
  fe::PlatFormInfos* GetPlatformInfo() { return &platform_; }
  TilingData* GetRawTilingData() { return &tiling_; }
  void SetBlockDim(uint32_t dim) { block_dim_ = dim; }
  uint32_t GetBlockDim() const { return block_dim_; }
  size_t* GetWorkspaceSizes(size_t count) {
    workspace_.assign(count, 0);
    return workspace_.data();
  }
  const std::vector<size_t>& workspace() const { return workspace_; }

 private:
  std::vector<CompileTimeTensorDesc> descs_;
  std::vector<StorageShape> shapes_;
  RuntimeAttrs attrs_;
  fe::PlatFormInfos platform_;
  TilingData tiling_;
  uint32_t block_dim_ = 0;
  std::vector<size_t> workspace_;
};

class InferShapeContext {
 public:
  InferShapeContext(std::vector<Shape> inputs, size_t outputs) : inputs_(std::move(inputs)), outputs_(outputs) {}
  const Shape* GetInputShape(size_t i) const { return &inputs_.at(i); }
  Shape* GetOutputShape(size_t i) { return &outputs_.at(i); }

 private:
  std::vector<Shape> inputs_, outputs_;
};

class InferDataTypeContext {
 public:
  InferDataTypeContext(std::vector<ge::DataType> inputs, size_t outputs)
      : inputs_(std::move(inputs)), outputs_(outputs, ge::DT_UNDEFINED) {}
  ge::DataType GetInputDataType(size_t i) const { return inputs_.at(i); }
  ge::graphStatus SetOutputDataType(size_t i, ge::DataType dtype) {
    outputs_.at(i) = dtype;
    return ge::GRAPH_SUCCESS;
  }
  ge::DataType GetOutputDataType(size_t i) const { return outputs_.at(i); }

 private:
  std::vector<ge::DataType> inputs_, outputs_;
};

}  // namespace gert

namespace ops {

enum Option { IGNORE = 0, OPTIONAL = 1, REQUIRED = 2, DYNAMIC = 3 };

using TilingFunc = ge::graphStatus (*)(gert::TilingContext*);
using InferShapeFunc = ge::graphStatus (*)(gert::InferShapeContext*);
using InferDataTypeFunc = ge::graphStatus (*)(gert::InferDataTypeContext*);

class OpParamDef {
 public:
  explicit OpParamDef(std::string name) : name(std::move(name)) {}
  OpParamDef& ParamType(Option option) {
    param_type = option;
    return *this;
  }
  OpParamDef& DataType(std::vector<ge::DataType> types) {
    dtypes = std::move(types);
    return *this;
  }
  OpParamDef& Format(std::vector<ge::Format> fmts) {
    formats = std::move(fmts);
    return *this;
  }
  std::string name;
  Option param_type = REQUIRED;
  std::vector<ge::DataType> dtypes;
  std::vector<ge::Format> formats;
};

class OpAttrDef {
 public:
  explicit OpAttrDef(std::string name) : name(std::move(name)) {}
  OpAttrDef& AttrType(Option option) {
    attr_type = option;
    return *this;
  }
  OpAttrDef& Float() {
    type = "float";
    return *this;
  }
  OpAttrDef& Float(float value) {
    type = "float";
    has_default = true;
    default_value = value;
    return *this;
  }
  std::string name, type;
  Option attr_type = REQUIRED;
  bool has_default = false;
  float default_value = 0.0f;
};

class OpAICoreDef {
 public:
  OpAICoreDef& SetTiling(TilingFunc func) {
    tiling = func;
    return *this;
  }
  OpAICoreDef& AddConfig(const char* soc) {
    socs.emplace_back(soc);
    return *this;
  }
  TilingFunc tiling = nullptr;
  std::vector<std::string> socs;
};

class OpDef;

inline std::map<std::string, OpDef*>& op_registry() {
  static std::map<std::string, OpDef*> ops;
  return ops;
}

class OpDef {
 public:
  explicit OpDef(const char* type) : type(type) { op_registry()[type] = this; }
  OpDef(const OpDef&) = delete;
  OpDef& operator=(const OpDef&) = delete;
  OpParamDef& Input(const char* name) { return inputs.emplace_back(name); }
  OpParamDef& Output(const char* name) { return outputs.emplace_back(name); }
  OpAttrDef& Attr(const char* name) { return attrs.emplace_back(name); }
  OpDef& SetInferShape(InferShapeFunc func) {
    infer_shape = func;
    return *this;
  }
  OpDef& SetInferDataType(InferDataTypeFunc func) {
    infer_dtype = func;
    return *this;
  }
  OpAICoreDef& AICore() { return aicore; }

  std::string type;
  std::vector<OpParamDef> inputs, outputs;
  std::vector<OpAttrDef> attrs;
  InferShapeFunc infer_shape = nullptr;
  InferDataTypeFunc infer_dtype = nullptr;
  OpAICoreDef aicore;
};

}  // namespace ops

#define OP_ADD(op_type) static op_type g_twin_op_##op_type(#op_type)

#endif  // LRELU_TWIN_OP_DEF_REGISTRY_H_
