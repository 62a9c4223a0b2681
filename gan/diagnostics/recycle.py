"""ReDo-style recycling of dormant channels (Sokar, Agarwal, Castro, Evci, ICML 2023), at the dead-channel checks.

A channel of a probed activation layer is dormant when its score mean|y_c| / mean over channels <= tau (the
`dormant` indices of a gan.diagnostics.probes record). Recycling it:
- re-initialises its incoming weights: the output-channel slice of the conv/dense layer feeding the activation
  (and its bias), drawn with the network's own initialiser (gan.models.networks `values`);
- resets a BatchNorm between them (separate, or fused into the activation) to a new channel's state: gamma
  and beta from the same initialiser, moving mean 0 and moving variance 1;
- zeroes its outgoing weights: the input-channel slice of the next conv/dense layer (that layer's bias stays);
- resets Adam's first and second moments of every slice it changed to 0 (the step counter and the other
  channels' moments stay).
Spectral norm's u vector (the power-iteration estimate of the whole matrix's top singular vector, not a
per-channel quantity) is left as it is: the next iteration adapts it to the new weights. A learned slope of the
activation (PReLU) is left too.

The draws come from the stream (seed, step, Purpose.RECYCLE, crc32(layer)) (gan.core.streams), so a resumed run
recycles the same channels with the same values. Parameters change in place (ops.assign), so compiled graphs keep
working.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Callable

import numpy as np
from mindspore import Parameter, Tensor, nn
from mindspore import ops as msops

from gan.core.streams import Purpose, stream
from gan.diagnostics.probes import ProbedActivation

LINEAR = (nn.Conv2d, nn.Conv2dTranspose, nn.Dense)  # layers whose weight has an output- and an input-channel axis
# Moving statistics of a BatchNorm and the value a new channel starts from.
FRESH_STATISTICS = {"moving_mean": 0.0, "moving_variance": 1.0}


def channel_axes(cell: nn.Cell) -> tuple[int, int]:
    """(output-channel axis, input-channel axis) of a layer's weight: (in, out, k, k) for transposed convs."""
    return (1, 0) if isinstance(cell, nn.Conv2dTranspose) else (0, 1)


@dataclass
class Site:
    """Where the channels of one probed layer live: the layer feeding it, BatchNorms between, the layer reading it."""

    layer: str  # the probe's name, e.g. "D/act1"
    incoming: tuple[str, nn.Cell]  # (name in net.layers, conv/dense)
    norms: list[tuple[str, nn.Cell]]  # (name, BatchNorm) between incoming and the activation, or fused in it
    outgoing: nn.Cell | None  # next conv/dense, None when the activation is the network's output


def probed_sequence(net: nn.Cell) -> nn.SequentialCell:
    """The SequentialCell holding the probed activations of `net`: its `layers` (gan.models.networks), else the one
    SequentialCell holding all of them (a model-zoo network's `main`); ValueError when there is none such."""
    if isinstance(getattr(net, "layers", None), nn.SequentialCell):
        return net.layers
    probes = [cell for _, cell in net.cells_and_names() if isinstance(cell, ProbedActivation)]
    holders = [cell for _, cell in net.cells_and_names() if isinstance(cell, nn.SequentialCell)
               and sum(isinstance(c, ProbedActivation) for c in cell.cells()) == len(probes) > 0]
    if not holders:
        raise ValueError(f"{type(net).__name__}: recycling needs its probed activations in one nn.SequentialCell "
                         f"(conv/dense, BatchNorm, activation in order), found {len(probes)} probed layers elsewhere")
    return holders[0]


