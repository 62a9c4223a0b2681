"""Render every table of measured figures in README.md and docs/*.md from the JSON under docs/data.

A document holds a table between two markers, `<!-- results:NAME -->` and `<!-- /results:NAME -->`; this script
replaces what is between them by what TABLES[NAME] renders from its JSON files, followed by a line naming those
files. One table may appear in several documents. To add a table: write a function of the loaded JSON that
returns markdown, add one row to TABLES, put the two markers where the table goes, and run the script.

    python scripts/bench/render_results.py            # rewrite the documents
    python scripts/bench/render_results.py --check    # exit 1 naming every table whose committed text differs
    python scripts/bench/render_results.py --list     # every table, its JSON and the documents that hold it

Conventions the helpers keep: ± is the standard error over trials (SE) unless a caption says standard
deviation (SD); a row of two trials prints both values, never "± 0.0"; a difference between two variants is
given with its size in standard errors of the difference (`diff_se`). No MindSpore: only the JSON is read.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from dataclasses import dataclass
from statistics import median
from pathlib import Path
from typing import Callable, Sequence

ROOT = Path(__file__).resolve().parents[2]

from gan.analysis.sweep import groups_markdown  # noqa: E402  (MindSpore-free: reads files only)

# A marker is a line of its own (so a page can mention one in running text).
MARKER = re.compile(r"^<!-- results:(?P<name>[\w.-]+) -->\n(?P<body>.*?)^<!-- /results:(?P=name) -->$", re.S | re.M)
OPENING = re.compile(r"^<!-- (/?)results:([\w.-]+) -->$", re.M)


# ---------------------------------------------------------------- statistics and formatting

def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def sd(values: Sequence[float]) -> float:
    """Sample standard deviation (ddof=1); 0 for a single value."""
    if len(values) < 2:
        return 0.0
    m = mean(values)
    return math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))


def se(values: Sequence[float]) -> float:
    """Standard error of the mean: sd / sqrt(n)."""
    return sd(values) / math.sqrt(len(values))


def num(value: float, digits: int) -> str:
    return f"{value:.{digits}f}"


def pm(values: Sequence[float], digits: int, scale: float = 1.0) -> str:
    """mean ± SE for three or more values; both values for two (an SE of two trials is no uncertainty
    estimate, and two equal values would print ± 0.0); the value itself for one."""
    v = [x * scale for x in values]
    if not v:
        return ""
    if len(v) == 1:
        return num(v[0], digits)
    if len(v) == 2:
        return f"{num(v[0], digits)} and {num(v[1], digits)}"
    return f"{num(mean(v), digits)} ± {num(se(v), digits)}"


def span(values: Sequence[float], digits: int, scale: float = 1.0) -> str:
    """min-max of the values (one value when they are all equal)."""
    lo, hi = num(min(values) * scale, digits), num(max(values) * scale, digits)
    return lo if lo == hi else f"{lo}-{hi}"


def diff_se(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """mean(a) - mean(b) and that difference in standard errors of the difference, sqrt(SE_a^2 + SE_b^2)
    (Welch's t without the degrees of freedom); inf when both SEs are 0 and the means differ."""
    d = mean(a) - mean(b)
    s = math.sqrt(se(a) ** 2 + se(b) ** 2)
    return d, (abs(d) / s if s > 0 else (math.inf if d else 0.0))


def compare(name_a: str, a: Sequence[float], name_b: str, b: Sequence[float], digits: int, unit: str,
            scale: float = 1.0) -> str:
    """"name_a - name_b: +d unit (t SE)" for a claim that one variant beats another."""
    d, t = diff_se([x * scale for x in a], [x * scale for x in b])
    t_text = "no spread" if math.isinf(t) else f"{t:.1f} SE"
    return f"{name_a} - {name_b}: {d:+.{digits}f} {unit} ({t_text})"


def compare_stats(name_a: str, a: dict, name_b: str, b: dict, digits: int, unit: str, scale: float = 1.0) -> str:
    """compare() for two summaries of seeds ({"mean", "std", "n"}, as summarize_sweep writes them)."""
    d = (a["mean"] - b["mean"]) * scale
    s = math.sqrt(a["std"] ** 2 / a["n"] + b["std"] ** 2 / b["n"]) * scale
    t_text = "no spread" if s == 0 else f"{abs(d) / s:.1f} SE"
    return f"{name_a} - {name_b}: {d:+.{digits}f} {unit} ({t_text})"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def thousands(n: int) -> str:
    return f"{n:,}"


# ---------------------------------------------------------------- the 2D mode-collapse benchmark (bench_modes.py)

MODES_HEADER = ("modes", "high-quality %", "reverse KL")


def trials(report: dict, steps: int | None = None, slope=None, dataset: str | None = None) -> list[dict]:
    """The records of one setting of a bench_modes.py report, by seed; ValueError when none match."""
    found = [r for r in report["records"] if (steps is None or r["steps"] == steps)
             and (slope is None or r["slope"] == slope) and (dataset is None or r["dataset"] == dataset)]
    if not found:
        raise ValueError(f"no record with steps={steps} slope={slope} dataset={dataset} in {report.get('argv')}")
    return sorted(found, key=lambda r: r["seed"])


def metric(records: list[dict], key: str) -> list[float]:
    return [float(r[key]) for r in records]


def modes_cells(records: list[dict], prefix: str = "") -> list[str]:
    """modes, high-quality % and reverse KL of some trials (mean ± SE, or each value for n <= 2)."""
    return [pm(metric(records, prefix + "modes"), 1), pm(metric(records, prefix + "hq_fraction"), 1, 100),
            pm(metric(records, prefix + "reverse_kl"), 2)]


def pacgan(report: dict, dataset: str) -> list[str]:
    """PacGAN's GAN row (Lin et al. 2018, Table 1) as the report carries it: modes, high-quality %, reverse KL."""
    modes, hq, kl = report["pacgan_gan"][dataset]
    return [f"{modes}", f"{hq}", f"{kl:.2f}"]


SE_CAPTION = ("± is the standard error over the trials; a row of two trials gives both values, one of one trial its "
              "value.")


def per_trial(records: list[dict]) -> str:
    return f"{span(metric(records, 'modes'), 0)}, {span(metric(records, 'hq_fraction'), 1, 100)}"


def grid25_slopes(s0, s001, s02, prelu, maxout) -> str:
    """grid25 at 20,000 steps, one row per D activation, and the differences the slope study draws."""
    at = 20000
    rows_in = [("D slope 0 (ReLU)", s0), ("D slope 0.01", s001), ("D slope 0.2", s02),
               ("D PReLU (`act.d_kind=prelu`, per-channel slopes from 0.25)", prelu),
               ("D maxout, 5 pieces (`model.d_maxout=5`)", maxout)]
    recs = {name: trials(report, at) for name, report in rows_in}
    rows = [[name, len(r), *modes_cells(r), per_trial(r)] for name, r in recs.items()]
    rows.append(["PacGAN GAN (paper, ~400,000 steps)", 10, *pacgan(s0, "grid25"), ""])
    relu, leaky001, leaky02, pr, mx = recs.values()
    hq = lambda r: metric(r, "hq_fraction")  # noqa: E731
    modes = lambda r: metric(r, "modes")  # noqa: E731
    kl = lambda r: metric(r, "reverse_kl")  # noqa: E731
    diffs = [compare("slope 0.2", modes(leaky02), "ReLU", modes(relu), 1, "modes"),
             compare("slope 0.2", kl(leaky02), "ReLU", kl(relu), 2, "reverse KL"),
             compare("slope 0.01", modes(leaky001), "ReLU", modes(relu), 1, "modes"),
             compare("PReLU", hq(pr), "slope 0.2", hq(leaky02), 1, "HQ points", 100),
             compare("maxout", hq(mx), "slope 0.2", hq(leaky02), 1, "HQ points", 100),
             compare("slope 0.2", modes(leaky02), "maxout", modes(mx), 1, "modes")]
    header = ["grid25, 20,000 steps", "trials", *MODES_HEADER, "per trial: modes, HQ %"]
    return (table(header, rows) + "\n\n" + SE_CAPTION + " Differences (in standard errors of the difference; "
            "the maxout ones rest on 2 trials, and its two mode counts are equal): " + "; ".join(diffs) + ".")


def ring8_slopes(s0, s001, s02, prelu, maxout) -> str:
    """ring8 at the 15,000-step protocol, one row per D activation."""
    at = 15000
    rows_in = [("D slope 0 (ReLU)", s0), ("D slope 0.01", s001), ("D slope 0.2", s02),
               ("D PReLU (init 0.25, per channel)", prelu), ("D maxout, 5 pieces (`model.d_maxout=5`)", maxout)]
    recs = {name: trials(report, at) for name, report in rows_in}
    rows = [[name, len(r), *modes_cells(r), per_trial(r)] for name, r in recs.items()]
    rows.append(["PacGAN GAN (paper, ~400,000 steps)", 10, *pacgan(s02, "ring8"), ""])
    relu, leaky001, leaky02, pr, mx = recs.values()
    hq = lambda r: metric(r, "hq_fraction")  # noqa: E731
    kl = lambda r: metric(r, "reverse_kl")  # noqa: E731
    lost = {name: sum(1 for x in r if x["modes"] < 8) for name, r in recs.items()}
    diffs = [compare("slope 0.01", hq(leaky001), "slope 0.2", hq(leaky02), 1, "HQ points", 100),
             compare("slope 0.01", hq(leaky001), "PReLU", hq(pr), 1, "HQ points", 100),
             compare("ReLU", kl(relu), "slope 0.2", kl(leaky02), 2, "reverse KL"),
             compare("ReLU", kl(relu), "slope 0.01", kl(leaky001), 2, "reverse KL"),
             compare("PReLU", kl(pr), "slope 0.2", kl(leaky02), 2, "reverse KL"),
             compare("PReLU", kl(pr), "slope 0.01", kl(leaky001), 2, "reverse KL"),
             compare("maxout", kl(mx), "slope 0.2", kl(leaky02), 2, "reverse KL")]
    lost_text = ", ".join(f"{name.split(' (')[0]} {n} of {len(recs[name])}" for name, n in lost.items())
    header = ["ring8, 15,000 steps", "trials", *MODES_HEADER, "per trial: modes, HQ %"]
    return (table(header, rows) + "\n\n" + SE_CAPTION + " Trials with fewer than 8 modes: " + lost_text
            + ". Differences: " + "; ".join(diffs) + ".")


def maxout_early(maxout, s02, s001, prelu) -> str:
    """ring8 high-quality share at 5,000 and 10,000 steps (points inside the 15,000-step runs)."""
    rows = []
    for steps in (5000, 10000):
        cells = [pm(metric(trials(r, steps), "hq_fraction"), 1, 100) for r in (maxout, s02, s001, prelu)]
        rows.append([thousands(steps), *cells])
    diffs = [compare("maxout", metric(trials(maxout, s), "hq_fraction"), "slope 0.01",
                     metric(trials(s001, s), "hq_fraction"), 1, f"HQ points at {thousands(s)}", 100)
             for s in (5000, 10000)]
    header = ["ring8, steps (of a 15,000-step run)", "maxout D (3 trials)", "slope 0.2 (10)", "slope 0.01 (10)",
              "PReLU (10)"]
    return table(header, rows) + "\n\nHigh-quality %; " + SE_CAPTION + " " + "; ".join(diffs) + "."


def protocol_length(ring_const, ring15, one, one_gonce, grid10, grid20_old, grid20, grid60) -> str:
    """The 2D benchmark's quality against training length: the constant rate, the decaying-rate protocol."""
    spec = [("ring8, constant rate", ring_const, 10000), ("ring8, decaying rate", ring15, 15000),
            ("ring8, decaying rate, `train.py`", one, 15000),
            ("the same, G's forward once per step", one_gonce, 15000), None,
            ("grid25, decaying rate", grid10, 10000), ("grid25, decaying rate, older build", grid20_old, 20000),
            ("grid25, decaying rate, current build", grid20, 20000),
            ("grid25, decaying rate, older build", grid60, 60000),
            "grid25"]
    rows = []
    for item in spec:
        if item is None or isinstance(item, str):
            dataset = item or "ring8"
            rows.append([f"PacGAN GAN (paper)", "~400,000", 10, *pacgan(ring15, dataset)])
            continue
        name, report, steps = item
        r = trials(report, steps)
        rows.append([name, thousands(steps), len(r), *modes_cells(r)])
    header = ["data, D slope 0.2", "steps", "trials", *MODES_HEADER]
    return table(header, rows) + "\n\n" + SE_CAPTION


def modes_at_steps(report: dict, dataset: str, label: str) -> str:
    """One setting's metrics at each evaluated step count (points inside one run when the rate decays)."""
    steps = sorted({r["steps"] for r in report["records"]})
    rows = []
    for s in steps:
        r = trials(report, s)
        rows.append([dataset, label, thousands(s), len(r), *modes_cells(r)])
    rows.append([dataset, "PacGAN GAN (paper)", "~400,000", 10, *pacgan(report, dataset)])
    return table(["data", "D slope", "steps", "trials", *MODES_HEADER], rows) + "\n\n" + SE_CAPTION


def bench_modes_2000(report: dict) -> str:
    """The first benchmark table: 2,000 steps per run, every (dataset, slope) with 10 trials."""
    rows, diffs = [], []
    for dataset in ("ring8", "grid25"):
        by_slope = {s: trials(report, slope=s, dataset=dataset)
                    for s in sorted({r["slope"] for r in report["records"] if r["dataset"] == dataset})}
        rows += [[dataset, f"{s:g}", len(r), *modes_cells(r)] for s, r in by_slope.items()]
        rows.append([dataset, "PacGAN GAN (paper)", 10, *pacgan(report, dataset)])
        if dataset == "ring8":
            diffs = [compare("slope 0.01", metric(by_slope[0.01], "hq_fraction"), "slope 0.2",
                             metric(by_slope[0.2], "hq_fraction"), 1, "HQ points", 100),
                     compare("slope 0.2", metric(by_slope[0.2], "reverse_kl"), "slope 0.01",
                             metric(by_slope[0.01], "reverse_kl"), 2, "reverse KL"),
                     compare("slope 0", metric(by_slope[0.0], "hq_fraction"), "slope 0.2",
                             metric(by_slope[0.2], "hq_fraction"), 1, "HQ points", 100),
                     compare("slope 0.2", metric(by_slope[0.2], "reverse_kl"), "slope 0",
                             metric(by_slope[0.0], "reverse_kl"), 2, "reverse KL")]
        else:
            pairs = [(a, b) for a in by_slope for b in by_slope if a < b]
            worst = max(diff_se(metric(by_slope[a], k), metric(by_slope[b], k))[1]
                        for a, b in pairs for k in ("modes", "hq_fraction", "reverse_kl"))
    loads = [r["load_avg_1min"] for r in report["records"]]
    return (table(["data", "D slope", "trials", *MODES_HEADER], rows) + f"\n\n{SE_CAPTION} 2,000 steps per run; "
            f"load average {min(loads):.1f}-{max(loads):.1f} after the runs. ring8 differences: "
            + "; ".join(diffs) + f". grid25: no pair of slopes differs by more than {worst:.1f} SE in any metric.")


def batched_length(ring8, grid25) -> str:
    """Metrics against training length at a constant rate (batched, 4 trials), with the batch's wall time."""
    rows = []
    for dataset, report in (("ring8", ring8), ("grid25", grid25)):
        for s in sorted({r["steps"] for r in report["records"]}):
            r = trials(report, s)
            wall = f"{r[0]['batch_seconds'] / 60:.1f} min"
            rows.append([dataset, "0.2", thousands(s), len(r), *modes_cells(r), wall])
        rows.append([dataset, "PacGAN GAN (paper)", "~400,000", 10, *pacgan(report, dataset), ""])
    header = ["data", "D slope", "steps", "trials", *MODES_HEADER, f"wall time ({len(r)} trials)"]
    return table(header, rows) + "\n\n" + SE_CAPTION


def lr_decay(ring_batched, ring_one, ring_const, grid_batched) -> str:
    """ring8 and grid25 with the rate decaying over the second half, against the constant rate."""
    rows = []
    for name, report in (("ring8, batched, the rate falls from step 5,000 to 0 at 10,000", ring_batched),):
        for i, s in enumerate(sorted({r["steps"] for r in report["records"]})):
            r = trials(report, s)
            rows.append([name if i == 0 else "", thousands(s), f"{len(r)} ({', '.join(str(x['seed']) for x in r)})",
                         *modes_cells(r)])
    r = trials(ring_one, 15000)
    rows.append(["ring8, `train.py`, the rate falls from step 7,500 to 0 at 15,000", "15,000",
                 f"1 ({r[0]['seed']})", *modes_cells(r)])
    r = trials(ring_const, 10000)
    rows.append(["ring8, constant rate (for comparison)", "10,000", len(r), *modes_cells(r)])
    for i, s in enumerate(sorted({r["steps"] for r in grid_batched["records"]})):
        r = trials(grid_batched, s)
        rows.append(["grid25, batched, the rate falls from step 5,000 to 0 at 10,000" if i == 0 else "",
                     thousands(s), f"{len(r)} ({', '.join(str(x['seed']) for x in r)})", *modes_cells(r)])
    header = ["D slope 0.2, `train.lr_decay=0.5`", "steps", "trials (seeds)", *MODES_HEADER]
    return table(header, rows) + "\n\n" + SE_CAPTION


def ema_decay(report: dict) -> str:
    """The partial EMA run: G itself (g_*) against its EMA copy, per seed."""
    rows = []
    for s in sorted({r["steps"] for r in report["records"]}):
        r = trials(report, s)
        cell = lambda rec, p: (f"{rec[p + 'modes']} / {rec[p + 'hq_fraction'] * 100:.1f} / "  # noqa: E731
                               f"{rec[p + 'reverse_kl']:.2f}")
        rows.append(["G itself (`g_*`; the EMA only kept aside)", thousands(s), *[cell(x, "g_") for x in r]])
        rows.append(["EMA generator, beta 0.999", thousands(s), *[cell(x, "") for x in r]])
    seeds = [f"seed {s}: modes / HQ % / reverse KL" for s in sorted({r["seed"] for r in report["records"]})]
    return table(["ring8, slope 0.2", "steps", *seeds], rows) + "\n\nOne value per trial (seed); the run stopped early."


def toy2d_step_cost(idle, loaded) -> str:
    """Per trial-step cost of separate train.py trials against one batched model, two loads."""
    def blocks(report, side, key):
        return " / ".join(f"{b[key]:.1f}" for b in report["blocks"] if b["side"] == side)
    def load(report):
        loads = [b["load_avg_1min"] for b in report["blocks"]]
        return f"{min(loads):.1f}-{max(loads):.1f}"
    header = ["per trial and step (two blocks each)"] + [f"{kind} ms, load {load(r)}" for r in (idle, loaded)
                                                          for kind in ("CPU", "wall")]
    rows = [[name] + [blocks(r, side, key) for r in (idle, loaded) for key in ("cpu_ms_per_trial_step",
                                                                                 "wall_ms_per_trial_step")]
            for name, side in (("10 separate trials (`train.py`'s GANTrainer, one after another)", "separate"),
                               ("10 trials as one batched model", "batched"))]
    rows.append(["speed-up (best blocks)"] + [f"{r['best'][k]:.2f}x" for r in (idle, loaded)
                                              for k in ("speedup_cpu", "speedup_wall")])
    return table(header, rows)


def toy2d_step_cost_g_once(report: dict) -> str:
    """Per trial-step CPU ms before (main) and with G's forward once, each on both cores."""
    rows = []
    for side, name in (("separate", "separate `train.py` trials"), ("batched", "one batched model")):
        cells = []
        for build in ("main", "g_once"):
            vals = [b["cpu_ms_per_trial_step"] for key, run in report["runs"].items() if key.startswith(build)
                    for b in run["blocks"] if b["side"] == side]
            cells.append(span(vals, 1))
        rows.append([name, *cells])
    return table(["CPU ms per trial-step (blocks on both cores)", "two G forwards (main then)", "G's forward once"],
                 rows)


# ---------------------------------------------------------------- dead channels (summarize_sweep --groups-json)

def _ordered(summary: dict, order: Sequence[str]) -> dict:
    """The summary with its groups in the given label order (the others after them)."""
    rank = {label: i for i, label in enumerate(order)}
    return {**summary, "groups": sorted(summary["groups"], key=lambda g: rank.get(g["label"], len(rank)))}


SLOPE_ORDER = ("act.d_kind=leaky_relu, act.negative_slope=0", "act.d_kind=leaky_relu, act.negative_slope=0.01",
               "act.d_kind=leaky_relu, act.negative_slope=0.2", "act.d_kind=prelu, act.negative_slope=-",
               "act.d_kind=rrelu, act.negative_slope=-")
SD_CAPTION = "± is the standard deviation over the seeds (n in the seeds column)."


def mnist_dead_channels(summary: dict) -> str:
    """D's dead, dormant, grad-dead and persistently dead shares per layer, the quality metrics, and the
    differences between activations the slope study draws."""
    g = {label: next(x for x in summary["groups"] if x["label"] == label) for label in SLOPE_ORDER}
    relu, l001, l02 = (g[label] for label in SLOPE_ORDER[:3])
    at = lambda grp, stat: _final(grp, "D/act2", stat)  # noqa: E731
    diffs = [compare_stats("ReLU", at(relu, "dormant_frac"), "slope 0.2", at(l02, "dormant_frac"), 1, "points dormant",
                           100),
             compare_stats("ReLU", at(relu, "persistent_frac"), "slope 0.2", at(l02, "persistent_frac"), 1,
                           "points persistently dead", 100),
             compare_stats("ReLU", at(relu, "dead_frac"), "slope 0.2", at(l02, "dead_frac"), 1, "points dead", 100),
             compare_stats("slope 0.01", at(l001, "dormant_frac"), "slope 0.2", at(l02, "dormant_frac"), 1,
                           "points dormant", 100),
             compare_stats("ReLU", at(relu, "dormant_frac"), "slope 0.01", at(l001, "dormant_frac"), 1,
                           "points dormant", 100)]
    return (groups_markdown(_ordered(summary, SLOPE_ORDER), nets=("D",)).rstrip() + "\n\n" + SD_CAPTION
            + " D/act2 at the last check, in standard errors of the difference: " + "; ".join(diffs) + ".")


def _final(group: dict, layer: str, stat: str) -> dict:
    return group["final"][layer][stat]


def pct_sd(stats: dict, digits: int = 1) -> str:
    """mean ± SD in percent of a spread() dict; 0 without a spread; the value for one seed."""
    if stats["n"] == 1 or stats["std"] == 0:
        return num(stats["mean"] * 100, digits if stats["mean"] else 0)
    return f"{stats['mean'] * 100:.{digits}f} ± {stats['std'] * 100:.{digits}f}"


def issue15(summary: dict) -> str:
    """D at slope 0 and 0.2 without a normaliser: per layer at the last check."""
    stats = ("dead_frac", "dormant_frac", "grad_dead_frac", "persistent_frac")
    rows = []
    for label, slope in ((SLOPE_ORDER[0], "0"), (SLOPE_ORDER[2], "0.2")):
        g = next(g for g in summary["groups"] if g["label"] == label)
        rows.append([slope, len(g["seeds"]), " / ".join(pct_sd(_final(g, "D/act0", s)) for s in stats[:2]),
                     " / ".join(pct_sd(_final(g, "D/act1", s)) for s in stats),
                     " / ".join(pct_sd(_final(g, "D/act2", s)) for s in stats)])
    header = ["D slope", "seeds", "D/act0 dead / dormant", "D/act1 dead / dormant / grad-dead / persistent",
              "D/act2 dead / dormant / grad-dead / persistent"]
    return table(header, rows) + "\n\n% of channels at the last check (step 300); " + SD_CAPTION


def probes(summary: dict) -> str:
    """The two learning-rate probes: dead / dormant per D layer at step 300, and D's dead share per check at 1e-3."""
    by_lr = {g["settings"]["train.lr"] or "0.0002": g for g in summary["groups"]}
    slow, fast = by_lr["0.0002"], by_lr["0.001"]
    channels = {"D/act0": 32, "D/act1": 64, "D/act2": 128}
    rows = []
    for layer, n in channels.items():
        over = fast["over_time"][layer]["dead_frac"]
        shares = [f"{_final(g, layer, 'dead_frac')['mean'] * 100:.1f}% / "
                  f"{_final(g, layer, 'dormant_frac')['mean'] * 100:.1f}%" for g in (slow, fast)]
        rows.append([f"{layer} ({n})", *shares,
                     ", ".join(f"{p['mean'] * 100:.1f}" for p in over) + "%"])
    steps = ", ".join(str(p["step"]) for p in fast["over_time"]["D/act2"]["dead_frac"])
    header = ["D layer (channels)", "lr 2e-4: dead / dormant at step 300", "lr 1e-3: dead / dormant at step 300",
              f"lr 1e-3: dead at steps {steps}"]
    return table(header, rows) + "\n\nOne run per learning rate."


def redo(summary: dict) -> str:
    """ReDo recycling against the slope-0 baseline and the leaky reference, at the last check."""
    order = ("act.negative_slope=0, diagnostics.recycle=True", "act.negative_slope=0, diagnostics.recycle=-",
             "act.negative_slope=0.2, diagnostics.recycle=-")
    names = ("slope 0 + recycling", "slope 0", "slope 0.2")

    def cell(stats: dict, scale: float, digits: int) -> str:
        text = num(stats["mean"] * scale, digits)
        if stats["n"] > 1:
            text += f" ± {num(stats['std'] * scale, digits)} ({num(stats['min'] * scale, digits)}-" \
                    f"{num(stats['max'] * scale, digits)})"
        return text
    rows = []
    for label, name in zip(order, names):
        g = next(g for g in summary["groups"] if g["label"] == label)
        rows.append([name, ", ".join(str(s) for s in g["seeds"]), cell(_final(g, "D", "dead_frac"), 100, 1),
                     cell(_final(g, "D", "dormant_frac"), 100, 1), cell(_final(g, "D", "persistent_frac"), 100, 1),
                     cell(_final(g, "D/act2", "dead_frac"), 100, 1), cell(g["metrics"]["class_coverage"], 1, 1),
                     cell(g["metrics"]["class_kl"], 1, 3), cell(g["metrics"]["frechet_distance"], 1, 0)])
    header = ["D", "seeds", "D dead %", "D dormant %", "D persistently dead %", "D/act2 dead %", "class coverage",
              "class KL", "Frechet distance"]
    recycled, baseline = (next(g for g in summary["groups"] if g["label"] == label) for label in order[:2])
    named = (("dead_frac", "dead"), ("dormant_frac", "dormant"), ("persistent_frac", "persistently dead"))
    diffs = [compare_stats("slope 0", _final(baseline, "D", stat), "slope 0 + recycling", _final(recycled, "D", stat),
                           1, f"points {name}", 100) for stat, name in named]
    diffs.append(compare_stats("slope 0", baseline["metrics"]["frechet_distance"], "slope 0 + recycling",
                               recycled["metrics"]["frechet_distance"], 0, "Frechet distance"))
    return (table(header, rows) + "\n\nAt the last check (step 300); mean ± SD over the seeds (min-max). In standard "
            "errors of the difference: " + "; ".join(diffs) + ".")


# ---------------------------------------------------------------- recipes on MNIST (compare_runs.py, bench_train.py)

RECIPE_ORDER = ("default", "experiment=sngan_mnist", "experiment=wgan_gp_mnist", "act.d_kind=prelu")


def recipes(mnist: dict, speed: dict) -> str:
    """Every recipe's last evaluation, mean (min-max) over its seeds, and its step speed measured side by side."""
    img_per_s = {" ".join(r["overrides"]) or "default": r["img_per_s"] for r in speed["records"]}

    def cell(stats: dict, digits: int) -> str:
        text = num(stats["mean"], digits)
        if stats["min"] == stats["max"]:
            return text
        return f"{text} ({num(stats['min'], digits)}-{num(stats['max'], digits)})"
    rows = []
    for rec in sorted(mnist["recipes"], key=lambda r: RECIPE_ORDER.index(r["recipe"])):
        name = rec["recipe"]
        rows.append(["`default` (bce, BatchNorm D)" if name == "default" else f"`{name}`",
                     ",".join(str(s) for s in rec["seeds"]), cell(rec["class_coverage"], 1), cell(rec["class_kl"], 3),
                     cell(rec["mean_confidence"], 3), cell(rec["frechet_distance"], 1),
                     f"{img_per_s[name]:.0f}" if name in img_per_s else "", cell(rec["load1"], 1)])
    slow = img_per_s["default"] / img_per_s["experiment=wgan_gp_mnist"]
    header = ["recipe", "seeds", "class coverage", "class KL", "mean confidence", "Frechet distance",
              "step img/s (1 thread)", "load during runs"]
    return (table(header, rows) + "\n\nMean (min-max) over the seeds of each run's last evaluation (step 1,000, "
            "1,000 samples); the runs shared the machine (load column), so their speed is not compared. Step img/s: "
            f"one DCGAN-32 training step at batch 64, the recipes one after the other in one quiet window "
            f"({speed['measured']}); WGAN-GP's 5 critic steps and double backward make its step {slow:.1f}x the "
            "default's.")


def prelu_d_slopes(mnist: dict) -> str:
    """The learned slopes of the PReLU D at the end of its run (init 0.25, per channel)."""
    run = next(r for r in mnist["runs"] if r["recipe"] == "act.d_kind=prelu")
    rows = [[layer, f"{s['mean']:.3f}", f"{s['min']:.3f}", f"{s['max']:.3f}"] for layer, s in run["d_slopes"].items()]
    return (table(["D layer", "mean slope", "min", "max"], rows)
            + f"\n\n`act.d_kind=prelu` (init 0.25, one slope per channel), one run (seed {run['seed']}), "
            f"step {run['steps']}.")


# ---------------------------------------------------------------- the operator (bench_op.py, bench_call_overhead.py)

KIND_BUILTIN = {"leaky_relu": "nn.LeakyReLU", "prelu": "nn.PReLU", "rrelu": "nn.RReLU", "elu": "nn.ELU"}


def op_family(report: dict) -> str:
    """Forward and forward+backward against MindSpore's built-in: medians of the runs, each run's ratio."""
    runs = ", ".join(f"{x:.1f}" for x in _loads(report["runs_log"]))
    rows = []
    for m in report["medians"]:
        fwd = ", ".join(f"{x:.2f}" for x in m["fwd_ratios"])
        rows.append([f"{m['kind']} ({m['impl']})", f"`{KIND_BUILTIN[m['kind']]}`",
                     f"**{m['fwd_ratio_median']:.2f}x** ({fwd})",
                     f"{m['fwd_min_ratio_median']:.2f}x", f"**{m['fwdbwd_ratio_median']:.2f}x**",
                     f"{m['fwd_ms_median']:.1f} / {m['builtin_fwd_ms_median']:.1f}"])
    header = ["kind (impl)", "built-in", "forward x (runs)", "forward x, fastest repeats", "forward+backward x",
              "forward ms, ours / built-in"]
    return (table(header, rows) + f"\n\n16M float32 elements, 2 threads; median over {len(report['runs'])} runs, "
            f"each timing both sides round-robin in one process (load average {runs} at the starts).")


def _loads(log: str) -> list[float]:
    return [float(m.group(1)) for m in re.finditer(r"start \S+ load (\S+)", log)]


def op_family_detail(report: dict) -> str:
    """Every column of the family run: times, the three runs' ratios, the floor and the in-graph cost."""
    rows = []
    for m in report["medians"]:
        trio = lambda key: ", ".join(f"{x:.2f}" for x in m[key])  # noqa: E731
        rows.append([m["kind"], m["impl"], f"{m['fwd_ms_median']:.1f}", f"{m['builtin_fwd_ms_median']:.1f}",
                     f"**{m['fwd_ratio_median']:.2f}** ({trio('fwd_ratios')})",
                     f"{m['fwd_min_ratio_median']:.2f} ({trio('fwd_min_ratios')})", f"{m['fwdbwd_ms_median']:.1f}",
                     f"{m['builtin_fwdbwd_ms_median']:.1f}",
                     f"**{m['fwdbwd_ratio_median']:.2f}** ({trio('fwdbwd_ratios')})",
                     f"{m['floor_ms_median']:.1f}", f"{m['in_graph_ratio_median']:.2f} ({trio('in_graph_ratios')})"])
    header = ["kind", "impl", "fwd ms", "built-in fwd ms", "fwd x (runs)", "fwd x of minima (runs)", "fwd+bwd ms",
              "built-in fwd+bwd ms", "fwd+bwd x (runs)", "floor ms", "in-graph x (runs)"]
    return table(header, rows) + "\n\nMedians over the runs (each run's value in brackets), 16M float32, 2 threads."


def elu_idle(report: dict) -> str:
    """The ELU forward on an idle machine, many runs back to back."""
    s, recs = report["summary"], report["records"]
    mins = [r["builtin_fwd_min_ms"] / r["fwd_min_ms"] for r in recs]
    row = [s["runs"], span([r["fwd_ms"] for r in recs], 2), span([r["builtin_fwd_ms"] for r in recs], 2),
           f"**{s['fwd_x_min']:.2f}-{s['fwd_x_max']:.2f}, median {s['fwd_x_median']:.2f}; {s['runs_at_least_2x']} of "
           f"{s['runs']} at or above 2x**", span(mins, 2),
           f"{span([r['fwdbwd_x'] for r in recs], 2)} (median {s['fwdbwd_x_median']:.2f})",
           f"{s['fwd_gbps_median']:.1f} vs {s['copy_gbps_median']:.1f} GB/s (medians)"]
    header = ["runs", "ours fwd ms", "`nn.ELU` fwd ms", "fwd x", "x of minima", "fwd+bwd x", "ours vs a copy"]
    return table(header, [row]) + ("\n\n16M float32, 2 threads, one run = one `bench_op.py` call (median of its "
                                   "repeats).")


def elu_windows(report: dict) -> str:
    """The ELU benchmark in the two windows of the call split, three runs each."""
    rows = []
    for w in report["windows"]:
        runs = [r for run in w["runs"] for r in run]
        three = lambda f: ", ".join(f(r) for r in runs)  # noqa: E731
        lo, hi = w["load_avg_1min_before_after"]
        rows.append([f"{w['when']} ({lo:.1f} -> {hi:.1f})",
                     three(lambda r: f"{r['fwd_ms']:.2f}") + f" ({span([r['fwd_min_ms'] for r in runs], 2)})",
                     three(lambda r: f"{r['builtin_fwd_ms']:.2f}")
                     + f" ({span([r['builtin_fwd_min_ms'] for r in runs], 2)})",
                     "**" + three(lambda r: f"{r['builtin_fwd_ms'] / r['fwd_ms']:.2f}") + "**",
                     three(lambda r: f"{r['fwd_x_paired']:.2f}"),
                     three(lambda r: f"{r['builtin_fwd_min_ms'] / r['fwd_min_ms']:.2f}"),
                     three(lambda r: f"{r['builtin_fwdbwd_ms'] / r['fwdbwd_ms']:.2f}"),
                     three(lambda r: f"{r['floor_ms']:.2f}")])
    header = ["window (load)", "ours fwd ms (fastest)", "`nn.ELU` fwd ms (fastest)", "fwd x", "paired x",
              "x of minima", "fwd+bwd x", "`x * 1` floor ms"]
    return table(header, rows)


def call_overhead(report: dict) -> str:
    """Where one call through MindSpore spends its time, ELU and LeakyReLU side by side, per window."""
    def per_window(f):
        return "; ".join(f(w["call_overhead"]) for w in report["windows"])
    rows = []
    for op in ("elu", "leaky_relu"):
        part = lambda key: per_window(lambda c: f"{c['parts'][op][key]['median_ms']:.2f}")  # noqa: E731
        summ = lambda key: per_window(lambda c: f"{c['summary'][key]['median_ms']:.2f}")  # noqa: E731
        rows.append([op, summ(f"{op}_ms"), part("launch"), part("kernel"), part("return"), part("outside"),
                     per_window(lambda c: f"{c['parts'][op]['minflt']['median_faults']:.0f}"),
                     summ(f"{op}_alone_huge"), summ(f"{op}_alone_4k"),
                     per_window(lambda c: f"{c['summary'][op + '_tiny']['median_ms']:.2f} / "
                                          f"{c['summary'][op + '_builtin_tiny']['median_ms']:.2f}")])
    header = ["op", "through MindSpore", "launch", "kernel inside MindSpore", "return", "outside the kernel",
              "page faults per call", "kernel alone, huge pages", "kernel alone, 4 KiB pages",
              "16 elements: ours / built-in"]
    return table(header, rows) + "\n\nMedians in ms of 30 repeats, 16M float32, 2 threads; windows separated by `;`."


# ---------------------------------------------------------------- training speed (bench_train.py, profile_train.py)

MODEL = {"dcgan32": "DCGAN-32", "dcgan64": "DCGAN-64"}


def cpu_name(record: dict) -> str:
    """A bench record's CPU as a reader can place it: the model name, and where recorded the vendor's family and
    model number and the vector flags (a virtual machine may report only "AMD EPYC")."""
    cpu = record.get("cpu") or {}
    ids = ", ".join(f"{label} {cpu[k]}" for k, label in (("family", "family"), ("model_number", "model")) if k in cpu)
    flags = ", ".join(cpu.get("flags", [])) or "no AVX2"
    return f"{cpu.get('model', 'CPU not recorded')} ({ids + ': ' if ids else ''}{flags})" if cpu else ""


def train_idle(report: dict) -> str:
    """Ratio to PyTorch of every (model, fusion), per run of an idle window."""
    keys = [(r["model"], r["fusion"]) for r in report["runs"][0]]
    rows = []
    for model, fusion in keys:
        vals = [next(r for r in run if (r["model"], r["fusion"]) == (model, fusion)) for run in report["runs"]]
        rows.append([MODEL[model], fusion, " / ".join(f"{v['ratio_to_torch']:.2f}" for v in vals),
                     " / ".join(f"{v['img_per_s']:.0f}" for v in vals),
                     " / ".join(f"{v['torch_img_per_s']:.0f}" for v in vals)])
    header = ["model", "fusion", f"ratio to PyTorch, runs 1-{len(report['runs'])}", "img/s", "PyTorch img/s (same run)"]
    cpu = cpu_name(report["runs"][0][0])
    return table(header, rows) + f"\n\n`conv_impl=onednn`, batch 64, 2 threads each; {cpu + ', ' if cpu else ''}" \
        f"{report['when']}."


def builds_ab(report: dict) -> str:
    """img/s of two builds run alternately in one window, per round and model."""
    models = [r["model"] for r in report["runs"][0]["records"]]
    rows = [[run["round"], f"{run['commit']} ({run['build']})",
             *(f"{next(r for r in run['records'] if r['model'] == m)['img_per_s']:.1f}" for m in models)]
            for run in report["runs"]]
    first = report["runs"][0]["records"][0]
    cpu = cpu_name(first)
    return table(["round", "build", *(f"{MODEL[m]} img/s" for m in models)], rows) + \
        f"\n\n`conv_impl={first['impl']}`, `fusion={first['fusion']}`, {first['precision']}, batch " \
        f"{first['batch_size']}, {first['threads']} threads; {cpu + ', ' if cpu else ''}{report['when']}."


def builds_ab_pairs(report: dict) -> str:
    """Two builds (or settings) run alternately, summarised per model and precision (and oneDNN ISA, where the runs
    cap it to several): each one's median and range of img/s over the rounds, and their ratio within each round (the
    two runs of a round are adjacent in time)."""
    first, second = dict.fromkeys(run["build"] for run in report["runs"])
    isa = lambda r: (r.get("onednn") or {}).get("isa")  # noqa: E731
    cells = [r for run in report["runs"] for r in run["records"]]
    precisions = list(dict.fromkeys(r["precision"] for r in cells))
    by_isa = len(set(map(isa, cells))) > 1
    rows = []
    for key in dict.fromkeys((isa(r), r["model"], r["precision"]) for r in cells):
        by_round: dict[int, dict[str, float]] = {}
        for run in report["runs"]:
            for r in run["records"]:
                if (isa(r), r["model"], r["precision"]) == key:
                    by_round.setdefault(run["round"], {})[run["build"]] = r["img_per_s"]
        pairs = [v for v in by_round.values() if len(v) == 2]
        ratios = sorted(v[second] / v[first] for v in pairs)
        speeds = {b: sorted(v[b] for v in pairs) for b in (first, second)}
        rows.append([*([key[0]] if by_isa else []), MODEL[key[1]], *([key[2]] if len(precisions) > 1 else []),
                     len(pairs), *(f"{median(speeds[b]):.1f} ({span(speeds[b], 1)})" for b in (first, second)),
                     f"**{median(ratios):.2f}x** ({span(ratios, 2)}); higher in {sum(x > 1 for x in ratios)} of "
                     f"{len(ratios)}"])
    cell = cells[0]
    dtype = "" if len(precisions) > 1 else f"{cell['precision']}, "
    return (table([*(["oneDNN ISA"] if by_isa else []), "model", *(["precision"] if len(precisions) > 1 else []),
                   "rounds", f"{first} img/s, median (range)", f"{second} img/s, median (range)",
                   f"{second} / {first} within a round, median (range)"], rows)
            + f"\n\n`conv_impl={cell['impl']}`, `fusion={cell['fusion']}`, {dtype}batch {cell['batch_size']}, "
              f"{cell['threads']} threads; {report['when']}.")


def train_gonce_windows(main_w1, branch_w1, main_w2, branch_w2) -> str:
    """G's forward once per iteration against the build before it, back to back in two windows."""
    rows = []
    for window, before, after in ((1, main_w1, branch_w1), (2, main_w2, branch_w2)):
        for b in before:
            a = next(x for x in after if (x["model"], x["fusion"]) == (b["model"], b["fusion"]))
            rows.append([window, MODEL[b["model"]], b["fusion"], f"{b['img_per_s']:.1f} ({b['torch_img_per_s']:.1f})",
                         f"**{b['ratio_to_torch']:.2f}x**", f"{a['img_per_s']:.1f} ({a['torch_img_per_s']:.1f})",
                         f"**{a['ratio_to_torch']:.2f}x**",
                         f"{b['step_s'] * 1000:.1f} -> {a['step_s'] * 1000:.1f} ms ({b['step_s'] / a['step_s']:.2f}x)"])
    header = ["window", "model", "fusion", "before img/s (PyTorch)", "before ratio", "G once img/s (PyTorch)",
              "ratio", "median step, before -> G once"]
    return table(header, rows) + "\n\n`conv_impl=onednn`, batch 64, 2 threads each; PyTorch 2.13 in each run."


def _contenders(reports: Sequence[list[dict]]) -> dict[tuple[str, str, str], list[dict]]:
    """bench_train records by (model, precision, contender), each contender's record of every run in order: the
    app's records by "impl / fusion", PyTorch's (fields torch_*) once per model and precision as "PyTorch"."""
    out: dict[tuple[str, str, str], list[dict]] = {}
    for report in reports:
        seen = set()
        for r in report:
            out.setdefault((r["model"], r["precision"], f"{r['impl']} / {r['fusion']}"), []).append(r)
            key = (r["model"], r["precision"], "PyTorch")
            if r.get("torch_img_per_s") is not None and key not in seen:  # one per run, however many share it
                seen.add(key)
                out.setdefault(key, []).append({"img_per_s": r["torch_img_per_s"], "peak_gflops": r["peak_gflops"],
                                                "achieved_gflops": r["torch_achieved_gflops"],
                                                "peak_share": r["torch_peak_share"]})
    return out


def _bench_conditions(reports: Sequence[list[dict]]) -> str:
    """Batch, threads, CPU and each run's load average (1 minute) before and after each model."""
    first = reports[0][0]
    loads = "; ".join(f"run {i}: " + ", ".join(
        f"{MODEL.get(m, m)} {r['load_average_before'][0]:.1f} -> {r['load_average_after'][0]:.1f}"
        for m, r in {r["model"]: r for r in report}.items()) for i, report in enumerate(reports, 1))
    omp = f" (OMP_WAIT_POLICY={first['omp_wait_policy']})" if first.get("omp_wait_policy") else ""
    turns = ("each timed step right after an untimed step of the same contender" if first.get("lead_in") else
             "each step timed right after the previous contender's, without a lead-in step "
             "([performance.md](performance.md#timing-each-step-after-its-own))")
    n = len(reports)
    spread = f"mean ± SE over {n} runs; " if n > 2 else "each run's value; " if n > 1 else ""
    return (f"{spread}batch {first['batch_size']}, {first['threads']} threads for every contender{omp}, {turns}, "
            f"{cpu_name(first)}; "
            f"load average (1 minute) before -> after each model, {loads}")


def _cpu_label(record: dict) -> str:
    """A record's CPU model name, with the vendor's family and model number where recorded (two AMD EPYC virtual
    machines may report the same name)."""
    cpu = record["cpu"]
    return cpu["model"] + (f" (family {cpu['family']}, model {cpu['model_number']})" if "family" in cpu else "")


def with_when(render: Callable[..., str]) -> Callable[[dict], str]:
    """A renderer of scripts/bench/bench_train.py runs for a {command, when, runs} record: the runs' table, then when and
    on which commit they ran."""
    return lambda report: render(*report["runs"]) + f"\n\n{report['when']}."


def machine_peaks(*records: dict) -> str:
    """scripts/bench/bench_peak.py records side by side: per CPU, each problem's best and median GFLOP/s and oneDNN's
    implementation (or, where it has none, that it has none)."""
    rows = []
    for rec in records:
        for i, p in enumerate(rec["problems"]):
            ok = p["peak_gflops"] is not None
            rows.append([cpu_name(rec) if i == 0 else "", rec["onednn"]["isa"] if i == 0 else "", p["problem"],
                         p["precision"],
                         f"{p['peak_gflops']:.1f}" if ok else "none", f"{p['median_gflops']:.1f}" if ok else "",
                         f"`{p['impl']}`" if ok else "oneDNN has no primitive here"])
    loads = "; ".join(f"{_cpu_label(r)}: {r['load_average_before'][0]:.1f} -> {r['load_average_after'][0]:.1f}"
                      for r in records)
    header = ["CPU", "oneDNN ISA", "problem", "precision", "best GFLOP/s", "median GFLOP/s", "implementation"]
    return (table(header, rows) + f"\n\nscripts/bench_peak.py, {records[0]['threads']} threads: a 2048^3 GEMM and "
            "a 256 -> 512, 4x4 stride-2 convolution at batch 64; load average (1 minute) before -> after, " + loads + ".")


def train_utilisation(*reports: list[dict]) -> str:
    """Achieved FLOP/s of a training step over the measured peak of the same precision, this app and PyTorch
    (float32; bf16 under torch.autocast), from scripts/bench/bench_train.py JSONs (runs joined: one value per run)."""
    rows = []
    for (model, precision, who), recs in _contenders(reports).items():
        name = f"PyTorch{' autocast' if precision == 'bf16' else ''}" if who == "PyTorch" else f"this app, {who}"
        peak = [r["peak_gflops"] for r in recs]
        rows.append([MODEL.get(model, model), precision, name, pm([r["img_per_s"] for r in recs], 1),
                     pm([r["achieved_gflops"] for r in recs], 1), pm(peak, 0) if all(peak) else "",
                     f"**{pm([r['peak_share'] for r in recs], 1, 100)}%**" if all(peak) else ""])
    gflop = {r["model"]: r["gflop_per_step"] for r in reports[0]}
    header = ["model", "precision", "trainer", "img/s", "GFLOP/s", "peak GFLOP/s (same precision)", "share of peak"]
    return (table(header, rows) + "\n\nGFLOP per step (the convolutions' multiply-adds of one D + G step, forward and "
            "backward, from the layer shapes): " + ", ".join(f"{MODEL.get(m, m)} {g:.2f}" for m, g in gflop.items())
            + f". The peak is the better of scripts/bench/bench_peak.py's GEMM and convolution, timed in the same "
            f"round-robin as the steps; {_bench_conditions(reports)}.")


def bf16_speed(*reports: list[dict]) -> str:
    """precision=bf16 against this app's fp32 and against PyTorch's autocast bf16, wall and CPU time, from
    scripts/bench/bench_train.py JSONs, with the issue's targets (>= 1.6x fp32, >= 1.0x PyTorch autocast) checked;
    a ratio the run did not measure (no fp32 run, no --vs-torch) stays blank and unchecked."""
    def ratios(recs: list[dict], key: str) -> str:
        values = [r[key] for r in recs if r.get(key) is not None]
        return " and ".join(f"{v:.2f}x" for v in values) if len(values) <= 2 else f"{pm(values, 2)}x"

    contenders = _contenders(reports)
    rows, verdicts = [], []
    for (model, precision, who), recs in contenders.items():
        if precision != "bf16" or who == "PyTorch":
            continue
        torch = contenders.get((model, "bf16", "PyTorch"), [])
        rows.append([MODEL.get(model, model), who, pm([r["img_per_s"] for r in recs], 1),
                     f"**{ratios(recs, 'ratio_to_fp32')}**", ratios(recs, "cpu_ratio_to_fp32"),
                     pm([r["img_per_s"] for r in torch], 1), f"**{ratios(recs, 'ratio_to_torch')}**",
                     ratios(recs, "cpu_ratio_to_torch")])
        for key, target, what in (("ratio_to_fp32", 1.6, "fp32"), ("ratio_to_torch", 1.0, "PyTorch autocast bf16")):
            values = [r[key] for r in recs if r.get(key) is not None]
            held = sum(v >= target for v in values)
            verdicts += [f"{MODEL.get(model, model)} bf16 >= {target}x {what}: "
                         f"{'met' if held == len(values) else 'not met' if not held else 'mixed'} "
                         f"({held} of {len(values)} run{'s' if len(values) > 1 else ''})"] if values else []
    header = ["model", "impl / fusion", "bf16 img/s", "bf16 / fp32 (wall)", "bf16 / fp32 (CPU time)",
              "PyTorch autocast bf16 img/s", "bf16 / PyTorch bf16 (wall)", "bf16 / PyTorch bf16 (CPU time)"]
    return (table(header, rows) + "\n\nTargets, on wall-clock img/s: " + ("; ".join(verdicts) or "none measured")
            + ". A ratio is of median step times measured side by side in one run (CPU time: of this process per "
            f"step); {_bench_conditions(reports)}.")


def onednn_vs_gemm(one_thread, two_threads) -> str:
    """The convolution implementations side by side (a heavily loaded machine: ratios only)."""
    rows = []
    for threads, report in (("1", one_thread), ("2", two_threads)):
        for model in ("dcgan32", "dcgan64"):
            recs = {(r["impl"], r["fusion"]): r for r in report if r["model"] == model}
            gemm = recs[("gemm", "none")]["img_per_s"]
            rows.append([threads, MODEL[model]] + [f"{recs[k]['img_per_s'] / gemm:.2f}x" if k in recs else ""
                                                    for k in (("gemm", "bn_act"), ("onednn", "none"),
                                                              ("onednn", "bn_act"), ("onednn", "conv_act"))])
    header = ["threads", "model", "gemm + bn_act", "onednn", "onednn + bn_act", "onednn + conv_act"]
    return table(header, rows) + "\n\nimg/s over `gemm` with `fusion=none` in the same run; batch 64."


def profile_calls(before: dict, after: dict) -> str:
    """Calls per step of the DCGAN-64 conv_act step before and after G's forward once."""
    def calls(p, prop):
        return sum(e["calls_per_step"] for e in p["onednn"] if e["kind"] == "convolution" and e["prop"] == prop)
    def reorders(p):
        return sum(e["calls_per_step"] for e in p["onednn"] if e["kind"] == "reorder")
    def custom(p):
        return next(o["calls_per_step"] for o in p["ops"] if o["op_type"] == "Custom")
    rows = [["oneDNN backward-data", *(f"{calls(p, 'backward_data'):.0f}" for p in (before, after))],
            ["oneDNN forward", *(f"{calls(p, 'forward_training'):.0f}" for p in (before, after))],
            ["oneDNN backward-weights", *(f"{calls(p, 'backward_weights'):.0f}" for p in (before, after))],
            ["oneDNN reorders", *(f"{reorders(p):.0f}" for p in (before, after))],
            ["aot kernel launches (Custom ops)", *(f"{custom(p):.0f}" for p in (before, after))]]
    return table(["calls per DCGAN-64 conv_act step", "two G forwards", "G's forward once"], rows)


def _onednn_groups(report: dict) -> dict[str, list[float]]:
    """A profile_train.py --onednn record's oneDNN time by primitive kind (convolutions by direction): [ms per
    step, calls per step]."""
    groups: dict[str, list[float]] = {}
    for e in report["onednn"]:
        key = e["prop"].replace("_training", "") if e["kind"] == "convolution" else e["kind"]
        groups.setdefault(key, [0.0, 0.0])
        groups[key][0] += e["ms_per_step"]
        groups[key][1] += e["calls_per_step"]
    return groups


def profile_shares(report: dict) -> str:
    """Where the DCGAN-64 conv_act step's oneDNN time goes, by primitive kind."""
    total = sum(e["ms_per_step"] for e in report["onednn"])
    groups = _onednn_groups(report)
    custom = next(o for o in report["ops"] if o["op_type"] == "Custom")
    rows = [[k, f"{ms:.0f}", f"{ms / total * 100:.1f}%", f"{n:.0f}"] for k, (ms, n) in
            sorted(groups.items(), key=lambda kv: -kv[1][0])]
    return (table(["oneDNN primitive", "ms / step", "share of oneDNN time", "calls / step"], rows)
            + f"\n\n{MODEL[report['model']]}, {report['impl']} + {report['fusion']}, batch {report['batch_size']}, "
            f"{report['steps']} profiled steps under load: the shares are the point, not the times. The Custom ops "
            "(the "
            f"oneDNN convolutions, the fused kernels, the global norm) take {custom['share'] * 100:.1f}% of the step's "
            f"op time in MindSpore's profiler.")


def profile_precisions(*reports: dict) -> str:
    """Where a step's time goes per precision (profile_train.py --onednn records of one model): oneDNN's time by
    primitive kind, its share of the step's wall time, and what is left outside oneDNN."""
    groups = [_onednn_groups(r) for r in reports]
    keys = sorted({k for g in groups for k in g}, key=lambda k: -max(g.get(k, [0.0])[0] for g in groups))
    walls = [r["onednn_wall_ms_per_step"] for r in reports]

    def cells(g: dict, wall: float, key: str) -> list[str]:
        ms, calls = g.get(key, [0.0, 0.0])
        return [f"{ms:.0f}", f"{ms / wall * 100:.1f}%", f"{calls:.0f}"]
    rows = [[k, *(c for g, w in zip(groups, walls) for c in cells(g, w, k))] for k in keys]
    rest = [w - sum(ms for ms, _ in g.values()) for g, w in zip(groups, walls)]
    rows.append(["outside oneDNN (the element-wise kernels, Adam, framework, waits)",
                 *(c for r, w in zip(rest, walls) for c in (f"{r:.0f}", f"{r / w * 100:.1f}%", ""))])
    rows.append(["step (wall, oneDNN's verbose mode on)", *(c for w in walls for c in (f"{w:.0f}", "100%", ""))])
    header = ["oneDNN primitive"] + [f"{r['precision']} {h}" for r in reports
                                     for h in ("ms / step", "share of the step", "calls / step")]
    first = reports[0]
    return (table(header, rows) + f"\n\n{MODEL[first['model']]}, {first['impl']} + {first['fusion']}, batch "
            f"{first['batch_size']}, {first['threads']} threads, {first['steps']} profiled steps each "
            f"{_profile_conditions(reports)}: the shares are the point, not the times.")


def _profile_conditions(reports: Sequence[dict]) -> str:
    """The CPU and load average of profile_train.py records where they hold them (later ones do), else "under load"
    (the earlier ones ran on a shared machine and did not record it)."""
    if not all("load_average_before" in r for r in reports):
        return "under load"
    loads = ", ".join(f"{r['load_average_before'][0]:.1f} -> {r['load_average_after'][0]:.1f}" for r in reports)
    return f"on an {cpu_name(reports[0])}, load average (1 minute) before -> after {loads}"


# ---------------------------------------------------------------- reruns recorded by scripts/bench/record_bench.py

def embedded(run: dict):
    """The one JSON file a recorded command wrote (record_bench.py --embed)."""
    (value,) = run["embedded"].values()
    return value


def load_text(runs: Sequence[dict]) -> str:
    loads = [x for r in runs for x in r["load_avg_1min_before_after"]]
    return f"load average {min(loads):.1f}-{max(loads):.1f}"


def conditions(report: dict) -> str:
    """When, where and under what load the recorded runs ran."""
    runs = report["runs"]
    return (f"{runs[0]['started'][:10]}, commit {runs[0]['commit']}, {runs[0]['cores']} cores of an {runs[0]['cpu']}, "
            f"{load_text(runs)} (1 minute, before and after each run)")


def conv_layouts(report: dict) -> str:
    """scripts/bench/bench_conv_layouts.cc per geometry and activation layout: each direction's median ms over the recorded
    runs, then each layout's total over the layers every layout has a kernel for."""
    runs = [embedded(r)["primitives"] for r in report["runs"]]
    parts = ("forward_ms", "backward_data_ms", "backward_weights_ms", "reorders_ms")
    rows, kept = [], {}

    def med(i: int, key: str) -> float:
        return median(run[i][key] for run in runs)

    for i, r in enumerate(runs[0]):
        where = f"{r['in_channels']} -> {r['out_channels']}, {r['size']}x{r['size']}"
        if "reference_only" in r:
            rows.append([where, r["layout"], "only oneDNN's reference kernel", "", "", ""])
            continue
        values = [med(i, k) for k in parts]
        rows.append([where, r["layout"], *(f"{v:.2f}" for v in values)])
        kept.setdefault(where, {})[r["layout"]] = values
    layouts = [r["layout"] for r in runs[0] if "reference_only" not in r]
    complete = [k for k in kept.values() if len(k) == len(set(layouts))]  # layers every layout has a kernel for
    rows += [[f"the {len(complete)} layers every layout has a kernel for", layout,
              *(f"**{sum(k[layout][j] for k in complete):.1f}**" for j in range(len(parts)))]
             for layout in dict.fromkeys(layouts)]
    header = ["layer (channels, input plane)", "activation layout", "forward ms", "backward-data ms",
              "backward-weights ms", "reorders from and to NCHW, ms"]
    return (table(header, rows) + f"\n\nBatch 64, 4x4 kernels, one thread, best of 5 calls, median over "
            f"{len(runs)} runs; `any` is oneDNN's own choice; ops/csrc/cpu/onednn_conv.cc takes `any` for the forward "
            f"and backward-weights and nChw16c for backward-data where oneDNN has a kernel for it; "
            f"{conditions(report)}.")


def int8(report: dict) -> str:
    """The int8 LeakyReLU (table lookup) against the float32 op's forward on the same elements, per run."""
    rows = []
    for i, run in enumerate(report["runs"], 1):
        (r,) = embedded(run)
        rows.append([i, f"{r['fwd_ms']:.1f}", f"{r['fp32_fwd_ms']:.1f}", f"{r['elems_per_s'] / 1e9:.2f}",
                     f"{r['fp32_elems_per_s'] / 1e9:.2f}", f"**{r['speedup']:.2f}x**"])
    n = embedded(report["runs"][0])[0]["n"]
    return (table(["run", "int8 ms", "float32 ms", "int8 G elements/s", "float32 G elements/s", "int8 / float32"],
                  rows) + f"\n\n{n:,} elements, both in graph mode, timed round-robin in each run (`bench_op.py "
            f"--kinds qleaky_relu`); {conditions(report)}.")


def inplace(report: dict) -> str:
    """Peak memory of a chain of LeakyReLU layers trained with inplace=False and True."""
    recs = embedded(report["runs"][0])
    rows = [[str(r["inplace"]), f"{r['peak_mib']:.0f}", f"{r['peak_tensors']:.1f}"] for r in recs]
    r0 = recs[0]
    return (table(["`inplace`", "peak MiB above the start", "activations kept (peak / one activation)"], rows)
            + f"\n\n{r0['layers']} layers x {r0['tensor_mib']:.0f} MiB float32 activations, one forward+backward in "
            f"graph mode, each variant in a fresh process; {conditions(report)}. Memory, not time: the load does not "
            "move it.")


def diagnostics_overhead(report: dict) -> str:
    """What dead-channel diagnostics add to a DCGAN-32 step at the default interval."""
    r = embedded(report["runs"][0])
    sam = r["samples_s"]
    ms = lambda x: f"{x * 1000:.0f} ms"  # noqa: E731
    timed = lambda key, samples: f"{ms(r[key])} ({span([x * 1000 for x in sam[samples]], 0)})"  # noqa: E731
    rows = [["step, trainer with `diagnostics.enabled=false`", timed("step_s_without", "without")],
            ["ordinary step, diagnostics on (probes compiled out)", timed("step_s_ordinary", "ordinary")],
            ["check step (the probed twin)", timed("step_s_check", "check_step")],
            ["host cost of a check (read, record, TensorBoard, jsonl)", ms(r["check_host_s"])],
            ["one-time compile of the probed twin", f"{r['probed_compile_s']:.1f} s"],
            [f"**overhead at interval {r['interval']}**, all terms", f"**{r['overhead_pct_at_interval']:+.1f}%**"],
            ["overhead from the check steps alone", f"{r['overhead_pct_checks_amortised']:+.1f}%"]]
    return (table(["", "median (samples)"], rows) + f"\n\n{r['model']}, batch {r['batch_size']}, conv_impl "
            f"{r['conv_impl']}, {r['steps']} round-robin rounds; {conditions(report)}. Ordinary steps run the same "
            "graph "
            "as a trainer without diagnostics, so their difference is the machine's noise; the check steps' share is "
            "the steadier figure.")


def host_blocking(report: dict) -> str:
    """Whole 500-step ring8 runs with and without runtime.host_blocking, alternated in one window."""
    rows, metrics = [], []
    for run in report["runs"]:
        m = embedded(run)
        metrics.append(m)
        rows.append([run["label"], f"{run['wall_s']:.1f} s ({run['cpu_s']:.1f} s)",
                     f"{m['modes']} / {m['hq_fraction'] * 100:.1f} / {m['reverse_kl']:.3f}"])
    by = {flag: [r["wall_s"] for r in report["runs"] if f"host_blocking={flag}" in r["label"]]
          for flag in ("false", "true")}
    same = "identical" if all(m == metrics[0] for m in metrics) else "NOT identical"
    return (table(["run", "wall (CPU) of the whole run", "modes / HQ % / reverse KL at step 500"], rows)
            + f"\n\n`taskset -c 0 python train.py experiment=ring8 diagnostics.enabled=false train.steps=500 "
            f"runtime.host_blocking=B` (start-up and compile included); without host blocking the runs took "
            f"{mean(by['false']) / mean(by['true']):.2f}x as long on average; metrics {same} across the four runs; "
            f"{conditions(report)}.")


def generate_memory(report: dict) -> str:
    """Peak resident memory of generate.py --npz against the number of samples."""
    recs = embedded(report["runs"][0])
    rows = [[f"{r['n']:,}", f"{r['peak_rss_mib']:.0f}", f"{r['seconds']:.1f}", f"{r['npz_bytes'] / 1e6:.0f}"]
            for r in recs]
    return (table(["`--n`", "peak RSS MiB (whole process)", "seconds", "file MB"], rows)
            + f"\n\nDefault DCGAN-32, batches of {recs[0]['batch_size']}, each n in a fresh process; "
            f"{conditions(report)}.")


def dashboard_size(report: dict) -> str:
    """The offline dashboard on synthetic 30-run sweeps: page size and render time."""
    rows = []
    for run in report["runs"]:
        r = embedded(run)
        rows.append([f"{r['shape']} ({r['channels_per_run']:,} probed channels per run)", f"{r['input_mb']:.1f} MB",
                     f"**{r['page_mb']:.2f} MB**", f"{r['images']} images, {r['charts']} charts",
                     f"{r['cpu_s_median']:.1f} s", f"{r['render_s_median']:.1f} s ({span(r['render_s'], 1)})"])
    r = embedded(report["runs"][0])
    return (table([f"sweep ({r['runs']} runs x {r['steps']:,} steps)", "run files", "page", "content",
                   "CPU (median)", f"wall, median of {len(r['render_s'])} (samples)"], rows)
            + f"\n\n`python scripts/bench/bench_dashboard.py --shape SHAPE --json F`; {conditions(report)}.")


def fusion_blocks(report: dict) -> str:
    """Per BatchNorm block: the fused layer against the MindSpore layers and the fusion=none layers."""
    runs = report["runs"]
    r = embedded(runs[0])
    by = {(b["image_size"], tuple(b["shape"]), b["dtype"], b["impl"]): b for b in r["blocks"]}
    rows = []
    for size, shape, dtype, impl in by:
        if impl != "bn_act":
            continue
        fused, plain, builtin = (by[(size, shape, dtype, i)] for i in ("bn_act", "none", "builtin"))
        rows.append([size, "x".join(map(str, shape)), f"{builtin['fwdbwd_ms'] / fused['fwdbwd_ms']:.2f}x",
                     f"{plain['fwdbwd_ms'] / fused['fwdbwd_ms']:.2f}x", f"{builtin['fwd_ms'] / fused['fwd_ms']:.2f}x",
                     " / ".join(f"{by[(size, shape, dtype, i)]['peak_mib']:.1f}"
                                for i in ("bn_act", "none", "builtin"))])
    header = ["px", "block input", "fwd+bwd x vs `nn.BatchNorm2d` + `nn.LeakyReLU`",
              "fwd+bwd x vs `fusion=none` layers",
              "fwd x vs built-in", "peak MiB of one fwd+bwd: fused / none / built-in"]
    return (table(header, rows) + f"\n\nBatch 64, float32, graph mode, training mode; medians of round-robin repeats; "
            f"peak memory in a fresh process per block; {conditions(report)}.")


def fusion_layouts(report: dict) -> str:
    """Per BatchNorm block: BatchNormAct on the same values with the channels last (layout="NHWC") against NCHW,
    timed side by side in each run."""
    cells: dict[tuple, list[tuple[float, float, float, float]]] = {}
    for run in report["runs"]:
        by = {(b["image_size"], tuple(b["shape"]), b["impl"]): b for b in embedded(run)["blocks"]
              if b["dtype"] == "float32"}
        for size, shape, impl in by:
            if impl == "bn_act":
                nchw, nhwc = by[(size, shape, "bn_act")], by[(size, shape, "bn_act_nhwc")]
                cells.setdefault((size, shape), []).append((nchw["fwdbwd_ms"], nhwc["fwdbwd_ms"],
                                                            nchw["fwd_ms"] / nhwc["fwd_ms"],
                                                            nchw["fwdbwd_ms"] / nhwc["fwdbwd_ms"]))
    rows = [[size, "x".join(map(str, shape)), span([c[0] for c in v], 3), span([c[1] for c in v], 3),
             f"{span([c[2] for c in v], 2)}x", f"{span([c[3] for c in v], 2)}x"] for (size, shape), v in cells.items()]
    runs = len(report["runs"])
    return (table(["px", "block input (N, C, H, W)", "fwd+bwd ms, NCHW", "fwd+bwd ms, NHWC", "fwd x, NHWC vs NCHW",
                   "fwd+bwd x, NHWC vs NCHW"], rows)
            + f"\n\n`python scripts/bench/bench_fusion.py --no-memory --repeats 10 --steps 2 --json F`, {runs} runs (the "
              f"ranges are over them), batch 64, float32, graph mode, training mode; medians of round-robin repeats "
              f"within a run; {conditions(report)}.")


def fusion_stats(report: dict) -> str:
    """The batch statistics: the in-kernel reduction against MindSpore's mean + var."""
    r = embedded(report["runs"][0])
    rows = [["x".join(map(str, s["shape"])), f"{s['kernel_ms']:.2f}", f"{s['reductions_ms']:.2f}",
             f"{s['reductions_ms'] / s['kernel_ms']:.1f}x"] for s in r["stats"]]
    return table(["block input", "in-kernel ms", "MindSpore mean + var ms", "ratio"], rows)


def fusion_steps(report: dict) -> str:
    """The whole training step (D + G) with fusion=none and fusion=bn_act."""
    r = embedded(report["runs"][0])
    none = {s["image_size"]: s for s in r["steps"] if s["fusion"] == "none"}
    rows = [[s["image_size"], s["fusion"], f"{s['step_s']:.3f}", f"{s['img_per_s']:.1f}",
             f"{s['img_per_s'] / none[s['image_size']]['img_per_s']:.2f}x",
             f"{s['peak_mb']:.0f}" if s.get("peak_mb") else ""] for s in r["steps"]]
    return (table(["px", "fusion", "step s (median)", "img/s", "vs none", "peak MiB (fresh process)"], rows)
            + "\n\n`GANTrainer.train_step` as `train.py` runs it (conv_impl=auto, batch 64), both fusion values "
            "round-robin in one process.")


def bias_act(report: dict) -> str:
    """D's conv blocks without BatchNorm: conv + LeakyReLU against the fused bias + activation."""
    by = {}
    for r in report["bias_act"]:
        by.setdefault((r["image_size"], tuple(r["shape"]), r["out_channels"]), {})[r["impl"]] = r
    rows = [[f"{shape[1]} -> {out} at {shape[2]}x{shape[3]}",
             f"{v['none']['fwd_ms']:.1f} / {v['bias_act']['fwd_ms']:.1f}",
             f"{v['none']['fwdbwd_ms']:.1f} / {v['bias_act']['fwdbwd_ms']:.1f}",
             f"{v['none']['fwdbwd_ms'] / v['bias_act']['fwdbwd_ms']:.2f}x"] for (size, shape, out), v in by.items()]
    loads = report["load"]
    return (table(["D block (batch 64, 32 px)", "fwd ms: unfused / fused", "fwd+bwd ms: unfused / fused",
                   "fwd+bwd x"], rows)
            + f"\n\nOne run, float32, one thread, graph mode, median of 7 round-robin calls, under heavy load "
            f"(load average {min(loads):.1f}-{max(loads):.1f}: the times are ~10x a quiet machine's, the ratios "
            "are the point).")


def accuracy(report: dict) -> str:
    """The op's rounding error against exact arithmetic, per dtype and slope."""
    rows = []
    for r in embedded(report["runs"][0]):
        naive = (f"{r['naive_fp16_forward_max_abs']:.2g} / {r['naive_fp16_forward_max_rel']:.2g}"
                 if "naive_fp16_forward_max_abs" in r else "")
        rows.append([r["dtype"], r["slope"], f"{r['forward_max_abs']:.2g}", f"{r['forward_max_rel']:.2g}", naive,
                     f"{r['backward_max_rel']:.2g}", "yes" if r["bit_exact_with_reference"] else "**no**"])
    n = embedded(report["runs"][0])[0]["n"]
    return (table(["dtype", "slope", "forward max abs", "forward max rel", "naive fp16 math: max abs / rel",
                   "gradient max rel", "bits equal `ops.reference`"], rows)
            + f"\n\n{n:,} values (normal(0, 100) and 0 to -65504), a random upstream gradient; relative errors where "
            "the "
            "exact result is in the dtype's normal range (`python scripts/bench/bench_accuracy.py --json F`).")


def quantize_report(report: dict) -> str:
    """The int8-activation generator against the float one on the run's evaluation latents."""
    r = embedded(report["runs"][0])
    rows = [[k, f"{r['float'][k]:.4g}", f"{r['int8'][k]:.4g}", f"{r['change'][k]:+.4g}"] for k in r["float"]]
    e = r["output_error"]
    return (table(["metric", "float G", "int8 activations", "change"], rows)
            + f"\n\nint8 against float output on {r['eval_latents']:,} latents: max |diff| {e['max_abs']:.3g}, "
            "mean |diff| "
            f"{e['mean_abs']:.3g}, PSNR {e['psnr_db']:.1f} dB; calibration {r['calibration']['method']} on "
            f"{r['calibration']['latents']} latents; {conditions(report)}.")


def distributed(report: dict) -> str:
    """One process against two msrun ranks, whole-command wall time."""
    rows = [[r["label"], f"{r['wall_s']:.0f} s", f"{r['cpu_s']:.0f} s", r["returncode"]] for r in report["runs"]]
    one, two = (r["wall_s"] for r in report["runs"][:2])
    return (table(["run", "wall (whole command)", "CPU (all processes)", "exit status"], rows)
            + f"\n\nTwo ranks took {two / one:.2f}x the wall time of one process; {conditions(report)}.")


def batchnorm_dead_channels(summary: dict, runs: dict) -> str:
    """The default BatchNorm D: dead, dormant, grad-dead and persistently dead shares per layer at the last check."""
    stats = ("dead_frac", "dormant_frac", "grad_dead_frac", "persistent_frac")
    layers = ("D/act0", "D/act1", "D/act2")
    rows = []
    for g in summary["groups"]:
        settings = ", ".join(f"{k}={v}" for k, v in g["settings"].items() if v is not None) or "default"
        worst = {s: max(p["max"] for layer in layers for p in g["over_time"][layer][s]) for s in stats}
        rows.append([settings, len(g["seeds"]), *[" / ".join(pct_sd(_final(g, layer, s)) for s in stats)
                                                 for layer in layers],
                     " / ".join(f"{worst[s] * 100:.1f}" for s in stats),
                     f"{g['metrics']['class_coverage']['mean']:.0f}, {g['metrics']['frechet_distance']['mean']:.1f}"])
    header = ["run (overrides of `python train.py`)", "runs", *[f"{layer} dead / dormant / grad-dead / persistent"
                                                                for layer in layers],
              "highest at any check, any layer", "class coverage, Frechet distance"]
    return (table(header, rows) + "\n\n% of D's channels at the last check (one run each, seed 0); D/act0 is D's first "
            f"layer, which has no BatchNorm; {conditions(runs)}.")


# ---------------------------------------------------------------- the app against PyTorch (torch_dcgan.py, bench_quality.py)

def _worst_gradient(report: dict, net: str, pair: str) -> float:
    """The largest relative gradient difference (of each tensor's largest value) of one network for one pair."""
    return max(v[pair] for k, v in report["gradients_by_tensor"].items() if f".moment1.{net}." in k)


def torch_step1(report: dict) -> str:
    """Step 1 from the same weights and inputs: the app against the PyTorch reference and both against float64."""
    pairs = ("app_torch", "app_float64", "torch_float64")
    losses = report["losses"]
    f64 = report["after_step_1_vs_float64"]
    rows = [["loss_d, loss_g (relative)", f"{losses['loss_d']['rel']:.1e}, {losses['loss_g']['rel']:.1e}", "", ""]]
    for net in ("discriminator", "generator"):
        rows.append([f"{net[0].upper()}'s gradients (max relative, per tensor)",
                     *[f"{_worst_gradient(report, net, pair):.1e}" for pair in pairs]])
    rows.append(["BatchNorm running statistics (max relative)",
                 f"{report['after_step_1']['batchnorm_statistics']['max_rel']:.1e}",
                 *[f"{f64[name]['batchnorm_statistics']['max_rel']:.1e}" for name in ("app", "torch")]])
    rows.append(["weights after the update (max difference, in units of lr)",
                 f"{report['after_step_1']['weight_updates']['max_abs_in_lr']:.2f}",
                 *[f"{f64[name]['weight_updates']['max_abs_in_lr']:.2f}" for name in ("app", "torch")]])
    residual = report["adam_step_1_residual_in_lr"]
    plain = report["after_step_1_plain_torch_eps"]["weight_updates"]["max_abs_in_lr"]
    return (table(["step 1", "app vs PyTorch", "app vs float64", "PyTorch vs float64"], rows)
            + f"\n\n{report['data']}, seed {report['seed']}, batch {report['batch_size']}; both start from the "
            f"app's initial weights ({report['initial_tensors']} tensors, identical) and take the app's first batch and "
            f"latents; app `conv_impl={report['app']['conv_impl']}`, `fusion={report['app']['fusion']}`, PyTorch "
            f"{report['torch']}. float64: the PyTorch reference in float64; G's step-1 gradient, taken through the updated D, "
            f"carries the same float32 error against it in both implementations. Relative: max |difference| / max |value| of "
            f"each tensor, the worst tensor. Gradients are Adam's first moment after one step, (1 - beta1) x gradient. "
            f"Each update equals MindSpore's Adam step computed in float64 from that implementation's own gradient to "
            f"{max(residual.values()):.0e} lr; Adam's first step is nearly lr x sign(gradient), so a weight whose "
            f"gradient is near eps moves differently for gradient differences of float32 size. With torch's own Adam "
            f"eps (not matched) the updates differ by up to {plain:.1f} lr.")


def torch_drift(report: dict) -> str:
    """How the two runs drift apart from identical starts: losses and weight distance at some steps."""
    shown = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)
    rows = [[str(r["step"]), f"{r['app_loss_d']:.4f} / {r['torch_loss_d']:.4f}",
             f"{r['app_loss_g']:.4f} / {r['torch_loss_g']:.4f}", f"{r['g_weight_distance']:.1e}",
             f"{r['d_weight_distance']:.1e}"] for r in report["steps"] if r["step"] in shown]
    return (table(["step", "loss_d app / PyTorch", "loss_g app / PyTorch", "G: ‖w_app − w_torch‖ / ‖w_app‖",
                   "D: the same"], rows)
            + "\n\nThe same run in both (same weights, batches and latents at every step): float32 differences of "
              "one step grow through the GAN's feedback, as between any two float32 implementations; the runs are "
              "compared by their statistics over seeds, below, not step by step.")


