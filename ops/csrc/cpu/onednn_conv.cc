// Conv2d primitives of oneDNN as CPU aot kernels: forward, backward-data and backward-weights, the forward
// fused with bias + LeakyReLU (+ clamp) for fusion=conv_act, and a pooling forward (the Inception features).
//
// Linked against the oneDNN that MindSpore itself ships and has already loaded (mindspore/lib/libdnnl.so.3,
// a threadpool build), compiled with the headers of an older or equal 3.x release (ops/onednn.py checks
// the versions at load time). For NCHW activations each primitive is created with format_tag::any, so oneDNN picks
// its blocked layouts (e.g. nChw16c / OIhw16i16o on AVX-512); the NCHW / OIHW tensors of MindSpore are reordered
// into and out of them at the edges (bf16 activations of a multiple of 16 channels, in nChw16c or in the nhwc of
// the AMX kernels, by blocked16.h's transposes, which are faster there than oneDNN's reorder). NHWC activations
// (layout 1: the tensors are (N, H, W, C)) are given to oneDNN as they are (its brgemm kernels compute in nhwc), so
// a network kept in NHWC runs without any activation reorder; weights stay OIHW and are reordered. One cache entry per (kernel, shapes, geometry, threads) holds the
// primitive, the reorders, the blocked buffers and the scratchpad; a call locks only its own entry.
//
// Backward-data into at most kFewChannels channels (an image's gradient, a transposed conv to an image) is
// float32 GEMM + col2im instead (backward_data_few_channels): oneDNN's kernel is slow there.
//
// A Conv2dTranspose is the adjoint of a Conv2d: its forward is this Conv2d backward-data, its input
// gradient this forward and its weight gradient this backward-weights (ops/onednn.py wires them).
//
// DnnlConvForward        (src (N,C,H,W),      weights (O,C,Kh,Kw), geometry) -> dst (N,O,Ho,Wo)
// DnnlConvBackwardData   (diff_dst (N,O,Ho,Wo), weights (O,C,Kh,Kw), geometry) -> diff_src (N,C,H,W)
// DnnlConvBackwardWeights(src (N,C,H,W),      diff_dst (N,O,Ho,Wo), geometry) -> diff_weights (O,C,Kh,Kw)
// DnnlConvActForward     (src, weights, bias (O,), geometry) -> LeakyReLU(conv + bias) [clamped], one primitive
//                        (eltwise_relu with alpha = slope, then eltwise_clip(-clamp, clamp) as post-ops)
// DnnlActBackward        (y, dy, geometry) -> dz: the activation's gradient from the output's sign
// geometry: int32[12] {stride_h, stride_w, pad_top, pad_bottom, pad_left, pad_right, threads, slope, clamp,
// layout, constant_weights, compute} (slope and clamp as float32 bit patterns, inf for no clamp; layout 0 = NCHW,
// 1 = NHWC, where the activation shapes above read (N,H,W,C), 2 = src and diff_src NCHW with dst and diff_dst
// NHWC, 3 = the other way round (a network's first and last layers between images and channels-last
// activations); constant_weights 1 (forward kinds, inference): the
// weights' reordered copy is kept and reused while their bytes stay the same, compared on every call; compute 1
// for bfloat16, 0 for float32). Tensors are float32, float16 or bfloat16, each on its own (amp casts every
// floating input of a float16 cell; precision=bf16 passes float32 weights, and float32 network inputs and outputs
// at its edges). compute=1 makes a bfloat16 primitive (bf16 src/weights/dst, float32 accumulation; oneDNN picks
// AMX or AVX512-BF16 kernels where the CPU has them) with float32 weight gradients and bias; compute=0 a float32
// one. The reorders convert each tensor between its dtype and the primitive's, so a float32 weight or input is
// rounded to bfloat16 once per call inside the reorder into the blocked layout (bf16 weights in oneDNN's VNNI
// layouts by blocked_weights.h's gather instead, the same bytes), and an output (post-ops included) is rounded
// once to its dtype.
// DnnlPoolForward        (src, pool geometry) -> dst: max or average pooling, float32
// pool geometry: int32[11] {algorithm (0 max, 1 average excluding padding, 2 average including it), kernel_h,
// kernel_w, stride_h, stride_w, pad_top, pad_bottom, pad_left, pad_right, threads, layout}.
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "oneapi/dnnl/dnnl.hpp"
#include "bfloat16.h"
#include "blocked16.h"
#include "blocked_weights.h"
#include "col2im.h"
#include "dnnl_pool.h"
#include "worker_pool.h"

