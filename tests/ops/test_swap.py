"""ops.swap_activations, the porting check (activation_report / format_report) and activation input ranges, on
MindSpore networks as users write them: nested custom Cells, nn.SequentialCell, nn.CellList, nn.CellDict, plain
Python containers, the model-zoo DCGAN (scripts/examples/model_zoo.py).

Exactness against MindSpore 2.10's own layers: bit for bit where the project's op is (LeakyReLU and PReLU forward
and input gradient in float32 on normal numbers, the DCGANs end to end), the documented differences elsewhere
(gradient at 0 / inf / NaN, ReLU's sign of zero, ELU's accuracy, float16 within 1 ulp), PyNative and ms.jit.
The boundary values KINDS states for each layer are measured here on MindSpore itself.
"""
from __future__ import annotations

import json
import math

import mindspore as ms
import numpy as np
import pytest
from leaky_relu_cases import assert_bitwise
from mindspore import Parameter, Tensor, nn

import ops
from ops import ELU, LeakyReLU, PReLU, RReLU, activation_ranges, activation_report, format_report, swap_activations
from ops.ranges import FLOAT16_OVERFLOW, RangeRecorder
from ops.swap import INF, KINDS, NAN, Boundary, Kind, _show, porting_notes
from scripts.examples.model_zoo import DcganD, DcganG

RNG = np.random.default_rng(0)


def tensor(*shape: int, scale: float = 1.0, seed: int = 0) -> Tensor:
    return Tensor((np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32))


class Block(nn.Cell):
    """A custom Cell holding its activation as an attribute."""

    def __init__(self, act: nn.Cell) -> None:
        super().__init__()
        self.dense = nn.Dense(4, 4)
        self.act = act

    def construct(self, x):
        return self.act(self.dense(x))


class Zoo(nn.Cell):
    """Every way a network can hold an activation: nested custom Cells, SequentialCell, CellList, CellDict, a plain
    list, tuple and dict attribute, and one instance used at two places."""

    def __init__(self) -> None:
        super().__init__()
        self.outer = Block(nn.LeakyReLU(0.1))
        self.nested = Block(Block(nn.ReLU()))
        self.seq = nn.SequentialCell([nn.Dense(4, 4), nn.PReLU(), nn.LeakyReLU()])
        self.lst = nn.CellList([nn.Dense(4, 4), nn.ELU()])
        self.dct = nn.CellDict({"first": nn.ReLU(), "second": nn.LeakyReLU(0.3)})
        self.plain = [nn.ReLU()]
        self.pair = (nn.LeakyReLU(0.05),)
        self.table = {"a": nn.ReLU()}
        self.again = self.dct["first"]

    def construct(self, x):
        x = self.nested(self.outer(x))
        x = self.seq(x)
        for cell in self.lst:
            x = cell(x)
        x = self.dct["second"](self.dct["first"](x))
        x = self.table["a"](self.pair[0](self.plain[0](x)))
        return self.again(x)


NATIVE = (nn.LeakyReLU, nn.ReLU, nn.PReLU, nn.ELU, nn.RReLU)


def cells_of(net: nn.Cell) -> list[tuple[str, nn.Cell]]:
    return list(net.cells_and_names())


def run(net: nn.Cell, *inputs: Tensor, graph: bool, dy_seed: int = 9) -> list[np.ndarray]:
    """Output, input gradients and weight gradients of sum(net(x) * dy), as numpy; graph: through ms.jit."""
    weights = net.trainable_params()
    y0 = net(*inputs)
    dy = Tensor(np.random.default_rng(dy_seed).standard_normal(y0.shape).astype(np.float32))

    def loss(*xs):
        return (net(*xs) * dy).sum()

    grad = ms.grad(loss, grad_position=tuple(range(len(inputs))), weights=weights)

    def step(*xs):
        return net(*xs), grad(*xs)

    fn = ms.jit(step) if graph else step
    y, (dxs, dws) = fn(*inputs)
    dxs = dxs if isinstance(dxs, tuple) else (dxs,)
    return [y.asnumpy()] + [d.asnumpy() for d in dxs] + [d.asnumpy() for d in dws]


MODES = pytest.mark.parametrize("graph", [False, True], ids=["pynative", "graph"])


# ---- the walk: every container ----

def test_swap_reaches_every_container_and_reports_path_old_new():
    net = Zoo()
    records = swap_activations(net)
    by_path = {r.path: r for r in records}
    assert set(by_path) == {"outer.act", "nested.act.act", "seq.1", "seq.2", "lst.1", "dct.first", "dct.second",
                            "plain[0]", "pair[0]", "table[a]"}
    assert by_path["outer.act"].old == "nn.LeakyReLU(alpha=0.1)"
    assert by_path["outer.act"].new == "ops.LeakyReLU(negative_slope=0.1)"
    assert by_path["nested.act.act"].new == "ops.LeakyReLU(negative_slope=0)"
    assert by_path["seq.1"].new == "ops.PReLU(weight=0.25)"
    assert by_path["lst.1"].new == "ops.ELU(alpha=1)"
    assert by_path["dct.first"].aliases == ("again",)
    assert all(r.status == "swapped" for r in records)
    # nothing native is left anywhere, also in the plain containers and SequentialCell's own list
    assert not [p for p, c in cells_of(net) if isinstance(c, NATIVE)]
    assert isinstance(net.plain[0], LeakyReLU) and isinstance(net.pair[0], LeakyReLU)
    assert isinstance(net.table["a"], LeakyReLU)
    assert [type(c) for c in net.seq.cell_list] == [nn.Dense, PReLU, LeakyReLU]
    assert net.again is net.dct["first"]  # a shared cell stays shared
    assert net(tensor(3, 4)).shape == (3, 4)


