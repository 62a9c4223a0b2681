"""Benchmark the project's activations against MindSpore's built-in equivalents and a memory-copy baseline.

For each kind (--kinds, rows of KINDS: leaky_relu, prelu, rrelu, elu), size and dtype: forward and
forward+backward time of every implementation of the kind (LeakyReLU: each formulation; RReLU: eval and
train) and of its MindSpore counterpart (nn.LeakyReLU, nn.PReLU, nn.RReLU in the same mode, nn.ELU), side by
side, all in graph mode (ms.jit), median of repeats after a warm-up, timed round-robin;
forward+backward is ms.value_and_grad of the op (the backward gets dy = ones). Bandwidth counts one read and one
write of the tensor. The copy baseline is the faster of a single-threaded numpy copy (np.copyto) of the same
bytes and the same copy split over one thread per available core (numpy releases the GIL), timed in the
same round-robin, so the op (which runs on every core) is compared with the best copy this machine does.
`floor_ms` is MindSpore's own `x * 1` graph on the same tensor in the same round-robin: what the framework
spends on any call that returns a new tensor of that size; no op's forward can take less.
`fwd2_ms` / `builtin_fwd2_ms` time a graph applying the op twice (op(op(x))): the difference to the one-op graph
is the op's own cost inside a graph, without the per-call cost of the graph's input and output that every
one-op graph pays alike (`in-graph x` in the table: the built-in's difference over ours).
Medians are the headline; `*_min_ms` are the fastest of the repeats, and `min x` the ratios of those: MindSpore's
own CPU kernels (nn.ELU, `x * 1`) took about twice as long in some calls as in others of the same run (two
clusters of times), so the ratio of medians moves with the mix; the ratio
of minima compares both at their best. `fwd_x_paired` / `fwdbwd_x_paired` (`pair x` in the table) are the
median over the repeats of the ratio built-in / ours within one repeat: the two calls of a repeat run back to
back under the same load, and a call that lands in a slow cluster moves only its own repeat's ratio.
`fwd_ratio` / `fwdbwd_ratio` (`fwd x` / `fb x`) are the built-in's median over ours.

The run is one record of scripts/bench/records.py: the machine and load, the settings (sizes, dtypes, kinds,
repeats, copy workers) as its context, one row per (size, kind, dtype, implementation).

`--kinds` picks the benchmarks (one row of KINDS each, comma- or space-separated; every record carries its
`kind`):
  leaky_relu, prelu, rrelu, elu   the above (default leaky_relu)
  qleaky_relu  the int8 LeakyReLU (ops.quantized_leaky_relu, a table lookup) against the fp32 op's forward
               on the same number of elements, both in graph mode, timed round-robin: elements/s and bytes/s
               (one read and one write: 1 byte per element for int8, 4 for fp32); --dtypes does not apply.

    python scripts/bench/bench_op.py [--quick] [--sizes 65536 ...] [--kinds leaky_relu,prelu,rrelu,elu,qleaky_relu]
        --json PATH
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, NamedTuple

os.environ.setdefault("GLOG_v", "3")

import mindspore as ms  # noqa: E402
import numpy as np  # noqa: E402
import records  # noqa: E402
from mindspore import nn  # noqa: E402

from ops import FORMULATIONS, QuantizedLeakyReLU, elu, leaky_relu, prelu, rrelu  # noqa: E402

SLOPE = 0.2
FULL_SIZES = (1 << 16, 1 << 20, 1 << 24, 1 << 26)
QUICK_SIZES = (1 << 16, 1 << 20, 1 << 24)
DTYPES = {"float32": (np.float32, ms.float32), "float16": (np.float16, ms.float16)}
RECORD_KEYS = ("kind", "n", "dtype", "impl", "fwd_ms", "fwdbwd_ms", "fwd_gbps", "builtin_fwd_ms",
               "builtin_fwdbwd_ms", "copy_gbps", "floor_ms", "fwd2_ms", "builtin_fwd2_ms", "fwd_min_ms",
               "fwdbwd_min_ms", "builtin_fwd_min_ms", "builtin_fwdbwd_min_ms", "fwd_x_paired", "fwdbwd_x_paired")
QUANT = (0.05, 3, 0.04, -2)  # in_scale, in_zero_point, out_scale, out_zero_point of the int8 benchmark


def interleaved_times(fns: dict[str, Callable[[], object]], repeats: int, warmup: int = 2) -> dict[str, list[float]]:
    """Wall times in ms of each fn, `repeats` calls each, after warm-up calls (which also compile).

    The functions are timed round-robin, so that load from other processes on a shared machine
    affects all of them alike and the ratios stay meaningful.
    """
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append((time.perf_counter() - start) * 1e3)
    return times


def interleaved_medians(fns: dict[str, Callable[[], object]], repeats: int, warmup: int = 2) -> dict[str, float]:
    """Median wall time in ms of each fn (interleaved_times)."""
    return {name: statistics.median(t) for name, t in interleaved_times(fns, repeats, warmup).items()}


def paired_ratio(theirs: list[float], ours: list[float]) -> float:
    """Median over the repeats of theirs[r] / ours[r] (both timed in the same round of interleaved_times)."""
    return statistics.median(t / o for t, o in zip(theirs, ours, strict=True))


def gbps(nbytes: int, ms_: float) -> float:
    """GB/s for reading and writing nbytes once in ms_ milliseconds."""
    return 2 * nbytes / (ms_ * 1e-3) / 1e9


def jitted_pair(forward: Callable[[ms.Tensor], ms.Tensor], x: ms.Tensor) -> tuple[Callable, Callable]:
    """Callables running the jitted forward and the jitted forward+backward (backward gets dy = ones).

    The forward+backward returns the output and the gradient (ms.value_and_grad), so the compiler cannot
    drop the forward kernel when the backward reads only the input. asnumpy() waits for the result; on
    CPU it is a view of the output, not a copy.
    """
    fwd = ms.jit(forward)
    fwdbwd = ms.jit(ms.value_and_grad(forward))
    return (lambda: fwd(x).asnumpy()), (lambda: [t.asnumpy() for t in fwdbwd(x)])


def twice(forward: Callable[[ms.Tensor], ms.Tensor]) -> Callable[[ms.Tensor], ms.Tensor]:
    """forward applied twice in one function (for ms.jit): one graph input and output, two ops."""
    def chained(x: ms.Tensor) -> ms.Tensor:
        return forward(forward(x))
    return chained


def parallel_copy(dst: np.ndarray, src: np.ndarray, pool: ThreadPoolExecutor, workers: int) -> Callable[[], None]:
    """A callable copying src into dst in `workers` contiguous chunks, one per pool thread."""
    bounds = np.linspace(0, src.size, workers + 1).astype(int)
    chunks = [(dst[lo:hi], src[lo:hi]) for lo, hi in zip(bounds[:-1], bounds[1:])]
    return lambda: list(pool.map(lambda pair: np.copyto(*pair), chunks))


def custom_forward(formulation: str) -> Callable[[ms.Tensor], ms.Tensor]:
    """The project's op with one formulation, as a plain function for ms.jit."""
    def forward(x: ms.Tensor) -> ms.Tensor:
        return leaky_relu(x, SLOPE, formulation=formulation)
    return forward