IMPL_NAMES = {"app": "this app (MindSpore)", "torch": "PyTorch reference"}


def _final_points(report: dict, impl: str) -> tuple[list[dict], list[dict]]:
    """The records of one implementation, by seed, and their points at the run's last step on the final samples."""
    records = sorted((r for r in report["records"] if r["impl"] == impl), key=lambda r: r["seed"])
    n = report["scoring"]["final_samples"]
    return records, [next(p for p in r["points"] if p["step"] == r["steps"] and p["n_samples"] == n) for r in records]


def _difference(name: str, a: Sequence[float], b: Sequence[float], digits: int) -> str:
    d, t = diff_se(a, b)
    return f"{name} app - PyTorch {d:+.{digits}f} ({'no spread' if math.isinf(t) else f'{t:.1f} SE'})"


def _seeds(values: Sequence[float], digits: int) -> str:
    return ", ".join(num(v, digits) for v in values)


def _scoring_text(report: dict) -> str:
    """What the numbers are: samples, reference, convention, extractor."""
    sc = report["scoring"]
    return (f"{sc['final_samples']:,} samples per run (the run's fixed latents) against {sc['reference']} "
            f"({sc['n_reference']:,} images), {sc['convention']} convention, {sc['extractor']}")


def _runs_text(report: dict) -> str:
    """Where the runs ran, the load at their starts and ends, and their order."""
    loads = [x for r in report["records"] for x in (r["loadavg_before"][0], r["loadavg_after"][0])]
    m = report["machine"]
    order = "; runs alternated app, PyTorch, seed by seed" if len(report["impls"]) > 1 else ""
    return (f"{m['cores']} cores of an {m['cpu']}, 1-minute load average {min(loads):.1f}-{max(loads):.1f} at the "
            f"runs' starts and ends (a run's own threads count 2){order}")


