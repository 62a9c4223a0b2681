"""Offline sample-quality metrics: classifier-based image metrics and PacGAN's 2D mode metrics.

Image metrics (no download: the classifier is gan.metrics.classifier's, trained by the project) on N samples:
  class_coverage   number of digit classes predicted for >= 1% of the samples (ideal 10)
  class_kl         KL(p_gen || p_data) in nats: p_gen is the histogram of predicted classes, p_data the
                   class prior of the classifier's training digits; terms with p_gen = 0 count 0 and
                   p_data > 0, so no epsilon is needed (ideal 0; one class only: log 10 = 2.30)
  mean_confidence  mean top-class softmax probability (ideal: close to the classifier's on real digits)
  frechet_distance Frechet distance between Gaussians fitted to classifier features of the held-out real
                   digits and of the samples, both using the same number of images (ideal ~0)

2D mode metrics, the PacGAN protocol (Lin et al. 2018, section 5) on gan.data.points's mixtures:
  each point is assigned to its nearest mode; it is high quality if it lies within 3 std of it
  (strictly: distance < 3 * std, as in the authors' code);
  modes            modes with at least one high-quality point assigned
  hq_fraction      fraction of all points that are high quality
  reverse_kl       KL(p_gen || uniform) in nats, where p_gen is the histogram of the high-quality points
                   over modes ("reverse": generated distribution first); log K when no point is high quality
"""
from __future__ import annotations

import numpy as np
from PIL import Image

from gan.data.points import get_mixture
from gan.data.sources import load_mnist_5k
from gan.metrics.classifier import DIGIT_SIZE, NUM_CLASSES, Classifier, load_classifier, to_unit_range

MNIST_LAYOUT_SIZE = 32  # gan.data.sources pads the 28x28 digits by 2 pixels per side before resizing to the model size
COVERAGE_THRESHOLD = 0.01  # a class counts as covered when it holds at least 1% of the samples
HQ_STDS = 3.0


def to_digits(images: np.ndarray) -> np.ndarray:
    """GAN images (N, C, H, W) in [-1, 1] -> (N, 28, 28) digits: average channels, resize to 32, crop 28.

    This inverts gan.data.sources's MNIST layout (28x28 digit padded to 32x32, then resized to the model size),
    so samples reach the classifier at the scale it was trained on.
    """
    if not isinstance(images, np.ndarray) or images.ndim != 4:
        raise ValueError(f"images must be a numpy array (N, C, H, W), got "
                         f"{getattr(images, 'shape', type(images).__name__)}")
    if images.shape[1] not in (1, 3):
        raise ValueError(f"images have {images.shape[1]} channels; allowed: 1 (gray) or 3 (RGB, averaged to gray)")
    if not np.isfinite(images).all():
        raise ValueError(f"images contain {np.count_nonzero(~np.isfinite(images))} NaN/inf values")
    gray = images.astype(np.float32).mean(axis=1)
    if gray.shape[1:] != (MNIST_LAYOUT_SIZE, MNIST_LAYOUT_SIZE):
        size = (MNIST_LAYOUT_SIZE, MNIST_LAYOUT_SIZE)
        gray = np.stack([np.asarray(Image.fromarray(np.ascontiguousarray(g)).resize(size, Image.BILINEAR))
                         for g in gray])
    pad = (MNIST_LAYOUT_SIZE - DIGIT_SIZE) // 2
    return np.clip(gray[:, pad:pad + DIGIT_SIZE, pad:pad + DIGIT_SIZE], -1.0, 1.0)


def gaussian_frechet_distance(mu_a: np.ndarray, cov_a: np.ndarray, mu_b: np.ndarray, cov_b: np.ndarray) -> float:
    """||mu_a - mu_b||^2 + tr(S_a + S_b - 2 (S_a S_b)^(1/2)) of two Gaussians, in float64.

    tr((S_a S_b)^(1/2)) is computed as the sum of square roots of the eigenvalues of the symmetric PSD
    matrix S_a^(1/2) S_b S_a^(1/2), which has the same spectrum: stable (singular covariances included) and numpy
    only. It equals the trace of scipy.linalg.sqrtm(S_a S_b), the FID codes' way, to ~1e-7 relative, and takes a
    quarter of its time at 2048 dimensions (tests/gan/test_fid.py; docs/metrics.md).
    """
    mu_a, cov_a, mu_b, cov_b = (np.asarray(x, np.float64) for x in (mu_a, cov_a, mu_b, cov_b))
    if mu_a.shape != mu_b.shape or mu_a.ndim != 1 or cov_a.shape != cov_b.shape or cov_a.shape != mu_a.shape * 2:
        raise ValueError(f"Gaussians of different dimensions: means {mu_a.shape} / {mu_b.shape}, covariances "
                         f"{cov_a.shape} / {cov_b.shape}")
    eigvals, eigvecs = np.linalg.eigh(cov_a)
    sqrt_a = (eigvecs * np.sqrt(np.clip(eigvals, 0, None))) @ eigvecs.T
    cross = np.linalg.eigvalsh(sqrt_a @ cov_b @ sqrt_a)
    trace_sqrt = np.sqrt(np.clip(cross, 0, None)).sum()
    return float(np.sum((mu_a - mu_b) ** 2) + np.trace(cov_a) + np.trace(cov_b) - 2 * trace_sqrt)


