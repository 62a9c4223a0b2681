"""The one record shape of docs/data: every benchmark writes its measurements through this module.

A data file is {"runs": [record, ...]}. A record is {label, command, commit, started, machine, load_avg_1min,
wall_s, cpu_s, returncode, context, rows}: what ran (the command line), on which checkout (commit, '+dirty' when
tracked files changed), when (UTC), on what (CPU model, vendor, family, model number, the CPU flags that decide
the kernels, cores), under what load (the 1-minute load average before and after), how long (wall and CPU seconds,
None where not measured), its exit status, `context` (the settings every row shares: steps, seeds, versions) and
`rows`, the measured fields, one dict per measurement. Fields a benchmark did not know when it ran are None.
scripts/bench/render_results.py reads the rows through its table specs. Only the standard library is imported.
"""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Sequence

ROOT = Path(__file__).resolve().parents[2]
FIELDS = ("label", "command", "commit", "started", "machine", "load_avg_1min", "wall_s", "cpu_s", "returncode",
          "context", "rows")
CPU_FLAGS = ("avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16", "avx512_fp16",
             "amx_tile", "amx_bf16", "amx_int8", "amx_fp16")
CPUINFO_IDS = {"vendor_id": "vendor", "cpu family": "family", "model": "model_number"}


class RecordError(ValueError):
    """A data file that is not in the record shape; the message names the file and what is wrong."""


def cpu_info(cpuinfo: Path = Path("/proc/cpuinfo")) -> dict:
    """The CPU model, vendor, family and model number (a virtual machine's model name may be only "AMD EPYC":
    the family tells Zen 3 (25) from Zen 5 (26)) and the flags among CPU_FLAGS that the first processor has."""
    model, ids, flags = platform.processor() or platform.machine(), {}, set()
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        text = ""
    for line in text.split("\n\n", 1)[0].splitlines():  # the first processor's block
        key, _, value = (part.strip() for part in line.partition(":"))
        if key == "model name":
            model = value
        elif key in CPUINFO_IDS:
            ids[CPUINFO_IDS[key]] = value
        elif key == "flags":
            flags = set(value.split())
    return {"model": model, **ids, "flags": [f for f in CPU_FLAGS if f in flags], "cpus": os.cpu_count()}


def load_average() -> float:
    return round(os.getloadavg()[0], 2)


def utc_now() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())


def commit() -> str | None:
    """The checkout's HEAD commit (with '+dirty' when tracked files changed), None outside git."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+dirty" if dirty else "")


def record(rows: Sequence[dict], *, command: Sequence[str] | str | None = None, label: str | None = None,
           context: dict | None = None, started: str | None = None, load_before: float | None = None,
           wall_s: float | None = None, cpu_s: float | None = None, returncode: int = 0) -> dict:
    """A record of measurements taken in this process now: the command defaults to this process's command line,
    `started` and `load_before` to now (pass the values taken before measuring)."""
    if not all(isinstance(r, dict) for r in rows):
        raise RecordError("rows must be dicts, one per measurement")
    return {"label": label, "command": list(command) if command is not None and not isinstance(command, str)
            else command or [Path(sys.executable).name, *sys.argv],
            "commit": commit(), "started": started or utc_now(), "machine": cpu_info(),
            "load_avg_1min": [load_before if load_before is not None else load_average(), load_average()],
            "wall_s": None if wall_s is None else round(wall_s, 2), "cpu_s": None if cpu_s is None else round(cpu_s, 2),
            "returncode": returncode, "context": context or {}, "rows": list(rows)}


def check(data: Any, name: str) -> list[dict]:
    """The records of a data file's JSON, or a RecordError naming the file and the first thing out of shape."""
    runs = data.get("runs") if isinstance(data, dict) else None
    if set(data if isinstance(data, dict) else ()) != {"runs"} or not isinstance(runs, list) or not runs:
        raise RecordError(f"{name}: expected {{\"runs\": [record, ...]}} with at least one record")
    for i, run in enumerate(runs):
        if not isinstance(run, dict) or set(run) != set(FIELDS):
            keys = sorted(run) if isinstance(run, dict) else type(run).__name__
            raise RecordError(f"{name}: runs[{i}] has {keys}; a record has exactly {list(FIELDS)}")
        if not isinstance(run["rows"], list) or not all(isinstance(r, dict) for r in run["rows"]):
            raise RecordError(f"{name}: runs[{i}].rows must be a list of objects")
        if not isinstance(run["context"], dict) or not isinstance(run["machine"], (dict, type(None))):
            raise RecordError(f"{name}: runs[{i}].context must be an object and machine an object or null")
    return runs


def read(path: Path) -> list[dict]:
    """The records of a data file (regular files only)."""
    if not path.is_file():
        raise RecordError(f"{path}: not a regular file")
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise RecordError(f"{path}: not readable JSON ({e})") from None
    return check(data, str(path))


def write(path: Path, records: Sequence[dict], *, append: bool = False) -> None:
    """Write records to a data file atomically; `append` keeps the records already there (which must be in shape)."""
    from gan.core.atomic import write_text_atomic  # the project's atomic writer (no MindSpore)

    runs = (read(path) if append and path.exists() else []) + list(records)
    check({"runs": runs}, str(path))
    write_text_atomic(path, json.dumps({"runs": runs}, indent=1) + "\n")
