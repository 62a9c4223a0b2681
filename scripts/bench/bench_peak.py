"""This machine's limit: oneDNN's peak FLOP/s in float32 and bfloat16 on the threads a run uses, and copy bandwidth.

Two large problems per precision through MindSpore's own oneDNN (the library the training kernels call), on the
same threadpool as those kernels (scripts/bench/bench_peak.cc, built like them): a GEMM (oneDNN matmul, 2048^3) and a
convolution (DCGAN-64's largest layer, batch 64, 256 -> 512 channels, 4x4, stride 2, 16x16 -> 8x8). bfloat16
means bf16 inputs with float32 accumulation, as in training. Calls are timed round-robin across the four
problems (the machine is shared), `--rounds` rounds of `--reps` executions; `peak_gflops` is the best call, the
one least disturbed by other work, `median_gflops` the typical one. A precision's peak (`peak_of`) is the
better of its GEMM and its convolution. The copy bandwidth is scripts/bench/bench_op.py's baseline (numpy copy of
64 MB, one thread and one per core, the faster), counting one read and one write.

The run is one record of scripts/bench/records.py (machine: the CPU model and the flags that decide the kernels,
avx512_bf16, amx_bf16, ...; the load average before and after) with one row: oneDNN's version and instruction set,
the threads, each problem's GFLOP/s and implementation, the copy bandwidth and the peak per precision.

    python scripts/bench/bench_peak.py --json docs/data/bench_peak.json [--threads 2] [--rounds 3] [--reps 3]
"""
from __future__ import annotations

import argparse
import ctypes
import functools
import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

os.environ.setdefault("GLOG_v", "3")

import numpy as np  # noqa: E402
import records  # noqa: E402
from records import cpu_info  # noqa: E402,F401  (scripts/bench/slope_study.py imports it from here)

PROBE = Path(__file__).resolve().parent / "bench_peak.cc"
GEMM = (2048, 2048, 2048)  # m, n, k
CONV = (64, 256, 512, 16, 4, 2, 1)  # batch, in channels, out channels, input side, kernel, stride, padding
PRECISIONS = ("fp32", "bf16")
COPY_BYTES = 64 << 20


def gemm_flops(m: int, n: int, k: int) -> float:
    return 2.0 * m * n * k


def conv_flops(n: int, ic: int, oc: int, hw: int, k: int, s: int, p: int) -> float:
    ho = (hw + 2 * p - k) // s + 1
    return 2.0 * n * oc * ic * k * k * ho * ho


PROBLEMS = {"gemm": ("PeakMatmul", GEMM, gemm_flops(*GEMM)), "conv": ("PeakConv", CONV, conv_flops(*CONV))}


@functools.lru_cache(maxsize=None)
def probe() -> ctypes.CDLL:
    from ops import onednn

    lib = ctypes.CDLL(onednn.build_with_onednn("bench_peak", PROBE, ("dnnl_pool.h", "worker_pool.h")))
    for name in ("PeakMatmul", "PeakConv"):
        getattr(lib, name).restype = ctypes.c_int
    return lib


def time_problem(kind: str, precision: str, threads: int, reps: int) -> tuple[list[float], str]:
    """Seconds of `reps` timed calls of one problem, and oneDNN's implementation (or its error)."""
    entry, dims, _ = PROBLEMS[kind]
    seconds = (ctypes.c_double * reps)()
    impl = ctypes.create_string_buffer(256)
    status = getattr(probe(), entry)(int(precision == "bf16"), *(ctypes.c_int64(d) for d in dims),
                                     ctypes.c_int(threads), ctypes.c_int(reps), seconds, impl, len(impl))
    return (list(seconds) if status == 0 else []), impl.value.decode()


