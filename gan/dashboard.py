"""The offline dead-channel dashboard: one self-contained HTML page (inline SVG charts, PNG heatmaps, no JavaScript).

No MindSpore here for Hydra runs: the dashboard reads only files in run directories, so it works on any
past run. Files read per run directory (a folder holding `diagnostics.jsonl` or `losses.jsonl`):

- `diagnostics.jsonl`   one record per diagnostics check (`gan.diagnostics`), optionally with learned
                        slopes `{"slopes": {"D/act1": [per channel]}}` (PReLU / adaptive activations);
- `losses.jsonl`        one line per log interval: {"step", "loss_d", "loss_g", "d_x", "d_g_z"};
- `metrics.jsonl`       one record per evaluation; `metrics.json` the latest values;
- `events.jsonl`        optional {"step", "kind", "detail"} per event (resume, resume_override, nonfinite_skip,
                        recycle), drawn as markers on every time chart;
- `.hydra/overrides.yaml` the settings a sweep varies: runs that differ only in `seed` form one group,
                        drawn as the mean over seeds with a min-max band (without the file: the run's
                        hparams, `gan.config.HPARAM_KEYS`, from `.hydra/config.yaml`);
- `samples/step_*.png`  the newest one is shown.
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
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import yaml
from PIL import Image

from gan.run_files import (CONFIG_FILES, DIAGNOSTICS_FILE, EVENTS_FILE, LOSSES_FILE, METRICS_FILE,
                           METRICS_HISTORY_FILE, read_events, read_jsonl, read_overrides)
from gan.run_files import append_jsonl, losses_record, write_text_atomic  # noqa: F401 (re-exported: older imports)

SEED_KEY = "seed"
SUMMARY_METRICS = ("dead_frac", "dormant_frac", "grad_dead_frac", "persistent_frac")
STAT_TITLES = {"dead_frac": "dead (always negative)", "dormant_frac": "dormant (no output)",
               "grad_dead_frac": "grad-dead (no gradient)", "persistent_frac": "persistently dead"}
LOSS_TITLES = {"loss_d": "loss D", "loss_g": "loss G", "d_x": "D(x)", "d_g_z": "D(G(z))"}
# Quality metrics: which way is better (gan/evaluation.py).
METRIC_BETTER = {"frechet_distance": "lower", "class_kl": "lower", "reverse_kl": "lower", "class_coverage": "higher",
                 "mean_confidence": "higher", "modes": "higher", "hq_fraction": "higher", "fid": "lower",
                 "kid": "lower", "precision": "higher", "recall": "higher"}
# Event kinds (events.jsonl): the letter drawn on the charts and what it means.
EVENT_MARKERS = {"resume": ("R", "resumed from a checkpoint"),
                 "resume_override": ("O", "resumed with changed settings"),
                 "nonfinite_skip": ("N", "non-finite step skipped"),
                 "recycle": ("C", "dead channels recycled")}
# Viridis anchors: 0 (dark purple) ... 1 (yellow); in every heatmap yellow is the "dead/silent" end.
_VIRIDIS = np.array([[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]], np.float64)
_LEVELS = 63  # palette heatmaps: 63 viridis levels, index 63 = grey for a channel missing at a check
_MISSING_RGB = (200, 200, 200)
# Tableau 10 colours x 3 dash patterns: 30 distinguishable groups before a style repeats.
_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
            "#17becf")
_DASHES = ("", "6 3", "2 2")
_MAX_ROWS, _MAX_COLS = 512, 480  # heatmap pixels per side; larger matrices are averaged down


def _viridis(t: np.ndarray) -> np.ndarray:
    """RGB (float) of values in [0, 1] on the viridis ramp (linear between 5 anchors)."""
    t = np.clip(np.nan_to_num(np.asarray(t, np.float64), nan=0.0), 0.0, 1.0) * (len(_VIRIDIS) - 1)
    low = np.minimum(t.astype(int), len(_VIRIDIS) - 2)
    frac = (t - low)[..., None]
    return _VIRIDIS[low] * (1 - frac) + _VIRIDIS[low + 1] * frac


_PALETTE = [int(v) for v in np.vstack([_viridis(np.linspace(0, 1, _LEVELS)).round(), [_MISSING_RGB]]).ravel()]


def heatmap_image(matrix: np.ndarray, max_size: int = 512) -> np.ndarray:
    """Render a (channels, checks) matrix of values in [0, 1] as an HWC uint8 viridis image (rows = channels).

    For TensorBoard: each cell gets an integer number of pixels (up to 8) so single channels stay visible;
    matrices larger than `max_size` on a side are box-averaged down to it.
    """
    matrix = np.asarray(matrix, np.float64)
    if matrix.ndim != 2 or matrix.size == 0:
        raise ValueError(f"heatmap needs a non-empty (channels, checks) matrix, got shape {matrix.shape}")
    rgb = _viridis(matrix).round().astype(np.uint8)
    rows, cols = matrix.shape
    image = Image.fromarray(rgb)
    size = tuple(min(max_size, n * max(1, min(8, max_size // n))) for n in (cols, rows))
    resample = Image.Resampling.NEAREST if size[0] >= cols and size[1] >= rows else Image.Resampling.BOX
    return np.asarray(image.resize(size, resample))


def _shrink(matrix: np.ndarray, max_rows: int = _MAX_ROWS, max_cols: int = _MAX_COLS) -> np.ndarray:
    """Average blocks of rows/columns (ignoring NaN) until the matrix fits max_rows x max_cols."""
    for axis, limit in ((0, max_rows), (1, max_cols)):
        n = matrix.shape[axis]
        if n > limit:
            k = math.ceil(n / limit)
            pad = [(0, 0), (0, 0)]
            pad[axis] = (0, (-n) % k)
            padded = np.pad(matrix, pad, constant_values=np.nan)
            shape = (padded.shape[0] // k, k, padded.shape[1]) if axis == 0 else (padded.shape[0], -1, k)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN block stays NaN (grey)
                matrix = np.nanmean(padded.reshape(shape), axis=axis + 1)
    return matrix


def heatmap_png(colour: np.ndarray) -> bytes:
    """A (rows, cols) matrix of colour positions in [0, 1] (NaN = missing, grey) as a small palette PNG, 1 px/cell."""
    colour = _shrink(np.asarray(colour, np.float64))
    index = np.where(np.isnan(colour), _LEVELS, np.rint(np.clip(np.nan_to_num(colour), 0, 1) * (_LEVELS - 1)))
    image = Image.frombytes("P", (colour.shape[1], colour.shape[0]), index.astype(np.uint8).tobytes())
    image.putpalette(_PALETTE)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def _silence(scores: np.ndarray) -> np.ndarray:
    """Colour of a ReDo score (channel / layer mean) on a log scale: purple >= 1, yellow <= 0.01."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.clip(-np.log10(np.maximum(scores, 1e-12)) / 2, 0, 1)


