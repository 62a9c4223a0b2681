"""scripts/compare_runs.py: recipes grouped over seeds from the files runs write (TensorBoard img/s included)."""
import json
from pathlib import Path

import pytest
from tensorboardX import SummaryWriter

from gan.run.files import append_jsonl

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "compare_runs.py"
from scripts import compare_runs  # noqa: E402

group_rows, main, run_row = compare_runs.group_rows, compare_runs.main, compare_runs.run_row


def fake_run(root: Path, name: str, overrides: list[str], metrics: dict, speeds: list[float],
             slopes: dict | None = None, loads: list[float] | None = None) -> Path:
    """A run directory as train.py leaves it (overrides, metrics.json, TensorBoard img/s, diagnostics)."""
    run = root / name
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "overrides.yaml").write_text("".join(f"- {o}\n" for o in overrides))
    append_jsonl(run / "losses.jsonl", {"step": 10 * len(speeds), "loss_d": 1.0, "loss_g": 1.0, "d_x": 0.5,
                                        "d_g_z": 0.5})
    if metrics is not None:
        append_jsonl(run / "metrics.jsonl", {"step": 5, "class_coverage": 0, "class_kl": 9.0,
                                             "mean_confidence": 0.1, "frechet_distance": 999.0})
        append_jsonl(run / "metrics.jsonl", {"step": 10 * len(speeds), **metrics})
    writer = SummaryWriter(logdir=str(run / "tensorboard"))
    for step, speed in enumerate(speeds, 1):
        writer.add_scalar("perf/img_per_s", speed, step * 10)
        writer.add_scalar("loss/d", 1.0, step * 10)
    writer.close()
    append_jsonl(run / "diagnostics.jsonl", {"step": 100, "layers": {}})
    if slopes:
        append_jsonl(run / "diagnostics.jsonl", {"step": 200, "layers": {}, "slopes": slopes})
    if loads:
        (run / "loadavg.log").write_text("".join(f"{1000 + i} {v} 1.0 1.0 3/200 42\n" for i, v in enumerate(loads)))
    return run


def metrics(coverage, fd):
    return {"class_coverage": coverage, "class_kl": 0.1, "mean_confidence": 0.8, "frechet_distance": fd}


def test_run_row_reads_recipe_metrics_speed_load_and_d_slopes(tmp_path):
    run = fake_run(tmp_path, "p", ["act.d_kind=prelu", "seed=1", "runtime.threads=1"], metrics(10, 150.0),
                   speeds=[5.0, 100.0, 300.0, 200.0], loads=[2.0, 4.0],
                   slopes={"D/act0": [0.1, 0.3], "D/act1": [0.2], "G/act0": [9.0]})
    row = run_row(run)
    assert row["recipe"] == "act.d_kind=prelu" and row["seed"] == 1 and row["class_coverage"] == 10
    assert row["steps"] == row["metrics_step"] == 40 and row["frechet_distance"] == 150.0  # the last evaluation
    assert row["img_per_s"] == 200.0  # median without the first log step (the compile)
    assert row["load1"] == 3.0
    assert row["d_slopes"] == {"D/act0": {"mean": pytest.approx(0.2), "min": 0.1, "max": 0.3},
                               "D/act1": {"mean": 0.2, "min": 0.2, "max": 0.2}}


def test_groups_by_recipe_over_seeds_and_writes_json_and_markdown(tmp_path, capsys):
    runs = [fake_run(tmp_path, "d0", ["seed=0"], metrics(10, 150.0), [1.0, 400.0]),
            fake_run(tmp_path, "s0", ["experiment=sngan_mnist", "seed=0"], metrics(9, 200.0), [1.0, 300.0]),
            fake_run(tmp_path, "d1", ["seed=1"], metrics(8, 170.0), [1.0, 500.0])]
    groups = group_rows([run_row(r) for r in runs])
    assert [g["recipe"] for g in groups] == ["default", "experiment=sngan_mnist"]
    assert groups[0]["seeds"] == [0, 1]
    assert groups[0]["frechet_distance"] == {"mean": 160.0, "min": 150.0, "max": 170.0}
    assert groups[0]["load1"] is None
    out = tmp_path / "out.json"
    assert main([*map(str, runs), "--json", str(out), "--markdown", str(tmp_path / "t.md")]) == 0
    table = capsys.readouterr().out
    assert "| `default` | 0,1 | 20 | 20 | 9.0 (8.0-10.0) |" in table
    assert "160.0 (150.0-170.0) | 450 (400-500) |" in table
    assert (tmp_path / "t.md").read_text() == table
    saved = json.loads(out.read_text())
    assert len(saved["runs"]) == 3 and saved["recipes"][1]["img_per_s"]["mean"] == 300.0


def test_a_run_stopped_before_its_first_evaluation_keeps_steps_and_speed(tmp_path):
    row = run_row(fake_run(tmp_path, "w", ["experiment=wgan_gp_mnist", "seed=0"], None, [1.0, 8.0, 7.0]))
    assert row["steps"] == 30 and row["metrics_step"] is None and "class_coverage" not in row
    assert row["img_per_s"] == 7.5
    assert group_rows([row])[0]["class_coverage"] is None


def test_a_directory_without_a_run_is_named(tmp_path):
    (tmp_path / "r").mkdir()
    with pytest.raises(SystemExit):
        main([str(tmp_path / "r")])
    with pytest.raises(ValueError, match="is not a Hydra training run"):
        run_row(tmp_path / "r")
