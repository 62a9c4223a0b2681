"""Benchmark the fused BatchNorm + LeakyReLU block against the unfused layers, for DCGAN block shapes.

For each BatchNorm block shape of the DCGAN's generator and discriminator at the given image sizes
(batch 64, ngf = ndf = 32 at 32 px and 64 at 64 px, as in configs/model): forward and forward+backward
time (graph mode, training mode, median of round-robin repeats; the backward is ms.grad with respect
to the input, gamma and beta) of

- builtin: nn.BatchNorm2d + nn.LeakyReLU (MindSpore only),
- none:    nn.BatchNorm2d + ops.LeakyReLU (the project's fusion=none),
- bn_act:  ops.BatchNormAct (fusion=bn_act),

and the peak resident memory added by 3 forward+backward calls (compilation included), each impl measured in
a fresh child process. Also times the batch-statistics pass: the in-kernel reduction (BnActStats) vs
MindSpore's mean + var. Whole-step img/s is not measured here: it needs the DCGAN to read `fusion=`.

    python scripts/bench_fusion.py [--quick] [--image-sizes 32 64] --json PATH
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

os.environ.setdefault("GLOG_v", "3")

import mindspore as ms  # noqa: E402
import numpy as np  # noqa: E402
from mindspore import nn  # noqa: E402

from ops import BatchNormAct, BatchNormThenAct  # noqa: E402
from ops.api import num_threads  # noqa: E402
from ops.fused import kernel  # noqa: E402

SLOPE = 0.2
BATCH = 64
WIDTHS = {32: 32, 64: 64}  # image size -> ngf = ndf (configs/model/dcgan32.yaml, dcgan64.yaml)
IMPLS = ("builtin", "none", "bn_act")
DTYPES = {"float32": np.float32, "float16": np.float16}
MEMORY_CALLS = 3


def block_shapes(image_size: int, batch: int = BATCH) -> list[tuple[int, int, int, int]]:
    """Distinct (N, C, H, W) inputs of the BatchNorm layers of the DCGAN G and D at image_size."""
    n, width = {32: 3, 64: 4}[image_size], WIDTHS[image_size]
    gen = [(batch, width * 2 ** (n - 1 - i), 4 * 2 ** i, 4 * 2 ** i) for i in range(n)]
    disc = [(batch, width * 2 ** i, image_size // 2 ** (i + 1), image_size // 2 ** (i + 1)) for i in range(1, n)]
    return sorted(set(gen + disc), key=lambda s: (-s[2], s[1]))


def make_block(impl: str, channels: int) -> nn.Cell:
    """The block under test, in training mode."""
    if impl == "builtin":
        block = nn.SequentialCell([nn.BatchNorm2d(channels), nn.LeakyReLU(SLOPE)])
    elif impl == "none":
        block = BatchNormThenAct(channels, SLOPE)
    else:
        block = BatchNormAct(channels, SLOPE)
    block.set_train(True)
    return block


def block_fns(impl: str, x: ms.Tensor) -> tuple[Callable[[], object], Callable[[], object]]:
    """Callables running the jitted forward and forward+backward of one block on x (asnumpy waits)."""
    block = make_block(impl, x.shape[1])
    fwd = ms.jit(block.construct)
    fwdbwd = ms.jit(ms.grad(block.construct, grad_position=0, weights=block.trainable_params()))
    return (lambda: fwd(x).asnumpy()), (lambda: fwdbwd(x)[0].asnumpy())


def interleaved_medians(fns: dict[str, Callable[[], object]], repeats: int, warmup: int = 2) -> dict[str, float]:
    """Median wall time in ms of each fn after warm-up (which compiles), timed round-robin so that load
    from other processes affects all alike."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) * 1e3 for name, t in times.items()}


def input_tensor(shape: tuple[int, ...], dtype: str) -> ms.Tensor:
    """Seeded normal input of the block."""
    return ms.Tensor(np.random.default_rng(0).standard_normal(shape).astype(DTYPES[dtype]))


def rss_mb() -> float:
    """Current resident set size of this process in MiB."""
    with open("/proc/self/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def measure_peak_mb(impl: str, shape: tuple[int, ...], dtype: str) -> float:
    """Peak RSS (MiB) added by MEMORY_CALLS forward+backward calls of a fresh block (compile included)."""
    x = input_tensor(shape, dtype)
    make_block("builtin", 1)  # load MindSpore's runtime before the baseline
    base = rss_mb()
    _, fwdbwd = block_fns(impl, x)
    for _ in range(MEMORY_CALLS):
        fwdbwd()
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - base


def peak_mb_in_child(impl: str, shape: tuple[int, ...], dtype: str) -> float:
    """measure_peak_mb in a fresh interpreter, so that earlier blocks' memory pools do not count."""
    code = (f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r}); "
            f"sys.path.insert(0, {str(Path(__file__).resolve().parent)!r}); import mindspore as ms; "
            f"ms.set_context(mode=ms.GRAPH_MODE, device_target='CPU'); import bench_fusion as b; "
            f"print(b.measure_peak_mb({impl!r}, {tuple(shape)!r}, {dtype!r}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"memory measurement of {impl} {shape} {dtype} failed:\n{done.stderr[-2000:]}")
    return float(done.stdout.strip().splitlines()[-1])


