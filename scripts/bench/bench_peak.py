"""This machine's limit: oneDNN's peak FLOP/s in float32 and bfloat16 on the threads a run uses, and copy bandwidth.

Two large problems per precision through MindSpore's own oneDNN (the library the training kernels call), on the
same threadpool as those kernels (scripts/bench/bench_peak.cc, built like them): a GEMM (oneDNN matmul, 2048^3) and a
convolution (DCGAN-64's largest layer, batch 64, 256 -> 512 channels, 4x4, stride 2, 16x16 -> 8x8). bfloat16
means bf16 inputs with float32 accumulation, as in training. Calls are timed round-robin across the four
problems (the machine is shared), `--rounds` rounds of `--reps` executions; `peak_gflops` is the best call, the
one least disturbed by other work, `median_gflops` the typical one. A precision's peak (`peak_of`) is the
better of its GEMM and its convolution. The copy bandwidth is scripts/bench/bench_op.py's baseline (numpy copy of
64 MB, one thread and one per core, the faster), counting one read and one write.

Every record names the CPU (model, the flags that decide the kernels: avx512_bf16, amx_bf16, ...), oneDNN's
instruction set and implementation per problem, the threads and the load average before and after.

    python scripts/bench/bench_peak.py --json docs/data/bench_peak.json [--threads 2] [--rounds 3] [--reps 3]
"""
from __future__ import annotations

import argparse
import ctypes
import functools
import os
import platform
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

os.environ.setdefault("GLOG_v", "3")

import numpy as np  # noqa: E402

from gan.core.atomic import write_json_atomic  # noqa: E402

PROBE = Path(__file__).resolve().parent / "bench_peak.cc"
GEMM = (2048, 2048, 2048)  # m, n, k
CONV = (64, 256, 512, 16, 4, 2, 1)  # batch, in channels, out channels, input side, kernel, stride, padding
PRECISIONS = ("fp32", "bf16")
CPU_FLAGS = ("avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16", "avx512_fp16",
             "amx_tile", "amx_bf16", "amx_int8", "amx_fp16")
COPY_BYTES = 64 << 20


def gemm_flops(m: int, n: int, k: int) -> float:
    return 2.0 * m * n * k


def conv_flops(n: int, ic: int, oc: int, hw: int, k: int, s: int, p: int) -> float:
    ho = (hw + 2 * p - k) // s + 1
    return 2.0 * n * oc * ic * k * k * ho * ho


PROBLEMS = {"gemm": ("PeakMatmul", GEMM, gemm_flops(*GEMM)), "conv": ("PeakConv", CONV, conv_flops(*CONV))}


CPUINFO_IDS = {"vendor_id": "vendor", "cpu family": "family", "model": "model_number"}


def cpu_info(cpuinfo: Path = Path("/proc/cpuinfo")) -> dict:
    """The CPU model, vendor, family and model number (a virtual machine's model name may be only "AMD EPYC":
    the family tells Zen 3 (25) from Zen 5 (26)) and the flags among CPU_FLAGS that the first processor has."""
    model, ids, flags = platform.processor() or platform.machine(), {}, set()
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        text = ""
    for line in text.split("\n\n", 1)[0].splitlines():  # the first processor's block
        key, _, value = (part.strip() for part in line.partition(":"))
        if key == "model name":
            model = value
        elif key in CPUINFO_IDS:
            ids[CPUINFO_IDS[key]] = value
        elif key == "flags":
            flags = set(value.split())
    return {"model": model, **ids, "flags": [f for f in CPU_FLAGS if f in flags], "cpus": os.cpu_count()}


def load_average() -> list[float]:
    return [round(v, 2) for v in os.getloadavg()]


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
    """The peak record: CPU, oneDNN, threads, load, and per (problem, precision) the call times and GFLOP/s."""
    from ops import onednn

    before = load_average()
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
    return {"cpu": cpu_info(), "onednn": {**onednn.dnnl_info(), "isa": isa.name, "bf16_dot": isa.bf16_dot},
            "threads": threads, "load_average_before": before, "load_average_after": load_average(),
            "problems": problems, "copy_gbps": copy_gbps(threads),
            "peak_gflops": {p: peak_of({"problems": problems}, p) for p in PRECISIONS}}


def peak_of(record: dict, precision: str) -> float | None:
    """A precision's peak GFLOP/s in a bench_peak record: the better of its GEMM and convolution."""
    values = [p["peak_gflops"] for p in record["problems"] if p["precision"] == precision and p["peak_gflops"]]
    return max(values) if values else None


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", required=True, type=Path, help="write the record here")
    parser.add_argument("--threads", type=int, default=None,
                        help="worker threads (default: what a training run uses, ops.api.num_threads)")
    parser.add_argument("--rounds", type=int, default=3, help="round-robin rounds over the four problems")
    parser.add_argument("--reps", type=int, default=3, help="timed calls per problem and round")
    args = parser.parse_args(argv)
    for name in ("rounds", "reps") + (("threads",) if args.threads is not None else ()):
        if getattr(args, name) < 1:
            parser.error(f"--{name}={getattr(args, name)} must be >= 1")
    from ops.api import num_threads

    record = measure(args.threads or num_threads(), args.rounds, args.reps)
    print(f"{record['cpu']['model']} ({', '.join(record['cpu']['flags'])}), oneDNN {record['onednn']['version']} "
          f"{record['onednn']['isa']}, {record['threads']} threads, load {record['load_average_before']}")
    for p in record["problems"]:
        print(f"  {p['problem']:4s} {p['precision']:4s} peak {p['peak_gflops'] or 0:8.1f} GFLOP/s  median "
              f"{p['median_gflops'] or 0:8.1f}  ({p['impl']})")
    print(f"  copy {record['copy_gbps']:.1f} GB/s; peak fp32 {record['peak_gflops']['fp32']} bf16 "
          f"{record['peak_gflops']['bf16']} GFLOP/s")
    write_json_atomic(args.json, record, indent=2)
    return record


if __name__ == "__main__":
    main()
