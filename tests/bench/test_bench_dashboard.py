"""scripts/bench/bench_dashboard.py: argument checks and one tiny sweep whose page has every chart and image."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # every test here is end-to-end

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench" / "bench_dashboard.py"


def run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *argv], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "GLOG_v": "3"})


@pytest.mark.parametrize("argv,message", [(["--runs", "0"], "--runs=0"), (["--interval", "900", "--steps", "500"],
                                                                            "--interval=900 is larger")])
def test_bad_arguments_are_named(argv: list[str], message: str, tmp_path: Path) -> None:
    done = run("--json", str(tmp_path / "out.json"), *argv)
    assert done.returncode == 2 and message in done.stderr and not (tmp_path / "out.json").exists()


def test_tiny_sweep_page_has_every_chart_and_image(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    done = run("--json", str(out), "--runs", "4", "--steps", "500", "--interval", "250", "--shape", "dcgan32",
               "--repeats", "1")
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(out.read_text())
    layers = 6
    # 3 heatmaps per layer and run, one sample per run, the overview's 3 maps (dead, dormant, grad-dead: the
    # synthetic records have dead channels); 4 statistics per layer, 3 mode metrics, 4 loss charts.
    assert result["images"] == 4 * (3 * layers + 1) + 3
    assert result["charts"] == 4 * layers + 3 + 4
    assert len(result["render_s"]) == 1 and 0 < result["cpu_s_median"] and 0 < result["page_mb"] < result["input_mb"]
    assert "rendered in" in done.stdout
