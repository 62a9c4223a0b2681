"""scripts/bench/bench_modes.py: statistics, the table beside PacGAN's row, argument errors, one real tiny run."""
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

import bench_modes  # noqa: E402
import records  # noqa: E402


def one_record(path: Path) -> dict:
    """The single record of a bench_modes --json report, checked against the docs/data record shape."""
    runs = records.check(json.loads(path.read_text()), str(path))
    assert len(runs) == 1
    return runs[0]


def test_mean_and_standard_error():
    mean, se = bench_modes.mean_se([1.0, 2.0, 3.0, 6.0])
    assert mean == 3.0 and se == pytest.approx(math.sqrt(14 / 3 / 4))
    assert math.isnan(bench_modes.mean_se([2.0])[1])


def test_table_groups_trials_and_shows_the_paper_row():
    records = [{"dataset": "ring8", "slope": s, "seed": i, "seconds": 1.0, "modes": m, "hq_fraction": hq,
                "reverse_kl": kl} for s, i, m, hq, kl in [(0.0, 0, 8, 0.9, 0.1), (0.0, 1, 6, 0.7, 0.3),
                                                          (0.2, 0, 7, 1.0, 0.2)]]
    rows = bench_modes.summarize(records)
    assert [(r["slope"], r["trials"]) for r in rows] == [(0.0, 2), (0.2, 1)]
    assert rows[0]["modes"] == 7 and rows[0]["modes_se"] == pytest.approx(1.0)
    assert rows[0]["hq_fraction"] == pytest.approx(80.0) and rows[0]["hq_fraction_se"] == pytest.approx(10.0)
    table = bench_modes.markdown_table(rows)
    assert "| ring8 | 0 |  | 2 | 7.0 ± 1.0 | 80.0 ± 10.0 | 0.20 ± 0.10 |" in table
    assert "| ring8 | 0.2 |  | 1 | 7.0 | 100.0 | 0.20 |" in table
    assert "| ring8 | PacGAN GAN (paper) | ~400000 | 10 | 6.3 | 98.2 | 0.45 |" in table


def test_table_has_one_row_per_training_length():
    records = [{"dataset": "ring8", "slope": 0.2, "seed": i, "steps": steps, "seconds": 1.0, "modes": 8,
                "hq_fraction": hq, "reverse_kl": 0.1} for steps, hq in ((2000, 0.1), (10000, 0.6)) for i in range(2)]
    rows = bench_modes.summarize(records)
    assert [(r["steps"], r["trials"], r["hq_fraction"]) for r in rows] == [(2000, 2, pytest.approx(10.0)),
                                                                          (10000, 2, pytest.approx(60.0))]
    assert "| ring8 | 0.2 | 10000 | 2 | 8.0 ± 0.0 | 60.0 ± 0.0 | 0.10 ± 0.00 |" in bench_modes.markdown_table(rows)


def test_partial_report_is_one_record_marked_incomplete(tmp_path):
    report = bench_modes.Report(["python", "bench_modes.py"], {"planned_runs": 4, "pacgan_gan": bench_modes.PACGAN_GAN})
    trials = [{"dataset": "grid25", "slope": 0.0, "seed": 0, "seconds": 2.0, "modes": 20, "hq_fraction": 0.5,
               "reverse_kl": 0.3}]
    report.write(tmp_path / "partial.json", trials)
    run = one_record(tmp_path / "partial.json")
    context = run["context"]
    assert (context["complete"], context["finished_runs"], context["planned_runs"]) == (False, 1, 4)
    assert run["rows"] == trials and run["command"] == ["python", "bench_modes.py"] and run["wall_s"] >= 0
    assert "| grid25 | 0 |  | 1 | 20.0 | 50.0 | 0.30 |" in context["table"]
    assert context["summary"][0]["modes"] == 20


