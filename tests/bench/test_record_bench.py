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


def test_runs_are_recorded_and_appended(tmp_path: Path) -> None:
    out, raw = tmp_path / "rec.json", tmp_path / "raw.json"
    done = run_script("scripts/bench/record_bench.py", "--out", str(out), "--label", "a", "--embed", str(raw), "--",
                      *writer(raw, 1))
    assert done.returncode == 0, done.stderr
    done = run_script("scripts/bench/record_bench.py", "--out", str(out), "--append", "--label", "b", "--embed", str(raw),
                      "--", *writer(raw, 2, rc=3))
    assert done.returncode == 3  # the command's own exit status
    runs = json.loads(out.read_text())["runs"]
    assert [r["label"] for r in runs] == ["a", "b"] and [r["returncode"] for r in runs] == [0, 3]
    assert [r["embedded"][str(raw)] for r in runs] == [{"v": 1}, {"v": 2}]
    for r in runs:
        assert len(r["load_avg_1min_before_after"]) == 2 and r["wall_s"] >= 0 and r["cpu_s"] >= 0
        assert r["cores"] >= 1 and r["started"].endswith("UTC") and r["command"][0] == sys.executable


def test_a_missing_embedded_file_is_an_error_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "never_written.json"
    done = run_script("scripts/bench/record_bench.py", "--out", str(tmp_path / "rec.json"), "--embed", str(missing), "--",
                      sys.executable, "-c", "pass")
    assert done.returncode != 0 and "never_written.json" in done.stderr
    assert not (tmp_path / "rec.json").exists()
    done = run_script("scripts/bench/record_bench.py", "--out", str(tmp_path / "rec.json"))
    assert done.returncode == 2 and "no command" in done.stderr
