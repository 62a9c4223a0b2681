"""Python mirror of ops/csrc/params.h: the field order of each kernel scalars layout, and their packing.

Scalars reach the C++ kernels as one struct of float32 fields in an int32 tensor of their bit patterns
(mixed precision casts every floating-point input of an op in a float16 cell to float16, integer inputs
never, so slopes and clamps stay exact float32). tests/ops/test_params_layout.py reads the header's
field lists back from the compiled library and compares them with LAYOUTS.
"""
from __future__ import annotations

import mindspore as ms
import numpy as np

LAYOUTS: dict[str, tuple[str, ...]] = {
    "act": ("slope", "clamp", "threads", "lower", "upper"),
    "bn_act": ("slope", "clamp", "gain", "threads", "batch_stats", "eps", "momentum", "channels_last"),
    "quantized": ("slope", "in_scale", "in_zero_point", "out_scale", "out_zero_point", "threads"),
}


def pack(layout: str, **values: float) -> ms.Tensor:
    """The layout's struct as an int32 tensor of float32 bits; unnamed fields are 0, unknown names fail."""
    fields = LAYOUTS[layout]
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise ValueError(f"{unknown} are not fields of the {layout!r} scalars layout {list(fields)}")
    row = np.array([values.get(name, 0.0) for name in fields], np.float32)
    return ms.Tensor(row.view(np.int32))
