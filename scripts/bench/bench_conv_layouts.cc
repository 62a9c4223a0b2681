// Times oneDNN's convolution primitives on the DCGAN-32/64 layer geometries (batch 64, 4x4 kernels) for each
// activation layout a caller can ask for, on one thread, and backward-data into few channels as sgemm + col2im
// (what ops/csrc/cpu/onednn_conv.cc does there, with its col2im.h). The evidence behind the layouts that file picks.
// `bf16` as the argument instead: the bfloat16 primitives (oneDNN's default choice) against float32, forward,
// backward-data and backward-weights, and backward-weights as gather + one bf16 GEMM (the kernel's
// backward_weights_gemm, used into output planes of at most 4x4), in CPU time of the calling thread (on a
// machine loaded past its cores the CPU time still measures the kernel; wall time counts the waits).
//
// Build and run against the oneDNN MindSpore ships (the one the kernels call), with the headers of the
// onednn-devel package (ops.onednn.headers()):
//   ML=$(python -c "import ops.onednn as o; print(o.mindspore_dnnl().parent)")
//   INC=$(python -c "import ops.onednn as o; print(o.headers())")
//   g++ -O2 -march=native -pthread -std=c++17 scripts/bench/bench_conv_layouts.cc -I$INC -L$ML -l:libdnnl.so.3 \
//       -Wl,-rpath,$ML -o /tmp/layouts   # -march=native as the kernels are built (blocked16.h uses AVX2 there)
//   /tmp/layouts            # prints one line per (geometry, layout): ms of the best of 5 runs, and the kernel
//   /tmp/layouts --json F   # the same, and writes them to F as {"primitives": [...], "few_channels": [...]}
//   /tmp/layouts bf16       # one line per geometry: bf16 and float32 primitives, and the GEMM backward-weights;
//                           # then per activation shape: the bf16 and float32 reorders to nChw16c and to
//                           # nhwc and back, and the kernel's own bf16 transposes; then per layer the bf16
//                           # weights' conversion into oneDNN's layouts: its reorder and blocked_weights.h's gather
//                           # (build with -O3, as the kernels are, to time the gather as they run it)
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

#include "../../ops/csrc/cpu/blocked16.h"
#include "../../ops/csrc/cpu/blocked_weights.h"
#include "../../ops/csrc/cpu/col2im.h"
#include "oneapi/dnnl/dnnl.hpp"
#include "oneapi/dnnl/dnnl_threadpool.h"

namespace {

using dnnl::memory;
using tag = memory::format_tag;

dnnl::engine eng(dnnl::engine::kind::cpu, 0);
dnnl::stream strm(eng);

template <class F>
double best_ms(F f, int reps = 5) {
  f();
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    strm.wait();
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

struct Geometry {
  int64_t n, ic, oc, ih, k, s, p;
  int64_t oh() const { return (ih + 2 * p - k) / s + 1; }
};

// The JSON objects of the default mode's lines, for --json (the kernels' names hold no quotes or backslashes).
std::vector<std::string> primitive_rows, few_channel_rows;

std::string geometry_json(const Geometry& g) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "\"batch\": %ld, \"in_channels\": %ld, \"out_channels\": %ld, \"size\": %ld, "
                "\"kernel\": %ld, \"stride\": %ld, \"padding\": %ld", g.n, g.ic, g.oc, g.ih, g.k, g.s, g.p);
  return buf;
}

memory zeroed(const memory::desc& d) {
  memory m(d, eng);
  std::memset(m.get_data_handle(), 0, d.get_size());
  return m;
}