def quality_vs_torch(report: dict) -> str:
    """FID, KID, precision/recall and speed per implementation at the benchmark's length, over seeds, and the
    difference app - PyTorch in standard errors."""
    steps, rows, finals = report["settings"]["steps"], [], {}
    for impl in report["impls"]:
        records, points = _final_points(report, impl)
        fid, kid = metric(points, "fid"), [1000 * k for k in metric(points, "kid")]
        finals[impl] = {"fid": fid, "kid": kid, "train_s": metric(records, "train_s"),
                        "img_per_s": metric(records, "img_per_s")}
        rows.append([IMPL_NAMES[impl], ", ".join(str(r["seed"]) for r in records), f"**{pm(fid, 1)}**",
                     _seeds(fid, 1), pm(kid, 2), pm(metric(points, "precision"), 3), pm(metric(points, "recall"), 3),
                     pm([t / 60 for t in metric(records, "train_s")], 1), pm(metric(records, "img_per_s"), 0),
                     pm([t / 60 for t in metric(records, "process_s")], 1)])
    app, ref = finals["app"], finals["torch"]
    speed = mean(ref["train_s"]) / mean(app["train_s"])
    header = ["implementation", "seeds", "FID", "FID per seed", "KID x 10^3", "precision", "recall",
              "training min", "training img/s", "whole run min"]
    return (table(header, rows)
            + f"\n\n{_difference('FID', app['fid'], ref['fid'], 1)}, {_difference('KID x 10^3', app['kid'], ref['kid'], 2)}; "
              f"the app's training took "
              f"{1 / speed:.2f}x PyTorch's time ({speed:.2f}x its img/s). "
              f"DCGAN-32, {report['settings']['overrides'] and ' '.join(report['settings']['overrides'])}, "
              f"{steps:,} steps of batch 64 per run, mean ± SE over seeds; {_scoring_text(report)}. Training: the "
              f"step loop with its input fetching (graph compilation included for the app); whole run: the process "
              f"(imports, data, training, checkpoints, writing the samples). {_runs_text(report)}.")


