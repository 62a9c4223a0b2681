"""Bring your own network: swap MindSpore's activation layers for the project's, and the porting check.

`swap_activations(net)` walks any Cell (nested custom Cells, nn.SequentialCell, nn.CellList, nn.CellDict, and
cells kept in plain Python lists, tuples or dicts of a Cell) and replaces MindSpore's nn.LeakyReLU, nn.ReLU,
nn.PReLU, nn.ELU and nn.RReLU by ops.LeakyReLU, ops.PReLU, ops.ELU and ops.RReLU (PReLU keeps its Parameter
object, so its name, shape and checkpoint key stay). It checks every activation first and changes nothing if one
cannot be mapped exactly. `activation_report(net)` is the same walk without changes: every activation of the
network (MindSpore's and the project's) with its parameters, whether they are MindSpore's defaults, its output
range and what it does at the points where frameworks disagree (x = -0, the gradient at 0, NaN, -inf). The porting
check flags the layers where a port may have changed the behaviour: a slope that differs from the other activations
of the same role, a framework's default slope (PyTorch's 0.01, MindSpore's and TensorFlow's 0.2) in a network whose
other activations use another value; `porting_notes` adds the network-wide lines: kinds mixed in one network, and
a consistent default slope noted once (informational). `format_report` prints both; every record has `to_dict()`.

Functional calls inside a user's `construct` (`mindspore.ops.leaky_relu(x, 0.2)`, `mindspore.ops.relu(x)`) are
not cells and cannot be swapped: replace them with `from ops import leaky_relu` and `leaky_relu(x, 0.2)`.

Boundary values of MindSpore's layers are those of MindSpore 2.10 on CPU, float32, measured in PyNative and graph
mode (tests/ops/test_swap.py measures them again); the project's follow PyTorch. Subnormal inputs and results:
MindSpore's CPU kernels flush them to zero in graph mode (and on some PyNative calls), the project's keep them.
docs/operator.md, "Swapping a network's activations", has the measured differences.
"""
from __future__ import annotations

import logging
import math
import re
import zlib
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Callable, Iterable

import numpy as np
from mindspore import Parameter, nn

from .activations import ELU, AdaptiveLeakyReLU, PReLU, RReLU, check_clamp, check_negative_slope
from .api import LeakyReLU
from .fused import BatchNormAct, BatchNormPReLU

logger = logging.getLogger("ops")

__all__ = ["FRAMEWORK_SLOPES", "KINDS", "ActivationRecord", "Boundary", "Found", "Kind", "PortingNote",
           "activation_report", "format_report", "kind_of", "porting_notes", "swap_activations", "walk"]

NAN, INF = math.nan, math.inf
# Record status: what the swap does (or did) with an activation.
SWAPPED, SWAPPABLE, REFUSED = "swapped", "swappable", "refused"
SKIPPED, PROJECT, NATIVE = "skipped", "project", "native"

Value = float | str | Callable[[dict], float | str]


@dataclass(frozen=True)
class Boundary:
    """What a layer computes where frameworks disagree, each a number (or a function of the layer's parameters):
    y(-0.0), dy/dx at x = +-0, y(NaN), dy/dx at NaN, y(-inf)."""

    neg_zero: Value
    grad_zero: Value
    nan: Value
    grad_nan: Value
    neg_inf: Value

    def show(self, params: dict) -> dict[str, str]:
        """The values for these parameters as strings ('-0', 'nan', '0.6': JSON has no -0.0 or NaN)."""
        return {label: _show(value(params) if callable(value) else value)
                for label, value in zip(BOUNDARY_LABELS, (self.neg_zero, self.grad_zero, self.nan, self.grad_nan,
                                                          self.neg_inf))}


BOUNDARY_LABELS = ("y(-0)", "dy(0)", "y(nan)", "dy(nan)", "y(-inf)")


@dataclass(frozen=True)
class Kind:
    """One row of KINDS: how to read a layer class, what it computes at the boundaries, and its swap.

    `replace(cell, params, clamp)` builds the project's equivalent (ValueError when it cannot be mapped exactly);
    `changes` says what the swap changes (docs/operator.md has the measured table); `flag(params)` adds porting
    warnings of this kind; `defaults` are the framework's defaults of the parameters and `torch_defaults` PyTorch's
    where they differ (equal to the former: the port may have relied on another framework's default); `slope(params)`
    the negative slope of a rectifier (0 for ReLU), None for other kinds: the porting check compares them."""

    name: str
    params: Callable[[nn.Cell], dict[str, Any]]
    boundary: Boundary
    output_range: Callable[[dict], str]
    defaults: dict[str, float] = field(default_factory=dict)
    torch_defaults: dict[str, float] = field(default_factory=dict)
    replace: Callable[[nn.Cell, dict, float | None], nn.Cell] | None = None
    changes: str = ""
    flag: Callable[[dict], str | None] = lambda params: None
    slope: Callable[[dict], float | None] = lambda params: None