namespace {

using lrelu::cpu::Concurrency;
using lrelu::cpu::cpu_engine;
using lrelu::cpu::Pool;

using dnnl::memory;
using tag = dnnl::memory::format_tag;

enum Kind : int64_t { kForward = 0, kBackwardData = 1, kBackwardWeights = 2, kForwardAct = 3, kPool = 4 };
// {stride_h, stride_w, pad_top, pad_bottom, pad_left, pad_right, threads, slope bits, clamp bits, layout,
// constant_weights, compute (1: bfloat16, 0: float32)}
constexpr int64_t kGeometryLength = 12;
// bf16 backward-weights into at most this many output positions runs as one GEMM (gemm_weights): kSmallPlane with
// AMX, kLargePlane without (chosen with AVX512-BF16; AVX-512's emulated bf16 takes the same rule), each from at
// least kGemmWeightsChannels input channels.
constexpr int64_t kSmallPlane = 16, kLargePlane = 256, kGemmWeightsChannels = 16;
// {algorithm, kernel_h, kernel_w, stride_h, stride_w, pad_top, pad_bottom, pad_left, pad_right, threads, layout}
constexpr int64_t kPoolGeometryLength = 11;
enum Layout : int32_t { kNCHW = 0, kNHWC = 1 };


// One edge of a primitive: the MindSpore tensor (plain layout) and, when oneDNN chose another layout,
// the blocked buffer and the reorder between the two.
struct Edge {
  int arg;
  memory::desc plain, chosen;
  memory blocked;
  dnnl::reorder convert;  // plain -> blocked for inputs, blocked -> plain for the output
  bool reordered;
  // bf16 nchw <-> nChw16c or nhwc, C a multiple of 16: moved by blocked16.h's move_interleaved, not `convert`
  bool transposed = false;
  lrelu::cpu::Interleaved interleaved = lrelu::cpu::Interleaved::kBlocked16;
  // Constant weights (inference): `blocked` was reordered from bytes equal to `last`, so an input with the same
  // bytes (compared on every call) skips its reorder.
  bool keep = false;
  std::vector<char> last;
  // bf16 weights in a VNNI layout (three or more inner blocks): filled by blocked_weights.h's gather, not `convert`
  std::shared_ptr<const lrelu::cpu::BlockedGather> gather;
};

// fn(static_cast<const T*>(data)) with T the element type of dtype t (float32, float16 or bfloat16).
template <typename Fn>
void with_type(memory::data_type t, const void* data, const Fn& fn) {
  if (t == memory::data_type::bf16) fn(static_cast<const lrelu::cpu::bf16*>(data));
  else if (t == memory::data_type::f16) fn(static_cast<const _Float16*>(data));
  else fn(static_cast<const float*>(data));
}

// The gather that fills `chosen` from OIHW weights, where it is a bf16 layout of three or more inner blocks (the
// VNNI layouts, where oneDNN's reorder is slow: blocked_weights.h) with no padding; null elsewhere.
std::shared_ptr<const lrelu::cpu::BlockedGather> weights_gather(const memory::desc& chosen) {
  const std::optional<lrelu::cpu::BlockedLayout> l = lrelu::cpu::blocked_layout(chosen);
  if (chosen.get_data_type() != memory::data_type::bf16 || !l || l->nblks < 3 ||
      !lrelu::cpu::BlockedGather::fits(*l)) {
    return nullptr;
  }
  return std::make_shared<const lrelu::cpu::BlockedGather>(*l);
}

struct Entry {
  std::mutex mu;
  Pool pool;
  dnnl::stream stream;
  dnnl::primitive prim;
  std::vector<Edge> in;
  Edge out;
  memory scratch;
  explicit Entry(int threads)
      : pool(threads), stream(dnnl::threadpool_interop::make_stream(cpu_engine(), &pool)) {}
};

Edge make_edge(int arg, const memory::dims& dims, memory::data_type type, tag plain_tag, const memory::desc& chosen,
               bool is_input) {
  Edge e{arg, memory::desc(dims, type, plain_tag), chosen, {}, {}, false};
  e.reordered = e.plain != e.chosen;
  if (e.reordered && type == memory::data_type::bf16 && plain_tag == tag::nchw && dims[1] % 16 == 0) {
    const bool nhwc = chosen == memory::desc(dims, memory::data_type::bf16, tag::nhwc);
    e.transposed = nhwc || chosen == memory::desc(dims, memory::data_type::bf16, tag::nChw16c);
    e.interleaved = nhwc ? lrelu::cpu::Interleaved::kNhwc : lrelu::cpu::Interleaved::kBlocked16;
  }
  if (e.reordered && is_input && arg == DNNL_ARG_WEIGHTS && plain_tag == tag::oihw) e.gather = weights_gather(chosen);
  if (e.reordered) {
    e.blocked = memory(chosen, cpu_engine());
    e.convert = is_input ? dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), e.plain, cpu_engine(), chosen))
                         : dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), chosen, cpu_engine(), e.plain));
  }
  return e;
}

memory::desc any_desc(const memory::dims& dims, memory::data_type type = memory::data_type::f32) {
  return memory::desc(dims, type, tag::any);
}

// The plain tag of an activation tensor (src, dst and their gradients) in the problem's layout.
tag act_tag(Layout layout) { return layout == kNHWC ? tag::nhwc : tag::nchw; }

// One kernel call's problem: logical src (N,C,H,W), weights (O,C,Kh,Kw), dst (N,O,Ho,Wo) (oneDNN's dims,
// whatever the layout), the dtype of each kernel tensor (inputs in order, then the output), and for
// kForwardAct the LeakyReLU slope and clamp. For kPool, `wei` holds {kernel_h, kernel_w} and `algorithm`
// the pooling kind.
struct Problem {
  Kind kind;
  memory::dims src, wei, dst;
  memory::dims strides, pad_l, pad_r;  // {h, w}; pad_l = {top, left}, pad_r = {bottom, right}
  int threads;
  std::vector<memory::data_type> types;
  float slope, clamp;
  Layout layout;      // of src (and diff_src)
  Layout dst_layout;  // of dst (and diff_dst)
  int64_t algorithm;
  bool constant_weights;
  bool bf16;  // a bfloat16 problem (else float32)

  memory::data_type compute() const { return bf16 ? memory::data_type::bf16 : memory::data_type::f32; }

  std::vector<int64_t> key() const {
    std::vector<int64_t> k = {kind, threads, layout, dst_layout, algorithm, constant_weights, bf16};
    for (const memory::dims* d : {&strides, &pad_l, &pad_r}) k.insert(k.end(), d->begin(), d->end());
    for (memory::data_type t : types) k.push_back(static_cast<int64_t>(t));
    for (const memory::dims* d : {&src, &wei, &dst}) k.insert(k.end(), d->begin(), d->end());
    if (kind == kForwardAct) {
      int32_t bits[2];
      std::memcpy(bits, &slope, 4);
      std::memcpy(bits + 1, &clamp, 4);
      k.insert(k.end(), {bits[0], bits[1]});
    }
    return k;
  }
};

// Whether oneDNN's kernels here have AVX-512 (its effective instruction set, which ONEDNN_MAX_CPU_ISA can lower).
bool has_avx512() {
  static const bool avx512 = (static_cast<int64_t>(dnnl_get_effective_cpu_isa()) & dnnl_cpu_isa_avx512_core) ==
                             dnnl_cpu_isa_avx512_core;
  return avx512;
}

// Whether an NCHW problem computes in nhwc: a float32 forward or backward-data from at least 32 input channels into
// more than one output position, on a CPU without AVX-512. There oneDNN's nhwc kernels (brg_conv_fwd,
// brgconv_strided) beat the direct jit:avx2 kernels its format_tag::any picks in nChw8c; the tensors are reordered
// from and to NCHW either way, and the nhwc kernels win on the DCGAN geometries from 32 input channels on
// (scripts/bench/bench_conv_layouts.cc times both layouts per geometry on the CPU at hand). Backward-weights stays
// blocked (faster there), and so does everything with AVX-512, where the blocked backward-data wins (the comment
// of backward_data_desc).
bool nhwc_inside(const Problem& p) {
  return p.layout == kNCHW && p.dst_layout == kNCHW && !p.bf16 &&
         (p.kind == kForward || p.kind == kForwardAct || p.kind == kBackwardData) &&
         p.src[1] >= 32 && p.dst[2] * p.dst[3] > 1 && !has_avx512();
}

