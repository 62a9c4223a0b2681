"""Build the self-contained HTML dead-channel dashboard of a run directory or a sweep directory of runs.

    python scripts/dashboard.py multirun/2025-01-01/12-00-00 --out report.html [--screenshot report.png]
        [--screenshot-height 2400] [--screenshot-top 3000]

The page compares the runs found below the directory (see gan/analysis/dashboard.py for the files it reads) and
opens in a browser without a server: images are inline, there is no JavaScript and no network access.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gan.analysis.dashboard import build_dashboard, screenshot  # noqa: E402
from gan.core.atomic import write_text_atomic  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    """Write the dashboard; exit status 2 with a message when the directory holds no run."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path, help="a run directory or a folder of runs (e.g. a Hydra multirun)")
    parser.add_argument("--out", type=Path, help="HTML file to write (default: RUN_DIR/dashboard.html)")
    parser.add_argument("--title", help="page title (default: the directory name)")
    parser.add_argument("--screenshot", type=Path, help="also render the page to this PNG with headless Chromium")
    parser.add_argument("--screenshot-height", type=int, default=2000,
                        help="height of the screenshot in pixels (width 1400; default 2000)")
    parser.add_argument("--screenshot-top", type=int, default=0,
                        help="start the screenshot this many pixels down the page (default 0: the top)")
    args = parser.parse_args(argv)
    if args.screenshot_height < 100:
        parser.error(f"--screenshot-height={args.screenshot_height} is not allowed: use at least 100 pixels")
    if args.screenshot_top < 0:
        parser.error(f"--screenshot-top={args.screenshot_top} is not allowed: use 0 or more pixels")
    out = args.out or args.run_dir / "dashboard.html"
    if out.is_dir():
        parser.error(f"--out {out} is a directory; give a file name in it, e.g. {out / 'dashboard.html'}")
    try:
        page = build_dashboard(args.run_dir, args.title)
    except (FileNotFoundError, ValueError) as err:
        parser.error(str(err))
    try:
        out = write_text_atomic(out, page)
    except OSError as err:
        print(f"error: cannot write {out}: {err.strerror or err}", file=sys.stderr)
        return 1
    print(f"wrote {out} ({len(page) / 1024:.0f} KiB)")
    if args.screenshot:
        try:
            shot = screenshot(out, args.screenshot, height=args.screenshot_height, top=args.screenshot_top)
            print(f"wrote {shot}")
        except (FileNotFoundError, RuntimeError) as err:
            parser.error(str(err))
    return 0


if __name__ == "__main__":
    sys.exit(main())
