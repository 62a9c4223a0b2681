"""scripts/bench/render_results.py: the committed tables equal what their JSON renders, the check names a hand-edited
figure and a changed data file, and the generic summaries and row paths do what the specs rely on."""
from __future__ import annotations

import ast
import json
import re
import shutil
from pathlib import Path

import render_results as rr  # noqa: E402
import results_spec  # noqa: E402

from tests.helpers import REPO, run_script


def copy_tree(dst: Path) -> Path:
    """README.md and docs/ (pages and data) of this repository under dst."""
    shutil.copy2(REPO / "README.md", dst / "README.md")
    shutil.copytree(REPO / "docs", dst / "docs", ignore=shutil.ignore_patterns("img"))
    return dst


def test_the_committed_tables_are_what_the_data_render() -> None:
    done = run_script("scripts/bench/render_results.py", "--check", timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_table_reads_files_that_exist_and_has_a_command_and_a_machine() -> None:
    names = [t["name"] for t in results_spec.TABLES]
    assert len(names) == len(set(names))
    sections = {s["title"] for s in results_spec.SECTIONS}
    for t in results_spec.TABLES:
        assert t["section"] in sections and t.get("command") and t.get("machine"), t["name"]
        for script in re.findall(r"(?:scripts|train)[\w/]*\.py", t["command"]):
            assert (REPO / script).is_file(), f"{t['name']}: its command names {script}, which does not exist"
        for source, _ in rr.sources(t):
            assert (REPO / "docs" / "data" / source).is_file(), f"{t['name']}: docs/data/{source} is missing"


def test_the_check_names_a_table_whose_figure_was_edited_by_hand(tmp_path: Path) -> None:
    root = copy_tree(tmp_path)
    page = root / "docs" / "results.md"
    text = page.read_text(encoding="utf-8")
    row = "| 0.2 | 10 | 24.4 ± 0.3 |"  # grid25 at 20,000 steps, D slope 0.2
    assert text.count(row) == 1
    page.write_text(text.replace(row, "| 0.2 | 10 | 24.9 ± 0.3 |"), encoding="utf-8")
    done = run_script("scripts/bench/render_results.py", "--check", "--root", str(root), timeout=120)
    assert done.returncode == 1
    assert "grid25_slopes (docs/results.md)" in done.stderr and "ring8_slopes" not in done.stderr
    done = run_script("scripts/bench/render_results.py", "--root", str(root), timeout=120)  # re-rendering repairs it
    assert done.returncode == 0, done.stderr
    assert page.read_text(encoding="utf-8") == text


def test_the_check_names_a_table_whose_data_changed(tmp_path: Path) -> None:
    root = copy_tree(tmp_path)
    data = root / "docs" / "data" / "bench_train_g_once_idle.json"
    report = json.loads(data.read_text(encoding="utf-8"))
    report["runs"][0]["rows"][0]["img_per_s"] += 500.0  # DCGAN-32 without fusion: a table cell, not a headline ratio
    data.write_text(json.dumps(report), encoding="utf-8")
    stale = rr.process(root, write=False)
    assert stale == ["train_xeon_avx512_idle (docs/results.md)"]
    done = run_script("scripts/bench/render_results.py", "--check", "--root", str(root), timeout=120)
    assert done.returncode == 1 and "train_xeon_avx512_idle (docs/results.md)" in done.stderr
    report["runs"][0]["rows"][1]["ratio_to_torch"] += 0.5  # the conv_act ratio the headline quotes too
    data.write_text(json.dumps(report), encoding="utf-8")
    assert "headline (README.md)" in rr.process(root, write=False)


def test_a_spec_that_selects_nothing_is_an_error_naming_the_table(tmp_path: Path) -> None:
    table = {"name": "t", "files": ["bench_inplace.json"], "rows": "runs[].rows[]", "where": {"inplace": 7},
             "columns": [{"header": "x", "field": "peak_mib"}]}
    try:
        rr.markdown(REPO, table)
    except ValueError as e:
        assert "table t" in str(e) and "bench_inplace.json" in str(e)
    else:
        raise AssertionError("no error")


def test_row_paths_expand_lists_and_dicts_and_keep_the_parents_fields() -> None:
    data = {"runs": [[{"m": "a", "v": 1}, {"m": "b", "v": 2}], [{"m": "a", "v": 3}]],
            "records": [{"seed": 0, "points": [{"step": 1, "fid": 9.0}]}], "sets": {"x": {"n": 1}},
            "runs_of_records": [{"label": "a", "rows": [{"k": 1}]}]}
    assert [r["v"] for r in rr.rows(data, "runs[][]", "f")] == [1, 2, 3]
    assert rr.rows(data, "records[].points[]", "f") == [{"seed": 0, "step": 1, "fid": 9.0, "_file": "f"}]
    assert rr.rows(data, "sets{}", "f") == [{"n": 1, "_key": "x", "_file": "f"}]
    assert rr.rows(data, "runs_of_records[].rows[]", "f") == [{"label": "a", "k": 1, "_file": "f"}]
    assert rr.field({"final": {"D/act2": {"dead": 1}}}, "final.D/act2.dead") == 1


def test_a_field_path_through_a_null_renders_a_dash() -> None:
    """A cell whose comparison is absent (ReLU against itself: vs_relu is null) prints "-", never a KeyError."""
    row = {"vs_relu": None, "spread": {"ci95": [-0.5, 0.9]}}
    assert rr.field(row, "vs_relu.spread.reduction") is None
    assert rr.field(row, "spread.ci95.1") == 0.9
    assert rr.HOW["value"]([row], {"field": "vs_relu.spread.reduction", "digits": "+.0%"}) == "-"
    try:
        rr.field(row, "missing.key")
    except KeyError:
        pass
    else:
        raise AssertionError("a key that is not there is still an error")


def test_summaries_never_print_a_zero_standard_error_for_two_values() -> None:
    assert rr.mean_se([20.0, 20.0], 1) == "20.0 and 20.0"
    assert rr.mean_se([8.0], 1) == "8.0"
    assert rr.mean_se([1.0, 2.0, 3.0], 2) == "2.00 ± 0.58"  # SE = sd / sqrt(3)
    assert rr.span([1.234, 1.236], 2) == "1.23-1.24" and rr.span([2.0, 2.0], 1) == "2.0"
    assert rr.stat({"mean": 0.2, "std": 0.05, "n": 3}, 1, 100) == "20.0 ± 5.0"
    assert rr.stat({"mean": 0.25, "std": 0.0, "n": 1}, 1, 100) == "25.0"
    assert rr.summarised({"mean": 0.2, "se": 0.01}, 1, 100) == "20.0 ± 1.0"  # a collector's {mean, se}
    assert rr.summarised({"mean": 0.2, "se": None}, 1, 100) == "20.0" and rr.summarised(None, 1, 1) == "-"
    assert rr.summarised({"mean": 2.0, "se": 1.0, "values": [1.0, 3.0]}, 1, 1) == "1.0 and 3.0"


def test_a_table_a_page_opens_with_is_checked_and_rendered_there_too(tmp_path: Path) -> None:
    root = copy_tree(tmp_path)
    opened = [t for t in results_spec.TABLES if t.get("also")]
    assert opened, "no table names a page it opens"
    page = root / opened[0]["also"]
    text = page.read_text(encoding="utf-8")
    body = rr.blocks(text)[opened[0]["name"]]
    assert body == rr.blocks((root / "docs" / "results.md").read_text(encoding="utf-8"))[opened[0]["name"]]
    page.write_text(text.replace(body, body.replace("|---|", "|---|\n| edited by hand |", 1)), encoding="utf-8")
    assert rr.process(root, write=False) == [f"{opened[0]['name']} ({opened[0]['also']})"]
    rr.process(root, write=True)
    assert page.read_text(encoding="utf-8") == text
    page.write_text(text.replace(f"<!-- results:{opened[0]['name']} -->", ""), encoding="utf-8")
    assert "has no results:" in rr.process(root, write=False)[0]


def test_the_renderer_imports_only_the_standard_library_and_its_spec() -> None:
    allowed = {"argparse", "json", "math", "re", "statistics", "sys", "pathlib", "typing", "__future__",
               "results_spec"}
    for name in ("render_results.py", "results_spec.py"):
        tree = ast.parse((REPO / "scripts" / "bench" / name).read_text(encoding="utf-8"))
        imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert imported <= allowed, f"{name} imports {sorted(imported - allowed)}"
