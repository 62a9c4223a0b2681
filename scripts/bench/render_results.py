"""Render docs/results.md and the README's headline from the JSON under docs/data, by the specs in results_spec.py.

A table is data, not code: which file(s), which rows (a path into the JSON), which filter, which grouping, and which
columns, each a field and how to summarise it over the group (value, median, range, mean ± SE, a summarised
{mean, std} dict as mean ± SD or {mean, se} as mean ± SE, a count). A table may also open another page (`also`).
One generic function draws every table; captions, commands and machines are strings in the specs. Only the
standard library is imported: no MindSpore, no Hydra, no PIL.

    python scripts/bench/render_results.py            # rewrite docs/results.md and README.md's headline
    python scripts/bench/render_results.py --check    # exit 1 naming every table whose committed text differs
    python scripts/bench/render_results.py --list     # every table and its data files

Row paths: `a.b` descends into keys, `[]` expands a list, `{}` expands a dict's values (its key as `_key`). A row
expanded from a list inside a row keeps its parent's scalar fields (the child's own win), and every row carries
`_file`, the label of the file it came from. A field may be a dotted path too (`final.D/act2.dead_frac`, `load.0`).
"""
from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

ROOT = Path(__file__).resolve().parents[2]

import results_spec as spec  # noqa: E402  (beside this file; plain data)

RECORD_ROWS = "runs[].rows[]"  # every record's measurements (scripts/bench/records.py): a spec's default row path
MARKER = re.compile(r"^<!-- results:(?P<name>[\w.-]+) -->\n(?P<body>.*?)^<!-- /results:(?P=name) -->$", re.S | re.M)


# ---------------------------------------------------------------- rows

def _expand(items: list[Any], step: str) -> list[Any]:
    """One step of a row path applied to every item (see the module docstring)."""
    out: list[Any] = []
    for item in items:
        parent = {k: v for k, v in item.items() if not isinstance(v, (dict, list))} if isinstance(item, dict) else {}
        if step == "[]":
            children = item if isinstance(item, list) else []
        elif step == "{}":
            children = [dict(v, _key=k) if isinstance(v, dict) else {"_key": k, "value": v} for k, v in item.items()]
        elif isinstance(item, dict) and isinstance(item.get(step), list):  # a list keeps its parent's fields
            children = [[{**parent, **c} if isinstance(c, dict) else c for c in item[step]]]
        else:
            children = [item[step]] if isinstance(item, dict) and step in item else []
        out += children
    return out


def rows(data: Any, path: str, label: str) -> list[dict]:
    """The records at `path` of one file's JSON, each with `_file`, the label of that file."""
    items = [data]
    for step in re.findall(r"\[\]|\{\}|[^.\[\]{}]+", path):
        items = _expand(items, step)
    return [dict(r, _file=label) for r in items if isinstance(r, dict)]


def field(row: Any, name: str) -> Any:
    """row[name], or a dotted path into nested dicts (a key may hold dots or slashes: the longest match wins) and
    lists (a number indexes one); a path through a null is null (rendered "-")."""
    if row is None:
        return None
    if isinstance(row, list):
        head, _, rest = name.partition(".")
        return field(row[int(head)], rest) if rest else row[int(head)]
    if name in row:
        return row[name]
    for cut in range(len(name), 0, -1):
        head = name[:cut]
        if head in row and name[cut:cut + 1] == "." and (row[head] is None or isinstance(row[head], (dict, list))):
            return field(row[head], name[cut + 1:])
    raise KeyError(name)


def matches(row: dict, where: dict) -> bool:
    return all((field(row, k) in v if isinstance(v, list) else field(row, k) == v) for k, v in where.items())


# ---------------------------------------------------------------- summaries

def fmt(x: float, digits: int | str) -> str:
    """x with `digits` decimals (thousands separated from 10,000 on), or by a format spec such as ".2g"."""
    if isinstance(digits, str):
        return format(x, digits)
    return f"{x:,.{digits}f}" if abs(x) >= 10_000 else f"{x:.{digits}f}"


def _values(group: Sequence[dict], name: str, scale: float) -> list[float]:
    """The field's numbers over a group (a field holding a list gives all its items)."""
    found = [field(r, name) for r in group]
    return [float(x) * scale for v in found for x in (v if isinstance(v, list) else [v])]


def mean_se(v: Sequence[float], d: int) -> str:
    """mean ± standard error for 3+ values; both values for two (an SE of two is no estimate); one value alone."""
    if len(v) == 1:
        return fmt(v[0], d)
    if len(v) == 2:
        return f"{fmt(v[0], d)} and {fmt(v[1], d)}"
    return f"{fmt(statistics.mean(v), d)} ± {fmt(statistics.stdev(v) / math.sqrt(len(v)), d)}"


