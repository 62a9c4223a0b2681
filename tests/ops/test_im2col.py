"""ops.im2col / ops.col2im (C++ aot kernels) against numpy: values, adjointness, gradients, threads, errors.

im2col only copies, so it must match the numpy reference exactly (float32 and float16). col2im sums up to
ceil(K/S)^2 entries per image position in float32 and rounds once: float32 rtol 1e-6, float16 within one
float16 rounding of the float64 sum (rtol 1e-3).
"""
from __future__ import annotations

import mindspore as ms
import numpy as np
import pytest

from ops.im2col import col2im, conv_output_size, im2col, kernels

# (image shape N, C, H, W), kernel, stride, padding: odd sizes, stride 1-3, padding 0-2, kernel 1-4,
# and the DCGAN cases (4x4 stride 2 pad 1, and 4x4 stride 1 pad 0 on a 4x4 image: one output position).
CASES = [
    ((2, 3, 9, 10), 4, 2, 1),
    ((2, 4, 11, 8), 3, 1, 1),
    ((3, 2, 8, 13), 4, 1, 0),
    ((2, 3, 17, 9), 3, 2, 0),
    ((2, 5, 3, 3), 3, 1, 2),
    ((1, 2, 7, 7), 1, 3, 0),
    ((4, 6, 4, 4), 4, 1, 0),
    ((2, 1, 10, 6), 4, 3, 2),
]


def reference_im2col(x: np.ndarray, k: int, s: int, p: int) -> np.ndarray:
    """(C K K, N Ho Wo) patch matrix by slicing the zero-padded image."""
    n, c, h, w = x.shape
    ho, wo = conv_output_size(h, k, s, p), conv_output_size(w, k, s, p)
    padded = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    cols = np.zeros((c, k, k, n, ho, wo), x.dtype)
    for ki in range(k):
        for kj in range(k):
            window = padded[:, :, ki:ki + s * (ho - 1) + 1:s, kj:kj + s * (wo - 1) + 1:s]
            cols[:, ki, kj] = window.transpose(1, 0, 2, 3)
    return cols.reshape(c * k * k, n * ho * wo)


def reference_col2im(cols: np.ndarray, shape: tuple, k: int, s: int, p: int, dtype=np.float64) -> np.ndarray:
    """The image that adds each cols entry onto its position (in `dtype`, row (ki, kj) after row), the adjoint of
    reference_im2col."""
    n, c, h, w = shape
    ho, wo = conv_output_size(h, k, s, p), conv_output_size(w, k, s, p)
    blocks = cols.astype(dtype).reshape(c, k, k, n, ho, wo)
    padded = np.zeros((n, c, h + 2 * p, w + 2 * p), dtype)
    for ki in range(k):
        for kj in range(k):
            window = blocks[:, ki, kj].transpose(1, 0, 2, 3)
            padded[:, :, ki:ki + s * (ho - 1) + 1:s, kj:kj + s * (wo - 1) + 1:s] += window
    return padded[:, :, p:p + h, p:p + w]


