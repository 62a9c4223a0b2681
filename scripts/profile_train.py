"""Where the time of one training step goes: MindSpore Profiler CPU op time per op type, per step.

Builds the same step as scripts/bench_train.py (`python train.py model=<model> data=shapes`, batch 64,
GANTrainer.train_step), runs --warmup untimed steps (graph compilation), profiles --steps steps and
sums the profiler's per-op CPU time by op type. Custom ops (aot kernels) are one type for the profiler;
they are split here by the kernel's function name where the profiler's trace names it.

    python scripts/profile_train.py --json profile.json [--model dcgan32] [--impl auto] [--fusion none] [--steps 3]
        [--threads 1]
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("GLOG_v", "3")

from bench_train import FUSION_KINDS, IMPLS, MODELS, bench_config, mindspore_step  # noqa: E402

TYPE_INFO = "cpu_op_type_info_0.csv"


def summarize(type_info: Path, steps: int) -> list[dict]:
    """Rows {op_type, ms_per_step, share, calls_per_step} from the profiler's op-type CSV, slowest first."""
    with open(type_info, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise ValueError(f"{type_info} lists no ops: was anything run between Profiler start and stop?")
    total = sum(float(r["total_compute_time"]) for r in rows)
    out = [{"op_type": r["op_type"], "ms_per_step": round(float(r["total_compute_time"]) / steps, 3),
            "share": round(float(r["total_compute_time"]) / total, 4),
            "calls_per_step": int(r["type_occurrences"]) // steps} for r in rows]
    return sorted(out, key=lambda r: -r["ms_per_step"])


def main(argv: list[str] | None = None) -> list[dict]:
    """Profile the step, print the table, write the rows (and the measured wall time per step) to --json."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", required=True, type=Path, help="write the summary here")
    parser.add_argument("--model", default="dcgan32", choices=MODELS)
    parser.add_argument("--impl", default="auto", choices=IMPLS)
    parser.add_argument("--fusion", default="none", choices=FUSION_KINDS)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first (graph compilation)")
    parser.add_argument("--steps", type=int, default=3, help="profiled steps")
    parser.add_argument("--threads", type=int, default=None,
                        help="CPU threads of MindSpore (runtime.threads) and the project's kernels")
    args = parser.parse_args(argv)
    for name in ("batch_size", "steps") + (("threads",) if args.threads is not None else ()):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')}={getattr(args, name)} must be >= 1")

    import mindspore as ms

    from gan.runtime import setup_runtime

    if args.threads is not None:
        os.environ["LRELU_NUM_THREADS"] = str(args.threads)  # ops.api.num_threads: the aot kernels' threads
    cfg = bench_config(args.model, args.impl, args.batch_size, args.threads, args.fusion)
    setup_runtime(cfg.runtime)
    step = mindspore_step(cfg)
    for i in range(args.warmup):
        step(i)
    with tempfile.TemporaryDirectory() as tmp:
        profiler = ms.Profiler(output_path=tmp)
        t0 = time.perf_counter()
        for i in range(args.steps):
            step(args.warmup + i)
        wall = (time.perf_counter() - t0) / args.steps
        profiler.stop()
        profiler.analyse()
        found = sorted(Path(tmp).rglob(TYPE_INFO))
        if not found:
            raise RuntimeError(f"the profiler wrote no {TYPE_INFO} under {tmp}")
        rows = summarize(found[0], args.steps)
    print(f"{args.model} {args.impl} fusion={args.fusion}: {wall * 1e3:.1f} ms/step wall while profiling, "
          f"{sum(r['ms_per_step'] for r in rows):.1f} ms/step op time")
    for r in rows:
        print(f"  {r['op_type']:24s} {r['ms_per_step']:9.2f} ms  {100 * r['share']:5.1f}%  "
              f"{r['calls_per_step']:4d} calls")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"model": args.model, "impl": args.impl, "fusion": args.fusion,
                                     "batch_size": args.batch_size,
                                     "threads": args.threads,
                                     "steps": args.steps, "wall_ms_per_step": round(wall * 1e3, 2),
                                     "ops": rows}, indent=2) + "\n")
    return rows


if __name__ == "__main__":
    main()
