"""The files of a run directory and their jsonl records: names, append, read, and repair on resume. (Who may use
a run directory, run.lock and status.json: gan.run.directory; atomic whole-file writes: gan.core.atomic.)

Every `*.jsonl` file of a run holds one JSON object per line with an integer "step", appended and fsynced
one line at a time, so a crash loses at most a partial last line. Resuming from the checkpoint of step S
truncates each of them back to its complete records with step <= S (`truncate_for_resume`): the resumed
run rewrites the later steps, never glues a record to a partial line, and never duplicates a step.

`events.jsonl` records what happened to the run, one `{"step": int, "kind": str, "detail": {...}}` per
event; kinds (`EVENT_KINDS`): `resume` (detail: {"checkpoint": path}), `resume_override` (detail:
{"changed": {"dotted.key": [old, new], ...}}), `nonfinite_skip` (detail: {"network": ..., ...}), `nonfinite_stop`
(detail: {"steps": n in a row, "layer": first non-finite, "checkpoint": name}; training stopped), `recycle`
(detail: {"net": "D", "layer": "D/act1", "channels": [indices], "count": n}; one per layer, gan.diagnostics.recycle),
`data_skip` (detail: {"file": path below data.root, "reason": ..., "count": images skipped so far}; an image
that became unreadable during the run, gan.data.sources). A `resume` that set later checkpoints aside lists them
(detail "superseded": [names], gan.models.checkpoint.set_aside_later).
"""
from __future__ import annotations

import json
import logging
import math
import os
from pathlib import Path
from typing import Any

from gan.core.atomic import write_text_atomic
from gan.core.untrusted import read_text, read_yaml

CHECKPOINT_DIR = "checkpoints"  # step_XXXXXXXX.ckpt files (gan.models.checkpoint)
DIAGNOSTICS_FILE = "diagnostics.jsonl"  # one record per dead-channel check (gan.diagnostics.probes)
LOSSES_FILE = "losses.jsonl"  # one line per log step: {"step", "loss_d", "loss_g", "d_x", "d_g_z"}
METRICS_FILE = "metrics.json"  # the latest evaluation's flat {name: number} (gan.training.evaluation)
METRICS_HISTORY_FILE = "metrics.jsonl"  # one record {"step", <name>: value...} per evaluation
EVENTS_FILE = "events.jsonl"  # resumes, resume overrides, skipped steps, recycled channels
# the run's dashboard page (gan.training.outputs.write_dashboard; the name runs have used)
DASHBOARD_FILE = "report.html"
STEP_LOGS = (LOSSES_FILE, DIAGNOSTICS_FILE, METRICS_HISTORY_FILE, EVENTS_FILE)  # truncated on resume
EVENT_KINDS = ("resume", "resume_override", "nonfinite_skip", "nonfinite_stop", "recycle", "data_skip")
CONFIG_FILES = (".hydra/config.yaml", "config.yaml")  # the run's resolved config (Hydra job, or a plain run)
OVERRIDES_FILE = ".hydra/overrides.yaml"  # the command-line overrides of a Hydra job
log = logging.getLogger(__name__)


def natural_order(paths: set[Path] | list[Path], root: Path) -> list[Path]:
    """Folders below `root` in job order: numeric path parts as numbers (2 before 10), before named ones."""
    return sorted(paths, key=lambda p: [(0, int(part), "") if part.isdigit() else (1, 0, part)
                                        for part in p.relative_to(root).parts])


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


