"""In-place LeakyReLU on views (docs/operator.md, "inplace"), against numpy, whose views write through to their base.

Every view kind x every way of running (PyNative; a view made inside ms.jit; a view made in PyNative and passed
into ms.jit; GRAPH_MODE) x the forms of the op that accept `inplace` (the function, with both formulations in
PyNative, and the LeakyReLU Cell). What each case must do:

- PyNative: the result is right and written through the view into its base, as PyTorch's `leaky_relu_` does (the
  elements of a broadcast view that share memory all get the same value); the returned tensor is the view itself.
- In a graph (a view made inside ms.jit or a GRAPH_MODE Cell, or passed into ms.jit from PyNative): the result is
  right and is a new tensor; nothing is written, neither the view nor its base (nor a plain input).

A kernel that writes its input fails the PyNative cases and the views passed into ms.jit: MindSpore hands a Custom
kernel a contiguous copy of a view, so the call returns the view's old values. Each view holds a negative value, so
a stale result differs from the right one.
"""
import mindspore as ms
import numpy as np
import pytest
from leaky_relu_cases import BF16, as_numpy, assert_bitwise
from mindspore import nn
from mindspore import ops as msops

from ops import LeakyReLU, leaky_relu
from ops import reference as ref

SLOPE = 0.25


def base_values(dtype=np.float32) -> np.ndarray:
    """A (2, 3, 4) tensor of mixed signs with -0.0, NaN and -inf (no subnormals: MindSpore's graph ops flush them)."""
    x = (np.random.default_rng(0).standard_normal((2, 3, 4)) * 3).astype(np.float32)
    x[0, 0, 0], x[0, 1, 1], x[1, 0, 2], x[1, 2, 3] = -0.0, np.nan, -np.inf, -2.5
    return x.astype(dtype)


# The view kinds, as MindSpore (graph-compilable: plain functions) and numpy expressions of the same view.
def transpose(t):
    return t.T


def permute(t):
    return t.permute(2, 0, 1)


def strided_slice(t):
    return t[:, ::2]


def row_slice(t):
    return t[1:]


def select(t):
    return t[1]


def element(t):
    return t[1, 2, 3]


def broadcast_to(t):
    return msops.broadcast_to(t[:1], (2, 3, 4))


def reshape(t):
    return t.reshape(4, 6)


VIEWS = {
    "transpose": (transpose, lambda a: a.T),
    "permute": (permute, lambda a: a.transpose(2, 0, 1)),
    "strided_slice": (strided_slice, lambda a: a[:, ::2]),
    "row_slice": (row_slice, lambda a: a[1:]),
    "select": (select, lambda a: a[1]),
    "element": (element, lambda a: a[1, 2, 3]),
    "broadcast_to": (broadcast_to, lambda a: np.broadcast_to(a[:1], (2, 3, 4))),
    "reshape": (reshape, lambda a: a.reshape(4, 6)),
}


def fn_select(t):
    return leaky_relu(t, SLOPE, inplace=True)


def fn_maxmin(t):
    return leaky_relu(t, SLOPE, inplace=True, formulation="maxmin")


CELL = LeakyReLU(SLOPE, inplace=True)
KINDS = {"leaky_relu": (fn_select, "select"), "leaky_relu_maxmin": (fn_maxmin, "maxmin"), "LeakyReLU": (CELL, "select")}
GRAPH_KINDS = ("leaky_relu", "LeakyReLU")  # in graphs the formulation changes nothing about views: one each


def expected_result(base: np.ndarray, view: str, formulation: str) -> np.ndarray:
    return ref.forward(np.array(VIEWS[view][1](base)), SLOPE, formulation=formulation)


def written_through(base: np.ndarray, view: str, formulation: str) -> np.ndarray:
    """The base after writing the result through the view (numpy's view semantics, by index)."""
    index = np.asarray(VIEWS[view][1](np.arange(base.size).reshape(base.shape)))
    out = base.copy().ravel()
    out[index.ravel()] = expected_result(base, view, formulation).ravel()
    return out.reshape(base.shape)


def assert_view_holds_a_negative(base: np.ndarray, view: str) -> None:
    assert (np.asarray(VIEWS[view][1](base)) < 0).any()


class ViewThenAct(nn.Cell):
    """GRAPH_MODE: the view made inside construct, then the in-place op (function or Cell)."""

    def __init__(self, view, act):
        super().__init__()
        self.view, self.act = view, act

    def construct(self, t):
        return self.act(self.view(t))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("view", VIEWS)
