"""scripts/bench/bench_diagnostics.py: argument checks and one real (tiny) run whose numbers are consistent."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench" / "bench_diagnostics.py"
import bench_diagnostics  # noqa: E402


@pytest.mark.parametrize("argv,message", [(["--model", "dcgan48"], "dcgan48"), (["--steps", "0"], "--steps=0"),
                                          (["--interval", "-1"], "--interval=-1")])
def test_bad_arguments_are_named(argv: list[str], message: str, tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit):
        bench_diagnostics.main(["--json", str(tmp_path / "out.json"), *argv])
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out.json").exists()


@pytest.mark.slow
def test_tiny_run_reports_consistent_overhead(tmp_path: Path) -> None:
    """The CLI as a user runs it, at batch 2 (own process: MindSpore's device is chosen before any kernel runs)."""
    out = tmp_path / "bench.json"
    argv = ["--json", str(out), "--batch-size", "2", "--warmup", "1", "--steps", "1", "--interval", "10",
            "--conv-impl", "native"]
    done = subprocess.run([sys.executable, str(SCRIPT), *argv], capture_output=True, text=True, timeout=900,
                          env={**os.environ, "GLOG_v": "3"})
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["interval"] == 10 and result["layers"] == 6
    amortised = (9 * result["step_s_ordinary"] + result["step_s_check"] + result["check_host_s"]) / 10
    assert result["step_s_amortised"] == pytest.approx(amortised)
    assert result["overhead_pct_at_interval"] == pytest.approx(100 * (amortised / result["step_s_without"] - 1))
    extra = (result["step_s_check"] + result["check_host_s"] - result["step_s_ordinary"]) / 10
    assert result["overhead_pct_checks_amortised"] == pytest.approx(100 * extra / result["step_s_without"])
    assert set(result["last_record_dead_frac"]) == {"G/act0", "G/act1", "G/act2", "D/act0", "D/act1", "D/act2"}
    assert "overhead" in done.stdout
