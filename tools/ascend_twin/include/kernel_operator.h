// Twin of the subset of the Ascend C kernel API (namespace AscendC) that the LeakyReLU kernels use, with the
// names, signatures and semantics of the public API, for compiling the unmodified kernels with g++ and
// running them one simulated AI Vector core after another. Every call checks the hardware rules and
// throws twin::RuleError naming the rule, the tensor and the offsets (see docs/ascend_twin.md):
//   - UB capacity (twin/state.h), 32-byte UB addresses, DataCopy lengths and GM offsets in 32-byte blocks,
//     CompareScalar counts in 256-byte repeats, no partial operand overlap;
//   - queue discipline: depth, buffers per queue, AllocTensor/EnQue/DeQue/FreeTensor order, nothing left
//     allocated at the end, and pipe order (a VECIN tile is read by vector code only after DeQue, a VECOUT
//     tile is copied out only after DeQue), which is what EnQue/DeQue synchronise on the device;
//   - GM accesses inside the SetGlobalBuffer window and the launched tensors;
//   - UB that was never written (poisoned with 0xFF = NaN, again at every AllocTensor) is tracked bit by
//     bit through the vector instructions (like valgrind's memcheck): it may be read only as the padding of
//     an instruction's last 256-byte repeat, and may never reach GM.
// Not modelled: instruction timing, real pipe concurrency, the CANN compiler, flush-to-zero of subnormals.
#ifndef LRELU_TWIN_KERNEL_OPERATOR_H_
#define LRELU_TWIN_KERNEL_OPERATOR_H_

#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <string>

#include "twin/state.h"

#define __aicore__
#define __global__
#define __gm__
#define GM_ADDR uint8_t*

using half = _Float16;

// bfloat16 as the device stores it: the upper 16 bits of a float. From float: round to nearest even, NaN
// stays NaN; to float: exact.
struct bfloat16_t {
  uint16_t bits = 0;
  bfloat16_t() = default;
  bfloat16_t(float f) {  // NOLINT: implicit like the device type
    uint32_t u;
    std::memcpy(&u, &f, sizeof(u));
    bits = (u & 0x7FFFFFFFu) > 0x7F800000u ? static_cast<uint16_t>((u >> 16) | 0x40u)
                                            : static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
  }
  operator float() const {  // NOLINT
    const uint32_t u = uint32_t(bits) << 16;
    float f;
    std::memcpy(&f, &u, sizeof(f));
    return f;
  }
};

namespace AscendC {

enum class TPosition : uint8_t { GM, A1, A2, B1, B2, C1, C2, CO1, CO2, VECIN, VECOUT, VECCALC };
using QuePosition = TPosition;
enum class CMPMODE : uint8_t { LT = 0, GT, EQ, LE, GE, NE };
enum class SELMODE : uint8_t { VSEL_CMPMASK_SPR = 0, VSEL_TENSOR_SCALAR_MODE, VSEL_TENSOR_TENSOR_MODE };
enum class RoundMode : uint8_t { CAST_NONE = 0, CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND, CAST_TRUNC, CAST_ODD };

template <typename T, typename U>
struct IsSameType {
  static constexpr bool value = false;
};
template <typename T>
struct IsSameType<T, T> {
  static constexpr bool value = true;
};

inline int64_t GetBlockIdx() { return twin::run().core.idx; }
inline int64_t GetBlockNum() { return twin::run().core.num; }

struct DataCopyExtParams {
  DataCopyExtParams() = default;
  DataCopyExtParams(uint16_t count, uint32_t len, uint32_t src_stride, uint32_t dst_stride, uint32_t reserved)
      : blockCount(count), blockLen(len), srcStride(src_stride), dstStride(dst_stride), rsv(reserved) {}
  uint16_t blockCount = 1;
  uint32_t blockLen = 0;   // bytes
  uint32_t srcStride = 0;  // GM source: bytes; UB source: 32-byte blocks
  uint32_t dstStride = 0;  // GM destination: bytes; UB destination: 32-byte blocks
  uint32_t rsv = 0;
};

template <typename T>
struct DataCopyPadExtParams {
  DataCopyPadExtParams() = default;
  DataCopyPadExtParams(bool pad, uint8_t left, uint8_t right, T value)
      : isPad(pad), leftPadding(left), rightPadding(right), paddingValue(value) {}
  bool isPad = false;  // false: the padding up to the 32-byte block holds undefined values
  uint8_t leftPadding = 0, rightPadding = 0;
  T paddingValue = 0;
};

// ---- Tensors ------------------------------------------------------------------------------------------

template <typename T>
class LocalTensor {
 public:
  LocalTensor() = default;
  LocalTensor operator[](uint32_t offset) const {
    if (uint64_t(offset) * sizeof(T) > bytes_) {
      twin::fail("UB bounds", "LocalTensor " + label() + " indexed at element " + std::to_string(offset) +
                                  " but holds " + std::to_string(GetSize()));
    }
    LocalTensor r = *this;
    r.addr_ += offset * sizeof(T);
    r.bytes_ -= offset * sizeof(T);
    return r;
  }
  uint32_t GetSize() const { return bytes_ / sizeof(T); }

