// Kernels that each break one rule of the Ascend C twin (tools/ascend_twin), and one that breaks none.
// tests/ops/test_ascend_twin.py compiles this against the twin and checks that every rule fires.
// Prints one line per case: "<case>\t<the twin's message>" or "<case>\tno rule broken".
#include <cstdio>
#include <functional>
#include <vector>

#include "kernel_operator.h"

using namespace AscendC;

namespace {

std::vector<float> x_mem(256, 1.0f), y_mem(256, 0.0f);

GlobalTensor<float> gm(std::vector<float>& mem, uint64_t size = 256) {
  GlobalTensor<float> g;
  g.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(mem.data()), size);
  return g;
}

// A correct pipeline: copy in, compute after DeQue, copy out after DeQue, free everything.
void ok_pipeline(uint32_t in_count, uint32_t out_count) {
  TPipe pipe;
  TQue<TPosition::VECIN, 1> in;
  TQue<TPosition::VECOUT, 1> out;
  pipe.InitBuffer(in, 2, 256 * sizeof(float));
  pipe.InitBuffer(out, 2, 256 * sizeof(float));
  LocalTensor<float> a = in.AllocTensor<float>();
  DataCopyPad(a, gm(x_mem)[0], DataCopyExtParams{1, in_count * 4, 0, 0, 0}, DataCopyPadExtParams<float>{false, 0, 0, 0.0f});
  in.EnQue(a);
  LocalTensor<float> b = in.DeQue<float>();
  LocalTensor<float> c = out.AllocTensor<float>();
  Muls(c, b, 2.0f, 64);  // whole 256-byte repeat, past in_count: those lanes stay "never written"
  out.EnQue(c);
  in.FreeTensor(b);
  LocalTensor<float> d = out.DeQue<float>();
  DataCopyPad(gm(y_mem)[0], d, DataCopyExtParams{1, out_count * 4, 0, 0, 0});
  out.FreeTensor(d);
}

const std::vector<std::pair<const char*, std::function<void()>>> kCases = {
    {"ok", [] { ok_pipeline(5, 5); }},
    {"poison_reaches_gm", [] { ok_pipeline(5, 6); }},
    {"ub_capacity", [] {
       TPipe pipe;
       TQue<TPosition::VECIN, 1> q;
       pipe.InitBuffer(q, 2, 100 * 1024);
     }},
    {"datacopy_length", [] {
       TPipe pipe;
       TQue<TPosition::VECIN, 1> q;
       pipe.InitBuffer(q, 1, 1024);
       LocalTensor<float> t = q.AllocTensor<float>();
       DataCopy(t, gm(x_mem), 7);
     }},
    {"datacopy_gm_offset", [] {
       TPipe pipe;
       TQue<TPosition::VECIN, 1> q;
       pipe.InitBuffer(q, 1, 1024);
       LocalTensor<float> t = q.AllocTensor<float>();
       DataCopy(t, gm(x_mem)[3], 8);
     }},
    {"gm_window", [] {
       TPipe pipe;
       TQue<TPosition::VECIN, 1> q;
       pipe.InitBuffer(q, 1, 1024);
       LocalTensor<float> t = q.AllocTensor<float>();
       DataCopy(t, gm(x_mem, 16), 64);
     }},
    {"gm_outside_tensor", [] { gm(x_mem, 1000); }},
    {"gm_write_input", [] {
       TPipe pipe;
       TQue<TPosition::VECOUT, 1> q;
       pipe.InitBuffer(q, 1, 1024);
       LocalTensor<float> t = q.AllocTensor<float>();
       Duplicate(t, 1.0f, 64);
       q.EnQue(t);
       DataCopy(gm(x_mem), q.DeQue<float>(), 64);
     }},
    {"compare_count", [] {
       TPipe pipe;
       TBuf<TPosition::VECCALC> buf;
       pipe.InitBuffer(buf, 1024);
       LocalTensor<float> t = buf.Get<float>();
       Duplicate(t, 1.0f, 128);
       CompareScalar(buf.Get<uint8_t>()[512], t, 0.0f, CMPMODE::GT, 32);
     }},
    {"ub_misaligned_operand", [] {
       TPipe pipe;
       TBuf<TPosition::VECCALC> buf;
       pipe.InitBuffer(buf, 1024);
       LocalTensor<float> t = buf.Get<float>();
       Duplicate(t, 1.0f, 128);
       Muls(t[3], t[128], 2.0f, 64);
     }},
    {"operand_overlap", [] {
       TPipe pipe;
       TBuf<TPosition::VECCALC> buf;
       pipe.InitBuffer(buf, 1024);
       LocalTensor<float> t = buf.Get<float>();
       Duplicate(t, 1.0f, 128);
       Muls(t[8], t, 2.0f, 64);
     }},
    {"dequeue_empty", [] {
       TPipe pipe;
       TQue<TPosition::VECIN, 1> q;
       pipe.InitBuffer(q, 1, 1024);
       q.DeQue<float>();
     }},
    {"alloc_exhausted", [] {
       TPipe pipe;
       TQue<TPosition::VECIN, 1> q;
       pipe.InitBuffer(q, 1, 1024);
       q.AllocTensor<float>();
       q.AllocTensor<float>();
     }},
    {"queue_depth", [] {
       TPipe pipe;
       TQue<TPosition::VECIN, 1> q;
       pipe.InitBuffer(q, 2, 1024);
       q.EnQue(q.AllocTensor<float>());
       q.EnQue(q.AllocTensor<float>());
     }},
    {"vector_before_dequeue", [] {
       TPipe pipe;
       TQue<TPosition::VECIN, 1> q;
       TBuf<TPosition::VECCALC> buf;
       pipe.InitBuffer(q, 1, 1024);
       pipe.InitBuffer(buf, 1024);
       LocalTensor<float> t = q.AllocTensor<float>();
       DataCopy(t, gm(x_mem), 64);
       Muls(buf.Get<float>(), t, 2.0f, 64);
     }},
    {"pad_zero_length", [] { ok_pipeline(0, 5); }},
    {"stale_read", [] {  // the buffer held data before, but this allocation never loaded any
       TPipe pipe;
       TQue<TPosition::VECIN, 1> q;
       TBuf<TPosition::VECCALC> buf;
       pipe.InitBuffer(q, 1, 1024);
       pipe.InitBuffer(buf, 1024);
       LocalTensor<float> t = q.AllocTensor<float>();
       DataCopy(t, gm(x_mem), 64);
       q.EnQue(t);
       q.FreeTensor(q.DeQue<float>());
       q.EnQue(q.AllocTensor<float>());
       Muls(buf.Get<float>(), q.DeQue<float>(), 2.0f, 128);
     }},
    {"leak", [] {
       TPipe pipe;
       TQue<TPosition::VECOUT, 1> q;
       pipe.InitBuffer(q, 1, 1024);
       q.AllocTensor<float>();
     }},
};

}  // namespace

int main() {
  for (const auto& [name, body] : kCases) {
    twin::Run& r = twin::run();
    r.gm.clear();
    r.deferred.clear();
    twin::add_gm("x", reinterpret_cast<uint8_t*>(x_mem.data()), x_mem.size() * sizeof(float), false);
    twin::add_gm("y", reinterpret_cast<uint8_t*>(y_mem.data()), y_mem.size() * sizeof(float), true);
    twin::reset_core(0, 1);
    std::string message = "no rule broken";
    try {
      body();
      if (!r.deferred.empty()) message = r.deferred.front();
    } catch (const twin::RuleError& e) {
      message = e.what();
    }
    std::printf("%s\t%s\n", name, message.c_str());
  }
}