@dataclass(frozen=True)
class ActivationRecord:
    """One activation of a network: where it is, what it is, and what the swap does (or did) with it.

    `path` is the first path that reaches the cell (the prefix MindSpore gives its parameters), `aliases` the
    others; `registered` is False for a cell held in a plain Python list/tuple/dict attribute. `status` is one of
    swapped, swappable (a dry run or report), refused (`reason` says why), skipped, project (already the
    project's), native (MindSpore's, no equivalent). `flags` are the porting check's warnings for this layer;
    `slope` its negative slope (rectifiers; None otherwise) and `role` where it sits (the class of the Cell holding
    it and the attribute, container positions as *: e.g. DcganD.main.*), which the check compares."""

    path: str
    kind: str
    params: dict[str, Any]
    at_default: tuple[str, ...]
    output_range: str
    boundary: dict[str, str]
    status: str
    new: str = ""
    reason: str = ""
    changes: str = ""
    flags: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    registered: bool = True
    slope: float | None = None
    role: str = ""

    @property
    def old(self) -> str:
        """The layer as written, e.g. nn.LeakyReLU(alpha=0.2)."""
        return _call(self.kind, self.params)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able (lists for tuples), with `old` added."""
        out = asdict(self)
        out["old"] = self.old
        return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}


def _show(v: float | str) -> str:
    return v if isinstance(v, str) else f"{float(v):.6g}"


def _call(kind: str, params: dict[str, Any]) -> str:
    """kind(name=value, ...), leaving out parameters that are None (no clamp)."""
    return f"{kind}({', '.join(f'{k}={_brief(v)}' for k, v in params.items() if v is not None)})"


def _brief(v: Any) -> str:
    """A parameter for display: numbers with 7 digits, a learned weight by its size and range."""
    if isinstance(v, list):
        return f"{v[0]:.7g}" if len(v) == 1 else f"[{len(v)} values in {min(v):.4g}..{max(v):.4g}]"
    return f"{v:.7g}" if isinstance(v, float) else repr(v)


def _weights(p: Parameter) -> list[float]:
    return [float(v) for v in np.asarray(p.asnumpy(), np.float64).reshape(-1)]


def _per_channel(values: list[float]) -> float | str:
    """One value when every channel has it, else 'weight[c]'."""
    return values[0] if len(set(values)) == 1 else "weight[c]"


def _clamped(rng: str, params: dict) -> str:
    c = params.get("clamp")
    return rng if c is None else f"{rng} clamped to [-{c:g}, {c:g}]"


def _leaky_range(slope_key: str) -> Callable[[dict], str]:
    return lambda p: _clamped("(-inf, inf)" if p[slope_key] > 0 else "[0, inf)", p)


def _fixed(rng: str) -> Callable[[dict], str]:
    return lambda p: rng


def _unmappable(what: str, err: Exception) -> ValueError:
    return ValueError(f"{what} cannot be mapped exactly: {err}")


# ---- the swaps: build the project's equivalent, or ValueError naming what cannot be mapped ----

def _to_leaky_relu(cell: nn.Cell, p: dict, clamp: float | None) -> nn.Cell:
    slope = p.get("alpha", 0.0)
    try:
        return LeakyReLU(check_negative_slope(slope), clamp=clamp)
    except ValueError as err:
        raise _unmappable(f"slope {slope!r}", err) from None


def _to_prelu(cell: nn.Cell, p: dict, clamp: float | None) -> nn.Cell:
    w = cell.w
    if len(w.shape) != 1 or str(w.dtype) not in ("Float32", "Float16"):
        raise ValueError(f"its weight {w.name} has shape {tuple(w.shape)} and dtype {w.dtype}; ops.PReLU takes a "
                         f"1-D float32 or float16 weight of shape (1,) or (C,)")
    new = PReLU(w.shape[0], clamp=clamp)
    new.weight = w  # the same Parameter object: name (checkpoint key), data, optimizer state all kept
    return new


def _to_elu(cell: nn.Cell, p: dict, clamp: float | None) -> nn.Cell:
    try:
        return ELU(p["alpha"], clamp=clamp)
    except ValueError as err:
        raise _unmappable(f"alpha {p['alpha']!r}", err) from None


def _to_rrelu(cell: nn.Cell, p: dict, clamp: float | None) -> nn.Cell:
    try:
        return RReLU(p["lower"], p["upper"], clamp=clamp)
    except ValueError as err:
        raise _unmappable(f"lower {p['lower']!r}, upper {p['upper']!r}", err) from None


def _elu_flag(p: dict) -> str | None:
    if p["alpha"] != 1.0:
        return (f"alpha={p['alpha']:g}: MindSpore's nn.ELU refuses alpha != 1 at its first call "
                f"('alpha must be 1.0f'), so this layer never ran natively; the swapped ops.ELU computes "
                f"alpha * expm1(x)")
    return None


def _rrelu_flag(p: dict) -> str | None:
    return ("MindSpore's nn.RReLU draws random slopes in eval mode too (it ignores set_train); the project's "
            "RReLU, like PyTorch's, uses (lower + upper) / 2 in eval and draws per element only in training")


_F32_THIRD = float(np.float32(1 / 3))  # nn.RReLU keeps its bounds as float32 tensors


def _pytorch(slope: Callable[[dict], float | str]) -> Boundary:
    """The boundaries of the project's (PyTorch's) x > 0 ? x : slope * x, the slope a function of the params."""
    return Boundary(-0.0, slope, NAN, slope,
                    lambda p: slope(p) * -INF if isinstance(slope(p), float) else f"{slope(p)} * -inf")


def _native(name: str, neg_zero: Value, grad_zero: Value, nan: Value, grad_nan: Value, neg_inf: Value,
            rng: Callable[[dict], str], params: Callable[[nn.Cell], dict] = lambda c: {}) -> Kind:
    """A MindSpore layer without a project equivalent: reported, left as is."""
    return Kind(name, params, Boundary(neg_zero, grad_zero, nan, grad_nan, neg_inf), rng)


KINDS: dict[type, Kind] = {
    # MindSpore 2.10's layers with a project equivalent. nn.LeakyReLU is maximum(alpha * x, x): at a tie
    # (x = +-0, +-inf) MindSpore splits the gradient evenly between the two arguments, and at NaN gives it to both.
    nn.LeakyReLU: Kind(
        "nn.LeakyReLU", lambda c: {"alpha": float(c.alpha)},
        Boundary(-0.0, lambda p: (1 + p["alpha"]) / 2, NAN, lambda p: 1 + p["alpha"], -INF), _leaky_range("alpha"),
        defaults={"alpha": 0.2}, torch_defaults={"alpha": 0.01}, replace=_to_leaky_relu, slope=lambda p: p["alpha"],
        changes="the gradient at +-0 becomes alpha (MindSpore: (1 + alpha) / 2), at +inf 1 and at -inf alpha "
                "(MindSpore: (1 + alpha) / 2), at NaN alpha (MindSpore: 1 + alpha); alpha = 0: y(-inf) becomes NaN "
                "(MindSpore: -inf); float16: within 1 ulp (the float32 slope, one rounding; MindSpore multiplies by "
                "the float16 slope in float16)"),
    nn.ReLU: Kind(
        "nn.ReLU", lambda c: {}, Boundary(0.0, 0.0, 0.0, 0.0, 0.0), _fixed("[0, inf)"), replace=_to_leaky_relu,
        slope=lambda p: 0.0,
        changes="negative inputs and -0 give -0.0 (MindSpore: +0.0; equal as numbers), so does the gradient "
                "there; y(NaN) and y(-inf) become NaN (MindSpore: 0)"),
    nn.PReLU: Kind(
        "nn.PReLU", lambda c: {"weight": _weights(c.w)},
        Boundary(-0.0, lambda p: _per_channel(p["weight"]), NAN, 1.0, -INF), _fixed("(-inf, inf)"),
        replace=_to_prelu,
        changes="the gradient at NaN becomes weight[c] (MindSpore: 1); a negative weight gives +-0 the other "
                "sign of zero; the weight gradient is summed in double (a few float32 ulp from MindSpore's float32 "
                "sums); float16 inputs: within 1 ulp (the float32 weight; MindSpore casts it to float16)"),
    nn.ELU: Kind(
        "nn.ELU", lambda c: {"alpha": float(c.elu.alpha)},
        Boundary(0.0, 1.0, NAN, 1.0, lambda p: -p["alpha"]), lambda p: _clamped(f"[{-p['alpha']:g}, inf)", p),
        defaults={"alpha": 1.0}, replace=_to_elu, flag=_elu_flag,
        changes="not bit-exact: MindSpore computes exp(x) - 1 (off by up to 2.3e-6 near x = -0.35, no correct "
                "digit as x -> 0) and the gradient from y + 1 (0 below x = -17); ops.ELU is within 1 ulp of "
                "expm1 and exp; y(-0) becomes -0.0 (MindSpore: +0.0), the gradient at NaN NaN (MindSpore: 1)"),
    nn.RReLU: Kind(
        "nn.RReLU", lambda c: {"lower": float(c.lower.asnumpy()), "upper": float(c.upper.asnumpy())},
        Boundary(-0.0, 0.0, NAN, 0.0, -INF), _fixed("(-inf, inf)"),
        defaults={"lower": 0.125, "upper": _F32_THIRD}, replace=_to_rrelu, flag=_rrelu_flag,
        changes="not bit-exact: other random slopes (same distribution, U[lower, upper]) in training, "
                "(lower + upper) / 2 in eval (MindSpore: random); gradient at 0 and NaN becomes the slope "
                "(MindSpore: 0)"),
    # MindSpore layers without an equivalent: reported with their range and boundaries (measured), never swapped.
    nn.Tanh: _native("nn.Tanh", -0.0, 1.0, NAN, NAN, -1.0, _fixed("[-1, 1]")),
    nn.Sigmoid: _native("nn.Sigmoid", 0.5, 0.25, NAN, NAN, 0.0, _fixed("[0, 1]")),
    nn.ReLU6: _native("nn.ReLU6", 0.0, 0.0, 0.0, 0.0, 0.0, _fixed("[0, 6]")),
    nn.SeLU: _native("nn.SeLU", -0.0, 1.0507010221481323, NAN, 1.0507010221481323, -1.7580993175506592,
                     _fixed("[-1.758, inf)")),
    nn.SiLU: _native("nn.SiLU", -0.0, 0.5, NAN, NAN, NAN, _fixed("[-0.2785, inf)")),
    nn.GELU: _native("nn.GELU", -0.0, 0.5, NAN, NAN, NAN, _fixed("[-0.17, inf)"),
                     lambda c: {"approximate": c.approximate}),
    nn.HSwish: _native("nn.HSwish", -0.0, 0.5, NAN, NAN, 0.0, _fixed("[-0.375, inf)")),
    nn.Mish: _native("nn.Mish", -0.0, 0.6, NAN, NAN, NAN, _fixed("[-0.3088, inf)")),
    nn.CELU: _native("nn.CELU", -0.0, 1.0, NAN, NAN, lambda p: -p["alpha"], lambda p: f"[{-p['alpha']:g}, inf)",
                     lambda c: {"alpha": float(c.celu.alpha)}),
    nn.Hardtanh: _native("nn.Hardtanh", -0.0, 1.0, lambda p: p["min_val"], 1.0, lambda p: p["min_val"],
                         lambda p: f"[{p['min_val']:g}, {p['max_val']:g}]",
                         lambda c: {"min_val": float(c.min_val), "max_val": float(c.max_val)}),
    # The project's cells (PyTorch semantics: strict x > 0, the slope's gradient at 0, NaN propagates).
    LeakyReLU: Kind("ops.LeakyReLU", lambda c: {"negative_slope": c.negative_slope, "clamp": c.clamp},
                    _pytorch(lambda p: p["negative_slope"]), _leaky_range("negative_slope"),
                    slope=lambda p: p["negative_slope"]),
    PReLU: Kind("ops.PReLU", lambda c: {"weight": _weights(c.weight), "clamp": c.clamp},
                _pytorch(lambda p: _per_channel(p["weight"])), lambda p: _clamped("(-inf, inf)", p)),
    ELU: Kind("ops.ELU", lambda c: {"alpha": c.alpha, "clamp": c.clamp},
              Boundary(-0.0, lambda p: p["alpha"], NAN, NAN, lambda p: -p["alpha"]),
              lambda p: _clamped(f"[{-p['alpha']:g}, inf)", p), defaults={"alpha": 1.0}),
    RReLU: Kind("ops.RReLU", lambda c: {"lower": c.lower, "upper": c.upper, "clamp": c.clamp},
                _pytorch(lambda p: (p["lower"] + p["upper"]) / 2), lambda p: _clamped("(-inf, inf)", p),
                defaults={"lower": 0.125, "upper": 1 / 3}),
    AdaptiveLeakyReLU: Kind("ops.AdaptiveLeakyReLU", lambda c: {"alpha": _weights(c.alpha), "clamp": c.clamp},
                            _pytorch(lambda p: "slope[c]"), lambda p: _clamped("(-inf, inf)", p)),
    BatchNormAct: Kind("ops.BatchNormAct", lambda c: {"negative_slope": c.negative_slope, "gain": c.gain,
                                                      "clamp": c.clamp},
                       _pytorch(lambda p: p["negative_slope"]), _leaky_range("negative_slope"),
                       slope=lambda p: p["negative_slope"]),
    BatchNormPReLU: Kind("ops.BatchNormPReLU", lambda c: {"weight": _weights(c.prelu_weight), "gain": c.gain,
                                                          "clamp": c.clamp},
                         _pytorch(lambda p: _per_channel(p["weight"])), lambda p: _clamped("(-inf, inf)", p)),
}
SWAPPABLE_KINDS = tuple(k.name for k in KINDS.values() if k.replace is not None)


# ---- the walk ----

@dataclass
class Found:
    """A cell of a network: every path that reaches it (the first is MindSpore's name for it) and whether it is
    registered (False: reachable only through a plain list/tuple/dict attribute)."""

    cell: nn.Cell
    paths: list[str]
    registered: bool


def _children(cell: nn.Cell) -> Iterable[tuple[str, nn.Cell]]:
    return ((name, child) for name, child in cell._cells.items() if child is not None)


def _items(value: Any) -> Iterable[tuple[Any, Any]]:
    """(key, item) of a plain list, tuple or dict; nothing for anything else."""
    if isinstance(value, dict):
        return list(value.items())
    return list(enumerate(value)) if isinstance(value, (list, tuple)) else []


def _plain_cells(value: Any, path: str, seen: set[int]) -> Iterable[tuple[str, nn.Cell]]:
    """Cells inside plain lists, tuples and dicts (nested; each container once), with paths like attr[0], attr[key]."""
    if id(value) in seen:
        return
    seen.add(id(value))
    for key, item in _items(value):
        sub = f"{path}[{key}]"
        if isinstance(item, nn.Cell):
            yield sub, item
        else:
            yield from _plain_cells(item, sub, seen)


def _plain_attrs(cell: nn.Cell) -> Iterable[tuple[str, Any]]:
    """A Cell's public attributes that are plain containers (MindSpore's own registries start with '_')."""
    return ((k, v) for k, v in vars(cell).items() if not k.startswith("_") and isinstance(v, (list, tuple, dict)))


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def walk(net: nn.Cell) -> dict[int, Found]:
    """Every cell of net by id, in order: first the registered tree (paths as cells_and_names gives them, and
    every further path of a shared cell), then the cells reachable only through plain containers."""
    found: dict[int, Found] = {}
    order: list[Found] = []

    def add(cell: nn.Cell, path: str, registered: bool) -> None:
        entry = found.get(id(cell))
        if entry is not None:
            if registered:
                entry.paths.append(path)
            return
        entry = found[id(cell)] = Found(cell, [path], registered)
        order.append(entry)
        for name, child in _children(cell):
            add(child, _join(path, name), registered)

    add(net, "", True)
    seen: set[int] = set()
    for entry in order:  # grows while it runs: plain containers of every cell found, registered or not
        for attr, value in _plain_attrs(entry.cell):
            for sub, cell in _plain_cells(value, _join(entry.paths[0], attr), seen):
                add(cell, sub, False)
    return found


def kind_of(cell: nn.Cell, kinds: dict[type, Kind]) -> tuple[Kind | None, bool]:
    """(the row, exact): the row of the cell's class, else of its nearest listed base class (exact False)."""
    row = kinds.get(type(cell))
    if row is not None:
        return row, True
    base = next((kinds[c] for c in type(cell).__mro__ if c in kinds), None)
    return base, False


