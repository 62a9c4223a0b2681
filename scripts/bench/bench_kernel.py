"""Time the element-wise CPU kernels' C entry points directly (ctypes, no MindSpore), for one or more builds side by
side.

What MindSpore adds to every call (graph launch, output buffer) is the same for every kernel, so comparing kernels
under it blurs a kernel change; this calls the kernel library's entry points on numpy arrays instead: the
LeakyReLU forward (the memory floor of a one-input element-wise op: one read, one write, no arithmetic worth
the name), the ELU forward and the ELU backward, on normal float32 or float16 data (half the inputs negative),
`--threads` worker threads, every (library, entry) timed round-robin after two warm-up calls. Each entry's output must
be the same bits in every library (`same_bits`; a build that changed the results is not a speed-up).

`--clock wall` (default) is what a caller waits; `--clock cpu` is the process's CPU time, which on a busy machine
leaves out the time the threads waited for a core (it includes the workers' short spin after their tiles).

Before/after a kernel change: build the old kernels from a checkout of the old commit
(`PYTHONPATH=OLD python -c "from ops import build; print(build.library_path())"` prints the library's path) and
pass both paths:

    python scripts/bench/bench_kernel.py [--libs OLD.so NEW.so] [--n 16777216] [--dtype float32] [--threads 2]
        [--repeats 30] --json PATH
"""
from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Callable, NamedTuple

import numpy as np

from gan.core.atomic import write_json_atomic


class Entry(NamedTuple):
    """One kernel entry point: its C name, its slope (ActParams.slope) and whether it reads a dy input."""

    function: str
    slope: float
    reads_dy: bool


ENTRIES = {"leaky_relu_fwd": Entry("LeakyReluForwardSelect", 0.2, False),
           "elu_fwd": Entry("EluForward", 1.0, False),
           "elu_bwd": Entry("EluBackward", 1.0, True)}
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def kernel_call(lib: ctypes.CDLL, entry: Entry, x: np.ndarray, dy: np.ndarray, out: np.ndarray,
                threads: int) -> Callable[[], None]:
    """A callable running the entry once on x (and dy) into out (all one dtype); RuntimeError on a non-zero status."""
    scalars = np.array([entry.slope, np.inf, threads, 0.0, 0.0], np.float32).view(np.int32)  # ActParams
    arrays = [x, dy, scalars, out] if entry.reads_dy else [x, scalars, out]
    count = len(arrays)
    shapes = [(ctypes.c_int64 * 1)(a.size) for a in arrays]
    args = (count, (ctypes.c_void_p * count)(*[a.ctypes.data for a in arrays]), (ctypes.c_int * count)(*[1] * count),
            (ctypes.POINTER(ctypes.c_int64) * count)(*[ctypes.cast(s, ctypes.POINTER(ctypes.c_int64)) for s in shapes]),
            (ctypes.c_char_p * count)(*[str(a.dtype).encode() for a in arrays]), None, None)
    function = getattr(lib, entry.function)

    def run() -> None:
        status = function(*args)
        if status != 0:
            raise RuntimeError(f"{entry.function} returned {status}")
    run.keep_alive = (arrays, shapes)  # the argument arrays point into these
    return run


def bench(libs: list[Path], n: int, dtype: str, threads: int, repeats: int, clock: str) -> list[dict]:
    """One record per (library, entry): median and minimum ms over the repeats, the samples, same_bits."""
    rng = np.random.default_rng(0)
    x, dy = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    out = np.zeros(n, dtype)
    loaded = [ctypes.CDLL(str(path)) for path in libs]
    calls = {(str(path), name): kernel_call(lib, entry, x, dy, out, threads)
             for path, lib in zip(libs, loaded) for name, entry in ENTRIES.items()}
    bits: dict[tuple[str, str], np.ndarray] = {}
    for key, call in calls.items():
        call()
        call()
        bits[key] = out.copy()
    now = CLOCKS[clock]
    samples: dict[tuple[str, str], list[float]] = {key: [] for key in calls}
    for _ in range(repeats):
        for key, call in calls.items():
            start = now()
            call()
            samples[key].append((now() - start) * 1e3)
    first = str(libs[0])
    return [{"lib": lib, "entry": name, "n": n, "dtype": dtype, "threads": threads, "clock": clock,
             "median_ms": statistics.median(times), "min_ms": min(times), "samples_ms": times,
             "same_bits": bits[(lib, name)].tobytes() == bits[(first, name)].tobytes()}
            for (lib, name), times in samples.items()]


def table(records: list[dict]) -> str:
    """Aligned text: one row per (library, entry), the median as a multiple of the library's LeakyReLU forward."""
    floor = {r["lib"]: r["median_ms"] for r in records if r["entry"] == "leaky_relu_fwd"}
    rows = [f"{'entry':>15} {'median ms':>10} {'min ms':>8} {'x floor':>8} {'same bits':>9}  lib"]
    for r in records:
        rows.append(f"{r['entry']:>15} {r['median_ms']:>10.3f} {r['min_ms']:>8.3f} "
                    f"{r['median_ms'] / floor[r['lib']]:>8.2f} {str(r['same_bits']):>9}  {r['lib']}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, time the kernels, print the table, write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--libs", type=Path, nargs="+", help="kernel libraries (default: this checkout's build)")
    parser.add_argument("--n", type=int, default=1 << 24, help="elements (default 16777216)")
    parser.add_argument("--dtype", choices=("float32", "float16"), default="float32")
    parser.add_argument("--threads", type=int, default=2, help="worker threads per call (default 2)")
    parser.add_argument("--repeats", type=int, default=30, help="timed calls per (library, entry) (default 30)")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall")
    parser.add_argument("--json", type=Path, required=True, help="output file: one record per (library, entry)")
    args = parser.parse_args(argv)
    for name in ("n", "threads", "repeats"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    if args.libs is None:
        from ops import build
        args.libs = [Path(build.library_path())]
    missing = [str(p) for p in args.libs if not p.is_file()]
    if missing:
        parser.error(f"--libs: no such file {', '.join(missing)}")
    records = bench(args.libs, args.n, args.dtype, args.threads, args.repeats, args.clock)
    print(table(records))
    write_json_atomic(args.json, {"command": " ".join(sys.argv), "load_average": list(os.getloadavg()),
                                  "records": records})
    return 0


if __name__ == "__main__":
    sys.exit(main())
