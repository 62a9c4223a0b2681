"""Run one benchmark command and record it, with the conditions it ran under, in the one record shape of docs/data.

A record (scripts/bench/records.py holds the shape) keeps the command, the commit, the start time (UTC), the
machine, the 1-minute load average before and after, the command's wall and CPU time (children included), its exit
status and `rows`, the measured fields: the records of every JSON file the command wrote (`--embed`; a list gives
its items, an object one row). `--rows-key KEY` takes the rows from the list at KEY of each embedded object instead
and keeps its other keys as the record's `context` (e.g. summarize_sweep's groups beside the sweep's settings).
`--append` adds a record, so alternated variants (or one command per seed) land in one file.
scripts/bench/render_results.py reads the rows through its table specs.

    python scripts/bench/record_bench.py --out docs/data/F.json [--append] [--label L] [--embed out.json] -- CMD ...
    python scripts/bench/record_bench.py --out docs/data/F.json --embed S.json --rows-key groups -- \
        python scripts/summarize_sweep.py SWEEP --groups-json S.json
    python scripts/bench/record_bench.py --out docs/data/F.json --embed C.json --rows-key recipes -- \
        python scripts/compare_runs.py RUNS --json C.json
    python scripts/bench/record_bench.py --out docs/data/F.json --append --label seed0 --embed R.json -- \
        python scripts/fid.py data:mnist RUN --n 1000 --seed 0 --json R.json
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import time
from pathlib import Path

import records  # noqa: E402  (beside this file: the record shape)


def rows_of(path: Path, key: str | None = None) -> tuple[list[dict], dict]:
    """The measured rows in a JSON file the command wrote and the settings beside them: a list's objects, or the
    object itself (no settings); with `key`, the objects of the list at that key and the object's other keys."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise SystemExit(f"--embed {path}: not a readable JSON file ({e})")
    if key is not None:
        if not isinstance(data, dict) or not isinstance(data.get(key), list):
            raise SystemExit(f"--embed {path}: --rows-key {key!r} needs a JSON object whose {key!r} is a list")
        items, context = data[key], {k: v for k, v in data.items() if k != key}
    else:
        items, context = data if isinstance(data, list) else [data], {}
    if not all(isinstance(item, dict) for item in items):
        raise SystemExit(f"--embed {path}: expected a JSON object or a list of objects"
                         + (f" at {key!r}" if key is not None else ""))
    return items, context


def record(command: list[str], label: str | None, embed: list[Path], rows_key: str | None = None) -> dict:
    """Run the command (inherited stdout/stderr) and return its record."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load_before, start, started = records.load_average(), time.perf_counter(), records.utc_now()
    rc = subprocess.run(command).returncode
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    rows: list[dict] = []
    context: dict = {}
    for path in embed:
        if path.is_file():
            found, settings = rows_of(path, rows_key)
            rows, context = rows + found, {**context, **settings}
        elif rc == 0:
            raise SystemExit(f"--embed {path}: the command exited 0 but did not write this file")
    return records.record(rows, command=command, label=label, context=context, started=started,
                          load_before=load_before, wall_s=wall, cpu_s=cpu, returncode=rc)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="the JSON file to write (or append to)")
    parser.add_argument("--append", action="store_true", help="add this run to the file's runs")
    parser.add_argument("--label", help="what this run is (a variant's name)")
    parser.add_argument("--embed", type=Path, action="append", default=[], help="a JSON file the command writes")
    parser.add_argument("--rows-key", metavar="KEY",
                        help="rows = the list at KEY of each embedded object; its other keys become the context")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command: pass it after --")
    if args.append and args.out.exists():
        try:
            records.read(args.out)
        except records.RecordError as e:
            raise SystemExit(f"{e}; is it a file this script wrote?")
    run = record(command, args.label, args.embed, args.rows_key)
    records.write(args.out, [run], append=args.append)
    print(f"recorded {run['label'] or command[0]} in {args.out} (rc {run['returncode']}, {run['wall_s']} s, "
          f"load {run['load_avg_1min']})")
    return run["returncode"]


if __name__ == "__main__":
    raise SystemExit(main())
