"""Where the time of one training step goes: MindSpore Profiler CPU op time per op type, per step.

Builds the same step as scripts/bench/bench_train.py (`python train.py model=<model> data=shapes`, batch 64,
GANTrainer.train_step), runs --warmup untimed steps (graph compilation), profiles --steps steps and
sums the profiler's per-op CPU time by op type. Custom ops (aot kernels) are one type for the profiler,
which names them Custom-op<N> without the kernel's function (and reuses those names in the D and G step
graphs), so they stay one row; --onednn splits the oneDNN part of them.

    python scripts/bench/profile_train.py --json profile.json [--model dcgan32] [--impl auto] [--fusion none]
        [--steps 3] [--threads 1] [--onednn] [--precision bf16]

--onednn then runs --steps more steps with oneDNN's verbose mode on (the library MindSpore and the onednn
kernels share) and splits the oneDNN work per primitive: kind, implementation, direction and problem (for
reorders their source and destination layouts), in ms per step and calls per step. The record names the CPU
(scripts/bench/records.py's cpu_info) and the 1-minute load average before and after.
"""
from __future__ import annotations

import argparse
import collections
import csv
import ctypes
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("GLOG_v", "3")

import records  # noqa: E402
from bench_train import FUSION_KINDS, IMPLS, MODELS, PRECISIONS, bench_config, mindspore_step  # noqa: E402

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


def onednn_rows(lines: list[str], steps: int) -> list[dict]:
    """Rows {kind, impl, prop, problem, ms_per_step, calls_per_step} from oneDNN's verbose exec lines
    (`onednn_verbose,v1,primitive,exec,cpu,kind,impl,prop,mds,extra,alg,problem,ms`), slowest first; a
    reorder's problem also names its memory descriptors (source and destination layouts)."""
    total: dict[tuple, list] = collections.defaultdict(lambda: [0.0, 0])
    for line in lines:
        f = line.split(",")
        if len(f) < 13 or f[2:4] != ["primitive", "exec"]:
            continue
        problem = f"{f[8]} {f[-2]}" if f[5] == "reorder" else f[-2]
        total[(f[5], f[6], f[7], problem)][0] += float(f[-1])
        total[(f[5], f[6], f[7], problem)][1] += 1
    rows = [{"kind": k[0], "impl": k[1], "prop": k[2], "problem": k[3], "ms_per_step": round(t / steps, 3),
             "calls_per_step": round(n / steps, 2)} for k, (t, n) in total.items()]
    return sorted(rows, key=lambda r: -r["ms_per_step"])


def onednn_verbose_lines(run) -> list[str]:
    """What oneDNN prints (fd 1) while run() runs with its verbose mode switched on (level 1: executions)."""
    from ops import onednn

    lib, libc = ctypes.CDLL(str(onednn.mindspore_dnnl())), ctypes.CDLL(None)
    with tempfile.TemporaryFile() as out:
        sys.stdout.flush()
        saved = os.dup(1)
        os.dup2(out.fileno(), 1)
        try:
            lib.dnnl_set_verbose(1)
            run()
        finally:
            lib.dnnl_set_verbose(0)
            libc.fflush(None)
            os.dup2(saved, 1)
            os.close(saved)
        out.seek(0)
        return out.read().decode(errors="replace").splitlines()


def main(argv: list[str] | None = None) -> list[dict]:
    """Profile the step, print the table, write the rows (and the measured wall time per step) to --json."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", required=True, type=Path, help="write the summary here")
    parser.add_argument("--model", default="dcgan32", choices=MODELS)
    parser.add_argument("--impl", default="auto", choices=IMPLS)
    parser.add_argument("--fusion", default="none", choices=FUSION_KINDS)
    parser.add_argument("--precision", default="fp32", choices=PRECISIONS)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first (graph compilation)")
    parser.add_argument("--steps", type=int, default=3, help="profiled steps")
    parser.add_argument("--threads", type=int, default=None,
                        help="CPU threads of MindSpore (runtime.threads) and the project's kernels")
    parser.add_argument("--onednn", action="store_true",
                        help="then --steps more steps split per oneDNN primitive (oneDNN's verbose mode)")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                        help="extra train.py override (repeatable), e.g. model.layout=nhwc")
    args = parser.parse_args(argv)
    for name in ("batch_size", "steps") + (("threads",) if args.threads is not None else ()):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')}={getattr(args, name)} must be >= 1")

    import mindspore as ms

    from gan.training.runtime import setup_runtime

    if args.threads is not None:
        os.environ["LRELU_NUM_THREADS"] = str(args.threads)  # ops.api.num_threads: the aot kernels' threads
    cfg = bench_config(args.model, args.impl, args.batch_size, args.threads, args.fusion, args.override,
                       args.precision)
    setup_runtime(cfg.runtime)
    load_before = records.load_average()
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
    print(f"{args.model} {args.impl} fusion={args.fusion} precision={args.precision}: {wall * 1e3:.1f} ms/step wall "
          f"while profiling, "
          f"{sum(r['ms_per_step'] for r in rows):.1f} ms/step op time")
    for r in rows:
        print(f"  {r['op_type']:24s} {r['ms_per_step']:9.2f} ms  {100 * r['share']:5.1f}%  "
              f"{r['calls_per_step']:4d} calls")
    record = {"model": args.model, "impl": args.impl, "fusion": args.fusion, "precision": args.precision,
              "batch_size": args.batch_size, "overrides": args.override,
              "threads": args.threads, "steps": args.steps, "wall_ms_per_step": round(wall * 1e3, 2), "ops": rows}
    if args.onednn:
        first = args.warmup + args.steps
        t0 = time.perf_counter()
        lines = onednn_verbose_lines(lambda: [step(first + i) for i in range(args.steps)])
        record["onednn_wall_ms_per_step"] = round((time.perf_counter() - t0) / args.steps * 1e3, 2)
        record["onednn"] = onednn_rows(lines, args.steps)
        kinds: dict[tuple, float] = collections.defaultdict(float)
        for r in record["onednn"]:
            kinds[(r["kind"], r["prop"])] += r["ms_per_step"]
        print(f"oneDNN: {sum(kinds.values()):.1f} ms/step of {record['onednn_wall_ms_per_step']:.1f} ms/step wall")
        for (kind, prop), ms in sorted(kinds.items(), key=lambda kv: -kv[1]):
            print(f"  {kind:14s} {prop:18s} {ms:9.2f} ms")
    record.update(cpu=records.cpu_info(), load_average_before=load_before, load_average_after=records.load_average())
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(record, indent=2) + "\n")
    return rows


if __name__ == "__main__":
    main()
