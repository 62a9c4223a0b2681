// A persistent pool of worker threads shared by the CPU aot kernels (the element-wise kernels' tiles,
// im2col/col2im, oneDNN's parallel regions).
//
// Why: starting a std::thread per call (and per oneDNN parallel region: a DCGAN-32 training step has
// hundreds) costs a clone, a stack and a join each time, and a new thread has to be scheduled before it can
// start. Here the workers live for the process: after a job they spin for a short while (kSpinMicros,
// the gap between two kernels of a step) and then sleep on a condition variable until the next job.
//
// run(n, fn) calls fn(0) .. fn(n - 1), each exactly once, fn(0) and any unclaimed index on the calling
// thread, and returns when all have finished. A call made while the pool is busy (a kernel calling from
// another thread, or from inside a job) runs all indices on its own thread.
//
// One pool per process: instance()'s static is a GNU unique symbol, so both kernel libraries (leaky_relu
// and onednn_conv, which include this header and are cached under a hash of it) share one set of workers,
// and no two pools spin against each other on the same cores.
#ifndef LRELU_OPS_CSRC_CPU_WORKER_POOL_H_
#define LRELU_OPS_CSRC_CPU_WORKER_POOL_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace lrelu {
namespace cpu {

// Elements per worker thread of an element-wise kernel: a call uses one more of the pool's workers per 2^16
// elements: the pool's workers wake in microseconds, so even DCGAN-sized activations pay for a second thread
// (a new std::thread per call waits for a time slice and needed far larger work per thread).
constexpr int64_t kMinElementsPerThread = int64_t(1) << 16;

// Threads for an element-wise call over n elements: at most `threads` (at least 1), one per
// kMinElementsPerThread elements. The one rule of make_plan (kernel_common.h) and for_each_chunk.
inline int64_t threads_for(int64_t n, int64_t threads) {
  const int64_t by_size = n / kMinElementsPerThread > 1 ? n / kMinElementsPerThread : 1;
  const int64_t wanted = threads > 1 ? threads : 1;
  return wanted < by_size ? wanted : by_size;
}

class WorkerPool {
 public:
  static constexpr int64_t kSpinMicros = 100;    // a worker's busy wait for the next job before it sleeps
  static constexpr int64_t kYieldMicros = 2000;  // the caller's yielding wait for the workers before it sleeps

  // The process's pool, created on first use; its workers are detached and never joined.
  static WorkerPool& instance() {
    static WorkerPool* pool = new WorkerPool();  // never destroyed: workers may still sleep in it at exit
    return *pool;
  }

  // fn(i) for i in [0, n): on this thread and up to n - 1 workers (started on first need).
  void run(int n, const std::function<void(int)>& fn) {
    if (n <= 1) {
      if (n == 1) fn(0);
      return;
    }
    std::unique_lock<std::mutex> busy(dispatch_, std::try_to_lock);
    if (!busy.owns_lock()) {  // another job is running: do this one here, serially
      for (int i = 0; i < n; ++i) fn(i);
      return;
    }
    grow(n - 1);
    {
      const std::lock_guard<std::mutex> lock(mu_);
      fn_ = &fn;
      n_ = n;
      next_ = 1;  // index 0 is the caller's
      done_.store(0, std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    fn(0);
    int job_n;
    const int finished = 1 + claim_and_run(&job_n);
    if (done_.fetch_add(finished, std::memory_order_acq_rel) + finished == n) return;
    wait_until([&] { return done_.load(std::memory_order_acquire) == n; });
  }

 private:
  WorkerPool() = default;

  // Run unclaimed indices of the current job; returns how many this thread ran, and the job's size in *n.
  int claim_and_run(int* n) {
    int ran = 0;
    for (;;) {
      const std::function<void(int)>* fn;
      int i;
      {
        const std::lock_guard<std::mutex> lock(mu_);
        *n = n_;
        if (next_ >= n_) return ran;
        i = next_++;
        fn = fn_;
      }
      (*fn)(i);
      ++ran;
    }
  }

  // The caller's wait for the workers: spin for kSpinMicros, then yield its time slice in a loop for up to
  // kYieldMicros (free when nothing else wants the core, polite when something does), then sleep on finished_.
  template <typename Pred>
  void wait_until(const Pred& ready) {
    if (spin(ready)) return;
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(kYieldMicros);
    while (std::chrono::steady_clock::now() < until) {
      if (ready()) return;
      std::this_thread::yield();
    }
    std::unique_lock<std::mutex> lock(mu_);
    finished_.wait(lock, ready);
  }

  template <typename Pred>
  static bool spin(const Pred& ready) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(kSpinMicros);
    for (int k = 0;; ++k) {
      if (ready()) return true;
#if defined(__SSE2__)
      _mm_pause();
#endif
      if ((k & 63) == 63 && std::chrono::steady_clock::now() > until) return ready();
    }
  }

  void grow(int workers) {
    while (static_cast<int>(threads_.size()) < workers) {
      threads_.emplace_back([this] { work(); });
      threads_.back().detach();
    }
  }

  void work() {
    uint64_t seen = generation_.load(std::memory_order_acquire);
    for (;;) {
      auto job_posted = [&] { return generation_.load(std::memory_order_acquire) != seen; };
      if (!spin(job_posted)) {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, job_posted);
      }
      seen = generation_.load(std::memory_order_acquire);
      int n;
      const int ran = claim_and_run(&n);
      if (ran > 0 && done_.fetch_add(ran, std::memory_order_acq_rel) + ran == n) {
        const std::lock_guard<std::mutex> lock(mu_);  // the caller may be between its check and its wait
        finished_.notify_all();
      }
    }
  }

  std::mutex dispatch_;  // held by the thread whose job the pool runs
  std::mutex mu_;        // guards fn_, n_, next_ and the sleeps
  std::condition_variable wake_, finished_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> done_{0};
  const std::function<void(int)>* fn_ = nullptr;
  int n_ = 0, next_ = 0;
  std::vector<std::thread> threads_;
};

// fn(start, len) over [0, n) in contiguous chunks (multiples of 16 elements but the last), one per thread
// of threads_for(n, threads). The chunk rounds n / parts up twice (to whole elements, then to 16), so the
// chunks always reach n (n / parts rounded down lost the last n % parts elements when it was a multiple of 16).
template <typename ChunkFn>
void for_each_chunk(int64_t n, int64_t threads, const ChunkFn& fn) {
  const int64_t parts = threads_for(n, threads);
  const int64_t chunk = ((n + parts - 1) / parts + 15) / 16 * 16;
  WorkerPool::instance().run(static_cast<int>(parts), [&](int i) {
    const int64_t start = chunk * i, end = start + chunk < n ? start + chunk : n;
    if (start < end) fn(start, end - start);
  });
}

}  // namespace cpu
}  // namespace lrelu

#endif  // LRELU_OPS_CSRC_CPU_WORKER_POOL_H_
