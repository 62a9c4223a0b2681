"""Quantised LeakyReLU: every one of the 256 codes against ONNX Runtime's com.microsoft.QLinearLeakyRelu
itself and against the numpy reference, both dtypes, several (scale, zero point) pairs; parameter errors."""
import math

import mindspore as ms
import numpy as np
import pytest

from ops import QuantizedLeakyReLU, quantized_leaky_relu
from ops import reference as ref

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

NP_DTYPES = {"int8": np.int8, "uint8": np.uint8}
# (negative_slope, in_scale, in_zero_point, out_scale, out_zero_point) per dtype; zero points of int8 are
# shifted by -128 below. Cases: identity grid (slope 0.5 makes exact .5 ties: round half to even), wider
# and narrower output grids (saturation at both ends), extreme zero points, tiny and subnormal-product scales.
PARAMS = [
    (0.5, 1.0, 128, 1.0, 128),
    (0.2, 0.05, 131, 0.04, 126),
    (0.01, 0.1, 0, 0.03, 200),
    (0.2, 0.02, 255, 0.11, 255),
    (1.0, 0.7, 64, 0.35, 0),
    (0.0, 0.013, 100, 0.013, 100),
    (0.3, 3.0e-3, 140, 1.7e-3, 90),
    (0.2, 1.0e-38, 128, 3.0e-39, 128),
    (0.1, 1.0e3, 128, 7.5e3, 130),
]


def dtype_params(dtype: str, params: tuple) -> tuple:
    """The parameter row with zero points moved to int8's range for int8."""
    slope, s_in, zp_in, s_out, zp_out = params
    shift = 128 if dtype == "int8" else 0
    return slope, s_in, zp_in - shift, s_out, zp_out - shift


def all_codes(dtype: str) -> np.ndarray:
    return np.arange(256, dtype=np.uint8).view(NP_DTYPES[dtype])


def ort_qlinear_leaky_relu(q: np.ndarray, slope, s_in, zp_in, s_out, zp_out) -> np.ndarray:
    """Run q through a one-node ONNX model with com.microsoft.QLinearLeakyRelu in ONNX Runtime (CPU)."""
    elem = TensorProto.INT8 if q.dtype == np.int8 else TensorProto.UINT8
    inits = [helper.make_tensor("x_scale", TensorProto.FLOAT, [], [s_in]),
             helper.make_tensor("x_zp", elem, [], [zp_in]),
             helper.make_tensor("y_scale", TensorProto.FLOAT, [], [s_out]),
             helper.make_tensor("y_zp", elem, [], [zp_out])]
    node = helper.make_node("QLinearLeakyRelu", ["x", "x_scale", "x_zp", "y_scale", "y_zp"], ["y"],
                            domain="com.microsoft", alpha=slope)
    graph = helper.make_graph([node], "qlrelu", [helper.make_tensor_value_info("x", elem, list(q.shape))],
                              [helper.make_tensor_value_info("y", elem, list(q.shape))], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                    helper.make_opsetid("com.microsoft", 1)])
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": q})[0]


@pytest.mark.parametrize("dtype", NP_DTYPES)
@pytest.mark.parametrize("params", PARAMS, ids=[f"p{i}" for i in range(len(PARAMS))])
def test_all_codes_match_onnxruntime_and_reference(dtype, params):
    p = dtype_params(dtype, params)
    q = all_codes(dtype)
    expected = ort_qlinear_leaky_relu(q, *p)
    np.testing.assert_array_equal(ref.quantized_leaky_relu(q, *p), expected)
    actual = quantized_leaky_relu(ms.Tensor(q), *p).asnumpy()
    assert actual.dtype == q.dtype
    np.testing.assert_array_equal(actual, expected)


