"""Collect the slope study (`python train.py -m experiment=slope_study`, docs/slope_study.md): one record per run of
its Hydra multirun folder, and the tables that answer it.

    python scripts/bench/slope_study.py multirun/slope_study --json docs/data/slope_fid_fashion_mnist.json
    python scripts/bench/slope_study.py NEW_DIR --with docs/data/slope_fid_fashion_mnist.json --json F  # add runs

Each record: the job, how it ended, its command, D's activation and slope, d_norm, lr, seed, steps, the final FID,
KID, precision and recall, the FID curve, the dead / dormant / grad-dead / persistently dead / dead-or-dormant shares
of each D layer (and of D, channel-weighted) at the last check, the stability measures below and the wall time
(status.json's elapsed_s). Printed: FID by activation x D variant (mean ± SE over seeds, difference from ReLU in
standard errors of the difference), the mean FID curve of each cell, per run D's dead-or-dormant share against the
final FID (with Pearson's r), and stability.

Stability, per run (thresholds in DEFINITIONS, written into the JSON):
- *regressed*: the FID at the last point of its curve is more than REGRESS_FRAC above the lowest FID of the curve
  (it got worse and had not recovered by the end);
- *collapse events*: stretches of at least COLLAPSE_RECORDS consecutive losses.jsonl records (train.log_every steps
  apart) in which D(x) - D(G(z)) >= COLLAPSE_GAP: D separates real from generated images almost perfectly;
- *unstable*: regressed, or at least one collapse event.
Per cell, the spread of the final FID over seeds (sample SD). The claim "a LeakyReLU D trains about 40% more stably
than a ReLU one" is tested as the reduction of that spread, 1 - SD(LeakyReLU) / SD(ReLU), with its 95% confidence
interval from the F distribution of the variance ratio (normal FIDs assumed), next to the unstable-run counts.

Only finished runs enter the statistics; runs of different lengths or FID settings are refused (collect one study
at a time). Run folders come from other people: every file is read with bounds (gan.analysis.runs), every value
checked.
"""
from __future__ import annotations

import argparse
import json
import math
import platform
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import records  # noqa: E402  (beside this file: the one record shape of docs/data)

from gan.analysis.runs import Run
from gan.analysis.sweep import load_jobs
from gan.config.activation_kinds import ACTIVATION_KINDS
from gan.config.schema import flatten
from gan.core.untrusted import UntrustedFileError, read_json, read_yaml
from gan.run.directory import STATUS_FILE, job_state
from gan.run.files import CONFIG_FILES

REGRESS_FRAC = 0.25
COLLAPSE_GAP = 0.9
COLLAPSE_RECORDS = 5
DEFINITIONS = {
    "regressed": f"FID at the last curve point > (1 + {REGRESS_FRAC}) x the lowest FID of the curve",
    "collapse_event": f">= {COLLAPSE_RECORDS} consecutive losses.jsonl records with D(x) - D(G(z)) >= {COLLAPSE_GAP}",
    "unstable": "regressed, or at least one collapse event",
    "fid_spread": "sample SD of the final FID over the seeds of a cell",
    "spread_reduction": "1 - SD(activation) / SD(ReLU) in the same D variant; 95% CI from F(n-1, n_relu-1)",
    "dead_or_dormant": "share of a layer's channels dead (>= dead_neg_frac of pre-activations <= 0) or dormant "
                       "(mean |output| / layer mean <= tau) at the last check",
    "wall_s": "status.json's elapsed_s: compiling, steps, outputs and evaluations, summed over the sessions up to the "
              "checkpoint each resumed from; the first FID of a study also featurises the reference (once, cached)",
}
SHARES = ("dead_frac", "dormant_frac", "grad_dead_frac", "persistent_frac")
SAME_ACROSS_RUNS = ("data.name", "model.name", "model.image_size", "train.steps", "eval.fid_samples",
                    "eval.fid_reference", "eval.fid_convention")
MAX_EARLIER_BYTES = 64 << 20  # an earlier collection's data file (about 3 KB a run)
STUDY_FILE = "multirun.yaml"  # Hydra's record of the latest multirun command in the sweep folder


class StudyError(ValueError):
    """The folder does not hold one slope study (mixed settings, a run's values out of range)."""


