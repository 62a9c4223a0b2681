"""The one-table summary of a Hydra sweep directory (per-job threads of parallel launchers: gan.runtime).

No MindSpore here: the summary reads only files that jobs wrote (`.hydra/overrides.yaml`, `metrics.json`,
`losses.jsonl`, `diagnostics.jsonl`).
"""
from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import yaml

from gan.dashboard import SUMMARY_METRICS, network_summary
from gan.run_files import (DIAGNOSTICS_FILE, LOSSES_FILE, METRICS_FILE, OVERRIDES_FILE, read_jsonl, read_overrides,
                           write_text_atomic)

OPTUNA_RESULTS = "optimization_results.yaml"  # written by hydra-optuna-sweeper into the sweep directory


def find_jobs(sweep_dir: str | Path) -> list[Path]:
    """Job directories of a Hydra multirun (folders holding .hydra/overrides.yaml), in job-number order."""
    root = Path(sweep_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"{root} is not a directory; pass a Hydra multirun directory")
    jobs = [p.parent.parent for p in root.rglob(OVERRIDES_FILE)]
    return sorted(jobs, key=lambda p: [int(part) if part.isdigit() else part for part in p.relative_to(root).parts])


def job_row(job_dir: Path, root: Path) -> dict:
    """One summary row: job name, its overrides, final metrics, last losses and dead-channel fractions."""
    row: dict = {"job": str(job_dir.relative_to(root)), **read_overrides(job_dir)}
    metrics_path = job_dir / METRICS_FILE
    if metrics_path.is_file():
        row.update(json.loads(metrics_path.read_text(encoding="utf-8")))
    losses = read_jsonl(job_dir / LOSSES_FILE) if (job_dir / LOSSES_FILE).is_file() else []
    if losses:
        row.update({"step": losses[-1]["step"], "loss_d": losses[-1]["loss_d"], "loss_g": losses[-1]["loss_g"]})
    records = read_jsonl(job_dir / DIAGNOSTICS_FILE) if (job_dir / DIAGNOSTICS_FILE).is_file() else []
    if records:
        row.update({f"{net} {m}": network_summary(records[-1], net, m) for net in ("G", "D") for m in SUMMARY_METRICS})
    return row


def summarize(sweep_dir: str | Path) -> list[dict]:
    """Rows of every job of the sweep; FileNotFoundError when it holds no Hydra job."""
    root = Path(sweep_dir)
    jobs = find_jobs(root)
    if not jobs:
        raise FileNotFoundError(f"no Hydra job under {root}: a job directory holds {OVERRIDES_FILE}")
    return [job_row(job, root) for job in jobs]


def columns(rows: list[dict]) -> list[str]:
    """Every key of the rows, in first-seen order (job, overrides, metrics, losses, diagnostics)."""
    seen: dict[str, None] = {}
    for row in rows:
        seen.update(dict.fromkeys(row))
    return list(seen)


def _cell(value) -> str:
    """Markdown cell: floats to 4 significant digits, missing values empty."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def to_markdown(rows: list[dict]) -> str:
    """A GitHub-flavoured markdown table of the rows."""
    cols = columns(rows)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_cell(row.get(c)) for c in cols) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def to_csv(rows: list[dict]) -> str:
    """The rows as CSV text (full precision, missing values empty)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns(rows), restval="", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def optuna_best(sweep_dir: str | Path) -> str | None:
    """One line with the best parameters and value of an Optuna sweep, None when the sweep has no Optuna results."""
    path = Path(sweep_dir) / OPTUNA_RESULTS
    if not path.is_file():
        return None
    results = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if "best_params" not in results or "best_value" not in results:
        raise ValueError(f"{path} has no best_params/best_value; is it hydra-optuna-sweeper's file?")
    params = ", ".join(f"{key}={_cell(value)}" for key, value in results["best_params"].items())
    return f"Optuna best: {params} -> objective {_cell(float(results['best_value']))} ({path})"


def write_summary(sweep_dir: str | Path, out_dir: str | Path | None = None) -> tuple[list[dict], list[Path]]:
    """Write summary.csv and summary.md (atomically) for a sweep; returns the rows and the files written."""
    rows = summarize(sweep_dir)
    out = Path(out_dir or sweep_dir)
    paths = [write_text_atomic(out / "summary.csv", to_csv(rows)), write_text_atomic(out / "summary.md", to_markdown(rows))]
    return rows, paths
