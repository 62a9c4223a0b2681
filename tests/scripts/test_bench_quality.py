"""scripts/bench_quality.py: argument checks, the summary over seeds, and the app side end to end on a tiny config
(the PyTorch side needs torch, the bench extra: it runs in the benchmark's environment only)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import REPO, run_script

sys.path.insert(0, str(REPO / "scripts"))
import bench_quality  # noqa: E402
import torch_dcgan  # noqa: E402  (imports no torch at module level)


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


def test_summary_over_seeds() -> None:
    records = [{"impl": "app", "seed": s, "steps": 4, "train_s": t, "img_per_s": 64 * 4 / t, "process_s": t + 5,
                "points": [{"step": 2, "fid": f + 10}, {"step": 4, "fid": f}]}
               for s, (t, f) in enumerate([(1.0, 20.0), (2.0, 22.0), (3.0, 27.0)])]
    rows = {(r["impl"], r["step"]): r for r in bench_quality.summarize(records)}
    last = rows[("app", 4)]
    assert last["fid"]["mean"] == pytest.approx(23.0)
    assert last["fid"]["se"] == pytest.approx(np.std([20, 22, 27], ddof=1) / np.sqrt(3))
    assert last["train_s"]["values"] == [1.0, 2.0, 3.0]
    assert "train_s" not in rows[("app", 2)] and rows[("app", 2)]["fid"]["mean"] == pytest.approx(33.0)


def test_torch_reference_refuses_other_recipes() -> None:
    with pytest.raises(ValueError, match=r"train.ema_beta=0.99"):
        torch_dcgan.recipe_config(["train.ema_beta=0.99"])
    assert torch_dcgan.app_key("generator", "bn0.weight") == "generator.layers.bn0.gamma"
    assert torch_dcgan.app_key("discriminator", "bn1.running_var") == "discriminator.layers.bn1.moving_variance"
    assert torch_dcgan.app_key("generator", "conv3.weight") == "generator.layers.conv3.weight"


@pytest.mark.slow
def test_app_side_end_to_end(tmp_path: Path, tiny_overrides: list[str]) -> None:
    """Two tiny app runs (seeds 0 and 1) as the benchmark runs them: records with timings and load, samples that are
    scripts/generate.py's for the run's checkpoint, and --resume keeping what is done."""
    out, work = tmp_path / "bench.json", tmp_path / "work"
    argv = ["--json", str(out), "--impls", "app", "--seeds", "0,1", "--steps", "4", "--sample-every", "2",
            "--samples", "24", "--work", str(work), *tiny_overrides]
    result = run_script("scripts/bench_quality.py", *argv, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(out.read_text())
    assert [(r["impl"], r["seed"]) for r in report["records"]] == [("app", 0), ("app", 1)]
    record = report["records"][0]
    assert [p["step"] for p in record["points"]] == [2, 4]
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
    result = run_script("scripts/bench_quality.py", *argv, "--resume", timeout=300)
    assert result.returncode == 0 and "seed 0:" not in result.stdout, result.stdout + result.stderr
    assert json.loads(out.read_text())["records"] == report["records"]
