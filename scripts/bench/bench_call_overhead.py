"""Where the time of one call of our element-wise op through MindSpore goes, for ELU and LeakyReLU side by side.

For each kind (elu, leaky_relu), at one size (default 16M float32), timed round-robin after two warm-up calls:
  ms        the op through MindSpore as scripts/bench/bench_op.py times it: `ms.jit(forward)(x).asnumpy()`
  clocked   the same graph with the kernel entry wrapped by scripts/bench/kernel_clock.cc, which records the kernel's
            own start and end (CLOCK_MONOTONIC, the clock of time.perf_counter): each call splits into `launch`
            (Python call -> kernel start), `kernel` and `return` (kernel end -> asnumpy() returned); `outside` is
            launch + return, what MindSpore adds to the kernel; `minflt` the process's minor page faults per call
            (a fresh 64 MB output would fault every page); `same_bits`: its output is the op's, bit for bit
  alone_huge / alone_4k  the kernel entry alone (ctypes, as scripts/bench/bench_kernel.py) on an input and an output at
            the same offset within their pages as MindSpore's (16 bytes past a page boundary, as malloc's mmap
            returns), on transparent huge pages (madvise, as numpy uses for large arrays) or on 4 KiB pages (as
            MindSpore's buffers are: THP is `madvise` here and MindSpore does not ask)
  tiny      the op through MindSpore on 16 elements: the fixed cost of one call (and `builtin_tiny`, MindSpore's own
            nn.ELU / nn.LeakyReLU on the same 16 elements)
Medians and minima in ms, the load average before and after, and every sample in the JSON.

    python scripts/bench/bench_call_overhead.py [--n 16777216] [--repeats 30] --json PATH
"""
from __future__ import annotations

import argparse
import ctypes
import mmap
import os
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Callable, NamedTuple

os.environ.setdefault("GLOG_v", "3")

import mindspore as ms  # noqa: E402
import numpy as np  # noqa: E402
from mindspore import nn  # noqa: E402
from mindspore import ops as msops  # noqa: E402

from gan.core.atomic import write_json_atomic  # noqa: E402
from ops import build, elu, leaky_relu, params  # noqa: E402
from ops._custom import num_threads, same  # noqa: E402

CLOCK_SOURCE = Path(__file__).resolve().parent / "kernel_clock.cc"
PAGE_OFFSET = 16  # bytes past a page boundary: where malloc's mmap'ed chunks (MindSpore's 64 MB buffers) start
TINY = 16


class Kind(NamedTuple):
    """One op: our forward, its kernel entry and ActParams slope, MindSpore's built-in equivalent."""

    forward: Callable[[ms.Tensor], ms.Tensor]
    entry: str
    slope: float
    builtin: Callable[[], nn.Cell]


def _elu(x: ms.Tensor) -> ms.Tensor:
    return elu(x, 1.0)


def _leaky_relu(x: ms.Tensor) -> ms.Tensor:
    return leaky_relu(x, 0.2)


KINDS = {"elu": Kind(_elu, "EluForward", 1.0, lambda: nn.ELU(1.0)),
         "leaky_relu": Kind(_leaky_relu, "LeakyReluForwardSelect", 0.2, lambda: nn.LeakyReLU(0.2))}


def clock_library() -> ctypes.CDLL:
    """kernel_clock.cc built (cached) like the kernels, pointed at this checkout's kernel library."""
    path = build.library_path("kernel_clock", (CLOCK_SOURCE,), (CLOCK_SOURCE,))
    lib = ctypes.CDLL(path)
    status = lib.KernelClockOpen(build.library_path().encode())
    if status != 0:
        why = "cannot open it" if status < 0 else f"{status} of the wrapped entries are missing from it"
        raise RuntimeError(f"{path}: KernelClockOpen({build.library_path()}): {why}")
    lib.clock_path = path
    return lib


def read_stamps(lib: ctypes.CDLL) -> list[tuple[float, float]]:
    """The (start, end) ms of the kernel calls since the last read."""
    out = (ctypes.c_double * 64)()
    count = lib.KernelClockRead(out, 32)
    return [(out[2 * k], out[2 * k + 1]) for k in range(count)]


