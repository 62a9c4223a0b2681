// Conv2d primitives of oneDNN as CPU aot kernels: forward, backward-data and backward-weights.
//
// Linked against the oneDNN that MindSpore itself ships and has already loaded (mindspore/lib/libdnnl.so.3,
// a threadpool build), compiled with the headers of an older or equal 3.x release (ops/onednn.py checks
// the versions at load time). Each primitive is created with format_tag::any, so oneDNN picks its blocked
// layouts (e.g. nChw16c / OIhw16i16o on AVX-512); the NCHW / OIHW tensors of MindSpore are reordered into
// and out of them at the edges. One cache entry per (kernel, shapes, stride, padding, threads) holds the
// primitive, the reorders, the blocked buffers and the scratchpad; a call locks only its own entry.
//
// A Conv2dTranspose is the adjoint of a Conv2d: its forward is this Conv2d backward-data, its input
// gradient this forward and its weight gradient this backward-weights (ops/onednn.py wires them).
//
// DnnlConvForward        (src (N,C,H,W),      weights (O,C,K,K), geometry) -> dst (N,O,Ho,Wo)
// DnnlConvBackwardData   (diff_dst (N,O,Ho,Wo), weights (O,C,K,K), geometry) -> diff_src (N,C,H,W)
// DnnlConvBackwardWeights(src (N,C,H,W),      diff_dst (N,O,Ho,Wo), geometry) -> diff_weights (O,C,K,K)
// geometry: int32[3] {stride, padding, threads}. Tensors are float32 or float16 (each on its own: amp casts
// every floating input of a float16 cell); the primitives compute in float32, the reorders convert.
#include <dlfcn.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "oneapi/dnnl/dnnl.hpp"
#include "oneapi/dnnl/dnnl_threadpool.hpp"
#include "oneapi/dnnl/dnnl_threadpool_iface.hpp"

namespace {

using dnnl::memory;
using tag = dnnl::memory::format_tag;

enum Kind : int64_t { kForward = 0, kBackwardData = 1, kBackwardWeights = 2 };

thread_local bool in_parallel = false;

// oneDNN's threadpool runtime hands every parallel region to this pool: `threads` workers, the caller
// being one of them; parallel_for returns when all n tasks have run (synchronous pool, flags 0).
class Pool : public dnnl::threadpool_interop::threadpool_iface {
 public:
  explicit Pool(int threads) : threads_(threads) {}
  int get_num_threads() const override { return threads_; }
  bool get_in_parallel() const override { return in_parallel; }
  uint64_t get_flags() const override { return 0; }
  void parallel_for(int n, const std::function<void(int, int)>& fn) override {
    const int workers = n < threads_ ? n : threads_;
    auto run = [&](int first) {
      const bool outer = in_parallel;
      in_parallel = true;
      for (int i = first; i < n; i += workers) fn(i, n);
      in_parallel = outer;
    };
    std::vector<std::thread> started;
    for (int w = 1; w < workers; ++w) started.emplace_back(run, w);
    if (workers > 0) run(0);
    for (std::thread& t : started) t.join();
  }

 private:
  int threads_;
};

const dnnl::engine& cpu_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// One edge of a primitive: the MindSpore tensor (plain layout) and, when oneDNN chose another layout,
// the blocked buffer and the reorder between the two.
struct Edge {
  int arg;
  memory::desc plain, chosen;
  memory blocked;
  dnnl::reorder convert;  // plain -> blocked for inputs, blocked -> plain for the output
  bool reordered;
};

struct Entry {
  std::mutex mu;
  Pool pool;
  dnnl::stream stream;
  dnnl::primitive prim;
  Edge in0, in1, out;
  memory scratch;
  explicit Entry(int threads)
      : pool(threads), stream(dnnl::threadpool_interop::make_stream(cpu_engine(), &pool)) {}
};

Edge make_edge(int arg, const memory::dims& dims, memory::data_type type, tag plain_tag, const memory::desc& chosen,
               bool is_input) {
  Edge e{arg, memory::desc(dims, type, plain_tag), chosen, {}, {}, false};
  e.reordered = e.plain != e.chosen;
  if (e.reordered) {
    e.blocked = memory(chosen, cpu_engine());
    e.convert = is_input ? dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), e.plain, cpu_engine(), chosen))
                         : dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), chosen, cpu_engine(), e.plain));
  }
  return e;
}