def _record(entry: Found, row: Kind, exact: bool, apply: bool, clamp: float | None,
            skip: bool, role: str) -> tuple[ActivationRecord, nn.Cell | None]:
    """The record of one activation and, where it is swapped, its replacement."""
    cell = entry.cell
    params = row.params(cell)
    flags = [f for f in [row.flag(params)] if f]
    if not entry.registered and any(True for _ in cell.get_parameters()):
        flags.append("held in a plain Python list/tuple/dict, not registered with the network: its parameters are "
                     "not trained, not saved in checkpoints and not listed; use nn.CellList or nn.CellDict")
    kind = row.name if exact else f"{type(cell).__module__}.{type(cell).__qualname__} ({row.name} subclass)"
    base = dict(path=entry.paths[0], kind=kind, params=params,
                at_default=tuple(k for k, v in row.defaults.items() if params.get(k) == v),
                output_range=row.output_range(params), boundary=row.boundary.show(params), flags=tuple(flags),
                aliases=tuple(entry.paths[1:]), registered=entry.registered, changes=row.changes,
                slope=row.slope(params), role=role)
    if row.replace is None:
        return ActivationRecord(status=NATIVE if row.name.startswith("nn.") else PROJECT, **base), None
    if skip:
        return ActivationRecord(status=SKIPPED, **base), None
    if not exact:
        return ActivationRecord(status=REFUSED, reason=f"{kind}: a subclass may compute something else; swap it by "
                                f"hand or leave it with skip=[{entry.paths[0]!r}]", **base), None
    if entry.paths[0] == "":
        return ActivationRecord(status=REFUSED, reason="the network itself is the activation: build the project's "
                                "layer instead", **base), None
    try:
        new = row.replace(cell, params, clamp)
    except ValueError as err:
        return ActivationRecord(status=REFUSED, reason=str(err), **base), None
    new.set_train(cell.training)
    precision = {k: v for k, v in cell.get_flags().items() if k in ("fp16", "fp32", "bf16")}  # amp's marks
    if precision:
        new.add_flags_recursive(**precision)
    status = SWAPPED if apply else SWAPPABLE
    return ActivationRecord(status=status, new=_describe(new), **base), new


