"""gan.metrics.fid against independent formulas on small random features: FID's closed form for Gaussians, KID's
unbiased estimator as an O(n^2) double sum, precision/recall by brute force; the reference cache and StandardMetrics
with a stand-in extractor (the real one is tested in tests/gan/test_inception.py)."""
from __future__ import annotations

import logging

import numpy as np
import pytest

from gan.metrics import fid
from gan.metrics.fid import (
    FeatureSet,
    StandardMetrics,
    cached_reference,
    compare,
    frechet_distance,
    kernel_distance,
    kid_subset,
    manifold_radii,
    precision_recall,
    reference_key,
)
from tests.helpers import FakeExtractor


def _spd(rng: np.random.Generator, d: int) -> np.ndarray:
    a = rng.standard_normal((d, d))
    return a @ a.T / d + 0.1 * np.eye(d)


def _sqrt_psd(m: np.ndarray) -> np.ndarray:
    values, vectors = np.linalg.eigh(m)
    return (vectors * np.sqrt(np.clip(values, 0, None))) @ vectors.T


def test_fid_closed_form_of_diagonal_and_general_gaussians():
    rng = np.random.default_rng(0)
    mu1, mu2 = rng.standard_normal(6), rng.standard_normal(6)
    a, b = rng.uniform(0.1, 3, 6), rng.uniform(0.1, 3, 6)
    expected = np.sum((mu1 - mu2) ** 2) + np.sum((np.sqrt(a) - np.sqrt(b)) ** 2)
    assert frechet_distance(mu1, np.diag(a), mu2, np.diag(b)) == pytest.approx(expected, rel=1e-10)
    s1, s2 = _spd(rng, 8), _spd(rng, 8)
    m1, m2 = rng.standard_normal(8), rng.standard_normal(8)
    root1 = _sqrt_psd(s1)
    independent = np.sum((m1 - m2) ** 2) + np.trace(s1 + s2 - 2 * _sqrt_psd(root1 @ s2 @ root1))
    assert frechet_distance(m1, s1, m2, s2) == pytest.approx(independent, rel=1e-9)
    assert frechet_distance(m1, s1, m1, s1) == pytest.approx(0, abs=1e-9)


def test_fid_equals_the_trace_of_scipys_sqrtm_as_the_fid_codes_compute_it():
    import scipy.linalg

    rng = np.random.default_rng(7)
    for n in (200, 40):  # full rank, and fewer samples than dimensions (singular covariances)
        a = FeatureSet.of(rng.standard_normal((n, 64)).astype(np.float32))
        b = FeatureSet.of((rng.standard_normal((n, 64)) * 1.2 + 0.1).astype(np.float32))
        root = np.real(scipy.linalg.sqrtm(a.sigma @ b.sigma))
        field = np.sum((a.mu - b.mu) ** 2) + np.trace(a.sigma) + np.trace(b.sigma) - 2 * np.trace(root)
        assert frechet_distance(a.mu, a.sigma, b.mu, b.sigma) == pytest.approx(field, rel=1e-7)


def test_fid_of_feature_sets_uses_unbiased_covariances_and_survives_singular_ones():
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((50, 4)), rng.standard_normal((60, 4)) + 0.5
    a, b = FeatureSet.of(x.astype(np.float32)), FeatureSet.of(y.astype(np.float32))
    np.testing.assert_allclose(a.sigma, np.cov(x.astype(np.float32).astype(np.float64), rowvar=False))
    assert frechet_distance(a.mu, a.sigma, b.mu, b.sigma) > 0.5
    few = FeatureSet.of(rng.standard_normal((5, 16)).astype(np.float32))  # N < D: rank-deficient covariance
    assert np.isfinite(frechet_distance(few.mu, few.sigma, few.mu + 1, few.sigma))
    with pytest.raises(ValueError, match="different dimensions"):
        frechet_distance(a.mu, a.sigma, np.zeros(3), np.eye(3))
    with pytest.raises(ValueError, match="NaN"):
        FeatureSet.of(np.array([[np.nan, 1.0], [0.0, 1.0]], np.float32))