  // Twin state: UB byte address and size, owning queue slot or TBuf.
  uint32_t addr_ = 0, bytes_ = 0, base_ = 0;
  int que_ = -1, slot_ = -1, buf_ = -1;

  std::string label() const {
    const twin::Core& c = twin::run().core;
    std::string name = que_ >= 0   ? c.queues[que_].label + ".buf" + std::to_string(slot_)
                       : buf_ >= 0 ? c.bufs[buf_].label
                                   : std::string("<unassigned LocalTensor>");
    return name + "[" + std::to_string((addr_ - base_) / sizeof(T)) + "]";
  }
};

template <typename T>
class GlobalTensor {
 public:
  void SetGlobalBuffer(__gm__ T* buffer, uint64_t bufferSize) {
    twin::region_of(buffer, bufferSize * sizeof(T), "SetGlobalBuffer");
    addr_ = begin_ = buffer;
    end_ = buffer + bufferSize;
  }
  GlobalTensor operator[](uint64_t offset) const {
    GlobalTensor r = *this;
    r.addr_ = addr_ + offset;
    return r;
  }
  T *addr_ = nullptr, *begin_ = nullptr, *end_ = nullptr;  // access address, SetGlobalBuffer window
};

}  // namespace AscendC

namespace twin {

// Which pipe touches a UB operand: MTE2 copies GM -> UB, V computes, MTE3 copies UB -> GM.
enum class Pipe { kMte2, kVector, kMte3 };

inline const char* state_name(SlotState s) {
  switch (s) {
    case SlotState::kFree: return "free (before AllocTensor or after FreeTensor)";
    case SlotState::kAllocated: return "allocated (before EnQue)";
    case SlotState::kEnqueued: return "in the queue (after EnQue, before DeQue)";
    default: return "dequeued";
  }
}

// The slot state in which each pipe may touch a tile of a VECIN or VECOUT queue: the producer before EnQue,
// the consumer after DeQue (columns: MTE2, V, MTE3). Tiles of other queues: allocated or dequeued.
struct PipeRule {
  AscendC::TPosition position;
  SlotState state[3];
};
constexpr PipeRule kPipeRules[] = {
    {AscendC::TPosition::VECIN, {SlotState::kAllocated, SlotState::kDequeued, SlotState::kDequeued}},
    {AscendC::TPosition::VECOUT, {SlotState::kAllocated, SlotState::kAllocated, SlotState::kDequeued}},
};

template <typename T>
void check_local(const AscendC::LocalTensor<T>& t, uint64_t bytes, const char* instr, const char* role, Pipe pipe) {
  if (t.que_ < 0 && t.buf_ < 0) fail("UB bounds", std::string(instr) + " " + role + ": LocalTensor has no buffer");
  if (t.que_ >= 0) {
    const Queue& q = run().core.queues[t.que_];
    const SlotState s = q.slots[t.slot_].state;
    const bool ok = s == SlotState::kAllocated || s == SlotState::kDequeued;
    for (const PipeRule& rule : kPipeRules) {
      if (q.position != int(rule.position) || s == rule.state[int(pipe)]) continue;
      fail("queue discipline", std::string(instr) + " " + role + " " + t.label() + " is " + state_name(s) +
                                   "; this pipe may touch it only when " + state_name(rule.state[int(pipe)]) +
                                   " (EnQue/DeQue are what synchronise MTE2 -> V -> MTE3 on the device)");
    }
    if (!ok) fail("queue discipline", std::string(instr) + " " + role + " " + t.label() + " is " + state_name(s));
  }
  if (t.addr_ % kBlockBytes != 0) {
    fail("UB alignment", std::string(instr) + " " + role + " " + t.label() + " starts at UB byte " +
                             std::to_string(t.addr_) + ", not a multiple of 32");
  }
  if (bytes > t.bytes_) {
    fail("UB bounds", std::string(instr) + " " + role + " touches " + std::to_string(bytes) + " bytes of " +
                          t.label() + ", which holds " + std::to_string(t.bytes_));
  }
}

// Operands may coincide exactly (same start, same element size) or not overlap at all.
template <typename A, typename B>
void check_overlap(const AscendC::LocalTensor<A>& a, uint64_t abytes, const AscendC::LocalTensor<B>& b,
                   uint64_t bbytes, const char* instr) {
  const bool disjoint = a.addr_ + abytes <= b.addr_ || b.addr_ + bbytes <= a.addr_;
  const bool same = a.addr_ == b.addr_ && sizeof(A) == sizeof(B) && abytes == bbytes;
  if (!disjoint && !same) {
    fail("UB overlap", std::string(instr) + ": operands " + a.label() + " and " + b.label() + " partially overlap");
  }
}

template <typename T>
T load(uint32_t addr) {
  T v;
  std::memcpy(&v, run().core.ub.data() + addr, sizeof(T));
  return v;
}

template <typename T>
void store(uint32_t addr, T v, bool is_defined) {
  std::memcpy(run().core.ub.data() + addr, &v, sizeof(T));
  mark(addr, sizeof(T), is_defined);
}

template <typename T>
std::string format_lane(uint32_t addr) {
  if (!defined(addr, sizeof(T))) return "~";
  char text[32];
  std::snprintf(text, sizeof(text), "%.9g", double(float(load<T>(addr))));
  return text;
}

inline void dump_line(const std::string& what, const std::string& values) {
  std::string line = "  " + what;
  if (line.size() < 76) line.resize(76, ' ');
  run().dump << line << values << "\n";
}

template <typename T>
void dump_tensor(const std::string& what, const AscendC::LocalTensor<T>& t, uint32_t count) {
  uint32_t first = 0, last = 0;
  if (!dump_lanes(count, first, last)) return;
  std::string values;
  for (uint32_t i = first; i < last; ++i) values += " " + format_lane<T>(t.addr_ + i * sizeof(T));
  dump_line(what, values);
}

inline void dump_bits(const std::string& what, const std::string& label, uint32_t addr, uint32_t count) {
  uint32_t first = 0, last = 0;
  if (!dump_lanes(count, first, last)) return;
  std::string values;
  for (uint32_t i = first; i < last; ++i) values += bit_defined(addr, i) ? (bit_value(addr, i) ? " 1" : " 0") : " ~";
  dump_line(what + " -> " + label, values);
}

template <typename T>
std::string gm_span(const GmRegion& r, const T* p, uint64_t elems) {
  const uint64_t e = offset_in(r, p) / sizeof(T);
  return r.name + "[" + std::to_string(e) + ":" + std::to_string(e + elems) + "]";
}

// Checks a GM access of `bytes` at g.addr_ (+ extra bytes) against the SetGlobalBuffer window and the tensor.
template <typename T>
GmRegion& check_gm(const AscendC::GlobalTensor<T>& g, uint64_t skip, uint64_t bytes, const char* instr) {
  if (g.begin_ == nullptr) fail("GM bounds", std::string(instr) + ": GlobalTensor used before SetGlobalBuffer");
  const uint8_t* p = reinterpret_cast<const uint8_t*>(g.addr_) + skip;
  const uint8_t* lo = reinterpret_cast<const uint8_t*>(g.begin_);
  const uint8_t* hi = reinterpret_cast<const uint8_t*>(g.end_);
  GmRegion& r = region_of(g.begin_, 0, instr);
  if (p < lo || p + bytes > hi) {
    fail("GM bounds", std::string(instr) + " touches " + r.name + " elements [" +
                          std::to_string((p - r.begin) / sizeof(T)) + ", " +
                          std::to_string((p + bytes - r.begin + sizeof(T) - 1) / sizeof(T)) +
                          ") outside the SetGlobalBuffer window [" + std::to_string((lo - r.begin) / sizeof(T)) +
                          ", " + std::to_string((hi - r.begin) / sizeof(T)) + ") of " + std::to_string(r.bytes / sizeof(T)) +
                          " elements");
  }
  region_of(p, bytes, instr);
  return r;
}

inline void gm_read(GmRegion& r, const uint8_t* p, uint64_t bytes, uint32_t ub_addr, const char* instr) {
  if (r.output) {
    for (uint64_t i = 0; i < bytes; ++i) {
      if (r.writes[offset_in(r, p) + i] == 0) {
        fail("GM uninitialised", std::string(instr) + " reads output " + r.name + " byte " +
                                     std::to_string(offset_in(r, p) + i) + " before any core wrote it");
      }
    }
  }
  std::memcpy(run().core.ub.data() + ub_addr, p, bytes);
  mark(ub_addr, static_cast<uint32_t>(bytes), true);
}

template <typename T>
void gm_write(GmRegion& r, uint8_t* p, uint64_t bytes, const AscendC::LocalTensor<T>& src, uint32_t ub_addr,
              const char* instr) {
  if (!r.output) fail("GM bounds", std::string(instr) + " writes to input tensor " + r.name);
  for (uint64_t i = 0; i < bytes; ++i) {
    if (!defined(ub_addr + static_cast<uint32_t>(i), 1)) {
      const uint64_t lane = (ub_addr + i - src.addr_) / sizeof(T);
      fail("UB uninitialised", std::string(instr) + " writes " + r.name + " element " +
                                   std::to_string((offset_in(r, p) + i) / sizeof(T)) + " from " + src.label() +
                                   " lane " + std::to_string(lane) + ", which no copy or instruction wrote");
    }
  }
  std::memcpy(p, run().core.ub.data() + ub_addr, bytes);
  if (r.output) {
    for (uint64_t i = 0; i < bytes; ++i) ++r.writes[offset_in(r, p) + i];
  }
}

// A new tile starts at every copy into UB: its first element index anchors the dump.
template <typename T>
void start_tile(const GmRegion& r, const T* p, uint32_t count) {
  Core& c = run().core;
  const int64_t origin = static_cast<int64_t>(offset_in(r, p) / sizeof(T));
  if (origin == c.tile_origin) return;
  c.tile_origin = origin;
  ++c.tiles;
  uint32_t first = 0, last = 0;
  if (!dump_lanes(count, first, last)) return;
  std::string values;
  for (uint32_t i = first; i < last; ++i) values += " " + std::to_string(origin + i);
  run().dump << "core " << c.idx << ", tile at element " << origin << " (" << count << " elements copied in)\n";
  dump_line("element", values);
}

// First lane of the last (possibly partial) 256-byte repeat of a count: only lanes from there on may be
// unwritten padding when a vector instruction reads them (a tail rounded up to whole repeats). An unwritten
// lane before it means the kernel computes on data it never loaded (e.g. a full tile on a tail).
inline uint32_t last_repeat_start(uint32_t count, size_t widest_elem) {
  const uint32_t per_repeat = static_cast<uint32_t>(kRepeatBytes / widest_elem);
  return count == 0 ? 0 : (count - 1) / per_repeat * per_repeat;
}

template <typename T>
[[noreturn]] void fail_unwritten_read(const std::string& what, const char* role, const AscendC::LocalTensor<T>& t,
                                      uint32_t lane, uint32_t count) {
  fail("UB uninitialised", what + " reads " + role + " " + t.label() + " lane " + std::to_string(lane) + " of " +
                               std::to_string(count) + ", which nothing wrote since it was allocated (only the last "
                               "256-byte repeat of a count may hold unwritten padding lanes)");
}

// Element-wise vector instruction: dst lane i = f(src lane i), written iff the source lane was written.
template <typename D, typename S, typename F>
void unary(const std::string& what, const AscendC::LocalTensor<D>& dst, const AscendC::LocalTensor<S>& src,
           uint32_t count, F f) {
  check_local(dst, uint64_t(count) * sizeof(D), what.c_str(), "dst", Pipe::kVector);
  check_local(src, uint64_t(count) * sizeof(S), what.c_str(), "src", Pipe::kVector);
  check_overlap(dst, uint64_t(count) * sizeof(D), src, uint64_t(count) * sizeof(S), what.c_str());
  const uint32_t padding = last_repeat_start(count, sizeof(D) > sizeof(S) ? sizeof(D) : sizeof(S));
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t s = src.addr_ + i * sizeof(S);
    const bool written = defined(s, sizeof(S));
    if (!written && i < padding) fail_unwritten_read(what, "src", src, i, count);
    store<D>(dst.addr_ + i * sizeof(D), f(load<S>(s)), written);
  }
  dump_tensor(what + "(" + src.label() + ") -> " + dst.label(), dst, count);
}