def _config(run: Run) -> dict:
    """The run's resolved config (.hydra/config.yaml, bounded YAML), flattened to dotted keys."""
    for name in CONFIG_FILES:
        path = run.dir / name
        if path.is_file():
            tree = read_yaml(path)
            if not isinstance(tree, dict):
                raise UntrustedFileError(f"{path}: a YAML {type(tree).__name__}, not a mapping of settings")
            return flatten(tree)
    raise StudyError(f"{run.dir}: no {' or '.join(CONFIG_FILES)}; is it a train.py run?")


def activation(config: dict) -> tuple[str, float | list | None]:
    """(label, slope) of D's activation: "relu" for slope 0, "leaky_relu 0.2", "prelu"...; the slope (per-layer list
    with act.d_layers) for kinds whose slope is set, None where it is learned or random."""
    kind = config.get("act.d_kind", "leaky_relu")
    row = ACTIVATION_KINDS.get(kind)
    if row is None:
        raise StudyError(f"act.d_kind={kind!r} is not one of {sorted(ACTIVATION_KINDS)}")
    if kind == "relu":
        return "relu", 0.0
    if not row.layer_slopes:
        return kind, None
    layers = config.get("act.d_layers")
    if isinstance(layers, list):
        slopes = [_number(s, f"act.d_layers[{i}]") for i, s in enumerate(layers)]
        return f"{kind} {slopes}", slopes
    slope = _required(config, "act.negative_slope")
    return ("relu" if slope == 0 else f"{kind} {slope:g}"), slope


def layer_shares(record: dict) -> dict:
    """Per D layer (record order) and for D as a whole (channel-weighted): SHARES and dead_or_dormant at one check."""
    out, totals, channels_sum = {}, dict.fromkeys((*SHARES, "dead_or_dormant"), 0.0), 0
    for name, layer in record["layers"].items():
        if not name.startswith("D/"):
            continue
        channels = layer.get("channels")
        if isinstance(channels, bool) or not isinstance(channels, int) or channels <= 0:
            raise StudyError(f"step {record['step']} layer {name}: 'channels' must be a positive integer")
        union = set()
        for key in ("dead", "dormant"):
            indices = layer.get(key, [])
            if not isinstance(indices, list) or not all(isinstance(i, int) and 0 <= i < channels for i in indices):
                raise StudyError(f"step {record['step']} layer {name}: {key!r} must list channel indices below "
                                 f"{channels}")
            union.update(indices)
        shares = {key: layer.get(key) for key in SHARES}
        shares["dead_or_dormant"] = len(union) / channels
        out[name] = {"channels": channels, **shares}
        channels_sum += channels
        for key, value in shares.items():
            totals[key] = None if value is None or totals[key] is None else totals[key] + value * channels
    if channels_sum:
        out["D"] = {"channels": channels_sum,
                    **{k: None if v is None else v / channels_sum for k, v in totals.items()}}
    return out


def collapse_events(losses: list[dict]) -> tuple[int, float]:
    """(events, share of records in one) of the collapse criterion (module docstring) over a run's losses."""
    flags = [r.get("d_x") is not None and r.get("d_g_z") is not None and r["d_x"] - r["d_g_z"] >= COLLAPSE_GAP
             for r in losses]
    events, in_event, streak = 0, 0, 0
    for flag in [*flags, False]:
        if flag:
            streak += 1
            continue
        if streak >= COLLAPSE_RECORDS:
            events, in_event = events + 1, in_event + streak
        streak = 0
    return events, in_event / len(flags) if flags else 0.0


def regressed(curve: list[dict]) -> bool | None:
    """Whether the FID at the curve's last point is more than REGRESS_FRAC above its lowest; None for < 2 points."""
    fids = [p["fid"] for p in curve]
    return None if len(fids) < 2 else fids[-1] > (1 + REGRESS_FRAC) * min(fids)


def _status(run: Run) -> dict:
    path = run.dir / STATUS_FILE
    status = read_json(path) if path.is_file() else {}
    return status if isinstance(status, dict) else {}


def _number(value, where: str) -> float | None:
    """`value` as a float (None stays None); StudyError naming `where` for anything but a finite number."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise StudyError(f"{where} is {value!r:.60}, not a finite number")
    return float(value)


def _required(config: dict, key: str) -> float:
    """The number at `key` of a run's config; StudyError naming the key when it is missing or not a number."""
    value = _number(config.get(key), f"config key {key}")
    if value is None:
        raise StudyError(f"config key {key} is missing")
    return value