def _describe(cell: nn.Cell) -> str:
    """The replacement as written, e.g. ops.LeakyReLU(negative_slope=0.2)."""
    row = KINDS[type(cell)]
    return _call(row.name, row.params(cell))


def _check_skip(skip: Iterable[str], found: dict[int, Found]) -> set[str]:
    """The skipped paths; ValueError for one that names no cell."""
    paths = {p for entry in found.values() for p in entry.paths}
    skip = set(skip)
    unknown = sorted(skip - paths)
    if unknown:
        raise ValueError(f"skip={unknown} names no cell of the network; its paths are e.g. {sorted(paths - {''})[:8]}")
    return skip


def _skipped(entry: Found, skip: set[str]) -> bool:
    """Whether a path of the cell is, or lies under, a skipped path."""
    return any(p == s or p.startswith(s + ".") or p.startswith(s + "[") for p in entry.paths for s in skip)


def _survey(net: nn.Cell, *, kinds: Iterable[str] | None, skip: Iterable[str], clamp: float | None, apply: bool,
            table: dict[type, Kind] = KINDS) -> tuple[dict[int, Found], list[ActivationRecord], dict[int, nn.Cell]]:
    """The walk, one record per activation, and the replacements by id of the old cell."""
    if not isinstance(net, nn.Cell):
        raise TypeError(f"expected a mindspore.nn.Cell, got {type(net).__name__}")
    chosen = set(SWAPPABLE_KINDS if kinds is None else kinds)
    unknown = sorted(chosen - set(SWAPPABLE_KINDS))
    if unknown:
        raise ValueError(f"kinds={unknown} are not swappable kinds; choose from {list(SWAPPABLE_KINDS)}")
    clamp = check_clamp(clamp)
    found = walk(net)
    skip = _check_skip(skip, found)
    records, new = [], {}
    cells = {path: entry.cell for entry in found.values() for path in entry.paths}
    for key, entry in found.items():
        row, exact = kind_of(entry.cell, table)
        if row is None:
            continue
        skipped = _skipped(entry, skip) or (row.replace is not None and row.name not in chosen)
        record, replacement = _record(entry, row, exact, apply, clamp, skipped, _role(entry.paths[0], cells))
        records.append(record)
        if replacement is not None:
            new[key] = replacement
    return found, _porting_flags(records), new


