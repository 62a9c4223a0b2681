// The machine's limit for scripts/bench/bench_peak.py: seconds per call of one large oneDNN matmul and one large
// convolution, float32 or bfloat16 (bf16 inputs, float32 accumulation and output, as the training kernels),
// on `threads` workers of the same threadpool the training kernels run oneDNN on (ops/csrc/cpu/dnnl_pool.h).
// Built like the kernels (ops.onednn.build_with_onednn: MindSpore's own oneDNN, -O3 -march=native).
//
// Each call times the primitive alone: its memory is created in the layouts oneDNN chose (format_tag::any),
// filled once with small values, and reused, so no reorder or page fault is in the timed region; `reps` timed
// executions follow one untimed one. `impl` receives oneDNN's implementation name (e.g. brg_matmul:avx10_1_512_amx).
#include <chrono>
#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "../../ops/csrc/cpu/dnnl_pool.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace {

using dnnl::memory;
using lrelu::cpu::cpu_engine;

memory filled(const memory::desc& d) {
  memory m(d, cpu_engine());
  const size_t bytes = d.get_size();
  if (d.get_data_type() == memory::data_type::f32) {
    std::vector<float> v(bytes / 4, 0.01f);
    std::memcpy(m.get_data_handle(), v.data(), bytes);
  } else {
    std::vector<uint16_t> v(bytes / 2, 0x3C24);  // bf16 0.01
    std::memcpy(m.get_data_handle(), v.data(), bytes);
  }
  return m;
}

// Create (for the pool's size), then time `reps` executions after a warm-up one into seconds[0 .. reps).
template <typename MakePd, typename Args>
int time_primitive(int threads, int reps, double* seconds, char* impl, int impl_len, const MakePd& make_pd,
                   const Args& args_of) {
  try {
    lrelu::cpu::Pool pool(threads);
    dnnl::stream stream = dnnl::threadpool_interop::make_stream(cpu_engine(), &pool);
    dnnl::primitive prim;
    std::unordered_map<int, memory> args;
    {
      const lrelu::cpu::Concurrency for_pool(threads);
      auto pd = make_pd();
      std::strncpy(impl, pd.impl_info_str(), static_cast<size_t>(impl_len - 1));
      impl[impl_len - 1] = '\0';
      args = args_of(pd);
      prim = dnnl::primitive(pd);
    }
    prim.execute(stream, args);
    stream.wait();
    for (int r = 0; r < reps; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      prim.execute(stream, args);
      stream.wait();
      seconds[r] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
  } catch (const dnnl::error& e) {
    std::strncpy(impl, e.what(), static_cast<size_t>(impl_len - 1));
    impl[impl_len - 1] = '\0';
    return 2;
  }
  return 0;
}

memory::data_type input_type(int bf16) { return bf16 ? memory::data_type::bf16 : memory::data_type::f32; }

}  // namespace

extern "C" {

// (m x k) @ (k x n) -> (m x n) float32; 2 m n k FLOP per call.
int PeakMatmul(int bf16, int64_t m, int64_t n, int64_t k, int threads, int reps, double* seconds, char* impl,
               int impl_len) {
  const auto t = input_type(bf16);
  return time_primitive(threads, reps, seconds, impl, impl_len, [&] {
    return dnnl::matmul::primitive_desc(cpu_engine(), memory::desc({m, k}, t, memory::format_tag::any),
                                        memory::desc({k, n}, t, memory::format_tag::any),
                                        memory::desc({m, n}, memory::data_type::f32, memory::format_tag::any));
  }, [](const dnnl::matmul::primitive_desc& pd) {
    return std::unordered_map<int, memory>{{DNNL_ARG_SRC, filled(pd.src_desc())},
                                          {DNNL_ARG_WEIGHTS, filled(pd.weights_desc())},
                                          {DNNL_ARG_DST, filled(pd.dst_desc())}};
  });
}

// Forward convolution of (n, ic, hw, hw) by (oc, ic, kk, kk), stride s, padding p, output in the input's type
// (float32, or bf16 as the training kernels write it); 2 n oc ic kk^2 ho^2 FLOP per call.
int PeakConv(int bf16, int64_t n, int64_t ic, int64_t oc, int64_t hw, int64_t kk, int64_t s, int64_t p, int threads,
             int reps, double* seconds, char* impl, int impl_len) {
  const auto t = input_type(bf16);
  const int64_t ho = (hw + 2 * p - kk) / s + 1;
  auto any = [&](const memory::dims& d) { return memory::desc(d, t, memory::format_tag::any); };
  return time_primitive(threads, reps, seconds, impl, impl_len, [&] {
    return dnnl::convolution_forward::primitive_desc(
        cpu_engine(), dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, any({n, ic, hw, hw}),
        any({oc, ic, kk, kk}), memory::desc(), any({n, oc, ho, ho}), {s, s}, {p, p}, {p, p});
  }, [](const dnnl::convolution_forward::primitive_desc& pd) {
    return std::unordered_map<int, memory>{{DNNL_ARG_SRC, filled(pd.src_desc())},
                                          {DNNL_ARG_WEIGHTS, filled(pd.weights_desc())},
                                          {DNNL_ARG_DST, filled(pd.dst_desc())}};
  });
}

}  // extern "C"