// Forward, backward-data and backward-weights with the activations in `t` (weights: any), and the cost of
// reordering the six activation arguments from NCHW.
void primitives(const Geometry& g, tag t, const char* name) {
  const memory::dims src = {g.n, g.ic, g.ih, g.ih}, wei = {g.oc, g.ic, g.k, g.k}, dst = {g.n, g.oc, g.oh(), g.oh()};
  const memory::dims st = {g.s, g.s}, pd = {g.p, g.p};
  const auto f32 = memory::data_type::f32;
  const memory::desc sd(src, f32, t), dd(dst, f32, t), wd(wei, f32, tag::any);
  try {
    const auto fwd = dnnl::convolution_forward::primitive_desc(eng, dnnl::prop_kind::forward_training,
        dnnl::algorithm::convolution_direct, sd, wd, memory::desc(), dd, st, pd, pd);
    const auto bwd_d = dnnl::convolution_backward_data::primitive_desc(eng, dnnl::algorithm::convolution_direct,
        sd, wd, dd, st, pd, pd, fwd);
    const auto bwd_w = dnnl::convolution_backward_weights::primitive_desc(eng, dnnl::algorithm::convolution_direct,
        sd, wd, dd, st, pd, pd, fwd);
    for (const char* impl : {fwd.impl_info_str(), bwd_d.impl_info_str(), bwd_w.impl_info_str()}) {
      if (std::strncmp(impl, "ref", 3) == 0) {  // seconds per call: not a candidate
        std::printf("ic%-4ld oc%-4ld %3ldpx  %-8s only oneDNN's reference kernel (%s)\n", g.ic, g.oc, g.ih, name,
                    impl);
        primitive_rows.push_back("{" + geometry_json(g) + ", \"layout\": \"" + name + "\", \"reference_only\": \"" +
                                 impl + "\"}");
        return;
      }
    }
    memory s = zeroed(fwd.src_desc()), w = zeroed(fwd.weights_desc()), d = zeroed(fwd.dst_desc());
    memory dsrc = zeroed(bwd_d.diff_src_desc()), w2 = zeroed(bwd_d.weights_desc()), ddst = zeroed(bwd_d.diff_dst_desc());
    memory s3 = zeroed(bwd_w.src_desc()), ddst3 = zeroed(bwd_w.diff_dst_desc()), dw = zeroed(bwd_w.diff_weights_desc());
    dnnl::convolution_forward f(fwd);
    dnnl::convolution_backward_data b(bwd_d);
    dnnl::convolution_backward_weights bw(bwd_w);
    const double tf = best_ms([&] { f.execute(strm, {{DNNL_ARG_SRC, s}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, d}}); });
    const double tb = best_ms([&] {
      b.execute(strm, {{DNNL_ARG_DIFF_DST, ddst}, {DNNL_ARG_WEIGHTS, w2}, {DNNL_ARG_DIFF_SRC, dsrc}}); });
    const double tw = best_ms([&] {
      bw.execute(strm, {{DNNL_ARG_SRC, s3}, {DNNL_ARG_DIFF_DST, ddst3}, {DNNL_ARG_DIFF_WEIGHTS, dw}}); });
    auto reorder_ms = [&](const memory::desc& chosen, const memory::dims& dims) {
      const memory::desc plain(dims, f32, tag::nchw);
      if (plain == chosen) return 0.0;
      memory a = zeroed(plain), c = zeroed(chosen);
      dnnl::reorder r(a, c);
      return best_ms([&] { r.execute(strm, a, c); });
    };
    const double tr = reorder_ms(fwd.src_desc(), src) + reorder_ms(fwd.dst_desc(), dst) +
                      reorder_ms(bwd_d.diff_dst_desc(), dst) + reorder_ms(bwd_d.diff_src_desc(), src) +
                      reorder_ms(bwd_w.src_desc(), src) + reorder_ms(bwd_w.diff_dst_desc(), dst);
    std::printf("ic%-4ld oc%-4ld %3ldpx  %-8s fwd %7.2f (%s)  bwd_data %7.2f (%s)  bwd_weights %7.2f (%s)  "
                "reorders %6.2f\n", g.ic, g.oc, g.ih, name, tf, fwd.impl_info_str(), tb, bwd_d.impl_info_str(), tw,
                bwd_w.impl_info_str(), tr);
    char buf[512];
    std::snprintf(buf, sizeof buf, ", \"layout\": \"%s\", \"forward_ms\": %.3f, \"forward_impl\": \"%s\", "
                  "\"backward_data_ms\": %.3f, \"backward_data_impl\": \"%s\", \"backward_weights_ms\": %.3f, "
                  "\"backward_weights_impl\": \"%s\", \"reorders_ms\": %.3f}", name, tf, fwd.impl_info_str(), tb,
                  bwd_d.impl_info_str(), tw, bwd_w.impl_info_str(), tr);
    primitive_rows.push_back("{" + geometry_json(g) + buf);
  } catch (const dnnl::error& e) {
    std::printf("ic%-4ld oc%-4ld %3ldpx  %-8s not available: %s\n", g.ic, g.oc, g.ih, name, e.what());
  }
}