# ---- the porting check: what a port may have changed, apart from what is merely a framework's default ----

# Negative slopes that are a framework's default: a layer built without a slope got one of these.
FRAMEWORK_SLOPES = {0.01: "PyTorch's nn.LeakyReLU default",
                    0.2: "MindSpore's nn.LeakyReLU and TensorFlow's tf.nn.leaky_relu default",
                    0.3: "Keras's LeakyReLU default"}
_DEFAULTS_TEXT = "defaults: " + ", ".join(f"{v:g} {who.split(' default')[0]}" for v, who in FRAMEWORK_SLOPES.items())
# Output squashers: a final Tanh or Sigmoid beside hidden rectifiers is not a mix of kinds.
OUTPUT_KINDS = ("nn.Tanh", "nn.Sigmoid", "nn.Hardtanh")
CHECK, DEFAULT = "check", "default"


@dataclass(frozen=True)
class PortingNote:
    """A network-wide line of the porting check: `level` check (read it: a port may have changed something) or
    default (informational: a framework's default slope used consistently), the text, and the layers it names."""

    level: str
    text: str
    paths: tuple[str, ...]


def _positional(part: str) -> bool:
    return part.isdigit()


def _role(path: str, cells: dict[str, nn.Cell]) -> str:
    """Where a layer sits: the class of the Cell holding it and the attribute path below it, container positions as
    * (main.4 of a DcganD: DcganD.main.*; enc.block2.act: Block.act), so siblings of one role share it."""
    if not path:
        return ""
    parts = path.split(".")
    j = len(parts) - 1
    while j > 0 and _positional(parts[j]):
        j -= 1
    owner = "" if _positional(parts[j]) else ".".join(parts[:j])
    tail = parts if owner == "" and _positional(parts[j]) else parts[j:]
    generic = ["*" if _positional(p) else re.sub(r"\[[^\]]*\]$", "[*]", p) for p in tail]
    return f"{type(cells.get(owner)).__name__}." + ".".join(generic)


