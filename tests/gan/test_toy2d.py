"""gan.data.points: the PacGAN ring8 / grid25 constants and the mixture sampler."""
import itertools

import numpy as np
import pytest

from gan.data.points import GRID25, MIXTURES, RING8, get_mixture, sample_mixture


def test_ring8_constants() -> None:
    angles = np.arctan2(RING8.means[:, 1], RING8.means[:, 0]) % (2 * np.pi)
    np.testing.assert_allclose(np.linalg.norm(RING8.means, axis=1), 1.0)
    np.testing.assert_allclose(angles, 2 * np.pi * np.arange(8) / 8, atol=1e-12)
    assert RING8.std == 0.01 and RING8.num_modes == 8


def test_grid25_constants() -> None:
    expected = set(itertools.product((-4.0, -2.0, 0.0, 2.0, 4.0), repeat=2))
    assert {tuple(m) for m in GRID25.means.tolist()} == expected
    assert GRID25.std == 0.05 and GRID25.num_modes == 25


def test_constants_are_read_only() -> None:
    with pytest.raises(ValueError):
        RING8.means[0, 0] = 5.0


@pytest.mark.parametrize("name", sorted(MIXTURES))
def test_samples_follow_the_mixture(name: str) -> None:
    mixture = get_mixture(name)
    n = 20_000
    points = sample_mixture(name, n, np.random.default_rng(0))
    assert points.shape == (n, 2) and points.dtype == np.float32
    offsets = points[:, None, :] - mixture.means[None]
    nearest = np.linalg.norm(offsets, axis=-1).argmin(axis=1)
    residual = points - mixture.means[nearest]
    np.testing.assert_allclose(residual.std(axis=0), mixture.std, rtol=0.03)
    np.testing.assert_allclose(residual.mean(axis=0), 0.0, atol=4 * mixture.std / np.sqrt(n))
    counts = np.bincount(nearest, minlength=mixture.num_modes)
    expected = n / mixture.num_modes
    assert np.all(np.abs(counts - expected) < 5 * np.sqrt(expected))  # uniform mode prior


def test_same_rng_state_gives_same_samples() -> None:
    a = sample_mixture("ring8", 100, np.random.default_rng(7))
    b = sample_mixture("ring8", 100, np.random.default_rng(7))
    c = sample_mixture("ring8", 100, np.random.default_rng(8))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_bad_arguments_are_named() -> None:
    with pytest.raises(ValueError, match="'ring9'.*grid25.*ring8"):
        get_mixture("ring9")
    with pytest.raises(ValueError, match="-1"):
        sample_mixture("grid25", -1, np.random.default_rng(0))
    with pytest.raises(ValueError, match="2.5"):
        sample_mixture("grid25", 2.5, np.random.default_rng(0))