def _parse(path: Path, number: int, line: str) -> dict:
    """One jsonl line as a record with an integer "step"; ValueError naming file and line otherwise."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}:{number}: not a JSON record ({err}); only the last line may be partial") from err
    if not isinstance(record, dict) or not isinstance(record.get("step"), int):
        raise ValueError(f"{path}:{number}: a record must be a JSON object with an integer 'step', got {line[:80]!r}")
    return record


def read_records(path: str | Path) -> list[dict]:
    """Every record of a jsonl file in file order; a partial last line (a crash mid-append) is ignored."""
    path = Path(path)
    lines = read_text(path).splitlines()
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            records.append(_parse(path, number, line))
        except ValueError:
            if number == len(lines):
                break
            raise
    return records


def read_jsonl(path: str | Path) -> list[dict]:
    """Records of a jsonl file sorted by "step", the last one per step winning (a resumed run rewrites steps).

    A partially written last line (a crash mid-append) is ignored; a bad line elsewhere is a ValueError.
    """
    by_step = {record["step"]: record for record in read_records(path)}
    return [by_step[s] for s in sorted(by_step)]


def truncate_jsonl(path: str | Path, step: int) -> int:
    """Keep only the complete records with step <= `step` (rewritten atomically); return how many lines went.

    A line that is not a record (a partial append, or one glued to it by an older version) is dropped with a
    warning naming the file and line, so the run directory is readable again.
    """
    path = Path(path)
    if not path.is_file():
        return 0
    lines = read_text(path).split("\n")  # last item: "" or a line without its newline
    kept, bad = [], []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = _parse(path, number, line)
        except ValueError:
            if number < len(lines):  # a partial last line is expected after a crash; only others are news
                bad.append(number)
            continue
        if record["step"] <= step:
            kept.append(line)
    if bad:
        log.warning("%s: dropped line(s) %s that are not complete records (a crash mid-append)", path, bad)
    text = "".join(line + "\n" for line in kept)
    if text != "\n".join(lines):
        write_text_atomic(path, text)
    return len([line for line in lines if line.strip()]) - len(kept)


def truncate_for_resume(run_dir: str | Path, step: int) -> dict[str, int]:
    """Before a run resumes at `step`: truncate every step log (STEP_LOGS) to its complete records with step
    <= `step`, and make metrics.json the last evaluation kept (removed if none is). Returns lines dropped per file."""
    run_dir = Path(run_dir)
    dropped = {name: truncate_jsonl(run_dir / name, step) for name in STEP_LOGS}
    metrics = run_dir / METRICS_FILE
    if dropped[METRICS_HISTORY_FILE] and metrics.is_file():
        history = read_jsonl(run_dir / METRICS_HISTORY_FILE)
        if history:
            latest = {k: v for k, v in history[-1].items() if k != "step"}
            write_text_atomic(metrics, json.dumps(latest, indent=1, allow_nan=False) + "\n")
        else:
            metrics.unlink()
    return {name: n for name, n in dropped.items() if n}


def append_event(run_dir: str | Path, step: int, kind: str, detail: dict[str, Any]) -> dict:
    """Record one run event in events.jsonl: {"step", "kind", "detail"} (kinds: EVENT_KINDS)."""
    if kind not in EVENT_KINDS:
        raise ValueError(f"event kind {kind!r} is not one of {list(EVENT_KINDS)}")
    record = {"step": int(step), "kind": kind, "detail": detail}
    append_jsonl(Path(run_dir) / EVENTS_FILE, record)
    return record


def nonfinite_detail(stats: Any) -> dict:
    """Detail of a `nonfinite_skip` event from a step's stats: which networks' gradients were not finite
    and the loss scales (gan.training.loop.StepStats fields)."""
    norms = {"D": stats.grad_norm_d, "G": stats.grad_norm_g}
    return {"networks": [net for net, norm in norms.items() if not math.isfinite(norm)],
            "loss_scale": {net: value if math.isfinite(value) else None
                           for net, value in (("D", stats.loss_scale_d), ("G", stats.loss_scale_g))}}


def record_resume(run_dir: str | Path, step: int, checkpoint: str | Path, changes: dict[str, list],
                  superseded: list[str] = ()) -> None:
    """A run resumes at `step`: truncate its jsonl files to that step, then log the `resume` event (with the
    later checkpoints set aside, `superseded`, when there were any) and, when experiment settings changed under
    train.resume_override, the `resume_override` event."""
    truncate_for_resume(run_dir, step)
    detail = {"checkpoint": str(checkpoint), **({"superseded": list(superseded)} if superseded else {})}
    append_event(run_dir, step, "resume", detail)
    if changes:
        append_event(run_dir, step, "resume_override", {"changed": changes})


def record_restart(run_dir: str | Path) -> dict[str, int]:
    """train.resume=auto in a run directory whose run saved no checkpoint: it starts over at step 0, so its
    records are dropped as a resume drops those after its checkpoint (warned, naming the files)."""
    dropped = truncate_for_resume(run_dir, 0)
    if dropped:
        log.warning("train.resume=auto: %s holds no checkpoint, so the run starts over at step 0; dropped the "
                    "records of its earlier attempt: %s", run_dir,
                    ", ".join(f"{n} ({k} lines)" for n, k in dropped.items()))
    return dropped


def read_events(run_dir: str | Path) -> list[dict]:
    """The run's events in the order they happened ([] when there is no events.jsonl)."""
    path = Path(run_dir) / EVENTS_FILE
    return read_records(path) if path.is_file() else []


def read_overrides(run_dir: str | Path) -> dict[str, str]:
    """A Hydra job's command-line overrides as {key: value} ("+key"/"~key" prefixes dropped); {} without the file."""
    path = Path(run_dir) / OVERRIDES_FILE
    if not path.is_file():
        return {}
    items = read_yaml(path) or []
    if not isinstance(items, list):
        raise ValueError(f"{path}: expected a YAML list of key=value overrides, got {type(items).__name__}")
    overrides = {}
    for item in items:
        key, _, value = str(item).partition("=")
        overrides[key.lstrip("+~")] = value
    return overrides