def _mmd_by_loops(x: np.ndarray, y: np.ndarray) -> float:
    """Unbiased MMD^2 with k(a, b) = (a.b / d + 1)^3 as the double sums of its definition."""
    m, d = x.shape
    k = lambda a, b: (float(a @ b) / d + 1) ** 3  # noqa: E731
    xx = sum(k(x[i], x[j]) for i in range(m) for j in range(m) if i != j) / (m * (m - 1))
    yy = sum(k(y[i], y[j]) for i in range(m) for j in range(m) if i != j) / (m * (m - 1))
    xy = sum(k(x[i], y[j]) for i in range(m) for j in range(m)) / (m * m)
    return xx + yy - 2 * xy


def test_kid_is_the_unbiased_mmd_of_its_definition():
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((30, 5)).astype(np.float32), rng.standard_normal((30, 5)).astype(np.float32) + 0.3
    assert kid_subset(x, y) == pytest.approx(_mmd_by_loops(x, y), rel=1e-5)
    # one subset as large as both sets: every sample once (the estimator ignores order)
    mean, std = kernel_distance(y, x, num_subsets=1, max_subset_size=1000)
    assert mean == pytest.approx(_mmd_by_loops(x, y), rel=1e-5) and std == 0.0


def test_kid_with_kernels_computed_once_equals_kid_per_subset(monkeypatch):
    rng = np.random.default_rng(8)
    real, gen = rng.standard_normal((50, 6)).astype(np.float32), rng.standard_normal((30, 6)).astype(np.float32)
    once = kernel_distance(real, gen, num_subsets=5, max_subset_size=20)
    monkeypatch.setattr(fid, "KID_PRECOMPUTED", 0)
    per_subset = kernel_distance(real, gen, num_subsets=5, max_subset_size=20)
    assert once == (pytest.approx(per_subset[0], rel=1e-5), pytest.approx(per_subset[1], rel=1e-4))


def test_kid_subsets_are_seeded_and_sized_by_the_smaller_set():
    rng = np.random.default_rng(3)
    real, gen = rng.standard_normal((40, 6)).astype(np.float32), rng.standard_normal((25, 6)).astype(np.float32)
    first = kernel_distance(real, gen, num_subsets=10, max_subset_size=20, seed=5)
    assert first == kernel_distance(real, gen, num_subsets=10, max_subset_size=20, seed=5)
    assert first != kernel_distance(real, gen, num_subsets=10, max_subset_size=20, seed=6)
    assert first[1] > 0
    # unbiased: the same distribution on both sides averages to ~0
    same = kernel_distance(rng.standard_normal((400, 4)), rng.standard_normal((400, 4)), num_subsets=20,
                           max_subset_size=200)
    assert abs(same[0]) < 3 * same[1] / np.sqrt(20) + 1e-3
    with pytest.raises(ValueError, match="at least 2"):
        kernel_distance(real[:1], gen)


def _pr_brute_force(real: np.ndarray, gen: np.ndarray, k: int) -> tuple[float, float]:
    def radii(a):
        return np.array([np.sort([np.linalg.norm(p - q) for q in a])[k] for p in a])  # [0] is p itself

    def share(manifold, probes):
        r = radii(manifold)
        return np.mean([any(np.linalg.norm(p - m) <= r[j] for j, m in enumerate(manifold)) for p in probes])

    return share(real, gen), share(gen, real)


@pytest.mark.parametrize("batch", [1024, 7])
def test_precision_recall_by_brute_force(batch):
    rng = np.random.default_rng(4)
    real = rng.standard_normal((45, 8)).astype(np.float32)
    gen = (rng.standard_normal((45, 8)) * 1.3 + 0.4).astype(np.float32)
    p, r = precision_recall(real, gen, k=3, batch=batch)
    bp, br = _pr_brute_force(real.astype(np.float64), gen.astype(np.float64), 3)
    assert (p, r) == (pytest.approx(bp), pytest.approx(br))
    assert 0 < p < 1 and 0 < r < 1
    np.testing.assert_allclose(manifold_radii(real, 3, batch) ** 0.5,
                               [np.sort(np.linalg.norm(real - x, axis=1))[3] for x in real], rtol=1e-5)