@dataclass(frozen=True)
class HeatmapKind:
    """One heatmap tab: where its per-channel values live in a record, and how values become colours."""

    label: str
    legend: str
    values: Callable[[dict, str], list | None]
    colour: Callable[[np.ndarray], np.ndarray] | None  # None: the run's own min..max of the values


def _layer_field(name: str) -> Callable[[dict, str], list | None]:
    """Reader of a per-channel field of one layer in a diagnostics record."""
    return lambda record, layer: record.get("layers", {}).get(layer, {}).get(name)


HEATMAPS = {
    "neg_frac": HeatmapKind("neg_frac", "share of pre-activations <= 0: purple 0, yellow 1 = dead (always negative)",
                            _layer_field("neg_frac"), lambda m: m),
    "dormant_score": HeatmapKind("dormant score", "mean |output| / layer mean, log scale: purple >= 1, green 0.1, "
                                 "yellow <= 0.01 (dormant below tau, 0.025 by default)",
                                 _layer_field("dormant_score"), _silence),
    "grad_score": HeatmapKind("gradient score", "mean |dL/d output| / layer mean, log scale: purple >= 1, green 0.1, "
                              "yellow <= 0.01 (grad-dead below tau_grad)", _layer_field("grad_score"), _silence),
    "slopes": HeatmapKind("learned slope", "negative slope per channel: purple = the run's lowest, yellow = its "
                          "highest (range in each caption)",
                          lambda record, layer: record.get("slopes", {}).get(layer), None),
}


def channel_matrix(records: list[dict], layer: str, kind: str = "neg_frac") -> tuple[np.ndarray, list[int]]:
    """(channels, checks) values of heatmap `kind` for `layer` over the records that have them, and their steps.

    A null channel value (non-finite in training) is NaN.
    """
    read = HEATMAPS[kind].values
    columns = [(r["step"], v) for r in records if (v := read(r, layer)) is not None]
    if not columns:
        raise ValueError(f"layer {layer!r} has no {kind!r} values in any of the {len(records)} records")
    sizes = {len(v) for _, v in columns}
    if len(sizes) != 1:
        raise ValueError(f"layer {layer!r}: {kind!r} changes its channel count across records ({sorted(sizes)})")
    matrix = np.array([v for _, v in columns], np.float64).T  # None -> NaN
    return matrix, [s for s, _ in columns]


