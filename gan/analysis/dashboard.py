"""The offline dead-channel dashboard: one self-contained HTML page (inline SVG charts, PNG heatmaps, no JavaScript).

No MindSpore here: the page is made from the files of run directories only, so it works on any past run. Three
parts: gan.analysis.runs reads the run folders into typed records (`Run`, grouped by settings into `Group`s; the
files it reads are listed there), gan.analysis.charts draws the SVG line charts, and this module lays out the page:
`build_dashboard` loads and groups the runs, then one function per section renders its HTML. Every value read
from a run folder is text, escaped once where it enters the page (here, or in gan.analysis.charts for the charts).
"""
from __future__ import annotations

import base64
import html
import json
import logging
import os
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
from PIL import Image

from gan.analysis.channels import (
    MAX_COLS,
    MAX_ROWS,
    STAT_TITLES,
    SUMMARY_METRICS,
    channel_matrix,
    channel_values,
    heatmap_png,
    network_order,
    network_summary,
    record_layers,
)
from gan.analysis.charts import EVENT_MARKERS, line_chart_svg, marker, swatch
from gan.analysis.runs import Group, Grouping, Run, find_runs, group_runs, load_runs, readable
from gan.core.atomic import write_text_atomic
from gan.run.files import DASHBOARD_FILE

LOSS_TITLES = {"loss_d": "loss D", "loss_g": "loss G", "d_x": "D(x)", "d_g_z": "D(G(z))"}
# Quality metrics: which way is better (gan/training/evaluation.py).
METRIC_BETTER = {"frechet_distance": "lower", "class_kl": "lower", "reverse_kl": "lower", "class_coverage": "higher",
                 "mean_confidence": "higher", "modes": "higher", "hq_fraction": "higher", "fid": "lower",
                 "kid": "lower", "precision": "higher", "recall": "higher"}
NO_VALUE = "&ndash;"  # a table cell without a value

log = logging.getLogger(__name__)


def _silence(scores: np.ndarray) -> np.ndarray:
    """Colour of a ReDo score (channel / layer mean) on a log scale: purple >= 1, yellow <= 0.01."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.clip(-np.log10(np.maximum(scores, 1e-12)) / 2, 0, 1)


@dataclass(frozen=True)
class HeatmapKind:
    """One heatmap tab of a per-channel field of the records (gan.analysis.channels.PER_CHANNEL): its label, legend,
    and how values become colours."""

    label: str
    legend: str
    colour: Callable[[np.ndarray], np.ndarray] | None  # None: the run's own min..max of the values


HEATMAPS = {
    "neg_frac": HeatmapKind("neg_frac", "share of pre-activations <= 0: purple 0, yellow 1 = dead (always negative)",
                            lambda m: m),
    "dormant_score": HeatmapKind("dormant score", "mean |output| / layer mean, log scale: purple >= 1, green 0.1, "
                                 "yellow <= 0.01 (dormant below tau, 0.025 by default)", _silence),
    "grad_score": HeatmapKind("gradient score", "mean |dL/d output| / layer mean, log scale: purple >= 1, green 0.1, "
                              "yellow <= 0.01 (grad-dead below tau_grad)", _silence),
    "slopes": HeatmapKind("learned slope", "negative slope per channel: purple = the run's lowest, yellow = its "
                          "highest (range in each caption)", None),
}


def _fmt(value) -> str:
    """Table cell text: numbers to 4 significant digits, None as a dash."""
    if value is None:
        return NO_VALUE
    if isinstance(value, float):
        return f"{value:.4g}"
    return html.escape(str(value))


def _pct(value: float | None) -> str:
    """A fraction as a percentage, or a dash."""
    return NO_VALUE if value is None else f"{100 * value:.1f}%"


def _uri(png: bytes) -> str:
    """Inline PNG bytes as a data: URI."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _runs_note(group: Group) -> str:
    """"1 run" or "3 runs, seeds 0, 1, 2" for the legend."""
    if len(group.runs) == 1:
        return "1 run"
    seeds = ", ".join(html.escape(str(r.seed)) for r in group.runs)
    return f"{len(group.runs)} runs, seeds {seeds}"