def copy_gbps(threads: int, repeats: int = 10) -> float:
    """scripts/bench/bench_op.py's copy baseline at COPY_BYTES: the faster of one numpy copy and `threads` parallel
    ones."""
    from bench_op import gbps, parallel_copy

    src = np.random.default_rng(0).standard_normal(COPY_BYTES // 4).astype(np.float32)
    dst = np.empty_like(src)
    with ThreadPoolExecutor(threads) as pool:
        copies = (lambda: np.copyto(dst, src), parallel_copy(dst, src, pool, threads))
        best = float("inf")
        for _ in range(repeats):
            for copy in copies:
                t0 = time.perf_counter()
                copy()
                best = min(best, (time.perf_counter() - t0) * 1e3)
    return round(gbps(src.nbytes, best), 2)


def measure(threads: int, rounds: int = 3, reps: int = 3) -> dict:
    """The peak row: oneDNN, threads, per (problem, precision) the GFLOP/s, the copy bandwidth, the peaks."""
    from ops import onednn

    times: dict[tuple[str, str], list[float]] = {(k, p): [] for k in PROBLEMS for p in PRECISIONS}
    impls: dict[tuple[str, str], str] = {}
    for _ in range(rounds):
        for key in times:
            seconds, impls[key] = time_problem(*key, threads, reps)
            times[key] += seconds
    problems = []
    for (kind, precision), seconds in times.items():
        flops = PROBLEMS[kind][2]
        problems.append({"problem": kind, "precision": precision, "shape": list(PROBLEMS[kind][1]),
                         "gflop": round(flops / 1e9, 3), "impl": impls[(kind, precision)],
                         "peak_gflops": round(flops / min(seconds) / 1e9, 1) if seconds else None,
                         "median_gflops": round(flops / statistics.median(seconds) / 1e9, 1) if seconds else None,
                         "calls": len(seconds)})
    isa = onednn.cpu_isa()
    return {"onednn": {**onednn.dnnl_info(), "isa": isa.name, "bf16_dot": isa.bf16_dot}, "threads": threads,
            "problems": problems, "copy_gbps": copy_gbps(threads),
            "peak_gflops": {p: peak_of({"problems": problems}, p) for p in PRECISIONS}}


def peak_of(row: dict, precision: str) -> float | None:
    """A precision's peak GFLOP/s in a bench_peak row: the better of its GEMM and convolution."""
    values = [p["peak_gflops"] for p in row["problems"] if p["precision"] == precision and p["peak_gflops"]]
    return max(values) if values else None


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", required=True, type=Path, help="write the record here (scripts/bench/records.py)")
    parser.add_argument("--threads", type=int, default=None,
                        help="worker threads (default: what a training run uses, ops.api.num_threads)")
    parser.add_argument("--rounds", type=int, default=3, help="round-robin rounds over the four problems")
    parser.add_argument("--reps", type=int, default=3, help="timed calls per problem and round")
    args = parser.parse_args(argv)
    for name in ("rounds", "reps") + (("threads",) if args.threads is not None else ()):
        if getattr(args, name) < 1:
            parser.error(f"--{name}={getattr(args, name)} must be >= 1")
    from ops.api import num_threads

    load_before, started = records.load_average(), records.utc_now()
    start, cpu0 = time.perf_counter(), time.process_time()
    row = measure(args.threads or num_threads(), args.rounds, args.reps)
    record = records.record([row], started=started, load_before=load_before, wall_s=time.perf_counter() - start,
                            cpu_s=time.process_time() - cpu0, context={"rounds": args.rounds, "reps": args.reps})
    cpu = record["machine"]
    print(f"{cpu['model']} ({', '.join(cpu['flags'])}), oneDNN {row['onednn']['version']} {row['onednn']['isa']}, "
          f"{row['threads']} threads, load {record['load_avg_1min']}")
    for p in row["problems"]:
        print(f"  {p['problem']:4s} {p['precision']:4s} peak {p['peak_gflops'] or 0:8.1f} GFLOP/s  median "
              f"{p['median_gflops'] or 0:8.1f}  ({p['impl']})")
    print(f"  copy {row['copy_gbps']:.1f} GB/s; peak fp32 {row['peak_gflops']['fp32']} bf16 "
          f"{row['peak_gflops']['bf16']} GFLOP/s")
    records.write(args.json, [record])
    return record


if __name__ == "__main__":
    main()
