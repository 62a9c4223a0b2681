"""gan.metrics.sample_quality: PacGAN 2D mode metrics, the Frechet distance, and classifier-based image metrics.

The image-metric tests use a small classifier trained once per session in a temporary cache (a few
seconds); the default classifier's >= 97% accuracy is checked by tests/scripts/test_train_classifier.py.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from gan.data.points import get_mixture, sample_mixture
from gan.data.sources import load_mnist_5k, mnist_source, to_model_range
from gan.metrics.classifier import ClassifierConfig, load_classifier
from gan.metrics.sample_quality import frechet_distance, image_metrics, mode_metrics, to_digits

TINY = ClassifierConfig(hidden=(256, 64), epochs=15)
P_WITHIN_3_STD_2D = 1 - np.exp(-4.5)  # radius of a 2D isotropic Gaussian is Rayleigh: P(r < 3 std) = 0.9889


# ---- 2D mode metrics -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["ring8", "grid25"])
def test_true_distribution_is_ideal(name: str) -> None:
    points = sample_mixture(name, 20_000, np.random.default_rng(1))
    result = mode_metrics(points, name)
    assert result["modes"] == get_mixture(name).num_modes
    assert abs(result["hq_fraction"] - P_WITHIN_3_STD_2D) < 0.004
    assert 0 <= result["reverse_kl"] < 0.005


@pytest.mark.parametrize("name", ["ring8", "grid25"])
def test_collapse_to_one_mode(name: str) -> None:
    mixture = get_mixture(name)
    points = np.repeat(mixture.means[3:4], 500, axis=0) + 0.5 * mixture.std
    result = mode_metrics(points, name)
    assert result == {"modes": 1, "hq_fraction": 1.0, "reverse_kl": pytest.approx(np.log(mixture.num_modes))}


def test_two_modes_and_low_quality_points() -> None:
    means = get_mixture("ring8").means
    good = np.concatenate([np.repeat(means[:1], 300, axis=0), np.repeat(means[5:6], 300, axis=0)])
    between = np.zeros((400, 2))  # the ring's centre: nearest to some mode, but 100 std away
    result = mode_metrics(np.concatenate([good, between]), "ring8")
    assert result == {"modes": 2, "hq_fraction": 0.6, "reverse_kl": pytest.approx(np.log(4))}


def test_hq_rule_is_strictly_inside_three_std() -> None:
    std = get_mixture("grid25").std
    inside = np.array([[2.0 + 2.99 * std, 0.0]])
    outside = np.array([[2.0, -3.01 * std]])
    assert mode_metrics(inside, "grid25")["hq_fraction"] == 1.0
    assert mode_metrics(outside, "grid25") == {"modes": 0, "hq_fraction": 0.0, "reverse_kl": pytest.approx(np.log(25))}


def test_non_finite_points_are_low_quality() -> None:
    points = np.array([[1.0, 0.0], [np.nan, 0.0], [np.inf, np.inf]])
    assert mode_metrics(points, "ring8") == {"modes": 1, "hq_fraction": pytest.approx(1 / 3),
                                             "reverse_kl": pytest.approx(np.log(8))}


@settings(max_examples=50, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 50), st.just(2)), elements=st.floats(-5, 5)))
def test_mode_metrics_stay_in_range(points: np.ndarray) -> None:
    result = mode_metrics(points, "grid25")
    assert 0 <= result["modes"] <= 25
    assert 0.0 <= result["hq_fraction"] <= 1.0
    assert -1e-12 <= result["reverse_kl"] <= np.log(25) + 1e-12


def test_mode_metrics_reject_bad_input() -> None:
    with pytest.raises(ValueError, match="'ring7'"):
        mode_metrics(np.zeros((4, 2)), "ring7")
    with pytest.raises(ValueError, match=r"\(4, 3\)"):
        mode_metrics(np.zeros((4, 3)), "ring8")
    with pytest.raises(ValueError, match=r"\(0, 2\)"):
        mode_metrics(np.zeros((0, 2)), "ring8")


# ---- Frechet distance ------------------------------------------------------------------------------


def test_frechet_distance_matches_the_matrix_square_root_formula() -> None:
    scipy_linalg = pytest.importorskip("scipy.linalg", reason="scipy (an mlxtend dependency) gives the reference")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((400, 6)) @ rng.standard_normal((6, 6))
    b = rng.standard_normal((300, 6)) @ rng.standard_normal((6, 6)) + 0.7
    mu_a, mu_b, cov_a, cov_b = a.mean(0), b.mean(0), np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    expected = np.sum((mu_a - mu_b) ** 2) + np.trace(cov_a + cov_b - 2 * scipy_linalg.sqrtm(cov_a @ cov_b).real)
    assert frechet_distance(a, b) == pytest.approx(expected, rel=1e-6)
    assert frechet_distance(a, a) == pytest.approx(0.0, abs=1e-6)


def test_frechet_distance_rejects_bad_shapes() -> None:
    with pytest.raises(ValueError, match=r"\(5, 3\) and \(5, 4\)"):
        frechet_distance(np.zeros((5, 3)), np.zeros((5, 4)))
    with pytest.raises(ValueError, match=">= 2 samples"):
        frechet_distance(np.zeros((1, 3)), np.zeros((5, 3)))


# ---- image metrics ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def classifier(tmp_path_factory):
    """A small classifier (about 93% held-out accuracy), trained once for this module."""
    return load_classifier(config=TINY, directory=tmp_path_factory.mktemp("classifier"))


def gan_layout(image_size: int, channels: int, num_images: int | None = None) -> np.ndarray:
    """The training digits exactly as the GAN sees them (gan.data.sources's mnist layout), NCHW in [-1, 1]."""
    source = mnist_source(image_size, channels, num_images)
    return to_model_range(np.stack([source[i] for i in range(len(source))]))


@pytest.fixture(scope="module")
def real_metrics(classifier) -> dict:
    return image_metrics(gan_layout(32, 1), classifier)


def test_training_digits_score_near_ideal(classifier, real_metrics) -> None:
    assert real_metrics["class_coverage"] == 10
    assert real_metrics["class_kl"] < 0.02
    assert real_metrics["mean_confidence"] > 0.75
    assert classifier.test_accuracy > 0.85
    assert 0 <= real_metrics["frechet_distance"] < 5.0


def test_layout_inversion_handles_size_and_rgb(classifier, real_metrics) -> None:
    metrics = image_metrics(gan_layout(64, 3, 1000), classifier)
    assert metrics["class_coverage"] == 10
    assert metrics["class_kl"] < 0.02
    assert metrics["frechet_distance"] < 2 * real_metrics["frechet_distance"] + 1.0


def test_one_class_scores_clearly_bad(classifier, real_metrics) -> None:
    images = gan_layout(32, 1)
    _, labels = load_mnist_5k("train")
    metrics = image_metrics(images[labels == 3], classifier)
    assert metrics["class_coverage"] < 10  # misclassified 3s still reach 1% in a few classes
    assert metrics["class_kl"] > 1.5  # log(10) = 2.30 for a perfect one-class histogram
    assert metrics["frechet_distance"] > 10 * real_metrics["frechet_distance"]


def test_blank_images_are_one_class(classifier, real_metrics) -> None:
    metrics = image_metrics(np.full((500, 1, 32, 32), -1.0, np.float32), classifier)
    assert metrics["class_coverage"] == 1
    assert metrics["class_kl"] == pytest.approx(np.log(10))
    assert metrics["frechet_distance"] > 10 * real_metrics["frechet_distance"]


def test_noise_scores_clearly_bad(classifier, real_metrics) -> None:
    noise = np.random.default_rng(0).uniform(-1, 1, (1000, 1, 32, 32)).astype(np.float32)
    metrics = image_metrics(noise, classifier)
    assert metrics["mean_confidence"] < real_metrics["mean_confidence"] - 0.3  # noise spreads over classes
    assert metrics["frechet_distance"] > 10 * real_metrics["frechet_distance"]


def test_to_digits_inverts_the_mnist_layout() -> None:
    digits, _ = load_mnist_5k("train")
    np.testing.assert_allclose(to_digits(gan_layout(32, 3, 50)), digits[:50] / 127.5 - 1, atol=1e-5)


def test_image_metrics_reject_bad_input(classifier) -> None:
    with pytest.raises(ValueError, match=r"\(N, C, H, W\).*\(10, 32, 32\)"):
        image_metrics(np.zeros((10, 32, 32), np.float32), classifier)
    with pytest.raises(ValueError, match="2 channels"):
        image_metrics(np.zeros((10, 2, 32, 32), np.float32), classifier)
    with pytest.raises(ValueError, match="1 NaN/inf"):
        bad = np.zeros((10, 1, 32, 32), np.float32)
        bad[3, 0, 5, 5] = np.nan
        image_metrics(bad, classifier)
    with pytest.raises(ValueError, match="at least 2 images, got 1"):
        image_metrics(np.zeros((1, 1, 32, 32), np.float32), classifier)