def quality_curve(report: dict) -> str:
    """FID along the runs, every run scored on the same number of samples at every sample step."""
    sc = report["scoring"]
    groups = {(g["impl"], g["step"]): g for g in report["summary"] if g["n_samples"] == sc["curve_samples"]}
    rows = []
    for step in sorted({step for _, step in groups}):
        cells = [f"{step:,}"]
        for impl in report["impls"]:
            g = groups.get((impl, step))
            cells += ["", ""] if g is None else [pm(g["fid"]["values"], 1), _seeds(g["fid"]["values"], 1)]
        rows.append(cells)
    header = ["step"] + [h for impl in report["impls"] for h in (f"FID, {IMPL_NAMES[impl]}", "per seed")]
    return (table(header, rows) + f"\n\nFID of the first {sc['curve_samples']:,} samples of each run at each "
            f"sample step, mean ± SE over the seeds (FID on fewer samples is higher: the benchmark's "
            f"{sc['final_samples']:,}-sample figure at the last step is lower than this table's).")


def quality_headline(report: dict) -> str:
    """The README's line: FID of both implementations at equal work and the difference in SE, with the size it was
    measured at (steps, seeds, samples, reference). No speed: the benchmark's times carry the shared machine's load."""
    _, app = _final_points(report, "app")
    _, ref = _final_points(report, "torch")
    d, t = diff_se(metric(app, "fid"), metric(ref, "fid"))
    sc = report["scoring"]
    return (f"Fashion-MNIST 32x32, the DCGAN recipe at equal work ({report['settings']['steps']:,} steps, "
            f"{len(app)} seeds each, FID on {sc['final_samples']:,} samples against {sc['n_reference']:,} training "
            f"images): FID **{pm(metric(app, 'fid'), 1)}** in this app, {pm(metric(ref, 'fid'), 1)} in the same "
            f"recipe in PyTorch ({d:+.1f}, {t:.1f} SE).")


