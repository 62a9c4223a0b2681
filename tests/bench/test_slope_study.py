"""The slope study: its experiment config, the collector scripts/bench/slope_study.py on a fake multirun folder (its
statistics against an independent numpy/scipy computation, its definitions, untrusted values) and the wall time a
run records across resumes (gan.training.outputs, status.json's elapsed_s)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import records  # noqa: E402
import slope_study  # noqa: E402
import yaml
from hydra import compose, initialize_config_dir
from scipy import stats

from gan.config.schema import CONFIG_DIR
from gan.models.checkpoint import CheckpointError, checkpoint_path, load_checkpoint, save_checkpoint
from gan.run.directory import run_state

STEPS = 90
CURVE_STEPS = (30, 60, 90)


def test_the_experiment_sets_the_study_and_names_each_job_by_its_overrides(config):
    conf = config("experiment=slope_study")
    assert (conf.data.name, conf.model.name, conf.model.image_size) == ("fashion_mnist", "dcgan", 32)
    assert (conf.act.d_kind, conf.act.g_negative_slope, conf.model.g_norm) == ("leaky_relu", 0.2, "batch")
    assert (conf.train.steps, conf.train.resume, conf.eval.fid, conf.eval.fid_samples) == (10000, "auto", True, 2000)
    assert conf.train.steps // conf.eval.fid_every >= 4 and conf.diagnostics.enabled
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        hydra = compose(config_name="config", overrides=["experiment=slope_study"], return_hydra_config=True).hydra
    assert hydra.sweep.dir == "multirun/slope_study" and hydra.mode.name == "MULTIRUN"
    assert (Path(CONFIG_DIR) / "experiment/slope_study.yaml").read_text().count("${hydra.job.override_dirname}") == 1
    assert set(hydra.job.config.override_dirname.exclude_keys) >= {"experiment", "train.resume"}
    grid = {k: str(v).split(",") for k, v in hydra.sweeper.params.items()}
    assert [float(s) for s in grid["act.negative_slope"]] == [0.0, 0.01, 0.2]
    assert grid["model.d_norm"] == ["batch", "none"] and grid["seed"] == ["0", "1", "2"]


# A fake study: two D variants x two activations x three seeds, final FIDs chosen by hand.
FIDS = {("batch", 0.0): [50.0, 54.0, 61.0], ("batch", 0.2): [45.0, 47.0, 46.0],
        ("none", 0.0): [70.0, 90.0, 80.0], ("none", 0.2): [60.0, 58.0, 66.0]}


def _write_jsonl(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def make_job(root: Path, slope: float, d_norm: str, seed: int, fid: float, *, steps: int = STEPS,
             state: str = "finished", dead=(0, 1), dormant=(1, 2), gaps=(), elapsed: object = 12.5,
             lr: object = 0.0002) -> Path:
    """A job folder as `python train.py -m experiment=slope_study` leaves it (the files the collector reads)."""
    overrides = [f"act.negative_slope={slope}", f"model.d_norm={d_norm}", f"seed={seed}"]
    job = root / ",".join(overrides)
    (job / ".hydra").mkdir(parents=True)
    (job / ".hydra/overrides.yaml").write_text(yaml.safe_dump(["experiment=slope_study", *overrides]))
    config = {"seed": seed, "data": {"name": "fashion_mnist"}, "model": {"name": "dcgan", "image_size": 32,
                                                                         "d_norm": d_norm},
              "act": {"d_kind": "leaky_relu", "negative_slope": slope, "d_layers": None},
              "train": {"steps": steps, "lr": lr},
              "eval": {"fid_samples": 2000, "fid_reference": 10000, "fid_convention": "stylegan"}}
    (job / ".hydra/config.yaml").write_text(yaml.safe_dump(config))
    curve = [fid + 30.0, fid + 10.0, fid]  # falling: not regressed
    _write_jsonl(job / "metrics.jsonl", [{"step": steps * (i + 1) // 3, "fid": f, "kid": f / 1000, "kid_std": 0.001,
                                          "precision": 0.5, "recall": 0.4} for i, f in enumerate(curve)])
    layer = {"dead_frac": len(dead) / 4, "dormant_frac": len(dormant) / 4, "grad_dead_frac": 0.0,
             "persistent_frac": 0.0, "channels": 4, "dead": list(dead), "dormant": list(dormant)}
    quiet = {**layer, "channels": 8, "dead_frac": 0.0, "dormant_frac": 0.0, "dead": [], "dormant": []}
    _write_jsonl(job / "diagnostics.jsonl", [{"step": s, "layers": {"G/act0": quiet, "D/act0": quiet,
                                                                   "D/act1": layer}} for s in CURVE_STEPS])
    losses = [{"step": 10 * (i + 1), "loss_d": 1.0, "loss_g": 1.0, "d_x": 0.5 + g / 2, "d_g_z": 0.5 - g / 2}
              for i, g in enumerate(gaps or [0.2] * 9)]
    _write_jsonl(job / "losses.jsonl", losses)
    (job / "status.json").write_text(json.dumps({"state": state, "step": steps, "host": "h", "pid": 1,
                                                 "elapsed_s": elapsed}))
    return job


@pytest.fixture
def study(tmp_path) -> Path:
    root = tmp_path / "study"
    for (d_norm, slope), fids in FIDS.items():
        for seed, fid in enumerate(fids):
            make_job(root, slope, d_norm, seed, fid, dead=(0, 1, 2) if slope == 0 else (0,),
                     dormant=(2, 3) if slope == 0 else ())
    make_job(root, 0.01, "batch", 0, 99.0, state="running")  # killed: status says running, nobody holds the lock
    (root / "multirun.yaml").write_text(yaml.safe_dump(
        {"hydra": {"overrides": {"hydra": ["hydra.sweep.dir=/x/study", "hydra.mode=MULTIRUN"],
                                 "task": ["experiment=slope_study", "seed=0,1,2"]}}}))
    return root


def test_the_collector_writes_a_record_per_run_and_the_statistics_of_an_independent_computation(study, tmp_path,
                                                                                                 capsys):
    out = tmp_path / "study.json"
    assert slope_study.main([str(study), "--json", str(out)]) == 0
    (record,) = records.read(out)  # the one record shape of docs/data: a row per run, the statistics in context
    report, runs = record["context"], record["rows"]
    assert record["label"] == "slope study" and record["command"][1:3] == ["scripts/bench/slope_study.py", str(study)]
    assert len(runs) == 13 and sum(r["finished"] for r in runs) == 12
    killed = next(r for r in runs if not r["finished"])
    assert killed["state"] == "died" and killed["fid"] is None and killed["slope"] == 0.01
    one = next(r for r in runs if r["slope"] == 0.0 and r["d_norm"] == "none" and r["seed"] == 1)
    assert (one["activation"], one["lr"], one["steps"], one["target_steps"], one["fid"]) == ("relu", 0.0002, 90, 90,
                                                                                              90.0)
    assert [p["step"] for p in one["fid_curve"]] == list(CURVE_STEPS) and one["wall_s"] == 12.5
    assert one["command"] == ("python train.py -m hydra.sweep.dir=/x/study experiment=slope_study "
                              "act.negative_slope=0.0 model.d_norm=none seed=1")
    assert report["study_command"].startswith("python train.py -m hydra.sweep.dir=/x/study hydra.mode=")
    assert report["definitions"] == slope_study.DEFINITIONS
    d1 = one["d_layers_end"]["D/act1"]
    assert (d1["dead_frac"], d1["dormant_frac"], d1["dead_or_dormant"]) == (0.75, 0.5, 1.0)  # {0,1,2} | {2,3}
    assert one["d_layers_end"]["D"]["dead_or_dormant"] == pytest.approx(4 / 12)  # D/act0 (8 channels) has none
    assert "G/act0" not in one["d_layers_end"]

    cells = {(c["variant"], c["activation"]): c for c in report["cells"]}
    assert set(cells) == {(f"d_norm={n}, lr=0.0002", a) for n in ("batch", "none") for a in ("relu", "leaky_relu 0.2")}
    for (d_norm, slope), fids in FIDS.items():
        cell = cells[(f"d_norm={d_norm}, lr=0.0002", "relu" if slope == 0 else "leaky_relu 0.2")]
        x = np.array(fids)
        assert cell["fid"]["mean"] == pytest.approx(x.mean())
        assert cell["fid"]["sd"] == pytest.approx(x.std(ddof=1))
        assert cell["fid"]["se"] == pytest.approx(x.std(ddof=1) / np.sqrt(3))
        assert cell["seeds"] == [0, 1, 2] and cell["regressed"] == 0 and cell["unstable"] == 0
        if slope == 0:
            assert cell["vs_relu"] is None
            continue
        relu = np.array(FIDS[(d_norm, 0.0)])
        se = np.hypot(x.std(ddof=1) / np.sqrt(3), relu.std(ddof=1) / np.sqrt(3))
        versus = cell["vs_relu"]
        assert versus["fid_diff"] == pytest.approx(x.mean() - relu.mean())
        assert versus["in_se"] == pytest.approx((x.mean() - relu.mean()) / se)
        ratio = x.var(ddof=1) / relu.var(ddof=1)
        expected = [1 - np.sqrt(ratio / stats.f.ppf(q, 2, 2)) for q in (0.025, 0.975)]
        assert versus["spread"]["reduction"] == pytest.approx(1 - np.sqrt(ratio))
        assert versus["spread"]["ci95"] == pytest.approx(expected, rel=1e-4)
    finished = [r for r in runs if r["finished"]]
    for variant_name, death in report["death_vs_fid"].items():
        chosen = [r for r in finished if variant_name in ("all", slope_study.variant(r))]
        expected = np.corrcoef([r["d_layers_end"]["D"]["dead_or_dormant"] for r in chosen],
                               [r["fid"] for r in chosen])[0, 1]
        assert death["n"] == len(chosen) and death["pearson_r"] == pytest.approx(expected)

    printed = capsys.readouterr().out
    for text in ("| d_norm=batch, lr=0.0002 | relu | 3 | 55.0 ± 3.2 |", "| d_norm=none, lr=0.0002 | leaky_relu 0.2 |",
                 "FID at 30", "D dead or dormant %", "Pearson r", "SD reduction vs ReLU (95% CI)",
                 "Not in the tables (not finished): act.negative_slope=0.01,model.d_norm=batch,seed=0: died"):
        assert text in printed, text


def test_a_higher_learning_rate_is_its_own_d_variant(study, tmp_path):
    """`model.d_norm=none train.lr=0.001` lands beside the grid: its runs form their own cells and curve groups
    (every run carries its variant), never pooled with the default rate's."""
    make_job(study, 0.0, "none", 5, 100.0, lr=0.001)
    out = tmp_path / "study.json"
    assert slope_study.main([str(study), "--json", str(out)]) == 0
    (record,) = records.read(out)
    fast = [r for r in record["rows"] if r["lr"] == 0.001]
    assert [r["variant"] for r in fast] == ["d_norm=none, lr=0.001"]
    cells = {(c["variant"], c["activation"]): c["fid"]["n"] for c in record["context"]["cells"]}
    assert cells[("d_norm=none, lr=0.001", "relu")] == 1 and cells[("d_norm=none, lr=0.0002", "relu")] == 3
    assert record["context"]["death_vs_fid"]["d_norm=none, lr=0.001"]["n"] == 1


