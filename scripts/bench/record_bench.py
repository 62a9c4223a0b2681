"""Run one benchmark command and record it, with the conditions it ran under, in the one record shape of docs/data.

A record is {label, command, commit, started, machine, load_avg_1min, wall_s, cpu_s, returncode, rows}: the
command, the commit, the start time (UTC), the machine (CPU model, family, model number, the CPU flags that decide
the kernels, cores), the 1-minute load average before and after, the command's wall and CPU time (children
included) and its exit status, and `rows`, the measured fields: the records of every JSON file the command wrote
(`--embed`; a list gives its items, an object one row). A file holds {"runs": [record, ...]}; `--append` adds a
record, so alternated variants measured one after another in one window land in one file.
scripts/bench/render_results.py reads the rows through its table specs.

    python scripts/bench/record_bench.py --out docs/data/F.json [--append] [--label L] [--embed out.json] -- CMD ...
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

from bench_peak import cpu_info  # noqa: E402  (beside this file)

from gan.core.atomic import write_text_atomic  # noqa: E402


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


def rows_of(path: Path) -> list[dict]:
    """The measured rows in a JSON file the command wrote: a list's objects, or the object itself."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise SystemExit(f"--embed {path}: not a readable JSON file ({e})")
    items = data if isinstance(data, list) else [data]
    if not all(isinstance(item, dict) for item in items):
        raise SystemExit(f"--embed {path}: expected a JSON object or a list of objects")
    return items


def record(command: list[str], label: str | None, embed: list[Path]) -> dict:
    """Run the command (inherited stdout/stderr) and return its record."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load_before, start = os.getloadavg()[0], time.perf_counter()
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    rc = subprocess.run(command).returncode
    wall, load_after = time.perf_counter() - start, os.getloadavg()[0]
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    rows: list[dict] = []
    for path in embed:
        if path.is_file():
            rows += rows_of(path)
        elif rc == 0:
            raise SystemExit(f"--embed {path}: the command exited 0 but did not write this file")
    return {"label": label, "command": command, "commit": commit(), "started": started, "machine": cpu_info(),
            "load_avg_1min": [round(load_before, 2), round(load_after, 2)], "wall_s": round(wall, 2),
            "cpu_s": round(cpu, 2), "returncode": rc, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="the JSON file to write (or append to)")
    parser.add_argument("--append", action="store_true", help="add this run to the file's runs")
    parser.add_argument("--label", help="what this run is (a variant's name)")
    parser.add_argument("--embed", type=Path, action="append", default=[], help="a JSON file the command writes")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command: pass it after --")
    runs = []
    if args.append and args.out.is_file():
        runs = json.loads(args.out.read_text()).get("runs", [])
        if not isinstance(runs, list) or not all(isinstance(r, dict) and "rows" in r for r in runs):
            raise SystemExit(f"{args.out}: 'runs' is not a list of records with 'rows'; is it a file this script "
                             "wrote?")
    runs.append(record(command, args.label, args.embed))
    write_text_atomic(args.out, json.dumps({"runs": runs}, indent=1) + "\n")
    print(f"recorded {runs[-1]['label'] or command[0]} in {args.out} (rc {runs[-1]['returncode']}, "
          f"{runs[-1]['wall_s']} s, load {runs[-1]['load_avg_1min']})")
    return runs[-1]["returncode"]


if __name__ == "__main__":
    raise SystemExit(main())
