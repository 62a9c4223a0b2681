"""2D Gaussian mixtures of the PacGAN mode-collapse benchmark (ring8, grid25), with their exact constants.

ring8: 8 modes on the unit circle at angles 2*pi*k/8, std 0.01.
grid25: 25 modes at {-4, -2, 0, 2, 4}^2, std 0.05.
Every mode has the same prior (1/K); the components are isotropic Gaussians.
(Lin et al., "PacGAN: The power of two samples in generative adversarial networks", 2018, section 5.)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Mixture:
    """An equal-weight mixture of isotropic 2D Gaussians: `means` (K, 2) and one shared `std`."""

    name: str
    means: np.ndarray
    std: float

    @property
    def num_modes(self) -> int:
        """K, the number of mixture components."""
        return len(self.means)


def _frozen(array: np.ndarray) -> np.ndarray:
    """A read-only float64 copy, so the shared constants cannot be edited by accident."""
    out = np.array(array, dtype=np.float64)
    out.flags.writeable = False
    return out


_ANGLES = 2.0 * np.pi * np.arange(8) / 8
_GRID = np.array([-4.0, -2.0, 0.0, 2.0, 4.0])

RING8 = Mixture("ring8", _frozen(np.stack([np.cos(_ANGLES), np.sin(_ANGLES)], axis=1)), 0.01)
GRID25 = Mixture("grid25", _frozen(np.stack(np.meshgrid(_GRID, _GRID, indexing="ij"), axis=-1).reshape(-1, 2)), 0.05)
MIXTURES: dict[str, Mixture] = {m.name: m for m in (RING8, GRID25)}


def get_mixture(name: str) -> Mixture:
    """The mixture called `name`; raises ValueError naming the allowed names otherwise."""
    if name not in MIXTURES:
        raise ValueError(f"2D dataset {name!r} is not one of {sorted(MIXTURES)}")
    return MIXTURES[name]


def sample_mixture(name: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """n float32 points (n, 2) from mixture `name`: a uniform mode per point plus Gaussian noise."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"number of 2D samples must be an integer >= 0, got {n!r}")
    mixture = get_mixture(name)
    modes = rng.integers(mixture.num_modes, size=n)
    points = mixture.means[modes] + mixture.std * rng.standard_normal((n, 2))
    return points.astype(np.float32)