memory::desc any_desc(const memory::dims& dims) { return memory::desc(dims, memory::data_type::f32, tag::any); }

using Types = std::array<memory::data_type, 3>;  // of the kernel's in0, in1 and output

// Build the primitive of `kind` for src (N,C,H,W), weights (O,C,K,K), dst (N,O,Ho,Wo).
std::unique_ptr<Entry> create(Kind kind, const memory::dims& src, const memory::dims& wei, const memory::dims& dst,
                              int64_t stride, int64_t pad, int threads, const Types& t) {
  auto entry = std::make_unique<Entry>(threads);
  const memory::dims strides = {stride, stride}, padding = {pad, pad};
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const auto fwd = dnnl::convolution_forward::primitive_desc(
      cpu_engine(), dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, any_desc(src),
      any_desc(wei), any_desc(dst), strides, padding, padding, attr);
  memory::desc scratch;
  if (kind == kForward) {
    entry->prim = dnnl::convolution_forward(fwd);
    entry->in0 = make_edge(DNNL_ARG_SRC, src, t[0], tag::nchw, fwd.src_desc(), true);
    entry->in1 = make_edge(DNNL_ARG_WEIGHTS, wei, t[1], tag::oihw, fwd.weights_desc(), true);
    entry->out = make_edge(DNNL_ARG_DST, dst, t[2], tag::nchw, fwd.dst_desc(), false);
    scratch = fwd.scratchpad_desc();
  } else if (kind == kBackwardData) {
    const auto pd = dnnl::convolution_backward_data::primitive_desc(
        cpu_engine(), dnnl::algorithm::convolution_direct, any_desc(src), any_desc(wei), any_desc(dst), strides,
        padding, padding, fwd, attr);
    entry->prim = dnnl::convolution_backward_data(pd);
    entry->in0 = make_edge(DNNL_ARG_DIFF_DST, dst, t[0], tag::nchw, pd.diff_dst_desc(), true);
    entry->in1 = make_edge(DNNL_ARG_WEIGHTS, wei, t[1], tag::oihw, pd.weights_desc(), true);
    entry->out = make_edge(DNNL_ARG_DIFF_SRC, src, t[2], tag::nchw, pd.diff_src_desc(), false);
    scratch = pd.scratchpad_desc();
  } else {
    const auto pd = dnnl::convolution_backward_weights::primitive_desc(
        cpu_engine(), dnnl::algorithm::convolution_direct, any_desc(src), any_desc(wei), any_desc(dst), strides,
        padding, padding, fwd, attr);
    entry->prim = dnnl::convolution_backward_weights(pd);
    entry->in0 = make_edge(DNNL_ARG_SRC, src, t[0], tag::nchw, pd.src_desc(), true);
    entry->in1 = make_edge(DNNL_ARG_DIFF_DST, dst, t[1], tag::nchw, pd.diff_dst_desc(), true);
    entry->out = make_edge(DNNL_ARG_DIFF_WEIGHTS, wei, t[2], tag::oihw, pd.diff_weights_desc(), false);
    scratch = pd.scratchpad_desc();
  }
  entry->scratch = memory(scratch, cpu_engine());
  return entry;
}

// The cached entry of one geometry (created on first use; entries live for the process).
Entry& lookup(Kind kind, const memory::dims& src, const memory::dims& wei, const memory::dims& dst, int64_t stride,
              int64_t pad, int threads, const Types& types) {
  static std::mutex mu;
  static std::map<std::vector<int64_t>, std::unique_ptr<Entry>> cache;
  std::vector<int64_t> key = {kind, stride, pad, threads};
  for (memory::data_type t : types) key.push_back(static_cast<int64_t>(t));
  for (const memory::dims* d : {&src, &wei, &dst}) key.insert(key.end(), d->begin(), d->end());
  const std::lock_guard<std::mutex> lock(mu);
  std::unique_ptr<Entry>& slot = cache[key];
  if (!slot) slot = create(kind, src, wei, dst, stride, pad, threads, types);
  return *slot;
}