// Backward-data into g.ic channels: oneDNN's primitive (any layouts, with the reorders from and to NCHW) against
// per-sample sgemm + col2im on NCHW tensors.
void few_channels(const Geometry& g) {
  const int64_t oh = g.oh(), rows = g.ic * g.k * g.k, cols = oh * oh;
  const memory::dims src = {g.n, g.ic, g.ih, g.ih}, wei = {g.oc, g.ic, g.k, g.k}, dst = {g.n, g.oc, oh, oh};
  const memory::dims st = {g.s, g.s}, pd = {g.p, g.p};
  const auto f32 = memory::data_type::f32;
  auto any = [&](const memory::dims& d) { return memory::desc(d, f32, tag::any); };
  const auto fwd = dnnl::convolution_forward::primitive_desc(eng, dnnl::prop_kind::forward_training,
      dnnl::algorithm::convolution_direct, any(src), any(wei), memory::desc(), any(dst), st, pd, pd);
  const auto bwd_d = dnnl::convolution_backward_data::primitive_desc(eng, dnnl::algorithm::convolution_direct,
      any(src), any(wei), any(dst), st, pd, pd, fwd);
  memory udy = zeroed(memory::desc(dst, f32, tag::nchw)), uw = zeroed(memory::desc(wei, f32, tag::oihw));
  memory udx = zeroed(memory::desc(src, f32, tag::nchw));
  memory ddst = zeroed(bwd_d.diff_dst_desc()), w = zeroed(bwd_d.weights_desc()), dsrc = zeroed(bwd_d.diff_src_desc());
  dnnl::reorder r1(udy, ddst), r2(uw, w), r3(dsrc, udx);
  dnnl::convolution_backward_data b(bwd_d);
  const double tp = best_ms([&] {
    r1.execute(strm, udy, ddst);
    r2.execute(strm, uw, w);
    b.execute(strm, {{DNNL_ARG_DIFF_DST, ddst}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DIFF_SRC, dsrc}});
    r3.execute(strm, dsrc, udx);
  });
  const lrelu::cpu::PaddedPlane plane(g.ih, g.ih, g.k, g.s, g.p, oh, oh);
  std::vector<float> buf(static_cast<size_t>(rows * cols)), acc(plane.acc_size());
  const float* dy = static_cast<const float*>(udy.get_data_handle());
  const float* wt = static_cast<const float*>(uw.get_data_handle());
  float* dx = static_cast<float*>(udx.get_data_handle());
  const double tg = best_ms([&] {
    for (int64_t i = 0; i < g.n; ++i) {
      dnnl_threadpool_interop_sgemm('T', 'N', rows, cols, g.oc, 1.0f, wt, rows, dy + i * g.oc * cols, cols, 0.0f,
                                    buf.data(), cols, nullptr);
      for (int64_t c = 0; c < g.ic; ++c) {
        plane.col2im(buf.data() + c * plane.taps * cols, cols, acc.data(), dx + (i * g.ic + c) * g.ih * g.ih);
      }
    }
  });
  std::printf("backward-data into %2ld channels from %3ld, %2ldpx: primitive + reorders %7.2f ms (%s), "
              "sgemm + col2im %7.2f ms\n", g.ic, g.oc, g.ih, tp, bwd_d.impl_info_str(), tg);
  char row[256];
  std::snprintf(row, sizeof row, ", \"primitive_with_reorders_ms\": %.3f, \"primitive_impl\": \"%s\", "
                "\"sgemm_col2im_ms\": %.3f}", tp, bwd_d.impl_info_str(), tg);
  few_channel_rows.push_back("{" + geometry_json(g) + row);
}

// {"primitives": [...], "few_channels": [...]} of the lines printed, to `path`.
void write_json(const char* path) {
  auto join = [](const std::vector<std::string>& rows) {
    std::string out;
    for (size_t i = 0; i < rows.size(); ++i) out += (i ? ",\n  " : "\n  ") + rows[i];
    return "[" + out + "\n ]";
  };
  std::ofstream(path) << "{\"primitives\": " << join(primitive_rows) << ",\n \"few_channels\": "
                      << join(few_channel_rows) << "}\n";
}

}  // namespace

double cpu_ms() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