def _group_cell(group: Group) -> str:
    """A group's swatch and label."""
    return f"{swatch(group)} {html.escape(group.label)}"


# ------------------------------------------------------------------ page sections, in page order


# The statistics the overview maps: a channel dead (always negative), dormant (no output) or grad-dead (no gradient).
DYING = ("dead_frac", "dormant_frac", "grad_dead_frac")
SHORT_TITLES = {m: STAT_TITLES[m].split(" (")[0] for m in SUMMARY_METRICS}


def _layer_info(runs: list[Run]) -> tuple[list[str], dict[str, dict]]:
    """Every layer of the runs in network order, and per layer its latest record entry (path, uses, channels)."""
    layers = network_order(layer for r in runs for layer in record_layers(r.diagnostics))
    info = {layer: v for r in runs for rec in r.diagnostics for layer, v in rec["layers"].items()}
    return layers, info


def _since(run: Run, layer: str) -> int:
    """The step of the first check of the unbroken series of checks, up to the last, where `layer` had a dead,
    dormant or grad-dead channel."""
    since = run.diagnostics[-1]["step"]
    for record in reversed(run.diagnostics):
        values = record["layers"].get(layer)
        if values is None or not any(values.get(m) for m in DYING):
            break
        since = record["step"]
    return since


def _severity(values: dict) -> tuple[float, float]:
    """Sort key of a layer's last-check entry: its largest dying share, then the sum of the three."""
    shares = [values.get(m) or 0.0 for m in DYING]
    return max(shares), sum(shares)


def _dying_rows(runs: list[Run]) -> list[tuple[Run, str, dict]]:
    """(run, layer, last-check entry) of every layer with a dead, dormant or grad-dead channel at its run's last
    check, most severe first."""
    rows = [(r, layer, values) for r in runs if r.diagnostics for layer, values in r.diagnostics[-1]["layers"].items()
            if any(values.get(m) for m in DYING)]
    return sorted(rows, key=lambda row: _severity(row[2]), reverse=True)


