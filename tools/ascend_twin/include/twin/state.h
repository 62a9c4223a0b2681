// State of the Ascend C twin: the simulated Global Memory tensors, the Unified Buffer of the core that runs
// now (bytes + a shadow of which bits were written), the queue buffers, the rule checks and the UB dump.
// Header-only (C++17 inline variables), shared by the kernel and host translation units of one library.
//
// Target: Ascend 910B (Atlas A2, NPU arch 2201, AI Vector core). UB = 192 KiB per vector core; TPipe may
// allocate the first 184 KiB, the last 8 KiB hold API temporaries (asc-devkit impl/basic_api/utils/
// kernel_utils_constants.h: TOTAL_UB_SIZE = 192 * 1024, TOTAL_VEC_LOCAL_SIZE = TMP_UB_OFFSET = 184 * 1024
// for __NPU_ARCH__ 2201; the Select API asks for 8 KiB of UB reserved in modes 1 and 2 on Atlas A2).
#ifndef LRELU_TWIN_STATE_H_
#define LRELU_TWIN_STATE_H_

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace twin {

constexpr uint32_t kUbBytes = 192 * 1024;       // Unified Buffer of one AI Vector core (910B)
constexpr uint32_t kUbAllocBytes = 184 * 1024;  // what TPipe::InitBuffer may hand out
constexpr uint32_t kBlockBytes = 32;            // DataCopy block / UB address granule
constexpr uint32_t kRepeatBytes = 256;          // one vector repeat
constexpr int kMaxQueBuffersPerPosition = 8;    // sync event ids per TPosition on Atlas A2
constexpr uint8_t kPoison = 0xFF;               // UB and output GM fill: NaN in fp32 and fp16

// A broken hardware rule: the message names the rule, the tensor and the offsets.
struct RuleError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct GmRegion {
  std::string name;
  uint8_t* begin;
  uint64_t bytes;
  bool output;                  // poisoned before the run; every byte must be written exactly once
  std::vector<uint8_t> writes;  // per byte, outputs only
};

enum class SlotState { kFree, kAllocated, kEnqueued, kDequeued };

struct Slot {
  uint32_t offset, bytes;
  SlotState state;
};

struct Queue {
  std::string label;  // "VECIN#0": position and index in InitBuffer order
  int position, depth;
  std::vector<Slot> slots;
  std::vector<int> fifo;  // enqueued slot indices, oldest first
};

struct Buf {
  std::string label;
  uint32_t offset, bytes;
};

struct Core {
  int64_t idx = 0, num = 1;
  std::vector<uint8_t> ub, shadow;  // shadow: per UB byte, which bits hold written data
  uint32_t ub_top = 0, ub_high = 0;
  std::vector<Queue> queues;
  std::vector<Buf> bufs;
  int per_position[16] = {0};
  int64_t tile_origin = -1;  // element index of the current tile (set by GM -> UB copies), for the dump
  int64_t tiles = 0;
};

struct Run {
  std::vector<GmRegion> gm;
  Core core;
  int64_t dump_lo = 0, dump_hi = 0;  // element range to dump, empty = no dump
  std::ostringstream dump;
  uint32_t ub_high = 0;              // largest UB allocation over the cores
  int64_t tiles = 0;
  std::vector<std::string> deferred;  // rules broken inside destructors (reported after the core)
};

inline Run& run() {
  static Run r;
  return r;
}

inline std::string where() {
  const Core& c = run().core;
  return " (core " + std::to_string(c.idx) + " of " + std::to_string(c.num) + ")";
}

[[noreturn]] inline void fail(const std::string& rule, const std::string& detail) {
  throw RuleError("[" + rule + "] " + detail + where());
}

// --- Global Memory -------------------------------------------------------------------------------------

// Registers a GM tensor of the launch; outputs count their writes (each byte must be written exactly once).
inline void add_gm(const std::string& name, uint8_t* begin, uint64_t bytes, bool output) {
  run().gm.push_back({name, begin, bytes, output, std::vector<uint8_t>(output ? bytes : 0, 0)});
}

inline GmRegion* find_region(const void* p, uint64_t bytes) {
  const uint8_t* b = static_cast<const uint8_t*>(p);
  for (GmRegion& r : run().gm) {
    if (b >= r.begin && b + bytes <= r.begin + r.bytes) return &r;
  }
  return nullptr;
}

inline GmRegion& region_of(const void* p, uint64_t bytes, const char* what) {
  GmRegion* r = find_region(p, bytes);
  if (r == nullptr) {
    fail("GM bounds", std::string(what) + ": " + std::to_string(bytes) +
                          " bytes are not inside any GM tensor of the launch");
  }
  return *r;
}

inline uint64_t offset_in(const GmRegion& r, const void* p) {
  return static_cast<uint64_t>(static_cast<const uint8_t*>(p) - r.begin);
}

// --- Unified Buffer ------------------------------------------------------------------------------------

inline void reset_core(int64_t idx, int64_t num) {
  Core& c = run().core;
  c = Core();
  c.idx = idx;
  c.num = num;
  c.ub.assign(kUbBytes, kPoison);
  c.shadow.assign(kUbBytes, 0);
}

inline bool defined(uint32_t addr, uint32_t bytes) {
  const uint8_t* s = run().core.shadow.data() + addr;
  if (bytes == 4) {  // fast paths for the lane sizes of float and half
    uint32_t v;
    std::memcpy(&v, s, 4);
    return v == 0xFFFFFFFFu;
  }
  if (bytes == 2) return s[0] == 0xFF && s[1] == 0xFF;
  for (uint32_t i = 0; i < bytes; ++i) {
    if (s[i] != 0xFF) return false;
  }
  return true;
}

inline void mark(uint32_t addr, uint32_t bytes, bool is_defined) {
  std::memset(run().core.shadow.data() + addr, is_defined ? 0xFF : 0, bytes);
}

inline bool bit_defined(uint32_t addr, uint32_t bit) { return (run().core.shadow[addr + bit / 8] >> (bit % 8)) & 1; }

inline bool bit_value(uint32_t addr, uint32_t bit) { return (run().core.ub[addr + bit / 8] >> (bit % 8)) & 1; }

inline void set_bit(uint32_t addr, uint32_t bit, bool value, bool is_defined) {
  uint8_t& v = run().core.ub[addr + bit / 8];
  uint8_t& s = run().core.shadow[addr + bit / 8];
  const uint8_t m = static_cast<uint8_t>(1u << (bit % 8));
  v = static_cast<uint8_t>(value ? (v | m) : (v & ~m));
  s = static_cast<uint8_t>(is_defined ? (s | m) : (s & ~m));
}

inline uint32_t round_up(uint32_t v, uint32_t to) { return (v + to - 1) / to * to; }

inline uint32_t alloc_ub(uint32_t bytes, const std::string& what) {
  Core& c = run().core;
  const uint32_t size = round_up(bytes, kBlockBytes);
  if (bytes == 0) fail("UB capacity", what + ": InitBuffer with 0 bytes");
  if (uint64_t(c.ub_top) + size > kUbAllocBytes) {
    fail("UB capacity", what + " needs " + std::to_string(size) + " bytes at UB offset " + std::to_string(c.ub_top) +
                            ", past the " + std::to_string(kUbAllocBytes) +
                            " bytes TPipe may allocate (Ascend 910B: 192 KiB UB, last 8 KiB for API temporaries)");
  }
  const uint32_t at = c.ub_top;
  c.ub_top += size;
  c.ub_high = c.ub_top;
  return at;
}

// --- Dump ----------------------------------------------------------------------------------------------

// Lanes [first, last) of an instruction's destination that fall in the dump range, relative to the tile.
inline bool dump_lanes(uint32_t count, uint32_t& first, uint32_t& last) {
  const Run& r = run();
  if (r.dump_hi <= r.dump_lo || r.core.tile_origin < 0) return false;
  const int64_t lo = r.dump_lo - r.core.tile_origin, hi = r.dump_hi - r.core.tile_origin;
  if (hi <= 0 || lo >= int64_t(count)) return false;
  first = static_cast<uint32_t>(lo < 0 ? 0 : lo);
  last = static_cast<uint32_t>(hi > int64_t(count) ? count : hi);
  return true;
}

}  // namespace twin

#endif  // LRELU_TWIN_STATE_H_