// Best of 5 calls in CPU time of this thread (the default stream runs oneDNN on it).
double best_cpu_ms(const std::function<void()>& f) {
  f();
  double best = 1e30;
  for (int i = 0; i < 5; ++i) {
    const double t0 = cpu_ms();
    f();
    strm.wait();
    best = std::min(best, cpu_ms() - t0);
  }
  return best;
}

// ms of forward, backward-data and backward-weights of the primitive oneDNN picks for data type t (any layouts,
// float32 weight gradients), and its implementations.
std::vector<std::pair<double, std::string>> default_primitives(const Geometry& g, memory::data_type t) {
  const memory::dims src = {g.n, g.ic, g.ih, g.ih}, wei = {g.oc, g.ic, g.k, g.k}, dst = {g.n, g.oc, g.oh(), g.oh()};
  const memory::dims st = {g.s, g.s}, pd = {g.p, g.p};
  auto any = [](const memory::dims& d, memory::data_type dt) { return memory::desc(d, dt, tag::any); };
  const auto fwd = dnnl::convolution_forward::primitive_desc(eng, dnnl::prop_kind::forward_training,
      dnnl::algorithm::convolution_direct, any(src, t), any(wei, t), memory::desc(), any(dst, t), st, pd, pd);
  const auto bwd_d = dnnl::convolution_backward_data::primitive_desc(eng, dnnl::algorithm::convolution_direct,
      any(src, t), any(wei, t), any(dst, t), st, pd, pd, fwd);
  const auto bwd_w = dnnl::convolution_backward_weights::primitive_desc(eng, dnnl::algorithm::convolution_direct,
      any(src, t), any(wei, memory::data_type::f32), any(dst, t), st, pd, pd, fwd);
  memory s = zeroed(fwd.src_desc()), w = zeroed(fwd.weights_desc()), d = zeroed(fwd.dst_desc());
  memory dsrc = zeroed(bwd_d.diff_src_desc()), w2 = zeroed(bwd_d.weights_desc()), ddst = zeroed(bwd_d.diff_dst_desc());
  memory s3 = zeroed(bwd_w.src_desc()), ddst3 = zeroed(bwd_w.diff_dst_desc()), dw = zeroed(bwd_w.diff_weights_desc());
  dnnl::convolution_forward f(fwd);
  dnnl::convolution_backward_data b(bwd_d);
  dnnl::convolution_backward_weights bw(bwd_w);
  return {{best_cpu_ms([&] { f.execute(strm, {{DNNL_ARG_SRC, s}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, d}}); }),
           fwd.impl_info_str()},
          {best_cpu_ms([&] { b.execute(strm, {{DNNL_ARG_DIFF_DST, ddst}, {DNNL_ARG_WEIGHTS, w2},
                                              {DNNL_ARG_DIFF_SRC, dsrc}}); }), bwd_d.impl_info_str()},
          {best_cpu_ms([&] { bw.execute(strm, {{DNNL_ARG_SRC, s3}, {DNNL_ARG_DIFF_DST, ddst3},
                                               {DNNL_ARG_DIFF_WEIGHTS, dw}}); }), bwd_w.impl_info_str()}};
}

// ms of bf16 backward-weights as the kernel computes it into small planes: dY transposed to (O, N Ho Wo), the
// patches gathered to (N Ho Wo, C K K) (both bf16), one bf16 matmul with float32 output.
double gemm_backward_weights(const Geometry& g) {
  const int64_t n = g.n, c = g.ic, o = g.oc, h = g.ih, k = g.k, ho = g.oh(), q = ho * ho, ckk = c * k * k;
  std::vector<uint16_t> x(n * c * h * h, 0x3C24), dy(n * o * q, 0x3C24), a(o * n * q), b(n * q * ckk);
  std::vector<float> dw(o * ckk);
  const memory::desc ad({o, n * q}, memory::data_type::bf16, tag::ab), bd({n * q, ckk}, memory::data_type::bf16, tag::ab),
      cd({o, ckk}, memory::data_type::f32, tag::ab);
  dnnl::matmul mm(dnnl::matmul::primitive_desc(eng, ad, bd, cd));
  memory am(ad, eng, a.data()), bm(bd, eng, b.data()), cm(cd, eng, dw.data());
  return best_cpu_ms([&] {
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t oc = 0; oc < o; ++oc) std::memcpy(&a[(oc * n + i) * q], &dy[(i * o + oc) * q], q * 2);
      for (int64_t oh = 0; oh < ho; ++oh) {
        for (int64_t ow = 0; ow < ho; ++ow) {
          uint16_t* row = &b[((i * ho + oh) * ho + ow) * ckk];
          for (int64_t ci = 0; ci < c; ++ci) {
            for (int64_t kh = 0; kh < k; ++kh) {
              for (int64_t kw = 0; kw < k; ++kw) {
                const int64_t ih = oh * g.s - g.p + kh, iw = ow * g.s - g.p + kw;
                row[(ci * k + kh) * k + kw] = ih < 0 || ih >= h || iw < 0 || iw >= h ? 0 : x[((i * c + ci) * h + ih) * h + iw];
              }
            }
          }
        }
      }
    }
    mm.execute(strm, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
  });
}

