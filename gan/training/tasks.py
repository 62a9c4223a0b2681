"""What differs between data kinds in a run: the data stream, the picture of a batch of samples, the metrics.

`build_task(conf)` picks one task per `data.name`; the training loop only calls its `data`, `picture`,
`metrics` and `prepare`. Images: sample grids, and classifier-based metrics for mnist (other image data
has no metrics). 2D mixtures (PacGAN's ring8/grid25): points travel through the networks as (N, 2, 1, 1)
tensors (see gan.models.networks.MLPGenerator); pictures are scatter plots of generated points over the true
modes; metrics are PacGAN's mode metrics.
"""
from __future__ import annotations

import logging
from typing import Callable, Iterator, Protocol

import numpy as np
from PIL import Image, ImageDraw

from gan.config.schema import POINT_DATASETS, Config
from gan.core.streams import Purpose, stream
from gan.data.points import Mixture, get_mixture, sample_mixture
from gan.data.sources import ImageData, build_image_data
from gan.metrics.classifier import cache_path, load_classifier
from gan.metrics.sample_quality import HQ_STDS, image_metrics, mode_metrics
from gan.run.grids import image_grid

logger = logging.getLogger(__name__)

IMAGE_METRICS = ("class_coverage", "class_kl", "mean_confidence", "frechet_distance")
MODE_METRICS = ("modes", "hq_fraction", "reverse_kl")
SCATTER_SIZE = 320
_BACKGROUND, _MODE_COLOUR, _HQ_COLOUR, _OFF_COLOUR = (255, 255, 255), (0, 160, 0), (31, 119, 180), (214, 39, 40)


class PointData:
    """An endless, resumable stream of 2D mixture batches, float32 (N, 2, 1, 1): step s's batch depends on (seed, s)
    only."""

    channels = 2
    num_images = None  # an endless stream: gan.config.schema rejects train.epochs for 2D data

    def __init__(self, name: str, batch_size: int, seed: int) -> None:
        self.mixture = get_mixture(name)
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size={batch_size!r} is not allowed: use an integer >= 1")
        self.batch_size = batch_size
        self.seed = seed

    def _draw(self, n: int, step: int, purpose: Purpose) -> np.ndarray:
        points = sample_mixture(self.mixture.name, n, stream(self.seed, step, purpose))
        return points.reshape(n, 2, 1, 1)

    def batch(self, step: int) -> np.ndarray:
        """The training batch of global step `step`."""
        return self._draw(self.batch_size, step, Purpose.POINTS)

    def batches(self, start_step: int = 0) -> Iterator[np.ndarray]:
        """Batches for steps start_step, start_step + 1, ... forever."""
        step = start_step
        while True:
            yield self.batch(step)
            step += 1

    def sample(self, n: int) -> np.ndarray:
        """n real points (for samples/real.png), the same for every run of a seed."""
        return self._draw(n, 0, Purpose.REAL_POINTS)

    def fingerprint(self) -> dict:
        """The mixture's identity (drawn from code: nothing on disk can change under a run)."""
        return {"dataset": self.mixture.name}

    def new_unreadable(self) -> list[tuple[str, str]]:
        """Drawn points never become unreadable."""
        return []


def as_points(samples: np.ndarray) -> np.ndarray:
    """Generator output (N, 2, 1, 1) -> points (N, 2)."""
    if samples.ndim != 4 or samples.shape[1:] != (2, 1, 1):
        raise ValueError(f"2D samples must have shape (N, 2, 1, 1), got {samples.shape}")
    return samples.reshape(-1, 2)


def scatter_plot(points: np.ndarray, mixture: Mixture, size: int = SCATTER_SIZE) -> np.ndarray:
    """HWC uint8 picture of points (N, 2) over the mixture's modes.

    Green circles mark each mode's high-quality disc (radius 3 std, at least 3 pixels); high-quality points
    are blue, the others red; points outside the frame (the modes' extent plus a margin) sit on its edge.
    """
    half = float(np.abs(mixture.means).max()) * 1.25 + 10 * mixture.std
    scale = (size - 1) / (2 * half)

    def pixel(xy: np.ndarray) -> np.ndarray:
        clipped = np.clip(np.nan_to_num(xy, nan=0.0), -half, half)
        return np.stack([(clipped[:, 0] + half) * scale, (half - clipped[:, 1]) * scale], axis=1)

    image = Image.new("RGB", (size, size), _BACKGROUND)
    draw = ImageDraw.Draw(image)
    distances = np.linalg.norm(points[:, None, :].astype(np.float64) - mixture.means[None], axis=-1).min(axis=1)
    high_quality = distances < HQ_STDS * mixture.std  # NaN distances compare False: drawn as misses
    for (x, y), good in zip(pixel(points.astype(np.float64)), high_quality):
        draw.rectangle((x - 1, y - 1, x + 1, y + 1), fill=_HQ_COLOUR if good else _OFF_COLOUR)
    radius = max(3.0, HQ_STDS * mixture.std * scale)
    for x, y in pixel(mixture.means):  # drawn last: the modes stay visible under the points
        draw.ellipse((x - radius, y - radius, x + radius, y + radius), outline=_MODE_COLOUR, width=2)
    return np.asarray(image)


