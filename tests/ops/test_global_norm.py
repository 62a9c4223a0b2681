"""ops.global_norm: the L2 norm over a list of tensors in one kernel, against numpy in float64."""
import mindspore as ms
import numpy as np
import pytest

from ops import global_norm

SHAPES = [(3,), (64, 3, 4, 4), (70001,), (1,), (2, 65536 + 9)]  # tails, several chunks of 2^16, one element


def arrays(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) * 10.0 ** rng.integers(-3, 3) for s in SHAPES]


def want(xs: list[np.ndarray]) -> float:
    return float(np.sqrt(sum(np.sum(x.astype(np.float64) ** 2) for x in xs)))


def test_matches_numpy_in_pynative_and_graph_mode():
    xs = arrays()
    got = global_norm([ms.Tensor(x) for x in xs])
    assert got.shape == () and got.dtype == ms.float32
    np.testing.assert_allclose(float(got.asnumpy()), want(xs), rtol=1e-6)
    @ms.jit
    def jitted(a, b, c, d, e):
        return global_norm((a, b, c, d, e))
    np.testing.assert_allclose(float(jitted(*[ms.Tensor(x) for x in xs]).asnumpy()), want(xs), rtol=1e-6)


def test_float16_tensors_and_mixed_dtypes():
    xs = arrays(1)
    halves = [x.astype(np.float16) for x in xs[:2]]
    got = global_norm([ms.Tensor(h) for h in halves] + [ms.Tensor(x) for x in xs[2:]])
    np.testing.assert_allclose(float(got.asnumpy()), want(halves + xs[2:]), rtol=1e-6)


def test_result_does_not_depend_on_the_thread_count(monkeypatch):
    tensors = [ms.Tensor(x) for x in arrays(2)]
    results = set()
    for threads in ("1", "2", "3"):
        monkeypatch.setenv("LRELU_NUM_THREADS", threads)
        results.add(global_norm(tensors).asnumpy().tobytes())
    assert len(results) == 1


def test_no_float32_overflow_and_nonfinite_values_propagate():
    big = np.full(1000, 1e20, np.float32)  # 1e40 per square overflows float32; the norm 3.2e21 does not
    np.testing.assert_allclose(float(global_norm([ms.Tensor(big)]).asnumpy()), 1e20 * np.sqrt(1000), rtol=1e-6)
    for bad, expect in ((np.inf, np.isposinf), (np.nan, np.isnan)):
        x = np.ones(70001, np.float32)
        x[70000] = bad
        assert expect(float(global_norm([ms.Tensor(np.ones(5, np.float32)), ms.Tensor(x)]).asnumpy()))


def test_bad_inputs_name_the_problem():
    with pytest.raises(TypeError, match="float32 and float16 tensors, got dtype Int32 at position 1"):
        global_norm([ms.Tensor(np.ones(3, np.float32)), ms.Tensor(np.ones(3, np.int32))])
    with pytest.raises(ValueError, match="at least one tensor"):
        global_norm([])
