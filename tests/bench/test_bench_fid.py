"""scripts/bench/bench_fid.py's table (docs/metrics.md) from a record of its data file (scripts/bench/records.py's
shape: the machine and load, a row per threads and batch, the metrics' costs in the context); the timing itself
needs torch (the bench extra) and is not run here."""
from __future__ import annotations

import pytest
import records

from tests.helpers import run_script

pytestmark = pytest.mark.slow  # every test here is end-to-end


def _row(threads: int, batch: int, torch: float, ours: float) -> dict:
    rates = lambda v: {"median": v, "min": v * 0.9, "max": v * 1.1, "runs": [v] * 3}  # noqa: E731
    return {"threads": threads, "batch": batch, "torch_img_s": rates(torch), "ours_img_s": rates(ours),
            "ours_pipeline_img_s": rates(ours * 0.95), "ratio": rates(ours / torch),
            "torch_s_per_1000": 1000 / torch, "ours_s_per_1000": 1000 / ours, "ours_pipeline_s_per_1000": 1000 / ours}


def test_markdown_table_from_a_json(tmp_path):
    metrics = {"reference": 10000, "samples": 2000, "statistics_s": 1.0, "fid_s": 5.0, "fid_sqrtm_s": 20.0,
               "kid_s": 8.0, "precision_recall_s": 2.0}
    run = records.record([_row(1, 16, 2.0, 5.0), _row(2, 32, 3.0, 9.0)], context={"metrics": metrics})
    run.update(machine={"model": "Test CPU", "cpus": 2}, load_avg_1min=[1.5, 2.5])
    path = tmp_path / "bench.json"
    records.write(path, [run])
    done = run_script("scripts/bench/bench_fid.py", "--markdown", str(path), timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[2] == "| 1 | 16 | 2.00 | 5.00 (4.75) | 2.50x (2.25-2.75) | 500 | 200 (200) |"
    assert lines[3].startswith("| 2 | 32 | 3.00 | 9.00")
    assert "Test CPU, 2 CPUs, load average 1.5 before and 2.5 after" in done.stdout
    assert "FID 5.0 s (scipy's sqrtm: 20.0 s), KID 8.0 s" in done.stdout


def test_markdown_of_a_file_of_another_shape_names_it(tmp_path):
    path = tmp_path / "old.json"
    path.write_text('{"results": []}')  # the shape before records.py
    done = run_script("scripts/bench/bench_fid.py", "--markdown", str(path), timeout=120)
    assert done.returncode == 2 and "old.json: expected" in done.stderr and "Traceback" not in done.stderr