def bench_block(image_size: int, shape: tuple[int, ...], dtype: str, repeats: int, memory: bool) -> list[dict]:
    """One record per impl for one block shape, timed side by side."""
    x = input_tensor(shape, dtype)
    fns = {}
    for impl in IMPLS:
        fns[f"{impl}_fwd"], fns[f"{impl}_fwdbwd"] = block_fns(impl, x)
    t = interleaved_medians(fns, repeats)
    return [{"image_size": image_size, "shape": list(shape), "dtype": dtype, "impl": impl,
             "fwd_ms": t[f"{impl}_fwd"], "fwdbwd_ms": t[f"{impl}_fwdbwd"],
             "peak_mb": peak_mb_in_child(impl, shape, dtype) if memory else None}
            for impl in IMPLS]


def bench_stats(shape: tuple[int, ...], dtype: str, repeats: int) -> dict:
    """Batch statistics of one input: the fused kernel's reduction pass (which also computes the new
    moving statistics) vs MindSpore's mean and var."""
    x = input_tensor(shape, dtype)
    _, stats_op, scalars = kernel(SLOPE, None, 1.0, True, 1e-5, 0.9, num_threads())
    moving = (ms.Parameter(ms.Tensor(np.zeros(shape[1], np.float32)), name="moving_mean"),
              ms.Parameter(ms.Tensor(np.ones(shape[1], np.float32)), name="moving_var"))

    @ms.jit
    def in_kernel(t: ms.Tensor) -> ms.Tensor:
        return stats_op(t, *moving, scalars)[1]

    @ms.jit
    def reductions(t: ms.Tensor) -> tuple[ms.Tensor, ms.Tensor]:
        t32 = t.astype(ms.float32)
        return t32.mean(axis=(0, 2, 3)), t32.var(axis=(0, 2, 3))

    t = interleaved_medians({"kernel": lambda: in_kernel(x).asnumpy(),
                             "reductions": lambda: reductions(x)[1].asnumpy()}, repeats)
    return {"shape": list(shape), "dtype": dtype, "kernel_ms": t["kernel"], "reductions_ms": t["reductions"]}


def table(records: list[dict]) -> str:
    """Aligned text table; speed-ups are relative to the builtin block of the same shape and dtype."""
    builtin = {(tuple(r["shape"]), r["dtype"]): r for r in records if r["impl"] == "builtin"}
    rows = [f"{'px':>3} {'shape':>18} {'dtype':>8} {'impl':>8} {'fwd ms':>8} {'fwdbwd ms':>10} {'peak MiB':>9} "
            f"{'fwd x':>6} {'fb x':>6}"]
    for r in records:
        b = builtin[(tuple(r["shape"]), r["dtype"])]
        peak = "-" if r["peak_mb"] is None else f"{r['peak_mb']:.1f}"
        rows.append(f"{r['image_size']:>3} {'x'.join(map(str, r['shape'])):>18} {r['dtype']:>8} {r['impl']:>8} "
                    f"{r['fwd_ms']:>8.3f} {r['fwdbwd_ms']:>10.3f} {peak:>9} {b['fwd_ms'] / r['fwd_ms']:>6.2f} "
                    f"{b['fwdbwd_ms'] / r['fwdbwd_ms']:>6.2f}")
    return "\n".join(rows)


def write_json_atomic(path: Path, payload: dict) -> None:
    """Write payload to path through a temporary file in the same directory and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=path.name, suffix=".tmp", delete=False) as f:
        json.dump(payload, f, indent=1)
    os.replace(f.name, path)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print the table, write {"blocks": [...], "stats": [...]} as JSON."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the smallest block at 32 px, 3 repeats, batch 8")
    parser.add_argument("--image-sizes", type=int, nargs="+", choices=sorted(WIDTHS), default=sorted(WIDTHS))
    parser.add_argument("--dtypes", nargs="+", choices=sorted(DTYPES), default=["float32"])
    parser.add_argument("--repeats", type=int, help="timed calls per measurement (default 3 quick, 10 full)")
    parser.add_argument("--no-memory", action="store_true", help="skip the child-process memory measurement")
    parser.add_argument("--json", type=Path, required=True, help="output file")
    args = parser.parse_args(argv)
    repeats = args.repeats if args.repeats is not None else (3 if args.quick else 10)
    if repeats < 1:
        parser.error(f"--repeats must be >= 1, got {repeats}")
    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    cases = [(size, shape) for size in args.image_sizes
             for shape in block_shapes(size, 8 if args.quick else BATCH)]
    if args.quick:
        cases = [min(cases, key=lambda c: np.prod(c[1]))]
    blocks, stats = [], []
    for size, shape in cases:
        for dtype in args.dtypes:
            blocks += bench_block(size, shape, dtype, repeats, not args.no_memory)
            stats.append(bench_stats(shape, dtype, repeats))
            print(table(blocks[-len(IMPLS):]).split("\n", 1)[1], flush=True, file=sys.stderr)
    print(table(blocks))
    print("\nbatch statistics: in-kernel vs MindSpore mean+var (ms)")
    for s in stats:
        print(f"{'x'.join(map(str, s['shape'])):>18} {s['dtype']:>8} {s['kernel_ms']:>8.3f} {s['reductions_ms']:>8.3f}")
    write_json_atomic(args.json, {"blocks": blocks, "stats": stats})
    return 0


if __name__ == "__main__":
    sys.exit(main())