@MODES
def test_the_swapped_network_runs_the_projects_op(graph):
    """Behaviour, not types: at x == 0 MindSpore's nn.LeakyReLU passes the gradient (1 + alpha) / 2, ours alpha."""
    net = nn.SequentialCell([Block(nn.LeakyReLU(0.2))])
    net[0].dense.weight.set_data(Tensor(np.zeros((4, 4), np.float32)))
    net[0].dense.bias.set_data(Tensor(np.zeros(4, np.float32)))
    x = tensor(2, 4)
    before = run(net, x, graph=graph)
    swap_activations(net)
    after = run(net, x, graph=graph)
    np.testing.assert_array_equal(before[0], after[0])
    bias_grad = -1  # the dense bias gradient: dy * act'(0) summed over the batch
    assert np.abs(before[bias_grad]).min() > 0
    np.testing.assert_allclose(after[bias_grad], before[bias_grad] / 0.6 * 0.2, rtol=1e-6)


def test_nested_and_self_referencing_plain_containers():
    class Odd(nn.Cell):
        def __init__(self):
            super().__init__()
            self.deep = {"x": [(nn.ReLU(),)]}
            self.loop = [nn.LeakyReLU(0.3)]
            self.loop.append(self.loop)

        def construct(self, x):
            return self.loop[0](self.deep["x"][0][0](x))

    net = Odd()
    records = swap_activations(net)
    assert [r.path for r in records] == ["deep[x][0][0]", "loop[0]"]
    assert isinstance(net.deep["x"][0][0], LeakyReLU) and isinstance(net.loop[0], LeakyReLU)
    assert net.loop[1] is net.loop
    np.testing.assert_array_equal(net(Tensor(np.float32([-1.0, 2.0]))).asnumpy(), np.float32([-0.0, 2.0]))


def test_plain_container_cells_with_parameters_are_flagged():
    class Hidden(nn.Cell):
        def __init__(self):
            super().__init__()
            self.acts = [nn.PReLU(), nn.ReLU()]

        def construct(self, x):
            return self.acts[1](self.acts[0](x))

    flags = {r.path: r.flags for r in activation_report(Hidden())}
    assert any("not registered" in f for f in flags["acts[0]"])
    assert flags["acts[1]"] == ()  # nothing to lose without parameters


# ---- PReLU: weights, names, checkpoints ----

def test_prelu_keeps_its_parameter_and_checkpoints_load_unchanged(tmp_path):
    def build():
        ms.set_seed(1)
        return nn.SequentialCell([nn.Dense(4, 6), nn.PReLU(6, [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]), nn.Dense(6, 2)])

    native = build()
    native[1].w.set_data(Tensor(np.float32([0.3, -0.2, 0.0, 1.5, 0.25, 0.01])))
    before = tmp_path / "native.ckpt"
    ms.save_checkpoint(native, str(before))
    weight = native[1].w
    swap_activations(native)
    assert native[1].weight is weight and weight.name == "1.w"
    after = tmp_path / "swapped.ckpt"
    ms.save_checkpoint(native, str(after))
    native_keys, swapped_keys = ms.load_checkpoint(str(before)), ms.load_checkpoint(str(after))
    assert list(native_keys) == list(swapped_keys) == ["0.weight", "0.bias", "1.w", "2.weight", "2.bias"]
    for key in native_keys:
        np.testing.assert_array_equal(native_keys[key].asnumpy(), swapped_keys[key].asnumpy())

    fresh = build()
    swap_activations(fresh)
    not_loaded, unused = ms.load_param_into_net(fresh, ms.load_checkpoint(str(before)))
    assert not_loaded == [] and unused == []
    np.testing.assert_array_equal(fresh[1].weight.asnumpy(), np.float32([0.3, -0.2, 0.0, 1.5, 0.25, 0.01]))
    x = tensor(5, 4)
    np.testing.assert_array_equal(fresh(x).asnumpy(), native(x).asnumpy())


def test_prelu_weight_stays_trainable_by_an_optimizer_built_before_the_swap():
    net = nn.SequentialCell([nn.Dense(3, 3), nn.PReLU(3)])
    opt = nn.SGD(net.trainable_params(), learning_rate=0.5)
    swap_activations(net)
    before = net[1].weight.asnumpy().copy()
    x = Tensor(np.float32([[-5.0] * 3, [5.0] * 3]))
    grads = ms.grad(lambda t: net(t).sum(), grad_position=None, weights=net.trainable_params())(x)
    opt(grads)
    assert not np.array_equal(net[1].weight.asnumpy(), before)


# ---- forward/backward equality ----