def run_record(run: Run, hydra_overrides: list[str]) -> dict:
    """The study's record of one job (module docstring); `hydra_overrides`: the multirun's (hydra.sweep.dir...), for
    the command that continues or repeats this job alone; StudyError naming the folder for a value out of place."""
    try:
        return _run_record(run, hydra_overrides)
    except StudyError as err:
        raise StudyError(f"{run.dir}: {err}") from None


def _run_record(run: Run, hydra_overrides: list[str]) -> dict:
    config = _config(run)
    label, slope = activation(config)
    state, how = job_state(run.dir)
    status = _status(run)
    curve = [{"step": r["step"], "fid": r["fid"], "kid": r.get("kid")} for r in run.metrics_history
             if r.get("fid") is not None]
    target = config.get("train.steps")
    done = state == "finished" and bool(curve) and curve[-1]["step"] == target
    final = next((r for r in reversed(run.metrics_history) if r.get("fid") is not None), {}) if done else {}
    events, share = collapse_events(run.losses)
    overrides = [*hydra_overrides, *(f"{k}={v}" for k, v in run.settings.items())]
    record = {
        "job": run.name, "state": state, "status": how, "finished": done,
        "command": "python train.py -m " + " ".join(shlex.quote(o) for o in overrides), "host": status.get("host"),
        "activation": label, "d_kind": config.get("act.d_kind"), "slope": slope,
        "d_norm": str(config.get("model.d_norm")), "lr": _required(config, "train.lr"),
        "seed": int(_required(config, "seed")),
        "steps": run.last_step(), "target_steps": target,
        **{k.split(".", 1)[1]: config.get(k) for k in SAME_ACROSS_RUNS if k != "train.steps"},
        **{name: final.get(name) for name in ("fid", "kid", "kid_std", "precision", "recall")},
        "fid_curve": curve,
        "d_layers_end": layer_shares(run.diagnostics[-1]) if run.diagnostics else {},
        "diagnostics_step": run.diagnostics[-1]["step"] if run.diagnostics else None,
        "regressed": regressed(curve) if done else None, "collapse_events": events, "collapse_share": share,
        "wall_s": _number(status.get("elapsed_s"), f"{run.dir / STATUS_FILE} elapsed_s"),
    }
    return {**record, "variant": variant(record)}


def multirun_overrides(sweep_dir: Path) -> dict[str, list[str]]:
    """{"hydra": [...], "task": [...]}: the overrides of the folder's latest multirun command (Hydra's multirun.yaml),
    empty lists without it."""
    path = Path(sweep_dir) / STUDY_FILE
    tree = read_yaml(path) if path.is_file() else None
    found = tree.get("hydra", {}).get("overrides", {}) if isinstance(tree, dict) else {}
    found = found if isinstance(found, dict) else {}
    return {part: [str(o) for o in found.get(part) or [] if not isinstance(o, (dict, list))]
            for part in ("hydra", "task")}


def collect(sweep_dir: str | Path, earlier: Sequence[dict] = ()) -> list[dict]:
    """The records of every job under a study's multirun folder and the finished `earlier` records of jobs the folder
    no longer holds (by D variant, ReLU first, then seed); StudyError when the finished runs do not share
    SAME_ACROSS_RUNS."""
    hydra = [o for o in multirun_overrides(Path(sweep_dir))["hydra"] if o.startswith("hydra.sweep.")]
    jobs = [run_record(run, hydra) for run in load_jobs(sweep_dir)]
    here = {r["job"] for r in jobs}
    jobs += [r for r in earlier if r["finished"] and r["job"] not in here]
    jobs.sort(key=lambda r: (r["variant"], r["activation"] != "relu", str(r["activation"]), r["seed"]))
    finished = [r for r in jobs if r["finished"]]
    for key in SAME_ACROSS_RUNS:
        field = "target_steps" if key == "train.steps" else key.split(".", 1)[1]
        values = sorted({str(r[field]) for r in finished})
        if len(values) > 1:
            raise StudyError(f"{sweep_dir}: the finished runs differ in {key} ({', '.join(values)}); collect one "
                             f"study (one length and FID setting) at a time")
    return jobs


def _name(value) -> bool:
    """A short non-empty string (a label or setting of an earlier record's row)."""
    return isinstance(value, str) and 0 < len(value) <= 100