Forward = Callable[[ms.Tensor], ms.Tensor]


def times_one(x: ms.Tensor) -> ms.Tensor:
    """MindSpore's cheapest element-wise graph (x * 1): the framework's own cost of one call producing a new
    tensor of x's size (launch, output buffer, the pass over memory), the floor under every op here."""
    return x * 1.0


def _leaky_relu(n: int) -> tuple[tuple[int, ...], dict[str, tuple[Forward, Forward]]]:
    """Each formulation of ops.leaky_relu against nn.LeakyReLU."""
    return (n,), {f: (custom_forward(f), nn.LeakyReLU(SLOPE)) for f in FORMULATIONS}


def _prelu(n: int) -> tuple[tuple[int, ...], dict[str, tuple[Forward, Forward]]]:
    """ops.prelu with one shared weight (its gradient reduced in the kernel) against nn.PReLU(channel=1)."""
    weight = ms.Tensor(np.full(1, 0.25, np.float32))

    def forward(x: ms.Tensor) -> ms.Tensor:
        return prelu(x, weight)
    return (1, 1, n), {"kernel": (forward, nn.PReLU(1, 0.25))}


def _rrelu(n: int) -> tuple[tuple[int, ...], dict[str, tuple[Forward, Forward]]]:
    """ops.rrelu in eval and in training (per-element slopes) against nn.RReLU in the same mode."""
    key = ms.Tensor(np.int32([1, 0]))

    def evaluate(x: ms.Tensor) -> ms.Tensor:
        return rrelu(x)

    def train(x: ms.Tensor) -> ms.Tensor:
        return rrelu(x, training=True, key=key)
    builtin_eval, builtin_train = nn.RReLU(), nn.RReLU()
    builtin_eval.set_train(False)
    builtin_train.set_train(True)
    return (n,), {"eval": (evaluate, builtin_eval), "train": (train, builtin_train)}