template <typename T>
bool compare(T a, T b, AscendC::CMPMODE mode) {
  switch (mode) {
    case AscendC::CMPMODE::LT: return a < b;
    case AscendC::CMPMODE::GT: return a > b;
    case AscendC::CMPMODE::EQ: return a == b;
    case AscendC::CMPMODE::LE: return a <= b;
    case AscendC::CMPMODE::GE: return a >= b;
    default: return a != b;
  }
}

inline const char* mode_name(AscendC::CMPMODE mode) {
  static const char* names[] = {"LT", "GT", "EQ", "LE", "GE", "NE"};
  return names[int(mode)];
}

template <typename T>
std::string scalar_text(T v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.9g", double(v));
  return text;
}

}  // namespace twin

namespace AscendC {

// ---- Memory management --------------------------------------------------------------------------------

template <TPosition pos, int32_t depth>
class TQue {
 public:
  template <typename T>
  LocalTensor<T> AllocTensor() {
    twin::Queue& q = queue("AllocTensor");
    for (size_t i = 0; i < q.slots.size(); ++i) {
      if (q.slots[i].state == twin::SlotState::kFree) {
        // A fresh allocation holds whatever the previous tile left: poisoned, so stale data counts as unwritten.
        q.slots[i].state = twin::SlotState::kAllocated;
        std::memset(twin::run().core.ub.data() + q.slots[i].offset, twin::kPoison, q.slots[i].bytes);
        twin::mark(q.slots[i].offset, q.slots[i].bytes, false);
        return tensor<T>(static_cast<int>(i));
      }
    }
    twin::fail("queue discipline", "AllocTensor on " + q.label + ": all " + std::to_string(q.slots.size()) +
                                       " buffers are in use (a FreeTensor is missing)");
  }