def _layer_order(layer: str) -> tuple:
    """G's layers before D's, each in network order (act2 before act10)."""
    net, _, name = layer.partition("/")
    digits = "".join(ch for ch in name if ch.isdigit())
    return net != "G", net, int(digits) if digits else -1, name


def network_summary(record: dict, net: str, metric: str) -> float | None:
    """Channel-weighted `metric` over the layers of `net` ("G" or "D") in one record; None if it has none."""
    layers = [v for k, v in record["layers"].items() if k.split("/")[0] == net and v.get(metric) is not None]
    channels = sum(v["channels"] for v in layers)
    return sum(v[metric] * v["channels"] for v in layers) / channels if channels else None


def find_runs(root: str | Path) -> list[Path]:
    """Run directories at or below `root`: folders holding diagnostics.jsonl or losses.jsonl, sorted."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{root} is not a directory; pass a run directory or a sweep directory of runs")
    found = {p.parent for name in (DIAGNOSTICS_FILE, LOSSES_FILE) for p in root.rglob(name)}
    return sorted(found, key=lambda p: [int(part) if part.isdigit() else part for part in p.relative_to(root).parts])


def _flatten(tree: dict, prefix: str = "") -> dict:
    """{"a": {"b": 1}} -> {"a.b": 1}."""
    flat = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


# What a run ran before a compared setting existed, so its config lacks the key: without this, runs from before
# model.d_maxout existed would form a group of their own beside the same settings with model.d_maxout=0. A run
# without any config gets none of them: nothing says what it ran.
BEFORE_SETTING_EXISTED = {"model.d_maxout": 0, "model.d_norm": "batch", "diagnostics.recycle": False,
                          "train.loss": "bce", "act.d_kind": "leaky_relu", "act.g_kind": "leaky_relu"}


def _config_settings(config: dict) -> dict[str, str]:
    """The run's hparams (gan.config.HPARAM_KEYS) and seed from its flattened config, as strings; the act.*
    parameters of a kind only when a network uses that kind."""
    from gan.config import ACT_KIND_PARAMS, HPARAM_KEYS

    config = {**BEFORE_SETTING_EXISTED, **config} if config else config
    kinds = {config.get("act.d_kind"), config.get("act.g_kind")}
    unused = {f"act.{p}" for kind, names in ACT_KIND_PARAMS.items() if kind not in kinds for p in names}
    keys = [".".join(path) for path in HPARAM_KEYS.values()] + [SEED_KEY]
    return {k: str(config[k]) for k in keys if k in config and k not in unused}


def _activations(config: dict) -> str:
    """Each network's activation kind and its parameters from the flattened config, e.g.
    "D prelu (prelu_init=0.25), G leaky_relu (slope=0.2)", "D maxout (pieces=5)" with model.d_maxout (which
    replaces act.d_kind); "" for configs from before act.*_kind existed."""
    from gan.config import ACT_KIND_PARAMS

    parts = []
    for net, slopes in (("d", ("act.d_layers", "act.negative_slope")),
                        ("g", ("act.g_layers", "act.g_negative_slope", "act.negative_slope"))):
        kind = config.get(f"act.{net}_kind")
        if kind is None:
            continue
        if net == "d" and config.get("model.d_maxout"):
            parts.append(f"D maxout (pieces={config['model.d_maxout']})")
            continue
        values = [f"{p}={config.get(f'act.{p}')}" for p in ACT_KIND_PARAMS.get(kind, ())]
        if kind == "leaky_relu":
            values = [f"slope={next((config[k] for k in slopes if config.get(k) is not None), None)}"]
        parts.append(f"{net.upper()} {kind}" + (f" ({', '.join(values)})" if values else ""))
    return ", ".join(parts)


def _checked_events(run_dir: Path) -> list[dict]:
    """The run's events.jsonl records in file order (several may share a step), each with a string kind."""
    events = read_events(run_dir)
    for number, event in enumerate(events, 1):
        if not isinstance(event.get("kind"), str):
            raise ValueError(f"{run_dir / EVENTS_FILE}: event {number} needs a string 'kind' (e.g. one of "
                             f"{sorted(EVENT_MARKERS)}), got {event!r:.120}")
    return events