def run_ratios(train: dict, key: str = "ratio_to_torch",
               precision: str = "fp32") -> dict[tuple[str, str], list[float]]:
    """Every run's ratio (to PyTorch, or another `key` of the records) per (model, fusion) of a bench_train window
    ({"runs": [records, ...]}), from the records of one precision."""
    ratios: dict[tuple[str, str], list[float]] = {}
    for run in train["runs"]:
        for r in run:
            if r.get("precision", "fp32") == precision:
                ratios.setdefault((r["model"], r["fusion"]), []).append(r[key])
    return ratios


def headline(op_family_report, train, train_amd, train_amd_later, train_xeon, bf16, bf16_amx, ring8, grid25,
             recipes_report, mnist, quality, default_runs) -> str:
    """A newcomer's summary: one row per area, each from its JSON (the AMD EPYC's over its two windows)."""
    sel = next(m for m in op_family_report["medians"] if (m["kind"], m["impl"]) == ("leaky_relu", "select"))
    amd_runs = train_amd["runs"] + train_amd_later["runs"]
    ratios, amd, xeon = run_ratios(train), run_ratios({"runs": amd_runs}), run_ratios(train_xeon)
    xeon_cpu = train_xeon["runs"][0][0]["cpu"]
    xeon_isa = ("AVX-512" if "avx512f" in xeon_cpu["flags"] else "AVX2") + (
        "" if any("bf16" in f for f in xeon_cpu["flags"]) else ", no bf16 instructions")
    bf16_ratios = run_ratios(bf16, "ratio_to_fp32", precision="bf16")
    amx_ratios, amx_cpu = run_ratios(bf16_amx, "ratio_to_fp32", precision="bf16"), bf16_amx["runs"][0][0]
    ring = trials(ring8, 15000)
    grid = trials(grid25, 20000)
    default = next(r for r in recipes_report["recipes"] if r["recipe"] == "default")
    groups = {g["label"]: g for g in mnist["groups"]}
    relu, leaky = groups[SLOPE_ORDER[0]], groups[SLOPE_ORDER[2]]
    dormant = lambda g: pct_sd(_final(g, "D/act2", "dormant_frac"))  # noqa: E731
    _, app = _final_points(quality, "app")
    _, ref = _final_points(quality, "torch")
    d, t = diff_se(metric(app, "fid"), metric(ref, "fid"))
    rows = [["Fashion-MNIST 32x32 against PyTorch's same DCGAN recipe at equal work ("
             f"{quality['settings']['steps']:,} steps, [docs/vs_pytorch.md](docs/vs_pytorch.md))",
             f"FID on {quality['scoring']['final_samples']:,} samples **{pm(metric(app, 'fid'), 1)}** here, "
             f"{pm(metric(ref, 'fid'), 1)} in PyTorch ({d:+.1f}, {t:.1f} SE)", f"{len(app)} seeds each, ± SE"],
            ["LeakyReLU op vs `nn.LeakyReLU`, 16M float32",
             f"forward **{sel['fwd_ratio_median']:.2f}x**, forward+backward "
             f"**{sel['fwdbwd_ratio_median']:.2f}x** as fast", f"median of {len(sel['fwd_ratios'])} runs"],
            ["DCGAN training step vs PyTorch 2.13 on CPU (2 threads, `fusion=conv_act`)",
             f"DCGAN-32 **{span(ratios[('dcgan32', 'conv_act')], 2)}x**, "
             f"DCGAN-64 **{span(ratios[('dcgan64', 'conv_act')], 2)}x** as fast on an AVX-512 CPU; "
             f"{span(amd[('dcgan32', 'conv_act')], 2)}x and {span(amd[('dcgan64', 'conv_act')], 2)}x on an "
             f"{cpu_name(train_amd['runs'][0][0])}; {span(xeon[('dcgan32', 'conv_act')], 2)}x and "
             f"{span(xeon[('dcgan64', 'conv_act')], 2)}x on an {xeon_cpu['model']} (family {xeon_cpu['family']}, model "
             f"{xeon_cpu['model_number']}: {xeon_isa})",
             f"{len(train['runs'])} runs each ({len(amd_runs)} on the EPYC, two days), idle machine"],
            ["`precision=bf16` against this app's fp32 on CPU (2 threads, `fusion=conv_act`, "
             "[docs/precision.md](docs/precision.md))",
             f"DCGAN-32 **{span(amx_ratios[('dcgan32', 'conv_act')], 2)}x**, DCGAN-64 "
             f"**{span(amx_ratios[('dcgan64', 'conv_act')], 2)}x** as fast on an {_cpu_label(amx_cpu)} with "
             f"{', '.join(f for f in amx_cpu['cpu']['flags'] if 'bf16' in f)} (both precisions channels last); "
             f"{span(bf16_ratios[('dcgan32', 'conv_act')], 2)}x and {span(bf16_ratios[('dcgan64', 'conv_act')], 2)}x "
             f"on an {_cpu_label(bf16['runs'][0][0])} with "
             f"{', '.join(f for f in bf16['runs'][0][0]['cpu']['flags'] if 'bf16' in f)} (NCHW, before channels "
             f"last, timed without lead-in steps, which on the Xeon inflated this ratio: "
             f"[docs/performance.md](docs/performance.md#timing-each-step-after-its-own))",
             f"{len(bf16_amx['runs'])} runs on the Xeon, {len(bf16['runs'])} on the EPYC, idle machine"],
            ["2D ring8, 15,000 steps (PacGAN's GAN: 98.2% at ~400,000)", f"{pm(metric(ring, 'modes'), 1)} of 8 modes, "
             f"**{pm(metric(ring, 'hq_fraction'), 1, 100)}%** high-quality samples", f"{len(ring)} trials, ± SE"],
            ["2D grid25, 20,000 steps (PacGAN's GAN: 94.8%)", f"{pm(metric(grid, 'modes'), 1)} of 25 modes, "
             f"{pm(metric(grid, 'hq_fraction'), 1, 100)}% high-quality samples", f"{len(grid)} trials, ± SE"],
            ["MNIST, the default run (1,000 steps)",
             f"FID **{pm(metric(default_runs['runs'], 'fid'), 1)}** on 1,000 samples against 1,000 training digits "
             f"(two real sets: {default_runs['real_vs_real']['fid']:.1f}); {default['class_coverage']['mean']:.0f} of "
             f"10 classes", f"seeds {', '.join(str(r['seed']) for r in default_runs['runs'])}, ± SE"],
            ["Dormant channels in D's third layer without a normaliser (`experiment=dead_channels`, 300 steps)",
             f"ReLU D {dormant(relu)}%, LeakyReLU 0.2 D {dormant(leaky)}%", f"{len(relu['seeds'])} seeds each, ± SD"]]
    return table(["what", "measured", "n"], rows)


