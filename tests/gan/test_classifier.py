"""gan.metrics.classifier: augmentation, the cache (atomic file, version/config check, no retraining), bad input."""
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import gan.metrics.classifier as classifier_module
from gan.metrics.classifier import ClassifierConfig, cache_path, load_classifier, random_shift, read_classifier
from gan.models.checkpoint import load_checkpoint

ROOT = Path(__file__).resolve().parents[2]
TINY = ClassifierConfig(hidden=(32,), epochs=2, dropout=0.0)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """A cache folder holding the TINY classifier, trained once for this module."""
    directory = tmp_path_factory.mktemp("classifier")
    load_classifier(config=TINY, directory=directory)
    return directory


def test_cached_classifier_is_reused_without_training(cache, monkeypatch) -> None:
    first = load_classifier(config=TINY, directory=cache)
    monkeypatch.setattr(classifier_module, "train_classifier", lambda config: pytest.fail("retrained"))
    second = load_classifier(config=TINY, directory=cache)
    digits = np.random.default_rng(0).uniform(-1, 1, (20, 28, 28)).astype(np.float32)
    np.testing.assert_array_equal(first.predict(digits)[0], second.predict(digits)[0])
    assert second.test_accuracy == first.test_accuracy
    np.testing.assert_allclose(second.class_prior, np.full(10, 0.1))


def test_outputs_have_the_documented_shapes(cache) -> None:
    logits, features = load_classifier(config=TINY, directory=cache).predict(np.zeros((3, 28, 28), np.float32))
    assert logits.shape == (3, 10) and features.shape == (3, 32)
    assert logits.dtype == features.dtype == np.float32


def test_cache_key_follows_the_config(cache) -> None:
    other = ClassifierConfig(hidden=(32,), epochs=3, dropout=0.0)
    assert cache_path(other, cache) != cache_path(TINY, cache)
    with pytest.raises(FileNotFoundError, match="train_classifier.py"):
        load_classifier(train_if_missing=False, config=other, directory=cache)


def test_foreign_and_corrupt_files_are_named(cache, tmp_path) -> None:
    other = ClassifierConfig(hidden=(32,), epochs=3, dropout=0.0)
    foreign = tmp_path / "foreign.ckpt"
    foreign.write_bytes(cache_path(TINY, cache).read_bytes())
    with pytest.raises(RuntimeError, match="foreign.ckpt holds .*'epochs': 2.*expected .*'epochs': 3"):
        read_classifier(foreign, other)
    truncated = tmp_path / "truncated.ckpt"
    truncated.write_bytes(cache_path(TINY, cache).read_bytes()[:1000])
    with pytest.raises(RuntimeError, match="truncated.ckpt.*truncated"):
        read_classifier(truncated, TINY)


@pytest.mark.parametrize("damage", ["truncate", "garbage"])
def test_an_unusable_cache_entry_is_trained_again_with_one_warning(cache, tmp_path, damage, caplog) -> None:
    """Like the kernel cache: a cut or overwritten classifier file no longer fails every MNIST run."""
    good = cache_path(TINY, cache).read_bytes()
    path = cache_path(TINY, tmp_path)
    path.write_bytes(good[:5000] if damage == "truncate" else os.urandom(len(good)))
    with caplog.at_level("WARNING", logger=classifier_module.logger.name):
        again = load_classifier(config=TINY, directory=tmp_path)
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and str(path) in warnings[0] and "training it again" in warnings[0]
    assert read_classifier(path, TINY).test_accuracy == again.test_accuracy  # the retrained entry is cached


def test_no_temporary_files_are_left(cache) -> None:
    assert sorted(p.suffix for p in cache.iterdir()) == [".ckpt", ".lock"]


def test_random_shift_moves_whole_digits() -> None:
    digits = np.zeros((200, 28, 28), np.uint8)
    digits[:, 10:18, 10:18] = 255
    shifted = random_shift(digits, 2, np.random.default_rng(0))
    assert shifted.sum() == digits.sum()  # the square never leaves the frame, so nothing is lost
    offsets = {(int(np.argmax(s.any(axis=1))) - 10, int(np.argmax(s.any(axis=0))) - 10) for s in shifted}
    assert offsets == {(dy, dx) for dy in range(-2, 3) for dx in range(-2, 3)}
    np.testing.assert_array_equal(random_shift(digits, 0, np.random.default_rng(0)), digits)


@pytest.mark.parametrize("field, value", [("hidden", ()), ("epochs", 0), ("lr", 0.0), ("dropout", 1.0),
                                          ("max_shift", 14), ("seed", -1), ("batch_size", 2.5)])
def test_bad_config_values_are_named(field: str, value) -> None:
    with pytest.raises(ValueError, match=re.escape(f"{field}={value!r}")):
        ClassifierConfig(**{field: value})


def test_predict_rejects_wrong_shapes(cache) -> None:
    with pytest.raises(ValueError, match=r"\(N, 28, 28\).*\(2, 32, 32\)"):
        load_classifier(config=TINY, directory=cache).predict(np.zeros((2, 32, 32), np.float32))



@pytest.mark.slow
def test_retraining_reproduces_the_classifier(tmp_path) -> None:
    # Weights, shifts and order come from the config's seed and the default has no dropout: two fresh
    # processes (two users, or a sweep job and a later run) train the identical classifier.
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GLOG_v": "3"}
    files = []
    for run in ("a", "b"):
        done = subprocess.run([sys.executable, str(ROOT / "scripts" / "train_classifier.py"), "--epochs", "1",
                               "--min-accuracy", "0", "--cache-dir", str(tmp_path / run)], env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        (path,) = (tmp_path / run).glob("*.ckpt")
        files.append(load_checkpoint(path))
    (arrays_a, meta_a), (arrays_b, meta_b) = files
    assert meta_a == meta_b
    assert sorted(arrays_a) == sorted(arrays_b)
    for name in arrays_a:
        np.testing.assert_array_equal(arrays_a[name], arrays_b[name], err_msg=name)


def test_unwritable_cache_names_the_variable(tmp_path, monkeypatch) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setenv("LRELU_CACHE_DIR", str(blocker / "cache"))
    with pytest.raises(RuntimeError, match=r"classifier cache .*a_file/cache/classifier is not writable .*set "
                                           r"LRELU_CACHE_DIR to a writable folder"):
        load_classifier()
