"""Forward alignment of the custom LeakyReLU kernel with the numpy reference (ops.reference)."""
import logging

import mindspore as ms
import numpy as np
import pytest
from leaky_relu_cases import DTYPES, SLOPES, assert_bitwise, boundary_values, random_values

from ops import LeakyReLU, leaky_relu
from ops import reference as ref


def run(x: np.ndarray, slope: float, **kw) -> np.ndarray:
    return leaky_relu(ms.Tensor(x), slope, **kw).asnumpy()



@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("slope", SLOPES)
@pytest.mark.parametrize("formulation", ("select", "maxmin"))
def test_boundary_values_match_reference_bitwise(dtype, slope, formulation):
    x = boundary_values(dtype)
    assert_bitwise(run(x, slope, formulation=formulation), ref.forward(x, slope, formulation=formulation))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (1,), (7,), (3, 5), (2, 3, 17), (2, 3, 5, 7), (1, 3, 64, 67)])
def test_shapes_and_odd_sizes_match_reference(dtype, shape):
    x = random_values(dtype, shape)
    y = run(x, 0.2)
    assert y.shape == shape and y.dtype == dtype
    assert_bitwise(y, ref.forward(x, 0.2))


@pytest.mark.parametrize("dtype", DTYPES)
def test_multithreaded_large_tensor_matches_reference(dtype, monkeypatch):
    # Several tiles per core and a tail that is no multiple of any block size.
    monkeypatch.setenv("LRELU_NUM_THREADS", "2")
    x = random_values(dtype, (1_000_003,), seed=1)
    assert_bitwise(run(x, 0.01), ref.forward(x, 0.01))


@pytest.mark.parametrize("dtype", DTYPES)
def test_graph_mode_keeps_subnormals_bitwise(dtype):
    # MindSpore's graph executor threads flush subnormals (FTZ/DAZ); the kernels switch that off while they run.
    x = np.concatenate([boundary_values(dtype), np.array([-1e-39, -2e-38, -1e-6, -1e-5], dtype)])

    @ms.jit
    def forward(t):
        return leaky_relu(t, 0.01)

    assert_bitwise(forward(ms.Tensor(x)).asnumpy(), ref.forward(x, 0.01))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("formulation", ("select", "maxmin"))
def test_inplace_writes_the_result_over_the_input(dtype, formulation):
    x = np.concatenate([boundary_values(dtype), random_values(dtype, (1001,))])
    t = ms.Tensor(x.copy())
    y = leaky_relu(t, 0.2, inplace=True, formulation=formulation)
    assert y.data_ptr() == t.data_ptr()
    assert_bitwise(t.asnumpy(), ref.forward(x, 0.2, formulation=formulation))


def test_inplace_in_graph_mode_returns_the_result_and_leaves_the_intermediate():
    # In a graph the result is a new tensor and nothing is written (docs/operator.md "inplace"; views:
    # tests/ops/test_inplace_views.py).
    x = np.concatenate([boundary_values(np.float32), random_values(np.float32, (1001,))])
    x = x[~((x != 0) & (np.abs(x) < np.finfo(np.float32).tiny))]  # MindSpore's Mul flushes subnormals

    @ms.jit
    def step(a):
        h = a * 2.0
        y = leaky_relu(h, 0.01, inplace=True)
        return y, h

    y, h = step(ms.Tensor(x))
    with np.errstate(over="ignore"):  # the boundary values include float32's largest: 2x of it is inf, as in MindSpore
        doubled = x * np.float32(2.0)
    assert_bitwise(y.asnumpy(), ref.forward(doubled, 0.01))
    assert_bitwise(h.asnumpy(), doubled)


def test_empty_tensor():
    for dtype in DTYPES:
        y = run(np.zeros((0, 3), dtype), 0.2)
        assert y.shape == (0, 3) and y.dtype == dtype


def test_pytorch_special_cases_hard_coded():
    # Observed with torch 2.13.0+cpu, F.leaky_relu, scalar and vectorised paths alike.
    x = np.array([-1.0, 2.0, 0.0, -0.0, np.nan, np.inf, -np.inf, -1e-45], np.float32)
    torch_slope0 = np.array([-0.0, 2.0, 0.0, -0.0, np.nan, np.inf, np.nan, -0.0], np.float32)
    torch_slope02 = np.array([-0.2, 2.0, 0.0, -0.0, np.nan, np.inf, -np.inf, -0.0], np.float32)
    assert_bitwise(run(x, 0.0), torch_slope0)
    assert_bitwise(run(x, 0.2), torch_slope02)