def frechet_distance(features_a: np.ndarray, features_b: np.ndarray) -> float:
    """gaussian_frechet_distance of Gaussians fitted (mean, unbiased covariance) to two feature sets (N, D)."""
    if features_a.ndim != 2 or features_b.ndim != 2 or features_a.shape[1] != features_b.shape[1]:
        raise ValueError(f"feature sets must be (N, D) with the same D, got {features_a.shape} and {features_b.shape}")
    if min(len(features_a), len(features_b)) < 2:
        raise ValueError(f"the Frechet distance needs >= 2 samples per set, got {len(features_a)} and "
                         f"{len(features_b)}")
    a, b = features_a.astype(np.float64), features_b.astype(np.float64)
    return gaussian_frechet_distance(a.mean(axis=0), np.cov(a, rowvar=False), b.mean(axis=0), np.cov(b, rowvar=False))


def kl_to(p: np.ndarray, q: np.ndarray) -> float:
    """KL(p || q) in nats for histograms, with 0 * log(0 / q) = 0; q must be > 0 wherever p > 0."""
    support = p > 0
    return float(np.sum(p[support] * np.log(p[support] / q[support])))


def image_metrics(images: np.ndarray, classifier: Classifier | None = None) -> dict[str, float]:
    """class_coverage, class_kl, mean_confidence and frechet_distance of N >= 2 GAN images (N, C, H, W) in [-1, 1].

    The Frechet distance uses the first min(N, 1000) samples against as many held-out real digits
    (1,000 exist), so its size bias is the same as for the reference; the class statistics use all N.
    `classifier` defaults to the cached one (trained on first use, see gan.metrics.classifier).
    """
    digits = to_digits(images)
    if len(digits) < 2:
        raise ValueError(f"image metrics need at least 2 images, got {len(digits)}")
    if classifier is None:
        classifier = load_classifier()
    logits, features = classifier.predict(digits)
    shifted = logits - logits.max(axis=1, keepdims=True)
    probs = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
    histogram = np.bincount(probs.argmax(axis=1), minlength=NUM_CLASSES) / len(probs)
    real_digits, _ = load_mnist_5k("held_out")  # classes interleaved: every prefix is class-balanced
    n = min(len(digits), len(real_digits))
    _, real_features = classifier.predict(to_unit_range(real_digits[:n]))
    return {
        "class_coverage": int(np.count_nonzero(histogram >= COVERAGE_THRESHOLD)),
        "class_kl": kl_to(histogram, classifier.class_prior),
        "mean_confidence": float(probs.max(axis=1).mean()),
        "frechet_distance": frechet_distance(real_features, features[:n]),
    }


def mode_metrics(points: np.ndarray, dataset: str) -> dict[str, float]:
    """modes, hq_fraction and reverse_kl of generated 2D points (N, 2) for "ring8" or "grid25" (PacGAN)."""
    mixture = get_mixture(dataset)
    if not isinstance(points, np.ndarray) or points.ndim != 2 or points.shape[1] != 2 or len(points) == 0:
        raise ValueError(f"points must be a non-empty numpy array (N, 2), got "
                         f"{getattr(points, 'shape', type(points).__name__)}")
    xy = points.astype(np.float64)
    distances = np.linalg.norm(xy[:, None, :] - mixture.means[None, :, :], axis=-1)  # (N, K)
    distances[~np.isfinite(xy).all(axis=1)] = np.inf  # a diverged generator's NaN points are never high quality
    nearest = distances.argmin(axis=1)
    high_quality = distances[np.arange(len(xy)), nearest] < HQ_STDS * mixture.std
    counts = np.bincount(nearest[high_quality], minlength=mixture.num_modes)
    uniform = np.full(mixture.num_modes, 1.0 / mixture.num_modes)
    total = counts.sum()
    return {
        "modes": int(np.count_nonzero(counts)),
        "hq_fraction": float(total / len(xy)),
        "reverse_kl": kl_to(counts / total, uniform) if total else float(np.log(mixture.num_modes)),
    }