void bf16_against_f32(const Geometry& g) {
  try {
    const auto bf16 = default_primitives(g, memory::data_type::bf16), f32 = default_primitives(g, memory::data_type::f32);
    std::printf("ic%-4ld oc%-4ld %3ldpx -> %ldx%ld  bf16 fwd %7.2f bwd_data %7.2f bwd_weights %7.2f (%s)  f32 fwd %7.2f "
                "bwd_data %7.2f bwd_weights %7.2f  bf16 GEMM bwd_weights %7.2f ms CPU\n", g.ic, g.oc, g.ih, g.oh(), g.oh(),
                bf16[0].first, bf16[1].first, bf16[2].first, bf16[2].second.c_str(), f32[0].first, f32[1].first,
                f32[2].first, gemm_backward_weights(g));
  } catch (const dnnl::error& e) {
    std::printf("ic%-4ld oc%-4ld %3ldpx  bf16 not available: %s\n", g.ic, g.oc, g.ih, e.what());
  }
}

// ms of the nchw -> nChw16c -> nchw and nchw -> nhwc -> nchw reorders of one activation: oneDNN's in bf16 and in
// float32, and the kernel's own bf16 transposes (blocked16.h, move_interleaved), on this thread.
void bf16_reorders(const memory::dims& dims) {
  for (const auto layout : {lrelu::cpu::Interleaved::kBlocked16, lrelu::cpu::Interleaved::kNhwc}) {
    const bool nhwc = layout == lrelu::cpu::Interleaved::kNhwc;
    double ms[3];
    for (int i = 0; i < 2; ++i) {
      const memory::data_type t = i == 0 ? memory::data_type::bf16 : memory::data_type::f32;
      memory plain = zeroed(memory::desc(dims, t, tag::nchw));
      memory other = zeroed(memory::desc(dims, t, nhwc ? tag::nhwc : tag::nChw16c));
      dnnl::reorder in(plain, other), out(other, plain);
      ms[i] = best_cpu_ms([&] {
        in.execute(strm, plain, other);
        out.execute(strm, other, plain);
      });
    }
    std::vector<uint16_t> plain(dims[0] * dims[1] * dims[2] * dims[3]), other(plain.size());
    ms[2] = best_cpu_ms([&] {
      lrelu::cpu::move_interleaved<true>(layout, dims.data(), plain.data(), other.data(), 1);
      lrelu::cpu::move_interleaved<false>(layout, dims.data(), other.data(), plain.data(), 1);
    });
    std::printf("%ldx%ldx%ldx%ld nchw -> %s -> nchw: oneDNN bf16 %6.3f ms, oneDNN float32 %6.3f ms, "
                "move_interleaved bf16 %6.3f ms CPU\n", dims[0], dims[1], dims[2], dims[3],
                nhwc ? "nhwc" : "nChw16c", ms[0], ms[1], ms[2]);
  }
}

