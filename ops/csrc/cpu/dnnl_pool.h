// oneDNN on the kernels' threads: the threadpool oneDNN's parallel regions run on (the library's persistent
// WorkerPool, worker_pool.h), the CPU engine, and the creation-time concurrency. Shared by the convolution
// kernels (onednn_conv.cc) and the peak-FLOP/s probe (scripts/bench/bench_peak.cc), so both run oneDNN alike.
#ifndef LRELU_OPS_CSRC_CPU_DNNL_POOL_H_
#define LRELU_OPS_CSRC_CPU_DNNL_POOL_H_

#include <functional>

#include "oneapi/dnnl/dnnl.hpp"
#include "oneapi/dnnl/dnnl_threadpool.hpp"
#include "oneapi/dnnl/dnnl_threadpool_iface.hpp"
#include "worker_pool.h"

namespace lrelu {
namespace cpu {

inline thread_local bool in_parallel = false;

// oneDNN's threadpool runtime hands every parallel region to this pool: `threads` workers of the library's
// persistent WorkerPool, the caller being one of them; parallel_for returns when all n tasks have run
// (synchronous pool, flags 0).
class Pool : public dnnl::threadpool_interop::threadpool_iface {
 public:
  explicit Pool(int threads) : threads_(threads) {}
  int get_num_threads() const override { return threads_; }
  bool get_in_parallel() const override { return in_parallel; }
  uint64_t get_flags() const override { return 0; }
  void parallel_for(int n, const std::function<void(int, int)>& fn) override {
    const int workers = n < threads_ ? n : threads_;
    WorkerPool::instance().run(workers, [&](int first) {
      const bool outer = in_parallel;
      in_parallel = true;
      for (int i = first; i < n; i += workers) fn(i, n);
      in_parallel = outer;
    });
  }

 private:
  int threads_;
};

inline const dnnl::engine& cpu_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// oneDNN splits a primitive's work for the creating thread's "max concurrency" (thread-local, set by
// whoever used oneDNN on this thread before, e.g. MindSpore's own kernels): create for the pool's size.
class Concurrency {
 public:
  explicit Concurrency(int threads) {
    if (dnnl_threadpool_interop_get_max_concurrency(&saved_) != dnnl_success) saved_ = 0;
    dnnl_threadpool_interop_set_max_concurrency(threads);
  }
  ~Concurrency() {
    if (saved_ > 0) dnnl_threadpool_interop_set_max_concurrency(saved_);
  }

 private:
  int saved_ = 0;
};

}  // namespace cpu
}  // namespace lrelu

#endif  // LRELU_OPS_CSRC_CPU_DNNL_POOL_H_
