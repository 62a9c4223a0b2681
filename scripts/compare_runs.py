"""Compare finished training runs side by side: one row per recipe (runs that differ only in `seed`), with the
mean and min-max over seeds of the final quality metrics, the training speed and the machine's load.

    python scripts/compare_runs.py outputs/recipes_mnist/* --json recipes.json --markdown table.md

Per run it reads only files the run wrote: `.hydra/overrides.yaml` (the recipe: every override except
`seed`, `runtime.*` and `hydra.*`), the last step in `losses.jsonl` (a run stopped early shows where),
`metrics.jsonl` (the last evaluation and its step; none before the first `eval.interval`), the TensorBoard scalar
`perf/img_per_s` (median over the log steps after the first, which includes the graph compile), the learned
slopes of D's layers in the last `diagnostics.jsonl` record (PReLU / adaptive: per layer mean, min, max), and,
when present, `loadavg.log` (lines `unix_time load1 load5 load15 ...`, e.g. `echo "$(date +%s) $(cat
/proc/loadavg)"` every 20 s beside the run): the mean 1-minute load average while it ran.
"""
from __future__ import annotations

import argparse
import statistics
import struct
import sys
from pathlib import Path

from tensorboardX.proto.event_pb2 import Event

from gan.core.atomic import write_json_atomic, write_text_atomic
from gan.run.files import DIAGNOSTICS_FILE, LOSSES_FILE, METRICS_HISTORY_FILE, read_jsonl, read_overrides

IMG_PER_S_TAG = "perf/img_per_s"
LOAD_FILE = "loadavg.log"
NOT_RECIPE = ("seed", "runtime.", "hydra.")  # override keys that do not change the recipe
METRIC_COLUMNS = ("class_coverage", "class_kl", "mean_confidence", "frechet_distance")


def tensorboard_scalars(run_dir: Path, tag: str) -> list[tuple[int, float]]:
    """(step, value) of one scalar tag from the run's TensorBoard event files (TFRecord framing), step order."""
    points = {}
    for path in sorted((run_dir / "tensorboard").glob("events.out.tfevents.*")):
        data = path.read_bytes()
        pos = 0
        while pos + 12 <= len(data):
            (length,) = struct.unpack_from("<Q", data, pos)
            event = Event.FromString(data[pos + 12:pos + 12 + length])
            pos += 12 + length + 4  # length, its crc, the record, its crc
            for value in event.summary.value:
                if value.tag == tag:
                    points[event.step] = value.simple_value
    return sorted(points.items())


def mean_load(run_dir: Path) -> float | None:
    """Mean 1-minute load average over the run's loadavg.log samples; None without the file."""
    path = run_dir / LOAD_FILE
    if not path.is_file():
        return None
    loads = [float(line.split()[1]) for line in path.read_text().splitlines() if len(line.split()) > 1]
    return statistics.fmean(loads) if loads else None


def d_slopes(run_dir: Path) -> dict[str, dict[str, float]]:
    """Learned slopes of D's layers at the last diagnostics check: {layer: {mean, min, max}} ({} if none)."""
    path = run_dir / DIAGNOSTICS_FILE
    records = read_jsonl(path) if path.is_file() else []
    slopes = next((r["slopes"] for r in reversed(records) if r.get("slopes")), {})
    return {layer: {"mean": statistics.fmean(v), "min": min(v), "max": max(v)}
            for layer, v in sorted(slopes.items()) if layer.startswith("D/")}


def _records(path: Path) -> list[dict]:
    return read_jsonl(path) if path.is_file() else []


def run_row(run_dir: Path) -> dict:
    """One run's recipe, seed, steps, last metrics (and their step), img/s, load and D slopes; ValueError
    naming the run when it is not a Hydra run that logged a step."""
    overrides = read_overrides(run_dir)
    losses = _records(run_dir / LOSSES_FILE)
    if not overrides or not losses:
        raise ValueError(f"{run_dir} is not a Hydra training run that logged a step: it needs .hydra/overrides.yaml "
                         f"and {LOSSES_FILE}")
    metrics = (_records(run_dir / METRICS_HISTORY_FILE) or [{"step": None}])[-1]
    speeds = [v for _, v in tensorboard_scalars(run_dir, IMG_PER_S_TAG)[1:]]
    recipe = " ".join(f"{k}={v}" for k, v in overrides.items() if not k.startswith(NOT_RECIPE)) or "default"
    return {"run": str(run_dir), "recipe": recipe, "seed": int(overrides.get("seed", 0)),
            "steps": losses[-1]["step"], "metrics_step": metrics.pop("step"), **metrics,
            "img_per_s": statistics.median(speeds) if speeds else None, "load1": mean_load(run_dir),
            "d_slopes": d_slopes(run_dir)}


def _spread(values: list) -> dict | None:
    """{mean, min, max} of the non-None values; None when there are none."""
    values = [v for v in values if v is not None]
    return {"mean": statistics.fmean(values), "min": min(values), "max": max(values)} if values else None


def group_rows(rows: list[dict]) -> list[dict]:
    """One entry per recipe, in first-seen order: its seeds and the spread of every numeric column over them."""
    recipes: dict[str, list[dict]] = {}
    for row in rows:
        recipes.setdefault(row["recipe"], []).append(row)
    return [{"recipe": recipe, "seeds": sorted(r["seed"] for r in runs),
             **{key: _spread([r.get(key) for r in runs])
                for key in ("steps", "metrics_step", *METRIC_COLUMNS, "img_per_s", "load1")}}
            for recipe, runs in recipes.items()]


def _cell(spread: dict | None, digits: int) -> str:
    """'mean (min-max)', or the value alone for one seed; '' when missing."""
    if spread is None:
        return ""
    mean = f"{spread['mean']:.{digits}f}"
    return mean if spread["min"] == spread["max"] else f"{mean} ({spread['min']:.{digits}f}-{spread['max']:.{digits}f})"


def to_markdown(groups: list[dict]) -> str:
    """The recipes as a markdown table: mean (min-max over seeds) per column."""
    head = ["recipe", "seeds", "steps", "metrics at step", "class coverage", "class KL", "mean confidence",
            "Frechet distance", "img/s", "load"]
    digits = {"steps": 0, "metrics_step": 0, "class_coverage": 1, "class_kl": 3, "mean_confidence": 3,
              "frechet_distance": 1, "img_per_s": 0, "load1": 1}
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for g in groups:
        cells = [f"`{g['recipe']}`", ",".join(map(str, g["seeds"]))] + [_cell(g[k], d) for k, d in digits.items()]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Print the markdown table; write the JSON (runs and recipes) and the markdown where asked."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run directories (hydra.run.dir of each)")
    parser.add_argument("--json", type=Path, help="write {'runs': [...], 'recipes': [...]} here")
    parser.add_argument("--markdown", type=Path, help="write the markdown table here")
    args = parser.parse_args(argv)
    try:
        rows = [run_row(run) for run in args.runs]
    except ValueError as err:
        parser.error(str(err))
    groups = group_rows(rows)
    table = to_markdown(groups)
    if args.json:
        write_json_atomic(args.json, {"runs": rows, "recipes": groups})
    if args.markdown:
        write_text_atomic(args.markdown, table)
    print(table, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