// The descriptor oneDNN computes an activation of problem p in, of a tensor in `layout`: the tensor's nhwc for NHWC
// (no reorder); nhwc for the NCHW problems of nhwc_inside, and for an NCHW side of a problem whose other side is
// NHWC (one primitive in nhwc, one reorder at the NCHW edge); else oneDNN's own choice (its blocked layouts beat
// plain nchw).
memory::desc act_desc(const Problem& p, const memory::dims& dims, Layout layout) {
  const memory::data_type t = p.compute();
  const bool nhwc = layout == kNHWC || p.layout != p.dst_layout || nhwc_inside(p);
  return nhwc ? memory::desc(dims, t, tag::nhwc) : any_desc(dims, t);
}

// conv + bias, then LeakyReLU (eltwise_relu with alpha = slope) and, for a finite clamp, eltwise_clip.
dnnl::primitive_attr act_attr(const Problem& p) {
  dnnl::post_ops ops;
  ops.append_eltwise(dnnl::algorithm::eltwise_relu, p.slope, 0.0f);
  if (std::isfinite(p.clamp)) ops.append_eltwise(dnnl::algorithm::eltwise_clip, -p.clamp, p.clamp);
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops);
  return attr;
}

// Backward-data in the forward's activation layouts when oneDNN chose blocked ones there (nChw16c on
// AVX-512): it then runs its direct jit kernel, not the brgconv_strided kernel in nhwc that format_tag::any
// gets, which is faster over DCGAN-64's geometries as a whole (slower on a few; scripts/bench/bench_conv_layouts.cc
// times both). Falls back to any where oneDNN has no such kernel (or only its reference one).
dnnl::convolution_backward_data::primitive_desc backward_data_desc(
    const Problem& p, const dnnl::convolution_forward::primitive_desc& fwd, const dnnl::primitive_attr& attr) {
  const memory::data_type t = p.compute();
  auto make = [&](const memory::desc& src, const memory::desc& dst) {
    return dnnl::convolution_backward_data::primitive_desc(cpu_engine(), dnnl::algorithm::convolution_direct, src,
                                                           any_desc(p.wei, t), dst, p.strides, p.pad_l, p.pad_r,
                                                           fwd, attr);
  };
  if (p.layout == kNCHW && p.dst_layout == kNCHW && fwd.src_desc() != memory::desc(p.src, t, tag::nchw)) {
    try {
      auto pd = make(fwd.src_desc(), fwd.dst_desc());
      if (std::strncmp(pd.impl_info_str(), "ref", 3) != 0) return pd;
    } catch (const dnnl::error&) {
    }
  }
  return make(act_desc(p, p.src, p.layout), act_desc(p, p.dst, p.dst_layout));
}

// The pooling forward of a kPool problem: src and dst in the tensors' own layout (oneDNN's pooling kernels
// run on plain nchw and nhwc), no reorder.
std::unique_ptr<Entry> create_pool(const Problem& p) {
  static const dnnl::algorithm kAlgorithms[] = {dnnl::algorithm::pooling_max,
                                                dnnl::algorithm::pooling_avg_exclude_padding,
                                                dnnl::algorithm::pooling_avg_include_padding};
  auto entry = std::make_unique<Entry>(p.threads);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const memory::desc src(p.src, memory::data_type::f32, act_tag(p.layout));
  const memory::desc dst(p.dst, memory::data_type::f32, act_tag(p.layout));
  const auto pd = dnnl::pooling_forward::primitive_desc(
      cpu_engine(), dnnl::prop_kind::forward_inference, kAlgorithms[p.algorithm], src, dst, p.strides, p.wei,
      memory::dims{0, 0}, p.pad_l, p.pad_r, attr);
  entry->prim = dnnl::pooling_forward(pd);
  entry->in = {make_edge(DNNL_ARG_SRC, p.src, p.types[0], act_tag(p.layout), pd.src_desc(), true)};
  entry->out = make_edge(DNNL_ARG_DST, p.dst, p.types[1], act_tag(p.layout), pd.dst_desc(), false);
  entry->scratch = memory(pd.scratchpad_desc(), cpu_engine());
  return entry;
}

