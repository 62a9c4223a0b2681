"""scripts/bench/bench_quality.py: argument checks, the summary over seeds, its report as a record of
scripts/bench/records.py (a row per run), and the app side end to end on a tiny config (the PyTorch side needs torch,
the bench extra: it runs in the benchmark's environment only); torch_dcgan.py check's record."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import bench_quality  # noqa: E402
import numpy as np
import pytest
import records
import torch_dcgan  # noqa: E402  (imports no torch at module level)

from tests.helpers import run_script


@pytest.mark.parametrize("argv,message", [(["--impls", "jax"], "jax"), (["--steps", "0"], "--steps=0"),
                                          (["--metrics", "inception"], "inception"),
                                          (["--sample-every", "-1"], "--sample-every=-1"),
                                          (["--samples", "10", "--score-samples", "20"], "--score-samples=20"),
                                          (["--torch-env", "OMP"], "KEY=VALUE"),
                                          (["--rescore"], "does not exist"),
                                          (["train.loss=hinge"], "train.loss='hinge'"),
                                          (["--metrics", "classifier", "data=shapes"], "data=shapes")])
def test_bad_arguments_are_named(argv: list[str], message: str, tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit):
        bench_quality.main(["--json", str(tmp_path / "out.json"), *argv])
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out.json").exists()


def test_sample_steps_and_app_overrides() -> None:
    assert bench_quality.sample_steps(10, 0) == [10]
    assert bench_quality.sample_steps(10, 4) == [4, 8, 10]
    overrides = bench_quality.app_overrides(3, 10, 4, ["data=mnist"])
    assert overrides[:4] == ["seed=3", "train.steps=10", "train.ckpt_every=4", "train.keep_last=3"]
    assert overrides[-1] == "data=mnist"  # the user's overrides come last


def test_scores_and_summary_over_seeds(tmp_path: Path) -> None:
    """Every sample step is scored on the curve's count, the last step also on the final count, from one file."""
    calls: list[tuple[int, tuple]] = []

    def score(samples, counts):
        calls.append((len(samples), tuple(counts)))
        return {n: {"mean_pixel": float(samples[:n].mean())} for n in counts}
    runs = []
    for seed, t in enumerate([1.0, 2.0, 3.0]):
        files = {}
        for step in (2, 4):
            files[str(step)] = str(tmp_path / f"s{seed}_{step}.npz")
            np.savez(files[str(step)], samples=np.full((10, 1, 2, 2), seed + step, np.float32))
        runs.append({"impl": "app", "seed": seed, "steps": 4, "train_s": t, "img_per_s": 64 * 4 / t,
                        "process_s": t + 5, "samples": files})
        bench_quality.score_record(runs[-1], score, final_samples=8, curve_samples=3)
    assert calls[:2] == [(3, (3,)), (8, (3, 8))]
    assert bench_quality.final_point(runs[0], 8) == {"step": 4, "n_samples": 8, "mean_pixel": 4.0}
    rows = {(r["impl"], r["step"], r["n_samples"]): r for r in bench_quality.summarize(runs)}
    assert set(rows) == {("app", 2, 3), ("app", 4, 3), ("app", 4, 8)}
    last = rows[("app", 4, 8)]
    assert last["mean_pixel"]["mean"] == pytest.approx(5.0) and last["mean_pixel"]["values"] == [4.0, 5.0, 6.0]
    assert last["mean_pixel"]["se"] == pytest.approx(np.std([4, 5, 6], ddof=1) / np.sqrt(3))
    assert last["train_s"]["values"] == [1.0, 2.0, 3.0] and "train_s" not in rows[("app", 2, 3)]
    bench_quality.score_record(runs[0], score, final_samples=8, curve_samples=3, curve=False)  # --curve-seeds
    assert [(p["step"], p["n_samples"]) for p in runs[0]["points"]] == [(4, 3), (4, 8)]
    with pytest.raises(ValueError, match="holds 10 samples, fewer than the 11"):
        bench_quality.load_samples(runs[0]["samples"]["4"], 11)


def test_worker_commands_name_scripts_that_exist(tmp_path: Path) -> None:
    for impl in bench_quality.IMPLS:
        command = bench_quality.worker_command(impl, "python", 0, 4, tmp_path, 10, 2, ["data=mnist"])
        assert Path(command[1]).is_file(), command
        assert command[-1] == "data=mnist"


def test_torch_reference_refuses_other_recipes() -> None:
    with pytest.raises(ValueError, match=r"train.ema_beta=0.99"):
        torch_dcgan.recipe_config(["train.ema_beta=0.99"])
    assert torch_dcgan.app_key("generator", "bn0.weight") == "generator.layers.bn0.gamma"
    assert torch_dcgan.app_key("discriminator", "bn1.running_var") == "discriminator.layers.bn1.moving_variance"
    assert torch_dcgan.app_key("generator", "conv3.weight") == "generator.layers.conv3.weight"