  template <typename T>
  bool EnQue(const LocalTensor<T>& t) {
    twin::Queue& q = queue("EnQue");
    own(q, t, "EnQue");
    if (q.slots[t.slot_].state != twin::SlotState::kAllocated) {
      twin::fail("queue discipline", "EnQue of " + t.label() + ", which is " + twin::state_name(q.slots[t.slot_].state));
    }
    if (int(q.fifo.size()) >= depth) {
      twin::fail("queue discipline", "EnQue on " + q.label + " with " + std::to_string(q.fifo.size()) +
                                         " tensor(s) already queued: depth is " + std::to_string(depth));
    }
    q.slots[t.slot_].state = twin::SlotState::kEnqueued;
    q.fifo.push_back(t.slot_);
    return true;
  }

  template <typename T>
  LocalTensor<T> DeQue() {
    twin::Queue& q = queue("DeQue");
    if (q.fifo.empty()) {
      twin::fail("queue discipline", "DeQue on empty " + q.label + " (the device would wait forever)");
    }
    const int slot = q.fifo.front();
    q.fifo.erase(q.fifo.begin());
    q.slots[slot].state = twin::SlotState::kDequeued;
    return tensor<T>(slot);
  }

  template <typename T>
  void FreeTensor(const LocalTensor<T>& t) {
    twin::Queue& q = queue("FreeTensor");
    own(q, t, "FreeTensor");
    const twin::SlotState s = q.slots[t.slot_].state;
    if (s == twin::SlotState::kFree || s == twin::SlotState::kEnqueued) {
      twin::fail("queue discipline", "FreeTensor of " + t.label() + ", which is " + twin::state_name(s));
    }
    q.slots[t.slot_].state = twin::SlotState::kFree;
  }