# ---------------------------------------------------------------- the registry

def precision_quality(report: dict) -> str:
    """fp32 against bf16 at equal steps: each precision's last evaluation, mean (min-max) over its seeds."""
    def cell(stats: dict, digits: int) -> str:
        return f"{num(stats['mean'], digits)} ({num(stats['min'], digits)}-{num(stats['max'], digits)})"
    rows = [[f"`{rec['recipe']}`", ",".join(str(s) for s in rec["seeds"]), cell(rec["class_coverage"], 1),
             cell(rec["class_kl"], 3), cell(rec["mean_confidence"], 3), cell(rec["frechet_distance"], 1)]
            for rec in report["recipes"]]
    return (table(["run", "seeds", "class coverage", "class KL", "mean confidence", "Frechet distance"], rows)
            + "\n\nMean (min-max) over the seeds of each run's evaluation at its last step (1,000 samples, the "
            "project's MNIST classifier metrics; not FID).")


def precision_fid(fp32: dict, bf16: dict) -> str:
    """fp32 against bf16 at equal steps in the standard metrics: per seed, mean ± SE, and the difference in SE."""
    runs = {"fp32": fp32["runs"], "bf16": bf16["runs"]}
    if [r["seed"] for r in runs["fp32"]] != [r["seed"] for r in runs["bf16"]] or fp32["steps"] != bf16["steps"]:
        raise ValueError("precision_fid: the fp32 and bf16 reports must hold the same seeds at the same steps")
    rows = [[name, ", ".join(num(r["fid"], 1) for r in rs), pm(metric(rs, "fid"), 1),
             pm([r["kid"] * 1e3 for r in rs], 1), pm(metric(rs, "precision"), 3), pm(metric(rs, "recall"), 3)]
            for name, rs in runs.items()]
    first = bf16["runs"][0]
    return (table(["precision", "FID per seed", "FID", "KID x 10^3", "precision (PR)", "recall"], rows)
            + f"\n\nSeeds {', '.join(str(r['seed']) for r in bf16['runs'])}, {bf16['steps']:,} steps each: "
              f"`{fp32['train_command']}` and `{bf16['train_command']}`, then `{bf16['fid_command']}` "
              f"({first['n_generated']:,} samples against {first['a']}, {first['convention']} convention); mean ± SE "
              f"over the seeds. "
              + compare("bf16", metric(runs["bf16"], "fid"), "fp32", metric(runs["fp32"], "fid"), 1, "FID") + ".")


