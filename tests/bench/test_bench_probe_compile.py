"""scripts/bench/bench_probe_compile.py: argument checks, and the record it writes (scripts/bench/records.py's shape,
a row per model and round) around stand-in rounds; a real round compiles for minutes and is not run here."""
import bench_probe_compile
import pytest
import records


def test_bad_rounds_are_named(tmp_path, capsys):
    with pytest.raises(SystemExit):
        bench_probe_compile.main(["--json", str(tmp_path / "out.json"), "--rounds", "0"])
    assert "--rounds=0" in capsys.readouterr().err and not (tmp_path / "out.json").exists()


def test_the_record_has_a_row_per_model_and_round(tmp_path, monkeypatch, capsys):
    calls = []

    def one_round(case, jit_level):
        calls.append((case, jit_level))
        return {"plain_compile_s": 1.0 * len(calls), "probed_compile_s": 3.0 * len(calls), "probed_layers": 4}

    monkeypatch.setattr(bench_probe_compile, "one_round", one_round)
    out = tmp_path / "probe.json"
    result = bench_probe_compile.main(["--json", str(out), "--rounds", "2", "--jit-level", "O1"])
    assert records.read(out) == [result]
    assert [(r["model"], r["round"]) for r in result["rows"]] == [
        (m, i) for m in bench_probe_compile.CASES for i in (1, 2)]
    assert [c for c, _ in calls] == [case for case in bench_probe_compile.CASES.values() for _ in (1, 2)]
    assert result["context"]["jit_level"] == "O1" and result["context"]["rounds"] == 2
    assert result["machine"]["cpus"] and "probed twin compile 4.5 s, plain twin 1.5 s" in capsys.readouterr().out
