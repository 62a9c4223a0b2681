"""Standard sample-quality metrics in Inception features: FID, KID and improved precision/recall, against a cached
reference, so that an evaluation costs only the generated samples.

  fid        Frechet distance between Gaussians fitted to the two feature sets (Heusel et al. 2017): float64,
             unbiased covariances (np.cov, as TTUR, pytorch-fid and clean-fid; StyleGAN divides by N), the trace of
             the matrix square root from a symmetric eigendecomposition
             (gan.metrics.sample_quality.gaussian_frechet_distance: scipy.linalg.sqrtm's value, which those codes use,
             to ~1e-7, in a quarter of its time).
  kid        unbiased MMD^2 with the kernel (x.y / d + 1)^3 (Binkowski et al. 2018), averaged over `num_subsets`
             subsets of m = min(n_reference, n_generated, max_subset_size) samples drawn without replacement from
             each set, StyleGAN's kid50k settings (100 subsets of 1,000); kid_std is the subsets' spread. Kernels in
             float32 (as StyleGAN), sums in float64.
  precision, recall  improved precision and recall (Kynkaenniemi et al. 2019), k = 3: a sample is inside a set's
             manifold if it lies within the distance to the k-th nearest neighbour (itself not counted) of some
             member. StyleGAN computes them in VGG16 features; these are in the same Inception pool features as
             FID. Both sets are cut to the same size first (the radii shrink with the set's size).

`Reference` holds the real side (features, mean, covariance), cached in the project cache under a key of the
images' bytes, the preprocessing convention and the extractor's hash. `StandardMetrics` is the one call:
`StandardMetrics.for_dataset("fashion_mnist")(samples)` -> {"fid", "kid", "kid_std", "precision", "recall", ...}.
"""
from __future__ import annotations

import fcntl
import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from gan.core.streams import Purpose
from gan.metrics.resize import check_uint8_images, quantize
from gan.metrics.sample_quality import gaussian_frechet_distance as frechet_distance
from gan.models.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from ops import build

logger = logging.getLogger("gan.metrics.fid")

METRIC_NAMES = ("fid", "kid", "kid_std", "precision", "recall")
KID_SUBSETS, KID_SUBSET_SIZE = 100, 1000
KID_PRECOMPUTED = 30_000_000  # kernel entries (float32: 120 MB) kept for all subsets at once
PR_NEIGHBOURS = 3
DEFAULT_REFERENCE = 10_000  # real images of a dataset reference unless asked otherwise
PR_ROW_BATCH = 1024  # rows of a distance matrix at a time: bounds memory to PR_ROW_BATCH x N float64
REFERENCE_FORMAT = "lrelu-gan/fid-reference/1"


# --- the metrics -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FeatureSet:
    """Features (N, D) float32 and their Gaussian: mean (D,) and unbiased covariance (D, D), float64."""

    features: np.ndarray
    mu: np.ndarray
    sigma: np.ndarray

    @classmethod
    def of(cls, features: np.ndarray) -> "FeatureSet":
        if not isinstance(features, np.ndarray) or features.ndim != 2 or len(features) < 2:
            raise ValueError(f"features must be (N, D) with N >= 2, got {getattr(features, 'shape', features)}")
        if not np.isfinite(features).all():
            raise ValueError(f"features hold {np.count_nonzero(~np.isfinite(features))} NaN/inf values")
        wide = features.astype(np.float64)
        return cls(features.astype(np.float32), wide.mean(axis=0), np.cov(wide, rowvar=False))

    def __len__(self) -> int:
        return len(self.features)