  // Nothing may be left allocated or queued when the kernel ends (reported after the core has returned).
  ~TQue() {
    if (id_ < 0 || std::uncaught_exceptions() > 0) return;
    const twin::Queue& q = twin::run().core.queues[id_];
    int busy = 0;
    for (const twin::Slot& s : q.slots) busy += s.state != twin::SlotState::kFree;
    if (busy > 0) {
      twin::run().deferred.push_back("[queue discipline] " + q.label + ": " + std::to_string(busy) + " of " +
                                     std::to_string(q.slots.size()) +
                                     " buffers still allocated or queued when the kernel ended" + twin::where());
    }
  }

  int id_ = -1;

 private:
  twin::Queue& queue(const char* instr) {
    if (id_ < 0) twin::fail("queue discipline", std::string(instr) + " on a TQue before TPipe::InitBuffer");
    return twin::run().core.queues[id_];
  }
  template <typename T>
  void own(const twin::Queue& q, const LocalTensor<T>& t, const char* instr) {
    if (t.que_ != id_ || t.addr_ != t.base_) {
      twin::fail("queue discipline", std::string(instr) + " on " + q.label + " with " + t.label() +
                                         ", which is not a whole buffer of this queue");
    }
  }
  template <typename T>
  LocalTensor<T> tensor(int slot) const {
    const twin::Slot& s = twin::run().core.queues[id_].slots[slot];
    LocalTensor<T> t;
    t.addr_ = t.base_ = s.offset;
    t.bytes_ = s.bytes;
    t.que_ = id_;
    t.slot_ = slot;
    return t;
  }
};

template <TPosition pos>
class TBuf {
 public:
  template <typename T>
  LocalTensor<T> Get() const {
    if (id_ < 0) twin::fail("UB bounds", "TBuf::Get before TPipe::InitBuffer");
    const twin::Buf& b = twin::run().core.bufs[id_];
    LocalTensor<T> t;
    t.addr_ = t.base_ = b.offset;
    t.bytes_ = b.bytes;
    t.buf_ = id_;
    return t;
  }
  template <typename T>
  LocalTensor<T> Get(uint32_t len) const {
    LocalTensor<T> t = Get<T>();
    if (uint64_t(len) * sizeof(T) > t.bytes_) {
      twin::fail("UB bounds", "TBuf::Get(" + std::to_string(len) + ") on " + t.label() + " of " +
                                  std::to_string(t.bytes_) + " bytes");
    }
    t.bytes_ = len * sizeof(T);
    return t;
  }
  int id_ = -1;
};

inline const char* position_name(TPosition pos) {
  switch (pos) {
    case TPosition::VECIN: return "VECIN";
    case TPosition::VECOUT: return "VECOUT";
    case TPosition::VECCALC: return "VECCALC";
    default: return "OTHER";
  }
}

class TPipe {
 public:
  template <TPosition pos, int32_t depth>
  bool InitBuffer(TQue<pos, depth>& que, uint8_t num, uint32_t len) {
    twin::Core& c = twin::run().core;
    if (que.id_ >= 0) twin::fail("queue discipline", "InitBuffer called twice for one TQue");
    if (num < 1) twin::fail("queue discipline", "InitBuffer with num = 0 buffers");
    if (depth < 1 || depth > num) {
      twin::fail("queue discipline", "TQue depth " + std::to_string(depth) + " must be in 1..num (" +
                                         std::to_string(num) + ")");
    }
    int& count = c.per_position[int(pos)];
    const std::string label = std::string(position_name(pos)) + "#" + std::to_string(count_queues(pos));
    if (count + num > twin::kMaxQueBuffersPerPosition) {
      twin::fail("queue discipline", label + ": more than 8 queue buffers on one TPosition (sync event ids on Atlas A2)");
    }
    count += num;
    twin::Queue q{label, int(pos), depth, {}, {}};
    for (int i = 0; i < num; ++i) {
      const uint32_t at = twin::alloc_ub(len, "InitBuffer(" + label + ", num=" + std::to_string(num) +
                                                  ", len=" + std::to_string(len) + ")");
      q.slots.push_back({at, twin::round_up(len, twin::kBlockBytes), twin::SlotState::kFree});
    }
    que.id_ = static_cast<int>(c.queues.size());
    c.queues.push_back(q);
    return true;
  }

