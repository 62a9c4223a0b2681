"""Inline SVG charts of run groups for the dashboard: per group the mean over its runs with a min-max band, and
the runs' events as lettered markers; one line style per group. Text from run folders (labels, event kinds, run
names) is escaped here, where it enters the SVG."""
from __future__ import annotations

import html
import math
from typing import Callable

from gan.analysis.runs import Group, Points, Run

# Event kinds (events.jsonl): the letter drawn on the charts and what it means.
EVENT_MARKERS = {"resume": ("R", "resumed from a checkpoint"),
                 "resume_override": ("O", "resumed with changed settings"),
                 "nonfinite_skip": ("N", "non-finite step skipped"),
                 "nonfinite_stop": ("X", "stopped after non-finite steps"),
                 "recycle": ("C", "dead channels recycled"),
                 "data_skip": ("S", "unreadable image skipped")}
# Tableau 10 colours x 3 dash patterns: 30 distinguishable groups before a style repeats.
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf")
DASHES = ("", "6 3", "2 2")


def line_style(group: Group) -> tuple[str, str]:
    """(colour, dash pattern) of a group's line: a colour per group, then the next dash pattern."""
    return COLOURS[group.index % len(COLOURS)], DASHES[group.index // len(COLOURS) % len(DASHES)]


def _dash_attribute(dash: str) -> str:
    return f' stroke-dasharray="{dash}"' if dash else ""


def marker(kind: str) -> tuple[str, str]:
    """(letter, meaning) of an event kind; "?" for a kind this dashboard does not know."""
    return EVENT_MARKERS.get(kind, ("?", "unknown kind"))


def _band(series: list[Points]) -> list[tuple[float, float, float, float]]:
    """(step, mean, min, max) over the runs' (step, value) series, finite values only, sorted by step."""
    by_step: dict[int, list[float]] = {}
    for points in series:
        for step, value in points:
            if value is not None and math.isfinite(value):
                by_step.setdefault(step, []).append(value)
    return [(s, sum(v) / len(v), min(v), max(v)) for s, v in sorted(by_step.items())]


def _group_events(group: Group) -> list[tuple[int, str, str]]:
    """Distinct (step, kind, tooltip) events of a group's runs."""
    seen: dict[tuple[int, str], list[str]] = {}
    for run in group.runs:
        for event in run.events:
            seen.setdefault((event["step"], event["kind"]), []).append(run.name)
    return [(step, kind, f"{kind} at step {step}: {marker(kind)[1]} ({', '.join(names)})")
            for (step, kind), names in sorted(seen.items())]


def line_chart_svg(groups: list[Group], points: Callable[[Run], Points], title: str,
                   y_range: tuple[float, float] | None = None, width: int = 320, height: int = 140) -> str:
    """An inline SVG chart: per group the mean over its runs of `points(run)`, a min-max band, event markers.

    The SVG scales to its container (viewBox); one legend for the whole page names the groups.
    """
    lines = [(g, _band([points(r) for r in g.runs])) for g in groups]
    drawn = [p for _, band in lines for p in band]
    left, right, top, bottom = 44, 8, 20, 20
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" class="chart" role="img">'
           f'<title>{html.escape(title)}</title><text x="{left}" y="13" font-size="12">{html.escape(title)}</text>']
    if not drawn:
        svg.append(f'<text x="{left}" y="{height // 2}" font-size="11" fill="#888">no data</text></svg>')
        return "".join(svg)
    x0, x1 = min(p[0] for p in drawn), max(p[0] for p in drawn)
    y0, y1 = y_range or (min(0.0, min(p[2] for p in drawn)), max(p[3] for p in drawn))
    one_step = x1 <= x0
    x0, x1 = (x0 - 1, x0 + 1) if one_step else (x0, x1)  # a single step sits in the middle
    y1 = y1 if y1 > y0 else y0 + 1
    w, h = width - left - right, height - top - bottom

    def sx(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * w

    def sy(y: float) -> float:
        return top + (1 - (y - y0) / (y1 - y0)) * h

    svg.append(f'<rect x="{left}" y="{top}" width="{w}" height="{h}" fill="none" stroke="#bbb"/>')
    for value in (y0, y1):
        svg.append(f'<text x="{left - 3}" y="{sy(value) + 4:.1f}" font-size="10" text-anchor="end">{value:.3g}</text>')
    for value, anchor in (((x0 + x1) / 2, "middle"),) if one_step else ((x0, "start"), (x1, "end")):
        svg.append(f'<text x="{sx(value):.1f}" y="{height - 6}" font-size="10" text-anchor="{anchor}">'
                   f'{value:.0f}</text>')
    for group, band in lines:
        if not band:
            continue
        colour, dash = line_style(group)
        if any(lo != hi for _, _, lo, hi in band):
            outline = [(sx(s), sy(hi)) for s, _, _, hi in band] + [(sx(s), sy(lo)) for s, _, lo, _ in reversed(band)]
            svg.append(f'<polygon fill="{colour}" fill-opacity="0.15" stroke="none" points="'
                       + " ".join(f"{x:.1f},{y:.1f}" for x, y in outline) + '"/>')
        coords = " ".join(f"{sx(s):.1f},{sy(m):.1f}" for s, m, _, _ in band)
        svg.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.6"{_dash_attribute(dash)} '
                   f'points="{coords}"><title>{html.escape(group.label)}</title></polyline>')
        if len(band) == 1:  # one check (an inspection snapshot): a dot and its value, not a line of one point
            step, mean, _, _ = band[0]
            below = sy(mean) < top + 14  # at the top of the plot the value goes under the dot, clear of the title
            svg.append(f'<circle cx="{sx(step):.1f}" cy="{sy(mean):.1f}" r="3.5" fill="{colour}"/><text '
                       f'x="{sx(step) + 6:.1f}" y="{sy(mean) + (13 if below else -4):.1f}" font-size="10" '
                       f'fill="{colour}" class="value">{mean:.3g}</text>')
        for step, kind, tip in _group_events(group):
            if x0 <= step <= x1:
                x = sx(step)
                svg.append(f'<g class="event"><title>{html.escape(tip)}</title><line x1="{x:.1f}" y1="{top}" '
                           f'x2="{x:.1f}" y2="{top + h}" stroke="{colour}" stroke-opacity="0.6" '
                           f'stroke-dasharray="1 2"/><text x="{x:.1f}" y="{top + 9}" font-size="9" '
                           f'text-anchor="middle" fill="{colour}">{marker(kind)[0]}</text></g>')
    return "".join(svg) + "</svg>"


def swatch(group: Group) -> str:
    """A short line in the group's colour and dash, for legends."""
    colour, dash = line_style(group)
    return (f'<svg width="26" height="10" class="swatch"><line x1="1" y1="5" x2="25" y2="5" stroke="{colour}" '
            f'stroke-width="2.5"{_dash_attribute(dash)}/></svg>')
