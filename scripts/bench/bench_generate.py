"""Peak memory and time of `scripts/generate.py --npz` for growing --n: batched generation keeps it flat.

Each --n runs in a fresh interpreter (scripts/generate.py's main), which reports its resident-set high-water
mark (VmHWM, the whole process: interpreter, MindSpore, model, one batch, the zip writer).

    python scripts/bench/bench_generate.py outputs/my_run --n 256,10000,100000 --json bench_generate.json
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("GLOG_v", "3")

from gan.core.atomic import write_text_atomic  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]  # the child runs here: scripts/generate.py imports as scripts.generate
CHILD = ("from scripts import generate; from pathlib import Path; "
         "rc = generate.main({argv!r}); "
         "hwm = next(l for l in Path('/proc/self/status').read_text().splitlines() if l.startswith('VmHWM:')); "
         "print(rc, int(hwm.split()[1]) / 1024)")


def measure(checkpoint: str, n: int, batch_size: int) -> dict:
    """One generate.py --npz run of n samples in a fresh process: peak RSS (MiB), seconds, file size."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "samples.npz"
        argv = [checkpoint, "--n", str(n), "--batch-size", str(batch_size), "--npz", str(out)]
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", CHILD.format(argv=argv)], cwd=ROOT,
                              capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - start
        if done.returncode != 0 or not out.is_file():
            raise RuntimeError(f"generate.py --n {n} failed:\n{done.stderr[-2000:]}")
        rc, peak = done.stdout.strip().splitlines()[-1].split()
        if rc != "0":
            raise RuntimeError(f"generate.py --n {n} returned {rc}:\n{done.stderr[-2000:]}")
        return {"n": n, "batch_size": batch_size, "peak_rss_mib": float(peak), "seconds": seconds,
                "npz_bytes": out.stat().st_size}


def main(argv: list[str] | None = None) -> int:
    """Measure each --n, print a table, write the JSON records."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint", help="a .ckpt file or a run directory (as generate.py takes)")
    parser.add_argument("--n", default="256,10000,100000", help="comma-separated sample counts")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--json", type=Path, required=True, help="output file: one record per --n")
    args = parser.parse_args(argv)
    try:
        counts = [int(v) for v in args.n.split(",")]
    except ValueError:
        parser.error(f"--n={args.n!r}: give comma-separated integers, e.g. 256,10000")
    records = [measure(args.checkpoint, n, args.batch_size) for n in counts]
    print(f"{'n':>8} {'peak MiB':>9} {'seconds':>8} {'npz MiB':>8}")
    for r in records:
        print(f"{r['n']:>8} {r['peak_rss_mib']:>9.0f} {r['seconds']:>8.1f} {r['npz_bytes'] / 2 ** 20:>8.0f}")
    write_text_atomic(args.json, json.dumps(records, indent=1) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