def _stat_heatmap(runs: list[Run], layers: list[str], metric: str) -> str:
    """Layers x checks of one statistic (the worst run at each step when several runs share a layer), the worst
    layers now named beneath; sized so that any number of layers fits in about 300 pixels."""
    steps = sorted({rec["step"] for r in runs for rec in r.diagnostics})
    column = {s: i for i, s in enumerate(steps)}
    matrix = np.full((len(layers), len(steps)), np.nan)
    row = {layer: i for i, layer in enumerate(layers)}
    for run in runs:
        for rec in run.diagnostics:
            for layer, values in rec["layers"].items():
                value = values.get(metric)
                if value is not None:
                    i, j = row[layer], column[rec["step"]]
                    matrix[i, j] = value if np.isnan(matrix[i, j]) else max(matrix[i, j], value)
    row_h = max(2, min(16, 300 // len(layers)))
    col_w = max(1, min(40, 260 // len(steps)))
    labels = ""
    if row_h >= 9:
        labels = '<div class="hm-labels">' + "".join(
            f'<div style="height:{row_h}px;line-height:{row_h}px;font-size:{min(12, row_h - 1)}px">'
            f'{html.escape(layer)}</div>' for layer in layers) + "</div>"
    last = {layer: v for layer, v in zip(layers, matrix[:, -1]) if not np.isnan(v) and v > 0}
    worst = sorted(last.items(), key=lambda item: -item[1])[:3]
    named = (" &middot; ".join(f"<b>{html.escape(layer)}</b> {_pct(v)}" for layer, v in worst) if worst
             else "none at the last check")
    span = f"steps {steps[0]}&ndash;{steps[-1]}" if len(steps) > 1 else f"step {steps[0]} (one check)"
    return (f'<figure class="stat" data-stat="{metric}"><figcaption><b>{html.escape(SHORT_TITLES[metric])}</b> '
            f'share of channels, {span}</figcaption><div class="hm">{labels}<img class="overview-map" '
            f'alt="{html.escape(SHORT_TITLES[metric])} share per layer and check" width="{col_w * len(steps)}" '
            f'height="{row_h * len(layers)}" src="{_uri(heatmap_png(np.sqrt(matrix)))}"></div>'
            f'<div class="worst">worst now: {named}</div></figure>')


def _dying_table(runs: list[Run], rows: list[tuple[Run, str, dict]], limit: int = 10) -> str:
    """The layers with a dead, dormant or grad-dead channel now: counts, shares, since when; the first `limit`
    rows in view, the rest folded."""
    several = len([r for r in runs if r.diagnostics]) > 1
    head = (["layer"] + (["run"] if several else []) + ["channels"] + [SHORT_TITLES[m] for m in SUMMARY_METRICS]
            + ["since step"])

    def cells(run: Run, layer: str, values: dict) -> str:
        n = values["channels"]
        uses = f' <span class="uses">&times;{values["uses"]}</span>' if values.get("uses", 1) > 1 else ""
        shares = [NO_VALUE if values.get(m) is None else f"{round(values[m] * n)} ({_pct(values[m])})"
                  for m in SUMMARY_METRICS]
        return (f'<tr><td title="{html.escape(values.get("path", ""))}">{html.escape(layer)}{uses}</td>'
                + (f"<td>{html.escape(run.name)}</td>" if several else "") + f"<td>{n}</td>"
                + "".join(f"<td>{c}</td>" for c in shares) + f"<td>{_since(run, layer)}</td></tr>")

    header = "<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>"
    shown = "".join(cells(*row) for row in rows[:limit])
    more = ""
    if len(rows) > limit:
        more = (f'<details class="more"><summary>{len(rows) - limit} more layers</summary><table class="dying">'
                f'{header}{"".join(cells(*row) for row in rows[limit:])}</table></details>')
    return f'<table class="dying">{header}{shown}</table>{more}'


def _unprobed(runs: list[Run]) -> str:
    """The activations no probe saw, from the runs' last records ("" when none is listed)."""
    unseen = list(dict.fromkeys(u for r in runs if r.diagnostics for u in r.diagnostics[-1].get("unprobed", [])))
    if not unseen:
        return ""
    return (f'<p class="note unprobed">Not probed (not the project\'s activation cells, no statistics): '
            f'{html.escape("; ".join(unseen))}. Functional calls in a construct (ops.tanh(x)) are not listed.</p>')


def _dying(runs: list[Run]) -> str:
    """The answer first: where channels are dying. Per statistic a layers x checks heatmap with the worst layers
    named, and the table of layers with dead, dormant or grad-dead channels now; one line when there are none."""
    runs = [r for r in runs if r.diagnostics]
    if not runs:
        return '<section id="overview"><p class="verdict">No diagnostics checks in these runs.</p></section>'
    layers, info = _layer_info(runs)
    rows = _dying_rows(runs)
    ever = any(values.get(m) for r in runs for rec in r.diagnostics for values in rec["layers"].values()
               for m in DYING)
    checks = sum(len(r.diagnostics) for r in runs)
    scope = f"{len(layers)} layers, {checks} check{'s' if checks > 1 else ''}"
    reused = [layer for layer in layers if info[layer].get("uses", 1) > 1]
    notes = ("" if not reused else f'<p class="note">&times;N: one cell called at N places; its statistics pool '
             f'the N calls, each weighted equally ({html.escape(", ".join(reused))}).</p>')
    if not ever:
        return (f'<section id="overview"><p class="verdict ok">No dead, dormant or gradient-dead channels at any '
                f'check ({scope}).</p>{notes}{_unprobed(runs)}</section>')
    verdict = (f"{len(rows)} layer{'s' if len(rows) != 1 else ''} with dead, dormant or gradient-dead channels at the "
               f"last check ({scope}; layers in forward order, G then D; colour: square root of the share, "
               f"yellow = all channels, grey = no value)" if rows else
               f"No dead, dormant or gradient-dead channels at the last check; earlier checks had some ({scope})")
    maps = "".join(_stat_heatmap(runs, layers, m) for m in DYING)
    several = len(runs) > 1
    return (f'<section id="overview"><p class="verdict">{verdict}.</p>'
            + (f'<p class="note">Heatmaps: the worst of the {len(runs)} runs at each check.</p>' if several else "")
            + f'<div class="maps">{maps}</div>{_dying_table(runs, rows) if rows else ""}{notes}{_unprobed(runs)}'
            f'</section>')


def _overview(runs: list[Run], grouping: Grouping, failed: list[tuple[str, str]]) -> str:
    """What the page compares: runs, groups and their settings, the event markers, jobs without a result, legend."""
    groups, common, varied = grouping
    present = {e["kind"] for r in runs for e in r.events}
    kinds = [k for k in EVENT_MARKERS if k in present] + sorted(present - set(EVENT_MARKERS))
    markers = "; ".join(f"<b>{marker(k)[0]}</b> {html.escape(k)}: {html.escape(marker(k)[1])}" for k in kinds)
    event_legend = f" Event markers: {markers}." if kinds else ""
    legend = "".join(f'<span>{_group_cell(g)} <small>({_runs_note(g)})</small></span>' for g in groups)
    return (f'<p class="note">{len(runs)} run{"s" if len(runs) > 1 else ""} in {len(groups)} '
            f'group{"s" if len(groups) > 1 else ""}'
            + (f' by {html.escape(", ".join(varied))}' if varied else "")
            + (f'; common settings: {html.escape(", ".join(f"{k}={v}" for k, v in common.items()))}' if common else "")
            + f'. A group with several seeds is drawn as their mean with a min-max band.{event_legend}</p>'
            + (f'<p class="note failed">{len(failed)} job{"s" if len(failed) > 1 else ""} without a result: '
               + "; ".join(f"<b>{html.escape(name)}</b> {html.escape(why)}" for name, why in failed) + "</p>"
               if failed else "")
            + f'<div class="legend-list">{legend}</div>')


def _run_row(run: Run, group: Group, metric_keys: list[str]) -> list[str]:
    """The cells of one run: name, settings, seed, last step, checks, G/D shares, last losses, metrics, events."""
    last = run.diagnostics[-1] if run.diagnostics else None
    loss = run.losses[-1] if run.losses else {}
    fractions = ["<br>".join(f"{net} {_pct(network_summary(last, net, m))}" for net in ("G", "D"))
                 if last else NO_VALUE for m in SUMMARY_METRICS]
    events: dict[str, int] = {}
    for event in run.events:
        events[event["kind"]] = events.get(event["kind"], 0) + 1
    acts = f'<br><span class="acts">{html.escape(run.activations)}</span>' if run.activations else ""
    return ([html.escape(run.name), _group_cell(group) + acts, _fmt(run.seed), _fmt(run.last_step()),
             _fmt(len(run.diagnostics))] + fractions + [_fmt(loss.get(k)) for k in LOSS_TITLES]
            + [_fmt(run.metrics.get(k)) for k in metric_keys]
            + [html.escape(", ".join(f"{n} {k}" for k, n in events.items())) or NO_VALUE])


def _run_table(runs: list[Run], grouping: Grouping, metric_keys: list[str]) -> str:
    """One row per run, sized to the page width: G/D fractions share a cell, long text wraps."""
    head = (["run", "settings", "seed", "last step", "checks"] + [STAT_TITLES[m].split(" (")[0] for m in
            SUMMARY_METRICS] + list(LOSS_TITLES.values()) + metric_keys + ["events"])
    rows = ["<tr>" + "".join(f"<td>{c}</td>" for c in _run_row(run, grouping.group_of(run), metric_keys)) + "</tr>"
            for run in runs]
    header = "<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>"
    return (f'<h2>Runs (last check, last logged losses, latest metrics)</h2><table class="runs"><colgroup>'
            f'<col class="c-run"><col class="c-set"></colgroup>{header}{"".join(rows)}</table>')


def _layer_charts(runs: list[Run], groups: list[Group]) -> str:
    """Per layer, folded (<details>): the four shares of dead channels over time, one y-scale per layer; the
    summary line names the layer's full Cell path and its shares at the last check ("" without diagnostics)."""
    layers, info = _layer_info(runs)
    if not layers:
        return ""
    head = "".join(f'<div class="head">{html.escape(STAT_TITLES[m])}</div>' for m in SUMMARY_METRICS)
    folds = []
    for index, layer in enumerate(layers):
        top = max([v for r in runs for m in SUMMARY_METRICS for _, v in r.layer_points(layer, m) if v is not None]
                  + [0.0])
        y_range = (0.0, max(0.05, min(1.0, top * 1.1)))
        charts = "".join(line_chart_svg(groups, lambda run, m=m, layer=layer: run.layer_points(layer, m),
                                        SHORT_TITLES[m], y_range) for m in SUMMARY_METRICS)
        values = info[layer]
        uses = (f", one cell called at {values['uses']} places (statistics pooled over the calls)"
                if values.get("uses", 1) > 1 else "")
        path = f' <span class="path">{html.escape(values["path"])}</span>' if values.get("path") else ""
        last = " ".join(f"{SHORT_TITLES[m]} {_pct(values.get(m))}" for m in DYING)
        folds.append(f'<details class="layer" id="layer-{index}"><summary><b>{html.escape(layer)}</b>{path} '
                     f'<span class="last">{values["channels"]} ch{uses}; last: {last}</span></summary>'
                     f'<div class="statgrid">{head}{charts}</div></details>')
    return ('<h2>Channel statistics over time, per layer</h2><p class="note">Click a layer to open its charts: '
            'the share of its channels that are dead (pre-activation &lt;= 0 on &gt;= 99% of inputs), dormant '
            '(output near zero), grad-dead (no gradient) and persistently dead, at each check. A channel with a '
            'positive slope can be dead yet neither dormant nor grad-dead.</p>' + "".join(folds))


def _quality_charts(runs: list[Run], groups: list[Group], metric_keys: list[str]) -> str:
    """The evaluations' metrics over time, each titled with its better direction ("" without evaluations)."""
    charts = [line_chart_svg(groups, lambda run, k=k: run.log_points("metrics_history", k),
                             f"{k} ({METRIC_BETTER[k]} is better)" if k in METRIC_BETTER else k)
              for k in metric_keys if any(k in rec for r in runs for rec in r.metrics_history)]
    return f'<h2>Quality metrics over time</h2><div class="charts">{"".join(charts)}</div>' if charts else ""


def _loss_charts(groups: list[Group]) -> str:
    """The logged losses and discriminator outputs over time."""
    return ('<h2>Losses and discriminator outputs</h2><div class="charts">'
            + "".join(line_chart_svg(groups, lambda run, k=k: run.log_points("losses", k), t)
                      for k, t in LOSS_TITLES.items()) + "</div>")


def _heatmap_figure(run: Run, layer: str, kind: str, lo_hi: tuple[float, float] | None) -> str:
    """One layer's heatmap: channels as rows, checks as columns, scaled to stay legible and on the page."""
    matrix, steps = channel_matrix(run.diagnostics, layer, kind)
    colour = HEATMAPS[kind].colour
    if colour is None:
        lo, hi = lo_hi
        colour_matrix = (matrix - lo) / (hi - lo) if hi > lo else np.zeros_like(matrix)
        note = f", {lo:.3g}&ndash;{hi:.3g}"
    else:
        colour_matrix, note = colour(matrix), ""
    rows, cols = min(matrix.shape[0], MAX_ROWS), min(matrix.shape[1], MAX_COLS)
    height = rows * max(1, min(8, 256 // rows))
    width = cols * max(1, min(8, 240 // cols))
    return (f'<figure><img class="heatmap" alt="{html.escape(f"{layer} {HEATMAPS[kind].label}")}" width="{width}" '
            f'height="{height}" src="{_uri(heatmap_png(colour_matrix))}"><figcaption>{html.escape(layer)}<br>'
            f'{matrix.shape[0]} ch, steps {steps[0]}&ndash;{steps[-1]}{note}</figcaption></figure>')


def _heatmap_tabs(run: Run, index: int) -> str:
    """The run's heatmaps, one tab per statistic (CSS radio buttons: no JavaScript)."""
    records = run.diagnostics
    tabs, panels = [], []
    names = {layer for r in records for layer in (*r.get("layers", {}), *r.get("slopes", {}))}
    for kind, spec in HEATMAPS.items():
        layers = [layer for layer in network_order([*record_layers(records), *names])
                  if any(channel_values(r, layer, kind) is not None for r in records)]
        if not layers:
            continue
        lo_hi = None
        if spec.colour is None:
            values = [v for r in records for layer in layers for v in (channel_values(r, layer, kind) or [])
                      if v is not None]
            lo_hi = (min(values), max(values))
        tab_id = f"hm{index}-{kind}"
        tabs.append(f'<input type="radio" name="hm{index}" id="{tab_id}" class="tab-{kind}"'
                    f'{" checked" if not tabs else ""}><label for="{tab_id}">{html.escape(spec.label)}</label>')
        panels.append(f'<div class="panel panel-{kind}" data-kind="{kind}"><p class="legend">'
                      f'{html.escape(spec.legend)}; rows = channels, columns = checks, grey = no value</p>'
                      + "".join(_heatmap_figure(run, layer, kind, lo_hi) for layer in layers) + "</div>")
    return f'<div class="tabs">{"".join(tabs)}{"".join(panels)}</div>'


def _heatmaps(runs: list[Run], grouping: Grouping) -> str:
    """Per run with checks, its heatmap tabs; the first run of each group starts open, the other seeds folded
    (a <details> element: no script)."""
    folds = []
    for i, run in enumerate(runs):
        if not run.diagnostics:
            continue
        group = grouping.group_of(run)
        folds.append(f'<details class="run" id="heatmaps-{i}"{" open" if run is group.runs[0] else ""}>'
                     f'<summary>{swatch(group)} <b>{html.escape(run.name)}</b>: {html.escape(group.label)}, seed '
                     f'{_fmt(run.seed)}</summary>{_heatmap_tabs(run, i)}</details>')
    return ('<h2>Heatmaps per channel over checks</h2><p class="note">Pick a statistic per run; in every '
            'tab yellow is the dead or silent end. A yellow row that starts part-way is a channel that died '
            'at that check. The first run of each group is open; click a run\'s name to open or fold it.</p>'
            + ("".join(folds) or "<p>no diagnostics records</p>"))


def _samples(runs: list[Run], grouping: Grouping) -> str:
    """The newest sample picture of each run."""
    figures = "".join(f'<figure><img alt="samples of {html.escape(r.name)}" src="{_uri(r.sample.read_bytes())}">'
                      f'<figcaption>{swatch(grouping.group_of(r))} {html.escape(r.name)}: '
                      f'{html.escape(r.sample.name)}</figcaption></figure>' for r in runs if r.sample is not None)
    return f'<h2>Newest samples</h2><div class="samples">{figures or "<p>no samples</p>"}</div>'


def _events(runs: list[Run]) -> str:
    """Every run's events in a table ("" when there are none)."""
    rows = "".join(f'<tr><td>{html.escape(r.name)}</td><td>{e["step"]}</td><td>{html.escape(e["kind"])}</td>'
                   f'<td>{html.escape(json.dumps(e.get("detail", {}), separators=(",", ":"))[:300])}</td></tr>'
                   for r in runs for e in r.events)
    if not rows:
        return ""
    return ('<h2>Events</h2><table class="events"><colgroup><col style="width:10%"><col style="width:8%">'
            f'<col style="width:12%"><col></colgroup><tr><th>run</th><th>step</th><th>kind</th>'
            f'<th>detail</th></tr>{rows}</table>')


_CSS = """body{font-family:sans-serif;margin:12px 16px;color:#222;max-width:1400px}h2{margin:18px 0 6px}
table{border-collapse:collapse;margin:6px 0;width:100%;table-layout:fixed}
td,th{border:1px solid #ccc;padding:2px 4px;font-size:11px;text-align:right;overflow-wrap:anywhere;vertical-align:top}
th{background:#eee}td:nth-child(-n+2),th:nth-child(-n+2){text-align:left}col.c-run{width:7%}col.c-set{width:14%}.acts{color:#555;font-size:90%}
.legend-list{display:flex;flex-wrap:wrap;gap:2px 14px;font-size:12px;margin:4px 0}.legend-list span{white-space:nowrap}
.statgrid{display:grid;grid-template-columns:repeat(4,minmax(0,1fr));gap:4px 8px;align-items:center}
.statgrid .head{font-size:12px;font-weight:bold;text-align:center}
details.layer{border-top:1px solid #eee}details.layer summary{font-size:12px;cursor:pointer;padding:2px 0}
.path,.last{color:#555;font-size:11px}.path{font-family:monospace}
h1{font-size:24px;margin:6px 0}p.verdict{font-size:15px;margin:4px 0 6px}p.verdict.ok{color:#1a6e1a}
.maps{display:flex;flex-wrap:wrap;gap:6px 24px;align-items:flex-start}figure.stat figcaption{font-size:12px}
.hm{display:flex;align-items:flex-start;margin:2px 0}.hm-labels{max-width:250px;margin-right:4px}
.hm-labels div{overflow:hidden;white-space:nowrap;text-overflow:ellipsis;text-align:right}
img.overview-map{image-rendering:pixelated;border:1px solid #ccc;min-width:40px}.worst{font-size:11px;max-width:420px}
table.dying{width:auto;min-width:60%}table.dying td:first-child{font-family:monospace}.uses{color:#a40}
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
    runs, failed = load_runs(root)
    grouping = group_runs(runs)
    metric_keys = sorted({k for r in runs for k in r.metrics} | {k for r in runs for rec in r.metrics_history
                                                                 for k in rec if k != "step"})
    title = html.escape(title or f"Dead-channel dashboard: {root.resolve().name}")
    sections = [_dying(runs), _overview(runs, grouping, failed), _run_table(runs, grouping, metric_keys),
                _layer_charts(runs, grouping.groups), _quality_charts(runs, grouping.groups, metric_keys),
                _loss_charts(grouping.groups), _heatmaps(runs, grouping), _samples(runs, grouping), _events(runs)]
    return readable(f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{title}</title>'
                    f'<style>{_CSS}{_tab_css()}</style></head><body><h1>{title}</h1>{"".join(sections)}</body></html>')


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


def write_dashboard(run_dir: Path) -> str | None:
    """Write the run's dashboard page (DASHBOARD_FILE) and say where it is; None when the run logged nothing yet
    (stopped before its first log step). The page is a viewer: when building it fails, a warning names the error
    and the command that rebuilds it, and the run, whose checkpoint, samples and logs are already written, still
    ends as it would have."""
    page = run_dir / DASHBOARD_FILE
    try:
        if not find_runs(run_dir):
            return None
        write_text_atomic(page, build_dashboard(run_dir, f"Run {run_dir.resolve().name}"))
    except Exception as err:  # noqa: BLE001 (any failure of the viewer; the run's own files are complete)
        rebuild = f"python scripts/dashboard.py {shlex.quote(str(run_dir))} --out {shlex.quote(str(page))}"
        log.warning("the dashboard page %s was not written (%s: %s); the run's files are complete, rebuild the page "
                    "with: %s", page, type(err).__name__, err, rebuild)
        return f"not written ({type(err).__name__}); rebuild it with: {rebuild}"
    return str(page)
