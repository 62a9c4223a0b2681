"""MindSpore side of the Ascend C LeakyReLU (ops/csrc/ascendc): the Custom primitive and its bprop.

Untested here: there is no CANN toolkit or Ascend device on the development machine (docs/tiling.md).
Build and install the op package first (scripts/build_ascend_ops.sh --install DIR) and export
ASCEND_CUSTOM_OPP_PATH=DIR/vendors/customize; ops.api selects this primitive when
device_target == "Ascend".
"""

from __future__ import annotations

import functools

from mindspore import ops as msops
from mindspore.ops import CustomRegOp, DataType

from ._custom import same

OP_NAME = "LeakyReluCustom"
GRAD_OP_NAME = "LeakyReluGradCustom"
NO_CLAMP = -1.0  # the op's "clamp" attribute: any negative value disables clamping

_DTYPES = (DataType.F32_Default, DataType.F16_Default, DataType.BF16_Default)


def reg_info(op_name: str, inputs: tuple[str, ...], output: str, negative_slope: float, clamp: float) -> dict:
    """Registration matching the op definition in op_host/leaky_relu_custom.cpp (names, dtypes, ND, attrs)."""
    reg = CustomRegOp(op_name)
    for index, name in enumerate(inputs):
        reg = reg.input(index, name)
    reg = reg.output(0, output)
    for dtype in _DTYPES:
        reg = reg.dtype_format(*([dtype] * (len(inputs) + 1)))
    reg = reg.attr("negative_slope", "required", "float", value=str(negative_slope))
    reg = reg.attr("clamp", "optional", "float", value=str(clamp))
    return reg.target("Ascend").get_op_info()


def _custom(op_name: str, inputs: tuple[str, ...], output: str, negative_slope: float, clamp: float,
            bprop=None) -> msops.Custom:
    """One Custom primitive of the installed op; the attributes are also set on the primitive itself,
    because a CustomRegOp name keeps the attribute values of its first registration (MindSpore 2.10:
    a second Custom with the same op name and another value silently runs with the first)."""
    prim = msops.Custom(op_name, out_shape=same, out_dtype=same, func_type="aot", bprop=bprop,
                        reg_info=reg_info(op_name, inputs, output, negative_slope, clamp))
    prim.add_prim_attr("negative_slope", negative_slope)
    prim.add_prim_attr("clamp", clamp)
    return prim


@functools.lru_cache(maxsize=None)
def ascend_leaky_relu_primitive(negative_slope: float, clamp: float | None = None) -> msops.Custom:
    """Forward primitive y = LeakyReluCustom(x) with its LeakyReluGradCustom bprop, cached per configuration.

    Arguments are the already-checked values of ops.api (slope in [0, 1], clamp None or > 0).
    """
    clamp_attr = NO_CLAMP if clamp is None else float(clamp)
    grad = _custom(GRAD_OP_NAME, ("dy", "x"), "dx", negative_slope, clamp_attr)

    def bprop(x, out, dout):
        return (grad(dout, x),)

    return _custom(OP_NAME, ("x",), "y", negative_slope, clamp_attr, bprop=bprop)