def _leaky(records: Iterable[ActivationRecord]) -> list[ActivationRecord]:
    """The rectifiers with a nonzero negative slope (LeakyReLU and its fused forms)."""
    return [r for r in records if r.slope is not None and r.slope > 0]


def _majority(slopes: Iterable[float]) -> tuple[float, int]:
    """The most common slope and how many layers use it (the first seen among equals)."""
    return Counter(slopes).most_common(1)[0]


def _default_of(slope: float) -> str:
    who = FRAMEWORK_SLOPES.get(slope)
    return f" ({who})" if who else ""


def _porting_flags(records: list[ActivationRecord]) -> list[ActivationRecord]:
    """The records with the porting check's per-layer flags added: a slope that differs from the others of its
    role, and a framework's default slope where the network's other leaky activations use another value."""
    leaky = _leaky(records)
    added: dict[str, list[str]] = {}
    for role in dict.fromkeys(r.role for r in leaky):
        siblings = [r for r in leaky if r.role == role]
        common, count = _majority(r.slope for r in siblings)
        for r in siblings:
            if r.slope != common:
                added.setdefault(r.path, []).append(
                    f"slope {r.slope:g}{_default_of(r.slope)} where {count} other activation(s) of the same role "
                    f"({role}) use {common:g}: check the source's slope for this layer")
    if leaky:
        common, count = _majority(r.slope for r in leaky)
        for r in leaky:
            if r.slope != common and r.slope in FRAMEWORK_SLOPES and r.path not in added:
                added[r.path] = [f"slope {r.slope:g} is {FRAMEWORK_SLOPES[r.slope]} while {count} other leaky "
                                 f"activation(s) of this network use {common:g}: did the port rely on a default?"]
    return [replace(r, flags=r.flags + tuple(added[r.path])) if r.path in added else r for r in records]


def _family(r: ActivationRecord) -> str:
    """ReLU, LeakyReLU (by slope) or the layer's kind without the framework prefix."""
    if r.slope is not None:
        return "ReLU" if r.slope == 0 else "LeakyReLU"
    return r.kind.split(" ")[0].rsplit(".", 1)[-1]