@MODES
def test_model_zoo_dcgan_discriminator_is_bit_exact_forward_and_backward(graph):
    ms.set_seed(3)
    d = DcganD(16, 3, 4, n_extra_layers=1)
    x = tensor(4, 3, 16, 16)
    native = run(d, x, graph=graph)
    records = swap_activations(d)
    assert [r.path for r in records] == ["main.1", "main.4", "main.7"]
    swapped = run(d, x, graph=graph)
    assert len(native) == 2 + len(d.trainable_params())
    for a, b in zip(swapped, native):
        assert_bitwise(a, b)


@MODES
def test_model_zoo_dcgan_generator_is_bit_exact_forward_and_backward(graph):
    """nn.ReLU -> LeakyReLU(0): its -0.0 for negative inputs (MindSpore: +0.0) changes no bit downstream."""
    ms.set_seed(4)
    g = DcganG(16, 8, 3, 4, n_extra_layers=1)
    z = tensor(4, 8, 1, 1)
    native = run(g, z, graph=graph)
    records = swap_activations(g)
    assert [r.old for r in records] == ["nn.ReLU()"] * 3
    assert [r.path for r in activation_report(g) if r.status == "native"] == ["main.10"]  # the Tanh stays
    swapped = run(g, z, graph=graph)
    for a, b in zip(swapped, native):
        assert_bitwise(a, b)


def test_a_train_one_step_cell_built_before_the_swap_trains_the_swapped_network_identically():
    def build():
        ms.set_seed(8)
        d = DcganD(16, 3, 4)
        step = nn.TrainOneStepCell(nn.WithLossCell(d, nn.BCEWithLogitsLoss()), nn.Adam(d.trainable_params(), 1e-2))
        return d, step

    x, labels = tensor(4, 3, 16, 16), Tensor(np.float32([1, 0, 1, 0]))
    native_d, native_step = build()
    swapped_d, swapped_step = build()
    records = swap_activations(swapped_step)  # through the wrappers: the optimizer keeps the same Parameters
    assert [r.path for r in records] == ["network._backbone.main.1", "network._backbone.main.4"]
    for _ in range(2):
        assert_bitwise(swapped_step(x, labels).asnumpy(), native_step(x, labels).asnumpy())
    for a, b in zip(swapped_d.trainable_params(), native_d.trainable_params()):
        assert_bitwise(a.asnumpy(), b.asnumpy())


@MODES
def test_a_network_under_amp_keeps_its_float16_marks(graph):
    from mindspore import amp

    ms.set_seed(9)
    d = DcganD(16, 3, 4)
    native = amp.auto_mixed_precision(d, "O3", ms.float16)  # wraps d in a cast back to float32
    x = tensor(2, 3, 16, 16)
    before = run(native, x, graph=graph)
    swap_activations(native)
    assert d.main[1].get_flags().get("fp16") and isinstance(d.main[1], LeakyReLU)
    after = run(native, x, graph=graph)
    for a, b in zip(after, before):  # float16: within a few float16 ulp after the layers that follow
        np.testing.assert_allclose(a.astype(np.float32), b.astype(np.float32), rtol=2e-2, atol=2e-3)


@MODES
def test_prelu_network_is_bit_exact_except_the_weight_gradient_summation(graph):
    ms.set_seed(5)
    net = nn.SequentialCell([nn.Conv2d(3, 4, 3, pad_mode="same"), nn.PReLU(4, [0.25, 0.01, -0.3, 1.5]),
                             nn.Conv2d(4, 2, 3, pad_mode="same")])
    x = tensor(2, 3, 8, 8, scale=10.0)
    native = run(net, x, graph=graph)
    swap_activations(net)
    swapped = run(net, x, graph=graph)
    names = ["y", "dx"] + [p.name for p in net.trainable_params()]
    for name, a, b in zip(names, swapped, native):
        if name == "1.w":  # reduced over batch and space: double sums here, float32 ones in MindSpore
            np.testing.assert_allclose(a, b, rtol=2e-6)
        else:
            assert_bitwise(a, b)


@MODES
def test_elu_differs_from_mindspore_by_mindspore_rounding_and_is_closer_to_exact(graph):
    """MindSpore's nn.ELU computes exp(x) - 1 (and its gradient from y + 1): up to 2.3e-6 absolute error (at x near
    -0.35), no correct digit as x -> 0 and a zero gradient below x = -17; the swapped ops.ELU is within 1 ulp of
    expm1 and exp."""
    x = np.concatenate([-np.logspace(-9, np.log10(30), 4000), np.linspace(0, 5, 100)]).astype(np.float32)
    native = nn.SequentialCell([nn.ELU()])
    theirs = run(native, Tensor(x), graph=graph)
    swap_activations(native)
    ours = run(native, Tensor(x), graph=graph)
    x64 = np.minimum(x.astype(np.float64), 0)
    dy = np.random.default_rng(9).standard_normal(x.shape).astype(np.float32).astype(np.float64)
    exact = {"y": np.where(x > 0, x, np.expm1(x64)), "dx": dy * np.where(x > 0, 1, np.exp(x64))}
    for name, o, t in (("y", ours[0], theirs[0]), ("dx", ours[1], theirs[1])):
        e = exact[name]
        keep = e != 0
        assert np.max(np.abs(o - e)[keep] / np.abs(e[keep])) <= 2.4e-7, name  # <= 2 ulp relative
        assert np.max(np.abs(t - e)[keep] / np.abs(e[keep])) > 0.5, name     # MindSpore: 0 or a wrong power
    assert np.max(np.abs(ours[0] - theirs[0])) <= 3e-6
    assert np.all(theirs[1][x < -18] == 0) and np.all(ours[1][x < -18] != 0)  # MindSpore: y + 1 == 0 there