def page_buffer(n: int, huge: bool) -> np.ndarray:
    """n float32 zeros PAGE_OFFSET bytes into a fresh anonymous mapping, madvise'd to huge pages or not."""
    region = mmap.mmap(-1, 4 * n + mmap.PAGESIZE)
    if huge:
        region.madvise(mmap.MADV_HUGEPAGE)
    array = np.frombuffer(region, np.float32, n, PAGE_OFFSET)
    array[:] = 0.0  # touch every page now, not in a timed call
    return array


def kernel_call(lib: ctypes.CDLL, entry: str, slope: float, x: np.ndarray, out: np.ndarray) -> Callable[[], None]:
    """A callable running a forward entry on x into out (as scripts/bench/bench_kernel.py, same threads as the op)."""
    scalars = params.pack("act", slope=slope, clamp=np.inf, threads=num_threads()).asnumpy()
    arrays = [x, scalars, out]
    shapes = [(ctypes.c_int64 * 1)(a.size) for a in arrays]
    args = (3, (ctypes.c_void_p * 3)(*[a.ctypes.data for a in arrays]), (ctypes.c_int * 3)(1, 1, 1),
            (ctypes.POINTER(ctypes.c_int64) * 3)(*[ctypes.cast(s, ctypes.POINTER(ctypes.c_int64)) for s in shapes]),
            (ctypes.c_char_p * 3)(*[str(a.dtype).encode() for a in arrays]), None, None)
    function = getattr(lib, entry)

    def run() -> None:
        if function(*args) != 0:
            raise RuntimeError(f"{entry} returned an error")
    run.keep_alive = (arrays, shapes)
    return run


def jitted(forward: Callable[[ms.Tensor], ms.Tensor], x: ms.Tensor) -> Callable[[], np.ndarray]:
    """`ms.jit(forward)(x).asnumpy()` as a callable: what bench_op.py times."""
    fn = ms.jit(forward)
    return lambda: fn(x).asnumpy()


def clocked_forward(clock: ctypes.CDLL, kind: Kind) -> Callable[[ms.Tensor], ms.Tensor]:
    """The kind's forward with its kernel entry replaced by the clock wrapper (same inputs, same scalars)."""
    op = msops.Custom(f"{clock.clock_path}:Clock{kind.entry}", out_shape=same, out_dtype=same, func_type="aot")
    scalars = params.pack("act", slope=kind.slope, clamp=np.inf, threads=num_threads())

    def forward(x: ms.Tensor) -> ms.Tensor:
        return op(x, scalars)
    return forward


def builtin_forward(kind: Kind) -> Callable[[ms.Tensor], ms.Tensor]:
    """MindSpore's own equivalent of the kind as a plain function for ms.jit."""
    cell = kind.builtin()

    def forward(x: ms.Tensor) -> ms.Tensor:
        return cell(x)
    return forward


def median_min(samples: list[float], unit: str = "ms") -> dict[str, float]:
    """Median and minimum of the samples, keys named with the unit."""
    return {f"median_{unit}": statistics.median(samples), f"min_{unit}": min(samples)}


def ms_library() -> ctypes.CDLL:
    """The kernel library MindSpore loads (the same file, so the same worker pool)."""
    return ctypes.CDLL(build.library_path())


