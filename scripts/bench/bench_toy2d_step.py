"""Per-step cost of 2D training: T separate trials (train.py's GANTrainer, one after the other) vs the same
T trials as one batched model (batched_2d), measured side by side in one process.

    python scripts/bench/bench_toy2d_step.py --trials 10 --steps 100 --json step_cost.json

Both sides do what their training loop does per step, host work included (each trial's batch and latents
drawn with numpy, the jitted D+G step(s), the numbers read back); compile and a warm-up are excluded. The
two sides alternate in --rounds blocks of --steps steps, so a change in machine load hits both; --json writes one
record of the docs/data shape (scripts/bench/records.py): rows = the blocks (wall and process-CPU milliseconds per
trial-step, the load average), context = the trials, the steps per block and each side's best block.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import records  # noqa: E402  (beside this file: the record shape of docs/data)
from bench_modes import parse_datasets, positive_int  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    """Build both sides, alternate timed blocks, print and optionally write the per-trial-step costs."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=positive_int, default=10, help="trials T (seeds 0..T-1), default 10")
    parser.add_argument("--steps", type=positive_int, default=50, help="steps per timed block (default 50)")
    parser.add_argument("--rounds", type=positive_int, default=2, help="timed blocks per side (default 2)")
    parser.add_argument("--dataset", type=parse_datasets, default=["ring8"], help="one 2D dataset (default ring8)")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                        help="extra train.py override (repeatable), e.g. runtime.threads=1")
    parser.add_argument("--json", type=Path, help="write the measurements as JSON here")
    parser.add_argument("--label", help="what this run is (a variant's name, the record's label)")
    parser.add_argument("--append", action="store_true", help="add this run's record to the --json file's")
    args = parser.parse_args(argv)
    started, load_before = records.utc_now(), records.load_average()
    clock, cpu_start = time.perf_counter(), time.process_time()

    from batched_2d import BatchedTrainer

    from gan.config.schema import compose_config, to_config
    from gan.core.streams import Purpose, latents
    from gan.training.loop import GANTrainer
    from gan.training.runtime import setup_runtime
    from gan.training.tasks import PointData

    base = [f"experiment={args.dataset[0]}", "diagnostics.enabled=false", *args.override]
    conf = to_config(compose_config(base))
    setup_runtime(conf.runtime)
    seeds = list(range(args.trials))
    separate = [(GANTrainer(to_config(compose_config(base + [f"seed={s}"])), 2),
                 PointData(conf.data.name, conf.train.batch_size, s), s) for s in seeds]
    batched = BatchedTrainer(conf, seeds)
    position = {"separate": 0}

    def separate_block(n: int) -> None:
        for step in range(position["separate"], position["separate"] + n):
            for trainer, data, seed in separate:
                trainer.train_step(data.batch(step),
                                   latents(seed, step, Purpose.Z, conf.train.batch_size, conf.model.nz))
        position["separate"] += n

    def batched_block(n: int) -> None:
        batched.train_to(batched.step + n)

    sides = {"separate": separate_block, "batched": batched_block}
    for block in sides.values():  # compile and warm up
        block(2)
    blocks = []
    for _ in range(args.rounds):
        for name, block in sides.items():
            wall, cpu = time.perf_counter(), time.process_time()
            block(args.steps)
            trial_steps = args.steps * args.trials
            blocks.append({"side": name, "wall_ms_per_trial_step": 1e3 * (time.perf_counter() - wall) / trial_steps,
                           "cpu_ms_per_trial_step": 1e3 * (time.process_time() - cpu) / trial_steps,
                           "load_avg_1min": os.getloadavg()[0]})
            print(json.dumps(blocks[-1]), flush=True)
    summary = {name: {key: min(b[key] for b in blocks if b["side"] == name)
                      for key in ("wall_ms_per_trial_step", "cpu_ms_per_trial_step")} for name in sides}
    for kind in ("wall", "cpu"):
        key = f"{kind}_ms_per_trial_step"
        summary[f"speedup_{kind}"] = summary["separate"][key] / summary["batched"][key]
    print(json.dumps(summary, indent=1))
    if args.json:
        command = None if argv is None else [Path(sys.executable).name, "scripts/bench/bench_toy2d_step.py", *argv]
        records.write(args.json, [records.record(
            blocks, command=command, context={"trials": args.trials, "steps_per_block": args.steps, "best": summary},
            started=started, load_before=load_before, wall_s=time.perf_counter() - clock,
            cpu_s=time.process_time() - cpu_start, label=args.label)], append=args.append)
    return 0


if __name__ == "__main__":
    sys.exit(main())