# ---- MindSpore's own boundary semantics, and what the swap changes there ----

SPECIALS = np.float32([0.0, -0.0, np.nan, -np.inf])


def boundary(cell: nn.Cell, graph: bool) -> dict[str, str]:
    """The layer's y(-0), dy(0), y(nan), dy(nan), y(-inf) as the report writes them, measured."""
    cell.set_train(False)
    fwd = ms.jit(cell.construct) if graph else cell
    y = fwd(Tensor(SPECIALS)).asnumpy()
    g = (ms.jit(ms.grad(cell.construct)) if graph else ms.grad(cell))(Tensor(SPECIALS)).asnumpy()
    assert _show(y[0]) == "0" or cell.__class__ is nn.Sigmoid  # +0 keeps its sign everywhere
    assert g[0] == g[1] or math.isnan(g[0])  # +0 and -0 have one gradient
    return {"y(-0)": _show(y[1]), "dy(0)": _show(g[0]), "y(nan)": _show(y[2]), "dy(nan)": _show(g[2]),
            "y(-inf)": _show(y[3])}


INSTANCES = [nn.LeakyReLU(0.2), nn.LeakyReLU(0.0), nn.LeakyReLU(1.0), nn.LeakyReLU(0.01), nn.ReLU(),
             nn.PReLU(1, 0.25), nn.ELU(), nn.RReLU(), nn.Tanh(), nn.Sigmoid(), nn.ReLU6(), nn.SeLU(), nn.SiLU(),
             nn.GELU(), nn.GELU(False), nn.HSwish(), nn.Mish(), nn.CELU(), nn.Hardtanh(-2.0, 3.0),
             LeakyReLU(0.2), LeakyReLU(0.0), PReLU(1, 0.3), ELU(0.5), RReLU(0.1, 0.3)]


def test_every_unfused_row_of_the_table_is_measured():
    fused = {ops.BatchNormAct, ops.BatchNormPReLU, ops.AdaptiveLeakyReLU}  # their slope comes from statistics
    assert set(KINDS) - fused == {type(c) for c in INSTANCES}


@MODES
@pytest.mark.parametrize("cell", INSTANCES, ids=[f"{type(c).__module__.split('.')[0]}.{type(c).__name__}{i}"
                                                 for i, c in enumerate(INSTANCES)])
def test_stated_boundary_values_are_what_the_layer_does(cell, graph):
    row = KINDS[type(cell)]
    stated = row.boundary.show(row.params(cell))
    assert boundary(cell, graph) == stated


@MODES
def test_mindspore_leaky_relu_at_zero_and_what_the_swap_changes_there(graph):
    """MindSpore 2.10's nn.LeakyReLU is maximum(alpha * x, x): y(+-0) keeps the sign, the gradient at 0 is
    (1 + alpha) / 2 (the tie is split), at NaN 1 + alpha; after the swap both are alpha (PyTorch's)."""
    net = nn.SequentialCell([nn.LeakyReLU(0.2)])
    x = Tensor(np.float32([0.0, -0.0, np.nan, np.inf, -np.inf, 1.0, -1.0]))
    grad = ms.jit(ms.grad(net.construct)) if graph else ms.grad(net)
    y0, g0 = net(x).asnumpy(), grad(x).asnumpy()
    np.testing.assert_array_equal(g0, np.float32([0.6, 0.6, 1.2, 0.6, 0.6, 1.0, 0.2]))
    swap_activations(net)
    grad = ms.jit(ms.grad(net.construct)) if graph else ms.grad(net)
    y1, g1 = net(x).asnumpy(), grad(x).asnumpy()
    assert_bitwise(y1, y0)
    np.testing.assert_array_equal(np.signbit(y1[:2]), [False, True])
    np.testing.assert_array_equal(g1, np.float32([0.2, 0.2, 0.2, 1.0, 0.2, 1.0, 0.2]))


def test_relu_swap_keeps_values_but_not_the_sign_of_zero_nan_or_minus_inf():
    net = nn.SequentialCell([nn.ReLU()])
    x = Tensor(np.float32([-2.0, -0.0, 0.0, 3.0, np.nan, -np.inf, np.inf]))
    before = net(x).asnumpy()
    swap_activations(net)
    after = net(x).asnumpy()
    np.testing.assert_array_equal(before, [0, 0, 0, 3, 0, 0, np.inf])
    np.testing.assert_array_equal(np.signbit(before), [False] * 7)
    np.testing.assert_array_equal(after[:4], before[:4])
    np.testing.assert_array_equal(np.signbit(after[:4]), [True, True, False, False])  # 0 * -2 and 0 * -0.0
    assert np.isnan(after[4]) and np.isnan(after[5]) and after[6] == np.inf