def inception_parity(report: dict) -> str:
    """The MindSpore Inception-v3 features against torch.jit.load of the same archive (scripts/bench/check_inception.py)."""
    f, r = report["features"], report["resize"]
    pairs = ", ".join(f"{p['a']}-{p['b']} {p['ours']:.2f}" for p in report["fid"])
    worst = max(p["relative"] for p in report["fid"])
    rows = [["features: max \\|ours - torch\\| / largest \\|torch\\| feature",
             f"{f['max_abs_diff']:.3g} / {f['feature_scale']:.3g} = {f['relative']:.2g}", f"<= {f['target']:g}"],
            [f"FID between sets ({pairs}), ours vs torch's features", f"relative difference <= {worst:.2g}",
             f"<= {report['fid'][0]['target']:g}"],
            ["resize vs torch's grid_sample", f"max {r['max_abs_diff_0_255']:.3g} on 0..255 "
             f"({r['max_abs_diff_input_units']:.2g} input units)", ""],
            ["whole pipeline (our resize and network vs torch's resize and network)",
             f"{r['end_to_end_feature_max_abs_diff']:.2g} max, {r['end_to_end_relative']:.2g} of the feature scale", ""]]
    return (table(["check", "result", "target"], rows)
            + f"\n\n{f['images']} images; torch {report['torch']}, MindSpore {report['mindspore']}, "
              f"{report['convention']} convention, `{report['command']}`.")


def probe_overhead(report: dict) -> str:
    """The user-loop diagnostics' cost per step against the same loop without them (scripts/bench/bench_probe_overhead.py)."""
    ratio, quart, n = report["ratio_to_without"], report["ratio_to_without_quartiles"], report["steps_per_round"]
    rounds = report["rounds"]
    amortised = report["amortised_overhead_pct"]
    rows = [["ordinary step (plain twin)", f"{ratio['ordinary']:.3f} (quartiles {quart['ordinary'][0]:.2f}, "
             f"{quart['ordinary'][2]:.2f})", str(rounds * n)],
            ["check step (probed twin + `record`: read the probes, write jsonl and TensorBoard)",
             f"{ratio['check']:.2f} (quartiles {quart['check'][0]:.2f}, {quart['check'][2]:.2f})",
             str(rounds * report["checks_per_round"])],
            ["amortised, a check every " + " / ".join(amortised) + " steps", " / ".join(f"+{v:.1f}%" for v in amortised.values()),
             ""]]
    load = report["load_average_before"][0]
    return (table(["step", "median ratio to the loop without diagnostics", "pairs"], rows)
            + f"\n\nMedian step {report['step_s_median']['without'] * 1e3:.0f} ms without diagnostics; load average "
              f"{load:.1f} before the run on {report['cpu_count']} CPUs; MindSpore {report['mindspore']}.")


def default_fid(report: dict) -> str:
    """The default MNIST run's FID/KID/precision/recall per seed (scripts/fid.py), with two real sets as the floor."""
    rows = [[str(r["seed"]), num(r["fid"], 1), num(r["kid"] * 1e3, 1), num(r["precision"], 3), num(r["recall"], 3),
             num(r["classifier"]["frechet_distance"], 1)] for r in report["runs"]]
    runs, real = report["runs"], report["real_vs_real"]
    rows.append(["mean ± SE", pm(metric(runs, "fid"), 1), pm([r["kid"] * 1e3 for r in runs], 1),
                 pm(metric(runs, "precision"), 3), pm(metric(runs, "recall"), 3),
                 pm([r["classifier"]["frechet_distance"] for r in runs], 1)])
    rows.append([f"two real sets ({real['a']} vs {real['b']})", num(real["fid"], 1), num(real["kid"] * 1e3, 1),
                 num(real["precision"], 3), num(real["recall"], 3), ""])
    first = runs[0]
    return (table(["seed", "FID", "KID x 10^3", "precision", "recall", "Frechet distance (classifier)"], rows)
            + f"\n\n`{report['train_command']}` ({report['steps']:,} steps, otherwise the default config), then "
              f"`{report['fid_command']}`: "
              f"{first['n_generated']:,} samples from the run's fixed latents against {first['a']}, {first['convention']} "
              f"convention, Inception sha256 {first['extractor_sha256'][:12]}. KID's 100 subsets of 1,000 are the whole "
              f"sets at this count (no spread within a run).")


def script_renderer(module: str, function: str) -> Callable[..., str]:
    """The renderer kept next to the benchmark that writes the JSON (scripts/bench/MODULE.py's FUNCTION), imported only
    when a table is rendered."""
    def call(*reports: dict) -> str:
        import importlib

        return getattr(importlib.import_module(module), function)(*reports)  # a sibling in scripts/bench
    return call


@dataclass(frozen=True)
class Table:
    """One rendered table: the docs/data files it reads (passed to `render` in this order, parsed)."""
    sources: tuple[str, ...]
    render: Callable[..., str]


def modes(prefix: str, *names: str) -> tuple[str, ...]:
    return tuple(f"bench_modes_{prefix}{n}.json" for n in names)


# scripts/bench/bench_train.py --precisions fp32,bf16 --vs-torch, three times with the same command
BF16_RUNS = ("bench_train_bf16.json", "bench_train_bf16_run2.json", "bench_train_bf16_run3.json")
BF16_PASSIVE_RUNS = ("bench_train_bf16_omp_passive.json", "bench_train_bf16_omp_passive_run2.json")  # the same