  template <TPosition pos>
  bool InitBuffer(TBuf<pos>& buf, uint32_t len) {
    twin::Core& c = twin::run().core;
    if (buf.id_ >= 0) twin::fail("UB capacity", "InitBuffer called twice for one TBuf");
    const std::string label = std::string(position_name(pos)) + "#buf" + std::to_string(c.bufs.size());
    const uint32_t at = twin::alloc_ub(len, "InitBuffer(" + label + ", len=" + std::to_string(len) + ")");
    buf.id_ = static_cast<int>(c.bufs.size());
    c.bufs.push_back({label, at, twin::round_up(len, twin::kBlockBytes)});
    return true;
  }

 private:
  static int count_queues(TPosition pos) {
    int n = 0;
    for (const twin::Queue& q : twin::run().core.queues) n += q.position == int(pos);
    return n;
  }
};

// ---- Data movement ------------------------------------------------------------------------------------

template <typename T>
void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, uint32_t count) {
  const uint64_t bytes = uint64_t(count) * sizeof(T);
  twin::GmRegion& r = twin::check_gm(src, 0, bytes, "DataCopy GM->UB");
  const uint64_t gm_offset = twin::offset_in(r, src.addr_);
  if (bytes % twin::kBlockBytes != 0 || gm_offset % twin::kBlockBytes != 0) {
    twin::fail("DataCopy alignment", "DataCopy " + twin::gm_span(r, src.addr_, count) + " -> " + dst.label() + ": " +
                                         std::to_string(bytes) + " bytes at GM byte " + std::to_string(gm_offset) +
                                         "; length and GM offset must be multiples of 32 bytes (DataCopyPad for a tail)");
  }
  twin::check_local(dst, bytes, "DataCopy GM->UB", "dst", twin::Pipe::kMte2);
  twin::start_tile(r, src.addr_, count);
  twin::gm_read(r, reinterpret_cast<const uint8_t*>(src.addr_), bytes, dst.addr_, "DataCopy GM->UB");
  twin::dump_tensor("DataCopy " + twin::gm_span(r, src.addr_, count) + " -> " + dst.label(), dst, count);
}

template <typename T>
void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, uint32_t count) {
  const uint64_t bytes = uint64_t(count) * sizeof(T);
  twin::GmRegion& r = twin::check_gm(dst, 0, bytes, "DataCopy UB->GM");
  const uint64_t gm_offset = twin::offset_in(r, dst.addr_);
  if (bytes % twin::kBlockBytes != 0 || gm_offset % twin::kBlockBytes != 0) {
    twin::fail("DataCopy alignment", "DataCopy " + src.label() + " -> " + twin::gm_span(r, dst.addr_, count) + ": " +
                                         std::to_string(bytes) + " bytes at GM byte " + std::to_string(gm_offset) +
                                         "; length and GM offset must be multiples of 32 bytes (DataCopyPad for a tail)");
  }
  twin::check_local(src, bytes, "DataCopy UB->GM", "src", twin::Pipe::kMte3);
  twin::dump_tensor("DataCopy " + src.label() + " -> " + twin::gm_span(r, dst.addr_, count), src, count);
  twin::gm_write(r, reinterpret_cast<uint8_t*>(dst.addr_), bytes, src, src.addr_, "DataCopy UB->GM");
}

inline void check_pad_params(const DataCopyExtParams& p, const char* instr) {
  if (p.blockCount < 1 || p.blockCount > 4095 || p.blockLen < 1 || p.blockLen > 2097151) {
    twin::fail("DataCopyPad params", std::string(instr) + ": blockCount " + std::to_string(p.blockCount) +
                                         " must be in 1..4095 and blockLen " + std::to_string(p.blockLen) +
                                         " bytes in 1..2097151");
  }
}