def _elu(n: int) -> tuple[tuple[int, ...], dict[str, tuple[Forward, Forward]]]:
    """ops.elu against nn.ELU (alpha 1)."""
    def forward(x: ms.Tensor) -> ms.Tensor:
        return elu(x, 1.0)
    return (n,), {"kernel": (forward, nn.ELU(1.0))}


# element-wise kind -> (element count -> (input shape, {impl: (our forward, MindSpore's equivalent)})).
ELEMENTWISE: dict[str, Callable[[int], tuple[tuple[int, ...], dict[str, tuple[Forward, Forward]]]]] = {
    "leaky_relu": _leaky_relu, "prelu": _prelu, "rrelu": _rrelu, "elu": _elu}


def bench_case(kind: str, n: int, dtype: str, repeats: int, pool: ThreadPoolExecutor, workers: int) -> list[dict]:
    """Records for one (kind, size, dtype): one per implementation, each beside its built-in, sharing the copy."""
    np_dtype, _ = DTYPES[dtype]
    shape, impls = ELEMENTWISE[kind](n)
    host = np.random.default_rng(0).standard_normal(n).astype(np_dtype).reshape(shape)
    copy_dst = np.empty_like(host)
    x = ms.Tensor(host)
    fns = {"copy": lambda: np.copyto(copy_dst, host), "copy_mt": parallel_copy(copy_dst.reshape(-1), host.reshape(-1),
                                                                                pool, workers)}
    fns["floor"] = jitted_pair(times_one, x)[0]
    for impl, (ours, builtin) in impls.items():
        fns[f"{impl}_fwd"], fns[f"{impl}_fwdbwd"] = jitted_pair(ours, x)
        fns[f"{impl}_builtin_fwd"], fns[f"{impl}_builtin_fwdbwd"] = jitted_pair(builtin, x)
        fns[f"{impl}_fwd2"] = jitted_pair(twice(ours), x)[0]
        fns[f"{impl}_builtin_fwd2"] = jitted_pair(twice(builtin), x)[0]
    samples = interleaved_times(fns, repeats)
    t = {name: statistics.median(v) for name, v in samples.items()}
    low = {name: min(v) for name, v in samples.items()}
    return [{"kind": kind, "n": n, "dtype": dtype, "impl": impl, "fwd_ms": t[f"{impl}_fwd"],
             "fwdbwd_ms": t[f"{impl}_fwdbwd"], "fwd_gbps": gbps(host.nbytes, t[f"{impl}_fwd"]),
             "fwd_ratio": t[f"{impl}_builtin_fwd"] / t[f"{impl}_fwd"],
             "fwdbwd_ratio": t[f"{impl}_builtin_fwdbwd"] / t[f"{impl}_fwdbwd"],
             "builtin_fwd_ms": t[f"{impl}_builtin_fwd"], "builtin_fwdbwd_ms": t[f"{impl}_builtin_fwdbwd"],
             "copy_gbps": gbps(host.nbytes, min(t["copy"], t["copy_mt"])), "floor_ms": t["floor"],
             "fwd2_ms": t[f"{impl}_fwd2"], "builtin_fwd2_ms": t[f"{impl}_builtin_fwd2"],
             **{f"{key}_min_ms": low[f"{impl}_{key}"] for key in ("fwd", "fwdbwd", "builtin_fwd", "builtin_fwdbwd")},
             **{f"{key}_x_paired": paired_ratio(samples[f"{impl}_builtin_{key}"], samples[f"{impl}_{key}"])
                for key in ("fwd", "fwdbwd")}}
            for impl in impls]