@pytest.mark.parametrize("slope", [0.2, 0.01])
def test_float16_leaky_relu_is_within_one_ulp_and_ours_is_nearer_exact(slope):
    """MindSpore casts the slope to float16 and multiplies in float16; ours multiplies by the float32 slope."""
    x = np.arange(2 ** 16, dtype=np.uint16).view(np.float16)
    x = x[np.isfinite(x) & (np.abs(x) >= 2 ** -10)]
    net = nn.SequentialCell([nn.LeakyReLU(slope)])
    theirs = net(Tensor(x)).asnumpy()
    swap_activations(net)
    ours = net(Tensor(x)).asnumpy()
    apart = np.abs(ours.view(np.int16).astype(np.int32) - theirs.view(np.int16).astype(np.int32))
    assert apart.max() == 1 and (apart == 0).mean() > 0.8
    exact = np.where(x > 0, x, slope * x.astype(np.float64))
    with np.errstate(over="ignore"):  # the spacing at 65504 is beyond float16
        unit = np.spacing(np.abs(exact).astype(np.float16)).astype(np.float64)
    assert np.max(np.abs(ours - exact) / unit) <= 0.5 + 1e-3  # float32 product, one rounding
    assert np.max(np.abs(theirs - exact) / unit) > 0.75


def test_rrelu_is_swapped_with_its_bounds_a_seed_per_path_and_a_named_counter():
    net = nn.SequentialCell([nn.RReLU(0.1, 0.3), nn.RReLU(0.1, 0.3)])
    records = swap_activations(net, rrelu_seed=7)
    assert [r.new for r in records] == ["ops.RReLU(lower=0.1, upper=0.3)"] * 2
    first, second = net[0], net[1]
    assert isinstance(first, RReLU) and (first.lower, first.upper) == (float(np.float32(0.1)), float(np.float32(0.3)))
    assert first.seed != second.seed
    assert [p.name for p in net.get_parameters()] == ["0.counter", "1.counter"]
    x = Tensor(-np.ones(4096, np.float32))
    net.set_train(False)
    np.testing.assert_array_equal(net[0](x).asnumpy(), np.float32(-(first.lower + first.upper) / 2))
    net.set_train(True)
    slopes = -net[0](x).asnumpy()
    assert 0.1 <= slopes.min() < slopes.max() <= 0.3 and abs(slopes.mean() - 0.2) < 0.01
    assert any("eval mode too" in f for f in records[0].flags)


def test_a_native_rrelu_checkpoint_loads_with_only_the_counter_missing(tmp_path):
    native = nn.SequentialCell([nn.Dense(2, 2), nn.RReLU()])
    path = tmp_path / "native.ckpt"
    ms.save_checkpoint(native, str(path))
    swapped = nn.SequentialCell([nn.Dense(2, 2), nn.RReLU()])
    swap_activations(swapped)
    not_loaded, unused = ms.load_param_into_net(swapped, ms.load_checkpoint(str(path)))
    assert not_loaded == ["1.counter"] and unused == []
    np.testing.assert_array_equal(swapped[0].weight.asnumpy(), native[0].weight.asnumpy())


def test_rrelu_counter_gets_the_prefix_of_a_network_nested_under_another():
    class Outer(nn.Cell):
        def __init__(self):
            super().__init__()
            self.g = nn.SequentialCell([nn.Dense(2, 2), nn.RReLU()])

    outer = Outer()
    swap_activations(outer.g)
    assert [p.name for p in outer.get_parameters()] == ["g.0.weight", "g.0.bias", "g.1.counter"]


# ---- nothing to swap, refusals, options ----

def test_a_network_with_nothing_to_swap_is_left_as_is():
    net = nn.SequentialCell([nn.Dense(3, 3), LeakyReLU(0.2), nn.Dense(3, 1), nn.Sigmoid()])
    cells = [c for _, c in cells_of(net)]
    assert swap_activations(net) == []
    assert [c for _, c in cells_of(net)] == cells
    assert [r.status for r in activation_report(net)] == ["project", "native"]
    assert swap_activations(nn.Dense(2, 2)) == []
    assert format_report(activation_report(nn.Dense(2, 2))) == "no activation layers found"


@pytest.mark.parametrize("bad, message", [
    (lambda: nn.LeakyReLU(1.5), "slope 1.5 cannot be mapped exactly: negative_slope=1.5 is not allowed"),
    (lambda: nn.LeakyReLU(-0.1), "slope -0.1 cannot be mapped exactly"),
    (lambda: nn.LeakyReLU(float("nan")), "slope nan"),
    (lambda: nn.RReLU(-0.1, 0.3), "lower -0.1"),
])
def test_an_unmappable_layer_is_refused_and_the_network_left_untouched(bad, message):
    net = nn.SequentialCell([nn.Dense(3, 3), nn.LeakyReLU(0.2), Block(bad()), nn.ReLU()])
    cells = [c for _, c in cells_of(net)]
    with pytest.raises(ValueError, match="refused 1 activation") as err:
        swap_activations(net)
    assert "2.act" in str(err.value) and message in str(err.value) and "nothing was changed" in str(err.value)
    assert [c for _, c in cells_of(net)] == cells
    assert isinstance(net[1], nn.LeakyReLU) and net.cell_list[1] is net[1]
    report = {r.path: r for r in activation_report(net)}
    assert report["2.act"].status == "refused" and report["1"].status == "swappable"
    assert "refused" in format_report(report.values())
    swap_activations(net, skip=["2"])  # leaving it as it is lets the rest be swapped
    assert isinstance(net[1], LeakyReLU) and type(net[2].act) is type(cells[5])