# What an earlier record's row must hold to join the statistics: field -> check (the analysis reads no other).
_ROW_CHECKS = {
    "job": lambda v: isinstance(v, str) and 0 < len(v) <= 500, "finished": lambda v: v is True,
    "activation": _name, "d_norm": _name, "name": _name, "fid_convention": _name,
    "seed": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "collapse_events": lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
    "regressed": lambda v: isinstance(v, bool), "fid_curve": lambda v: isinstance(v, list) and len(v) <= 1000,
    "d_layers_end": lambda v: isinstance(v, dict) and len(v) <= 1000,
}


def earlier_runs(path: Path) -> list[dict]:
    """The finished run rows of a data file this script wrote (the study's earlier collection, from a folder that is
    gone or on another machine), each checked as a folder's run would be; StudyError naming the file, row and field."""
    try:
        data = records.check(read_json(path, MAX_EARLIER_BYTES), str(path))
    except (records.RecordError, UntrustedFileError) as err:
        raise StudyError(str(err)) from None
    rows = [row for record in data if record.get("label") == "slope study" for row in record.get("rows") or []]
    out = []
    for i, row in enumerate(rows):
        where = f"{path}: run {i} ({str(row.get('job'))[:80]})"  # records.check: every row is an object
        if row.get("finished") is not True:
            continue
        bad = next((k for k, ok in _ROW_CHECKS.items() if not ok(row.get(k))), None)
        if bad is not None:
            raise StudyError(f"{where}: {bad} is {row.get(bad)!r:.60}")
        for key in ("lr", "fid", "kid", "target_steps", "image_size", "fid_samples", "fid_reference"):
            if _number(row.get(key), f"{where}: {key}") is None and key != "kid":
                raise StudyError(f"{where}: {key} is missing")
        for point in row["fid_curve"]:
            if not isinstance(point, dict) or not isinstance(point.get("step"), int):
                raise StudyError(f"{where}: a fid_curve point is {point!r:.60}")
            _number(point.get("fid"), f"{where}: fid_curve fid")
        for layer, shares in row["d_layers_end"].items():
            if not isinstance(shares, dict):
                raise StudyError(f"{where}: d_layers_end {layer!r:.40} is not an object")
            for name in (*SHARES, "dead_or_dormant"):
                value = _number(shares.get(name), f"{where}: d_layers_end {layer!r:.40} {name}")
                if value is not None and not 0 <= value <= 1:
                    raise StudyError(f"{where}: d_layers_end {layer!r:.40} {name} is {value}, not a share in [0, 1]")
        out.append({**row, "variant": variant(row)})
    return out


def variant(record: dict) -> str:
    """The D variant of a record: normaliser and learning rate."""
    return f"d_norm={record['d_norm']}, lr={record['lr']:g}"


def mean_se(values: list[float]) -> dict:
    """Mean, sample SD and standard error (SD / sqrt(n); None for one value) of the values, n and the values."""
    n = len(values)
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else None
    return {"n": n, "mean": mean, "sd": sd, "se": None if sd is None else sd / math.sqrt(n), "values": values}


def _beta_cdf(x: float, a: float, b: float, points: int = 20001) -> float:
    """The regularised incomplete beta function I_x(a, b) for a, b >= 1/2, by the trapezoid rule in theta with
    x = sin(theta)^2, where the integrand 2 sin^(2a-1) cos^(2b-1) has no singularity."""
    def integral(upper: float) -> float:
        theta = np.linspace(0.0, upper, points)
        y = 2 * np.sin(theta) ** (2 * a - 1) * np.cos(theta) ** (2 * b - 1)
        return float(np.sum((y[1:] + y[:-1]) * np.diff(theta)) / 2)
    return integral(math.asin(math.sqrt(min(max(x, 0.0), 1.0)))) / integral(math.pi / 2)


def f_quantile(p: float, d1: int, d2: int) -> float:
    """The p-quantile of the F(d1, d2) distribution (bisection on its CDF, I_{d1 f / (d1 f + d2)}(d1/2, d2/2))."""
    lo, hi = -30.0, 30.0  # log f
    for _ in range(80):
        mid = (lo + hi) / 2
        f = math.exp(mid)
        lo, hi = (mid, hi) if _beta_cdf(d1 * f / (d1 * f + d2), d1 / 2, d2 / 2) < p else (lo, mid)
    return math.exp((lo + hi) / 2)


