"""How long `scripts/dashboard.py` takes on a sweep, and how large the page gets, on synthetic run directories.

Writes a Hydra-like sweep of `--runs` jobs (slopes x 3 seeds, `.hydra/overrides.yaml` each) of `--steps`
steps with the files training writes, in their real formats and sizes: diagnostics.jsonl from the real
`DeadChannelTracker` (per-channel statistics and histograms, a check every `--interval` steps) for the 2D
nets (G 4 x 400, D 3 x 200 channels: more channels than DCGAN-32's 6 layers of 32-256) or DCGAN-32,
losses.jsonl every `--log-every` steps, metrics.jsonl every 500 steps, a 320 x 320 sample scatter, events
in some runs. Then runs the CLI as a user does, in its own process (Python start and imports included),
`--repeats` times, and reports the median wall time and the page size. No training needed.

    python scripts/bench/bench_dashboard.py --json bench_dashboard.json [--runs 30] [--steps 2000] [--shape 2d]
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

os.environ.setdefault("GLOG_v", "3")
ROOT = Path(__file__).resolve().parents[2]

import numpy as np  # noqa: E402
from PIL import Image, ImageDraw  # noqa: E402

from gan.analysis.channels import HIST_BINS, DeadChannelTracker, Histogram, LayerStats  # noqa: E402
from gan.core.atomic import write_text_atomic  # noqa: E402
from gan.run.files import DIAGNOSTICS_FILE, EVENTS_FILE, LOSSES_FILE, METRICS_HISTORY_FILE, append_jsonl, losses_record  # noqa: E402

SHAPES = {"2d": {**{f"G/act{i}": 400 for i in range(4)}, **{f"D/act{i}": 200 for i in range(3)}},
          "dcgan32": {"G/act0": 128, "G/act1": 64, "G/act2": 32, "D/act0": 32, "D/act1": 64, "D/act2": 128}}
SLOPES = (0.0, 0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4)


def _histogram(rng: np.random.Generator) -> Histogram:
    """A plausible fixed-bin histogram (a bump of counts), as the probes record."""
    counts = np.zeros(HIST_BINS)
    centre = rng.integers(30, 70)
    counts[centre - 20:centre + 20] = rng.poisson(200, 40)
    return Histogram.from_sums(counts, np.array([3.0, 4.0]), np.array([10.0, 500.0]))


def write_run(run_dir: Path, slope: float, seed: int, args: argparse.Namespace) -> None:
    """One synthetic job directory with every file the dashboard reads."""
    rng = np.random.default_rng(seed * 1000 + int(slope * 100))
    (run_dir / ".hydra").mkdir(parents=True)
    (run_dir / ".hydra" / "overrides.yaml").write_text(f"- experiment=ring8\n- act.negative_slope={slope}\n"
                                                       f"- seed={seed}\n")
    tracker = DeadChannelTracker()
    layers = SHAPES[args.shape]
    checks = args.steps // args.interval
    for check in range(1, checks + 1):
        stats = {}
        for layer, channels in layers.items():
            dying = int(channels * 0.1 * check / checks)
            neg = rng.uniform(0.2, 0.8, channels)
            neg[:dying] = 1.0
            out, grad = rng.lognormal(0, 0.5, channels), rng.lognormal(0, 0.5, channels)
            if slope == 0:
                out[:dying] = 0.0  # a dead ReLU channel outputs 0; dL/dy still arrives from the next layer
            stats[layer] = LayerStats(neg, out, grad, 2, 1, _histogram(rng), _histogram(rng))
        append_jsonl(run_dir / DIAGNOSTICS_FILE, tracker.update(check * args.interval, stats))
    for step in range(args.log_every, args.steps + 1, args.log_every):
        append_jsonl(run_dir / LOSSES_FILE, losses_record(step, *rng.uniform(0.3, 1.5, 2), *rng.uniform(0.2, 0.8, 2)))
    for step in range(500, args.steps + 1, 500):
        append_jsonl(run_dir / METRICS_HISTORY_FILE, {"step": step, "modes": int(rng.integers(0, 9)),
                                                      "hq_fraction": rng.uniform(0, 0.2),
                                                      "reverse_kl": rng.uniform(0.2, 2.0)})
    if seed == 1:
        append_jsonl(run_dir / EVENTS_FILE, {"step": args.steps // 2, "kind": "resume", "detail": {}})
        append_jsonl(run_dir / EVENTS_FILE, {"step": args.steps // 2, "kind": "recycle",
                                             "detail": {"layer": "D/act1", "channels": [1, 2, 3]}})
    image = Image.new("RGB", (320, 320), "white")
    draw = ImageDraw.Draw(image)
    for x, y in rng.normal(160, 60, (1000, 2)):
        draw.point((float(x), float(y)), fill=(220, 40, 40))
    (run_dir / "samples").mkdir()
    image.save(run_dir / "samples" / f"step_{args.steps:06d}.png")


def main(argv: list[str] | None = None) -> dict:
    """Write the sweep, time the CLI, print a summary line, write the result to --json."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", required=True, type=Path, help="write the result here")
    parser.add_argument("--runs", type=int, default=30, help="jobs: slopes x 3 seeds (default 30)")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--interval", type=int, default=100, help="diagnostics interval (default 100)")
    parser.add_argument("--log-every", type=int, default=10, help="losses.jsonl interval (default 10, the images')")
    parser.add_argument("--shape", choices=sorted(SHAPES), default="2d")
    parser.add_argument("--repeats", type=int, default=3, help="timed CLI runs (the median is reported)")
    args = parser.parse_args(argv)
    for key in ("runs", "steps", "interval", "log_every", "repeats"):
        if getattr(args, key) < 1:
            parser.error(f"--{key.replace('_', '-')}={getattr(args, key)} is not allowed: it must be >= 1")
    if args.interval > args.steps:
        parser.error(f"--interval={args.interval} is larger than --steps={args.steps}: no check would be written")
    with tempfile.TemporaryDirectory() as tmp:
        sweep = Path(tmp) / "sweep"
        for job in range(args.runs):
            write_run(sweep / str(job), SLOPES[job // 3 % len(SLOPES)], job % 3, args)
        input_bytes = sum(p.stat().st_size for p in sweep.rglob("*") if p.is_file())
        page = Path(tmp) / "dashboard.html"
        times, cpu = [], []
        for _ in range(args.repeats):
            start, children = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run([sys.executable, str(ROOT / "scripts" / "dashboard.py"), str(sweep), "--out", str(page)],
                           check=True, capture_output=True, text=True)
            times.append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append(after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime)
        text = page.read_text(encoding="utf-8")
    result = {"runs": args.runs, "steps": args.steps, "interval": args.interval, "log_every": args.log_every,
              "shape": args.shape, "channels_per_run": sum(SHAPES[args.shape].values()),
              "input_mb": input_bytes / 1e6, "render_s": times, "render_s_median": statistics.median(times),
              "cpu_s": cpu, "cpu_s_median": statistics.median(cpu),
              "page_mb": len(text.encode("utf-8")) / 1e6, "images": text.count("<img"),
              "charts": text.count('class="chart"'),
              "load_avg_1min": os.getloadavg()[0]}
    write_text_atomic(args.json, json.dumps(result, indent=1) + "\n")
    print(f"{args.runs} runs x {args.steps} steps ({args.shape}): rendered in {result['render_s_median']:.2f} s "
          f"wall, {result['cpu_s_median']:.2f} s CPU (medians of {args.repeats}), load {result['load_avg_1min']:.1f}, "
          f"page {result['page_mb']:.2f} MB from {result['input_mb']:.1f} MB of run files")
    return result


if __name__ == "__main__":
    main()