// Build the primitive of the problem with its edges, reorders and scratchpad.
std::unique_ptr<Entry> create(const Problem& p) {
  if (p.kind == kPool) return create_pool(p);
  auto entry = std::make_unique<Entry>(p.threads);
  const tag plain = act_tag(p.layout), plain_dst = act_tag(p.dst_layout);
  dnnl::primitive_attr attr = p.kind == kForwardAct ? act_attr(p) : dnnl::primitive_attr();
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const auto& t = p.types;
  const memory::data_type ct = p.compute();
  const memory::desc bias = p.kind == kForwardAct ? memory::desc({p.dst[1]}, memory::data_type::f32, tag::a)
                                                  : memory::desc();
  const auto fwd = dnnl::convolution_forward::primitive_desc(
      cpu_engine(), dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
      act_desc(p, p.src, p.layout), any_desc(p.wei, ct), bias, act_desc(p, p.dst, p.dst_layout), p.strides, p.pad_l,
      p.pad_r,
      attr);
  memory::desc scratch;
  if (p.kind == kForward || p.kind == kForwardAct) {
    entry->prim = dnnl::convolution_forward(fwd);
    entry->in = {make_edge(DNNL_ARG_SRC, p.src, t[0], plain, fwd.src_desc(), true),
                 make_edge(DNNL_ARG_WEIGHTS, p.wei, t[1], tag::oihw, fwd.weights_desc(), true)};
    entry->in[1].keep = p.constant_weights;
    if (p.kind == kForwardAct) entry->in.push_back(make_edge(DNNL_ARG_BIAS, {p.dst[1]}, t[2], tag::a, bias, true));
    entry->out = make_edge(DNNL_ARG_DST, p.dst, t.back(), plain_dst, fwd.dst_desc(), false);
    scratch = fwd.scratchpad_desc();
  } else if (p.kind == kBackwardData) {
    const auto pd = backward_data_desc(p, fwd, attr);
    entry->prim = dnnl::convolution_backward_data(pd);
    entry->in = {make_edge(DNNL_ARG_DIFF_DST, p.dst, t[0], plain_dst, pd.diff_dst_desc(), true),
                 make_edge(DNNL_ARG_WEIGHTS, p.wei, t[1], tag::oihw, pd.weights_desc(), true)};
    entry->out = make_edge(DNNL_ARG_DIFF_SRC, p.src, t[2], plain, pd.diff_src_desc(), false);
    scratch = pd.scratchpad_desc();
  } else {
    // float32 weight gradients also from bf16 activations: no rounding of the sums before the optimiser.
    const auto pd = dnnl::convolution_backward_weights::primitive_desc(
        cpu_engine(), dnnl::algorithm::convolution_direct, act_desc(p, p.src, p.layout), any_desc(p.wei),
        act_desc(p, p.dst, p.dst_layout), p.strides, p.pad_l, p.pad_r, fwd, attr);
    entry->prim = dnnl::convolution_backward_weights(pd);
    entry->in = {make_edge(DNNL_ARG_SRC, p.src, t[0], plain, pd.src_desc(), true),
                 make_edge(DNNL_ARG_DIFF_DST, p.dst, t[1], plain_dst, pd.diff_dst_desc(), true)};
    entry->out = make_edge(DNNL_ARG_DIFF_WEIGHTS, p.wei, t[2], tag::oihw, pd.diff_weights_desc(), false);
    scratch = pd.scratchpad_desc();
  }
  entry->scratch = memory(scratch, cpu_engine());
  return entry;
}

// Constant-weight problems get one entry per weights buffer (a network's layers of equal shapes would otherwise
// share one entry and reorder each other's weights every call); past this many such entries, further buffers share
// their shape's entry (still correct: the bytes are compared), so a caller whose buffers move cannot grow the cache.
constexpr size_t kMaxWeightEntries = 4096;

// The cached entry of one problem (created on first use; entries live for the process); `weights` is the weights
// buffer of a constant-weight problem.
Entry& lookup(const Problem& p, const void* weights = nullptr) {
  static std::mutex mu;
  static std::map<std::vector<int64_t>, std::unique_ptr<Entry>> cache;
  static size_t weight_entries = 0;
  const std::lock_guard<std::mutex> lock(mu);
  std::vector<int64_t> key = p.key();
  if (p.constant_weights) {
    key.push_back(static_cast<int64_t>(reinterpret_cast<intptr_t>(weights)));
    if (cache.find(key) == cache.end() && weight_entries >= kMaxWeightEntries) key.back() = 0;
    if (cache.find(key) == cache.end()) ++weight_entries;
  }
  std::unique_ptr<Entry>& slot = cache[key];
  if (!slot) {
    const Concurrency for_pool(p.threads);
    slot = create(p);
  }
  return *slot;
}

// plain -> blocked (an input) or blocked -> plain (the output) of an edge, on `threads` threads.
void convert(Edge& e, dnnl::stream& stream, memory& plain, memory& blocked, bool to_blocked, int threads) {
  if (to_blocked && e.gather) {
    uint16_t* to = static_cast<uint16_t*>(blocked.get_data_handle());
    with_type(e.plain.get_data_type(), plain.get_data_handle(), [&](auto from) { e.gather->run(from, to, threads); });
    return;
  }
  if (!e.transposed) {
    if (to_blocked) e.convert.execute(stream, plain, blocked);
    else e.convert.execute(stream, blocked, plain);
    return;
  }
  uint16_t* p = static_cast<uint16_t*>(plain.get_data_handle());
  uint16_t* b = static_cast<uint16_t*>(blocked.get_data_handle());
  if (to_blocked) lrelu::cpu::move_interleaved<true>(e.interleaved, e.plain.get_dims().data(), p, b, threads);
  else lrelu::cpu::move_interleaved<false>(e.interleaved, e.plain.get_dims().data(), b, p, threads);
}

// The memory the primitive reads or writes for this edge; an input is reordered into its blocked buffer.
memory bind(Edge& e, void* data, dnnl::stream& stream, bool is_input, int threads) {
  memory user(e.plain, cpu_engine(), data);
  if (!e.reordered) return user;
  if (!is_input) return e.blocked;
  const size_t bytes = e.plain.get_size();
  if (e.keep && e.last.size() == bytes && std::memcmp(e.last.data(), data, bytes) == 0) return e.blocked;
  convert(e, stream, user, e.blocked, true, threads);
  if (e.keep) e.last.assign(static_cast<const char*>(data), static_cast<const char*>(data) + bytes);
  return e.blocked;
}

void run(Entry& entry, void** inputs, void* out) {
  const std::lock_guard<std::mutex> lock(entry.mu);
  dnnl::stream& stream = entry.stream;
  const int threads = entry.pool.get_num_threads();
  std::unordered_map<int, memory> args = {{entry.out.arg, bind(entry.out, out, stream, false, threads)},
                                          {DNNL_ARG_SCRATCHPAD, entry.scratch}};
  for (size_t i = 0; i < entry.in.size(); ++i) {
    args[entry.in[i].arg] = bind(entry.in[i], inputs[i], stream, true, threads);
  }
  entry.prim.execute(stream, args);
  if (entry.out.reordered) {
    memory user(entry.out.plain, cpu_engine(), out);
    convert(entry.out, stream, user, entry.out.blocked, false, threads);
  }
  stream.wait();
}

// Backward-data into at most this many channels runs as GEMM + col2im (backward_data_few_channels). oneDNN's
// backward-data kernel (brgconv_strided) vectorises over 16 channels, so into 3 channels (the image gradient of
// D's first layer, G's last layer) it is several times slower than GEMM + col2im; the two are even near 8
// channels and the primitive wins from 16 (scripts/bench/bench_conv_layouts.cc times both).
constexpr int64_t kFewChannels = 8;

