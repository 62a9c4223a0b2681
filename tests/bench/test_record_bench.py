"""scripts/bench/record_bench.py: a command's record holds its conditions, the JSON it wrote, and its exit status."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.helpers import run_script

pytestmark = pytest.mark.slow  # every test here is end-to-end


def writer(path: Path, value: int, rc: int = 0) -> list[str]:
    code = f"import json, sys; json.dump({{'v': {value}}}, open({str(path)!r}, 'w')); sys.exit({rc})"
    return [sys.executable, "-c", code]


def test_runs_are_recorded_and_appended_in_the_one_record_shape(tmp_path: Path) -> None:
    out, raw = tmp_path / "rec.json", tmp_path / "raw.json"
    done = run_script("scripts/bench/record_bench.py", "--out", str(out), "--label", "a", "--embed", str(raw), "--",
                      *writer(raw, 1))
    assert done.returncode == 0, done.stderr
    done = run_script("scripts/bench/record_bench.py", "--out", str(out), "--append", "--label", "b",
                      "--embed", str(raw), "--", *writer(raw, 2, rc=3))
    assert done.returncode == 3  # the command's own exit status
    runs = json.loads(out.read_text())["runs"]
    assert [r["label"] for r in runs] == ["a", "b"] and [r["returncode"] for r in runs] == [0, 3]
    assert [r["rows"] for r in runs] == [[{"v": 1}], [{"v": 2}]]  # an object the command wrote is one row
    for r in runs:
        assert set(r) == {"label", "command", "commit", "started", "machine", "load_avg_1min", "wall_s", "cpu_s",
                          "returncode", "context", "rows"}
        assert len(r["load_avg_1min"]) == 2 and r["wall_s"] >= 0 and r["cpu_s"] >= 0
        assert r["machine"]["cpus"] >= 1 and isinstance(r["machine"]["flags"], list) and r["machine"]["model"]
        assert r["started"].endswith("UTC") and r["command"][0] == sys.executable


def test_a_list_the_command_writes_gives_one_row_per_item(tmp_path: Path) -> None:
    out, raw = tmp_path / "rec.json", tmp_path / "raw.json"
    code = f"import json; json.dump([{{'n': 1}}, {{'n': 2}}], open({str(raw)!r}, 'w'))"
    done = run_script("scripts/bench/record_bench.py", "--out", str(out), "--embed", str(raw), "--",
                      sys.executable, "-c", code)
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text())["runs"][0]["rows"] == [{"n": 1}, {"n": 2}]


def test_a_missing_embedded_file_or_a_foreign_file_is_an_error_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "never_written.json"
    done = run_script("scripts/bench/record_bench.py", "--out", str(tmp_path / "rec.json"), "--embed", str(missing),
                      "--", sys.executable, "-c", "pass")
    assert done.returncode != 0 and "never_written.json" in done.stderr
    assert not (tmp_path / "rec.json").exists()
    done = run_script("scripts/bench/record_bench.py", "--out", str(tmp_path / "rec.json"))
    assert done.returncode == 2 and "no command" in done.stderr
    foreign = tmp_path / "old.json"
    foreign.write_text(json.dumps({"runs": [{"label": "x", "embedded": {}}]}))
    done = run_script("scripts/bench/record_bench.py", "--out", str(foreign), "--append", "--",
                      sys.executable, "-c", "pass")
    assert done.returncode != 0 and "old.json" in done.stderr and "rows" in done.stderr


def test_rows_key_takes_the_rows_from_a_list_and_keeps_the_other_keys_as_context(tmp_path: Path) -> None:
    out, raw = tmp_path / "rec.json", tmp_path / "summary.json"
    summary = {"sweep": "s", "common": {"train.steps": "300"}, "varied": ["seed"], "groups": [{"label": "a"},
                                                                                            {"label": "b"}]}
    code = f"import json; json.dump({summary!r}, open({str(raw)!r}, 'w'))"
    done = run_script("scripts/bench/record_bench.py", "--out", str(out), "--embed", str(raw), "--rows-key", "groups",
                      "--", sys.executable, "-c", code)
    assert done.returncode == 0, done.stderr
    run = json.loads(out.read_text())["runs"][0]
    assert run["rows"] == [{"label": "a"}, {"label": "b"}]
    assert run["context"] == {"sweep": "s", "common": {"train.steps": "300"}, "varied": ["seed"]}
    done = run_script("scripts/bench/record_bench.py", "--out", str(tmp_path / "other.json"), "--embed", str(raw),
                      "--rows-key", "recipes", "--", sys.executable, "-c", "pass")
    assert done.returncode != 0 and "summary.json" in done.stderr and "'recipes'" in done.stderr
    assert not (tmp_path / "other.json").exists()