def test_pynative_writes_through_the_view_to_its_base(view, kind):
    fn, formulation = KINDS[kind]
    base = base_values()
    assert_view_holds_a_negative(base, view)
    b = ms.Tensor(base.copy())
    v = VIEWS[view][0](b)
    r = fn(v)
    assert_bitwise(r.asnumpy(), expected_result(base, view, formulation))
    assert_bitwise(v.asnumpy(), expected_result(base, view, formulation))
    assert (r.data_ptr(), r.storage_offset(), tuple(r.stride())) == (v.data_ptr(), v.storage_offset(),
                                                                     tuple(v.stride()))
    assert_bitwise(b.asnumpy(), written_through(base, view, formulation))


@pytest.mark.parametrize("kind", GRAPH_KINDS)
@pytest.mark.parametrize("view", VIEWS)
def test_view_made_inside_jit_gives_the_result_and_writes_nothing(view, kind):
    fn, formulation = KINDS[kind]
    make_view = VIEWS[view][0]
    base = base_values()

    @ms.jit
    def run(t):
        return fn(make_view(t)), t

    b = ms.Tensor(base.copy())
    r, b_out = run(b)
    assert_bitwise(r.asnumpy(), expected_result(base, view, formulation))
    assert_bitwise(b_out.asnumpy(), base)
    assert_bitwise(b.asnumpy(), base)


@pytest.mark.parametrize("kind", GRAPH_KINDS)
@pytest.mark.parametrize("view", VIEWS)
def test_graph_mode_gives_the_result(view, kind):
    fn, formulation = KINDS[kind]
    base = base_values()
    net = ViewThenAct(VIEWS[view][0], fn)
    b = ms.Tensor(base.copy())
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        r = net(b)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    assert_bitwise(r.asnumpy(), expected_result(base, view, formulation))
    assert_bitwise(b.asnumpy(), base)


@pytest.mark.parametrize("kind", GRAPH_KINDS)
@pytest.mark.parametrize("view", ["plain"] + list(VIEWS))
def test_pynative_view_passed_into_jit_gives_the_result_and_writes_nothing(view, kind):
    fn, formulation = KINDS[kind]
    base = base_values()
    b = ms.Tensor(base.copy())
    v = b if view == "plain" else VIEWS[view][0](b)

    @ms.jit
    def run(t):
        return fn(t)

    r = run(v)
    expected = ref.forward(base, SLOPE, formulation=formulation) if view == "plain" else \
        expected_result(base, view, formulation)
    assert_bitwise(r.asnumpy(), expected)
    assert r.data_ptr() != v.data_ptr()
    assert_bitwise(b.asnumpy(), base)


@pytest.mark.parametrize("dtype", (np.float16, BF16))
@pytest.mark.parametrize("view", ("transpose", "strided_slice"))
def test_pynative_half_precision_views(view, dtype):
    base = base_values(dtype)
    b = ms.Tensor(base.copy())
    r = leaky_relu(VIEWS[view][0](b), SLOPE, inplace=True)
    assert_bitwise(as_numpy(r), expected_result(base, view, "select"))
    assert_bitwise(as_numpy(b), written_through(base, view, "select"))


@pytest.mark.parametrize("mode", ("pynative", "jit"))
def test_empty_tensor_and_empty_view(mode):
    b = ms.Tensor(np.zeros((0, 3), np.float32))
    for x in (b, b.T, b[:, ::2]):
        r = (ms.jit(fn_select) if mode == "jit" else fn_select)(x)
        assert r.shape == x.shape


@pytest.mark.parametrize("mode", ("pynative", "jit"))
@pytest.mark.parametrize("view", ("transpose", "row_slice", "broadcast_to"))
def test_gradient_through_an_inplace_view(view, mode):
    """The backward of the in-place op on a view of an intermediate: the reference backward, mapped back.
    (Not strided_slice: MindSpore's own StridedSliceGrad fails on it, with or without this op.)"""
    base = base_values()
    base = np.where(np.isfinite(base), base, 1.5).astype(np.float32)  # finite: the gradient is compared
    make_view, np_view = VIEWS[view]
    dy = (np.random.default_rng(1).standard_normal(np.shape(np_view(base))) * 2).astype(np.float32)

    def f(a):
        return leaky_relu(make_view(a * 1.0), SLOPE, inplace=True)

    def loss(a):
        return (f(a) * ms.Tensor(dy)).sum()

    grad = ms.grad(loss)
    g = (ms.jit(grad) if mode == "jit" else grad)(ms.Tensor(base)).asnumpy()
    index = np.asarray(np_view(np.arange(base.size).reshape(base.shape))).ravel()
    expected = np.zeros(base.size, np.float32)
    np.add.at(expected, index, ref.backward(np.asarray(np_view(base)), dy, SLOPE).ravel())
    np.testing.assert_array_equal(g, expected.reshape(base.shape))
