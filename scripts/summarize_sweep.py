"""Summarise a Hydra sweep: one table (CSV + markdown) of every job's overrides and final numbers, and its dashboard.

    python scripts/summarize_sweep.py multirun/2025-01-01/12-00-00

Writes SWEEP_DIR/summary.csv, SWEEP_DIR/summary.md and SWEEP_DIR/dashboard.html (gan.analysis.dashboard) and
prints the markdown table. Columns: job, overrides, final metrics (metrics.json), last logged step and
losses, and the channel-weighted dead-channel fractions of the last diagnostics check (when recorded).
It also writes SWEEP_DIR/groups.json and groups.md (gan.analysis.sweep.group_summary): per group of jobs that differ
only in their seed, the mean/std/min/max over the seeds of the final metrics and of the dead, dormant,
grad-dead and persistently dead fractions per layer, at the last check and at every check; `--groups-json F`
writes the same JSON to F too, and the group tables are printed after the job table. docs/data keeps it as a
record: `scripts/bench/record_bench.py --out docs/data/F.json --embed S.json --rows-key groups -- python
scripts/summarize_sweep.py SWEEP --groups-json S.json`.
For an Optuna sweep it also prints the best parameters and value from optimization_results.yaml.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gan.analysis.dashboard import build_dashboard  # noqa: E402
from gan.analysis.sweep import groups_markdown, optuna_best, to_markdown, write_groups, write_summary  # noqa: E402
from gan.core.atomic import write_text_atomic  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    """Write the summary files and the dashboard; exit status 2 with a message when there is no job."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sweep_dir", type=Path, help="a Hydra multirun directory (multirun/DATE/TIME)")
    parser.add_argument("--groups-json", type=Path, help="also write the per-group seed statistics (groups.json) here")
    parser.add_argument("--net", choices=("G", "D"), action="append",
                        help="layers of this network only in the printed group tables and groups.md (repeatable)")
    args = parser.parse_args(argv)
    try:
        rows, paths = write_summary(args.sweep_dir)
        groups, group_paths = write_groups(args.sweep_dir, args.groups_json, tuple(args.net or ("G", "D")))
        paths += group_paths
        paths.append(write_text_atomic(args.sweep_dir / "dashboard.html",
                                       build_dashboard(args.sweep_dir, f"Sweep {args.sweep_dir.resolve().name}")))
        best = optuna_best(args.sweep_dir)
    except (FileNotFoundError, ValueError) as err:
        parser.error(str(err))
    except OSError as err:  # a read-only or full sweep folder
        print(f"error: cannot write the summary into {args.sweep_dir}: {err}", file=sys.stderr)
        return 1
    print(to_markdown(rows))
    print(groups_markdown(groups, nets=tuple(args.net or ("G", "D"))))
    if best:
        print(best)
    print("wrote " + ", ".join(str(p) for p in paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