@pytest.mark.parametrize("dtype", NP_DTYPES)
def test_round_half_to_even_and_saturation(dtype):
    lo, hi = ref.QUANT_RANGES[dtype]
    zp = 0 if dtype == "int8" else 128
    q = np.array([zp + 1, zp + 3, zp + 5, zp - 1, zp - 3, lo, hi], NP_DTYPES[dtype])
    # Identity grid, slope 1, output scale 2: (q - zp) / 2 = 0.5, 1.5, 2.5 -> 0, 2, 2 (ties to even).
    y = quantized_leaky_relu(ms.Tensor(q), 1.0, 1.0, zp, 2.0, zp).asnumpy().astype(int) - zp
    np.testing.assert_array_equal(y[:5], [0, 2, 2, 0, -2])
    # Output scale 1/4: everything beyond a quarter of the range saturates at the dtype's ends.
    y = quantized_leaky_relu(ms.Tensor(q), 1.0, 1.0, zp, 0.25, zp).asnumpy().astype(int)
    assert (y[-2], y[-1]) == (lo, hi)


@pytest.mark.parametrize("dtype", NP_DTYPES)
def test_large_tensor_all_threads_and_tails(dtype):
    # > 2^21 elements: several worker threads, 64-byte vector blocks and a scalar tail.
    q = np.random.default_rng(1).integers(0, 256, size=(2, 3, (1 << 20) // 3 + 77), dtype=np.uint8)
    q = q.view(NP_DTYPES[dtype])
    p = dtype_params(dtype, PARAMS[1])
    np.testing.assert_array_equal(quantized_leaky_relu(ms.Tensor(q), *p).asnumpy(), ref.quantized_leaky_relu(q, *p))


def test_layer_and_graph_mode():
    q = all_codes("int8")
    p = dtype_params("int8", PARAMS[1])
    layer = QuantizedLeakyReLU(ms.int8, *p)
    expected = ref.quantized_leaky_relu(q, *p)
    np.testing.assert_array_equal(layer(ms.Tensor(q)).asnumpy(), expected)

    @ms.jit
    def graph(t):
        return layer(t)

    np.testing.assert_array_equal(graph(ms.Tensor(q)).asnumpy(), expected)

    @ms.jit
    def graph_fn(t):
        return quantized_leaky_relu(t, *p)

    np.testing.assert_array_equal(graph_fn(ms.Tensor(q)).asnumpy(), expected)
    with pytest.raises(TypeError, match="built for Int8 codes, got dtype UInt8"):
        layer(ms.Tensor(all_codes("uint8")))


@pytest.mark.parametrize("name, value, match", [
    ("negative_slope", -0.1, "negative_slope"), ("negative_slope", 1.5, "negative_slope"),
    ("negative_slope", math.nan, "negative_slope"),
    ("in_scale", 0.0, "in_scale"), ("in_scale", -1.0, "in_scale"), ("in_scale", math.inf, "in_scale"),
    ("in_scale", math.nan, "in_scale"), ("in_scale", 1e-50, "in_scale"), ("in_scale", 1e37, "in_scale"),
    ("out_scale", 0.0, "out_scale"), ("out_scale", math.inf, "out_scale"), ("out_scale", "1", "out_scale"),
    ("in_zero_point", 128, "in_zero_point"), ("in_zero_point", -129, "in_zero_point"),
    ("in_zero_point", 1.0, "in_zero_point"), ("out_zero_point", 300, "out_zero_point"),
    ("out_zero_point", True, "out_zero_point"),
])
def test_bad_parameters_name_the_parameter(name, value, match):
    args = dict(negative_slope=0.2, in_scale=0.1, in_zero_point=0, out_scale=0.1, out_zero_point=0)
    args[name] = value
    with pytest.raises(ValueError, match=match):
        quantized_leaky_relu(ms.Tensor(all_codes("int8")), **args)


def test_uint8_zero_point_range_and_wrong_dtypes():
    with pytest.raises(ValueError, match=r"out_zero_point=-1 .*\[0, 255\]"):
        quantized_leaky_relu(ms.Tensor(all_codes("uint8")), 0.2, 0.1, 0, 0.1, -1)
    for bad in (np.zeros(4, np.float32), np.zeros(4, np.int32), np.zeros(4, np.int16)):
        with pytest.raises(TypeError, match="int8 and uint8"):
            quantized_leaky_relu(ms.Tensor(bad), 0.2, 0.1, 0, 0.1, 0)
    with pytest.raises(TypeError, match="mindspore.Tensor"):
        quantized_leaky_relu(all_codes("int8"), 0.2, 0.1, 0, 0.1, 0)