def spread_reduction(sd: float, n: int, sd_relu: float, n_relu: int) -> dict | None:
    """1 - sd / sd_relu with its 95% CI (F distribution of the variance ratio); None without two SDs to compare."""
    if sd is None or not sd_relu or n < 2 or n_relu < 2:
        return None
    ratio = (sd / sd_relu) ** 2
    low = ratio / f_quantile(0.975, n - 1, n_relu - 1)
    high = ratio / f_quantile(0.025, n - 1, n_relu - 1)
    return {"reduction": 1 - math.sqrt(ratio), "ci95": [1 - math.sqrt(high), 1 - math.sqrt(low)]}


def pearson(x: list[float], y: list[float]) -> float | None:
    """Pearson's correlation coefficient; None for fewer than 3 pairs or a constant side."""
    if len(x) < 3:
        return None
    mx, my = sum(x) / len(x), sum(y) / len(y)
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx, syy = sum((a - mx) ** 2 for a in x), sum((b - my) ** 2 for b in y)
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else None


def analyse(jobs: list[dict]) -> dict:
    """Cells (D variant x activation: FID and KID over seeds, difference from ReLU, mean curve, stability) and
    channel death against FID, from the finished records."""
    done = [r for r in jobs if r["finished"]]
    cells: dict[tuple[str, str], list[dict]] = {}
    for r in done:
        cells.setdefault((variant(r), r["activation"]), []).append(r)
    out = []
    for (var, act), runs in cells.items():
        fid = mean_se([r["fid"] for r in runs])
        kids = [r["kid"] for r in runs if r["kid"] is not None]
        steps = sorted({p["step"] for r in runs for p in r["fid_curve"]})
        curve = [{"step": s, **mean_se(v)} for s in steps
                 if (v := [p["fid"] for r in runs for p in r["fid_curve"] if p["step"] == s])]
        out.append({"variant": var, "activation": act, "seeds": sorted(r["seed"] for r in runs), "fid": fid,
                    "kid": mean_se(kids) if kids else None, "fid_curve": curve,
                    "regressed": sum(bool(r["regressed"]) for r in runs),
                    "collapse_events": sum(r["collapse_events"] for r in runs),
                    "unstable": sum(bool(r["regressed"]) or r["collapse_events"] > 0 for r in runs),
                    "d_dead_or_dormant": mean_se(shares) if (shares := [r["d_layers_end"]["D"]["dead_or_dormant"]
                                                                        for r in runs if "D" in r["d_layers_end"]])
                    else None})
    for cell in out:
        relu = next((c for c in out if c["variant"] == cell["variant"] and c["activation"] == "relu"), None)
        cell["vs_relu"] = None
        if relu is not None and cell is not relu:
            a, b = cell["fid"], relu["fid"]
            se = math.sqrt(a["se"] ** 2 + b["se"] ** 2) if a["se"] is not None and b["se"] is not None else None
            diff = a["mean"] - b["mean"]
            cell["vs_relu"] = {"fid_diff": diff, "se_diff": se, "in_se": diff / se if se else None,
                               "spread": spread_reduction(a["sd"], a["n"], b["sd"], b["n"]),
                               "unstable": [cell["unstable"], a["n"]], "unstable_relu": [relu["unstable"], b["n"]]}
    death = {}
    for var in sorted({c["variant"] for c in out}) + ["all"]:
        runs = [r for r in done if var in ("all", variant(r)) and "D" in r["d_layers_end"]]
        death[var] = {"n": len(runs), "pearson_r": pearson([r["d_layers_end"]["D"]["dead_or_dormant"] for r in runs],
                                                           [r["fid"] for r in runs])}
    return {"cells": out, "death_vs_fid": death}


def _pm(stats: dict | None, digits: int = 1, scale: float = 1.0) -> str:
    if not stats:
        return ""
    if stats["se"] is None:
        return f"{stats['mean'] * scale:.{digits}f}"
    return f"{stats['mean'] * scale:.{digits}f} ± {stats['se'] * scale:.{digits}f}"


def _table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(map(str, row)) + " |" for row in rows])


