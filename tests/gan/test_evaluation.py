"""2D tasks and periodic evaluation: point stream, scatter plots, objective choice, metrics files, 2D resume."""
import json

import numpy as np
import pytest

from gan.config.schema import ConfigError, EvalConfig, compose_config, to_config
from gan.data.points import GRID25
from gan.metrics.sample_quality import mode_metrics
from gan.run.files import read_jsonl
from gan.training.evaluation import resolve_objective
from gan.training.loop import run
from gan.training.tasks import MODE_METRICS, PointData, as_points, scatter_plot

EVAL_2D = ["eval.interval=2", "eval.num_samples=300", "diagnostics.enabled=false"]  # on top of conftest's TINY_2D


def test_point_batches_are_a_pure_function_of_seed_and_step():
    a, b = PointData("ring8", 16, seed=3), PointData("ring8", 16, seed=3)
    stream = a.batches(5)
    first = next(stream)
    assert first.shape == (16, 2, 1, 1) and first.dtype == np.float32
    np.testing.assert_array_equal(first, b.batch(5))
    np.testing.assert_array_equal(next(stream), b.batch(6))
    assert not np.array_equal(a.batch(5), a.batch(6))
    assert not np.array_equal(a.batch(5), PointData("ring8", 16, seed=4).batch(5))
    # real points sit on the modes: the metrics of real data are ideal
    assert mode_metrics(as_points(a.sample(2000)), "ring8")["modes"] == 8


@pytest.mark.parametrize("bad", [0, -1, True, 2.5])
def test_point_data_rejects_bad_batch_size(bad):
    with pytest.raises(ValueError, match="batch_size"):
        PointData("ring8", bad, seed=0)


def test_point_data_rejects_unknown_mixture():
    with pytest.raises(ValueError, match="'ring9'.*grid25"):
        PointData("ring9", 8, seed=0)


def test_scatter_plot_marks_modes_and_colours_points_by_quality():
    good = GRID25.means[:3].copy()
    far = np.array([[1.0, 1.0], [100.0, -100.0], [np.nan, 0.0]])  # between modes, off the frame, NaN
    image = scatter_plot(np.concatenate([good, far]), GRID25, size=200)
    assert image.shape == (200, 200, 3) and image.dtype == np.uint8
    colours = {tuple(c) for c in image.reshape(-1, 3)}
    assert (31, 119, 180) in colours and (214, 39, 40) in colours and (0, 160, 0) in colours
    only_good = {tuple(c) for c in scatter_plot(good, GRID25, size=200).reshape(-1, 3)}
    assert (214, 39, 40) not in only_good


def test_as_points_rejects_images():
    with pytest.raises(ValueError, match=r"\(N, 2, 1, 1\)"):
        as_points(np.zeros((4, 1, 32, 32), np.float32))


class _FakeTask:
    metric_names = MODE_METRICS
    default_objective = "reverse_kl"


@pytest.mark.parametrize("enabled, objective, expected", [(True, "auto", "reverse_kl"), (True, "modes", "modes"),
                                                          (True, "loss_g", "loss_g"), (False, "auto", "loss_g")])
def test_resolve_objective(enabled, objective, expected):
    assert resolve_objective(EvalConfig(enabled=enabled, objective=objective), _FakeTask()) == expected


def test_resolve_objective_rejects_unavailable_metrics():
    with pytest.raises(ConfigError, match="'frechet_distance'.*'reverse_kl'"):
        resolve_objective(EvalConfig(enabled=True, objective="frechet_distance"), _FakeTask())
    with pytest.raises(ConfigError, match="eval.enabled=true"):
        resolve_objective(EvalConfig(enabled=False, objective="modes"), _FakeTask())


def test_2d_data_selects_the_2d_recipe_and_the_cli_still_wins():
    conf = to_config(compose_config(["experiment=grid25"]))
    assert (conf.model.name, conf.model.nz, conf.act.g_negative_slope) == ("mlp", 2, 0.0)
    assert (conf.train.lr, conf.train.beta1, conf.train.batch_size) == (1e-4, 0.8, 100)
    assert conf.eval.objective == "reverse_kl"
    conf = to_config(compose_config(["experiment=ring8", "act=default", "train.lr=3e-4"]))
    assert conf.act.g_negative_slope is None and conf.train.lr == 3e-4


@pytest.mark.parametrize("overrides, message", [
    (["model=mlp"], "model=mlp cannot train on data=mnist"),
    (["experiment=ring8", "model=dcgan32"], "model=dcgan cannot train on data=ring8"),
    (["experiment=ring8", "train.steps=null", "train.epochs=2"], "train.epochs=2.0"),
    (["eval.num_samples=1"], "eval.num_samples=1"),
])
def test_config_rejects_impossible_combinations(overrides, message):
    with pytest.raises(ConfigError, match=message):
        to_config(compose_config(overrides))


@pytest.fixture(scope="module")
def run_2d(tmp_path_factory, tiny_2d):
    """An uninterrupted 4-step ring8 run with evaluations at steps 2 and 4."""
    return run(compose_config(tiny_2d + EVAL_2D + ["train.steps=4"]), tmp_path_factory.mktemp("ring8"))


@pytest.mark.slow
def test_metrics_are_written_and_returned_as_the_objective(run_2d):
    final = json.loads((run_2d.run_dir / "metrics.json").read_text())
    assert set(final) == set(MODE_METRICS)
    assert [r["step"] for r in read_jsonl(run_2d.run_dir / "metrics.jsonl")] == [2, 4]
    assert run_2d.metrics == final
    assert run_2d.objective_name == "reverse_kl" and run_2d.objective == final["reverse_kl"]
    assert (run_2d.run_dir / "samples" / "real.png").is_file()
    assert (run_2d.run_dir / "samples" / "step_000004.png").is_file()


@pytest.mark.slow
def test_2d_resume_is_exact(run_2d, tmp_path, tiny_2d):
    run(compose_config(tiny_2d + EVAL_2D + ["train.steps=2"]), tmp_path)
    resumed = run(compose_config(tiny_2d + EVAL_2D + ["train.steps=4", "train.resume=auto"]), tmp_path)
    assert resumed.start_step == 2
    assert [(s.loss_d, s.loss_g) for s in resumed.history] == [(s.loss_d, s.loss_g) for s in run_2d.history[2:]]
    assert resumed.metrics == run_2d.metrics
    assert len({s.loss_d for s in run_2d.history}) == 4  # the losses move: equality is a real check