// diff_src (N, C, H, W) of a Conv2d from diff_dst (N, O, Ho, Wo), or (N, Ho, Wo, O) in dst layout NHWC, and OIHW
// weights, per sample:
// cols (C K K, Ho Wo) = weights^T (C K K, O) @ diff_dst[n] (O, Ho Wo) with oneDNN's sgemm, then the gemm
// layers' col2im (col2im.h) adds every column entry onto its input position and rounds once to the output's
// dtype (to bf16 in a bf16 problem, whose primitive computes diff_src in bf16). A bf16 problem's weights and
// float32 diff_dst are rounded to bf16 first, as its primitive's reorders round them; bf16 values are exact in
// float32, and so is every product of two of them: the float32 GEMM computes what the bf16 primitive computes, in
// another summation order. Samples are split over the pool.
template <typename D, typename O>
void backward_data_few_channels(const Problem& p, const D* dy, const void* weights, O* dx) {
  const int64_t n = p.src[0], c = p.src[1], h = p.src[2], w = p.src[3], o = p.wei[0];
  const lrelu::cpu::PaddedPlane plane(h, w, p.wei[2], p.strides[0], p.pad_l[0], p.dst[2], p.dst[3]);
  const int64_t rows = c * plane.taps, cols = plane.seg;
  const float* wt = static_cast<const float*>(weights);
  std::vector<float> rounded;
  if (p.bf16) {
    rounded.resize(static_cast<size_t>(o * rows));
    with_type(p.types[1], weights, [&](auto ws) {
      for (int64_t i = 0; i < o * rows; ++i) rounded[i] = lrelu::cpu::bf16::round(static_cast<float>(ws[i]));
    });
    wt = rounded.data();
  }
  const int workers = static_cast<int>(n < p.threads ? n : p.threads);
  lrelu::cpu::WorkerPool::instance().run(workers, [&](int first) {
    thread_local std::vector<float> buf, acc, wide;
    buf.resize(static_cast<size_t>(rows * cols));
    acc.resize(plane.acc_size());
    for (int64_t i = first; i < n; i += workers) {
      const D* src = dy + i * o * cols;
      const float* dyi = nullptr;
      if constexpr (std::is_same_v<D, float>) dyi = src;
      if (!std::is_same_v<D, float> || p.bf16) {  // widened; rounded to bf16 first in a bf16 problem, as its reorder
        wide.resize(static_cast<size_t>(o * cols));  // (a bf16 diff_dst widens exactly: one vectorised loop)
        if (std::is_same_v<D, lrelu::cpu::bf16> || !p.bf16) {
          for (int64_t j = 0; j < o * cols; ++j) wide[j] = static_cast<float>(src[j]);
        } else {
          for (int64_t j = 0; j < o * cols; ++j) wide[j] = lrelu::cpu::bf16::round(static_cast<float>(src[j]));
        }
        dyi = wide.data();
      }
      const bool nhwc = p.dst_layout == kNHWC;  // dy[n] is then (Ho Wo, O): read transposed
      dnnl_threadpool_interop_sgemm('T', nhwc ? 'T' : 'N', rows, cols, o, 1.0f, wt, rows, dyi, nhwc ? o : cols,
                                    0.0f, buf.data(), cols, nullptr);  // no threadpool: sequential on this thread
      for (int64_t ci = 0; ci < c; ++ci) {
        O* image = dx + (i * c + ci) * h * w;
        plane.col2im(buf.data() + ci * plane.taps * cols, cols, acc.data(), image);
        if constexpr (std::is_same_v<O, float>) {  // a bf16 primitive's diff_src is bf16, then widened
          if (p.bf16) for (int64_t j = 0; j < h * w; ++j) image[j] = lrelu::cpu::bf16::round(image[j]);
        }
      }
    }
  });
}

// The GEMM + col2im path takes an NCHW diff_src (diff_dst NCHW or NHWC), square kernels, one stride and one padding
// on every side; float32 tensors, and in a bf16 problem bf16 ones too.
bool few_channels_path(const Problem& p) {
  if (p.kind != kBackwardData || p.src[1] > kFewChannels || p.layout != kNCHW || p.wei[2] != p.wei[3] ||
      p.strides[0] != p.strides[1] || p.pad_l[0] != p.pad_l[1] || p.pad_l != p.pad_r) {
    return false;
  }
  for (memory::data_type t : p.types) {
    if (t != memory::data_type::f32 && !(p.bf16 && t == memory::data_type::bf16)) return false;
  }
  return true;
}

// backward_data_few_channels with diff_dst and diff_src cast to their dtypes (float32 or bfloat16).
void run_few_channels(const Problem& p, const void* dy, const void* weights, void* dx) {
  with_type(p.types[0], dy, [&](auto dys) {
    if (p.types[2] == memory::data_type::bf16) {
      backward_data_few_channels(p, dys, weights, static_cast<lrelu::cpu::bf16*>(dx));
    } else {
      backward_data_few_channels(p, dys, weights, static_cast<float*>(dx));
    }
  });
}

// Backward-weights of a bf16 problem into a small output plane as one bf16 GEMM with float32 sums:
//   dW (O, K K C) = dY (O, N Ho Wo) @ patches (N Ho Wo, K K C),
// dY transposed from (N, O, Ho Wo) and the patches gathered from a channels-last copy of x (im2col), both rounded
// to bf16 where they come as float32, so it computes what the bf16 primitive computes, in another summation
// order. Where oneDNN's bf16 kernels are slower than this GEMM depends on the CPU (gemm_weights_plane;
// scripts/bench/bench_conv_layouts.cc bf16 times both per layer):
// - with AMX the GEMM wins into planes of at most 4x4 (DCGAN's 8x8 -> 4x4 layers, G's first layer); into 8x8 the
//   AMX kernel is faster;
// - with AVX512-BF16 and no AMX the GEMM wins into planes of at most 16x16 from at least kGemmWeightsChannels
//   input channels; from 3 channels the primitive is as fast or faster.
struct GemmWeights {
  std::mutex mu;
  Pool pool;
  dnnl::stream stream;
  dnnl::matmul prim;
  memory a, b, c;  // bf16 (O, NQ), bf16 (NQ, KKC), float32 (O, KKC)
  memory scratch;
  explicit GemmWeights(int threads)
      : pool(threads), stream(dnnl::threadpool_interop::make_stream(cpu_engine(), &pool)) {}
};