// GM -> UB: each block of blockLen bytes lands at a 32-byte boundary in UB; the rest of its last 32-byte
// block is padding, undefined unless isPad (rightPadding elements of paddingValue).
template <typename T>
void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyExtParams& p,
                 const DataCopyPadExtParams<T>& pad) {
  const char* instr = "DataCopyPad GM->UB";
  check_pad_params(p, instr);
  if (pad.isPad && (pad.leftPadding > 0 || pad.rightPadding * sizeof(T) > twin::kBlockBytes)) {
    twin::fail("DataCopyPad params", "leftPadding is not modelled by the twin; rightPadding must fit 32 bytes");
  }
  const uint32_t ub_block = twin::round_up(p.blockLen, twin::kBlockBytes) + p.dstStride * twin::kBlockBytes;
  const uint64_t gm_block = uint64_t(p.blockLen) + p.srcStride;
  twin::check_local(dst, uint64_t(p.blockCount - 1) * ub_block + twin::round_up(p.blockLen, twin::kBlockBytes), instr,
                    "dst", twin::Pipe::kMte2);
  twin::GmRegion& r = twin::check_gm(src, 0, (p.blockCount - 1) * gm_block + p.blockLen, instr);
  twin::start_tile(r, src.addr_, p.blockLen / sizeof(T));
  for (uint32_t b = 0; b < p.blockCount; ++b) {
    const uint32_t ub = dst.addr_ + b * ub_block;
    twin::gm_read(r, reinterpret_cast<const uint8_t*>(src.addr_) + b * gm_block, p.blockLen, ub, instr);
    const uint32_t tail = twin::round_up(p.blockLen, twin::kBlockBytes) - p.blockLen;
    std::memset(twin::run().core.ub.data() + ub + p.blockLen, twin::kPoison, tail);
    twin::mark(ub + p.blockLen, tail, false);
    for (uint32_t i = 0; pad.isPad && i < pad.rightPadding && (i + 1) * sizeof(T) <= tail; ++i) {
      twin::store<T>(ub + p.blockLen + i * sizeof(T), pad.paddingValue, true);
    }
  }
  twin::dump_tensor("DataCopyPad " + twin::gm_span(r, src.addr_, p.blockLen / sizeof(T)) + " -> " + dst.label(), dst,
                    twin::round_up(p.blockLen, twin::kBlockBytes) / sizeof(T));
}

// UB -> GM: blockLen bytes per block, from 32-byte aligned UB blocks; nothing past blockLen is written.
template <typename T>
void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyExtParams& p) {
  const char* instr = "DataCopyPad UB->GM";
  check_pad_params(p, instr);
  const uint32_t ub_block = twin::round_up(p.blockLen, twin::kBlockBytes) + p.srcStride * twin::kBlockBytes;
  const uint64_t gm_block = uint64_t(p.blockLen) + p.dstStride;
  twin::check_local(src, uint64_t(p.blockCount - 1) * ub_block + p.blockLen, instr, "src", twin::Pipe::kMte3);
  twin::GmRegion& r = twin::check_gm(dst, 0, (p.blockCount - 1) * gm_block + p.blockLen, instr);
  twin::dump_tensor("DataCopyPad " + src.label() + " -> " + twin::gm_span(r, dst.addr_, p.blockLen / sizeof(T)), src,
                    p.blockLen / sizeof(T));
  for (uint32_t b = 0; b < p.blockCount; ++b) {
    twin::gm_write(r, reinterpret_cast<uint8_t*>(dst.addr_) + b * gm_block, p.blockLen, src, src.addr_ + b * ub_block,
                   instr);
  }
}

// ---- Vector instructions ("first count elements" forms) -----------------------------------------------

template <typename T>
void Muls(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalar, const int32_t& count) {
  twin::unary("Muls(" + twin::scalar_text(scalar) + ")", dst, src, static_cast<uint32_t>(count),
              [scalar](T v) { return static_cast<T>(v * scalar); });
}

template <typename T>
void Duplicate(const LocalTensor<T>& dst, const T& scalar, const int32_t& count) {
  const uint32_t n = static_cast<uint32_t>(count);
  twin::check_local(dst, uint64_t(n) * sizeof(T), "Duplicate", "dst", twin::Pipe::kVector);
  for (uint32_t i = 0; i < n; ++i) twin::store<T>(dst.addr_ + i * sizeof(T), scalar, true);
  twin::dump_tensor("Duplicate(" + twin::scalar_text(scalar) + ") -> " + dst.label(), dst, n);
}

// half/bfloat16 -> float is exact (CAST_NONE); float -> half/bfloat16 rounds to nearest even (CAST_RINT).
// Other pairs and modes are not modelled and fail loudly.
template <typename D, typename S>
void Cast(const LocalTensor<D>& dst, const LocalTensor<S>& src, const RoundMode& mode, const uint32_t count) {
  constexpr bool widen = IsSameType<D, float>::value && (IsSameType<S, half>::value || IsSameType<S, bfloat16_t>::value);
  constexpr bool narrow = IsSameType<S, float>::value && (IsSameType<D, half>::value || IsSameType<D, bfloat16_t>::value);
  static_assert(widen || narrow, "the twin models Cast between float and half/bfloat16_t only");
  if ((widen && mode != RoundMode::CAST_NONE) || (narrow && mode != RoundMode::CAST_RINT)) {
    twin::fail("Cast mode", "the twin models widening with CAST_NONE and narrowing to half/bfloat16 with CAST_RINT only");
  }
  twin::unary(widen ? "Cast(NONE)" : "Cast(RINT)", dst, src, count, [](S v) { return static_cast<D>(v); });
}