def polynomial_kernel(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """k(a_i, b_j) = (a_i . b_j / d + 1)^3 of every pair, float32 (a float32 Gram product, as StyleGAN computes it)."""
    return (np.matmul(a.astype(np.float32), b.astype(np.float32).T) / np.float32(a.shape[1]) + np.float32(1)) ** 3


def unbiased_mmd(k_xx: np.ndarray, k_yy: np.ndarray, k_xy: np.ndarray) -> float:
    """Unbiased MMD^2 of two samples of size m from their kernel matrices: the within-set means without the
    diagonal, minus twice the cross mean (sums in float64)."""
    m = len(k_xx)
    within = k_xx.sum(dtype=np.float64) - np.trace(k_xx, dtype=np.float64) \
        + k_yy.sum(dtype=np.float64) - np.trace(k_yy, dtype=np.float64)
    return float((within / (m - 1) - k_xy.sum(dtype=np.float64) * 2 / m) / m)


def kid_subset(x: np.ndarray, y: np.ndarray) -> float:
    """unbiased_mmd of two equal-size samples with the polynomial kernel."""
    return unbiased_mmd(polynomial_kernel(x, x), polynomial_kernel(y, y), polynomial_kernel(x, y))


def kernel_distance(real: np.ndarray, generated: np.ndarray, num_subsets: int = KID_SUBSETS,
                    max_subset_size: int = KID_SUBSET_SIZE, seed: int = 0) -> tuple[float, float]:
    """(mean, std) of kid_subset over `num_subsets` random subsets of m = min(both sizes, max_subset_size) of each set
    (drawn without replacement from a generator seeded by `seed`).

    The generated set's kernels with itself and with the real set are computed once when they fit in
    KID_PRECOMPUTED entries (the in-training sizes: 2,000 x 12,000), then each subset's are gathered from them;
    the real-real kernels are computed per subset (the same values either way, up to float32 rounding)."""
    m = min(len(real), len(generated), max_subset_size)
    if m < 2:
        raise ValueError(f"KID needs at least 2 samples per set, got {len(real)} real and {len(generated)} generated")
    rng = np.random.default_rng([seed, Purpose.KID_DRAWS])
    real, generated = real.astype(np.float32), generated.astype(np.float32)
    gathered = len(generated) * (len(generated) + len(real)) <= KID_PRECOMPUTED
    k_gg = polynomial_kernel(generated, generated) if gathered else None
    k_gr = polynomial_kernel(generated, real) if gathered else None
    values = []
    for _ in range(num_subsets):
        g, r = rng.choice(len(generated), m, replace=False), rng.choice(len(real), m, replace=False)
        x, y = generated[g], real[r]
        k_xx = k_gg[np.ix_(g, g)] if gathered else polynomial_kernel(x, x)
        k_xy = k_gr[np.ix_(g, r)] if gathered else polynomial_kernel(x, y)
        values.append(unbiased_mmd(k_xx, polynomial_kernel(y, y), k_xy))
    return float(np.mean(values)), float(np.std(values))


def _squared_distances(rows: np.ndarray, cols: np.ndarray, col_norms: np.ndarray) -> np.ndarray:
    """|r - c|^2 (float64, >= 0) of every row against every column sample; the cross term by a float32 GEMM."""
    cross = np.matmul(rows.astype(np.float32), cols.astype(np.float32).T).astype(np.float64)
    row_norms = np.einsum("ij,ij->i", rows.astype(np.float64), rows.astype(np.float64))
    return np.maximum(row_norms[:, None] + col_norms[None, :] - 2 * cross, 0.0)


def manifold_radii(features: np.ndarray, k: int = PR_NEIGHBOURS, batch: int = PR_ROW_BATCH) -> np.ndarray:
    """Squared distance of each sample to its k-th nearest neighbour in the set (itself, at distance 0, not
    counted), computed `batch` rows at a time."""
    if len(features) <= k:
        raise ValueError(f"precision/recall with k={k} need more than {k} samples per set, got {len(features)}")
    norms = np.einsum("ij,ij->i", features.astype(np.float64), features.astype(np.float64))
    radii = np.empty(len(features), np.float64)
    for start in range(0, len(features), batch):
        d = _squared_distances(features[start:start + batch], features, norms)
        radii[start:start + batch] = np.partition(d, k, axis=1)[:, k]  # sorted position 0 is the sample itself
    return radii


def coverage(manifold: np.ndarray, radii: np.ndarray, probes: np.ndarray, batch: int = PR_ROW_BATCH) -> float:
    """The share of probes within the radius of at least one manifold sample."""
    norms = np.einsum("ij,ij->i", manifold.astype(np.float64), manifold.astype(np.float64))
    inside = [(_squared_distances(probes[s:s + batch], manifold, norms) <= radii[None, :]).any(axis=1)
              for s in range(0, len(probes), batch)]
    return float(np.concatenate(inside).mean())


def precision_recall(real: np.ndarray, generated: np.ndarray, k: int = PR_NEIGHBOURS,
                     batch: int = PR_ROW_BATCH) -> tuple[float, float]:
    """(precision, recall): the share of generated samples inside the real manifold, and of real samples inside
    the generated one, after cutting both sets to the smaller size (their first n)."""
    n = min(len(real), len(generated))
    real, generated = real[:n], generated[:n]
    precision = coverage(real, manifold_radii(real, k, batch), generated, batch)
    recall = coverage(generated, manifold_radii(generated, k, batch), real, batch)
    return precision, recall


def compare(reference: FeatureSet, generated: FeatureSet, seed: int = 0) -> dict[str, float]:
    """fid, kid, kid_std, precision, recall of generated features against reference ones, and both counts."""
    kid, kid_std = kernel_distance(reference.features, generated.features, seed=seed)
    precision, recall = precision_recall(reference.features, generated.features)
    return {"fid": frechet_distance(reference.mu, reference.sigma, generated.mu, generated.sigma), "kid": kid,
            "kid_std": kid_std, "precision": precision, "recall": recall, "n_reference": len(reference),
            "n_generated": len(generated)}


# --- cached references ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reference:
    """The real side of the metrics: what it is (`name`, e.g. "fashion_mnist train[:10000] 32x32"), its features and
    Gaussian, and the convention and extractor they were computed with."""

    name: str
    key: str
    features: FeatureSet
    convention: str
    extractor_sha256: str


def reference_key(images: np.ndarray, convention: str, extractor_sha256: str) -> str:
    """SHA-256 of the images' bytes and shape, the convention, the extractor's hash and the format."""
    digest = hashlib.sha256()
    for part in (REFERENCE_FORMAT, convention, extractor_sha256, repr(images.shape)):
        digest.update(part.encode() + b"\0")
    digest.update(np.ascontiguousarray(images).tobytes())
    return digest.hexdigest()


def reference_path(key: str) -> Path:
    return build.cache_dir() / "fid_reference" / f"{key[:32]}.ckpt"


def _read_reference(path: Path, key: str) -> Reference:
    arrays, meta = load_checkpoint(path)
    if meta.get("format") != REFERENCE_FORMAT or meta.get("key") != key or \
            not {"features", "mu", "sigma"} <= set(arrays):
        raise CheckpointError(f"{path} is not the reference {key[:16]}... ({meta.get('format')!r})")
    return Reference(meta["name"], key, FeatureSet(arrays["features"], arrays["mu"], arrays["sigma"]),
                     meta["convention"], meta["extractor_sha256"])


def cached_reference(images: np.ndarray, name: str, extractor, say: Callable[[str], None] = logger.info) -> Reference:
    """The Reference of uint8 `images` (N, H, W, C) under the extractor's convention: read from the cache, else
    computed (features of every image) and cached under a lock; an unreadable entry is recomputed."""
    images = check_uint8_images(images)
    key = reference_key(images, extractor.convention, extractor.sha256)
    path = reference_path(key)
    try:
        return _read_reference(path, key)
    except (CheckpointError, FileNotFoundError, OSError):
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return _read_reference(path, key)
        except (CheckpointError, FileNotFoundError, OSError) as err:
            if path.exists():
                logger.warning("reference statistics %s are unusable (%s); computing them again", path, err)
        say(f"fid: computing the reference features of {len(images)} images ({name}) once; cached at {path}")
        features = FeatureSet.of(extractor.features(images, progress=True))
        save_checkpoint(path, {"features": features.features, "mu": features.mu, "sigma": features.sigma},
                        {"format": REFERENCE_FORMAT, "key": key, "name": name, "convention": extractor.convention,
                         "extractor_sha256": extractor.sha256, "count": len(images)})
    return _read_reference(path, key)


def as_uint8(images: np.ndarray) -> np.ndarray:
    """uint8 (N, H, W, C) images as they are; generated float images (N, C, H, W) in [-1, 1] quantised (quantize)."""
    return images if isinstance(images, np.ndarray) and images.dtype == np.uint8 else quantize(images)


class StandardMetrics:
    """FID, KID and precision/recall of generated images against one reference, in one call.

    The reference images (uint8 (N, H, W, C), or a function returning them) are featurised once and cached
    (`cached_reference`); each call then costs the generated samples' features only. The extractor (a
    gan.metrics.inception.FeatureExtractor of `extractor_options`: convention, batch_size, impl, archive) and the
    reference are built on first use; `check()` verifies the Inception archive now (a run does it at its start).
    """

    def __init__(self, reference_images: np.ndarray | Callable[[], np.ndarray], reference_name: str,
                 extractor=None, say: Callable[[str], None] = logger.info, **extractor_options) -> None:
        self.reference_name, self.say = reference_name, say
        self._images, self._extractor, self._options = reference_images, extractor, extractor_options
        self._reference: Reference | None = None

    def check(self) -> "StandardMetrics":
        """Raise gan.metrics.inception.InceptionError now if the pinned Inception archive is missing or differs."""
        from gan.metrics.inception import archive_path, verify_archive

        if self._extractor is None:
            verify_archive(archive_path(self._options.get("archive")))
        return self

    @property
    def extractor(self):
        if self._extractor is None:
            from gan.metrics.inception import FeatureExtractor

            self._extractor = FeatureExtractor(**self._options)
        return self._extractor

    @classmethod
    def for_dataset(cls, name: str, split: str = "train", n: int | None = None, image_size: int = 32,
                    root: str | Path | None = None, **options) -> "StandardMetrics":
        """Against the first n images of a dataset split at the model size (gan.data.sources.dataset_images); n=None:
        the first DEFAULT_REFERENCE (all of a smaller split), a larger n than the split holds is a ValueError."""
        from gan.data.sources import dataset_images

        images = dataset_images(name, split, n, image_size, root=root)[:n or DEFAULT_REFERENCE]
        return cls(images, f"{name} {split}[:{len(images)}] {image_size}x{image_size}", **options)

    @property
    def reference(self) -> Reference:
        if self._reference is None:
            images = self._images() if callable(self._images) else self._images
            self._reference = cached_reference(images, self.reference_name, self.extractor, self.say)
        return self._reference

    def describe(self) -> dict:
        """The report fields naming what the numbers are: convention, extractor and its hash, reference."""
        return {**self.extractor.describe(), "reference": self.reference.name,
                "n_reference": len(self.reference.features)}

    def features(self, images: np.ndarray, progress: bool = False) -> FeatureSet:
        """The FeatureSet of generated (float [-1, 1] NCHW) or uint8 NHWC images."""
        return FeatureSet.of(self.extractor.features(as_uint8(images), progress=progress))

    def __call__(self, images: np.ndarray, seed: int = 0, progress: bool = False) -> dict[str, float]:
        """fid, kid, kid_std, precision, recall, n_reference, n_generated of `images` against the reference."""
        return compare(self.reference.features, self.features(images, progress), seed)