def test_elu_alpha_and_prelu_weights_the_op_refuses():
    elu = nn.ELU()
    elu.elu.alpha = 1e39  # MindSpore would refuse it at the first call; ops.ELU refuses it here
    prelu = nn.PReLU(2)
    prelu.w = Parameter(Tensor(np.ones((2, 2), np.float32)), name="w")
    with pytest.raises(ValueError) as err:
        swap_activations(nn.SequentialCell([elu, prelu]))
    assert "refused 2" in str(err.value) and "alpha 1e+39" in str(err.value) and "shape (2, 2)" in str(err.value)


def test_elu_with_an_alpha_mindspore_refuses_is_mapped_and_flagged():
    elu = nn.ELU(0.5)
    (record,) = activation_report(nn.SequentialCell([elu]))
    assert record.status == "swappable" and any("refuses alpha != 1" in f for f in record.flags)


def test_subclasses_and_the_root_are_refused():
    class MyReLU(nn.ReLU):
        def construct(self, x):
            return super().construct(x) * 2

    with pytest.raises(ValueError, match="subclass may compute something else"):
        swap_activations(nn.SequentialCell([MyReLU()]))
    with pytest.raises(ValueError, match="the network itself is the activation"):
        swap_activations(nn.LeakyReLU(0.2))


def test_dry_run_kinds_skip_and_clamp():
    net = Zoo()
    cells = [c for _, c in cells_of(net)]
    planned = swap_activations(net, dry_run=True)
    assert [c for _, c in cells_of(net)] == cells and {r.status for r in planned} == {"swappable"}
    only = swap_activations(net, kinds=["nn.PReLU", "nn.ELU"], skip=["lst"])
    assert [r.path for r in only] == ["seq.1"]
    assert isinstance(net.lst[1], nn.ELU) and isinstance(net.outer.act, nn.LeakyReLU)
    rest = swap_activations(net, clamp=2.0)
    assert net.outer.act.clamp == 2.0 and "clamp=2" in rest[0].new
    with pytest.raises(ValueError, match="skip=\\['nope'\\] names no cell"):
        swap_activations(Zoo(), skip=["nope"])
    with pytest.raises(ValueError, match="not swappable kinds"):
        swap_activations(Zoo(), kinds=["nn.Tanh"])
    with pytest.raises(ValueError, match="clamp=-1"):
        swap_activations(Zoo(), clamp=-1.0)
    with pytest.raises(TypeError, match="mindspore.nn.Cell"):
        swap_activations(lambda x: x)


def test_a_network_compiled_before_the_swap_compiles_again():
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        net = nn.SequentialCell([nn.ReLU()])
        x = Tensor(np.float32([np.nan, 1.0]))
        assert net(x).asnumpy()[0] == 0  # MindSpore's ReLU, compiled
        swap_activations(net)
        assert np.isnan(net(x).asnumpy()[0])  # the swapped layer runs
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


@MODES
def test_functional_calls_are_invisible_and_the_one_line_edit_runs_the_projects_op(graph):
    from mindspore import ops as msops

    class Functional(nn.Cell):
        def construct(self, x):
            return msops.leaky_relu(x, 0.2)

    class Edited(nn.Cell):
        def construct(self, x):
            return ops.leaky_relu(x, 0.2)  # the edit: `from ops import leaky_relu`, then leaky_relu(x, 0.2)

    assert activation_report(Functional()) == [] and swap_activations(Functional()) == []
    x = Tensor(np.float32([0.0, -1.0, 2.0]))
    grads = [(ms.jit(ms.grad(n.construct)) if graph else ms.grad(n))(x).asnumpy() for n in (Functional(), Edited())]
    np.testing.assert_array_equal(grads[0], np.float32([0.6, 0.2, 1.0]))  # MindSpore's tie at 0
    np.testing.assert_array_equal(grads[1], np.float32([0.2, 0.2, 1.0]))


# ---- the porting check ----

def test_a_default_slope_used_throughout_is_noted_once_not_flagged_per_layer():
    report = activation_report(DcganD(32, 3, 8))  # three nn.LeakyReLU(0.2): MindSpore's default, on purpose
    assert [r.at_default for r in report] == [("alpha",)] * 3 and [r.flags for r in report] == [()] * 3
    assert [(r.slope, r.role) for r in report] == [(0.2, "DcganD.main.*")] * 3
    notes = porting_notes(report)
    assert [(n.level, n.paths) for n in notes] == [("default", ("main.1", "main.4", "main.7"))]
    text = format_report(report)
    assert "check:" not in text and text.count("default: slope 0.2 is MindSpore's nn.LeakyReLU and TensorFlow's") == 1


class Ported(nn.Cell):
    """A port whose author wrote 0.1 everywhere but left one nn.LeakyReLU() (MindSpore's 0.2) among the siblings
    of a block and one 0.01 (PyTorch's default) in another place."""

    def __init__(self) -> None:
        super().__init__()
        acts = (nn.LeakyReLU(0.1), nn.LeakyReLU(0.1), nn.LeakyReLU(), nn.LeakyReLU(0.1))
        self.main = nn.SequentialCell([layer for act in acts for layer in (nn.Conv2d(4, 4, 3), act)])
        self.head = Block(nn.LeakyReLU(0.01))