TABLES: dict[str, Table] = {
    # the 2D benchmark (docs/slope_study.md, docs/sweeps.md)
    "grid25_slopes": Table(modes("batched_grid25_20k_", "slope0_10trials", "slope0.01_10trials", "slope0.2_10trials",
                                 "prelu_10trials", "maxout_2trials"), grid25_slopes),
    "ring8_slopes": Table(modes("batched_ring8_", "protocol_slope0_10trials", "protocol_slope0.01_10trials",
                                "15k_10trials", "protocol_prelu_10trials", "protocol_maxout_3trials"), ring8_slopes),
    "ring8_maxout_early": Table(modes("batched_ring8_", "protocol_maxout_3trials", "15k_10trials",
                                      "protocol_slope0.01_10trials", "protocol_prelu_10trials"), maxout_early),
    "protocol_length": Table(modes("", "batched_ring8", "batched_ring8_15k_10trials", "ring8_protocol_1trial",
                                   "ring8_protocol_1trial_g_once", "batched_grid25_lr_decay",
                                   "batched_grid25_20k_lr_decay", "batched_grid25_20k_slope0.2_10trials",
                                   "batched_grid25_60k_lr_decay"), protocol_length),
    "bench_modes_2000": Table(("bench_modes.json",), bench_modes_2000),
    "batched_length": Table(modes("batched_", "ring8", "grid25"), batched_length),
    "lr_decay": Table(modes("", "batched_ring8_lr_decay", "ring8_15k_lr_decay", "batched_ring8",
                            "batched_grid25_lr_decay"), lr_decay),
    "ema_decay": Table(modes("batched_", "ring8_ema_decay"), ema_decay),
    "ring8_15k": Table(modes("batched_", "ring8_15k_10trials"),
                       lambda r: modes_at_steps(r, "ring8", "0.2")),
    "grid25_20k_lr_decay": Table(modes("batched_", "grid25_20k_lr_decay"),
                                 lambda r: modes_at_steps(r, "grid25", "0.2")),
    "toy2d_step_cost": Table(("toy2d_step_cost.json", "toy2d_step_cost_loaded.json"), toy2d_step_cost),
    "toy2d_step_cost_g_once": Table(("toy2d_step_cost_g_once.json",), toy2d_step_cost_g_once),
    # dead channels on MNIST (docs/slope_study.md, docs/diagnostics.md)
    "probes": Table(("slope_study_probes.json",), probes),
    "mnist_dead_channels": Table(("slope_study_mnist.json",), mnist_dead_channels),
    "issue15": Table(("slope_study_mnist.json",), issue15),
    "redo": Table(("redo_recycle.json",), redo),
    # recipes (docs/results.md)
    "recipes_mnist": Table(("recipes_mnist.json", "recipes_speed.json"), recipes),
    "prelu_d_slopes": Table(("recipes_mnist.json",), prelu_d_slopes),
    # the operator (docs/operator.md, docs/results.md)
    "op_family": Table(("bench_op_family.json",), op_family),
    "op_family_detail": Table(("bench_op_family.json",), op_family_detail),
    "elu_idle": Table(("bench_op_elu_idle_16runs.json",), elu_idle),
    "elu_windows": Table(("bench_op_elu_overhead.json",), elu_windows),
    "call_overhead": Table(("bench_op_elu_overhead.json",), call_overhead),
    # standard metrics (docs/metrics.md), bf16 quality (docs/precision.md), the swap (docs/operator.md)
    "fid_speed": Table(("bench_fid.json",), script_renderer("bench_fid", "markdown")),
    "fid_speed_run1": Table(("bench_fid_2threads_run1.json",), script_renderer("bench_fid", "markdown")),
    "fid_speed_zen3": Table(("bench_fid_zen3.json",), script_renderer("bench_fid", "markdown")),
    "inception_parity": Table(("inception_parity.json",), inception_parity),
    "precision_mnist": Table(("precision_mnist.json",), precision_quality),
    "precision_fid": Table(("fid_default_mnist.json", "fid_bf16_mnist.json"), precision_fid),
    "precision_fid_amx": Table(("fid_fp32_mnist_amx.json", "fid_bf16_mnist_amx.json"), precision_fid),
    "swap_exactness": Table(("swap_exactness.json",), script_renderer("swap_exactness", "render")),
    "probe_overhead": Table(("probe_overhead.json",), probe_overhead),
    "default_fid": Table(("fid_default_mnist.json",), default_fid),
    # training speed (docs/performance.md, docs/results.md)
    "train_idle": Table(("bench_train_g_once_idle.json",), train_idle),
    "train_gonce_windows": Table(tuple(f"bench_train_gonce_{b}_w{w}.json" for w in (1, 2) for b in ("main", "branch")),
                                 train_gonce_windows),
    "onednn_vs_gemm": Table(("bench_train_onednn.json", "bench_train_onednn_2threads.json"), onednn_vs_gemm),
    "machine_peaks": Table(("bench_peak.json", "bench_peak_amx.json", "bench_peak_zen3.json", "bench_peak_zen5.json",
                            "bench_peak_xeon_avx512.json"), machine_peaks),
    "bf16_speed_zen5_before": Table(("bench_train_zen5_bf16_before.json",), with_when(bf16_speed)),
    "bf16_speed_zen5": Table(("bench_train_zen5_bf16.json",), with_when(bf16_speed)),
    "bf16_speed_zen5_blocked16": Table(("bench_train_zen5_bf16_blocked16.json",), with_when(bf16_speed)),
    "bf16_speed_zen5_lanes16": Table(("bench_train_zen5_bf16_lanes16.json",), with_when(bf16_speed)),
    "train_utilisation_zen5": Table(("bench_train_zen5_bf16.json",), with_when(train_utilisation)),
    "bf16_speed_amx": Table(("bench_train_amx_col2im.json",), with_when(bf16_speed)),
    "train_utilisation_amx": Table(("bench_train_amx_col2im.json",), with_when(train_utilisation)),
    "bf16_speed_amx_gather": Table(("bench_train_amx_gather.json",), with_when(bf16_speed)),
    "bf16_speed_amx_before_gather": Table(("bench_train_amx_lead_in.json",), with_when(bf16_speed)),
    "weights_gather_ab": Table(("bench_train_weights_gather_ab.json",), builds_ab_pairs),
    "lead_in_ab": Table(("bench_train_lead_in_ab.json",), builds_ab_pairs),
    "layouts_amx": Table(("bench_train_amx_layouts_ab.json",), builds_ab_pairs),
    "layouts_isa": Table(("bench_train_isa_layouts_ab.json",), builds_ab_pairs),
    "layouts_bn_act": Table(("bench_train_bn_act_layouts_ab.json",), builds_ab_pairs),
    "profile_amx_dcgan32": Table(("profile_train_amx_dcgan32_fp32.json", "profile_train_amx_dcgan32_bf16.json"),
                                 profile_precisions),
    "train_idle_zen3": Table(("bench_train_zen3.json",), train_idle),
    "train_utilisation_zen3": Table(("bench_train_zen3.json",), lambda r: train_utilisation(*r["runs"])),
    "train_idle_zen3_after_bf16": Table(("bench_train_zen3_after_bf16.json",), train_idle),
    "train_builds_zen3": Table(("bench_train_zen3_builds_ab.json",), builds_ab),
    "train_nhwc_inside_zen3": Table(("bench_train_zen3_nhwc_inside_ab.json",), builds_ab_pairs),
    "train_idle_xeon_avx512": Table(("bench_train_xeon_avx512.json",), train_idle),
    "train_utilisation_xeon_avx512": Table(("bench_train_xeon_avx512.json",), lambda r: train_utilisation(*r["runs"])),
    "train_utilisation": Table(BF16_RUNS, train_utilisation),
    "bf16_speed": Table(BF16_RUNS, bf16_speed),
    "train_utilisation_omp_passive": Table(BF16_PASSIVE_RUNS, train_utilisation),
    "bf16_speed_omp_passive": Table(BF16_PASSIVE_RUNS, bf16_speed),
    "profile_calls": Table(("profile_train_onednn_gradnorm_dcgan64.json", "profile_train_gonce_dcgan64.json"),
                           profile_calls),
    "profile_shares": Table(("profile_train_gonce_dcgan64.json",), profile_shares),
    **{f"profile_precisions{'' if m == 'dcgan64' else '_' + m}": Table(
        tuple(f"profile_train_bf16_{m}_{p}.json" for p in ("fp32", "bf16")), profile_precisions)
       for m in ("dcgan64", "dcgan32")},
    **{f"profile_zen3_{m}": Table((f"profile_train_zen3_{m}_fp32.json",), profile_precisions)
       for m in ("dcgan64", "dcgan32")},
    **{f"profile_xeon_avx512_{m}": Table((f"profile_train_xeon_avx512_{m}_fp32.json",), profile_precisions)
       for m in ("dcgan64", "dcgan32")},
    **{f"profile_zen5_{m}": Table(tuple(f"profile_train_zen5_{m}_{p}.json" for p in ("fp32", "bf16")),
                                  profile_precisions) for m in ("dcgan64", "dcgan32")},
    # reruns with their conditions (scripts/bench/record_bench.py)
    "int8": Table(("bench_int8.json",), int8),
    "conv_layouts_xeon_avx512": Table(("conv_layouts_xeon_avx512.json",), conv_layouts),
    "inplace": Table(("bench_inplace.json",), inplace),
    "diagnostics_overhead": Table(("bench_diagnostics.json",), diagnostics_overhead),
    "host_blocking": Table(("host_blocking_ring8.json",), host_blocking),
    "host_blocking_dcgan": Table(("host_blocking_dcgan_ab.json",), builds_ab_pairs),
    "generate_memory": Table(("bench_generate.json",), generate_memory),
    "dashboard_size": Table(("bench_dashboard.json",), dashboard_size),
    "fusion_blocks": Table(("bench_fusion.json",), fusion_blocks),
    "fusion_stats": Table(("bench_fusion.json",), fusion_stats),
    "fusion_layouts_zen3": Table(("bench_fusion_nhwc_zen3.json",), fusion_layouts),
    "fusion_steps": Table(("bench_fusion.json",), fusion_steps),
    "bias_act": Table(("bench_fusion_bias_act.json",), bias_act),
    "accuracy": Table(("bench_accuracy.json",), accuracy),
    "quantize": Table(("quantize_default.json",), quantize_report),
    "distributed": Table(("distributed_2ranks.json",), distributed),
    "dead_channels_batchnorm": Table(("dead_channels_batchnorm.json", "dead_channels_batchnorm_runs.json"),
                                     batchnorm_dead_channels),
    # the app against PyTorch at equal work (docs/vs_pytorch.md, docs/results.md)
    "torch_step1": Table(("torch_dcgan_equivalence.json",), torch_step1),
    "torch_drift": Table(("torch_dcgan_equivalence.json",), torch_drift),
    "quality_vs_torch": Table(("bench_quality_fashion_mnist.json",), quality_vs_torch),
    "quality_curve": Table(("bench_quality_fashion_mnist.json",), quality_curve),
    "quality_vs_torch_10k": Table(("bench_quality_fashion_mnist_10k.json",), quality_vs_torch),
    "quality_curve_10k": Table(("bench_quality_fashion_mnist_10k.json",), quality_curve),
    "quality_headline": Table(("bench_quality_fashion_mnist_10k.json",), quality_headline),
    # the README's summary
    "headline": Table(("bench_op_family.json", "bench_train_g_once_idle.json", "bench_train_zen3.json",
                       "bench_train_zen3_after_bf16.json", "bench_train_xeon_avx512.json",
                       "bench_train_zen5_bf16_blocked16.json", "bench_train_amx_col2im.json",
                       "bench_modes_batched_ring8_15k_10trials.json",
                       "bench_modes_batched_grid25_20k_slope0.2_10trials.json", "recipes_mnist.json",
                       "slope_study_mnist.json", "bench_quality_fashion_mnist_10k.json", "fid_default_mnist.json"),
                      headline),
}


# ---------------------------------------------------------------- documents

def documents(root: Path) -> list[Path]:
    """README.md and every docs/*.md of the tree."""
    return [p for p in [root / "README.md", *sorted((root / "docs").glob("*.md"))] if p.is_file()]


def render(name: str, root: Path, document: Path) -> str:
    """The block between NAME's markers in `document`: the table, then the line naming its JSON."""
    entry = TABLES[name]
    data = [json.loads((root / "docs" / "data" / source).read_text(encoding="utf-8")) for source in entry.sources]
    links = ", ".join(f"[{source}]({os.path.relpath(root / 'docs' / 'data' / source, document.parent)})"
                      for source in entry.sources)
    return f"{entry.render(*data).rstrip()}\n\nData: {links}.\n"


def check_markers(path: Path, text: str) -> list[str]:
    """Problems with the markers themselves: unknown names, unpaired or nested markers."""
    problems, open_name = [], None  # a document's own problems
    for m in OPENING.finditer(text):
        closing, name = m.group(1) == "/", m.group(2)
        line = text.count("\n", 0, m.start()) + 1
        if name not in TABLES:
            problems.append(f"{path}:{line}: unknown table '{name}' (known: {', '.join(sorted(TABLES))})")
        if closing and open_name != name:
            problems.append(f"{path}:{line}: '/results:{name}' closes nothing open")
        elif not closing and open_name is not None:
            problems.append(f"{path}:{line}: 'results:{name}' opens inside '{open_name}'")
        open_name = None if closing else name
    if open_name is not None:
        problems.append(f"{path}: 'results:{open_name}' is never closed")
    return problems


def process(root: Path, write: bool) -> tuple[list[str], list[str]]:
    """Render every marked block of every document; returns (tables whose text differs, marker problems).
    With write=True the documents are rewritten (only when a marker problem does not stop it)."""
    stale, problems, used = [], [], set()
    for path in documents(root):
        text = path.read_text(encoding="utf-8")
        found = check_markers(path, text)
        problems += found
        if found:
            continue

        def fill(m: re.Match) -> str:
            name = m.group("name")
            used.add(name)
            body = render(name, root, path)
            if body != m.group("body"):
                stale.append(f"{name} ({path.relative_to(root)})")
            return f"<!-- results:{name} -->\n{body}<!-- /results:{name} -->"
        new = MARKER.sub(fill, text)
        if write and new != text:
            path.write_text(new, encoding="utf-8")
    if not problems:
        problems += [f"table '{name}' is in TABLES but no document has its markers"
                     for name in sorted(set(TABLES) - used)]
    return stale, problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a table differs")
    parser.add_argument("--list", action="store_true", help="list the tables, their JSON and where they are")
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository to read (default: this one)")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    if args.list:
        for name, entry in TABLES.items():
            where = [str(p.relative_to(root)) for p in documents(root)
                     if f"<!-- results:{name} -->" in p.read_text(encoding="utf-8")]
            print(f"{name}: {', '.join(entry.sources)} -> {', '.join(where) or 'NOT USED'}")
        return 0
    stale, problems = process(root, write=not args.check)
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    if args.check and stale:
        print("out of date (run python scripts/bench/render_results.py): " + "; ".join(stale), file=sys.stderr)
    elif stale:
        print("rendered: " + "; ".join(stale))
    return 1 if problems or (args.check and stale) else 0


if __name__ == "__main__":
    raise SystemExit(main())
