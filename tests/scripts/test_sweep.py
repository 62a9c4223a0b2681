"""Sweeps: per-job threads (also in a real joblib sweep), the summary table, a real 2-job ring8 sweep summarised end
to end."""
import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gan.analysis.sweep import (
    find_jobs,
    group_summary,
    groups_markdown,
    optuna_best,
    spread,
    summarize,
    to_csv,
    to_markdown,
)
from gan.run.files import append_jsonl
from gan.training.runtime import available_cpus, job_threads

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("launcher, cpus, expected", [({"_target_": "basic"}, 16, None), ({"n_jobs": 2}, 16, 8),
                                                      ({"n_jobs": -1}, 16, 1), ({"n_jobs": 4}, 2, 1)])
def test_job_threads_split_the_cores(launcher, cpus, expected):
    assert job_threads(launcher, cpus) == expected


def test_job_threads_count_the_cpus_this_process_may_use():
    """A container or `taskset` may allow fewer CPUs than the machine has: a job on 1 allowed CPU gets 1 thread,
    whatever os.cpu_count() says."""
    code = ("import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); "
            "from gan.training.runtime import job_threads; print(job_threads({'n_jobs': 1}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0 and done.stdout.strip() == "1", done.stderr[-2000:]


@pytest.mark.parametrize("n_jobs", [0, -2, "2"])
def test_job_threads_rejects_bad_n_jobs(n_jobs):
    with pytest.raises(ValueError, match=f"n_jobs={n_jobs!r}"):
        job_threads({"n_jobs": n_jobs}, 4)


def fake_job(root: Path, number: int, slope: float, diagnostics: bool) -> None:
    """A job directory as a Hydra multirun leaves it."""
    job = root / str(number)
    (job / ".hydra").mkdir(parents=True)
    (job / ".hydra" / "overrides.yaml").write_text(f"- act.negative_slope={slope}\n- seed=0\n")
    (job / "metrics.json").write_text(json.dumps({"modes": 8 - number, "reverse_kl": 0.1 * number}))
    append_jsonl(job / "losses.jsonl", {"step": 10, "loss_d": 1.2, "loss_g": 0.7, "d_x": 0.5, "d_g_z": 0.4})
    if diagnostics:
        append_jsonl(job / "diagnostics.jsonl", {"step": 10, "layers": {
            "D/act0": {"channels": 4, "dead_frac": 0.25, "dormant_frac": 0.0, "grad_dead_frac": 0.5,
                       "persistent_frac": 0.0}}})


def test_summary_rows_in_job_order_with_metrics_and_diagnostics(tmp_path):
    for number in (10, 2, 0):  # numeric order, not text order
        fake_job(tmp_path, number, slope=number / 100, diagnostics=number == 2)
    assert [p.name for p in find_jobs(tmp_path)] == ["0", "2", "10"]
    rows = summarize(tmp_path)
    assert [r["act.negative_slope"] for r in rows] == ["0.0", "0.02", "0.1"]
    assert rows[1]["modes"] == 6 and rows[1]["D dead_frac"] == 0.25 and rows[1]["G dead_frac"] is None
    assert "D dead_frac" not in rows[0] and rows[0]["loss_g"] == 0.7
    assert rows[0]["status"] == ""  # a job from before status.json: not known
    table = to_markdown(rows)
    assert table.splitlines()[0].startswith("| job | status | act.negative_slope | seed | modes | reverse_kl |")
    assert len(table.splitlines()) == 2 + 3
    parsed = list(csv.DictReader(to_csv(rows).splitlines()))
    assert [r["job"] for r in parsed] == ["0", "2", "10"] and parsed[0]["D dead_frac"] == ""


def test_failed_jobs_say_why_and_stay_out_of_the_groups_and_the_run_count(tmp_path):
    from gan.analysis.dashboard import build_dashboard
    from gan.run.directory import write_status

    error = "ConfigError: act.negative_slope=2.0 must be in [0, 1] (0 = ReLU, 1 = identity)"
    (tmp_path / "0" / ".hydra").mkdir(parents=True)  # failed at start: it wrote nothing but its status
    (tmp_path / "0" / ".hydra" / "overrides.yaml").write_text("- act.negative_slope=2.0\n- seed=0\n")
    write_status(tmp_path / "0", "failed", error=error)
    fake_job(tmp_path, 1, slope=0.2, diagnostics=True)
    write_status(tmp_path / "1", "finished", step=10)
    fake_job(tmp_path, 2, slope=0.2, diagnostics=True)
    write_status(tmp_path / "2", "running")  # no process holds its lock: it was killed
    (tmp_path / "3" / ".hydra").mkdir(parents=True)  # stopped before our code ran (no status at all)
    (tmp_path / "3" / ".hydra" / "overrides.yaml").write_text("- act.negative_slope=0.3\n- seed=0\n")
    rows = summarize(tmp_path)
    assert [r["status"] for r in rows] == [f"failed: {error}", "finished", "died: it stopped without a word (killed?)",
                                           "no output: the job stopped before training (see its log)"]
    assert "| 0 | failed: ConfigError: act.negative_slope=2.0 must be in [0, 1] (0 = ReLU, 1 = identity) |" in \
        to_markdown(rows)
    summary = group_summary(tmp_path)
    assert [g["jobs"] for g in summary["groups"]] == [["1"]]  # not a "1 seed" group of empty cells
    assert [f["job"] for f in summary["failed"]] == ["0", "2", "3"]
    assert f"- job 0: failed: {error}" in groups_markdown(summary)
    page = build_dashboard(tmp_path)
    assert "2 runs in 1 group" in page  # jobs 1 and 2 have logs to draw (2 until it died)
    assert "3 jobs without a result: <b>0</b> failed: ConfigError: act.negative_slope=2.0" in page
    assert "<b>2</b> died" in page and "<b>3</b> no output" in page


def seeded_job(root: Path, number: int, slope: float, seed: int, dead: list[float]) -> None:
    """A job with one D layer of 4 channels and G layer of 2, checked at steps 10 and 20 (dead: D's dead_frac)."""
    job = root / str(number)
    (job / ".hydra").mkdir(parents=True)
    (job / ".hydra" / "overrides.yaml").write_text(f"- act.negative_slope={slope}\n- seed={seed}\n")
    (job / "metrics.json").write_text(json.dumps({"class_kl": 0.1 + seed, "class_coverage": 10}))
    for step, frac in zip((10, 20), dead):
        layer = {"dead_frac": frac, "dormant_frac": frac / 2, "grad_dead_frac": 0.0, "persistent_frac": 0.0}
        append_jsonl(job / "diagnostics.jsonl", {"step": step, "layers": {
            "G/act0": {"channels": 2, "dead_frac": 0.0, "dormant_frac": 0.0, "grad_dead_frac": None,
                       "persistent_frac": 0.0}, "D/act0": {"channels": 4, **layer}}})


def test_group_summary_gives_seed_statistics_per_layer_final_and_over_time(tmp_path):
    seeded_job(tmp_path, 0, 0.0, 0, [0.25, 0.5])
    seeded_job(tmp_path, 1, 0.0, 1, [0.0, 0.25])
    seeded_job(tmp_path, 2, 0.0, 2, [0.25, 0.75])
    seeded_job(tmp_path, 3, 0.2, 0, [0.0, 0.0])
    summary = group_summary(tmp_path)
    assert summary["varied"] == ["act.negative_slope"]
    zero, leaky = summary["groups"]
    assert zero["label"] == "act.negative_slope=0.0" and zero["seeds"] == ["0", "1", "2"] and leaky["jobs"] == ["3"]
    final = zero["final"]["D/act0"]["dead_frac"]
    assert final["mean"] == pytest.approx(0.5) and final["std"] == pytest.approx(0.25)  # 0.5, 0.25, 0.75
    assert (final["min"], final["max"], final["n"]) == (0.25, 0.75, 3)
    assert zero["final"]["D/act0"]["dormant_frac"]["mean"] == pytest.approx(0.25)
    assert zero["final"]["D"]["dead_frac"]["mean"] == pytest.approx(0.5)  # the network: only D/act0
    assert zero["final"]["G/act0"]["grad_dead_frac"] is None  # no gradient recorded
    first = zero["over_time"]["D/act0"]["dead_frac"][0]
    assert first["step"] == 10 and first["mean"] == pytest.approx(0.5 / 3) and first["max"] == 0.25
    assert zero["metrics"]["class_kl"]["mean"] == pytest.approx(1.1) and zero["metrics"]["class_coverage"]["std"] == 0
    assert leaky["final"]["D/act0"]["dead_frac"] == {"mean": 0.0, "std": 0.0, "min": 0.0, "max": 0.0, "n": 1}
    tables = groups_markdown(summary)
    assert "| dead_frac (% of channels, last check) | seeds | G/act0 | G | D/act0 | D |" in tables
    assert "| act.negative_slope=0.0 | 3 | 0.0 ± 0.0 | 0.0 ± 0.0 | 50.0 ± 25.0 | 50.0 ± 25.0 |" in tables
    assert "| act.negative_slope=0.0 | 3 | 10.000 ± 0.000 | 1.100 ± 1.000 |" in tables
    assert "| act.negative_slope=0.2 | 1 | 0.0 | 0.0 | 0.0 | 0.0 |" in tables  # one seed: no spread shown
    assert "| dead_frac (% of channels, last check) | seeds | D/act0 | D |" in groups_markdown(summary, nets=("D",))


@pytest.mark.slow
def test_summarize_sweep_cli_writes_the_groups_json_where_asked(tmp_path):
    sweep = tmp_path / "sweep"
    for number, seed in enumerate((0, 1)):
        seeded_job(sweep, number, 0.0, seed, [0.25, 0.5])
    out = tmp_path / "data" / "groups.json"
    out.parent.mkdir()
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "summarize_sweep.py"), str(sweep), "--groups-json",
                           str(out), "--net", "D"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr[-2000:]
    written = json.loads(out.read_text())
    assert written == json.loads((sweep / "groups.json").read_text())
    assert written["groups"][0]["final"]["D/act0"]["dead_frac"]["n"] == 2
    assert "| dead_frac (% of channels, last check) | seeds | D/act0 | D |" in done.stdout
    assert "G/act0" not in (sweep / "groups.md").read_text()