def test_a_slope_that_differs_from_its_siblings_or_a_stray_default_is_flagged():
    report = {r.path: r for r in activation_report(Ported())}
    assert report["main.5"].flags == ("slope 0.2 (MindSpore's nn.LeakyReLU and TensorFlow's tf.nn.leaky_relu default) "
                                      "where 3 other activation(s) of the same role (Ported.main.*) use 0.1: check "
                                      "the source's slope for this layer",)
    assert report["head.act"].flags == ("slope 0.01 is PyTorch's nn.LeakyReLU default while 3 other leaky "
                                        "activation(s) of this network use 0.1: did the port rely on a default?",)
    assert all(not report[p].flags for p in ("main.1", "main.3", "main.7"))
    text = format_report(report.values())
    below = text.split("\n\n", 1)[1].splitlines()
    assert below[0].startswith("check: main.5: slope 0.2") and below[1].startswith("check: head.act: slope 0.01")
    assert not [line for line in below if line.startswith("default:")]  # both defaults are flagged, not noted


def test_kinds_mixed_in_a_network_are_one_check_line_not_a_flag_per_layer():
    class Unet(nn.Cell):  # encoder LeakyReLU(0.2), decoder ReLU, a final Tanh (not a mix: an output squasher)
        def __init__(self) -> None:
            super().__init__()
            self.down = nn.SequentialCell([nn.LeakyReLU(0.2), nn.LeakyReLU(0.2)])
            self.up = nn.SequentialCell([nn.ReLU(), nn.ReLU(), nn.Tanh()])

    report = activation_report(Unet())
    assert all(not r.flags for r in report)
    notes = porting_notes(report)
    assert [n.level for n in notes] == ["check", "default"]
    assert notes[0].text.startswith("kinds mixed in this network: LeakyReLU x2 (down.0, down.1); ReLU x2 (up.0, up.1)")
    assert "up.2" not in notes[0].paths
    assert porting_notes(activation_report(DcganG(16, 8, 1, 8))) == []  # ReLU and a final Tanh: one kind


def test_records_keep_their_fields_for_callers():
    first = activation_report(Zoo())[0].to_dict()
    assert set(first) >= {"path", "kind", "params", "at_default", "output_range", "boundary", "status", "new",
                          "reason", "changes", "flags", "aliases", "registered", "old"}
    assert (first["slope"], first["role"]) == (0.1, "Block.act")


def test_report_is_json_able_and_printable():
    net = Zoo()
    report = activation_report(net)
    data = json.loads(json.dumps([r.to_dict() for r in report]))
    first = data[0]
    assert first["path"] == "outer.act" and first["kind"] == "nn.LeakyReLU" and first["params"] == {"alpha": 0.1}
    assert first["boundary"] == {"y(-0)": "-0", "dy(0)": "0.55", "y(nan)": "nan", "dy(nan)": "1.1", "y(-inf)": "-inf"}
    assert first["output_range"] == "(-inf, inf)" and first["status"] == "swappable"
    assert first["new"] == "ops.LeakyReLU(negative_slope=0.1)" and first["old"] == "nn.LeakyReLU(alpha=0.1)"
    text = format_report(report)
    lines = text.splitlines()
    assert lines[0].split() == ["path", "layer", "output", "range", "y(-0)", "dy(0)", "y(nan)", "dy(nan)", "y(-inf)",
                                "swap"]
    assert any(line.startswith("dct.first = again ") for line in lines)
    assert "check: seq.2: slope 0.2 is MindSpore's nn.LeakyReLU and TensorFlow's tf.nn.leaky_relu default" in text
    assert text.count("the swap changes (nn.ReLU)") == 1  # one note for all of that kind's layers


def test_report_lists_the_projects_fused_layers():
    net = nn.SequentialCell([nn.Conv2d(3, 4, 3), ops.BatchNormAct(4, 0.2, clamp=8.0), ops.BatchNormPReLU(4, 4)])
    report = activation_report(net)
    assert [(r.kind, r.status) for r in report] == [("ops.BatchNormAct", "project"), ("ops.BatchNormPReLU", "project")]
    assert report[0].params == {"negative_slope": 0.2, "gain": 1.0, "clamp": 8.0}
    assert report[0].output_range == "(-inf, inf) clamped to [-8, 8]"


def test_an_application_extends_the_table_with_its_own_layers():
    class Fused(nn.Cell):  # e.g. a conv fused with its activation, with the hook tools look for
        def construct(self, x):
            return x * 2

        def preactivation(self, x):
            return x - 1

    row = Kind("app.Fused", lambda c: {}, Boundary(-0.0, 2.0, NAN, 2.0, -INF), lambda p: "(-inf, inf)")
    table = {**KINDS, Fused: row}
    net = nn.SequentialCell([Fused(), nn.ReLU()])
    assert [(r.kind, r.status) for r in activation_report(net, table=table)] == [("app.Fused", "project"),
                                                                                 ("nn.ReLU", "swappable")]
    assert [r.kind for r in activation_report(net)] == ["nn.ReLU"]
    fused, _ = activation_ranges(net, Tensor(np.float32([3.0, -1.0])), table=table)
    assert (fused.kind, fused.minimum, fused.maximum) == ("app.Fused", -2.0, 2.0)


