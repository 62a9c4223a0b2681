"""The slope study's figures (docs/slope_study.md) as PNG, from the files the project writes.

    python scripts/bench/plot_study.py dead SWEEP_DIR --out docs/img/slope_study_dead.png
    python scripts/bench/plot_study.py hq docs/data/bench_modes_batched_ring8_15k_10trials.json \
        docs/data/bench_modes_batched_grid25_60k_lr_decay.json --out docs/img/slope_study_hq_protocol.png

`dead`: D's dead, dormant and persistently dead channel shares over the training steps, one line per group
of a sweep (the mean over its seeds, a band from the lowest to the highest seed), one column per D layer and
one for D as a whole; read from gan.analysis.sweep.group_summary (the same numbers as groups.json). `hq`: the 2D
benchmark's high-quality fraction against training length per dataset and D slope (mean ± standard error
over the trials) from scripts/bench/bench_modes.py JSON files, with PacGAN's reported level as a dashed line.
Needs matplotlib (`pip install -e '.[docs]'`).
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import records  # noqa: E402  (beside this file: the record shape of docs/data)

from gan.analysis.channels import STAT_TITLES  # noqa: E402
from gan.analysis.sweep import group_summary  # noqa: E402

DEAD_METRICS = ("dead_frac", "dormant_frac", "persistent_frac")


def hq_series(records: list[dict]) -> dict[tuple[str, float | str], list[tuple[int, float, float, int]]]:
    """{(dataset, slope): [(steps, mean %, standard error %, trials)]} of bench_modes records, sorted by steps
    (slope: a number, or a named D such as "prelu" or "maxout", listed after the slopes)."""
    by_key: dict[tuple[str, float | str], dict[int, list[float]]] = {}
    for r in records:
        slope = r["slope"] if isinstance(r["slope"], str) else float(r["slope"])
        by_key.setdefault((r["dataset"], slope), {}).setdefault(int(r["steps"]), []).append(
            100.0 * float(r["hq_fraction"]))
    out = {}
    for key, per_steps in sorted(by_key.items(), key=lambda kv: (kv[0][0], isinstance(kv[0][1], str), str(kv[0][1])
                                                                 if isinstance(kv[0][1], str) else kv[0][1])):
        points = []
        for steps, values in sorted(per_steps.items()):
            mean = sum(values) / len(values)
            se = (math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1) / len(values))
                  if len(values) > 1 else 0.0)
            points.append((steps, mean, se, len(values)))
        out[key] = points
    return out


def hq_figure(runs: list[dict]):
    """One panel per dataset: high-quality % against steps (log axis), PacGAN's GAN row as a dashed line; `runs` are
    the records of bench_modes --json files (their rows the trials, PacGAN's row in their context)."""
    trials = [r for run in runs for r in run["rows"]]
    pacgan = {k: v for run in runs for k, v in run["context"].get("pacgan_gan", {}).items()}
    series = hq_series(trials)
    datasets = sorted({d for d, _ in series})
    if not datasets:
        raise ValueError("no bench_modes records to plot: pass JSON files written by "
                         "scripts/bench/bench_modes.py --json")
    fig, axes = plt.subplots(1, len(datasets), figsize=(5.5 * len(datasets), 4), squeeze=False, sharex=True)
    for ax, dataset in zip(axes[0], datasets):
        for (d, slope), points in series.items():
            if d != dataset:
                continue
            steps, mean, se, n = zip(*points)
            name = f"D {slope}" if isinstance(slope, str) else f"D slope {slope:g}"
            trials = f"{min(n)}-{max(n)}" if min(n) != max(n) else f"{n[0]}"
            ax.errorbar(steps, mean, yerr=se, marker="o", capsize=3, label=f"{name} ({trials} trials)")
        if dataset in pacgan:
            ax.axhline(pacgan[dataset][1], color="grey", linestyle="--", label="PacGAN GAN (paper, ~400k steps)")
        ax.set_xscale("log")
        ax.set_ylim(0, 100)
        ax.set_xlabel("training steps")
        ax.set_ylabel("high-quality samples, % (mean ± s.e.)")
        ax.set_title(dataset)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig


def dead_figure(summary: dict, net: str = "D", metrics: tuple[str, ...] = DEAD_METRICS):
    """Rows = statistics, columns = the net's layers and the net as a whole; one line + min-max band per group."""
    groups = summary["groups"]
    columns = sorted({name for g in groups for name in g["over_time"] if name.split("/")[0] == net},
                     key=lambda name: ("/" not in name, name))
    if not columns:
        raise ValueError(f"no diagnostics of network {net!r} in the sweep: were the runs trained with diagnostics on?")
    fig, axes = plt.subplots(len(metrics), len(columns), figsize=(3.6 * len(columns), 3.0 * len(metrics)),
                             squeeze=False, sharex=True, sharey=True)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for row, metric in enumerate(metrics):
        for col, name in enumerate(columns):
            ax = axes[row][col]
            for i, group in enumerate(groups):
                points = [p for p in group["over_time"].get(name, {}).get(metric, []) if p.get("n")]
                if not points:
                    continue
                steps = [p["step"] for p in points]
                colour = colours[i % len(colours)]
                ax.plot(steps, [100 * p["mean"] for p in points], color=colour, label=group["label"])
                ax.fill_between(steps, [100 * p["min"] for p in points], [100 * p["max"] for p in points],
                                color=colour, alpha=0.15, linewidth=0)
            ax.set_title(f"{name if '/' in name else name + ' (all layers)'}: {STAT_TITLES[metric]}", fontsize=9)
            ax.grid(alpha=0.3)
            if col == 0:
                ax.set_ylabel("% of channels")
            if row == len(metrics) - 1:
                ax.set_xlabel("step")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 3), fontsize=8)
    fig.tight_layout(rect=(0, 0.04 + 0.03 * math.ceil(len(labels) / 3), 1, 1))
    return fig


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="figure", required=True)
    dead = sub.add_parser("dead", help="dead, dormant and persistently dead shares over time per group of a sweep")
    dead.add_argument("sweep_dir", type=Path, help="a Hydra multirun directory (or a folder holding several)")
    dead.add_argument("--net", default="D", choices=("D", "G"))
    dead.add_argument("--out", type=Path, required=True, help="PNG file to write")
    hq = sub.add_parser("hq", help="2D benchmark high-quality fraction against training length")
    hq.add_argument("json", type=Path, nargs="+", help="scripts/bench/bench_modes.py --json outputs")
    hq.add_argument("--out", type=Path, required=True, help="PNG file to write")
    args = parser.parse_args(argv)
    try:
        if args.figure == "dead":
            fig = dead_figure(group_summary(args.sweep_dir), args.net)
        else:
            fig = hq_figure([run for p in args.json for run in records.read(p)])
    except (FileNotFoundError, ValueError, KeyError) as err:
        parser.error(f"{type(err).__name__}: {err}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