def bench_elementwise(kind: str, n: int, dtypes: list[str], repeats: int, pool: ThreadPoolExecutor,
                      workers: int) -> list[dict]:
    """An element-wise kind (ELEMENTWISE): bench_case for each dtype."""
    return [r for dtype in dtypes for r in bench_case(kind, n, dtype, repeats, pool, workers)]


def bench_qleaky_relu(n: int, dtypes: list[str], repeats: int, pool: ThreadPoolExecutor, workers: int) -> list[dict]:
    """The qleaky_relu kind: one record, the int8 op's forward against the fp32 op's on n elements."""
    codes = np.random.default_rng(0).integers(-128, 128, n, dtype=np.int8)
    q = ms.Tensor(codes)
    x = ms.Tensor((codes.astype(np.float32) - QUANT[1]) * QUANT[0])
    layer = QuantizedLeakyReLU(ms.int8, SLOPE, *QUANT)

    def int8_forward(t: ms.Tensor) -> ms.Tensor:
        return layer(t)

    int8_fwd, fp32_fwd = ms.jit(int8_forward), ms.jit(custom_forward("select"))
    t = interleaved_medians({"int8": lambda: int8_fwd(q).asnumpy(), "fp32": lambda: fp32_fwd(x).asnumpy()}, repeats)
    return [{"kind": "qleaky_relu", "n": n, "dtype": "int8", "impl": "table", "fwd_ms": t["int8"],
             "fwd_gbps": gbps(n, t["int8"]), "elems_per_s": n / (t["int8"] * 1e-3), "fp32_fwd_ms": t["fp32"],
             "fp32_gbps": gbps(4 * n, t["fp32"]), "fp32_elems_per_s": n / (t["fp32"] * 1e-3),
             "speedup": t["fp32"] / t["int8"]}]


def qleaky_table(cases: list[dict]) -> str:
    """Aligned text table of the int8 op next to the fp32 op: ms, elements/s, GB/s, speed-up in elements/s."""
    lines = [f"{'n':>10} {'int8 ms':>8} {'int8 Gel/s':>10} {'int8 GB/s':>9} {'fp32 ms':>8} {'fp32 Gel/s':>10} "
            f"{'fp32 GB/s':>9} {'int8 x':>7}"]
    for r in cases:
        lines.append(f"{r['n']:>10} {r['fwd_ms']:>8.3f} {r['elems_per_s'] / 1e9:>10.2f} {r['fwd_gbps']:>9.1f} "
                    f"{r['fp32_fwd_ms']:>8.3f} {r['fp32_elems_per_s'] / 1e9:>10.2f} {r['fp32_gbps']:>9.1f} "
                    f"{r['speedup']:>7.2f}")
    return "\n".join(lines)


def in_graph_ratio(r: dict) -> float:
    """The built-in's in-graph cost over ours: (builtin_fwd2 - builtin_fwd) / (fwd2 - fwd); nan when ours is <= 0."""
    ours = r["fwd2_ms"] - r["fwd_ms"]
    return (r["builtin_fwd2_ms"] - r["builtin_fwd_ms"]) / ours if ours > 0 else float("nan")