# ---- activation input ranges ----

def test_ranges_of_the_dcgan_discriminator_match_its_layer_inputs():
    ms.set_seed(6)
    d = DcganD(16, 3, 4, n_extra_layers=1)
    d.set_train(False)
    x = tensor(3, 3, 16, 16, scale=3.0)
    inputs, h = {}, x
    for i, layer in enumerate(d.main.cell_list):
        if isinstance(layer, nn.LeakyReLU):
            inputs[f"main.{i}"] = h.asnumpy()
        h = layer(h)
    ranges = activation_ranges(d, x, clamp=0.1)
    assert [r.path for r in ranges] == list(inputs)
    for r in ranges:
        v = inputs[r.path]
        assert (r.calls, r.count, r.kind) == (1, v.size, "nn.LeakyReLU")
        assert (r.minimum, r.maximum) == (float(v.min()), float(v.max()))
        assert r.negative == int((v < 0).sum()) and r.negative_share == pytest.approx((v < 0).mean())
        assert r.clamp == 0.1 and not r.own_clamp
        assert r.clipped == int((np.abs(np.where(v > 0, v, np.float32(0.2) * v)) > 0.1).sum()) > 0
        assert not r.overflows_float16
    assert json.loads(json.dumps([r.to_dict() for r in ranges]))[0]["path"] == "main.1"


def test_ranges_flag_float16_overflow_and_a_layers_own_clamp():
    net = nn.SequentialCell([nn.ReLU(), LeakyReLU(0.5, clamp=100.0)])
    x = Tensor(np.float32([[70000.0, 65519.0, -65520.0, -1.0, 0.0, np.nan, -np.inf, 150.0]]))
    relu, clamped = activation_ranges(net, x)
    assert relu.count == 8 and relu.nan == 1 and relu.inf == 1 and relu.zero == 1 and relu.negative == 3
    assert relu.float16_overflow == 2 and relu.overflows_float16  # 70000 and -65520; 65519 rounds to 65504
    assert (relu.minimum, relu.maximum) == (-math.inf, 70000.0)
    assert relu.clamp is None and relu.clipped == 0
    assert clamped.clamp == 100.0 and clamped.own_clamp
    assert clamped.clipped == 3 and clamped.clips  # 70000, 65519 and 150 were cut to 100
    assert clamped.maximum == 70000.0 and clamped.float16_overflow == 1 and clamped.negative == 0


def test_ranges_see_a_fused_layers_preactivation():
    bn = ops.BatchNormAct(2, 0.2)
    bn.moving_mean.set_data(Tensor(np.float32([1.0, -1.0])))
    bn.moving_variance.set_data(Tensor(np.float32([4.0, 1.0])))
    x = Tensor(np.float32([[[[3.0]], [[-3.0]]], [[[1.0]], [[0.0]]]]))  # (2, 2, 1, 1)
    (r,) = activation_ranges(nn.SequentialCell([bn]), x)
    pre = ((x.asnumpy() - np.float32([1, -1]).reshape(1, 2, 1, 1))
           / np.sqrt(np.float32([4, 1]) + 1e-5).reshape(1, 2, 1, 1))
    assert r.minimum == pytest.approx(float(pre.min()), rel=1e-6) and r.maximum == pytest.approx(float(pre.max()))
    assert r.negative == 1 and r.zero == 1


def test_ranges_leave_the_network_and_context_unchanged():
    ms.set_seed(7)
    d = DcganD(16, 3, 4, n_extra_layers=1)
    d.set_train(True)
    x = tensor(2, 3, 16, 16)
    params = {p.name: p.asnumpy().copy() for p in d.get_parameters()}
    d.set_train(False)
    before = d(x).asnumpy()
    d.set_train(True)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        activation_ranges(d, x)
        assert ms.get_context("mode") == ms.GRAPH_MODE
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    assert d.training
    assert all(not c._forward_hook for _, c in d.cells_and_names())
    assert {p.name: p.asnumpy() for p in d.get_parameters()}.keys() == params.keys()
    for p in d.get_parameters():
        np.testing.assert_array_equal(p.asnumpy(), params[p.name])  # BatchNorm moving statistics too
    d.set_train(False)
    np.testing.assert_array_equal(d(x).asnumpy(), before)


def test_recorder_accumulates_calls_and_refuses_graph_mode():
    net = nn.SequentialCell([nn.ReLU()])
    with RangeRecorder(net) as rec:
        net(Tensor(np.float32([1.0, -2.0])))
        net(Tensor(np.float32([5.0, 0.5])))
    (r,) = rec.ranges()
    assert (r.calls, r.count, r.minimum, r.maximum, r.negative) == (2, 4, -2.0, 5.0, 1)
    net(Tensor(np.float32([100.0])))  # after the block: not recorded
    assert r.calls == 2
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        with pytest.raises(RuntimeError, match="PyNative"):
            with RangeRecorder(net):
                pass
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    assert FLOAT16_OVERFLOW == 65520.0
