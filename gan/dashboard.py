"""Dead-channel files and the HTML dashboard: jsonl records, Pillow heatmaps, a self-contained report page.

No MindSpore here: the dashboard reads only files in run directories, so it works on any past run.
Files read per run directory (a folder holding `diagnostics.jsonl` or `losses.jsonl`):

- `diagnostics.jsonl`  one record per diagnostics check (written by `gan.diagnostics.DiagnosticsLogger`);
- `losses.jsonl`       one line per log interval: {"step", "loss_d", "loss_g", "d_x", "d_g_z"};
- `metrics.json`       optional flat {name: number} of final quality metrics;
- `.hydra/config.yaml` (or `config.yaml`) for the slope and the other hparams in the summary table;
- `samples/step_*.png` the newest one is shown as the final sample grid.
"""
from __future__ import annotations

import base64
import html
import io
import json
import math
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import yaml
from PIL import Image

from gan.config import HPARAM_KEYS
from gan.run_files import (DIAGNOSTICS_FILE, LOSSES_FILE, METRICS_FILE, append_jsonl,  # noqa: F401 (re-exported)
                           losses_record, read_jsonl, write_text_atomic)

CONFIG_FILES = (".hydra/config.yaml", "config.yaml")
# Hparams shown in the summary table when the run's config has them (dotted keys).
HPARAM_COLUMNS = tuple(f"{group}.{key}" for group, key in HPARAM_KEYS.values())  # keys of the run's config.yaml
SUMMARY_METRICS = ("dead_frac", "dormant_frac", "grad_dead_frac", "persistent_frac")
# Viridis anchors: neg_frac 0 (dark purple) ... 1 (yellow); dead channels are the bright rows.
_VIRIDIS = np.array([[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]], np.float64)
_LINE_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")