def test_runs_of_an_earlier_collection_join_a_new_folder_and_the_folder_wins(study, tmp_path):
    """`--with FILE`: an extension run in a new folder is collected with the study's earlier data file (its folder
    gone); a job in both comes from the folder."""
    first = tmp_path / "first.json"
    assert slope_study.main([str(study), "--json", str(first)]) == 0
    extension = tmp_path / "extension"
    make_job(extension, 0.0, "none", 5, 33.0, lr=0.001)  # (make_job leaves train.lr out of the job's name)
    make_job(extension, 0.0, "batch", 0, 20.0)  # repeats a job of the earlier file
    out = tmp_path / "both.json"
    assert slope_study.main([str(extension), "--with", str(first), "--json", str(out)]) == 0
    (record,) = records.read(out)
    rows = record["rows"]
    assert len(rows) == 13 and all(r["finished"] for r in rows)  # 12 earlier (one replaced) + 1; the killed one stays
    jobs = [r["job"] for r in rows]
    assert len(set(jobs)) == 13 and "act.negative_slope=0.0,model.d_norm=batch,seed=0" in jobs
    fids = {(r["d_norm"], r["lr"], r["slope"], r["seed"]): r["fid"] for r in rows}
    assert fids[("batch", 0.0002, 0.0, 0)] == 20.0 and fids[("none", 0.001, 0.0, 5)] == 33.0
    assert fids[("none", 0.0002, 0.0, 1)] == FIDS[("none", 0.0)][1]
    cells = {(c["variant"], c["activation"]): c["fid"] for c in record["context"]["cells"]}
    assert cells[("d_norm=batch, lr=0.0002", "relu")]["values"] == [20.0, *FIDS[("batch", 0.0)][1:]]
    assert cells[("d_norm=none, lr=0.001", "relu")]["n"] == 1


