"""scripts/bench/records.py: records are built, written (appended) and read in the one shape of docs/data, anything
else is refused naming the file; every docs/data file is in that shape and is read by a table or linked from a page."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import records
import results_spec

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "docs" / "data"
DATA_FILES = sorted(p.name for p in DATA.glob("*.json"))


def test_a_record_has_exactly_the_fields_and_round_trips(tmp_path: Path) -> None:
    rec = records.record([{"x": 1}], command=["python", "bench.py"], label="a", context={"steps": 3}, wall_s=1.234)
    assert tuple(rec) == records.FIELDS
    assert (rec["label"], rec["command"], rec["context"], rec["rows"], rec["wall_s"]) == (
        "a", ["python", "bench.py"], {"steps": 3}, [{"x": 1}], 1.23)
    assert rec["started"].endswith("UTC") and len(rec["load_avg_1min"]) == 2 and rec["machine"]["cpus"] >= 1
    out = tmp_path / "data.json"
    records.write(out, [rec])
    assert records.read(out) == [rec] and json.loads(out.read_text()) == {"runs": [rec]}


def test_append_keeps_the_records_already_there(tmp_path: Path) -> None:
    out = tmp_path / "data.json"
    records.write(out, [records.record([{"v": 1}], label="a")])
    records.write(out, [records.record([{"v": 2}], label="b")], append=True)
    assert [(r["label"], r["rows"]) for r in records.read(out)] == [("a", [{"v": 1}]), ("b", [{"v": 2}])]
    records.write(out, [records.record([{"v": 3}], label="c")])  # without append: replaced
    assert [r["label"] for r in records.read(out)] == ["c"]


def test_appending_to_a_foreign_file_is_refused_naming_it_and_leaves_it_alone(tmp_path: Path) -> None:
    foreign = tmp_path / "old_shape.json"
    text = json.dumps({"records": [{"v": 1}], "complete": True})
    foreign.write_text(text)
    with pytest.raises(records.RecordError, match="old_shape.json"):
        records.write(foreign, [records.record([{"v": 2}])], append=True)
    assert foreign.read_text() == text


@pytest.mark.parametrize("data, message", [
    ({"runs": []}, "at least one record"),
    ({"runs": [{}], "extra": 1}, "at least one record"),
    ([{"rows": []}], "at least one record"),
    ({"runs": [{"label": "x", "rows": []}]}, "a record has exactly"),
])
def test_check_names_the_file_and_what_is_out_of_shape(data, message: str) -> None:
    with pytest.raises(records.RecordError, match=f"bench.json: .*{message}"):
        records.check(data, "bench.json")


def test_a_row_that_is_not_an_object_is_refused() -> None:
    rec = records.record([{"v": 1}])
    with pytest.raises(records.RecordError, match=r"bench.json: runs\[1\].rows must be a list of objects"):
        records.check({"runs": [rec, {**rec, "rows": [{"v": 1}, 2]}]}, "bench.json")
    with pytest.raises(records.RecordError, match="rows must be dicts"):
        records.record([{"v": 1}, [2]])
    with pytest.raises(records.RecordError, match="context must be an object"):
        records.check({"runs": [{**rec, "context": None}]}, "bench.json")


def test_read_names_a_file_that_is_missing_not_regular_or_not_json(tmp_path: Path) -> None:
    with pytest.raises(records.RecordError, match="missing.json: not a regular file"):
        records.read(tmp_path / "missing.json")
    (tmp_path / "folder.json").mkdir()
    with pytest.raises(records.RecordError, match="folder.json: not a regular file"):
        records.read(tmp_path / "folder.json")
    (tmp_path / "broken.json").write_text("{\"runs\": [")
    with pytest.raises(records.RecordError, match="broken.json: not readable JSON"):
        records.read(tmp_path / "broken.json")


@pytest.mark.parametrize("name", DATA_FILES)
def test_every_data_file_is_in_the_record_shape(name: str) -> None:
    records.read(DATA / name)


def _read_by_tables() -> set[str]:
    """The data files the results page's tables and the README headline read."""
    tables = [*results_spec.TABLES, *(c for row in results_spec.HEADLINE for c in row["cells"].values())]
    return {f if isinstance(f, str) else f[0] for t in tables for f in t["files"]}


def _linked_from_pages() -> set[str]:
    """The data files named as data/NAME in a page under docs/ or in README.md."""
    pages = [*(ROOT / "docs").rglob("*.md"), ROOT / "README.md"]
    return {m for page in pages for m in re.findall(r"data/([\w.+-]+\.json)", page.read_text(encoding="utf-8"))}


def test_every_data_file_is_read_by_a_table_or_linked_from_a_page() -> None:
    used = _read_by_tables() | _linked_from_pages()
    assert [name for name in DATA_FILES if name not in used] == []