def _data(shape: tuple, k: int, s: int, p: int, dtype) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng([*shape, k, s, p])
    n, c, h, w = shape
    cols_shape = (c * k * k, n * conv_output_size(h, k, s, p) * conv_output_size(w, k, s, p))
    return rng.standard_normal(shape).astype(dtype), rng.standard_normal(cols_shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("shape,k,s,p", CASES)
def test_im2col_matches_numpy_exactly(shape: tuple, k: int, s: int, p: int, dtype) -> None:
    x, _ = _data(shape, k, s, p, dtype)
    got = im2col(ms.Tensor(x), k, s, p)
    assert got.dtype == ms.Tensor(x).dtype
    np.testing.assert_array_equal(got.asnumpy(), reference_im2col(x, k, s, p))


@pytest.mark.parametrize("dtype,rtol", [(np.float32, 1e-6), (np.float16, 1e-3)])
@pytest.mark.parametrize("shape,k,s,p", CASES)
def test_col2im_matches_numpy(shape: tuple, k: int, s: int, p: int, dtype, rtol: float) -> None:
    _, cols = _data(shape, k, s, p, dtype)
    got = col2im(ms.Tensor(cols), shape, k, s, p)
    assert got.shape == shape and got.dtype == ms.Tensor(cols).dtype
    np.testing.assert_allclose(got.asnumpy().astype(np.float64), reference_col2im(cols, shape, k, s, p),
                               rtol=rtol, atol=rtol)


@pytest.mark.parametrize("shape,k,s,p", CASES)
def test_col2im_sums_float32_in_kernel_row_order(shape: tuple, k: int, s: int, p: int) -> None:
    """Each position's float32 sum takes its entries row (ki, kj) after row, as an indexed add over the rows would:
    the per-phase runs of col2im.h change the memory order of the adds, not the order of any position's sum."""
    _, cols = _data(shape, k, s, p, np.float32)
    got = col2im(ms.Tensor(cols), shape, k, s, p)
    np.testing.assert_array_equal(got.asnumpy(), reference_col2im(cols, shape, k, s, p, np.float32))


@pytest.mark.parametrize("shape,k,s,p", CASES)
def test_each_is_the_others_gradient(shape: tuple, k: int, s: int, p: int) -> None:
    """<im2col(x), c> = <x, col2im(c)>, and ms.grad of each is the other (PyNative and graph mode)."""
    x, cols = _data(shape, k, s, p, np.float32)
    tx, tc = ms.Tensor(x), ms.Tensor(cols)
    lhs = float((reference_im2col(x, k, s, p).astype(np.float64) * cols).sum())
    rhs = float((x.astype(np.float64) * reference_col2im(cols, shape, k, s, p)).sum())
    assert lhs == pytest.approx(rhs, rel=1e-9, abs=1e-9)

    def via_cols(t):
        return (im2col(t, k, s, p) * tc).sum()

    def via_image(t):
        return (col2im(t, shape, k, s, p) * tx).sum()

    for wrap in (lambda f: f, ms.jit):
        np.testing.assert_allclose(wrap(ms.grad(via_cols))(tx).asnumpy(), col2im(tc, shape, k, s, p).asnumpy(),
                                   rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(wrap(ms.grad(via_image))(tc).asnumpy(), im2col(tx, k, s, p).asnumpy())


def test_two_geometries_in_one_graph_keep_their_own_gradients() -> None:
    """MindSpore reuses the bprop of an equal primitive: each geometry must keep its own (regression test)."""
    (shape_a, ka, sa, pa), (shape_b, kb, sb, pb) = CASES[0], CASES[6]
    xa, _ = _data(shape_a, ka, sa, pa, np.float32)
    xb, _ = _data(shape_b, kb, sb, pb, np.float32)

    def loss(a, b):
        return (im2col(a, ka, sa, pa) ** 2).sum() + (im2col(b, kb, sb, pb) ** 2).sum()

    ga, gb = ms.jit(ms.grad(loss, (0, 1)))(ms.Tensor(xa), ms.Tensor(xb))
    for g, x, (shape, k, s, p) in ((ga, xa, CASES[0]), (gb, xb, CASES[6])):
        want = reference_col2im(2 * reference_im2col(x, k, s, p), shape, k, s, p)
        np.testing.assert_allclose(g.asnumpy(), want, rtol=1e-6, atol=1e-6)


def test_two_threads_give_the_same_result() -> None:
    """A call large enough to split over two threads (>= 2^22 cols entries per thread) matches numpy."""
    shape, k, s, p = (2, 64, 66, 66), 4, 1, 1
    x, _ = _data(shape, k, s, p, np.float32)
    to_cols, to_image, geometry, cols_shape = kernels(shape, k, s, p, 2)
    assert cols_shape[0] * cols_shape[1] >= 2 << 22
    cols = to_cols(ms.Tensor(x), geometry).asnumpy()
    np.testing.assert_array_equal(cols, reference_im2col(x, k, s, p))
    np.testing.assert_allclose(to_image(ms.Tensor(cols), geometry).asnumpy(),
                               reference_col2im(cols, shape, k, s, p), rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("k,s,p,message", [(0, 1, 0, "kernel_size=0"), (3, 0, 0, "stride=0"), (3, 1, -1, "padding=-1"),
                                           (2.0, 1, 0, "kernel_size=2.0"), (9, 1, 0, "kernel_size=9 does not fit")])
def test_bad_geometry_is_named(k, s, p, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        im2col(ms.Tensor(np.zeros((1, 1, 4, 4), np.float32)), k, s, p)


def test_bad_dtype_and_shapes_are_named() -> None:
    with pytest.raises(TypeError, match="float32 and float16.*Int32"):
        im2col(ms.Tensor(np.zeros((1, 1, 4, 4), np.int32)), 3, 1, 1)
    with pytest.raises(ValueError, match=r"\(N, C, H, W\).*\(4, 4\)"):
        im2col(ms.Tensor(np.zeros((4, 4), np.float32)), 3, 1, 1)
    with pytest.raises(ValueError, match=r"needs cols of shape \(18, 32\), got \(18, 30\)"):
        col2im(ms.Tensor(np.zeros((18, 30), np.float32)), (2, 2, 4, 4), 3, 1, 1)