def load_run(run_dir: str | Path) -> dict:
    """Everything the dashboard shows about one run, read from its files (missing files give empty parts)."""
    run_dir = Path(run_dir)
    config = {}
    for name in CONFIG_FILES:
        if (run_dir / name).is_file():
            config = _flatten(yaml.safe_load((run_dir / name).read_text(encoding="utf-8")) or {})
            break
    settings = read_overrides(run_dir) or _config_settings(config)
    samples = sorted((run_dir / "samples").glob("step_*.png"))

    def jsonl(name: str) -> list[dict]:
        return read_jsonl(run_dir / name) if (run_dir / name).is_file() else []

    metrics_path = run_dir / METRICS_FILE
    return {
        "dir": run_dir,
        "settings": settings,
        "activations": _activations(config),
        "seed": settings.get(SEED_KEY, str(config.get(SEED_KEY, "")) or None),
        "diagnostics": jsonl(DIAGNOSTICS_FILE),
        "losses": jsonl(LOSSES_FILE),
        "metrics_history": jsonl(METRICS_HISTORY_FILE),
        "metrics": json.loads(metrics_path.read_text(encoding="utf-8")) if metrics_path.is_file() else {},
        "events": _checked_events(run_dir),
        "sample": samples[-1] if samples else None,
    }


@dataclass
class Group:
    """Runs that differ only in their seed: one colour, one mean line with a min-max band."""

    label: str
    colour: str
    dash: str
    runs: list[dict] = field(default_factory=list)