@pytest.mark.parametrize("field,value,message", [
    ("fid", "low", "fid is 'low', not a finite number"),
    ("seed", 1.5, "seed is 1.5"),
    ("d_layers_end", {"D": {"dead_frac": 2.0}}, "d_layers_end 'D' dead_frac is 2.0, not a share in [0, 1]"),
    ("fid_curve", [{"step": "late", "fid": 1.0}], "a fid_curve point is"),
    ("target_steps", 60, "differ in train.steps (60, 90)"),
])
def test_an_earlier_collection_out_of_shape_is_refused_naming_the_run_and_field(study, tmp_path, capsys, field,
                                                                                 value, message):
    first = tmp_path / "first.json"
    assert slope_study.main([str(study), "--json", str(first)]) == 0
    data = json.loads(first.read_text())
    data["runs"][0]["rows"][4][field] = value
    first.write_text(json.dumps(data))
    extension = tmp_path / "extension"
    make_job(extension, 0.0, "none", 5, 33.0, lr=0.001)
    with pytest.raises(SystemExit) as info:
        slope_study.main([str(extension), "--with", str(first)])
    err = capsys.readouterr().err
    assert info.value.code == 2 and message in err and (message.startswith("differ") or "run 4 (" in err)


def test_f_quantiles_match_scipy_and_the_closed_form_of_two_degrees_of_freedom():
    for p in (0.025, 0.5, 0.975):
        assert slope_study.f_quantile(p, 2, 2) == pytest.approx(p / (1 - p), rel=1e-5)  # F(2,2): cdf x / (1 + x)
    for d1, d2 in ((1, 1), (1, 4), (2, 5), (4, 2), (9, 9)):
        for p in (0.025, 0.975):
            assert slope_study.f_quantile(p, d1, d2) == pytest.approx(stats.f.ppf(p, d1, d2), rel=1e-4)


