// Twin of CANN's tiling-data definition macros (register/tilingdata_base.h): one plain struct per
// BEGIN_TILING_DATA_DEF with set_<field>() setters, SaveToBuffer() and GetDataSize() for the host, and the
// same layout for the kernel side (GET_TILING_DATA in kernel_operator.h copies it back from GM).
#ifndef LRELU_TWIN_TILINGDATA_BASE_H_
#define LRELU_TWIN_TILINGDATA_BASE_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#define BEGIN_TILING_DATA_DEF(class_name) \
  struct class_name {                     \
    using TwinSelf = class_name;

#define TILING_DATA_FIELD_DEF(type, name) \
  type name = 0;                          \
  void set_##name(type value) { name = value; }

#define END_TILING_DATA_DEF                                                                        \
  size_t GetDataSize() const { return sizeof(TwinSelf); }                                          \
  void SaveToBuffer(void* buffer, size_t capacity) const {                                         \
    if (sizeof(TwinSelf) > capacity) {                                                             \
      throw std::runtime_error("[tiling data] " + std::to_string(sizeof(TwinSelf)) +               \
                               " bytes do not fit the raw tiling buffer of " +                     \
                               std::to_string(capacity));                                          \
    }                                                                                              \
    std::memcpy(buffer, static_cast<const void*>(this), sizeof(TwinSelf));                         \
  }                                                                                                \
  }

#define REGISTER_TILING_DATA_CLASS(op_type, class_name) \
  static_assert(sizeof(class_name) % 8 == 0, #class_name " must be a multiple of 8 bytes");

#endif  // LRELU_TWIN_TILINGDATA_BASE_H_
