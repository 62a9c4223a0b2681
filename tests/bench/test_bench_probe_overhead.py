"""scripts/bench/bench_probe_overhead.py: argument checks, and one tiny run whose numbers are consistent."""
import json

import pytest
from bench_probe_overhead import main


@pytest.mark.parametrize("argv, message", [(["--rounds", "0"], "--rounds=0"), (["--checks", "-1"], "--checks=-1")])
def test_bad_arguments_are_named(tmp_path, capsys, argv, message):
    with pytest.raises(SystemExit):
        main(["--json", str(tmp_path / "out.json"), *argv])
    assert message in capsys.readouterr().err and not (tmp_path / "out.json").exists()


@pytest.mark.slow
def test_tiny_run_reports_consistent_numbers(tmp_path):
    out = tmp_path / "bench.json"
    result = main(["--json", str(out), "--rounds", "2", "--steps", "1", "--checks", "1", "--warmup", "1"])
    assert json.loads(out.read_text()) == result
    step, ratio = result["step_s_median"], result["ratio_to_without"]
    assert set(step) == {"without", "ordinary", "check"} and all(v > 0 for v in step.values())
    assert result["samples"] == {"without": 4, "ordinary": 2, "check": 2} and set(ratio) == {"ordinary", "check"}
    assert result["amortised_overhead_pct"]["100"] == pytest.approx(
        100 * ((99 * ratio["ordinary"] + ratio["check"]) / 100 - 1))
    assert len(result["load_average_before"]) == 3
