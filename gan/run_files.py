"""Files of a run directory: their names, and the jsonl/atomic-write helpers every writer and reader shares.

No MindSpore here: the dashboard and the sweep summary read these files on any machine.
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path

import yaml

from gan.files import write_atomic

DIAGNOSTICS_FILE = "diagnostics.jsonl"  # one record per diagnostics check (gan.diagnostics)
LOSSES_FILE = "losses.jsonl"            # one line per log interval: {"step", "loss_d", "loss_g", "d_x", "d_g_z"}
METRICS_FILE = "metrics.json"           # the latest quality metrics, flat {name: number} (gan.evaluation)
METRICS_HISTORY_FILE = "metrics.jsonl"  # one record {"step", name: value, ...} per evaluation
EVENTS_FILE = "events.jsonl"            # {"step", "kind", "detail"} per event (resume, recycle, skipped step, ...)
CONFIG_FILES = (".hydra/config.yaml", "config.yaml")
OVERRIDES_FILE = ".hydra/overrides.yaml"  # the command-line overrides of a Hydra job


def losses_record(step: int, loss_d: float, loss_g: float, d_x: float, d_g_z: float) -> dict:
    """One `losses.jsonl` line; non-finite values (a diverged step) become null, which JSON can hold."""
    values = {"loss_d": loss_d, "loss_g": loss_g, "d_x": d_x, "d_g_z": d_g_z}
    return {"step": int(step), **{k: float(v) if math.isfinite(v) else None for k, v in values.items()}}


def append_jsonl(path: str | Path, record: dict) -> None:
    """Append one JSON line and fsync it, so a crash loses at most the line being written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(record, separators=(",", ":"), allow_nan=False) + "\n")
        f.flush()
        os.fsync(f.fileno())


def read_records(path: str | Path) -> list[dict]:
    """Every record of a jsonl file in file order, each a JSON object with an integer "step".

    A partially written last line (a crash mid-append) is ignored; a bad line elsewhere is a ValueError.
    """
    path = Path(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            if number == len(lines):
                break
            raise ValueError(f"{path}:{number}: not a JSON record ({err}); only the last line may be partial") \
                from err
        if not isinstance(record, dict) or not isinstance(record.get("step"), int):
            raise ValueError(f"{path}:{number}: a record must be a JSON object with an integer 'step', got "
                             f"{line[:80]!r}")
        records.append(record)
    return records


def read_jsonl(path: str | Path) -> list[dict]:
    """Records of a jsonl file sorted by "step", the last one per step winning (a resumed run rewrites steps)."""
    by_step = {record["step"]: record for record in read_records(path)}
    return [by_step[s] for s in sorted(by_step)]


def read_events(run_dir: str | Path) -> list[dict]:
    """The run's events in the order they happened ([] when there is no events.jsonl)."""
    path = Path(run_dir) / EVENTS_FILE
    return read_records(path) if path.is_file() else []


def read_overrides(run_dir: str | Path) -> dict[str, str]:
    """A Hydra job's command-line overrides as {key: value} ("+key"/"~key" prefixes dropped); {} without the file."""
    path = Path(run_dir) / OVERRIDES_FILE
    if not path.is_file():
        return {}
    items = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    if not isinstance(items, list):
        raise ValueError(f"{path}: expected a YAML list of key=value overrides, got {type(items).__name__}")
    overrides = {}
    for item in items:
        key, _, value = str(item).partition("=")
        overrides[key.lstrip("+~")] = value
    return overrides


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write a UTF-8 text file atomically (temporary file in the same folder, fsync, rename)."""
    return write_atomic(path, text.encode("utf-8"))