def test_stability_definitions_regressed_and_collapse_events():
    assert slope_study.regressed([{"fid": 60.0}, {"fid": 40.0}, {"fid": 51.0}]) is True  # > 1.25 x 40, not back
    assert slope_study.regressed([{"fid": 60.0}, {"fid": 40.0}, {"fid": 49.0}]) is False
    assert slope_study.regressed([{"fid": 60.0}]) is None
    gaps = [0.95] * 5 + [0.1] + [0.95] * 4 + [0.1] + [0.92] * 6  # a stretch of 5, one of 4 (too short), one of 6
    losses = [{"d_x": 0.5 + g / 2, "d_g_z": 0.5 - g / 2} for g in gaps]
    assert slope_study.collapse_events(losses) == (2, 11 / len(gaps))
    assert slope_study.collapse_events([]) == (0, 0.0)


def test_a_regressed_or_collapsed_run_counts_as_unstable(tmp_path):
    root = tmp_path / "study"
    for seed in range(3):
        job = make_job(root, 0.0, "batch", seed, 50.0, gaps=[0.95] * 6 if seed == 0 else ())
        if seed == 1:  # the curve falls to 40 at step 60 and rises to 55
            _write_jsonl(job / "metrics.jsonl", [{"step": s, "fid": f} for s, f in zip(CURVE_STEPS, (70, 40, 55))])
    records = slope_study.collect(root)
    cell = slope_study.analyse(records)["cells"][0]
    assert (cell["regressed"], cell["collapse_events"], cell["unstable"]) == (1, 1, 2)
    assert cell["kid"] is not None and cell["fid"]["n"] == 3


@pytest.mark.parametrize("change,message", [
    (dict(steps=60), "differ in train.steps (60, 90)"),
    (dict(dead=(7,)), "'dead' must list channel indices below 4"),
    (dict(elapsed="soon"), "elapsed_s is 'soon', not a finite number"),
    (dict(lr="fast"), "seed=0: config key train.lr is 'fast', not a finite number"),
])
def test_mixed_studies_and_bad_values_are_refused_naming_them(tmp_path, capsys, change, message):
    root = tmp_path / "study"
    make_job(root, 0.0, "batch", 0, 50.0)
    make_job(root, 0.2, "batch", 0, 45.0, **change)
    with pytest.raises(SystemExit) as info:
        slope_study.main([str(root)])
    assert info.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.slow