def span(v: Sequence[float], d: int) -> str:
    lo, hi = fmt(min(v), d), fmt(max(v), d)
    return lo if lo == hi else f"{lo}-{hi}"


def stat(s: dict, d: int, scale: float) -> str:
    """A summary dict of seeds ({mean, std, n}, as summarize_sweep writes it): mean ± SD, the mean alone for n = 1."""
    if s["n"] == 1 or not s["std"]:
        return fmt(s["mean"] * scale, d)
    return f"{fmt(s['mean'] * scale, d)} ± {fmt(s['std'] * scale, d)}"


def summarised(s: dict | None, d: int, scale: float) -> str:
    """A {mean, se, ...} dict a collector already summarised over seeds: mean ± SE, the mean alone without an SE;
    with its `values`, the register's own rule (two values print both)."""
    if not s:
        return "-"
    if isinstance(s.get("values"), list):
        return mean_se([float(v) * scale for v in s["values"]], d)
    if s.get("se") is None:
        return fmt(s["mean"] * scale, d)
    return f"{fmt(s['mean'] * scale, d)} ± {fmt(s['se'] * scale, d)}"


HOW: dict[str, Callable[[Sequence[dict], dict], str]] = {
    "value": lambda g, c: _text(field(g[0], c["field"]), c),
    "median": lambda g, c: fmt(statistics.median(_values(g, c["field"], c.get("scale", 1))), c.get("digits", 2)),
    "range": lambda g, c: span(_values(g, c["field"], c.get("scale", 1)), c.get("digits", 2)),
    "mean_se": lambda g, c: mean_se(_values(g, c["field"], c.get("scale", 1)), c.get("digits", 1)),
    "stat": lambda g, c: stat(field(g[0], c["field"]), c.get("digits", 1), c.get("scale", 1)),
    "summarised": lambda g, c: summarised(field(g[0], c["field"]), c.get("digits", 1), c.get("scale", 1)),
    "count": lambda g, c: str(len(g)),
}


def summary(group: Sequence[dict], col: dict) -> str:
    """One cell: the column's summary over the group's rows that match the column's own `where` (a pivot)."""
    rows_in = [r for r in group if matches(r, col.get("where", {}))]
    return HOW[col.get("how", "value")](rows_in, col) if rows_in else "-"


def _text(value: Any, col: dict) -> str:
    if value is None:
        return "-"
    if str(value) in col.get("names", {}):
        return col["names"][str(value)]
    if isinstance(value, float) or (isinstance(value, int) and "scale" in col):
        return fmt(value * col.get("scale", 1), col.get("digits", 2))
    if isinstance(value, list):
        return ", ".join(str(x) for x in value)
    return str(value)


# ---------------------------------------------------------------- tables

def load(root: Path, name: str) -> Any:
    """A data file's JSON: `name` under root/docs/data, or an absolute path (render_files)."""
    return json.loads((root / "docs" / "data" / name).read_text(encoding="utf-8"))


def sources(table: dict) -> list[tuple[str, str]]:
    """(file, label) of each data file a table reads."""
    return [(f, f) if isinstance(f, str) else (f[0], f[1]) for f in table["files"]]


def table_rows(root: Path, table: dict) -> list[dict]:
    path = table.get("rows", RECORD_ROWS)
    found = [r for f, label in sources(table) for r in rows(load(root, f), path, label)]
    return [r for r in found if matches(r, table.get("where", {}))]


def groups(found: Iterable[dict], by: Sequence[str]) -> list[list[dict]]:
    """Rows grouped by the `by` fields, in order of first appearance (one group per row without `by`)."""
    out: dict[Any, list[dict]] = {}
    for n, r in enumerate(found):
        out.setdefault(tuple(str(field(r, k)) for k in by) if by else n, []).append(r)
    return list(out.values())


def markdown(root: Path, table: dict) -> str:
    """The table's markdown: the grid, then its title, caption, command, machine and data files."""
    found = table_rows(root, table)
    if not found:
        raise ValueError(f"table {table['name']}: no row of {[f for f, _ in sources(table)]} at "
                         f"{table.get('rows', RECORD_ROWS)!r} matches {table.get('where', {})}")
    cols = table["columns"]
    lines = ["| " + " | ".join(c["header"] for c in cols) + " |", "|" + "---|" * len(cols)]
    for g in groups(found, table.get("by", [])):
        lines.append("| " + " | ".join(summary(g, c) for c in cols) + " |")
    links = ", ".join(label if Path(f).is_absolute() else f"[{f}](data/{f})"
                      for f, label in sources(table))
    notes = [f"**{table['title'].rstrip(':.')}.**", table.get("caption", ""),
             f"Command: `{table['command']}`." if table.get("command") else "",
             f"Machine: {table['machine']}." if table.get("machine") else "", f"Data: {links}."]
    return "\n".join(lines) + "\n\n" + " ".join(n for n in notes if n) + "\n"