def _paths(records: list[ActivationRecord], n: int = 4) -> str:
    more = f" and {len(records) - n} more" if len(records) > n else ""
    return ", ".join(r.path or "(root)" for r in records[:n]) + more


def porting_notes(records: Iterable[ActivationRecord]) -> list[PortingNote]:
    """The network-wide lines of the porting check, for the records of one network (G or D): kinds mixed among its
    hidden activations (check: intended in some designs, e.g. a U-Net's LeakyReLU encoder and ReLU decoder), and
    each framework default slope the network uses throughout, noted once (default: informational)."""
    records = list(records)
    notes = []
    hidden = [r for r in records if r.kind.split(" ")[0] not in OUTPUT_KINDS]
    families = {f: [r for r in hidden if _family(r) == f] for f in dict.fromkeys(_family(r) for r in hidden)}
    if len(families) > 1:
        parts = "; ".join(f"{name} x{len(rs)} ({_paths(rs)})" for name, rs in families.items())
        notes.append(PortingNote(CHECK, f"kinds mixed in this network: {parts}; intended in some designs (a U-Net's "
                                        f"LeakyReLU encoder and ReLU decoder), a slip in a port otherwise: compare "
                                        f"each with the source", tuple(r.path for r in hidden)))
    flagged = {r.path for r in records if r.flags}
    for slope, who in FRAMEWORK_SLOPES.items():
        users = [r for r in _leaky(records) if r.slope == slope and r.path not in flagged]
        if users:
            notes.append(PortingNote(DEFAULT, f"slope {slope:g} is {who}, used by {len(users)} activation(s) "
                                              f"({_paths(users)}): noted once; it matters only if the original "
                                              f"network had another slope there ({_DEFAULTS_TEXT})",
                                     tuple(r.path for r in users)))
    return notes


def activation_report(net: nn.Cell, *, table: dict[type, Kind] = KINDS) -> list[ActivationRecord]:
    """Every activation layer of net (MindSpore's and the project's), in network order, with what
    swap_activations would do with it; changes nothing. The porting check: print it with format_report.
    `table` maps layer classes to their rows: KINDS, or a copy extended with an application's own layers."""
    return _survey(net, kinds=None, skip=(), clamp=None, apply=False, table=table)[1]


def swap_activations(net: nn.Cell, *, kinds: Iterable[str] | None = None, skip: Iterable[str] = (),
                     clamp: float | None = None, rrelu_seed: int = 0,
                     dry_run: bool = False) -> list[ActivationRecord]:
    """Replace MindSpore's activation layers in net (in place) by the project's; return the records of the
    replaced ones (path, old, new, what changes).

    nn.LeakyReLU(alpha) -> ops.LeakyReLU(alpha), nn.ReLU -> ops.LeakyReLU(0), nn.PReLU -> ops.PReLU holding the
    same Parameter (its checkpoint key is kept), nn.ELU(alpha) -> ops.ELU(alpha), nn.RReLU(lower, upper) ->
    ops.RReLU(lower, upper) with seed crc32(path) ^ rrelu_seed and a draw counter Parameter named <path>.counter.
    `kinds` restricts the swap (e.g. ["nn.LeakyReLU"]); `skip` leaves the cells at these paths (and below) as
    they are; `clamp` gives every new layer that output clamp (which changes results where |y| > clamp).
    Every activation is checked first: if one cannot be mapped exactly (a slope outside [0, 1], an alpha or
    weight the op refuses, a subclass), ValueError lists them all and the network is left untouched.
    `dry_run=True` checks (raising as the swap would) and returns the records (status 'swappable') without
    changing anything.

    A layer marked by amp.auto_mixed_precision keeps its mark (fp16/fp32/bf16 flags) on the replacement.
    Call it before the network is compiled: a network already compiled in graph mode has its compiled graphs
    released (the next call compiles the swapped network), but an ms.jit function compiled earlier keeps the old
    layers. Functional calls in a construct (mindspore.ops.leaky_relu(x, 0.2)) are not layers and stay as they
    are: write `from ops import leaky_relu` and call leaky_relu(x, 0.2) there.
    """
    if isinstance(rrelu_seed, bool) or not isinstance(rrelu_seed, int) or not 0 <= rrelu_seed < 2 ** 31:
        raise ValueError(f"rrelu_seed={rrelu_seed!r} is not allowed: it must be an integer in [0, 2**31)")
    found, records, new = _survey(net, kinds=kinds, skip=skip, clamp=clamp, apply=not dry_run)
    refused = [r for r in records if r.status == REFUSED]
    if refused:
        lines = "\n".join(f"  {r.path or '(root)'}: {r.old}: {r.reason}" for r in refused)
        raise ValueError(f"swap_activations refused {len(refused)} activation(s) of {type(net).__name__}; nothing "
                         f"was changed:\n{lines}\nFix them, or leave them as they are with skip=[...] or kinds=[...]")
    done = [r for r in records if r.status in (SWAPPED, SWAPPABLE)]
    if dry_run:
        return done
    _name_new_parameters(net, found, new, rrelu_seed)
    seen: set[int] = set()
    for entry in found.values():
        _replace_children(entry.cell, new, seen)
    _release_compiled(found)
    for r in done:
        logger.info("swap_activations: %s: %s -> %s", r.path, r.old, r.new)
    return done