// The memory the primitive reads or writes for this edge; an input is reordered into its blocked buffer.
memory bind(Edge& e, void* data, dnnl::stream& stream, bool is_input) {
  memory user(e.plain, cpu_engine(), data);
  if (!e.reordered) return user;
  if (is_input) e.convert.execute(stream, user, e.blocked);
  return e.blocked;
}

void run(Entry& entry, void* in0, void* in1, void* out) {
  const std::lock_guard<std::mutex> lock(entry.mu);
  dnnl::stream& stream = entry.stream;
  const memory dst = bind(entry.out, out, stream, false);
  entry.prim.execute(stream, {{entry.in0.arg, bind(entry.in0, in0, stream, true)},
                              {entry.in1.arg, bind(entry.in1, in1, stream, true)},
                              {entry.out.arg, dst},
                              {DNNL_ARG_SCRATCHPAD, entry.scratch}});
  if (entry.out.reordered) {
    memory user(entry.out.plain, cpu_engine(), out);
    entry.out.convert.execute(stream, entry.out.blocked, user);
  }
  stream.wait();
}

memory::dims dims4(const int64_t* s) { return {s[0], s[1], s[2], s[3]}; }

// params: {in0, in1, geometry, out}. Returns 0, 1 (bad signature/dtype) or 2 (oneDNN refused the geometry).
int entry_point(Kind kind, int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes) {
  if (nparam != 4 || ndims[0] != 4 || ndims[1] != 4 || ndims[3] != 4 || ndims[2] != 1 || shapes[2][0] != 3 ||
      std::strcmp(dtypes[2], "int32") != 0) {
    return 1;
  }
  Types types;
  for (int i : {0, 1, 3}) {
    const bool f32 = std::strcmp(dtypes[i], "float32") == 0;
    if (!f32 && std::strcmp(dtypes[i], "float16") != 0) return 1;
    types[i == 3 ? 2 : i] = f32 ? memory::data_type::f32 : memory::data_type::f16;
  }
  const int32_t* g = static_cast<const int32_t*>(params[2]);
  const int threads = g[2] > 1 ? g[2] : 1;
  // (src, weights, dst) dims from the kernel's two inputs and its output.
  const memory::dims a = dims4(shapes[0]), b = dims4(shapes[1]), o = dims4(shapes[3]);
  const memory::dims& src = kind == kForward ? a : kind == kBackwardData ? o : a;
  const memory::dims& wei = kind == kBackwardWeights ? o : b;
  const memory::dims& dst = kind == kForward ? o : kind == kBackwardData ? a : b;
  try {
    run(lookup(kind, src, wei, dst, g[0], g[1], threads, types), params[0], params[1], params[3]);
  } catch (const dnnl::error&) {
    return 2;
  }
  return 0;
}

}  // namespace

extern "C" {

int DnnlConvForward(int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes, void*, void*) {
  return entry_point(kForward, nparam, params, ndims, shapes, dtypes);
}

int DnnlConvBackwardData(int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes, void*,
                         void*) {
  return entry_point(kBackwardData, nparam, params, ndims, shapes, dtypes);
}

int DnnlConvBackwardWeights(int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes, void*,
                            void*) {
  return entry_point(kBackwardWeights, nparam, params, ndims, shapes, dtypes);
}

// The oneDNN this library calls: {major, minor, patch} of the loaded library, {major, minor, patch} of the
// headers it was compiled with; `path` receives the file the dynamic linker bound dnnl_version to.
int LreluDnnlVersion(int32_t* out, char* path, int path_len) {
  const dnnl_version_t* v = dnnl_version();
  const int32_t values[6] = {v->major, v->minor, v->patch, DNNL_VERSION_MAJOR, DNNL_VERSION_MINOR,
                             DNNL_VERSION_PATCH};
  std::memcpy(out, values, sizeof values);
  Dl_info info{};
  const char* file = dladdr(reinterpret_cast<void*>(&dnnl_version), &info) && info.dli_fname ? info.dli_fname : "";
  std::strncpy(path, file, static_cast<size_t>(path_len - 1));
  path[path_len - 1] = '\0';
  return 0;
}

}  // extern "C"