// dst bit i (little-endian bit order) = src[i] <mode> scalar; count * sizeof(T) must fill whole 256-byte repeats.
template <typename T, typename U>
void CompareScalar(const LocalTensor<U>& dst, const LocalTensor<T>& src, const T src1Scalar, CMPMODE cmpMode,
                   uint32_t count) {
  static_assert(IsSameType<U, uint8_t>::value, "CompareScalar writes a uint8_t bit mask");
  const std::string what = std::string("CompareScalar(") + twin::mode_name(cmpMode) + " " + twin::scalar_text(src1Scalar) + ")";
  if (uint64_t(count) * sizeof(T) % twin::kRepeatBytes != 0) {
    twin::fail("vector count", what + " on " + src.label() + ": count " + std::to_string(count) +
                                   " elements must fill whole 256-byte repeats");
  }
  twin::check_local(dst, count / 8, what.c_str(), "dst", twin::Pipe::kVector);
  twin::check_local(src, uint64_t(count) * sizeof(T), what.c_str(), "src", twin::Pipe::kVector);
  twin::check_overlap(dst, count / 8, src, uint64_t(count) * sizeof(T), what.c_str());
  const uint32_t padding = twin::last_repeat_start(count, sizeof(T));
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t s = src.addr_ + i * sizeof(T);
    const bool written = twin::defined(s, sizeof(T));
    if (!written && i < padding) twin::fail_unwritten_read(what, "src", src, i, count);
    twin::set_bit(dst.addr_, i, twin::compare(twin::load<T>(s), src1Scalar, cmpMode), written);
  }
  twin::dump_bits(what + "(" + src.label() + ")", dst.label(), dst.addr_, count);
}

// Mode 2 (VSEL_TENSOR_TENSOR_MODE): dst[i] = bit i of selMask ? src0[i] : src1[i]. Mode 2 uses 8 KiB of
// API temporaries, which is why TPipe may only allocate 184 of the 192 KiB.
template <typename T, typename U>
void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
            const LocalTensor<T>& src1, SELMODE selMode, uint32_t count) {
  const std::string what = "Select";
  if (selMode != SELMODE::VSEL_TENSOR_TENSOR_MODE) {
    twin::fail("Select mode", "the twin models VSEL_TENSOR_TENSOR_MODE only");
  }
  const uint64_t bytes = uint64_t(count) * sizeof(T), mask_bytes = (count + 7) / 8;
  twin::check_local(dst, bytes, what.c_str(), "dst", twin::Pipe::kVector);
  twin::check_local(selMask, mask_bytes, what.c_str(), "selMask", twin::Pipe::kVector);
  twin::check_local(src0, bytes, what.c_str(), "src0", twin::Pipe::kVector);
  twin::check_local(src1, bytes, what.c_str(), "src1", twin::Pipe::kVector);
  twin::check_overlap(dst, bytes, src0, bytes, what.c_str());
  twin::check_overlap(dst, bytes, src1, bytes, what.c_str());
  twin::check_overlap(dst, bytes, selMask, mask_bytes, what.c_str());
  const uint32_t padding = twin::last_repeat_start(count, sizeof(T));
  for (uint32_t i = 0; i < count; ++i) {
    const bool bit_written = twin::bit_defined(selMask.addr_, i);
    const bool written0 = twin::defined(src0.addr_ + i * sizeof(T), sizeof(T));
    const bool written1 = twin::defined(src1.addr_ + i * sizeof(T), sizeof(T));
    if (i < padding && !(bit_written && written0 && written1)) {
      if (!bit_written) twin::fail_unwritten_read(what, "selMask bit", selMask, i, count);
      twin::fail_unwritten_read(what, written0 ? "src1" : "src0", written0 ? src1 : src0, i, count);
    }
    const bool bit = twin::bit_value(selMask.addr_, i);
    twin::store<T>(dst.addr_ + i * sizeof(T), twin::load<T>((bit ? src0.addr_ : src1.addr_) + i * sizeof(T)),
                   bit_written && (bit ? written0 : written1));
  }
  twin::dump_tensor("Select(" + selMask.label() + " ? " + src0.label() + " : " + src1.label() + ") -> " + dst.label(),
                    dst, count);
}

}  // namespace AscendC

// Kernel side of the tiling data: the struct the host filled, copied from the tiling GM tensor.
// TWIN_TILING_DATA names the op's tiling class (the CANN build generates this per op).
#define GET_TILING_DATA(var, tiling)                                                              \
  TWIN_TILING_DATA var;                                                                           \
  do {                                                                                            \
    ::twin::region_of(tiling, sizeof(TWIN_TILING_DATA), "GET_TILING_DATA");                       \
    std::memcpy(static_cast<void*>(&var), tiling, sizeof(TWIN_TILING_DATA));                      \
  } while (0)

#endif  // LRELU_TWIN_KERNEL_OPERATOR_H_
