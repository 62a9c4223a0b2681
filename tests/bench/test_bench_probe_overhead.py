"""scripts/bench/bench_probe_overhead.py: argument checks, and one tiny run whose record (scripts/bench/records.py's
shape, a row per setting) has consistent numbers."""
import pytest
import records
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
    assert records.read(out) == [result]
    rows = {r["step"]: r for r in result["rows"]}
    assert set(rows) == {"without", "ordinary", "check"} and all(r["step_s_median"] > 0 for r in rows.values())
    assert {k: r["samples"] for k, r in rows.items()} == {"without": 4, "ordinary": 2, "check": 2}
    assert rows["without"]["ratio_to_without"] is None and rows["without"]["overhead_pct"] is None
    ratio = {k: rows[k]["ratio_to_without"] for k in ("ordinary", "check")}
    assert rows["check"]["overhead_pct"] == pytest.approx(100 * (ratio["check"] - 1))
    assert result["context"]["amortised_overhead_pct"]["100"] == pytest.approx(
        100 * ((99 * ratio["ordinary"] + ratio["check"]) / 100 - 1))
    assert result["machine"]["model"] and result["context"]["rounds"] == 2 and len(result["load_avg_1min"]) == 2