def test_spread_ignores_missing_values():
    assert spread([None, float("nan")]) is None
    assert spread([2.0, None, 4.0]) == {"mean": 3.0, "std": pytest.approx(2 ** 0.5), "min": 2.0, "max": 4.0, "n": 2}


def test_optuna_best_line_from_the_sweepers_results(tmp_path):
    assert optuna_best(tmp_path) is None  # not an Optuna sweep
    (tmp_path / "optimization_results.yaml").write_text(
        "name: optuna\nbest_params:\n  act.negative_slope: 0.24110535\n  train.lr: 0.000202727\nbest_value: 1.41787\n")
    assert optuna_best(tmp_path).startswith(
        "Optuna best: act.negative_slope=0.2411, train.lr=0.0002027 -> objective 1.418")
    (tmp_path / "optimization_results.yaml").write_text("name: optuna\n")
    with pytest.raises(ValueError, match="best_params"):
        optuna_best(tmp_path)


@pytest.mark.slow
def test_summary_of_a_folder_without_jobs_fails_clearly(tmp_path):
    with pytest.raises(FileNotFoundError, match="no Hydra job"):
        summarize(tmp_path)
    result = subprocess.run([sys.executable, str(REPO / "scripts" / "summarize_sweep.py"), str(tmp_path)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "no Hydra job" in result.stderr


@pytest.mark.slow
def test_two_job_ring8_sweep_end_to_end(tmp_path):
    env = {**os.environ, "GLOG_v": "3", "PYTHONPATH": str(REPO)}
    sweep = tmp_path / "sweep"
    train = subprocess.run(
        [sys.executable, str(REPO / "train.py"), "-m", "experiment=ring8", "act.negative_slope=0,0.2,2.0",
         "train.steps=3", "model.ngf=32", "model.ndf=32", "train.batch_size=32", "eval.num_samples=200",
         "diagnostics.enabled=false", f"hydra.sweep.dir={sweep}"], cwd=REPO, env=env, capture_output=True, text=True,
        timeout=600)
    assert train.returncode == 1, train.stderr[-3000:]  # job 2's slope is out of range: it fails, the others run
    summary = subprocess.run([sys.executable, str(REPO / "scripts" / "summarize_sweep.py"), str(sweep)], cwd=REPO,
                             env=env, capture_output=True, text=True, timeout=300)
    assert summary.returncode == 0, summary.stderr[-3000:]
    rows = list(csv.DictReader((sweep / "summary.csv").read_text().splitlines()))
    assert [(r["job"], r["act.negative_slope"]) for r in rows] == [("0", "0"), ("1", "0.2"), ("2", "2.0")]
    for row in rows[:2]:
        assert 0 <= int(row["modes"]) <= 8 and 0 <= float(row["hq_fraction"]) <= 1 and row["step"] == "3"
        assert float(row["reverse_kl"]) >= 0 and row["status"] == "finished"
    assert rows[2]["status"] == "failed: ConfigError: act.negative_slope=2.0 must be in [0, 1] (0 = ReLU, 1 = identity)"
    assert rows[0]["loss_g"] != rows[1]["loss_g"]  # the slope reached the networks
    assert (sweep / "summary.md").read_text().startswith(
        "| job | status | experiment | act.negative_slope | train.steps |")
    assert "- job 2: failed: ConfigError: act.negative_slope=2.0" in (sweep / "groups.md").read_text()
    page = (sweep / "dashboard.html").read_text()
    assert "act.negative_slope=0.2" in page and page.count('alt="samples of') == 2  # the scatter plots are shown
    assert "2 runs in 2 groups" in page and "<b>2</b> failed: ConfigError" in page


@pytest.mark.slow
def test_joblib_jobs_train_with_their_share_of_the_cores(tmp_path):
    """hydra/launcher=joblib with n_jobs=2: each job's MindSpore kernels get half the CPUs, also the third
    job, which runs in a worker process that already trained one (MindSpore sets the thread count once per process)."""
    from gan.models.checkpoint import latest_checkpoint, load_checkpoint  # loads MindSpore: only this test needs it

    env = {**os.environ, "GLOG_v": "3", "PYTHONPATH": str(REPO)}
    sweep = tmp_path / "sweep"
    train = subprocess.run(
        [sys.executable, str(REPO / "train.py"), "-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
         "experiment=ring8", "seed=0,1,2", "train.steps=2", "model.ngf=8", "model.ndf=8", "train.batch_size=16",
         "eval.num_samples=100", "diagnostics.enabled=false", f"hydra.sweep.dir={sweep}"], cwd=REPO, env=env,
        capture_output=True, text=True, timeout=600)
    assert train.returncode == 0, train.stderr[-3000:]
    threads = []
    for job in ("0", "1", "2"):
        _, meta = load_checkpoint(latest_checkpoint(sweep / job))
        threads.append(yaml.safe_load(meta["config"])["runtime"]["threads"])
    assert threads == [max(1, available_cpus() // 2)] * 3  # the CPUs this process may use, whatever their number


def hydra_config(*overrides: str) -> str:
    """`train.py OVERRIDES --cfg hydra` output (composition only, MindSpore is not loaded)."""
    result = subprocess.run([sys.executable, str(REPO / "train.py"), *overrides, "--cfg", "hydra"], cwd=REPO,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


@pytest.mark.slow
def test_sweep_plugins_compose():
    optuna = hydra_config("hparams_search=slope_optuna", "experiment=ring8")
    assert "OptunaSweeper" in optuna and "act.negative_slope: interval(0.0, 0.4)" in optuna
    assert "train.lr: tag(log, interval(3e-5, 1e-3))" in optuna and "mode: MULTIRUN" in optuna
    assert "JoblibLauncher" in hydra_config("hydra/launcher=joblib", "hydra.launcher.n_jobs=2")
    slurm = hydra_config("hydra/launcher=slurm")
    assert "SlurmLauncher" in slurm and "cpus_per_task: 8" in slurm