@pytest.mark.slow
def test_app_side_end_to_end(tmp_path: Path, tiny_overrides: list[str]) -> None:
    """Two tiny app runs (seeds 0 and 1) as the benchmark runs them: records with timings and load, samples that are
    scripts/generate.py's for the run's checkpoint, --resume keeping what is done, --rescore scoring again."""
    out, work = tmp_path / "bench.json", tmp_path / "work"
    argv = ["--json", str(out), "--impls", "app", "--seeds", "0,1", "--steps", "4", "--sample-every", "2",
            "--samples", "24", "--work", str(work), *tiny_overrides]
    result = run_script("scripts/bench/bench_quality.py", *argv, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    [run] = records.read(out)
    assert run["rows"][0]["loadavg_before"][0] == run["load_avg_1min"][0] and run["machine"]["model"]
    assert run["context"]["settings"]["steps"] == 4 and run["started"] and run["commit"] != ""
    report = bench_quality.report_of(run)
    assert [(r["impl"], r["seed"]) for r in report["records"]] == [("app", 0), ("app", 1)]
    record = report["records"][0]
    assert [(p["step"], p["n_samples"]) for p in record["points"]] == [(2, 24), (4, 24)]
    assert 0 < record["train_s"] < record["process_s"] and record["img_per_s"] > 0
    assert len(record["loadavg_before"]) == 3 and len(record["loadavg_after"]) == 3
    assert {(r["impl"], r["step"]) for r in report["summary"]} == {("app", 2), ("app", 4)}
    samples = bench_quality.load_samples(record["samples"]["4"])
    assert samples.shape == (24, 3, 32, 32) and np.abs(samples).max() <= 1.0
    # the same samples as scripts/generate.py writes from the run's last checkpoint with the run's seed
    ckpt = work / "app_seed0" / "run" / "checkpoints" / "step_00000004.ckpt"
    generated = tmp_path / "generated.npz"
    result = run_script("scripts/generate.py", str(ckpt), "--n", "24", "--npz", str(generated), "--seed", "0",
                        "--no-ema", timeout=300)
    assert result.returncode == 0, result.stderr
    np.testing.assert_array_equal(samples, bench_quality.load_samples(generated))
    assert not np.array_equal(samples, bench_quality.load_samples(report["records"][1]["samples"]["4"]))
    # --resume with the same settings runs nothing again
    result = run_script("scripts/bench/bench_quality.py", *argv, "--resume", timeout=300)
    assert result.returncode == 0 and "seed 0:" not in result.stdout, result.stdout + result.stderr
    assert records.read(out)[0]["rows"] == report["records"]
    # --rescore scores the saved samples again on other counts, training nothing
    result = run_script("scripts/bench/bench_quality.py", *argv, "--rescore", "--score-samples", "20",
                        "--curve-samples", "10", timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    rescored = bench_quality.report_of(records.read(out)[0])
    assert [(p["step"], p["n_samples"]) for p in rescored["records"][0]["points"]] == [(2, 10), (4, 10), (4, 20)]
    assert rescored["records"][0]["train_s"] == record["train_s"] and rescored["scoring"]["final_samples"] == 20
    # ... and --resume now refuses to mix those scores with runs scored the first way
    result = run_script("scripts/bench/bench_quality.py", *argv, "--resume", timeout=300)
    assert result.returncode == 1 and "--rescore changes it" in result.stderr, result.stdout + result.stderr


def test_fid_scores_every_count_from_one_feature_pass(monkeypatch, tiny_overrides: list[str]) -> None:
    """--metrics fid: the reference a run of the overrides uses (gan.training.evaluation.standard_metrics, here with a
    fake extractor), the samples featurised once, each count's numbers those of StandardMetrics on that many samples."""
    import gan.training.evaluation
    from gan.metrics.fid import StandardMetrics
    from tests.helpers import FakeExtractor

    rng = np.random.default_rng(0)
    extractor = FakeExtractor()
    metrics = StandardMetrics(rng.integers(0, 256, (40, 32, 32, 3), dtype=np.uint8), "fake reference", extractor)
    asked = []
    monkeypatch.setattr(gan.training.evaluation, "standard_metrics",
                        lambda conf, task, say: asked.append(conf) or metrics)
    score, about = bench_quality.fid_metrics(tiny_overrides)
    assert asked[0].eval.enabled and asked[0].eval.fid is True and asked[0].data.name == "shapes"
    assert about["reference"] == "fake reference" and about["n_reference"] == 40 and about["extractor"] == "fake"
    samples = rng.uniform(-1, 1, (30, 3, 32, 32)).astype(np.float32)
    before = extractor.calls
    scores = score(samples, [10, 30])
    assert extractor.calls == before + 1
    for n in (10, 30):
        expected = metrics(samples[:n])
        assert scores[n]["n_generated"] == n and scores[n] == pytest.approx(expected)


def score_args(tmp_path: Path, **changes) -> "argparse.Namespace":
    values = {"steps": 4, "samples": 10, "sample_every": 0, "overrides": [], "torch_env": [], "metrics": "fake",
              "score_samples": None, "curve_samples": None, "curve_seeds": [0, 1], "json": tmp_path / "scored.json",
              "source": tmp_path / "bench.json", "reuse": []}
    return argparse.Namespace(**{**values, **changes})


def test_rescore_keeps_runs_scored_the_same_way_and_refuses_other_settings(tmp_path: Path) -> None:
    args = score_args(tmp_path)
    runs = []
    for seed in (0, 1):
        path = tmp_path / f"s{seed}.npz"
        np.savez(path, samples=np.full((10, 1, 2, 2), seed, np.float32))
        runs.append({"impl": "app", "seed": seed, "steps": 4, "train_s": 1.0, "img_per_s": 256.0,
                        "process_s": 2.0, "samples": {"4": str(path)}})
    bench_quality.write_report(args.source, {"settings": bench_quality.training_settings(args), "records": runs})
    scored: list[float] = []

    def score(samples, counts):
        scored.append(float(samples.mean()))
        return {n: {"mean": float(samples[:n].mean())} for n in counts}
    bench_quality.score_all(args, score, {"extractor": "fake"}, ["--rescore"])
    [run] = records.read(args.json)
    report = bench_quality.report_of(run)
    assert run["context"]["scoring"]["machine"]["model"] and run["rows"] == report["records"]
    assert scored == [0.0, 1.0] and [r["points"] for r in report["records"]] == [
        [{"step": 4, "n_samples": 10, "mean": 0.0}], [{"step": 4, "n_samples": 10, "mean": 1.0}]]
    assert report["scoring"]["final_samples"] == 10 and "finished" in report["scoring"]
    # scoring again with the same settings reuses both; other counts score both again
    bench_quality.score_all(args, score, {"extractor": "fake"}, ["--rescore"])
    assert scored == [0.0, 1.0]
    five = score_args(tmp_path, score_samples=5, json=tmp_path / "five.json")
    bench_quality.score_all(five, score, {"extractor": "fake"}, ["--rescore"])
    assert scored == [0.0, 1.0, 0.0, 1.0]
    with pytest.raises(SystemExit, match="other settings"):
        bench_quality.earlier_report(score_args(tmp_path, steps=8), args.source)
    # runs scored the same way in another report (--reuse) are kept too; one scored otherwise is refused
    merged = score_args(tmp_path, json=tmp_path / "merged.json", reuse=[args.json])
    bench_quality.score_all(merged, score, {"extractor": "fake"}, ["--rescore"])
    assert scored == [0.0, 1.0, 0.0, 1.0] and records.read(merged.json)[0]["rows"] == report["records"]
    with pytest.raises(SystemExit, match="--reuse: .* was scored with"):
        bench_quality.score_all(score_args(tmp_path, json=tmp_path / "m2.json", reuse=[five.json]), score,
                                {"extractor": "fake"}, ["--rescore"])


def test_a_file_not_in_the_record_shape_is_refused_naming_it(tmp_path: Path) -> None:
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"settings": {}, "records": []}))  # the report shape before records.py
    with pytest.raises(SystemExit, match=r"old.json: expected .*bench_quality.py report"):
        bench_quality.earlier_report(score_args(tmp_path), old)


def test_torch_check_report_is_a_record_with_a_row_per_step_1_value() -> None:
    report = {"losses": {"loss_d": {"app": 1.0, "torch": 1.0, "rel": 0.0}, "d_real": {"app": 0.5, "torch": 0.6,
                                                                                     "rel": 0.2}},
              "seed": 0, "steps": [{"step": 1, "app_loss_d": 1.0}]}
    run = torch_dcgan.check_record(report, wall_s=2.0)
    assert records.check({"runs": [run]}, "check") == [run] and run["wall_s"] == 2.0
    assert run["rows"] == [{"value": "loss_d", "app": 1.0, "torch": 1.0, "rel": 0.0},
                           {"value": "d_real", "app": 0.5, "torch": 0.6, "rel": 0.2}]
    assert run["context"] == {"seed": 0, "steps": [{"step": 1, "app_loss_d": 1.0}]}