def table(cases: list[dict]) -> str:
    """Aligned text table with the speed-up over nn.LeakyReLU and the share of copy bandwidth."""
    head = (f"{'kind':>10} {'n':>10} {'dtype':>8} {'impl':>7} {'fwd ms':>8} {'fwdbwd ms':>10} {'builtin fwd':>11} "
            f"{'builtin fb':>10} {'fwd x':>6} {'fb x':>6} {'GB/s':>6} {'copy':>6} {'%copy':>6} {'floor ms':>8} "
            f"{'in-graph x':>10} {'min x':>6} {'min fb x':>8} {'pair x':>6} {'pair fb x':>9}")
    lines = [head]
    for r in cases:
        lines.append(f"{r['kind']:>10} {r['n']:>10} {r['dtype']:>8} {r['impl']:>7} "
                    f"{r['fwd_ms']:>8.3f} {r['fwdbwd_ms']:>10.3f} "
                    f"{r['builtin_fwd_ms']:>11.3f} {r['builtin_fwdbwd_ms']:>10.3f} "
                    f"{r['fwd_ratio']:>6.2f} {r['fwdbwd_ratio']:>6.2f} "
                    f"{r['fwd_gbps']:>6.1f} {r['copy_gbps']:>6.1f} {100 * r['fwd_gbps'] / r['copy_gbps']:>5.0f}% "
                    f"{r['floor_ms']:>8.3f} {in_graph_ratio(r):>10.2f} "
                    f"{r['builtin_fwd_min_ms'] / r['fwd_min_ms']:>6.2f} "
                    f"{r['builtin_fwdbwd_min_ms'] / r['fwdbwd_min_ms']:>8.2f} {r['fwd_x_paired']:>6.2f} "
                    f"{r['fwdbwd_x_paired']:>9.2f}")
    return "\n".join(lines)


class Kind(NamedTuple):
    """One benchmark kind: how to measure one size, and how to print its records."""

    bench: Callable[[int, list[str], int, ThreadPoolExecutor, int], list[dict]]
    table: Callable[[list[dict]], str]


KINDS = {**{kind: Kind(functools.partial(bench_elementwise, kind), table) for kind in ELEMENTWISE},
         "qleaky_relu": Kind(bench_qleaky_relu, qleaky_table)}


def kinds_list(text: str) -> list[str]:
    """argparse type: comma-separated names of KINDS."""
    kinds = [k for k in text.split(",") if k]
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or not kinds:
        raise argparse.ArgumentTypeError(f"unknown kind(s) {unknown or [text]}; choose from {','.join(KINDS)}")
    return kinds


def positive_size(text: str) -> int:
    """argparse type: an element count >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"size must be >= 1, got {value}")
    return value


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print the table, write its record (one row per case)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="sizes up to 16M and 3 repeats (under a minute)")
    parser.add_argument("--sizes", type=positive_size, nargs="+", help="element counts (default: by --quick)")
    parser.add_argument("--dtypes", nargs="+", choices=sorted(DTYPES), default=["float32", "float16"])
    parser.add_argument("--kinds", nargs="+", type=kinds_list, default=[["leaky_relu"]],
                        help=f"benchmarks to run, comma- or space-separated, of {','.join(KINDS)} (default leaky_relu)")
    parser.add_argument("--repeats", type=int, help="timed calls per measurement (default 3 quick, 10 full)")
    parser.add_argument("--json", type=Path, required=True, help="output file: the run's record, a row per case")
    args = parser.parse_args(argv)
    args.kinds = [kind for group in args.kinds for kind in group]
    repeats = args.repeats or (3 if args.quick else 10)
    if repeats < 1:
        parser.error(f"--repeats must be >= 1, got {repeats}")
    sizes = args.sizes or (QUICK_SIZES if args.quick else FULL_SIZES)
    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    workers = len(os.sched_getaffinity(0))
    load_before, started = records.load_average(), records.utc_now()
    start, cpu0 = time.perf_counter(), time.process_time()
    rows: list[dict] = []
    with ThreadPoolExecutor(workers) as pool:
        for n in sizes:
            for kind in args.kinds:
                new = KINDS[kind].bench(n, args.dtypes, repeats, pool, workers)
                rows += new
                print(KINDS[kind].table(new).split("\n", 1)[1], flush=True, file=sys.stderr)
    for kind in args.kinds:
        print(KINDS[kind].table([r for r in rows if r["kind"] == kind]))
    context = {"sizes": sizes, "dtypes": args.dtypes, "kinds": args.kinds, "repeats": repeats, "copy_workers": workers}
    records.write(args.json, [records.record(rows, context=context, started=started, load_before=load_before,
                                             wall_s=time.perf_counter() - start, cpu_s=time.process_time() - cpu0)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