def test_formulations_bit_identical_on_finite_inputs_and_differ_on_nan_and_negative_zero():
    for dtype in DTYPES:
        x = np.concatenate([random_values(dtype, (999,)), boundary_values(dtype)])
        finite = np.isfinite(x) & ~((x == 0) & np.signbit(x))
        for slope in SLOPES:
            assert_bitwise(run(x[finite], slope), run(x[finite], slope, formulation="maxmin"))
    special = np.array([np.nan, -0.0], np.float32)
    assert_bitwise(run(special, 0.2), np.array([np.nan, -0.0], np.float32))
    assert_bitwise(run(special, 0.2, formulation="maxmin"), np.array([0.0, 0.0], np.float32))


def test_fp16_at_least_as_accurate_as_naive_fp16_math():
    x = np.concatenate([random_values(np.float16, (4096,)), -np.linspace(1, 65504, 4096).astype(np.float16)])
    exact = ref.exact_forward(x, 0.2)
    ours = np.abs(run(x, 0.2).astype(np.float64) - exact)
    naive = np.abs(np.where(x > 0, x, np.float16(0.2) * x).astype(np.float64) - exact)
    assert np.all(ours <= naive)
    assert ours.max() < naive.max()


def test_fp16_finite_inputs_never_overflow_to_inf():
    x = np.array([-65504.0, 65504.0, -65472.0, -60000.0], np.float16)
    for slope in SLOPES:
        assert np.all(np.isfinite(run(x, slope)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_clamp_limits_output_and_keeps_nan(dtype):
    x = np.array([-1000.0, -300.0, -10.0, 0.0, 10.0, 255.9, 300.0, np.inf, -np.inf, np.nan], dtype)
    y = run(x, 1.0, clamp=256.0)
    assert_bitwise(y, ref.forward(x, 1.0, clamp=256.0))
    assert np.nanmax(np.abs(y)) <= 256 and np.isnan(y[-1])


def test_ms_builtin_agrees_where_semantics_agree():
    x = random_values(np.float32, (257,))
    x = x[x != 0]
    builtin = ms.ops.leaky_relu(ms.Tensor(x), 0.2).asnumpy()
    np.testing.assert_array_equal(run(x, 0.2), builtin)


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), float("inf"), "0.2", None, True])
def test_bad_slope_names_value_and_range(bad):
    with pytest.raises(ValueError, match=r"negative_slope=.*0 <= negative_slope <= 1"):
        leaky_relu(ms.Tensor(np.ones(3, np.float32)), bad)
    with pytest.raises(ValueError, match=r"negative_slope="):
        LeakyReLU(bad)


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), "256"])
def test_bad_clamp_names_value_and_range(bad):
    with pytest.raises(ValueError, match=r"clamp=.*None or a number > 0"):
        leaky_relu(ms.Tensor(np.ones(3, np.float32)), 0.2, clamp=bad)


@pytest.mark.parametrize("dtype", [ms.int32, ms.float64, ms.bool_])
def test_non_float_tensor_raises_type_error(dtype):
    with pytest.raises(TypeError, match="float32 and float16"):
        leaky_relu(ms.Tensor(np.ones(3), dtype), 0.2)


def test_non_tensor_and_bad_options_raise():
    with pytest.raises(TypeError, match="mindspore.Tensor, got ndarray"):
        leaky_relu(np.ones(3, np.float32), 0.2)
    with pytest.raises(ValueError, match="formulation='fast' is not one of"):
        leaky_relu(ms.Tensor(np.ones(3, np.float32)), 0.2, formulation="fast")
    with pytest.raises(ValueError, match="inplace=True cannot be combined with clamp=256"):
        LeakyReLU(0.2, clamp=256.0, inplace=True)


def test_layer_logs_slope_once_and_has_readable_repr(caplog):
    with caplog.at_level(logging.INFO, logger="ops"):
        layer = LeakyReLU(0.2, clamp=256.0)
        layer(ms.Tensor(np.ones(3, np.float32)))
        layer(ms.Tensor(np.ones(3, np.float32)))
    assert [r.getMessage() for r in caplog.records] == ["LeakyReLU: negative_slope=0.2"]
    assert repr(layer) == "LeakyReLU(negative_slope=0.2, clamp=256.0, inplace=False, formulation='select')"


def test_optional_torch_cross_check():
    torch = pytest.importorskip("torch", reason="torch is an optional cross-check, not a dependency")
    for dtype, tdtype in ((np.float32, torch.float32), (np.float16, torch.float16)):
        x = np.concatenate([boundary_values(dtype), random_values(dtype, (1000,))])
        for slope in SLOPES:
            expected = torch.nn.functional.leaky_relu(torch.from_numpy(x).to(tdtype), slope).numpy()
            assert_bitwise(run(x, slope), expected)