def sites(net: nn.Cell) -> dict[str, Site]:
    """The Site of every probed activation of `net` (in its `probed_sequence`, after gan.diagnostics.probes.attach)."""
    cells = list(probed_sequence(net).name_cells().items())
    found = {}
    for k, (name, cell) in enumerate(cells):
        if not isinstance(cell, ProbedActivation):
            continue
        before = [i for i in range(k) if isinstance(cells[i][1], LINEAR)]
        after = [i for i in range(k + 1, len(cells)) if isinstance(cells[i][1], LINEAR)]
        fused_conv = isinstance(cell.act, LINEAR)  # a conv fused with its activation (gan.models.layers.ConvAct)
        if not before and not fused_conv:
            raise ValueError(f"{cell.layer}: no conv or dense layer feeds it, nothing to recycle")
        first = k if fused_conv else before[-1]
        norms = [cells[i] for i in range(first + 1, k) if isinstance(cells[i][1], nn.BatchNorm2d)]
        if isinstance(cell.act, nn.BatchNorm2d):  # fusion=bn_act: the probe wraps the fused BatchNormAct
            norms.append((name, cell.act))
        incoming = (name, cell.act) if fused_conv else cells[first]
        width = incoming[1].weight.shape[channel_axes(incoming[1])[0]]
        if width != cell.channels:
            raise ValueError(f"{cell.layer} has {cell.channels} channels but {incoming[0]} produces {width}")
        found[cell.layer] = Site(cell.layer, incoming, norms, cells[after[0]][1] if after else None)
    return found


def _write_slice(param: Parameter, channels: list[int], axis: int, value: np.ndarray | float) -> None:
    """Set the channels' slice of `param` along `axis` to `value` (the full-shape array's slice, or a constant),
    in place (ops.assign: set_data would leave compiled graphs on the old buffer)."""
    array = param.asnumpy().copy()
    index = (slice(None),) * axis + (channels,)
    array[index] = value[index] if isinstance(value, np.ndarray) else value
    msops.assign(param, Tensor(array))  # the copy keeps the parameter's dtype


class Recycler:
    """Recycles the dormant channels of one network at each check (see the module docstring)."""

    def __init__(self, net: nn.Cell, optimizer: nn.Adam, values: Callable[[str, nn.Cell, np.random.Generator], dict],
                 seed: int, purpose: Purpose) -> None:
        self.sites = sites(net)
        self.values, self.seed, self.purpose = values, seed, purpose
        self.moments = {p.name: (m1, m2) for p, m1, m2 in zip(optimizer.parameters, optimizer.moment1,
                                                               optimizer.moment2)}

    def rng(self, step: int, layer: str) -> np.random.Generator:
        """The generator of the re-initialisation of `layer` at `step`: a pure function of (seed, step, layer)."""
        return stream(self.seed, step, self.purpose, zlib.crc32(layer.encode()))

    def _reset(self, param: Parameter, channels: list[int], axis: int, value: np.ndarray | float) -> None:
        """Write the slice and zero its Adam moments (parameters without moments, the moving statistics, have none)."""
        _write_slice(param, channels, axis, value)
        for moment in self.moments.get(param.name, ()):
            _write_slice(moment, channels, axis, 0.0)

    def recycle(self, step: int, layer: str, channels: list[int]) -> None:
        """Recycle `channels` of probed layer `layer` at check step `step`."""
        site = self.sites[layer]
        rng = self.rng(step, layer)
        name, cell = site.incoming
        out_axis, _ = channel_axes(cell)
        for attr, fresh in self.values(name, cell, rng).items():
            self._reset(getattr(cell, attr), channels, out_axis if attr == "weight" else 0, fresh)
        for name, norm in site.norms:
            for attr, fresh in self.values("bn", norm, rng).items():
                self._reset(getattr(norm, attr), channels, 0, fresh)
            for attr, fresh in FRESH_STATISTICS.items():
                self._reset(getattr(norm, attr), channels, 0, fresh)
        if site.outgoing is not None:
            self._reset(site.outgoing.weight, channels, channel_axes(site.outgoing)[1], 0.0)

    def __call__(self, step: int, record: dict) -> dict[str, list[int]]:
        """Recycle the dormant channels of every layer of this network in the check `record`; return
        {layer: recycled channel indices} (empty lists included: layers that were checked and kept)."""
        done = {}
        for layer in self.sites:
            values = record["layers"].get(layer)
            if values is None:  # no pass through the layer since the previous check
                continue
            done[layer] = list(values["dormant"])
            if done[layer]:
                self.recycle(step, layer, done[layer])
        return done
