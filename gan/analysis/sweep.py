"""The one-table summary of a Hydra sweep directory (per-job threads of parallel launchers: gan.training.runtime).

No MindSpore here: the summary reads only files that jobs wrote, as the dashboard's typed records
(gan.analysis.runs: settings from `.hydra/overrides.yaml`, `metrics.json`, `losses.jsonl`, `diagnostics.jsonl`) plus
`status.json`. Each row says how its job ended (finished, failed with its error, ...); failed jobs are left out of
the seed groups (the dashboard's groups) and listed after them.
"""
from __future__ import annotations

import csv
import html
import io
import json
import math
from pathlib import Path

from gan.analysis.channels import SUMMARY_METRICS, network_of, network_order, network_summary
from gan.analysis.runs import SEED_KEY, Run, group_runs, load_run, readable
from gan.core.atomic import write_text_atomic
from gan.core.untrusted import read_yaml
from gan.run.directory import FAILED_STATES, job_state
from gan.run.files import OVERRIDES_FILE, natural_order

OPTUNA_RESULTS = "optimization_results.yaml"  # written by hydra-optuna-sweeper into the sweep directory


def find_jobs(sweep_dir: str | Path) -> list[Path]:
    """Job directories of a Hydra multirun (folders holding .hydra/overrides.yaml), in job-number order."""
    root = Path(sweep_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"{root} is not a directory; pass a Hydra multirun directory")
    jobs = [p.parent.parent for p in root.rglob(OVERRIDES_FILE)]
    return natural_order(jobs, root)


def load_jobs(sweep_dir: str | Path) -> list[Run]:
    """The Run of every job of the sweep (gan.analysis.runs), named by its folder below it, in job order;
    FileNotFoundError when it holds no Hydra job."""
    root = Path(sweep_dir)
    jobs = find_jobs(root)
    if not jobs:
        raise FileNotFoundError(f"no Hydra job under {root}: a job directory holds {OVERRIDES_FILE}")
    return [load_run(job, str(job.relative_to(root))) for job in jobs]


def job_row(run: Run) -> dict:
    """One summary row: job name, how it ended (gan.run.directory.job_state: finished, failed with the error, ...), its
    settings, final metrics, last losses and dead-channel fractions."""
    row: dict = {"job": run.name, "status": job_state(run.dir)[1], **run.settings, **run.metrics}
    if run.losses:
        last = run.losses[-1]
        row.update({"step": last["step"], "loss_d": last["loss_d"], "loss_g": last["loss_g"]})
    if run.diagnostics:
        row.update({f"{net} {m}": network_summary(run.diagnostics[-1], net, m) for net in ("G", "D")
                    for m in SUMMARY_METRICS})
    return row


def summarize(sweep_dir: str | Path) -> list[dict]:
    """Rows of every job of the sweep; FileNotFoundError when it holds no Hydra job."""
    return [job_row(run) for run in load_jobs(sweep_dir)]


def columns(rows: list[dict]) -> list[str]:
    """Every key of the rows, in first-seen order (job, overrides, metrics, losses, diagnostics)."""
    seen: dict[str, None] = {}
    for row in rows:
        seen.update(dict.fromkeys(row))
    return list(seen)


def _text(value) -> str:
    """Text from job folders as a Markdown table cell: one line, markup shown as text (<, >, & escaped), | escaped
    so it cannot split the row, non-UTF-8 bytes of folder names as U+FFFD."""
    return readable(html.escape(" ".join(str(value).split()), quote=False).replace("|", "\\|"))


def _cell(value) -> str:
    """Markdown cell: floats to 4 significant digits, missing values empty, text through _text."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f"{value:.4g}" if isinstance(value, float) else _text(value)


def to_markdown(rows: list[dict]) -> str:
    """A GitHub-flavoured markdown table of the rows."""
    cols = columns(rows)
    lines = ["| " + " | ".join(map(_text, cols)) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_cell(row.get(c)) for c in cols) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def to_csv(rows: list[dict]) -> str:
    """The rows as CSV text (full precision, missing values empty; non-UTF-8 bytes of folder names as U+FFFD)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns(rows), restval="", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return readable(buffer.getvalue())


def optuna_best(sweep_dir: str | Path) -> str | None:
    """One line with the best parameters and value of an Optuna sweep, None when the sweep has no Optuna results."""
    path = Path(sweep_dir) / OPTUNA_RESULTS
    if not path.is_file():
        return None
    results = read_yaml(path) or {}
    if "best_params" not in results or "best_value" not in results:
        raise ValueError(f"{path} has no best_params/best_value; is it hydra-optuna-sweeper's file?")
    params = ", ".join(f"{key}={_cell(value)}" for key, value in results["best_params"].items())
    return f"Optuna best: {params} -> objective {_cell(float(results['best_value']))} ({path})"


def write_summary(sweep_dir: str | Path, out_dir: str | Path | None = None) -> tuple[list[dict], list[Path]]:
    """Write summary.csv and summary.md (atomically) for a sweep; returns the rows and the files written."""
    rows = summarize(sweep_dir)
    out = Path(out_dir or sweep_dir)
    paths = [write_text_atomic(out / "summary.csv", to_csv(rows)),
             write_text_atomic(out / "summary.md", to_markdown(rows))]
    return rows, paths


GROUPS_JSON, GROUPS_MD = "groups.json", "groups.md"  # seed statistics per group of a sweep (write_groups)