// The largest output plane whose bf16 backward-weights runs as gemm_weights on this CPU (read once).
int64_t gemm_weights_plane() {
  static const int64_t plane = [] {
    const auto isa = static_cast<int64_t>(dnnl_get_effective_cpu_isa());
    const bool amx = (isa & dnnl_cpu_isa_avx512_core_amx) == dnnl_cpu_isa_avx512_core_amx;
    return amx ? kSmallPlane : kLargePlane;
  }();
  return plane;
}

// The GEMM takes NCHW or NHWC, square kernels, one stride and one padding on every side (the DCGAN layers).
bool gemm_weights_path(const Problem& p) {
  return p.kind == kBackwardWeights && p.bf16 && p.dst[2] * p.dst[3] <= gemm_weights_plane() &&
         p.src[1] >= kGemmWeightsChannels &&
         p.wei[2] == p.wei[3] && p.strides[0] == p.strides[1] && p.pad_l[0] == p.pad_l[1] && p.pad_l == p.pad_r;
}

GemmWeights& gemm_weights(const Problem& p) {
  static std::mutex mu;
  static std::map<std::vector<int64_t>, std::unique_ptr<GemmWeights>> cache;
  const std::lock_guard<std::mutex> lock(mu);
  std::unique_ptr<GemmWeights>& slot = cache[p.key()];
  if (!slot) {
    const Concurrency for_pool(p.threads);
    slot = std::make_unique<GemmWeights>(p.threads);
    const int64_t o = p.wei[0], ckk = p.wei[1] * p.wei[2] * p.wei[3], nq = p.dst[0] * p.dst[2] * p.dst[3];
    // dY as (O, NQ): transposed into `a` from NCHW; an NHWC dY already is (NQ, O), read in place as its transpose
    const memory::desc a({o, nq}, memory::data_type::bf16, p.dst_layout == kNHWC ? tag::ba : tag::ab),
        b({nq, ckk}, memory::data_type::bf16, tag::ab),
        c({o, ckk}, memory::data_type::f32, tag::ab);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const auto pd = dnnl::matmul::primitive_desc(cpu_engine(), a, b, c, attr);
    slot->prim = dnnl::matmul(pd);
    slot->a = memory(a, cpu_engine());
    slot->b = memory(b, cpu_engine());
    slot->c = memory(c, cpu_engine());
    slot->scratch = memory(pd.scratchpad_desc(), cpu_engine());
  }
  return *slot;
}

// dst[j] = the bf16 bits of src[j] for j < len.
inline void copy_bits(const lrelu::cpu::bf16* src, uint16_t* dst, int64_t len) {
  std::memcpy(dst, src, static_cast<size_t>(len) * 2);
}
template <typename T>
inline void copy_bits(const T* src, uint16_t* dst, int64_t len) {
  for (int64_t j = 0; j < len; ++j) dst[j] = lrelu::cpu::bf16_bits_of(src[j]);
}

// xp (H + 2 pad, W + 2 pad, C) = the bf16 bits of one sample x (C, H, W), or (H, W, C) in `layout` NHWC, in
// channels-last order, zero in the border: a patch row then reads K runs of K C contiguous values.
template <typename T>
void to_padded_nhwc(const T* x, Layout layout, int64_t c, int64_t h, int64_t w, int64_t pad, uint16_t* xp) {
  const int64_t wp = w + 2 * pad;
  const auto zero = [&](int64_t row, int64_t col, int64_t pixels) {
    std::memset(xp + (row * wp + col) * c, 0, static_cast<size_t>(pixels * c) * 2);
  };
  for (int64_t r = 0; r < pad; ++r) {  // the border only: the interior is written below
    zero(r, 0, wp);
    zero(h + pad + r, 0, wp);
  }
  for (int64_t r = pad; r < h + pad && pad > 0; ++r) {
    zero(r, 0, pad);
    zero(r, w + pad, pad);
  }
  if (layout == kNHWC) {  // each row's W C values as they are
    for (int64_t ih = 0; ih < h; ++ih) copy_bits(x + ih * w * c, xp + ((ih + pad) * wp + pad) * c, w * c);
    return;
  }
  if constexpr (std::is_same_v<T, lrelu::cpu::bf16>) {
    if (c % 16 == 0) {  // 16 channels x 16 pixels at a time, through a transposed tile
      const uint16_t* bits = reinterpret_cast<const uint16_t*>(x);
      const int64_t hw = h * w;
      uint16_t tile[16 * 16];
      for (int64_t c0 = 0; c0 < c; c0 += 16) {
        for (int64_t p0 = 0; p0 < hw; p0 += 16) {
          const int64_t pixels = hw - p0 < 16 ? hw - p0 : 16;
          if (pixels == 16) {
            lrelu::cpu::transpose16x16(bits + c0 * hw + p0, hw, tile, 16);
          } else {
            for (int64_t j = 0; j < pixels; ++j) {
              for (int64_t i = 0; i < 16; ++i) tile[j * 16 + i] = bits[(c0 + i) * hw + p0 + j];
            }
          }
          for (int64_t j = 0; j < pixels; ++j) {
            const int64_t ih = (p0 + j) / w, iw = (p0 + j) % w;
            std::memcpy(xp + ((ih + pad) * wp + iw + pad) * c + c0, tile + j * 16, 32);
          }
        }
      }
      return;
    }
  }
  for (int64_t ci = 0; ci < c; ++ci) {
    for (int64_t ih = 0; ih < h; ++ih) {
      const T* src = x + (ci * h + ih) * w;
      uint16_t* dst = xp + ((ih + pad) * wp + pad) * c + ci;
      for (int64_t iw = 0; iw < w; ++iw) dst[iw * c] = lrelu::cpu::bf16_bits_of(src[iw]);
    }
  }
}