def _name_new_parameters(net: nn.Cell, found: dict[int, Found], new: dict[int, nn.Cell], seed: int) -> None:
    """Give each new RReLU its seed and a unique counter name under the network's parameter-name prefix."""
    prefix = _name_prefix(net)
    for key, cell in new.items():
        if isinstance(cell, RReLU):
            path = found[key].paths[0]
            cell.reseed((zlib.crc32(path.encode()) ^ seed) & 0x7FFFFFFF)
            cell.counter.name = f"{prefix}{path}.counter"


def _name_prefix(net: nn.Cell) -> str:
    """The prefix MindSpore put before the attribute paths of net's parameter names ('' for a top-level net)."""
    for path, param in net.parameters_and_names():
        if param.name.endswith(path):
            return param.name[: len(param.name) - len(path)]
    return ""


def _replace_children(cell: nn.Cell, new: dict[int, nn.Cell], seen: set[int]) -> None:
    """Point the cell's registered children and its plain containers at the replacements."""
    for name, child in list(_children(cell)):
        if id(child) in new:
            cell.insert_child_to_cell(name, new[id(child)])  # not setattr: that would re-prefix parameter names
    for attr, value in list(_plain_attrs(cell)):  # SequentialCell.cell_list is one of them
        replaced = _replace_plain(value, new, seen)
        if replaced is not value:
            object.__setattr__(cell, attr, replaced)


def _replace_plain(value: Any, new: dict[int, nn.Cell], seen: set[int]) -> Any:
    """The container with its cells replaced (each container once): lists and dicts in place, a tuple rebuilt."""
    if not isinstance(value, (list, tuple, dict)) or id(value) in seen:
        return value
    seen.add(id(value))
    items = {key: new.get(id(item), item) if isinstance(item, nn.Cell) else _replace_plain(item, new, seen)
             for key, item in _items(value)}
    changed = {key: item for key, item in items.items() if item is not value[key]}
    if not changed:
        return value
    if isinstance(value, tuple):
        rebuilt = [items[i] for i in range(len(value))]
        return type(value)(*rebuilt) if hasattr(value, "_fields") else type(value)(rebuilt)  # namedtuples too
    for key, item in changed.items():
        value[key] = item
    return value


def _release_compiled(found: dict[int, Found]) -> None:
    """Drop the graphs compiled for any cell of the network (as Cell.__del__ does), so the next call compiles
    the swapped one; a compiled graph would otherwise keep running the old layers."""
    from mindspore.graph.api import _cell_graph_executor
    for entry in found.values():
        cache = getattr(entry.cell, "_compile_cache", None)
        if cache:
            _cell_graph_executor.del_net_res(entry.cell, cache)
            cache.clear()
            logger.info("swap_activations: released the graphs compiled for %s before the swap",
                        entry.paths[0] or type(entry.cell).__name__)


_STATUS_TEXT = {PROJECT: "(project layer)", NATIVE: "(no equivalent: left as is)", SKIPPED: "(skipped)"}


def _swap_column(r: ActivationRecord) -> str:
    if r.status == REFUSED:
        return f"refused: {r.reason}"
    return f"{'-> ' if r.status == SWAPPABLE else 'now '}{r.new}" if r.new else _STATUS_TEXT[r.status]


def format_report(records: Iterable[ActivationRecord]) -> str:
    """The records as a text table (one line per activation), then the porting check: the flags and network-wide
    checks first ("check:"), a framework default used consistently once ("default:"), what the swap changes."""
    records = list(records)
    if not records:
        return "no activation layers found"
    head = ("path", "layer", "output range", *BOUNDARY_LABELS, "swap")
    rows = [(" = ".join([r.path or "(root)", *r.aliases]), r.old, r.output_range, *r.boundary.values(), _swap_column(r))
            for r in records]
    widths = [max(len(str(row[i])) for row in (head, *rows)) for i in range(len(head))]
    lines = ["  ".join(str(v).ljust(w) for v, w in zip(row, widths)).rstrip() for row in (head, *rows)]
    lines.insert(1, "  ".join("-" * w for w in widths))
    flags: dict[str, list[str]] = {}  # flag -> the paths it applies to, in order
    changes: dict[str, list[str]] = {}
    for r in records:
        for flag in r.flags:
            flags.setdefault(flag, []).append(r.path or "(root)")
        if r.status in (SWAPPED, SWAPPABLE) and r.changes:
            changes.setdefault(f"the swap changes ({r.kind}): {r.changes}", []).append(r.path or "(root)")
    network = porting_notes(records)
    below = ([f"check: {', '.join(paths)}: {flag}" for flag, paths in flags.items()]
             + [f"{n.level}: {n.text}" for n in network if n.level == CHECK]
             + [f"{n.level}: {n.text}" for n in network if n.level == DEFAULT]
             + [f"{', '.join(paths)}: {note}" for note, paths in changes.items()])
    return "\n".join(lines + ([""] + below if below else []))