def test_prelu_and_maxout_are_d_activation_rows():
    assert bench_modes.parse_slopes("0, 0.2,prelu,maxout") == [0.0, 0.2, "prelu", "maxout"]
    assert bench_modes.d_activation("prelu") == ["act.d_kind=prelu"]
    assert bench_modes.d_activation("maxout") == ["model.d_maxout=5"]
    assert bench_modes.d_activation(0.01) == ["act.negative_slope=0.01"]
    records = [{"dataset": "ring8", "slope": "prelu", "seed": i, "steps": 100, "seconds": 1.0, "modes": 8,
                "hq_fraction": 0.5, "reverse_kl": 0.1} for i in range(2)]
    assert "| ring8 | prelu | 100 | 2 | 8.0 ± 0.0 | 50.0 ± 0.0 | 0.10 ± 0.00 |" in bench_modes.markdown_table(
        bench_modes.summarize(records))


def report(path, seeds, complete=True):
    trials = [{"dataset": "ring8", "slope": 0.0, "seed": i, "steps": 100, "seconds": 1.0, "modes": 8,
               "hq_fraction": 0.1 * i, "reverse_kl": 0.1} for i in seeds]
    bench_modes.Report(["python", f"seeds {seeds}"], {"planned_runs": len(seeds) + (not complete),
                                                      "pacgan_gan": bench_modes.PACGAN_GAN}).write(path, trials)
    return path


def test_merge_combines_reports_of_other_seeds(tmp_path, capsys):
    a, b = report(tmp_path / "a.json", [0, 1]), report(tmp_path / "b.json", [2, 3])
    argv = ["--merge", str(a), str(b), "--json", str(tmp_path / "all.json")]
    assert bench_modes.main(argv) == 0
    run = one_record(tmp_path / "all.json")
    context = run["context"]
    assert (context["complete"], context["planned_runs"], context["merged_from"]) == (True, 4, [str(a), str(b)])
    assert [r["seed"] for r in run["rows"]] == [0, 1, 2, 3] and run["command"][-len(argv):] == argv
    assert [s["command"] for s in context["sources"]] == [["python", "seeds [0, 1]"], ["python", "seeds [2, 3]"]]
    assert context["summary"][0]["trials"] == 4 and context["summary"][0]["hq_fraction"] == pytest.approx(15.0)
    assert "| ring8 | 0 | 100 | 4 |" in capsys.readouterr().out


def test_merge_refuses_a_file_in_another_shape_naming_it(tmp_path):
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"complete": True, "records": []}))
    with pytest.raises(SystemExit, match="old.json"):
        bench_modes.main(["--merge", str(old), str(report(tmp_path / "a.json", [0]))])


@pytest.mark.parametrize("second, message", [([1, 2], "appear twice"), (None, "not complete")])
def test_merge_refuses_overlapping_or_unfinished_reports(tmp_path, second, message):
    a = report(tmp_path / "a.json", [0, 1])
    b = report(tmp_path / "b.json", second or [5], complete=second is not None)
    with pytest.raises(SystemExit, match=message):
        bench_modes.main(["--merge", str(a), str(b)])


@pytest.mark.parametrize("args, message", [(["--slopes", "0,1.5"], "--slopes"), (["--slopes", "elu"], "prelu"),
                                           (["--first-seed", "-1"], "--first-seed"), (["--datasets", "ring9"], "ring8"),
                                           (["--trials", "0"], "integer >= 1"),
                                           (["--batched", "--eval-at", "10000,2000"], "increasing"),
                                           (["--batched", "--eval-at", "0"], "integer >= 1"),
                                           (["--eval-at", "2000"], "--eval-at needs --batched"),
                                           (["--batched", "--steps", "100"], "--eval-at")])
