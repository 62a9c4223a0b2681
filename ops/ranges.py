"""Observed input ranges of a network's activation layers: per layer the smallest and largest input, the share of
negative inputs, and whether float16 would overflow there or a clamp would clip there.

Forward hooks record them (they fire in PyNative only: inside ms.jit or GRAPH_MODE MindSpore ignores them), and
are removed afterwards, so the network is left as it was. The layers are those `ops.activation_report` lists
(MindSpore's and the project's); a fused layer with a `preactivation(x)` method (ops.BatchNormAct) is recorded at
what its activation receives, the normalised input, not at the cell's input.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import mindspore as ms
import numpy as np
from mindspore import Tensor, nn

from .activations import check_clamp
from .swap import KINDS, Kind, kind_of, walk

__all__ = ["FLOAT16_OVERFLOW", "InputRange", "RangeRecorder", "activation_ranges"]

# float16's largest finite value is 65504; casting rounds to nearest, so |x| < 65520 still becomes 65504 and
# |x| >= 65520 becomes inf.
FLOAT16_OVERFLOW = 65520.0


@dataclass
class InputRange:
    """What one activation layer received over the recorded calls (counts are of tensor elements).

    `clamp` is the layer's own output clamp if it has one, else the configured one (None: none checked);
    `clipped` counts outputs with |y| > clamp (for a layer with its own clamp: |y| >= clamp, the values it cut)."""

    path: str
    kind: str
    calls: int = 0
    count: int = 0
    minimum: float = math.inf   # over the non-NaN inputs (inf while nothing was seen)
    maximum: float = -math.inf
    negative: int = 0           # x < 0
    zero: int = 0               # x == 0 (the negative side under strict x > 0)
    nan: int = 0
    inf: int = 0
    float16_overflow: int = 0   # finite |x| >= 65520: inf once cast to float16
    clamp: float | None = None
    own_clamp: bool = False     # the clamp is the layer's own (else the configured one)
    clipped: int = 0

    @property
    def negative_share(self) -> float:
        return self.negative / self.count if self.count else 0.0

    @property
    def overflows_float16(self) -> bool:
        return self.float16_overflow > 0

    @property
    def clips(self) -> bool:
        return self.clipped > 0

    def add(self, x: np.ndarray, y: np.ndarray) -> None:
        """Account one call: the activation's input x and its output y."""
        x64 = x.astype(np.float64, copy=False)
        finite = np.isfinite(x64)
        self.calls += 1
        self.count += x64.size
        if x64.size and not np.isnan(x64).all():
            self.minimum = min(self.minimum, float(np.nanmin(x64)))
            self.maximum = max(self.maximum, float(np.nanmax(x64)))
        self.negative += int((x64 < 0).sum())
        self.zero += int((x64 == 0).sum())
        self.nan += int(np.isnan(x64).sum())
        self.inf += int(np.isinf(x64).sum())
        self.float16_overflow += int((finite & (np.abs(x64) >= FLOAT16_OVERFLOW)).sum())
        if self.clamp is not None:
            y64 = np.abs(y.astype(np.float64, copy=False))
            self.clipped += int((y64 >= self.clamp).sum() if self.own_clamp else (y64 > self.clamp).sum())

    def to_dict(self) -> dict[str, Any]:
        """JSON-able, with the shares and flags; unseen extremes and non-finite ones as None (JSON has no inf)."""
        out = asdict(self)
        for key in ("minimum", "maximum"):
            out[key] = out[key] if math.isfinite(out[key]) else None
        return {**out, "negative_share": self.negative_share, "overflows_float16": self.overflows_float16,
                "clips": self.clips}


class RangeRecorder:
    """Records the activation input ranges of `net` while it runs in PyNative inside the `with` block:

        with RangeRecorder(D, clamp=256.0) as rec:
            for batch in batches:
                D(batch)
        for r in rec.ranges(): print(r.path, r.minimum, r.maximum, r.negative_share)

    The hooks go when the block ends (also on an error); calls inside ms.jit are not seen (calls stays 0).
    `table` says which cells are activations (ops.swap.KINDS, or a copy extended with an application's layers).
    """

    def __init__(self, net: nn.Cell, *, clamp: float | None = None, table: dict[type, Kind] = KINDS) -> None:
        if not isinstance(net, nn.Cell):
            raise TypeError(f"expected a mindspore.nn.Cell, got {type(net).__name__}")
        self.clamp = check_clamp(clamp)
        self._layers: list[tuple[nn.Cell, InputRange]] = []
        for entry in walk(net).values():
            row, exact = kind_of(entry.cell, table)
            if row is None:
                continue
            own = getattr(entry.cell, "clamp", None)
            record = InputRange(entry.paths[0], row.name if exact else type(entry.cell).__qualname__,
                                clamp=self.clamp if own is None else float(own), own_clamp=own is not None)
            self._layers.append((entry.cell, record))
        self._handles: list = []

    def __enter__(self) -> "RangeRecorder":
        if ms.get_context("mode") != ms.PYNATIVE_MODE:
            raise RuntimeError("RangeRecorder needs PyNative mode (forward hooks do not fire in graph mode): call "
                               "ms.set_context(mode=ms.PYNATIVE_MODE) first, or use activation_ranges(net, ...)")
        self._handles = [cell.register_forward_hook(self._hook(cell, record)) for cell, record in self._layers]
        return self

    def __exit__(self, *exc: Any) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []

    @staticmethod
    def _hook(cell: nn.Cell, record: InputRange):
        def hook(_cell: nn.Cell, args: tuple, output: Any) -> None:
            x = args[0]
            pre = getattr(cell, "preactivation", None)
            if pre is not None:
                x = pre(x)
            record.add(_numpy(x), _numpy(output))
        return hook

    def ranges(self) -> list[InputRange]:
        """One record per activation layer, in network order (a shared layer once, all its calls together)."""
        return [record for _, record in self._layers]


def _numpy(t: Any) -> np.ndarray:
    if not isinstance(t, Tensor):
        raise TypeError(f"an activation layer returned {type(t).__name__}, not a Tensor")
    return t.asnumpy()


def activation_ranges(net: nn.Cell, *inputs: Tensor, clamp: float | None = None,
                      table: dict[type, Kind] = KINDS) -> list[InputRange]:
    """Run net(*inputs) once in PyNative and eval mode (BatchNorm on its moving statistics, nothing updated) and
    return each activation layer's InputRange; the mode, the training flag and the network are restored."""
    mode, training = ms.get_context("mode"), net.training
    ms.set_context(mode=ms.PYNATIVE_MODE)
    net.set_train(False)
    try:
        with RangeRecorder(net, clamp=clamp, table=table) as recorder:
            net(*inputs)
    finally:
        net.set_train(training)
        ms.set_context(mode=mode)
    return recorder.ranges()