def cell(root: Path, c: dict) -> str:
    """One figure of the headline: a column spec applied to the rows a small table spec selects."""
    found = table_rows(root, {"name": "headline", **c})
    if not found:
        raise ValueError(f"headline: no row of {c['files']} matches {c.get('where', {})}")
    return summary(found, c)


def render_files(tables: Sequence[dict], paths: Sequence[Path]) -> str:
    """The given table specs drawn from files anywhere (e.g. `bench_train.py --render` of fresh runs), each file's
    rows labelled by its name."""
    files = [[str(p.resolve()), p.name] for p in paths]
    return "\n".join(markdown(ROOT, {**t, "files": files}) for t in tables)


def headline(root: Path) -> str:
    lines = ["| claim | measured | n |", "|---|---|---|"]
    for row in spec.HEADLINE:
        figures = {k: cell(root, c) for k, c in row["cells"].items()}
        lines.append(f"| {row['claim']} | {row['measured'].format(**figures)} | {row['n']} |")
    return "\n".join(lines) + "\n\nCaveats, machines and every other figure: [docs/results.md](docs/results.md).\n"


def results_page(root: Path) -> str:
    out = [spec.INTRO.strip() + "\n"]
    for section in spec.SECTIONS:
        out.append(f"## {section['title']}\n\n{section['text'].strip()}\n")
        for t in (t for t in spec.TABLES if t["section"] == section["title"]):
            out.append(f"<!-- results:{t['name']} -->\n{markdown(root, t)}<!-- /results:{t['name']} -->\n")
    return "\n".join(out)


# ---------------------------------------------------------------- the documents

def blocks(text: str) -> dict[str, str]:
    return {m.group("name"): m.group("body") for m in MARKER.finditer(text)}


def process(root: Path, write: bool) -> list[str]:
    """Render docs/results.md and the README headline; returns what differs from the committed text, by name."""
    stale: list[str] = []
    page, readme = root / "docs" / "results.md", root / "README.md"
    new = results_page(root)
    old = page.read_text(encoding="utf-8") if page.is_file() else ""
    old_blocks, new_blocks = blocks(old), blocks(new)
    stale += [f"{name} (docs/results.md)" for name in new_blocks if old_blocks.get(name) != new_blocks[name]]
    if new != old and not stale:
        stale.append("docs/results.md (text outside the tables)")
    if write and new != old:
        page.write_text(new, encoding="utf-8")
    for t in (t for t in spec.TABLES if t.get("also")):  # a table a page opens with: the same block, from the data
        other = root / t["also"]
        text = other.read_text(encoding="utf-8")
        m = re.search(rf"^<!-- results:{t['name']} -->\n(.*?)^<!-- /results:{t['name']} -->$", text, re.S | re.M)
        if m is None:
            stale.append(f"{t['name']} ({t['also']} has no results:{t['name']} markers)")
        elif m.group(1) != new_blocks[t["name"]]:
            stale.append(f"{t['name']} ({t['also']})")
            if write:
                other.write_text(text[:m.start(1)] + new_blocks[t["name"]] + text[m.end(1):], encoding="utf-8")
    text = readme.read_text(encoding="utf-8")
    body = headline(root)
    m = re.search(r"^<!-- results:headline -->\n(.*?)^<!-- /results:headline -->$", text, re.S | re.M)
    if m is None:
        stale.append("headline (README.md has no results:headline markers)")
    elif m.group(1) != body:
        stale.append("headline (README.md)")
        if write:
            readme.write_text(text[:m.start(1)] + body + text[m.end(1):], encoding="utf-8")
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a table differs")
    parser.add_argument("--list", action="store_true", help="list the tables and their data files")
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository to read (default: this one)")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    if args.list:
        for t in spec.TABLES:
            print(f"{t['name']} ({t['section']}): {', '.join(f for f, _ in sources(t))}")
        return 0
    try:
        stale = process(root, write=not args.check)
    except (OSError, KeyError, ValueError) as e:
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    if args.check and stale:
        print("out of date (run python scripts/bench/render_results.py): " + "; ".join(stale), file=sys.stderr)
        return 1
    if stale:
        print("rendered: " + "; ".join(stale))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