// params: src (N, C, H, W), diff_dst (N, O, Ho, Wo) (both channels last in layout NHWC), out: diff_weights
// (O, C, K, K), dtypes p.types. The
// patches' columns are in (kh, kw, ci) order, contiguous runs of the channels-last copy of x; the GEMM's
// (O, K K C) sums are permuted into OIHW at the end (and rounded once where the weight is not float32).
void backward_weights_gemm(const Problem& p, const void* x, const void* dy, void* dw) {
  GemmWeights& g = gemm_weights(p);
  const std::lock_guard<std::mutex> lock(g.mu);
  const int64_t n = p.src[0], c = p.src[1], h = p.src[2], w = p.src[3], o = p.wei[0], k = p.wei[2];
  const int64_t ho = p.dst[2], wo = p.dst[3], q = ho * wo, ckk = c * k * k;
  const int64_t stride = p.strides[0], pad = p.pad_l[0], wp = w + 2 * pad;
  uint16_t* a = static_cast<uint16_t*>(g.a.get_data_handle());
  uint16_t* b = static_cast<uint16_t*>(g.b.get_data_handle());
  const bool bf16_dy = p.dst_layout == kNHWC && p.types[1] == memory::data_type::bf16;  // the GEMM reads it in place
  const int workers = static_cast<int>(n < p.threads ? n : p.threads);
  with_type(p.types[0], x, [&](auto xs) {
    with_type(p.types[1], dy, [&](auto dys) {
      lrelu::cpu::WorkerPool::instance().run(workers, [&](int first) {
        thread_local std::vector<uint16_t> xp;
        xp.resize(static_cast<size_t>((h + 2 * pad) * wp * c));
        for (int64_t i = first; i < n; i += workers) {
          if (p.dst_layout == kNHWC) {  // a[i q + j, oc] = dy[i, j, oc]: a copy where dy is not bf16 (read in place)
            if (!bf16_dy) copy_bits(dys + i * q * o, a + i * q * o, q * o);
          } else {
            for (int64_t oc = 0; oc < o; ++oc) {  // a[oc, i q + j] = dy[i, oc, j]
              copy_bits(dys + (i * o + oc) * q, a + oc * n * q + i * q, q);
            }
          }
          to_padded_nhwc(xs + i * c * h * w, p.layout, c, h, w, pad, xp.data());
          for (int64_t oh = 0; oh < ho; ++oh) {  // b[(i, oh, ow), (kh, kw, ci)] = xp[oh s + kh, ow s + kw, ci]
            for (int64_t ow = 0; ow < wo; ++ow) {
              uint16_t* row = b + ((i * ho + oh) * wo + ow) * ckk;
              for (int64_t kh = 0; kh < k; ++kh) {
                std::memcpy(row + kh * k * c, xp.data() + ((oh * stride + kh) * wp + ow * stride) * c,
                            static_cast<size_t>(k * c) * 2);
              }
            }
          }
        }
      });
    });
  });
  memory a_mem = bf16_dy ? memory(g.a.get_desc(), cpu_engine(), const_cast<void*>(dy)) : g.a;
  g.prim.execute(g.stream, {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, g.b}, {DNNL_ARG_DST, g.c},
                            {DNNL_ARG_SCRATCHPAD, g.scratch}});
  g.stream.wait();
  const float* sums = static_cast<const float*>(g.c.get_data_handle());
  auto permute = [&](auto* out) {  // out[oc, ci, kh, kw] = sums[oc, (kh k + kw) c + ci], rounded once
    using T = std::remove_pointer_t<decltype(out)>;
    const int split = static_cast<int>(o < p.threads ? o : p.threads);
    lrelu::cpu::WorkerPool::instance().run(split, [&](int first) {
      for (int64_t oc = first; oc < o; oc += split) {
        for (int64_t ci = 0; ci < c; ++ci) {
          for (int64_t t = 0; t < k * k; ++t) {
            out[(oc * c + ci) * k * k + t] = static_cast<T>(sums[oc * ckk + t * c + ci]);
          }
        }
      }
    });
  };
  if (p.types[2] == memory::data_type::f32) permute(static_cast<float*>(dw));
  else if (p.types[2] == memory::data_type::bf16) permute(static_cast<lrelu::cpu::bf16*>(dw));
  else permute(static_cast<_Float16*>(dw));
}

memory::dims dims_of(int ndim, const int64_t* s) { return memory::dims(s, s + ndim); }

bool float_type(const char* dtype, memory::data_type* t) {
  if (std::strcmp(dtype, "float32") == 0) *t = memory::data_type::f32;
  else if (std::strcmp(dtype, "float16") == 0) *t = memory::data_type::f16;
  else if (std::strcmp(dtype, "bfloat16") == 0) *t = memory::data_type::bf16;
  else return false;
  return true;
}

float float_at(const int32_t* params, int index) {
  float f;
  std::memcpy(&f, params + index, sizeof f);
  return f;
}

// The logical (N, C, H, W) dims of an activation tensor's shape in `layout`.
memory::dims act_dims(const int64_t* s, Layout layout) {
  return layout == kNHWC ? memory::dims{s[0], s[3], s[1], s[2]} : memory::dims(s, s + 4);
}

// The tensor dtypes of a call (every param but the geometry at `geo`); false for a dtype oneDNN is not given.
bool tensor_types(int nparam, int geo, const char** dtypes, std::vector<memory::data_type>* types) {
  for (int i = 0; i < nparam; ++i) {
    memory::data_type t;
    if (i == geo) continue;
    if (!float_type(dtypes[i], &t)) return false;
    types->push_back(t);
  }
  return true;
}

int execute(const Problem& p, void** params, int out) {
  try {
    void* in[3] = {params[0], params[1], params[2]};
    run(lookup(p, params[1]), in, params[out]);
  } catch (const dnnl::error&) {
    return 2;
  }
  return 0;
}