def bench(n: int, repeats: int) -> dict:
    """Samples of every measurement (see the module docstring), round-robin over kinds and measurements."""
    clock = clock_library()
    host = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    x, x_tiny = ms.Tensor(host), ms.Tensor(host[:TINY].copy())
    buffers = {}
    for pages in ("huge", "4k"):
        bx, out = page_buffer(n, pages == "huge"), page_buffer(n, pages == "huge")
        bx[:] = host
        buffers[pages] = (bx, out)
    fns: dict[str, Callable[[], object]] = {}
    tiny: dict[str, Callable[[], object]] = {}  # timed in their own round-robin: each after another MindSpore call
    for name, kind in KINDS.items():
        fns[f"{name}_ms"] = jitted(kind.forward, x)
        fns[f"{name}_clocked"] = jitted(clocked_forward(clock, kind), x)
        for pages, (bx, out) in buffers.items():
            fns[f"{name}_alone_{pages}"] = kernel_call(ms_library(), kind.entry, kind.slope, bx, out)
        tiny[f"{name}_tiny"] = jitted(kind.forward, x_tiny)
        tiny[f"{name}_builtin_tiny"] = jitted(builtin_forward(kind), x_tiny)
    for fn in [*fns.values(), *tiny.values()]:
        fn()
        fn()
    same_bits = {name: fns[f"{name}_clocked"]().tobytes() == fns[f"{name}_ms"]().tobytes() for name in KINDS}
    read_stamps(clock)
    samples: dict[str, list[float]] = {key: [] for key in [*fns, *tiny]}
    parts: dict[str, dict[str, list[float]]] = {name: {"launch": [], "kernel": [], "return": [], "outside": [],
                                                      "minflt": []} for name in KINDS}
    load = [os.getloadavg()]
    for _ in range(repeats):
        for key, fn in tiny.items():
            start = time.perf_counter()
            fn()
            samples[key].append((time.perf_counter() - start) * 1e3)
    for _ in range(repeats):
        for key, fn in fns.items():
            faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            start = time.perf_counter() * 1e3
            fn()
            end = time.perf_counter() * 1e3
            samples[key].append(end - start)
            if key.endswith("_clocked"):
                stamps = read_stamps(clock)
                if len(stamps) != 1:
                    raise RuntimeError(f"{key}: one call ran the clocked kernel {len(stamps)} times, expected once")
                (k_start, k_end), = stamps
                p = parts[key.removesuffix("_clocked")]
                p["launch"].append(k_start - start)
                p["kernel"].append(k_end - k_start)
                p["return"].append(end - k_end)
                p["outside"].append(end - start - (k_end - k_start))
                p["minflt"].append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults)
    load.append(os.getloadavg())
    return {"n": n, "dtype": "float32", "repeats": repeats, "threads": num_threads(), "load_average": load,
            "same_bits": same_bits,
            "summary": {key: median_min(v) for key, v in samples.items()},
            "parts": {name: {part: median_min(v, "faults" if part == "minflt" else "ms") for part, v in p.items()}
                      for name, p in parts.items()},
            "samples_ms": samples, "part_samples": parts}


def table(result: dict) -> str:
    """One row per kind: through MindSpore, its parts, and the kernel alone."""
    s, p = result["summary"], result["parts"]
    rows = [f"{'kind':>10} {'ms':>7} {'clocked':>7} {'launch':>6} {'kernel':>6} {'return':>6} {'outside':>7} "
            f"{'minflt':>6} {'alone huge':>10} {'alone 4k':>8} {'tiny':>6} {'builtin tiny':>12}   (medians, ms)"]
    for name in KINDS:
        rows.append(f"{name:>10} {s[f'{name}_ms']['median_ms']:>7.2f} {s[f'{name}_clocked']['median_ms']:>7.2f} "
                    f"{p[name]['launch']['median_ms']:>6.2f} {p[name]['kernel']['median_ms']:>6.2f} "
                    f"{p[name]['return']['median_ms']:>6.2f} {p[name]['outside']['median_ms']:>7.2f} "
                    f"{p[name]['minflt']['median_faults']:>6.0f} {s[f'{name}_alone_huge']['median_ms']:>10.2f} "
                    f"{s[f'{name}_alone_4k']['median_ms']:>8.2f} {s[f'{name}_tiny']['median_ms']:>6.2f} "
                    f"{s[f'{name}_builtin_tiny']['median_ms']:>12.2f}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    """Run the measurements, print the table, write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1 << 24, help="elements (default 16777216)")
    parser.add_argument("--repeats", type=int, default=30, help="timed calls per measurement (default 30)")
    parser.add_argument("--json", type=Path, required=True, help="output file")
    args = parser.parse_args(argv)
    for name, least in (("n", TINY), ("repeats", 1)):  # the tiny calls take the first TINY elements of x
        if getattr(args, name) < least:
            parser.error(f"--{name} must be >= {least}, got {getattr(args, name)}")
    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    result = bench(args.n, args.repeats)
    print(table(result))
    write_json_atomic(args.json, {"command": " ".join(sys.argv), **result})
    return 0


if __name__ == "__main__":
    sys.exit(main())