def test_bad_arguments_exit_with_a_message(args, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        bench_modes.main(args)
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.slow
def test_one_tiny_trial_writes_json(tmp_path, tiny_2d_args):
    out = tmp_path / "bench.json"
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "bench" / "bench_modes.py"), "--trials", "1", "--slopes", "0.2",
         "--datasets", "ring8", "--steps", "2", *tiny_2d_args, "--json", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=600, env={**os.environ, "GLOG_v": "3"})
    assert result.returncode == 0, result.stderr[-3000:]
    run = one_record(out)
    assert (run["context"]["complete"], run["context"]["finished_runs"], run["context"]["planned_runs"]) == (True, 1, 1)
    assert [(r["dataset"], r["slope"], r["steps"]) for r in run["rows"]] == [("ring8", 0.2, 2)]
    assert set(run["rows"][0]) >= {"modes", "hq_fraction", "reverse_kl", "seconds"}
    assert run["command"][-2:] == ["--json", str(out)] and run["machine"]["cpus"] >= 1
    assert "PacGAN GAN (paper)" in result.stdout


@pytest.fixture(scope="module")
def tiny_2d_args(tiny_2d) -> list[str]:
    """conftest's TINY_2D as bench_modes.py --override arguments (the script sets the experiment from --datasets)."""
    return [arg for o in [*tiny_2d, "eval.num_samples=100"] if not o.startswith("experiment=")
            for arg in ("--override", o)]


@pytest.mark.slow
def test_batched_trials_evaluated_at_each_length(tmp_path, tiny_2d_args):
    out = tmp_path / "batched.json"
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "bench" / "bench_modes.py"), "--batched", "--trials", "2", "--slopes",
         "prelu", "--first-seed", "3", "--datasets", "ring8", "--eval-at", "2,4", *tiny_2d_args, "--override",
         "train.ema_beta=0.9", "--override", "train.lr_decay=0.5", "--json", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=600, env={**os.environ, "GLOG_v": "3"})
    assert result.returncode == 0, result.stderr[-3000:]
    run = one_record(out)
    context, rows = run["context"], run["rows"]
    assert (context["complete"], context["finished_runs"], context["batched"]) == (True, 4, True)
    assert [(r["seed"], r["steps"], r["skipped_steps"]) for r in rows] == [(3, 2, 0), (4, 2, 0), (3, 4, 0), (4, 4, 0)]
    assert "| ring8 | prelu | 4 | 2 |" in context["table"]
    # a PReLU D's learned weights per layer (3 hidden layers), moved from their initial 0.25
    layers = rows[-1]["d_prelu"]
    assert [w["layer"] for w in layers] == ["act0", "act1", "act2"]
    assert all(w["min"] <= w["mean"] <= w["max"] for w in layers) and layers[0]["mean"] != 0.25
    # with train.ema_beta the table is the EMA generator's, and G's own metrics are kept beside it
    assert all({"g_modes", "g_hq_fraction", "g_reverse_kl"} <= set(r) for r in rows)


@pytest.mark.slow
def test_step_cost_benchmark_times_both_sides(tmp_path, tiny_2d_args):
    out = tmp_path / "steps.json"

    def bench(*extra: str) -> None:
        result = subprocess.run(
            [sys.executable, str(REPO / "scripts" / "bench" / "bench_toy2d_step.py"), "--trials", "2", "--steps", "2",
             "--rounds", "1", *tiny_2d_args, "--json", str(out), *extra],
            cwd=REPO, capture_output=True, text=True, timeout=600, env={**os.environ, "GLOG_v": "3"})
        assert result.returncode == 0, result.stderr[-3000:]

    bench("--label", "a")
    run = one_record(out)
    assert run["label"] == "a"
    assert [b["side"] for b in run["rows"]] == ["separate", "batched"]
    best = run["context"]["best"]
    assert best["batched"]["cpu_ms_per_trial_step"] > 0 and best["speedup_wall"] > 0
    assert (run["context"]["trials"], run["context"]["steps_per_block"]) == (2, 2) and run["cpu_s"] > 0
    bench("--label", "b", "--append")  # variants measured one after another land in one file, as the table reads it
    assert [r["label"] for r in records.read(out)] == ["a", "b"]