def group_runs(runs: list[dict], names: list[str]) -> tuple[list[Group], dict[str, str], list[str]]:
    """Groups by the settings that vary across runs (all but the seed), the settings all runs share, the varied keys.

    Each run dict gets its group under "group".
    """
    keys = sorted({k for r in runs for k in r["settings"]})
    varied = [k for k in keys if k != SEED_KEY and len({r["settings"].get(k) for r in runs}) > 1]
    common = {k: runs[0]["settings"][k] for k in keys if k not in varied and k != SEED_KEY}
    by_label: dict[str, Group] = {}
    for run, name in zip(runs, names):
        label = ", ".join(f"{k}={run['settings'].get(k, '-')}" for k in varied) or \
            ("all runs" if len(runs) > 1 else name)
        if label not in by_label:
            i = len(by_label)
            by_label[label] = Group(label, _COLOURS[i % len(_COLOURS)], _DASHES[i // len(_COLOURS) % len(_DASHES)])
        by_label[label].runs.append(run)
        run["group"] = by_label[label]
    return list(by_label.values()), common, varied


def _band(series: list[list[tuple[int, float | None]]]) -> list[tuple[float, float, float, float]]:
    """(step, mean, min, max) over the runs' (step, value) series, finite values only, sorted by step."""
    by_step: dict[int, list[float]] = {}
    for points in series:
        for step, value in points:
            if value is not None and math.isfinite(value):
                by_step.setdefault(step, []).append(value)
    return [(s, sum(v) / len(v), min(v), max(v)) for s, v in sorted(by_step.items())]


def _marker(kind: str) -> tuple[str, str]:
    """(letter, meaning) of an event kind; "?" for a kind this dashboard does not know."""
    return EVENT_MARKERS.get(kind, ("?", "unknown kind"))


def _group_events(group: Group) -> list[tuple[int, str, str]]:
    """Distinct (step, kind, tooltip) events of a group's runs."""
    seen = {}
    for run in group.runs:
        for event in run["events"]:
            key = (event["step"], event["kind"])
            seen.setdefault(key, []).append(run["name"])
    return [(step, kind, f"{kind} at step {step}: {_marker(kind)[1]} ({', '.join(names)})")
            for (step, kind), names in sorted(seen.items())]


def line_chart_svg(groups: list[Group], values: Callable[[dict], list[tuple[int, float | None]]], title: str,
                   y_range: tuple[float, float] | None = None, width: int = 320, height: int = 140) -> str:
    """An inline SVG chart: per group the mean over its runs of `values(run)`, a min-max band, event markers.

    The SVG scales to its container (viewBox); one legend for the whole page names the groups.
    """
    lines = [(g, _band([values(r) for r in g.runs])) for g in groups]
    points = [p for _, band in lines for p in band]
    left, right, top, bottom = 44, 8, 20, 20
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" class="chart" role="img">'
           f'<title>{html.escape(title)}</title><text x="{left}" y="13" font-size="12">{html.escape(title)}</text>']
    if not points:
        svg.append(f'<text x="{left}" y="{height // 2}" font-size="11" fill="#888">no data</text></svg>')
        return "".join(svg)
    x0, x1 = min(p[0] for p in points), max(p[0] for p in points)
    y0, y1 = y_range or (min(0.0, min(p[2] for p in points)), max(p[3] for p in points))
    x1, y1 = (x1 if x1 > x0 else x0 + 1), (y1 if y1 > y0 else y0 + 1)
    w, h = width - left - right, height - top - bottom

    def sx(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * w

    def sy(y: float) -> float:
        return top + (1 - (y - y0) / (y1 - y0)) * h

    svg.append(f'<rect x="{left}" y="{top}" width="{w}" height="{h}" fill="none" stroke="#bbb"/>')
    for value in (y0, y1):
        svg.append(f'<text x="{left - 3}" y="{sy(value) + 4:.1f}" font-size="10" text-anchor="end">{value:.3g}</text>')
    for value, anchor in ((x0, "start"), (x1, "end")):
        svg.append(f'<text x="{sx(value):.1f}" y="{height - 6}" font-size="10" text-anchor="{anchor}">'
                   f'{value:.0f}</text>')
    for group, band in lines:
        if not band:
            continue
        dash = f' stroke-dasharray="{group.dash}"' if group.dash else ""
        if any(lo != hi for _, _, lo, hi in band):
            outline = [(sx(s), sy(hi)) for s, _, _, hi in band] + [(sx(s), sy(lo)) for s, _, lo, _ in reversed(band)]
            svg.append(f'<polygon fill="{group.colour}" fill-opacity="0.15" stroke="none" points="'
                       + " ".join(f"{x:.1f},{y:.1f}" for x, y in outline) + '"/>')
        coords = " ".join(f"{sx(s):.1f},{sy(m):.1f}" for s, m, _, _ in band)
        svg.append(f'<polyline fill="none" stroke="{group.colour}" stroke-width="1.6"{dash} points="{coords}">'
                   f'<title>{html.escape(group.label)}</title></polyline>')
        for step, kind, tip in _group_events(group):
            if x0 <= step <= x1:
                x = sx(step)
                svg.append(f'<g class="event"><title>{html.escape(tip)}</title><line x1="{x:.1f}" y1="{top}" '
                           f'x2="{x:.1f}" y2="{top + h}" stroke="{group.colour}" stroke-opacity="0.6" '
                           f'stroke-dasharray="1 2"/><text x="{x:.1f}" y="{top + 9}" font-size="9" '
                           f'text-anchor="middle" fill="{group.colour}">'
                           f'{_marker(kind)[0]}</text></g>')
    return "".join(svg) + "</svg>"


def _swatch(group: Group) -> str:
    """A short line in the group's colour and dash, for legends."""
    dash = f' stroke-dasharray="{group.dash}"' if group.dash else ""
    return (f'<svg width="26" height="10" class="swatch"><line x1="1" y1="5" x2="25" y2="5" stroke="{group.colour}" '
            f'stroke-width="2.5"{dash}/></svg>')


def _runs_note(group: Group) -> str:
    """"1 run" or "3 runs, seeds 0, 1, 2" for the legend."""
    if len(group.runs) == 1:
        return "1 run"
    seeds = ", ".join(html.escape(str(r["seed"])) for r in group.runs)
    return f"{len(group.runs)} runs, seeds {seeds}"


def _fmt(value) -> str:
    """Table cell text: numbers to 4 significant digits, None as a dash."""
    if value is None:
        return "&ndash;"
    if isinstance(value, float):
        return f"{value:.4g}"
    return html.escape(str(value))


def _pct(value: float | None) -> str:
    """A fraction as a percentage, or a dash."""
    return "&ndash;" if value is None else f"{100 * value:.1f}%"


def _run_table(runs: list[dict], metric_keys: list[str]) -> str:
    """One row per run, sized to the page width: G/D fractions share a cell, long text wraps."""
    head = (["run", "settings", "seed", "last step", "checks"] + [STAT_TITLES[m].split(" (")[0] for m in
            SUMMARY_METRICS] + list(LOSS_TITLES.values()) + metric_keys + ["events"])
    rows = []
    for run in runs:
        last = run["diagnostics"][-1] if run["diagnostics"] else None
        loss = run["losses"][-1] if run["losses"] else {}
        steps = [r["step"] for part in ("losses", "diagnostics", "metrics_history") for r in run[part][-1:]]
        fractions = ["<br>".join(f"{net} {_pct(network_summary(last, net, m))}" for net in ("G", "D"))
                     if last else "&ndash;" for m in SUMMARY_METRICS]
        events = {}
        for event in run["events"]:
            events[event["kind"]] = events.get(event["kind"], 0) + 1
        acts = f'<br><span class="acts">{html.escape(run["activations"])}</span>' if run.get("activations") else ""
        cells = ([html.escape(run["name"]), _swatch(run["group"]) + " " + html.escape(run["group"].label) + acts,
                  _fmt(run["seed"]), _fmt(max(steps) if steps else None), _fmt(len(run["diagnostics"]))]
                 + fractions + [_fmt(loss.get(k)) for k in LOSS_TITLES] + [_fmt(run["metrics"].get(k))
                                                                          for k in metric_keys]
                 + [", ".join(f"{n} {k}" for k, n in events.items()) or "&ndash;"])
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    header = "<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>"
    return (f'<table class="runs"><colgroup><col class="c-run"><col class="c-set"></colgroup>{header}'
            f'{"".join(rows)}</table>')


def _uri(png: bytes) -> str:
    """Inline PNG bytes as a data: URI."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _heatmap_figure(run: dict, layer: str, kind: str, lo_hi: tuple[float, float] | None) -> str:
    """One layer's heatmap: channels as rows, checks as columns, scaled to stay legible and on the page."""
    matrix, steps = channel_matrix(run["diagnostics"], layer, kind)
    colour = HEATMAPS[kind].colour
    if colour is None:
        lo, hi = lo_hi
        colour_matrix = (matrix - lo) / (hi - lo) if hi > lo else np.zeros_like(matrix)
        note = f", {lo:.3g}&ndash;{hi:.3g}"
    else:
        colour_matrix, note = colour(matrix), ""
    rows, cols = min(matrix.shape[0], _MAX_ROWS), min(matrix.shape[1], _MAX_COLS)
    height = rows * max(1, min(8, 256 // rows))
    width = cols * max(1, min(8, 240 // cols))
    return (f'<figure><img class="heatmap" alt="{html.escape(f"{layer} {HEATMAPS[kind].label}")}" width="{width}" '
            f'height="{height}" src="{_uri(heatmap_png(colour_matrix))}"><figcaption>{html.escape(layer)}<br>'
            f'{matrix.shape[0]} ch, steps {steps[0]}&ndash;{steps[-1]}{note}</figcaption></figure>')


def _heatmap_tabs(run: dict, index: int) -> str:
    """The run's heatmaps, one tab per statistic (CSS radio buttons: no JavaScript)."""
    records = run["diagnostics"]
    tabs, panels = [], []
    for kind, spec in HEATMAPS.items():
        names = {layer for r in records for layer in (*r.get("layers", {}), *r.get("slopes", {}))}
        layers = sorted((layer for layer in names if any(spec.values(r, layer) is not None for r in records)),
                        key=_layer_order)
        if not layers:
            continue
        lo_hi = None
        if spec.colour is None:
            values = [v for r in records for layer in layers for v in (spec.values(r, layer) or []) if v is not None]
            lo_hi = (min(values), max(values))
        tab_id = f"hm{index}-{kind}"
        tabs.append(f'<input type="radio" name="hm{index}" id="{tab_id}" class="tab-{kind}"'
                    f'{" checked" if not tabs else ""}><label for="{tab_id}">{html.escape(spec.label)}</label>')
        panels.append(f'<div class="panel panel-{kind}" data-kind="{kind}"><p class="legend">'
                      f'{html.escape(spec.legend)}; rows = channels, columns = checks, grey = no value</p>'
                      + "".join(_heatmap_figure(run, layer, kind, lo_hi) for layer in layers) + "</div>")
    return f'<div class="tabs">{"".join(tabs)}{"".join(panels)}</div>'


def _layer_stat(layer: str, metric: str) -> Callable[[dict], list[tuple[int, float | None]]]:
    """(step, value) of one layer's statistic over a run's checks."""
    return lambda run: [(rec["step"], rec["layers"][layer].get(metric)) for rec in run["diagnostics"]
                        if layer in rec["layers"]]


def _series(part: str, key: str) -> Callable[[dict], list[tuple[int, float | None]]]:
    """(step, value) of `key` over a run's losses or metrics records."""
    return lambda run: [(rec["step"], rec.get(key)) for rec in run[part]]


_CSS = """body{font-family:sans-serif;margin:12px 16px;color:#222;max-width:1400px}h2{margin:18px 0 6px}
table{border-collapse:collapse;margin:6px 0;width:100%;table-layout:fixed}
td,th{border:1px solid #ccc;padding:2px 4px;font-size:11px;text-align:right;overflow-wrap:anywhere;vertical-align:top}
th{background:#eee}td:nth-child(-n+2),th:nth-child(-n+2){text-align:left}col.c-run{width:7%}col.c-set{width:14%}.acts{color:#555;font-size:90%}
.legend-list{display:flex;flex-wrap:wrap;gap:2px 14px;font-size:12px;margin:4px 0}.legend-list span{white-space:nowrap}
.statgrid{display:grid;grid-template-columns:80px repeat(4,minmax(0,1fr));gap:4px 8px;align-items:center}
.statgrid .layer{font-size:12px;font-weight:bold}.statgrid .head{font-size:12px;font-weight:bold;text-align:center}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));gap:6px 10px}
svg.chart{width:100%;height:auto;display:block}p.note{font-size:12px;color:#444;margin:2px 0 6px}
.run{border-top:1px solid #ddd;padding:4px 0}.run summary{font-size:14px;margin:4px 0;cursor:pointer}
.tabs>input{position:absolute;opacity:0}.tabs>label{display:inline-block;padding:3px 10px;margin-right:4px;
border:1px solid #aaa;border-radius:4px 4px 0 0;cursor:pointer;font-size:12px;background:#f4f4f4}
.tabs>input:checked+label{background:#fff;border-bottom-color:#fff;font-weight:bold}
.tabs>.panel{display:none;border-top:1px solid #aaa;padding-top:4px}
.tabs>.panel{flex-wrap:wrap;gap:6px 10px;align-items:flex-start}p.legend{flex-basis:100%;font-size:11px;margin:0}
figure{margin:0;font-size:11px}img.heatmap{image-rendering:pixelated;display:block;border:1px solid #ccc}
.samples{display:flex;flex-wrap:wrap;gap:8px}.samples figure{width:216px}.samples img{width:210px;height:auto}
"""


def _tab_css() -> str:
    """Show the panel of the checked tab (one rule per heatmap kind)."""
    return "".join(f".tabs>input.tab-{k}:checked~.panel-{k}{{display:flex}}" for k in HEATMAPS)


def build_dashboard(root: str | Path, title: str | None = None) -> str:
    """The HTML page comparing every run at or below `root` (no network, no JavaScript, images inline)."""
    root = Path(root)
    run_dirs = find_runs(root)
    if not run_dirs:
        raise FileNotFoundError(f"no run found under {root}: a run directory holds {DIAGNOSTICS_FILE} or "
                                f"{LOSSES_FILE}")
    runs = [load_run(d) for d in run_dirs]
    for run, d in zip(runs, run_dirs):
        run["name"] = str(d.relative_to(root)) if d != root else d.name
    groups, common, varied = group_runs(runs, [r["name"] for r in runs])
    title = html.escape(title or f"Dead-channel dashboard: {root.resolve().name}")
    legend = "".join(f'<span>{_swatch(g)} {html.escape(g.label)} <small>({_runs_note(g)})</small></span>'
                     for g in groups)
    present = {e["kind"] for r in runs for e in r["events"]}
    kinds = [k for k in EVENT_MARKERS if k in present] + sorted(present - set(EVENT_MARKERS))
    markers = "; ".join(f"<b>{_marker(k)[0]}</b> {html.escape(k)}: {html.escape(_marker(k)[1])}" for k in kinds)
    event_legend = f" Event markers: {markers}." if kinds else ""
    parts = [f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{title}</title>'
             f'<style>{_CSS}{_tab_css()}</style></head><body><h1>{title}</h1>',
             f'<p class="note">{len(runs)} runs in {len(groups)} group{"s" if len(groups) > 1 else ""}'
             + (f' by {html.escape(", ".join(varied))}' if varied else "")
             + (f'; common settings: {html.escape(", ".join(f"{k}={v}" for k, v in common.items()))}' if common else "")
             + f'. A group with several seeds is drawn as their mean with a min-max band.{event_legend}</p>'
             f'<div class="legend-list">{legend}</div>']

    metric_keys = sorted({k for r in runs for k in r["metrics"]} | {k for r in runs for rec in r["metrics_history"]
                                                                     for k in rec if k != "step"})
    parts.append(f'<h2>Runs (last check, last logged losses, latest metrics)</h2>{_run_table(runs, metric_keys)}')

    layers = sorted({k for r in runs for rec in r["diagnostics"] for k in rec["layers"]}, key=_layer_order)
    if layers:
        grid = ['<div></div>'] + [f'<div class="head">{html.escape(STAT_TITLES[m])}</div>' for m in SUMMARY_METRICS]
        for layer in layers:
            top = max([v for r in runs for m in SUMMARY_METRICS for _, v in _layer_stat(layer, m)(r) if v is not None]
                      + [0.0])
            y_range = (0.0, max(0.05, min(1.0, top * 1.1)))
            grid.append(f'<div class="layer">{html.escape(layer)}</div>')
            grid += [line_chart_svg(groups, _layer_stat(layer, m), f"{layer} {m}", y_range) for m in SUMMARY_METRICS]
        parts.append('<h2>Channel statistics over time, per layer</h2><p class="note">Share of the layer\'s '
                     'channels that are dead (pre-activation &lt;= 0 on &gt;= 99% of inputs), dormant (output near '
                     'zero), grad-dead (no gradient) and persistently dead, at each check; one y-scale per row. A '
                     'channel with a positive slope can be dead yet neither dormant nor grad-dead.</p>'
                     f'<div class="statgrid">{"".join(grid)}</div>')

    quality = [line_chart_svg(groups, _series("metrics_history", k), f"{k} ({METRIC_BETTER[k]} is better)"
                              if k in METRIC_BETTER else k)
               for k in metric_keys if any(k in rec for r in runs for rec in r["metrics_history"])]
    if quality:
        parts.append(f'<h2>Quality metrics over time</h2><div class="charts">{"".join(quality)}</div>')
    parts.append('<h2>Losses and discriminator outputs</h2><div class="charts">'
                 + "".join(line_chart_svg(groups, _series("losses", k), t) for k, t in LOSS_TITLES.items())
                 + "</div>")

    # The first run of each group starts open, the other seeds folded (a <details> element: no script).
    heatmaps = "".join(f'<details class="run" id="heatmaps-{i}"{" open" if r is r["group"].runs[0] else ""}>'
                       f'<summary>{_swatch(r["group"])} <b>{html.escape(r["name"])}</b>: '
                       f'{html.escape(r["group"].label)}, seed {_fmt(r["seed"])}</summary>{_heatmap_tabs(r, i)}'
                       f'</details>' for i, r in enumerate(runs) if r["diagnostics"])
    parts.append('<h2>Heatmaps per channel over checks</h2><p class="note">Pick a statistic per run; in every '
                 'tab yellow is the dead or silent end. A yellow row that starts part-way is a channel that died '
                 'at that check. The first run of each group is open; click a run\'s name to open or fold it.</p>'
                 + (heatmaps or "<p>no diagnostics records</p>"))

    samples = "".join(f'<figure><img alt="samples of {html.escape(r["name"])}" src="{_uri(r["sample"].read_bytes())}">'
                      f'<figcaption>{_swatch(r["group"])} {html.escape(r["name"])}: {html.escape(r["sample"].name)}'
                      f'</figcaption></figure>' for r in runs if r["sample"] is not None)
    parts.append(f'<h2>Newest samples</h2><div class="samples">{samples or "<p>no samples</p>"}</div>')

    events = [(r["name"], e) for r in runs for e in r["events"]]
    if events:
        rows = "".join(f'<tr><td>{html.escape(name)}</td><td>{e["step"]}</td><td>{html.escape(e["kind"])}</td>'
                       f'<td>{html.escape(json.dumps(e.get("detail", {}), separators=(",", ":"))[:300])}</td></tr>'
                       for name, e in events)
        parts.append('<h2>Events</h2><table class="events"><colgroup><col style="width:10%"><col style="width:8%">'
                     f'<col style="width:12%"><col></colgroup><tr><th>run</th><th>step</th><th>kind</th>'
                     f'<th>detail</th></tr>{rows}</table>')
    return "".join(parts) + "</body></html>"


def screenshot(page: str | Path, png: str | Path, width: int = 1400, height: int = 2000, top: int = 0) -> Path:
    """Render an HTML file with headless Chromium (Debian `chromium`) into a PNG of width x height pixels,
    starting `top` pixels down the page (to show a section further down, e.g. the heatmaps)."""
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
                 "--hide-scrollbars", f"--window-size={width},{top + height}", f"--screenshot={shot}",
                 # wait until the page's images (data URIs, decoded asynchronously) are loaded and painted: without
                 # these a screenshot on a busy machine could catch a figure before it was drawn
                 "--virtual-time-budget=10000", "--run-all-compositor-stages-before-draw"]
        done = subprocess.run([binary, *flags, Path(page).resolve().as_uri()], capture_output=True, text=True,
                              timeout=300)
        if done.returncode != 0 or not shot.is_file():
            raise RuntimeError(f"chromium failed to screenshot {page} (exit {done.returncode}): {done.stderr[-500:]}")
        if top:
            with Image.open(shot) as full:
                cropped = full.crop((0, top, width, top + height))
            cropped.save(shot)
        os.replace(shot, png)  # atomic: same folder
    return png
