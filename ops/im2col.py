"""im2col / col2im for the gemm convolutions: C++ CPU kernels (ops/csrc/cpu/im2col.cc) through ops.Custom aot.

`im2col(x, k, s, p)` turns an NCHW image batch (N, C, H, W) into the patch matrix (C*K*K, N*Ho*Wo) whose
row (c, ki, kj) and column (n, oy, ox) hold x[n, c, s*oy + ki - p, s*ox + kj - p] (0 in the padding);
`col2im(cols, (N, C, H, W), k, s, p)` is its adjoint: it adds every entry back onto its image position.
Each is the other's gradient, so the pair serves Conv2d and Conv2dTranspose forward and backward.
"""
from __future__ import annotations

import functools

import mindspore as ms
import numpy as np
from mindspore import ops as msops
from mindspore.ops import constexpr

from . import build
from .api import FLOAT_DTYPES, num_threads


def conv_output_size(size: int, kernel: int, stride: int, padding: int) -> int:
    """Output length of a convolution along one axis; ValueError naming the values when it would be < 1."""
    span = size + 2 * padding - kernel
    if span < 0:
        raise ValueError(f"kernel_size={kernel} does not fit an input of size {size} with padding={padding}")
    return span // stride + 1


def check_geometry(kernel: int, stride: int, padding: int) -> None:
    """ValueError naming the value unless kernel >= 1, stride >= 1 and padding >= 0 are ints."""
    for name, value, low in (("kernel_size", kernel, 1), ("stride", stride, 1), ("padding", padding, 0)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ValueError(f"{name}={value!r} is not allowed: it must be an int >= {low}")


@functools.lru_cache(maxsize=None)
def kernels(image_shape: tuple[int, int, int, int], kernel: int, stride: int, padding: int,
            threads: int) -> tuple[msops.Custom, msops.Custom, ms.Tensor, tuple[int, int]]:
    """(im2col, col2im, geometry tensor, cols shape) for one image shape and geometry; each op's bprop is the other."""
    check_geometry(kernel, stride, padding)
    n, c, h, w = image_shape
    cols_shape = [c * kernel * kernel,
                  n * conv_output_size(h, kernel, stride, padding) * conv_output_size(w, kernel, stride, padding)]
    lib = build.library_path()
    geometry = ms.Tensor(np.array([kernel, stride, padding, threads], np.int32))

    def to_cols_bprop(x, params, out, dout):
        return to_image(dout, params), msops.zeros_like(params)

    def to_image_bprop(cols, params, out, dout):
        return to_cols(dout, params), msops.zeros_like(params)

    to_cols = msops.Custom(f"{lib}:Im2Col", out_shape=lambda *_: cols_shape, out_dtype=lambda x, _: x,
                           func_type="aot", bprop=to_cols_bprop)
    to_image = msops.Custom(f"{lib}:Col2Im", out_shape=lambda *_: list(image_shape), out_dtype=lambda x, _: x,
                            func_type="aot", bprop=to_image_bprop)
    # MindSpore reuses the bprop graph of the first primitive equal to this one (same attributes): a distinct
    # attribute per geometry keeps each pair's bprop, whose closure holds its own output shapes.
    for prim in (to_cols, to_image):
        prim.add_prim_attr("conv_geometry", (*image_shape, kernel, stride, padding))
    return to_cols, to_image, geometry, tuple(cols_shape)


@constexpr
def _resolve(image_shape: tuple, kernel: int, stride: int, padding: int,
             dtype: ms.Type) -> tuple[msops.Custom, msops.Custom, ms.Tensor, tuple[int, int]]:
    """Checked shape and dtype -> cached kernels; constexpr so it also runs inside ms.jit."""
    if dtype not in FLOAT_DTYPES:
        raise TypeError(f"im2col/col2im support float32 and float16, got dtype {dtype}")
    if len(image_shape) != 4:
        raise ValueError(f"im2col/col2im need an (N, C, H, W) image shape, got {image_shape}")
    return kernels(tuple(int(d) for d in image_shape), kernel, stride, padding, num_threads())


@constexpr
def _check_cols_shape(got: tuple, want: tuple, image_shape: tuple) -> None:
    """ValueError naming both shapes unless cols has the shape im2col gives for image_shape."""
    if tuple(got) != tuple(want):
        raise ValueError(f"col2im to image shape {tuple(image_shape)} needs cols of shape {tuple(want)}, "
                         f"got {tuple(got)}")


def im2col(x: ms.Tensor, kernel: int, stride: int, padding: int) -> ms.Tensor:
    """Patch matrix (C*K*K, N*Ho*Wo) of the NCHW batch x for a square kernel, stride and zero padding."""
    to_cols, _, geometry, _ = _resolve(x.shape, kernel, stride, padding, x.dtype)
    return to_cols(x, geometry)


def col2im(cols: ms.Tensor, image_shape: tuple[int, int, int, int], kernel: int, stride: int,
           padding: int) -> ms.Tensor:
    """The NCHW batch of shape image_shape that sums each entry of cols (C*K*K, N*Ho*Wo) onto its position."""
    _, to_image, geometry, cols_shape = _resolve(image_shape, kernel, stride, padding, cols.dtype)
    _check_cols_shape(cols.shape, cols_shape, image_shape)
    return to_image(cols, geometry)
