"""PacGAN's 2D mode-collapse benchmark per D activation (LeakyReLU slope, PReLU or maxout): modes, % high-quality,
reverse KL.

    python scripts/bench/bench_modes.py --trials 10 --slopes 0,0.01,0.2 --json bench_modes.json

Runs `train.py data=DATASET act.negative_slope=SLOPE seed=TRIAL` in this process (gan.training.loop.run on the
composed config, diagnostics off) for every dataset, slope and trial, and prints a markdown table of
mean +- standard error per (dataset, slope) beside PacGAN's published GAN row (Lin et al. 2018, Table 1).
The slope is the discriminator's (`prelu` in --slopes: act.d_kind=prelu, its weights learned from 0.25;
`maxout`: model.d_maxout=5, PacGAN's own D of maxout units with 5 pieces);
the generator keeps configs/act/toy2d.yaml's ReLU (PacGAN's G). Seeds are --first-seed .. + --trials - 1;
`--merge A.json B.json --json OUT` combines finished reports (e.g. seeds 0-4 and 5-9) into one table.
Trials run seed by seed (every dataset and slope of seed 0, then of seed 1, ...) and --json is rewritten
after each run with `"complete": false`, so a benchmark stopped early leaves a usable partial table.
--json writes one record of the docs/data shape (scripts/bench/records.py): rows = the trials, context = the
planned and finished run counts, `complete`, PacGAN's row, the summary per setting and its table.

--batched trains the trials of each (dataset, slope) together as one batched model (batched_2d: the
same nets, init, batches, optimiser and metrics as the separate runs, within float32 rounding) and
evaluates every trial at each step count of --eval-at, so one run gives the metrics against training length:

    python scripts/bench/bench_modes.py --batched --trials 10 --slopes 0.2 --datasets ring8 --eval-at 2000,10000,50000
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import records  # noqa: E402  (beside this file: the record shape of docs/data)

from gan.config.schema import POINT_DATASETS  # noqa: E402

# PacGAN Table 1, "GAN" row (10 trials): modes captured, % high-quality samples, reverse KL.
PACGAN_GAN = {"ring8": (6.3, 98.2, 0.45), "grid25": (17.3, 94.8, 0.70)}
METRICS = ("modes", "hq_fraction", "reverse_kl")


# --slopes entries that name a D activation instead of a fixed LeakyReLU slope: name -> train.py overrides.
NAMED_D = {"prelu": ["act.d_kind=prelu"], "maxout": ["model.d_maxout=5"]}


def parse_slopes(text: str) -> list[float | str]:
    """'0,0.01,0.2,prelu' -> [0.0, 0.01, 0.2, 'prelu']; each slope in [0, 1), or a name of NAMED_D."""
    try:
        slopes = [s.strip() if s.strip() in NAMED_D else float(s) for s in text.split(",") if s.strip()]
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"--slopes {text!r}: {err}; give comma-separated numbers or "
                                         f"{' / '.join(NAMED_D)}") from err
    if not slopes or any(s not in NAMED_D and not 0 <= s < 1 for s in slopes):
        raise argparse.ArgumentTypeError(f"--slopes {text!r}: give one or more slopes in [0, 1) or "
                                         f"{' / '.join(NAMED_D)}, e.g. 0,0.01,0.2,prelu")
    return slopes


def d_activation(slope: float | str) -> list[str]:
    """train.py overrides that give D the activation of one --slopes entry."""
    return NAMED_D[slope] if slope in NAMED_D else [f"act.negative_slope={slope}"]


def label(slope: float | str) -> str:
    """A --slopes entry as the table shows it: 0.2, prelu, maxout."""
    return slope if isinstance(slope, str) else f"{slope:g}"


def parse_datasets(text: str) -> list[str]:
    """'ring8,grid25' -> ['ring8', 'grid25'], each one of POINT_DATASETS."""
    names = [s.strip() for s in text.split(",") if s.strip()]
    bad = [n for n in names if n not in POINT_DATASETS]
    if not names or bad:
        raise argparse.ArgumentTypeError(f"--datasets {text!r}: allowed names are {list(POINT_DATASETS)}")
    return names


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer >= 1")
    return int(text)


def mean_se(values: list[float]) -> tuple[float, float]:
    """Mean and standard error of the mean (NaN with fewer than 2 values)."""
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, float("nan")
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, math.sqrt(var / n)


def summarize(trials: list[dict]) -> list[dict]:
    """One row per (dataset, slope): mean and standard error of each metric (hq_fraction in %)."""
    rows = []
    def key(r: dict) -> tuple:
        return r["dataset"], r["slope"], r.get("steps")

    for k in dict.fromkeys(key(r) for r in trials):
        group = [r for r in trials if key(r) == k]
        row = {"dataset": k[0], "slope": k[1], "steps": k[2], "trials": len(group),
               "seconds_per_trial": sum(r["seconds"] for r in group) / len(group)}
        for name in METRICS:
            scale = 100.0 if name == "hq_fraction" else 1.0
            row[name], row[f"{name}_se"] = (scale * v for v in mean_se([r[name] for r in group]))
        rows.append(row)
    return rows


def markdown_table(rows: list[dict]) -> str:
    """The summary rows with PacGAN's GAN row after each dataset's slopes."""

    def cell(mean: float, se: float, digits: int) -> str:
        return f"{mean:.{digits}f}" + ("" if math.isnan(se) else f" ± {se:.{digits}f}")

    lines = ["| data | D slope | steps | trials | modes | high-quality % | reverse KL |",
             "|---|---|---|---|---|---|---|"]
    for dataset in dict.fromkeys(r["dataset"] for r in rows):
        for r in (r for r in rows if r["dataset"] == dataset):
            steps = "" if r.get("steps") is None else r["steps"]
            lines.append(f"| {dataset} | {label(r['slope'])} | {steps} | {r['trials']} | "
                         f"{cell(r['modes'], r['modes_se'], 1)} | "
                         f"{cell(r['hq_fraction'], r['hq_fraction_se'], 1)} | "
                         f"{cell(r['reverse_kl'], r['reverse_kl_se'], 2)} |")
        modes, hq, kl = PACGAN_GAN[dataset]
        lines.append(f"| {dataset} | PacGAN GAN (paper) | ~400000 | 10 | {modes} | {hq} | {kl} |")
    return "\n".join(lines) + "\n"


def parse_steps_list(text: str) -> list[int]:
    """'2000,10000' -> [2000, 10000]: strictly increasing integers >= 1."""
    try:
        steps = [positive_int(t.strip()) for t in text.split(",") if t.strip()]
    except argparse.ArgumentTypeError as err:
        raise argparse.ArgumentTypeError(f"--eval-at {text!r}: {err}") from err
    if not steps or steps != sorted(set(steps)):
        raise argparse.ArgumentTypeError(f"--eval-at {text!r}: give increasing step counts, e.g. 2000,10000,50000")
    return steps


@dataclass
class Report:
    """This invocation's record in the making: its command (None: this process's), the settings every trial
    shares (`planned_runs` and PacGAN's row, plus `batched` or the merged files), and when and under what load
    it started, so every rewrite of --json keeps the same start and adds the time spent so far."""
    command: list[str] | None
    context: dict
    started: str = field(default_factory=records.utc_now)
    load_before: float = field(default_factory=records.load_average)
    clock: float = field(default_factory=time.perf_counter)
    cpu: float = field(default_factory=time.process_time)

    def write(self, path: Path, trials: list[dict]) -> None:
        """Write the trials so far as one record at `path` (atomically): rows = the trials, context = the
        settings, `complete` once every planned run is in, the summary per setting and its table."""
        rows = summarize(trials)
        context = {**self.context, "complete": len(trials) == self.context["planned_runs"],
                   "finished_runs": len(trials), "summary": rows, "table": markdown_table(rows)}
        records.write(path, [records.record(trials, command=self.command, context=context, started=self.started,
                                            load_before=self.load_before, wall_s=time.perf_counter() - self.clock,
                                            cpu_s=time.process_time() - self.cpu)])


def run_batched(args: argparse.Namespace, report: Report) -> list[dict]:
    """Every (dataset, slope) with all its trials as one batched model, evaluated at each of args.eval_at."""
    from batched_2d import BatchedTrainer

    from gan.config.schema import compose_config, to_config
    from gan.training.runtime import setup_runtime

    trials = []
    for dataset in args.datasets:
        for slope in args.slopes:
            # train.steps = the last --eval-at: the length train.lr_decay's schedule decays over
            length = [f"train.steps={args.eval_at[-1]}"] if args.eval_at else []
            conf = to_config(compose_config([f"experiment={dataset}", *d_activation(slope),
                                             "diagnostics.enabled=false", *length, *args.override]))
            setup_runtime(conf.runtime)
            start = time.perf_counter()
            seeds = list(range(args.first_seed, args.first_seed + args.trials))
            trainer = BatchedTrainer(conf, seeds)
            for steps in args.eval_at or [conf.train.steps]:
                skipped = trainer.train_to(steps).skipped_steps
                seconds = time.perf_counter() - start
                # with train.ema_beta the metrics are the EMA generator's (as train.py); G's own go under "g_*"
                own = trainer.evaluate(ema=False) if conf.train.ema_beta is not None else None
                for t, metrics in enumerate(trainer.evaluate()):
                    trials.append({"dataset": dataset, "slope": slope, "seed": seeds[t], "steps": steps,
                                   "skipped_steps": int(skipped[t]),
                                   "seconds": seconds / args.trials, "batch_seconds": seconds,
                                   "load_avg_1min": os.getloadavg()[0], **metrics, **prelu_weights(trainer, t),
                                   **({f"g_{k}": v for k, v in own[t].items()} if own else {})})
                    print(json.dumps(trials[-1]), flush=True)
                if args.json:
                    report.write(args.json, trials)
    return trials


def prelu_weights(trainer, trial: int) -> dict:
    """A PReLU D's learned weights of one trial: per layer the mean, min and max over channels ({} otherwise)."""
    from gan.models.checkpoint import D_PREFIX

    arrays = trainer.model.trial_arrays(trial)
    layers = sorted(n for n in arrays if n.startswith(D_PREFIX) and ".act" in n)
    return {"d_prelu": [{"layer": n.split(".")[2], "mean": float(arrays[n].mean()), "min": float(arrays[n].min()),
                         "max": float(arrays[n].max())} for n in layers]} if layers else {}


def merge(paths: list[Path], out: Path | None, command: list[str] | None = None) -> int:
    """Combine the trials of finished reports (the same settings, other seeds) into one report at `out`; its
    context names the files and keeps each source record's command, commit, start and machine."""
    trials, sources = [], []
    for path in paths:
        try:
            runs = records.read(path)
        except records.RecordError as err:
            raise SystemExit(f"--merge: cannot read a bench_modes report ({err})")
        for run in runs:
            context = run["context"]
            if not context.get("complete"):
                raise SystemExit(f"--merge {path}: the report is not complete ({context.get('finished_runs')} of "
                                 f"{context.get('planned_runs')} runs); merge finished reports only")
            trials += run["rows"]
            sources.append({k: run[k] for k in ("command", "commit", "started", "machine")})
    keys = [(r["dataset"], r["slope"], r.get("steps"), r["seed"]) for r in trials]
    if len(set(keys)) != len(keys):
        raise SystemExit(f"--merge {[str(p) for p in paths]}: the same dataset, slope, steps and seed appear twice")
    report = Report(command, {"planned_runs": len(trials), "pacgan_gan": PACGAN_GAN,
                              "merged_from": [str(p) for p in paths], "sources": sources})
    if out:
        report.write(out, trials)
    print(markdown_table(summarize(trials)))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run every (dataset, slope, trial), print the table, optionally write JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=positive_int, default=10,
                        help="seeds FIRST_SEED..FIRST_SEED+TRIALS-1 per slope (default 10)")
    parser.add_argument("--first-seed", type=int, default=0, help="the first trial's seed (default 0)")
    parser.add_argument("--slopes", type=parse_slopes, default=[0.0, 0.01, 0.2],
                        help="D slopes, prelu for a PReLU D, maxout for PacGAN's maxout D (default 0,0.01,0.2)")
    parser.add_argument("--datasets", type=parse_datasets, default=list(POINT_DATASETS), help="default ring8,grid25")
    parser.add_argument("--steps", type=positive_int, help="training steps per run (default: configs/train/toy2d.yaml)")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                        help="extra train.py override for every run (repeatable), e.g. runtime.threads=1")
    parser.add_argument("--out-dir", type=Path, help="keep the run directories here (default: a temporary folder)")
    parser.add_argument("--json", type=Path, help="write per-trial records and the summary as JSON here")
    parser.add_argument("--batched", action="store_true",
                        help="train the trials of each setting as one batched model (batched_2d)")
    parser.add_argument("--eval-at", type=parse_steps_list, metavar="STEPS,...",
                        help="with --batched: evaluate every trial at these step counts (the last is the length)")
    parser.add_argument("--merge", type=Path, nargs="+", metavar="REPORT",
                        help="only combine these finished --json reports into one (written to --json)")
    args = parser.parse_args(argv)
    command = None if argv is None else [Path(sys.executable).name, "scripts/bench/bench_modes.py", *argv]
    if args.merge:
        return merge(args.merge, args.json, command)
    if args.first_seed < 0:
        parser.error(f"--first-seed {args.first_seed}: give a seed >= 0")
    if args.eval_at and not args.batched:
        parser.error("--eval-at needs --batched")
    if args.batched and args.steps is not None:
        parser.error("with --batched give the length as --eval-at STEPS (or several, e.g. 2000,10000)")
    if args.batched:
        report = Report(command, {"planned_runs": len(args.datasets) * len(args.slopes) * args.trials
                                  * len(args.eval_at or [None]), "batched": True, "pacgan_gan": PACGAN_GAN})
        print(markdown_table(summarize(run_batched(args, report))))
        return 0

    from gan.config.schema import compose_config  # heavy imports after argument errors
    from gan.training.loop import run

    runs = [(dataset, slope, trial) for trial in range(args.first_seed, args.first_seed + args.trials)
            for dataset in args.datasets for slope in args.slopes]
    report = Report(command, {"planned_runs": len(runs), "pacgan_gan": PACGAN_GAN})
    trials = []
    with tempfile.TemporaryDirectory(prefix="bench_modes_") as tmp:
        out_dir = args.out_dir or Path(tmp)
        for dataset, slope, trial in runs:
            overrides = [f"experiment={dataset}", *d_activation(slope), f"seed={trial}",
                         "diagnostics.enabled=false", *args.override]
            if args.steps is not None:
                overrides.append(f"train.steps={args.steps}")
            start = time.perf_counter()
            summary = run(compose_config(overrides), out_dir / dataset / f"slope_{label(slope)}" / f"seed_{trial}")
            trials.append({"dataset": dataset, "slope": slope, "seed": trial, "steps": summary.end_step,
                           "seconds": time.perf_counter() - start, "load_avg_1min": os.getloadavg()[0],
                           **summary.metrics})
            print(json.dumps(trials[-1]), flush=True)
            if args.json:
                report.write(args.json, trials)
    print(markdown_table(summarize(trials)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