def test_a_run_records_its_wall_time_across_resumes_once_per_kept_step(tmp_path, tiny_run):
    """status.json's elapsed_s (the collector's wall_s) sums the sessions up to the checkpoint each resumed from; a
    finished run started again adds nothing; a checkpoint with a bad value is refused naming it."""
    run_dir = tmp_path / "run"
    tiny_run(run_dir, "train.steps=4", "train.ckpt_every=2")
    first = run_state(run_dir)["elapsed_s"]
    _, meta4 = load_checkpoint(checkpoint_path(run_dir, 4))
    _, meta2 = load_checkpoint(checkpoint_path(run_dir, 2))
    assert 0 < meta2["elapsed_s"] <= meta4["elapsed_s"] and first >= round(meta4["elapsed_s"], 1)
    tiny_run(run_dir, "train.steps=4", "train.resume=auto")  # nothing to train
    assert run_state(run_dir)["elapsed_s"] == round(meta4["elapsed_s"], 1)
    tiny_run(run_dir, "train.steps=6", "train.ckpt_every=2", "train.resume=auto")
    _, meta6 = load_checkpoint(checkpoint_path(run_dir, 6))
    assert meta6["elapsed_s"] > meta4["elapsed_s"] and run_state(run_dir)["elapsed_s"] >= round(meta6["elapsed_s"], 1)

    arrays, meta = load_checkpoint(checkpoint_path(run_dir, 6))
    save_checkpoint(checkpoint_path(run_dir, 6), arrays, {**meta, "elapsed_s": -1.0})
    with pytest.raises(CheckpointError, match=r"step_00000006.ckpt: meta 'elapsed_s' must be a finite number"):
        tiny_run(run_dir, "train.steps=8", "train.resume=auto")


@pytest.mark.slow
def test_the_same_study_command_continues_a_killed_job_and_passes_over_a_finished_one(tmp_path):
    """Two tiny jobs of experiment=slope_study (a few of the TINY overrides: every override names the folder, whose
    name the file system caps at 255 bytes); job 2 is then made to look killed after its step-2 checkpoint (its
    step-4 checkpoint gone, status "running" without a holder): the same command again resumes it at step 2,
    finds job 1 at its last step, and each job's logs hold every step once."""
    from tests.helpers import run_script

    sweep = tmp_path / "study"
    command = ["-m", "experiment=slope_study", "data=shapes", "data.num_images=64", "model.ngf=8", "model.ndf=8",
               "model.nz=16", "train.batch_size=8", "eval.fid=false", "train.steps=4", "train.ckpt_every=2",
               "train.log_every=1", "act.negative_slope=0,0.2", "model.d_norm=batch", "seed=0",
               f"hydra.sweep.dir={sweep}"]
    first = run_script("train.py", *command)
    assert first.returncode == 0, first.stderr[-3000:]
    jobs = sorted(p for p in sweep.iterdir() if p.is_dir())
    assert [j.name.split(",")[0] for j in jobs] == ["act.negative_slope=0", "act.negative_slope=0.2"]
    assert all("experiment" not in j.name and "train.resume" not in j.name for j in jobs)
    killed = jobs[1]
    checkpoint_path(killed, 4).unlink()
    (killed / "status.json").write_text(json.dumps({"state": "running", "pid": 1, "host": "h", "started": "-"}))
    second = run_script("train.py", *command)
    assert second.returncode == 0, second.stderr[-3000:]
    assert f"resumed from {checkpoint_path(jobs[0], 4)} at step 4: the run is already at its last step" in second.stdout
    assert f"resumed from {checkpoint_path(killed, 2)} at step 2\n" in second.stdout
    for job in jobs:
        assert run_state(job)["state"] == "finished"
        steps = [json.loads(line)["step"] for line in (job / "losses.jsonl").read_text().splitlines()]
        assert steps == [1, 2, 3, 4]
    records = slope_study.collect(sweep)
    assert [(r["activation"], r["steps"], r["state"]) for r in records] == [("relu", 4, "finished"),
                                                                           ("leaky_relu 0.2", 4, "finished")]
