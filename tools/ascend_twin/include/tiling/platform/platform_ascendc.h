// Twin of platform_ascendc::PlatformAscendC: the figures of the simulated SoC (UB bytes, AI Vector cores),
// given by the twin runner (fe::PlatFormInfos).
#ifndef LRELU_TWIN_PLATFORM_ASCENDC_H_
#define LRELU_TWIN_PLATFORM_ASCENDC_H_

#include <cstdint>

namespace fe {
struct PlatFormInfos {
  uint64_t ub_bytes;
  uint32_t vector_cores;
  uint32_t lib_api_workspace;
};
}  // namespace fe

namespace platform_ascendc {

enum class CoreMemType { L0_A = 0, L0_B = 1, L0_C = 2, L1 = 3, L2 = 4, UB = 5, HBM = 6, RESERVED };

class PlatformAscendC {
 public:
  explicit PlatformAscendC(fe::PlatFormInfos* info) : info_(info) {}
  uint32_t GetCoreNumAiv() const { return info_->vector_cores; }
  uint32_t GetCoreNum() const { return info_->vector_cores; }
  void GetCoreMemSize(const CoreMemType& type, uint64_t& size) const {
    size = type == CoreMemType::UB ? info_->ub_bytes : 0;
  }
  uint32_t GetLibApiWorkSpaceSize() const { return info_->lib_api_workspace; }

 private:
  fe::PlatFormInfos* info_;
};

}  // namespace platform_ascendc

#endif  // LRELU_TWIN_PLATFORM_ASCENDC_H_