def tables(jobs: list[dict], analysis: dict) -> str:
    """The answer tables as markdown (FID, curve, channel death against FID, stability)."""
    cells = analysis["cells"]

    def versus(cell: dict) -> str:
        v = cell["vs_relu"]
        if v is None:
            return ""
        return f"{v['fid_diff']:+.1f}" + (f" ({v['in_se']:+.1f} SE)" if v["in_se"] is not None else "")

    parts = [_table(["D variant", "D activation", "seeds", "FID (mean ± SE)", "KID x 1000", "FID - ReLU"],
                    [[c["variant"], c["activation"], len(c["seeds"]), _pm(c["fid"]), _pm(c["kid"], 2, 1000),
                      versus(c)] for c in cells])]
    steps = sorted({p["step"] for c in cells for p in c["fid_curve"]})
    parts.append(_table(["D variant", "D activation", *[f"FID at {s}" for s in steps]],
                        [[c["variant"], c["activation"],
                          *[_pm(next((p for p in c["fid_curve"] if p["step"] == s), None)) for s in steps]]
                         for c in cells]))
    done = [r for r in jobs if r["finished"]]
    parts.append(_table(["job", "D variant", "D activation", "seed", "D dead %", "D dormant %",
                         "D dead or dormant %", "final FID"],
                        [[r["job"], variant(r), r["activation"], r["seed"],
                          *[f"{100 * (r['d_layers_end'].get('D', {}).get(k) or 0):.1f}"
                            for k in ("dead_frac", "dormant_frac", "dead_or_dormant")], f"{r['fid']:.1f}"]
                         for r in done]))
    parts.append("Pearson r (D dead-or-dormant share, final FID): " + "; ".join(
        f"{var}: {'-' if d['pearson_r'] is None else format(d['pearson_r'], '+.2f')} (n={d['n']})"
        for var, d in analysis["death_vs_fid"].items()))

    def reduction(cell: dict) -> str:
        s = (cell["vs_relu"] or {}).get("spread")
        if s is None:
            return ""
        low, high = s["ci95"]
        return f"{100 * s['reduction']:+.0f}% ({100 * low:+.0f}% to {100 * high:+.0f}%)"

    parts.append(_table(["D variant", "D activation", "FID SD over seeds", "regressed", "collapse events",
                         "unstable runs", "SD reduction vs ReLU (95% CI)"],
                        [[c["variant"], c["activation"], "" if c["fid"]["sd"] is None else f"{c['fid']['sd']:.2f}",
                          f"{c['regressed']}/{c['fid']['n']}", c["collapse_events"],
                          f"{c['unstable']}/{c['fid']['n']}", reduction(c)] for c in cells]))
    left = [r for r in jobs if not r["finished"]]
    if left:
        parts.append("Not in the tables (not finished): " + "; ".join(f"{r['job']}: {r['status'] or r['state']}"
                                                                     for r in left))
    return "\n\n".join(parts) + "\n"


def context(sweep_dir: Path, analysis: dict) -> dict:
    """What every run of the record shares: the study's latest multirun command (Hydra's multirun.yaml), its folder,
    the definitions of the statistics, and the statistics themselves (cells, death against FID)."""
    overrides = multirun_overrides(sweep_dir)
    command = ("python train.py -m " + " ".join(shlex.quote(o) for o in overrides["hydra"] + overrides["task"])
               if overrides["task"] else None)
    return {"study_command": command, "sweep_dir": str(sweep_dir), "python": platform.python_version(),
            "definitions": DEFINITIONS, **analysis}


def main(argv: list[str] | None = None) -> int:
    """Collect, print the tables, write the JSON; exit status 2 with the reason when the folder is not a study."""
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sweep_dir", type=Path, help="the study's multirun folder (hydra.sweep.dir)")
    parser.add_argument("--json", type=Path, help="write the records and statistics here")
    parser.add_argument("--with", dest="earlier", type=Path, metavar="FILE",
                        help="a data file this script wrote for the same study: its finished runs that the folder no "
                             "longer holds join the statistics (a job in both is taken from the folder)")
    args = parser.parse_args(argv)
    try:
        runs = collect(args.sweep_dir, earlier_runs(args.earlier) if args.earlier else [])
    except (FileNotFoundError, ValueError) as err:  # StudyError and UntrustedFileError are ValueErrors
        parser.error(str(err))
    analysis = analyse(runs)
    print(tables(runs, analysis))
    if args.json:  # one record (scripts/bench/records.py): a row per run, the statistics in its context
        record = records.record(runs, command=["python", "scripts/bench/slope_study.py", *argv], label="slope study",
                                context=context(args.sweep_dir, analysis))
        json.dumps(record, allow_nan=False)  # no NaN or infinity reaches the data file
        records.write(args.json, [record])
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