// ms of a bf16 weight's conversion from float32 OIHW into the layout oneDNN's bf16 forward and backward-data
// (nhwc activations, as the app's channels-last networks) take: oneDNN's reorder and blocked_weights.h's gather
// (what the kernel uses where the layout has three or more inner blocks), on this thread.
void bf16_weights(const Geometry& g) {
  const memory::dims src = {g.n, g.ic, g.ih, g.ih}, wei = {g.oc, g.ic, g.k, g.k}, dst = {g.n, g.oc, g.oh(), g.oh()};
  const memory::dims st = {g.s, g.s}, pd = {g.p, g.p};
  const auto bf16 = memory::data_type::bf16;
  try {
    const auto fwd = dnnl::convolution_forward::primitive_desc(eng, dnnl::prop_kind::forward_training,
        dnnl::algorithm::convolution_direct, memory::desc(src, bf16, tag::nhwc), memory::desc(wei, bf16, tag::any),
        memory::desc(), memory::desc(dst, bf16, tag::nhwc), st, pd, pd);
    const auto bwd = dnnl::convolution_backward_data::primitive_desc(eng, dnnl::algorithm::convolution_direct,
        memory::desc(src, bf16, tag::nhwc), memory::desc(wei, bf16, tag::any), memory::desc(dst, bf16, tag::nhwc),
        st, pd, pd, fwd);
    for (const auto& [chosen, name] : {std::pair{fwd.weights_desc(), "forward"}, {bwd.weights_desc(), "backward_data"}}) {
      memory plain = zeroed(memory::desc(wei, memory::data_type::f32, tag::oihw)), blocked = zeroed(chosen);
      dnnl::reorder convert(plain, blocked);
      const double theirs = best_cpu_ms([&] { convert.execute(strm, plain, blocked); });
      const std::optional<lrelu::cpu::BlockedLayout> l = lrelu::cpu::blocked_layout(chosen);
      const bool fits = l && lrelu::cpu::BlockedGather::fits(*l);
      double ours = 0;
      if (fits) {
        const lrelu::cpu::BlockedGather gather(*l);
        const float* from = static_cast<const float*>(plain.get_data_handle());
        uint16_t* to = static_cast<uint16_t*>(blocked.get_data_handle());
        ours = best_cpu_ms([&] { gather.run(from, to, 1); });
      }
      std::printf("weights %ldx%ldx%ldx%ld %-13s %d inner blocks: oneDNN reorder %7.3f ms CPU", wei[0], wei[1],
                  wei[2], wei[3], name, chosen.get_inner_nblks(), theirs);
      if (fits) std::printf(", gather %7.3f ms CPU (%.1fx)\n", ours, theirs / ours);
      else std::printf(", gather: cannot (not blocked, or padded)\n");
    }
  } catch (const dnnl::error& e) {
    std::printf("weights %ldx%ld  bf16 not available: %s\n", g.oc, g.ic, e.what());
  }
}

int main(int argc, char** argv) {
  const std::vector<Geometry> layers = {
      {64, 3, 32, 32, 4, 2, 1},  {64, 32, 64, 16, 4, 2, 1},  {64, 64, 128, 8, 4, 2, 1},    // DCGAN-32
      {64, 3, 64, 64, 4, 2, 1},  {64, 64, 128, 32, 4, 2, 1}, {64, 128, 256, 16, 4, 2, 1},  // DCGAN-64
      {64, 256, 512, 8, 4, 2, 1}, {64, 512, 100, 4, 4, 1, 0}};
  if (argc > 1 && std::string(argv[1]) == "bf16") {
    for (const Geometry& g : layers) bf16_against_f32(g);
    for (const memory::dims& d : std::vector<memory::dims>{{64, 32, 16, 16}, {64, 64, 8, 8}, {64, 128, 4, 4},
                                                           {64, 64, 32, 32}, {64, 128, 16, 16}, {64, 256, 8, 8}}) {
      bf16_reorders(d);
    }
    for (const Geometry& g : layers) bf16_weights(g);
    return 0;
  }
  for (const Geometry& g : layers) {
    for (auto [t, name] : {std::pair{tag::any, "any"}, {tag::nhwc, "nhwc"}, {tag::nChw16c, "nChw16c"}, {tag::nchw, "nchw"}}) {
      primitives(g, t, name);
    }
  }
  for (const Geometry& g : std::vector<Geometry>{{64, 1, 32, 32, 4, 2, 1}, {64, 3, 32, 32, 4, 2, 1},
                                                 {64, 3, 64, 64, 4, 2, 1}, {64, 8, 64, 32, 4, 2, 1},
                                                 {64, 16, 64, 32, 4, 2, 1}}) {
    few_channels(g);
  }
  if (argc > 2 && std::string(argv[1]) == "--json") write_json(argv[2]);
}
