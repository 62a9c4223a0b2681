// Timing wrappers of the kernel library's element-wise entries, for scripts/bench/bench_call_overhead.py (not part of the
// kernel library): Clock<Entry> has the aot signature, calls <Entry> of the library opened by KernelClockOpen and
// records the CLOCK_MONOTONIC times (ms, the clock of Python's time.perf_counter) at its start and end, so a call
// through MindSpore splits into launch (Python -> kernel start), kernel, and return (kernel end -> Python).
// Built by the script through ops.build.library_path (same compiler, flags and cache as the kernels).
#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <ctime>

namespace {

using Entry = int (*)(int, void**, int*, int64_t**, const char**, void*, void*);

constexpr int kMaxStamps = 1 << 16;
double stamps[kMaxStamps][2];
std::atomic<int> recorded{0};

double now_ms() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}

int timed(Entry entry, int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes, void* stream,
          void* extra) {
  if (entry == nullptr) return 1;  // KernelClockOpen was not called, or the library lacks the entry
  const double start = now_ms();
  const int status = entry(nparam, params, ndims, shapes, dtypes, stream, extra);
  const double end = now_ms();
  const int k = recorded.fetch_add(1);
  if (k < kMaxStamps) {
    stamps[k][0] = start;
    stamps[k][1] = end;
  }
  return status;
}

// One row per wrapped entry: the wrapper's name and the entry it times.
#define KERNEL_CLOCK_ENTRIES(X) X(EluForward) X(LeakyReluForwardSelect)
#define KERNEL_CLOCK_TARGET(name) Entry target_##name = nullptr;
KERNEL_CLOCK_ENTRIES(KERNEL_CLOCK_TARGET)

}  // namespace

extern "C" {

// Resolve every wrapped entry in the kernel library at `path`: 0 on success, -1 if it cannot be opened, else the
// number of entries it lacks.
int KernelClockOpen(const char* path) {
  void* lib = dlopen(path, RTLD_NOW);
  if (lib == nullptr) return -1;
  int missing = 0;
#define KERNEL_CLOCK_RESOLVE(name) \
  target_##name = reinterpret_cast<Entry>(dlsym(lib, #name)); \
  missing += target_##name == nullptr;
  KERNEL_CLOCK_ENTRIES(KERNEL_CLOCK_RESOLVE)
  return missing;
}

// Copy the (start, end) pairs recorded since the last read into out (2 * max doubles); returns how many.
int KernelClockRead(double* out, int max) {
  const int n = recorded.exchange(0);
  const int count = n < max ? (n < kMaxStamps ? n : kMaxStamps) : max;
  for (int k = 0; k < count; ++k) {
    out[2 * k] = stamps[k][0];
    out[2 * k + 1] = stamps[k][1];
  }
  return count;
}

#define KERNEL_CLOCK_WRAPPER(name)                                                                       \
  int Clock##name(int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes, void* stream, \
                  void* extra) {                                                                          \
    return timed(target_##name, nparam, params, ndims, shapes, dtypes, stream, extra);                    \
  }
KERNEL_CLOCK_ENTRIES(KERNEL_CLOCK_WRAPPER)

}  // extern "C"