def spread(values: list[float]) -> dict:
    """Mean, sample standard deviation (0 for one value), min, max and count of the finite values; None if none."""
    finite = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not finite:
        return None
    mean = sum(finite) / len(finite)
    std = math.sqrt(sum((v - mean) ** 2 for v in finite) / (len(finite) - 1)) if len(finite) > 1 else 0.0
    return {"mean": mean, "std": std, "min": min(finite), "max": max(finite), "n": len(finite)}


def _layer_values(records: list[dict]) -> dict[str, dict[str, list[tuple[int, float | None]]]]:
    """{layer or "G"/"D" (channel-weighted): {metric: [(step, value) per check]}} of one run's diagnostics."""
    series: dict[str, dict[str, list]] = {}
    for record in records:
        names = list(record["layers"]) + sorted({network_of(layer) for layer in record["layers"]})
        for name in names:
            for metric in SUMMARY_METRICS:
                value = (record["layers"][name].get(metric) if name in record["layers"]
                         else network_summary(record, name, metric))
                series.setdefault(name, {}).setdefault(metric, []).append((int(record["step"]), value))
    return series


def group_summary(sweep_dir: str | Path) -> dict:
    """Per group of jobs differing only in their seed (the dashboard's groups): final metrics and dead-channel
    statistics per layer as mean/std/min/max over the seeds, and the same statistics at every check step."""
    root = Path(sweep_dir)
    runs, failed = [], []
    for run in load_jobs(root):
        state, text = job_state(run.dir)
        if state in FAILED_STATES:  # not a result: a group of it would be empty cells or a truncated run
            failed.append({"job": run.name, "status": text})
        else:
            runs.append(run)
    groups, common, varied = group_runs(runs)
    out = []
    for group in groups:
        members = group.runs
        series = [_layer_values(r.diagnostics) for r in members]
        layers = network_order(name for s in series for name in s)
        final, over_time = {}, {}
        for layer in layers:
            for metric in SUMMARY_METRICS:
                per_run = [dict(s.get(layer, {}).get(metric, [])) for s in series]
                steps = sorted({s for points in per_run for s in points})
                if steps:
                    final.setdefault(layer, {})[metric] = spread([p[max(p)] for p in per_run if p])
                    over_time.setdefault(layer, {})[metric] = [
                        {"step": s, **(spread([p.get(s) for p in per_run]) or {"n": 0})} for s in steps]
        metric_names = sorted({k for r in members for k, v in r.metrics.items() if isinstance(v, (int, float))})
        out.append({"label": group.label, "settings": {k: members[0].settings.get(k) for k in varied},
                    "seeds": [r.settings.get(SEED_KEY) for r in members], "jobs": [r.name for r in members],
                    "metrics": {k: spread([r.metrics.get(k) for r in members]) for k in metric_names},
                    "final": final, "over_time": over_time})
    return {"sweep": str(root.resolve().name), "common": common, "varied": varied, "groups": out, "failed": failed}


def _mean_std(stats: dict | None, scale: float = 1.0, digits: int = 1) -> str:
    """"mean ± std" of a spread() dict, scaled (100 for percentages); the mean alone for one value; empty for None."""
    if not stats:
        return ""
    mean = f"{stats['mean'] * scale:.{digits}f}"
    return mean if stats["n"] == 1 else f"{mean} ± {stats['std'] * scale:.{digits}f}"


def groups_markdown(summary: dict, metrics: tuple[str, ...] | None = None, nets: tuple[str, ...] = ("G", "D")) -> str:
    """Markdown tables of a group_summary(): one per dead-channel statistic (percent of channels at the last check,
    rows = groups, columns = the layers of `nets`), then one of the final quality metrics; mean ± std over the seeds."""
    groups = summary["groups"]
    layers = network_order(name for g in groups for name in g["final"] if network_of(name) in nets)
    parts = []
    for metric in SUMMARY_METRICS:
        header = f"| {metric} (% of channels, last check) | seeds | " + " | ".join(map(_text, layers)) + " |"
        rows = [f"| {_text(g['label'])} | {len(g['seeds'])} | "
                + " | ".join(_mean_std(g["final"].get(layer, {}).get(metric), 100) for layer in layers) + " |"
                for g in groups]
        parts.append("\n".join([header, "|" + "---|" * (len(layers) + 2), *rows]))
    names = metrics or sorted({k for g in groups for k in g["metrics"]})
    if names:
        header = "| group | seeds | " + " | ".join(map(_text, names)) + " |"
        rows = [f"| {_text(g['label'])} | {len(g['seeds'])} | "
                + " | ".join(_mean_std(g["metrics"].get(k), 1, 3) for k in names) + " |" for g in groups]
        parts.append("\n".join([header, "|" + "---|" * (len(names) + 2), *rows]))
    if summary.get("failed"):
        parts.append("Jobs left out of the groups above:\n" + "\n".join(f"- job {_text(f['job'])}: {_cell(f['status'])}"
                                                                       for f in summary["failed"]))
    return "\n\n".join(parts) + "\n"


def write_groups(sweep_dir: str | Path, json_path: str | Path | None = None,
                 nets: tuple[str, ...] = ("G", "D")) -> tuple[dict, list[Path]]:
    """Write groups.json and groups.md (tables of the layers of `nets`) into the sweep directory, and the JSON
    also to `json_path` when given."""
    summary = group_summary(sweep_dir)
    text = json.dumps(summary, indent=1, sort_keys=False) + "\n"
    paths = [write_text_atomic(Path(sweep_dir) / GROUPS_JSON, text),
             write_text_atomic(Path(sweep_dir) / GROUPS_MD, groups_markdown(summary, nets=nets))]
    if json_path is not None:
        paths.append(write_text_atomic(json_path, text))
    return summary, paths