def heatmap_image(matrix: np.ndarray, max_size: int = 512) -> np.ndarray:
    """Render a (channels, checks) matrix of values in [0, 1] as an HWC uint8 viridis image (rows = channels).

    Each cell gets an integer number of pixels (up to 8) so single channels stay visible; matrices larger
    than `max_size` on a side are box-averaged down to it.
    """
    matrix = np.asarray(matrix, np.float64)
    if matrix.ndim != 2 or matrix.size == 0:
        raise ValueError(f"heatmap needs a non-empty (channels, checks) matrix, got shape {matrix.shape}")
    t = np.clip(np.nan_to_num(matrix, nan=0.0), 0.0, 1.0) * (len(_VIRIDIS) - 1)
    low = np.minimum(t.astype(int), len(_VIRIDIS) - 2)
    frac = (t - low)[..., None]
    rgb = (_VIRIDIS[low] * (1 - frac) + _VIRIDIS[low + 1] * frac).round().astype(np.uint8)
    rows, cols = matrix.shape
    image = Image.fromarray(rgb)
    size = tuple(min(max_size, n * max(1, min(8, max_size // n))) for n in (cols, rows))
    resample = Image.Resampling.NEAREST if size[0] >= cols and size[1] >= rows else Image.Resampling.BOX
    return np.asarray(image.resize(size, resample))


def neg_frac_matrix(records: list[dict], layer: str) -> tuple[np.ndarray, list[int]]:
    """(channels, checks) neg_frac of `layer` over the records that contain it, and those records' steps."""
    columns = [(r["step"], r["layers"][layer]["neg_frac"]) for r in records if layer in r.get("layers", {})]
    if not columns:
        raise ValueError(f"layer {layer!r} is in none of the {len(records)} records")
    return np.array([c for _, c in columns], np.float64).T, [s for s, _ in columns]


def find_runs(root: str | Path) -> list[Path]:
    """Run directories at or below `root`: folders holding diagnostics.jsonl or losses.jsonl, sorted."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{root} is not a directory; pass a run directory or a sweep directory of runs")
    found = {p.parent for name in (DIAGNOSTICS_FILE, LOSSES_FILE) for p in root.rglob(name)}
    return sorted(found)


def _flatten(tree: dict, prefix: str = "") -> dict:
    """{"a": {"b": 1}} -> {"a.b": 1}."""
    flat = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def load_run(run_dir: str | Path) -> dict:
    """Everything the dashboard shows about one run, read from its files (missing files give empty parts)."""
    run_dir = Path(run_dir)
    config = {}
    for name in CONFIG_FILES:
        if (run_dir / name).is_file():
            config = _flatten(yaml.safe_load((run_dir / name).read_text(encoding="utf-8")) or {})
            break
    samples = sorted((run_dir / "samples").glob("step_*.png"))
    metrics_path = run_dir / METRICS_FILE
    return {
        "dir": run_dir,
        "hparams": {k: config[k] for k in HPARAM_COLUMNS if k in config},
        "diagnostics": read_jsonl(run_dir / DIAGNOSTICS_FILE) if (run_dir / DIAGNOSTICS_FILE).is_file() else [],
        "losses": read_jsonl(run_dir / LOSSES_FILE) if (run_dir / LOSSES_FILE).is_file() else [],
        "metrics": json.loads(metrics_path.read_text(encoding="utf-8")) if metrics_path.is_file() else {},
        "sample": samples[-1] if samples else None,
    }


def network_summary(record: dict, net: str, metric: str) -> float | None:
    """Channel-weighted `metric` over the layers of `net` ("G" or "D") in one record; None if it has none."""
    layers = [v for k, v in record["layers"].items() if k.split("/")[0] == net and v.get(metric) is not None]
    channels = sum(v["channels"] for v in layers)
    return sum(v[metric] * v["channels"] for v in layers) / channels if channels else None


def _png_data_uri(image: Image.Image | np.ndarray) -> str:
    """Inline PNG as a data: URI."""
    image = Image.fromarray(image) if isinstance(image, np.ndarray) else image
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def line_chart_svg(series: dict[str, list[tuple[float, float]]], title: str, y_max: float | None = None,
                   width: int = 420, height: int = 220) -> str:
    """An inline SVG line chart, one polyline per named series of (x, y) points, with axes and a legend."""
    points = [p for pts in series.values() for p in pts if p[1] is not None and math.isfinite(p[1])]
    left, right, top, bottom = 48, 10, 22, 30
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height + 16 * len(series)}" '
           f'class="chart"><text x="{left}" y="14" font-size="13">{html.escape(title)}</text>']
    if points:
        x0, x1 = min(p[0] for p in points), max(p[0] for p in points)
        y0 = min(0.0, min(p[1] for p in points))
        y1 = y_max if y_max is not None else max(p[1] for p in points)
        x1, y1 = (x1 if x1 > x0 else x0 + 1), (y1 if y1 > y0 else y0 + 1)

        def sx(x: float) -> float:
            return left + (x - x0) / (x1 - x0) * (width - left - right)

        def sy(y: float) -> float:
            return top + (1 - (y - y0) / (y1 - y0)) * (height - top - bottom)

        svg.append(f'<rect x="{left}" y="{top}" width="{width - left - right}" height="{height - top - bottom}" '
                   f'fill="none" stroke="#999"/>')
        for value, anchor_y in ((y0, sy(y0)), (y1, sy(y1))):
            svg.append(f'<text x="{left - 4}" y="{anchor_y + 4:.1f}" font-size="10" text-anchor="end">'
                       f'{value:.3g}</text>')
        for value in (x0, x1):
            svg.append(f'<text x="{sx(value):.1f}" y="{height - bottom + 14}" font-size="10" '
                       f'text-anchor="middle">{value:.0f}</text>')
        for i, (name, pts) in enumerate(series.items()):
            colour = _LINE_COLOURS[i % len(_LINE_COLOURS)]
            coords = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts if y is not None and math.isfinite(y))
            svg.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{coords}"/>')
    else:
        svg.append(f'<text x="{left}" y="{height // 2}" font-size="12">no data</text>')
    for i, name in enumerate(series):
        y = height + 12 + 16 * i
        svg.append(f'<rect x="{left}" y="{y - 9}" width="10" height="10" '
                   f'fill="{_LINE_COLOURS[i % len(_LINE_COLOURS)]}"/>'
                   f'<text x="{left + 14}" y="{y}" font-size="11">{html.escape(name)}</text>')
    return "".join(svg) + "</svg>"


def _fmt(value) -> str:
    """Table cell text: numbers to 4 significant digits, None as a dash."""
    if value is None:
        return "&ndash;"
    if isinstance(value, float):
        return f"{value:.4g}"
    return html.escape(str(value))


def _summary_table(runs: list[dict], names: list[str]) -> str:
    """One row per run: hparams, final G/D diagnostics fractions, final losses, metrics."""
    hparams = [k for k in HPARAM_COLUMNS if any(k in r["hparams"] for r in runs)]
    metric_keys = sorted({k for r in runs for k in r["metrics"]})
    diag_cols = [(net, m) for net in ("G", "D") for m in SUMMARY_METRICS]
    head = (["run", "checks"] + hparams + [f"{net} {m}" for net, m in diag_cols]
            + ["loss_d", "loss_g", "D(x)", "D(G(z))"] + metric_keys)
    rows = []
    for run, name in zip(runs, names):
        last = run["diagnostics"][-1] if run["diagnostics"] else None
        loss = run["losses"][-1] if run["losses"] else {}
        cells = ([name, len(run["diagnostics"])] + [run["hparams"].get(k) for k in hparams]
                 + [network_summary(last, net, m) if last else None for net, m in diag_cols]
                 + [loss.get(k) for k in ("loss_d", "loss_g", "d_x", "d_g_z")]
                 + [run["metrics"].get(k) for k in metric_keys])
        rows.append("<tr>" + "".join(f"<td>{_fmt(c)}</td>" for c in cells) + "</tr>")
    header = "<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>"
    return f'<table class="summary">{header}{"".join(rows)}</table>'


def _heatmap_table(run: dict) -> str:
    """Heatmaps (channels x checks, colour = neg_frac) of every layer of one run, in one table row each."""
    layers = sorted({k for r in run["diagnostics"] for k in r["layers"]})
    rows = []
    for layer in layers:
        matrix, steps = neg_frac_matrix(run["diagnostics"], layer)
        rows.append(f"<tr><td>{html.escape(layer)}<br><small>{matrix.shape[0]} channels, steps {steps[0]}"
                    f"&ndash;{steps[-1]}</small></td><td><img alt=\"{html.escape(layer)} heatmap\" "
                    f"src=\"{_png_data_uri(heatmap_image(matrix, 256))}\"></td></tr>")
    return f'<table class="heatmaps">{"".join(rows)}</table>'


_CSS = """body{font-family:sans-serif;margin:16px;color:#222}table{border-collapse:collapse;margin:8px 0}
td,th{border:1px solid #ccc;padding:3px 6px;font-size:12px;text-align:right}th{background:#eee}
td:first-child{text-align:left}.charts{display:flex;flex-wrap:wrap;gap:12px}.run{display:inline-block;
vertical-align:top;margin-right:24px}img{image-rendering:pixelated}.samples img{max-width:320px}"""


def build_dashboard(root: str | Path, title: str | None = None) -> str:
    """The HTML page comparing every run at or below `root` (no network, no JavaScript, images inline)."""
    root = Path(root)
    run_dirs = find_runs(root)
    if not run_dirs:
        raise FileNotFoundError(f"no run found under {root}: a run directory holds {DIAGNOSTICS_FILE} or "
                                f"{LOSSES_FILE}")
    runs = [load_run(d) for d in run_dirs]
    names = [str(d.relative_to(root)) if d != root else d.name for d in run_dirs]
    labels = [f"{n} (slope {r['hparams']['act.negative_slope']})" if "act.negative_slope" in r["hparams"]
              else n for n, r in zip(names, runs)]
    layers = sorted({k for r in runs for rec in r["diagnostics"] for k in rec["layers"]})
    charts = [line_chart_svg({label: [(rec["step"], rec["layers"][layer]["dead_frac"])
                                      for rec in run["diagnostics"] if layer in rec["layers"]]
                              for label, run in zip(labels, runs)}, f"{layer}: dead fraction", y_max=1.0)
              for layer in layers]
    loss_charts = [line_chart_svg({label: [(rec["step"], rec.get(key)) for rec in run["losses"]]
                                   for label, run in zip(labels, runs)}, key)
                   for key in ("loss_d", "loss_g")]
    heatmaps = "".join(f'<div class="run"><h3>{html.escape(label)}</h3>{_heatmap_table(run)}</div>'
                       for label, run in zip(labels, runs) if run["diagnostics"])
    samples = "".join(f'<div class="run"><h3>{html.escape(label)}</h3><img alt="samples of {html.escape(name)}" '
                      f'src="{_png_data_uri(Image.open(run["sample"]).convert("RGB"))}"><br>'
                      f'<small>{html.escape(run["sample"].name)}</small></div>'
                      for name, label, run in zip(names, labels, runs) if run["sample"] is not None)
    title = html.escape(title or f"Dead-channel dashboard: {root.resolve().name}")
    return (f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{title}</title><style>{_CSS}</style>'
            f'</head><body><h1>{title}</h1><h2>Summary (final check)</h2>{_summary_table(runs, names)}'
            f'<h2>Dead fraction over time per layer</h2><div class="charts">{"".join(charts)}</div>'
            f'<h2>Losses</h2><div class="charts">{"".join(loss_charts)}</div>'
            f'<h2>Heatmaps (rows = channels, columns = checks, colour = neg_frac: purple 0, yellow 1)</h2>'
            f'{heatmaps or "<p>no diagnostics records</p>"}'
            f'<h2>Final samples</h2><div class="samples">{samples or "<p>no samples</p>"}</div></body></html>')


def screenshot(page: str | Path, png: str | Path, width: int = 1400, height: int = 2000) -> Path:
    """Render an HTML file with headless Chromium (Debian `chromium`) into a PNG of width x height pixels."""
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        raise FileNotFoundError("a screenshot needs headless Chromium: install Debian's chromium "
                                "(apt-get install chromium) or leave out --screenshot")
    png = Path(png).resolve()
    png.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as profile, tempfile.TemporaryDirectory(dir=png.parent) as tmp:
        shot = Path(tmp) / png.name
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}",
                 f"--window-size={width},{height}", f"--screenshot={shot}"]
        done = subprocess.run([binary, *flags, Path(page).resolve().as_uri()], capture_output=True, text=True,
                              timeout=300)
        if done.returncode != 0 or not shot.is_file():
            raise RuntimeError(f"chromium failed to screenshot {page} (exit {done.returncode}): {done.stderr[-500:]}")
        os.replace(shot, png)  # atomic: same folder
    return png
