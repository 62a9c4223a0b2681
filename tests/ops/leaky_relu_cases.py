"""Shared data and assertions for the LeakyReLU alignment tests."""
import ml_dtypes
import numpy as np

from ops import reference as ref
from tests.helpers import BF16, as_numpy  # noqa: F401 (re-exported for the op tests)

SLOPES = (0.0, 0.01, 0.2, 1.0)
DTYPES = (np.float32, np.float16)


def boundary_values(dtype) -> np.ndarray:
    """Positives, negatives, +-0, subnormals, fp16 max/min-normal neighbours, huge values, NaN, +-inf."""
    info = ml_dtypes.finfo(dtype) if dtype == BF16 else np.finfo(dtype)
    vals = [1.0, -1.0, 0.5, -0.5, 3.0, -7.25, 0.0, -0.0, info.tiny, -info.tiny,
            info.smallest_subnormal, -info.smallest_subnormal, -3 * info.smallest_subnormal,
            65504.0, -65504.0, 65503.0 if dtype == np.float32 else 65472.0, -6.1035156e-05, 6.1035156e-05,
            float(info.max), -float(info.max), np.nan, -np.nan, np.inf, -np.inf]
    return np.array(vals, dtype=dtype)


def random_values(dtype, shape, seed=0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * 100).astype(dtype)


def bits_of(a: np.ndarray) -> np.ndarray:
    """The raw bits of a float array (uint16 for 2-byte dtypes, uint32 for float32)."""
    return a.view(np.uint16 if a.dtype.itemsize == 2 else np.uint32)


def assert_bitwise(actual: np.ndarray, expected: np.ndarray) -> None:
    """Same dtype, shape and bits (NaN payloads aside); reports max errors on failure."""
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    same = bits_of(actual) == bits_of(expected)
    same |= np.isnan(actual) & np.isnan(expected)
    if not same.all():
        bad = np.flatnonzero(~same)[:5]
        raise AssertionError(f"{(~same).sum()} elements differ, e.g. at {bad}: {actual.flat[bad]} vs "
                             f"{expected.flat[bad]}; max errors {ref.max_errors(actual, expected)}")