def test_precision_recall_cut_both_sets_to_the_smaller_one_and_need_more_than_k():
    rng = np.random.default_rng(5)
    real, gen = rng.standard_normal((60, 4)).astype(np.float32), rng.standard_normal((20, 4)).astype(np.float32)
    assert precision_recall(real, gen) == precision_recall(real[:20], gen)
    assert precision_recall(real, real) == (1.0, 1.0)
    with pytest.raises(ValueError, match="more than 3"):
        precision_recall(real[:3], gen[:3])


def test_compare_reports_every_metric_and_both_counts():
    rng = np.random.default_rng(6)
    a = FeatureSet.of(rng.standard_normal((30, 4)).astype(np.float32))
    b = FeatureSet.of((rng.standard_normal((20, 4)) + 1).astype(np.float32))
    result = compare(a, b)
    assert set(result) == {*fid.METRIC_NAMES, "n_reference", "n_generated"}
    assert (result["n_reference"], result["n_generated"]) == (30, 20) and result["fid"] > 1


def _images(seed: int, n: int = 12) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (n, 8, 8, 1), dtype=np.uint8)


def test_reference_is_cached_by_content_convention_and_extractor(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("LRELU_CACHE_DIR", str(tmp_path))
    extractor = FakeExtractor()
    first = cached_reference(_images(0), "twelve", extractor)
    again = cached_reference(_images(0), "twelve", extractor)
    assert extractor.calls == 1 and again.name == "twelve" and again.convention == "stylegan"
    np.testing.assert_array_equal(first.features.features, again.features.features)
    assert again.features.mu.dtype == np.float64 and again.features.sigma.shape == (6, 6)
    cached_reference(_images(1), "other", extractor)
    assert extractor.calls == 2
    key = reference_key(_images(0), "stylegan", "0" * 64)
    assert key != reference_key(_images(0), "clean", "0" * 64) != reference_key(_images(0), "stylegan", "1" * 64)
    path = fid.reference_path(key)
    path.write_bytes(path.read_bytes()[:100])  # a corrupt cache entry is recomputed
    with caplog.at_level(logging.WARNING, logger="gan.metrics.fid"):
        rebuilt = cached_reference(_images(0), "twelve", extractor)
    assert extractor.calls == 3 and "unusable" in caplog.text
    np.testing.assert_array_equal(rebuilt.features.features, first.features.features)


def test_standard_metrics_is_one_call_on_generated_or_uint8_images(tmp_path, monkeypatch):
    monkeypatch.setenv("LRELU_CACHE_DIR", str(tmp_path))
    loads = []
    metrics = StandardMetrics(lambda: loads.append(1) or _images(2, 20), "twenty", extractor=FakeExtractor())
    assert not loads  # the reference is built on first use
    generated = np.random.default_rng(3).uniform(-1, 1, (15, 1, 8, 8)).astype(np.float32)
    result = metrics(generated)
    assert set(fid.METRIC_NAMES) <= set(result) and result["n_generated"] == 15 and result["n_reference"] == 20
    assert metrics(fid.quantize(generated)) == result  # float images are quantised first: the same numbers
    assert loads == [1]
    assert metrics.describe()["reference"] == "twenty" and metrics.describe()["convention"] == "stylegan"


def test_for_dataset_takes_the_first_images_of_a_split(tmp_path, monkeypatch):
    monkeypatch.setenv("LRELU_CACHE_DIR", str(tmp_path))
    metrics = StandardMetrics.for_dataset("mnist", "held_out", extractor=FakeExtractor())
    assert metrics.reference_name == "mnist held_out[:1000] 32x32" and len(metrics.reference.features) == 1000
    assert StandardMetrics.for_dataset("mnist", "held_out", n=20, extractor=FakeExtractor()).reference_name == \
        "mnist held_out[:20] 32x32"
    with pytest.raises(ValueError, match="has 1000 images, fewer than the 2000 requested"):
        StandardMetrics.for_dataset("mnist", "held_out", n=2000, extractor=FakeExtractor())