// params: {inputs..., geometry, out}; kForwardAct has three inputs (src, weights, bias), the others two.
// Returns 0, 1 (bad signature/dtype/layout) or 2 (oneDNN refused the problem).
int entry_point(Kind kind, int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes) {
  const int inputs = kind == kForwardAct ? 3 : 2, geo = inputs, out = inputs + 1;
  if (nparam != inputs + 2 || ndims[0] != 4 || ndims[1] != 4 || ndims[out] != 4 || ndims[geo] != 1 ||
      shapes[geo][0] != kGeometryLength || std::strcmp(dtypes[geo], "int32") != 0) {
    return 1;
  }
  const int32_t* g = static_cast<const int32_t*>(params[geo]);
  if (g[9] < 0 || g[9] > 3) return 1;
  const Layout src_layout = g[9] == 1 || g[9] == 3 ? kNHWC : kNCHW;
  const Layout dst_layout = g[9] == 1 || g[9] == 2 ? kNHWC : kNCHW;
  Problem p{kind, {}, {}, {}, {g[0], g[1]}, {g[2], g[4]}, {g[3], g[5]}, g[6] > 1 ? g[6] : 1, {},
            float_at(g, 7), float_at(g, 8), src_layout, dst_layout, 0,
            g[10] != 0 && (kind == kForward || kind == kForwardAct), g[11] != 0};
  if (!tensor_types(nparam, geo, dtypes, &p.types)) return 1;
  // (src, weights, dst) dims from the kernel's first two inputs and its output.
  const Layout first = kind == kBackwardData ? dst_layout : src_layout;  // the layout of the first input
  const Layout last = kind == kBackwardData ? src_layout : dst_layout;  // the layout of an activation output
  const memory::dims o = kind == kBackwardWeights ? dims_of(4, shapes[out]) : act_dims(shapes[out], last);
  const memory::dims a = act_dims(shapes[0], first);
  const memory::dims b = kind == kBackwardWeights ? act_dims(shapes[1], dst_layout) : dims_of(4, shapes[1]);
  p.src = kind == kBackwardData ? o : a;
  p.wei = kind == kBackwardWeights ? o : b;
  p.dst = kind == kBackwardData ? a : kind == kBackwardWeights ? b : o;
  if (kind == kForwardAct && (ndims[2] != 1 || shapes[2][0] != p.dst[1])) return 1;
  if (few_channels_path(p)) {
    run_few_channels(p, params[0], params[1], params[out]);
    return 0;
  }
  if (gemm_weights_path(p)) {
    try {
      backward_weights_gemm(p, params[0], params[1], params[out]);
    } catch (const dnnl::error&) {
      return 2;
    }
    return 0;
  }
  return execute(p, params, out);
}

// params: {src, pool geometry, dst}, float32 4-d tensors in the geometry's layout.
int pool_entry_point(int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes) {
  if (nparam != 3 || ndims[0] != 4 || ndims[2] != 4 || ndims[1] != 1 || shapes[1][0] != kPoolGeometryLength ||
      std::strcmp(dtypes[1], "int32") != 0 || std::strcmp(dtypes[0], "float32") != 0 ||
      std::strcmp(dtypes[2], "float32") != 0) {
    return 1;
  }
  const int32_t* g = static_cast<const int32_t*>(params[1]);
  if (g[0] < 0 || g[0] > 2 || (g[10] != kNCHW && g[10] != kNHWC)) return 1;
  const Layout l = static_cast<Layout>(g[10]);
  Problem p{kPool, act_dims(shapes[0], l), {g[1], g[2]}, act_dims(shapes[2], l), {g[3], g[4]}, {g[5], g[7]},
            {g[6], g[8]}, g[9] > 1 ? g[9] : 1, {memory::data_type::f32, memory::data_type::f32}, 0.0f, 0.0f, l, l,
            g[0], false, false};
  return execute(p, params, 2);
}

// dz = dy where y > 0, slope * dy elsewhere, 0 where |y| reached a finite clamp: the LeakyReLU gradient read
// from the output's sign (y > 0 <=> z > 0 for slope >= 0), computed in float32 and rounded once. The output
// cannot tell a clamped value from a pre-activation exactly at +-clamp: both count as clamped (gradient 0).
template <typename T>
void act_backward(const T* __restrict__ y, const T* __restrict__ dy, T* __restrict__ dz, int64_t n, float slope,
                  float clamp) {
  const float bound = std::isfinite(clamp) ? clamp : INFINITY;  // no clamp: no finite y is cut off
  for (int64_t i = 0; i < n; ++i) {
    const float yi = static_cast<float>(y[i]), g = static_cast<float>(dy[i]);
    const float d = yi > 0.0f ? g : slope * g;
    dz[i] = static_cast<T>((yi >= bound || yi <= -bound) && std::isfinite(clamp) ? 0.0f : d);
  }
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

int DnnlConvActForward(int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes, void*, void*) {
  return entry_point(kForwardAct, nparam, params, ndims, shapes, dtypes);
}

int DnnlPoolForward(int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes, void*, void*) {
  return pool_entry_point(nparam, params, ndims, shapes, dtypes);
}

// Inputs: y, dy (same shape and dtype, float32|float16|bfloat16), geometry; output: dz like y.
int DnnlActBackward(int nparam, void** params, int* ndims, int64_t** shapes, const char** dtypes, void*, void*) {
  if (nparam != 4 || ndims[2] != 1 || shapes[2][0] != kGeometryLength || std::strcmp(dtypes[2], "int32") != 0 ||
      std::strcmp(dtypes[0], dtypes[1]) != 0 || std::strcmp(dtypes[0], dtypes[3]) != 0 || ndims[0] != ndims[1]) {
    return 1;
  }
  int64_t n = 1;
  for (int i = 0; i < ndims[0]; ++i) {
    if (shapes[0][i] != shapes[1][i]) return 1;
    n *= shapes[0][i];
  }
  const int32_t* g = static_cast<const int32_t*>(params[2]);
  const float slope = float_at(g, 7), clamp = float_at(g, 8);
  auto run = [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    const T *y = static_cast<const T*>(params[0]), *dy = static_cast<const T*>(params[1]);
    T* dz = static_cast<T*>(params[3]);
    lrelu::cpu::for_each_chunk(n, g[6], [&](int64_t start, int64_t len) {
      act_backward(y + start, dy + start, dz + start, len, slope, clamp);
    });
  };
  if (std::strcmp(dtypes[0], "float32") == 0) {
    run(static_cast<float*>(nullptr));
  } else if (std::strcmp(dtypes[0], "float16") == 0) {
    run(static_cast<_Float16*>(nullptr));
  } else if (std::strcmp(dtypes[0], "bfloat16") == 0) {
    run(static_cast<lrelu::cpu::bf16*>(nullptr));
  } else {
    return 1;
  }
  return 0;
}

// The most capable instruction set oneDNN dispatches to on this CPU (a dnnl_cpu_isa_t bit mask; lowered by
// $ONEDNN_MAX_CPU_ISA, read once per process).
int64_t LreluDnnlCpuIsa() { return static_cast<int64_t>(dnnl_get_effective_cpu_isa()); }

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
