"""scripts/bench/plot_study.py: the standard errors of the HQ series, and both figures written as PNG from small
inputs."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from gan.run.files import append_jsonl

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench" / "plot_study.py"
REPO = SCRIPT.parents[1]


def load_script():
    import plot_study

    return plot_study


def run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *argv], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


def record(dataset: str, steps: int, seed: int, hq: float) -> dict:
    return {"dataset": dataset, "slope": 0.2, "seed": seed, "steps": steps, "modes": 8, "hq_fraction": hq,
            "reverse_kl": 0.1}


def test_hq_series_gives_mean_and_standard_error_per_length():
    series = load_script().hq_series([record("ring8", 5000, 0, 0.2), record("ring8", 2000, 0, 0.1),
                                      record("ring8", 2000, 1, 0.3), record("grid25", 2000, 0, 0.05)])
    assert list(series) == [("grid25", 0.2), ("ring8", 0.2)]
    (steps, mean, se, n), last = series[("ring8", 0.2)]
    assert (steps, n) == (2000, 2) and mean == pytest.approx(20.0) and se == pytest.approx(10.0)  # std 14.14 / sqrt 2
    assert last == (5000, pytest.approx(20.0), 0.0, 1)


def test_a_prelu_row_is_listed_after_the_slopes():
    prelu = {**record("ring8", 2000, 0, 0.4), "slope": "prelu"}
    series = load_script().hq_series([prelu, record("ring8", 2000, 0, 0.2), {**record("ring8", 2000, 0, 0.1),
                                                                              "slope": 0.0}])
    assert list(series) == [("ring8", 0.0), ("ring8", 0.2), ("ring8", "prelu")]


@pytest.mark.slow
def test_both_figures_are_written_as_png(tmp_path):
    import records

    bench = tmp_path / "bench.json"
    records.write(bench, [records.record([record("ring8", s, t, 0.1 * t + s / 1e5) for s in (2000, 10000)
                                          for t in range(3)], context={"pacgan_gan": {"ring8": [6.3, 98.2, 0.45]}})])
    sweep = tmp_path / "sweep"
    for number, (slope, seed) in enumerate([(0, 0), (0, 1), (0.2, 0)]):
        job = sweep / str(number)
        (job / ".hydra").mkdir(parents=True)
        (job / ".hydra" / "overrides.yaml").write_text(f"- act.negative_slope={slope}\n- seed={seed}\n")
        for step in (25, 50):
            layer = {"channels": 4, "dead_frac": step / 100, "dormant_frac": step / 200 if slope == 0 else 0.0,
                     "grad_dead_frac": 0.0, "persistent_frac": 0.0}
            append_jsonl(job / "diagnostics.jsonl", {"step": step, "layers": {"D/act0": layer, "D/act1": layer}})
    for argv, out in ((["hq", str(bench)], "hq.png"), (["dead", str(sweep)], "dead.png")):
        done = run(*argv, "--out", str(tmp_path / out))
        assert done.returncode == 0, done.stderr[-2000:]
        with Image.open(tmp_path / out) as image:
            assert image.format == "PNG" and image.width > 500 and image.height > 300


@pytest.mark.slow
def test_empty_inputs_fail_naming_the_problem(tmp_path):
    import records

    records.write(tmp_path / "empty.json", [records.record([])])
    done = run("hq", str(tmp_path / "empty.json"), "--out", str(tmp_path / "x.png"))
    assert done.returncode == 2 and "no bench_modes records" in done.stderr
    (tmp_path / "old.json").write_text(json.dumps({"records": []}))
    done = run("hq", str(tmp_path / "old.json"), "--out", str(tmp_path / "x.png"))
    assert done.returncode == 2 and "old.json" in done.stderr and not (tmp_path / "x.png").exists()
    done = run("dead", str(tmp_path), "--out", str(tmp_path / "y.png"))
    assert done.returncode == 2 and "no Hydra job" in done.stderr and not (tmp_path / "y.png").exists()
