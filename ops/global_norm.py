"""The L2 norm over a list of tensors as one CPU kernel (ops/csrc/cpu/global_norm.cc) through ops.Custom aot.

A training step takes the global norm of all its gradients (finite check, clipping, logs); composed from
MindSpore ops that is a Square and a ReduceSum per tensor plus an AddN (2k + 1 kernels for k tensors), here
one kernel. Squares are summed in float64 over fixed chunks, so the result does not depend on the thread
count and a float32 square cannot overflow; inf and NaN propagate. Not differentiable (a norm of gradients).
"""
from __future__ import annotations

import functools
from typing import Sequence

import mindspore as ms
import numpy as np
from mindspore import ops as msops
from mindspore.ops import constexpr

from . import build
from ._custom import FLOAT_DTYPES, num_threads


@functools.lru_cache(maxsize=None)
def _kernel(threads: int) -> tuple[msops.Custom, ms.Tensor]:
    op = msops.Custom(f"{build.library_path()}:GlobalNorm", out_shape=lambda *_: [1],
                      out_dtype=lambda *_: ms.float32, func_type="aot")
    return op, ms.Tensor(np.array([threads], np.int32))


@constexpr
def _global_norm_kernel(dtypes: tuple) -> tuple[msops.Custom, ms.Tensor]:
    """Checked dtypes -> (kernel, threads tensor); constexpr so it also runs inside ms.jit."""
    if not dtypes:
        raise ValueError("global_norm needs at least one tensor, got none")
    for i, dtype in enumerate(dtypes):
        if dtype not in FLOAT_DTYPES:
            raise TypeError(f"global_norm takes float32 and float16 tensors, got dtype {dtype} at position {i}")
    return _kernel(num_threads())


def global_norm(tensors: Sequence[ms.Tensor]) -> ms.Tensor:
    """sqrt(sum of x**2 over every element of every tensor), float32 of shape (); CPU only."""
    op, threads = _global_norm_kernel(tuple(t.dtype for t in tensors))
    return op(*tensors, threads).reshape(())  # the kernel writes shape (1,): a () Custom output is a scalar in graphs