def sample_picture(data_name: str) -> Callable[[np.ndarray], np.ndarray]:
    """What a run's sample grids draw for data `data_name`, without loading the data: a scatter plot over the
    mixture's modes for 2D points, an image grid otherwise (the tasks' `picture`, generate.py)."""
    if data_name in POINT_DATASETS:
        mixture = get_mixture(data_name)
        return lambda samples: scatter_plot(as_points(samples), mixture)
    return image_grid


class Task(Protocol):
    """The per-data-kind parts of a run."""

    data: ImageData | PointData
    metric_names: tuple[str, ...]  # empty: this data has no quality metrics
    default_objective: str

    def picture(self, samples: np.ndarray) -> np.ndarray: ...

    def metrics(self, samples: np.ndarray) -> dict[str, float]: ...

    def prepare(self, say: Callable[[str], None]) -> None: ...


SOURCE_SIDES = {"mnist": 28, "fashion_mnist": 28}  # the side of each fixed-size dataset's images
MAX_UPSCALING = 4  # a model side more than this many times the data's gets a warning
SMALLEST_SIDE = 32  # model=dcgan32's image side: the cost of a larger model is counted against it


def warn_upscaling(conf: Config) -> None:
    """Warn when the model's image side is far above the data's (model=dcgan128 on 28x28 digits): the images are
    upscaled, adding pixels but no detail, and every step costs about (side / 32)^2 times dcgan32's memory and time."""
    side, size = SOURCE_SIDES.get(conf.data.name), conf.model.image_size
    if side is None or size <= MAX_UPSCALING * side:
        return
    cost = (size / SMALLEST_SIDE) ** 2
    logger.warning("model.image_size=%d upscales data=%s's %dx%d images %.1fx per side: no detail is added, while "
                   "each step costs about %.0fx the memory and time of model.image_size=%d (model=dcgan%d); pick a "
                   "model near the data's size, or data=folder with larger images", size, conf.data.name, side, side,
                   size / side, cost, SMALLEST_SIDE, SMALLEST_SIDE)


class ImageTask:
    """Images: sample grids; for mnist, the classifier metrics of gan.metrics.sample_quality.image_metrics."""

    def __init__(self, conf: Config, shard_id: int = 0, num_shards: int = 1) -> None:
        warn_upscaling(conf)
        self.data = build_image_data(conf.data, image_size=conf.model.image_size, batch_size=conf.train.batch_size,
                                     seed=conf.seed, shard_id=shard_id, num_shards=num_shards)
        mnist = conf.data.name == "mnist"
        self.metric_names = IMAGE_METRICS if mnist else ()
        self.default_objective = "frechet_distance" if mnist else "loss_g"
        self._classifier = None

    def picture(self, samples: np.ndarray) -> np.ndarray:
        """A grid of NCHW images in [-1, 1]."""
        return sample_picture(self.data.name)(samples)

    def prepare(self, say: Callable[[str], None]) -> None:
        """Load the cached MNIST classifier, training it first (minutes, once per machine) if it is missing."""
        if not cache_path().exists():
            say(f"eval: training the MNIST classifier for image metrics first (about 2-6 min on 2 CPU cores, "
                f"once; cached at {cache_path()})")
        self._classifier = load_classifier()

    def metrics(self, samples: np.ndarray) -> dict[str, float]:
        """class_coverage, class_kl, mean_confidence, frechet_distance of the samples."""
        if self._classifier is None:
            raise RuntimeError("ImageTask.prepare must run before metrics")
        return image_metrics(samples, self._classifier)


class PointTask:
    """2D mixtures: scatter plots over the true modes and PacGAN's mode metrics."""

    metric_names = MODE_METRICS
    default_objective = "reverse_kl"

    def __init__(self, conf: Config) -> None:
        self.data = PointData(conf.data.name, conf.train.batch_size, conf.seed)

    def picture(self, samples: np.ndarray) -> np.ndarray:
        """Scatter plot of (N, 2, 1, 1) points over the modes."""
        return sample_picture(self.data.mixture.name)(samples)

    def prepare(self, say: Callable[[str], None]) -> None:
        """Nothing to load: the mode metrics are closed-form."""

    def metrics(self, samples: np.ndarray) -> dict[str, float]:
        """modes, hq_fraction, reverse_kl of the samples."""
        return mode_metrics(as_points(samples), self.data.mixture.name)


def build_task(conf: Config, shard_id: int = 0, num_shards: int = 1) -> ImageTask | PointTask:
    """The task of `conf.data.name`: PointTask for 2D mixtures, ImageTask (reading data shard `shard_id`) otherwise."""
    return PointTask(conf) if conf.data.name in POINT_DATASETS else ImageTask(conf, shard_id, num_shards)
