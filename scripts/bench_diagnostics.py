"""Overhead of dead-channel diagnostics on a full DCGAN training step (D step + G step), side by side.

Two GANTrainers from the default config (train.py's composition, data=shapes for fixed random images)
run in the same process, one with `gan.diagnostics.attach` on G and D, one without; their steps are
timed alternately so both see the same machine load. The per-check host cost (read + reset the probes,
build the record, write TensorBoard and diagnostics.jsonl) is timed too and spread over the interval:

    overhead = (step_with - step_without + check_cost / interval) / step_without

    python scripts/bench_diagnostics.py --json bench_diagnostics.json [--interval 100] [--batch-size 64]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("GLOG_v", "3")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from hydra import compose, initialize_config_dir  # noqa: E402
from mindspore import Tensor  # noqa: E402
from tensorboardX import SummaryWriter  # noqa: E402

from gan.diagnostics import DeadChannelTracker, DiagnosticsLogger, attach  # noqa: E402
from gan.training import GANTrainer, latents, setup_runtime, to_config  # noqa: E402


def main(argv: list[str] | None = None) -> dict:
    """Time both trainers, print a summary line, write the result to --json."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", required=True, type=Path, help="write the result here")
    parser.add_argument("--model", default="dcgan32", choices=("dcgan32", "dcgan64"))
    parser.add_argument("--conv-impl", default="auto", choices=("auto", "native", "gemm"))
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--interval", type=int, default=100, help="diagnostics interval (steps per check)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps per trainer (graph compilation)")
    parser.add_argument("--steps", type=int, default=8, help="timed steps per trainer (medians are reported)")
    parser.add_argument("--checks", type=int, default=5, help="timed checks")
    args = parser.parse_args(argv)
    for key in ("batch_size", "interval", "steps", "checks"):
        if getattr(args, key) < 1:
            parser.error(f"--{key.replace('_', '-')}={getattr(args, key)} must be >= 1")

    overrides = [f"model={args.model}", "data=shapes", f"train.batch_size={args.batch_size}",
                 f"model.conv_impl={args.conv_impl}"]
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
        cfg = to_config(compose(config_name="config", overrides=overrides))
    setup_runtime(cfg.runtime)
    size, batch, channels = cfg.model.image_size, cfg.train.batch_size, cfg.data.channels
    real = np.random.default_rng(0).uniform(-1, 1, (batch, channels, size, size)).astype(np.float32)
    plain, probed = GANTrainer(cfg, channels), GANTrainer(cfg, channels)
    probes = attach(probed.g, Tensor(latents(cfg.seed, 0, 1, 2, cfg.model.nz)), "G")
    probes += attach(probed.d, Tensor(real[:2]), "D")

    times: dict[str, list[float]] = {"without": [], "with": []}
    for i in range(args.warmup + args.steps):
        z = latents(cfg.seed, i, 1, batch, cfg.model.nz)
        for key, trainer in (("without", plain), ("with", probed)):
            t0 = time.perf_counter()
            trainer.train_step(real, z)
            if i >= args.warmup:
                times[key].append(time.perf_counter() - t0)

    tracker = DeadChannelTracker()
    check_times = []
    with tempfile.TemporaryDirectory() as run_dir:
        writer = SummaryWriter(str(Path(run_dir) / "tensorboard"))
        logger = DiagnosticsLogger(writer, run_dir)
        for i in range(args.checks):
            probed.train_step(real, latents(cfg.seed, i, 1, batch, cfg.model.nz))
            t0 = time.perf_counter()
            record = tracker.check(i, probes)
            logger.log(record)
            check_times.append(time.perf_counter() - t0)
        writer.close()

    without, with_probes = statistics.median(times["without"]), statistics.median(times["with"])
    check = statistics.median(check_times)
    result = {
        "benchmark": "diagnostics_overhead", "model": args.model, "conv_impl": args.conv_impl,
        "batch_size": batch, "interval": args.interval, "steps": args.steps, "layers": len(probes),
        "step_s_without": without, "step_s_with": with_probes, "check_s": check,
        "overhead_pct_per_step": 100 * (with_probes - without) / without,
        "overhead_pct_at_interval": 100 * (with_probes - without + check / args.interval) / without,
        "step_s_all_without": times["without"], "step_s_all_with": times["with"],
        "last_record_dead_frac": {k: v["dead_frac"] for k, v in record["layers"].items()},
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2))
    print(f"{args.model} batch {batch}: step {without * 1e3:.0f} ms without, {with_probes * 1e3:.0f} ms with "
          f"diagnostics; check {check * 1e3:.0f} ms every {args.interval} steps -> overhead "
          f"{result['overhead_pct_at_interval']:.1f}%")
    return result


if __name__ == "__main__":
    main()
