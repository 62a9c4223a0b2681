"""The project's random streams: every draw is np.random.default_rng([seed, step, purpose, ...]), a pure function
of its key, so a resumed run replays exactly the batches, latents and updates of an uninterrupted one without
saving RNG states, and generate.py redraws a run's sample latents.

`Purpose` is the one registry of the purpose numbers. They are part of every run: changing or reusing one
changes all runs of a seed and breaks the bit-exact resume of runs already started, so a new stream takes a
new number (tests/test_invariants.py pins them).
"""
from __future__ import annotations

from enum import IntEnum, unique
from typing import Iterator

import numpy as np


@unique
class Purpose(IntEnum):
    """What a stream draws (the third word of its key unless said otherwise)."""

    Z = 1  # a training step's latents (one stream per D step after the first: a fourth word)
    FIXED_Z = 2  # the run's sample-grid latents, fixed for the whole run (generate.py, export.py)
    INIT_G = 3  # G's initial weights
    INIT_D = 4  # D's initial weights
    EVAL_Z = 5  # the evaluation latents (gan.training.evaluation, scripts/quantize.py)
    GP_EPS = 6  # the gradient penalty's mixing weights
    RECYCLE = 7  # ReDo's fresh weights of recycled channels (gan.diagnostics.recycle: a fourth word per layer)
    CALIBRATION = 0x18  # scripts/quantize.py's calibration latents
    POINTS = 0x2D0  # a training batch of 2D points (gan.training.tasks.PointData)
    REAL_POINTS = 0x2D1  # the real points of samples/real.png
    EPOCH_ORDER = 0x0DA7A  # the image order of an epoch (gan.data.sources; the step word is the epoch)
    SHAPES = 0x5A9E5  # a procedural shapes image (gan.data.sources; the step word is the image index)
    CLASSIFIER_INIT = 0x1A17  # the MNIST classifier's initial weights (gan.metrics.classifier; key [seed, purpose])
    CLASSIFIER_AUGMENT = 0xC1A55  # its shift augmentation (the step word is the epoch)
    FID_Z = 8  # the latents of the standard metrics' samples (gan.training.evaluation; step word 0)
    KID_DRAWS = 0x61D  # the members of KID's random subsets (gan.metrics.fid; key [seed, purpose])


def stream(seed: int, step: int, purpose: Purpose, *more: int) -> np.random.Generator:
    """The generator of key (seed, step, purpose, *more)."""
    return np.random.default_rng([seed, step, purpose, *more])


def latents(seed: int, step: int, purpose: Purpose, n: int, nz: int, d_step: int = 0) -> np.ndarray:
    """Standard-normal latents (n, nz, 1, 1), a pure function of (seed, step, purpose[, D step > 0])."""
    return stream(seed, step, purpose, *([d_step] if d_step else [])).standard_normal((n, nz, 1, 1),
                                                                                        dtype=np.float32)


def mixing_weights(seed: int, step: int, n: int, d_step: int = 0) -> np.ndarray:
    """The gradient penalty's per-sample weights eps ~ U(0, 1), (n, 1, 1, 1), a pure function of (seed, step)."""
    return stream(seed, step, Purpose.GP_EPS, d_step).random((n, 1, 1, 1), dtype=np.float32)


def fixed_latent_batches(seed: int, n: int, nz: int, batch: int) -> Iterator[np.ndarray]:
    """fixed_latents(seed, n, nz) in consecutive batches of at most `batch` (the same values), never all n at once."""
    rng = stream(seed, 0, Purpose.FIXED_Z)
    for start in range(0, n, batch):
        yield rng.standard_normal((min(batch, n - start), nz, 1, 1), dtype=np.float32)


def fixed_latents(seed: int, n: int, nz: int) -> np.ndarray:
    """The latent batch of a run's sample grids: fixed for the whole run, across resumes and in generate.py."""
    return latents(seed, 0, Purpose.FIXED_Z, n, nz)
