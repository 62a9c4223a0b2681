"""Dead-channel diagnostics for any MindSpore network built with the project's activations (graph and PyNative).

Collection: `attach(net, example_input, "G")` wraps every activation cell of ops (PROBED_CELLS: the Cell of each
activation kind, the fused BatchNormAct and conv + activation layers) of `net` in a `ProbedActivation` that,
inside `construct`, adds per-channel statistics of the pre-activation x and of the output y to non-trainable
Parameters (`ops.assign_add`), and taps dL/dy with `ops.InsertGradientOf`.
Both work inside `ms.jit` and in PyNative, unlike Cell hooks, which graph mode
ignores. The sums accumulate over every pass since the previous check (e.g. D's passes on real and fake
batches) and `DeadChannelTracker.check` reads and resets them, so no activation tensor ever reaches the
host. The probes work only when `enabled` (see `set_probing`): a training loop compiles its steps twice,
with probes off for ordinary steps and on for check steps, so only check steps pay. Without `attach` the
network is untouched.

The statistics of a check, the records and their heatmaps are MindSpore-free numpy (gan.analysis.channels, shared
with the offline viewers); this module is the graph side (probes, `attach`) and the writer (TensorBoard,
diagnostics.jsonl).

Recycling (diagnostics.recycle, gan.diagnostics.recycle): a record's `dormant` channels can be re-initialised right
after the check; the record then carries `recycled` and the logger writes `recycle` events and counts.

Wiring into a training loop: `TrainingDiagnostics` (schedule, records, resume state, hparams), with two
jitted steps selected by `due(step)` and `set_probing`; docs/diagnostics.md shows the loop. Checkpoints
and EMA must skip the probe Parameters: filter names with `is_diagnostic_param`.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Callable

import mindspore as ms
import numpy as np
from mindspore import Parameter, Tensor, nn
from mindspore import ops as msops

import ops as lrelu_ops
from gan.analysis.channels import (
    HIST_BINS,
    HIST_SCALE,
    HIST_U_MAX,
    SUMMARY_METRICS,
    Criteria,
    DeadChannelTracker,
    Histogram,
    LayerStats,
    channel_matrix,
    display_names,
    heatmap_image,
    json_values,
    network_of,
    network_summaries,
)
from gan.config.activation_kinds import ACTIVATION_KINDS
from gan.config.schema import HPARAM_KEYS
from gan.models.layers import BiasAct, ConvAct
from gan.run.files import DIAGNOSTICS_FILE, append_event, append_jsonl, read_jsonl
from ops import BatchNormAct, BatchNormPReLU, batch_moments

# The project's activation cells: every kind's Cell (gan.config.activation_kinds), BatchNormAct (fused BN + activation)
# and ConvAct (a conv fused with its activation, gan.models.layers); and the learnable slope tensor of those that learn
# one, recorded per channel at every check ("slopes" in diagnostics.jsonl, TensorBoard histograms).
_KIND_CELLS = {getattr(lrelu_ops, row.cell): row.learnable for row in ACTIVATION_KINDS.values()}
PROBED_CELLS = (*_KIND_CELLS, BatchNormAct, ConvAct)
LEARNED_SLOPES = {cell: attr for cell, attr in _KIND_CELLS.items() if attr} | {BatchNormPReLU: "prelu_weight",
                                                                            BiasAct: "prelu_weight"}
PARAM_PREFIX = "diag_"  # attribute name of every probe Parameter, so any renaming keeps it as the last part


def is_diagnostic_param(name: str) -> bool:
    """True for the probe Parameters added by `attach` (to exclude from checkpoints, EMA and optimizers)."""
    return name.rsplit(".", 1)[-1].startswith(PARAM_PREFIX)


def channel_layout(act: nn.Cell) -> str:
    """Where an activation cell's tensors keep their channels: "NHWC" (last axis) for a cell built with
    layout="NHWC" (ops.BatchNormAct, a channels-last oneDNN conv layer, an activation of a channels-last network:
    ops.norm_act_layers), else "NCHW" (axis 1, what every other cell of the project takes)."""
    return getattr(act, "layout", "NCHW")


class ProbedActivation(nn.Cell):
    """Wraps an activation cell: accumulates statistics of its input, output and output gradient in Parameters."""

    def __init__(self, act: nn.Cell, layer: str, channels: int, ndim: int, path: str = "", uses: int = 1,
                 unseen: tuple[str, ...] = ()) -> None:
        super().__init__(auto_prefix=False)  # the wrapped layer's parameters (BatchNormAct's) keep their names
        self.act = act
        self.layer = layer  # the display name (gan.analysis.channels.display_names), e.g. "G/act1"
        self.path = path  # the full Cell path in its network
        self.uses = uses  # places one forward pass calls the cell: each call adds to the sums, pooling them
        self.unseen = unseen  # the activations of its network no probe sees (unprobed_activations)
        self.channels = channels
        self.layout = channel_layout(act)
        axis = ndim - 1 if self.layout == "NHWC" else 1
        self.axes = tuple(i for i in range(ndim) if i != axis)
        # (size, reset value); extremes hold [-min, max], so both update with a maximum.
        self._layout = {"neg_frac": (channels, 0.0), "out_abs": (channels, 0.0), "grad_abs": (channels, 0.0),
                        "passes": (2, 0.0), "preact_hist": (HIST_BINS, 0.0), "preact_sums": (2, 0.0),
                        "preact_extremes": (2, -np.inf), "grad_hist": (HIST_BINS, 0.0), "grad_sums": (2, 0.0),
                        "grad_extremes": (2, -np.inf)}
        for key, (size, fill) in self._layout.items():
            setattr(self, PARAM_PREFIX + key, Parameter(Tensor(np.full(size, fill, np.float32)),
                                                        name=PARAM_PREFIX + key, requires_grad=False))
        self.forward_pass = Tensor(np.array([1, 0], np.float32))
        self.backward_pass = Tensor(np.array([0, 1], np.float32))
        self.tap = msops.InsertGradientOf(self._record_grad)
        self.fused = isinstance(act, BatchNormAct)
        self.conv_fused = isinstance(act, ConvAct)
        self.stat_shape = tuple(channels if i == axis else 1 for i in range(ndim))
        self.enabled = True
        # Off in D steps with a gradient penalty: MindSpore cannot differentiate InsertGradientOf twice, so
        # those steps record no gradient statistics (grad_passes stays 0 and grad-dead is None there).
        self.tap_gradients = True

    def _record_histogram(self, v: Tensor, hist: Parameter, extremes: Parameter, sums: Parameter) -> None:
        """Add v's fixed-bin histogram, extremes and moments to the given Parameters."""
        u = msops.clamp(msops.asinh(v / HIST_SCALE), -HIST_U_MAX, HIST_U_MAX)
        msops.assign_add(hist, msops.histc(u, HIST_BINS, -HIST_U_MAX, HIST_U_MAX))
        msops.assign(extremes, msops.maximum(extremes, msops.stack((-v.min(), v.max()))))
        msops.assign_add(sums, msops.stack((v.sum(), (v * v).sum())))

    def _record_grad(self, dout: Tensor) -> Tensor:
        """Gradient tap: add per-channel mean |dL/dy| and the gradient histogram; pass dout through."""
        g = dout.astype(ms.float32)
        msops.assign_add(self.diag_grad_abs, msops.abs(g).mean(axis=self.axes))
        self._record_histogram(g, self.diag_grad_hist, self.diag_grad_extremes, self.diag_grad_sums)
        msops.assign_add(self.diag_passes, self.backward_pass)
        return dout

    def _preact(self, x: Tensor) -> Tensor:
        """The activation's input in fp32: x itself, the normalised value inside a fused BatchNormAct, or the
        conv + bias inside a fused conv layer (recomputed: probes run at check steps only)."""
        # precision=fp16 (amp O2) wraps BatchNorm cells, BatchNormAct included, in a cell casting the output to
        # float16; the wrapped cell (`_backbone`) holds the statistics and weights
        act = getattr(self.act, "_backbone", self.act)
        if self.conv_fused:
            return act.preactivation(x).astype(ms.float32)
        xf = x.astype(ms.float32)
        if not self.fused:
            return xf
        bn = act  # a BatchNormAct
        if bn.training:  # batch statistics (biased variance; over all ranks when synced), as the kernel normalises
            mean, var, _ = batch_moments(xf, bn.sum_across, bn.layout)
        else:
            mean, var = bn.moving_mean, bn.moving_variance
        return (xf - mean.reshape(self.stat_shape)) * msops.rsqrt(var.reshape(self.stat_shape) + bn.eps) \
            * bn.gamma.reshape(self.stat_shape) + bn.beta.reshape(self.stat_shape)

    def construct(self, x: Tensor) -> Tensor:
        y = self.act(x)
        if not self.enabled:  # a plain attribute: frozen into each jitted graph at its compile
            return y
        xf = self._preact(x)
        msops.assign_add(self.diag_neg_frac, (xf <= 0).astype(ms.float32).mean(axis=self.axes))
        msops.assign_add(self.diag_out_abs, msops.abs(y.astype(ms.float32)).mean(axis=self.axes))
        self._record_histogram(xf, self.diag_preact_hist, self.diag_preact_extremes, self.diag_preact_sums)
        msops.assign_add(self.diag_passes, self.forward_pass)
        return self.tap(y) if self.tap_gradients else y

    def keep_statistics_fp32(self) -> None:
        """After amp O2: no automatic casts in this cell's own ops, so its statistics stay float32 (amp would
        cast them to float16, whose sums of squares overflow); the wrapped activation keeps amp's setting."""
        self.add_flags(fp16=False, bf16=False, fp32=False)

    def learned_slopes(self) -> list[float] | None:
        """The wrapped layer's learned slopes (PReLU weight, adaptive alpha; one per channel, or one shared),
        None for activations without a learnable slope."""
        name = next((n for cls, n in LEARNED_SLOPES.items() if isinstance(self.act, cls)), None)
        weight = None if name is None else getattr(self.act, name)
        return None if weight is None else json_values(weight.asnumpy().astype(np.float64))

    def probe_params(self) -> list[Parameter]:
        """The Parameters this probe writes."""
        return [getattr(self, PARAM_PREFIX + key) for key in self._layout]

    def collect(self) -> LayerStats:
        """Read the averages since the previous collect, then reset the accumulators."""
        v = {key: p.asnumpy().astype(np.float64) for key, p in zip(self._layout, self.probe_params())}
        passes, grad_passes = int(v["passes"][0]), int(v["passes"][1])
        for (size, fill), p in zip(self._layout.values(), self.probe_params()):
            # In place: set_data would swap the buffer and leave compiled graphs writing to the old one.
            msops.assign(p, Tensor(np.full(size, fill, np.float32)))
        return LayerStats(v["neg_frac"] / max(passes, 1), v["out_abs"] / max(passes, 1),
                          v["grad_abs"] / grad_passes if grad_passes else None, passes, grad_passes,
                          Histogram.from_sums(v["preact_hist"], v["preact_extremes"], v["preact_sums"]),
                          Histogram.from_sums(v["grad_hist"], v["grad_extremes"], v["grad_sums"]), self.path, self.uses)


def _activation_calls(net: nn.Cell, example_input: Tensor | tuple, paths: list[str]) -> dict[str, list[tuple]]:
    """Output shape of each call of each activation cell, from one PyNative forward pass with forward hooks (BN in
    eval), keyed by path in the order the pass first reaches each cell (a cell used at several places: one shape
    per use)."""
    cells = dict(net.cells_and_names())
    calls: dict[str, list[tuple]] = {}
    handles = [cells[p].register_forward_hook(
        lambda cell, inputs, output, p=p: calls.setdefault(p, []).append(tuple(output.shape))) for p in paths]
    mode, training = ms.get_context("mode"), net.training
    ms.set_context(mode=ms.PYNATIVE_MODE)
    net.set_train(False)
    try:
        net(*(example_input if isinstance(example_input, tuple) else (example_input,)))
    finally:
        for handle in handles:
            handle.remove()
        net.set_train(training)
        ms.set_context(mode=mode)
    missing = [p for p in paths if p not in calls]
    if missing:
        raise ValueError(f"the example input did not pass through the activation layers {missing}; attach needs "
                         f"an input on which every LeakyReLU runs")
    return calls


# Activations no probe sees: MindSpore's own activation Cells (ops.swap_activations turns the LeakyReLU and ReLU
# among them into the project's) and activation primitives held by a Cell (e.g. self.tanh = ops.Tanh()).
_MS_ACTIVATION_MODULE = "mindspore.nn.layer.activation"
_ACTIVATION_PRIMITIVES = {"ReLU", "ReLU6", "LeakyReLU", "PReLU", "Tanh", "Sigmoid", "Elu", "GeLU", "GELU", "FastGeLU",
                          "SiLU", "HSwish", "HSigmoid", "Softplus", "Mish", "SeLU", "CeLU", "HShrink", "SoftShrink",
                          "Softsign", "LogSigmoid", "Hardtanh", "Softmax", "LogSoftmax"}


def unprobed_activations(net: nn.Cell, name: str) -> list[str]:
    """The activations of `net` that `attach` cannot probe, as "<name>/<path> (<what>)": MindSpore activation Cells
    and activation primitives held by a Cell. Functional calls in a `construct` (ops.tanh(x)) are not Cells and
    cannot be listed at all."""
    found = []
    for path, cell in net.cells_and_names():
        if isinstance(cell, (ProbedActivation, *PROBED_CELLS)):
            continue
        if type(cell).__module__ == _MS_ACTIVATION_MODULE:
            found.append(f"{name}/{path} (nn.{type(cell).__name__})")
            continue  # the primitive inside it is the same activation
        for attr, prim in getattr(cell, "_primitives", {}).items():
            if prim is not None and type(prim).__name__ in _ACTIVATION_PRIMITIVES:
                found.append(f"{name}/{f'{path}.' if path else ''}{attr} (primitive {type(prim).__name__})")
    return found


def attach(net: nn.Cell, example_input: Tensor | tuple, name: str) -> list[ProbedActivation]:
    """Wrap every LeakyReLU / BatchNormAct of `net` in a ProbedActivation and return the probes in the order the
    forward pass reaches them, named by gan.analysis.channels.display_names: f"{name}/act<i>" for block i of the
    project's networks (also when fused into bn<i> or conv<i>), a shortened Cell path for others. A cell used at
    several places gets one probe whose sums pool all its calls (`uses`).

    Call it before the network is compiled (ms.jit) or wrapped for mixed precision. `example_input` is one
    input batch (or a tuple of inputs); it runs once in PyNative to learn each layer's channel count.
    """
    if not name or any(ch in name for ch in "/. "):
        raise ValueError(f"name={name!r} is not allowed: use a non-empty name without '/', '.' or spaces, "
                         f"e.g. 'G' or 'D'")
    found = [(path, cell) for path, cell in net.cells_and_names()]
    if any(isinstance(cell, ProbedActivation) for _, cell in found):
        raise ValueError(f"diagnostics are already attached to {type(net).__name__}; attach once per network")
    paths = [path for path, cell in found if isinstance(cell, PROBED_CELLS)]
    if not paths:
        raise ValueError(f"{type(net).__name__} has no ops.LeakyReLU or ops.BatchNormAct layer; diagnostics "
                         f"probe only the project's activation cells")
    calls = _activation_calls(net, example_input, paths)
    paths = list(calls)  # forward order
    cells = dict(found)
    unseen = tuple(unprobed_activations(net, name))
    probes = []
    for path, layer in zip(paths, display_names(paths, name)):
        shapes = calls[path]
        shape = shapes[0]
        if len(shape) < 2:
            raise ValueError(f"activation {path} outputs shape {shape}; diagnostics need (N, C, ...) tensors")
        channel_axis = -1 if channel_layout(cells[path]) == "NHWC" else 1
        if any(len(s) != len(shape) or s[channel_axis] != shape[channel_axis] for s in shapes):
            raise ValueError(f"activation {path} is used at {len(shapes)} places with output shapes {shapes}; a "
                             f"cell used at several places needs the same channel count and rank at each")
        channels = shape[channel_axis]
        probe = ProbedActivation(cells[path], layer, channels, len(shape), path, len(shapes), unseen)
        parent_path, _, attr = path.rpartition(".")
        parent = cells[parent_path] if parent_path else net
        if isinstance(parent, (nn.SequentialCell, nn.CellList)):
            # Not parent[i] = probe: that re-prefixes the parameter names of the wrapped layer (and fails on
            # fusion=bn_act's BatchNormAct); names must stay as built so checkpoints load across settings.
            parent.insert_child_to_cell(attr, probe)
            if isinstance(parent, nn.SequentialCell):
                parent.cell_list = list(parent.cells())  # what SequentialCell.construct iterates
        else:
            setattr(parent, attr, probe)
        for p in probe.probe_params():  # unique across networks until the caller renames them
            p.name = f"{name}.{path}.{p.name.rsplit('.', 1)[-1]}"
        probes.append(probe)
    return probes


def set_probing(probes: list[ProbedActivation], enabled: bool) -> None:
    """Switch the probes' statistics on or off for the next compile (ms.jit) or PyNative call.

    `enabled` is a plain attribute read in `construct`: each ms.jit function freezes the value it saw at its
    first compile, so a training loop keeps two jitted steps, one compiled with probes off for ordinary
    steps and one with probes on for check steps, and sets the flag before every call (PyNative reads it
    on each call).
    """
    for probe in probes:
        probe.enabled = enabled


def set_gradient_taps(probes: list[ProbedActivation], enabled: bool) -> None:
    """Switch the probes' gradient statistics on or off for the next compile, as set_probing does for all of
    them: off where the step differentiates the network twice (gradient penalties)."""
    for probe in probes:
        probe.tap_gradients = enabled


class DiagnosticsLogger:
    """Writes check records to TensorBoard (scalars, histograms, heatmaps) and to run_dir/diagnostics.jsonl."""

    SCALARS = (*SUMMARY_METRICS, "still_dead_frac")

    def __init__(self, writer, run_dir: str | Path) -> None:
        self.writer = writer
        self.path = Path(run_dir) / DIAGNOSTICS_FILE
        # Heatmap columns so far, by step: a resumed run continues the picture from the records on disk.
        self.columns: dict[int, dict] = {}
        for record in read_jsonl(self.path) if self.path.is_file() else []:
            self._remember(record)
        self.layout_written = False

    def _remember(self, record: dict) -> None:
        """Keep the record's per-channel neg_frac for the heatmaps (the rest of the record is on disk)."""
        self.columns[record["step"]] = {"step": record["step"], "layers": {
            layer: {"neg_frac": values["neg_frac"]} for layer, values in record["layers"].items()}}

    def _write_layout(self, layers: list[str]) -> None:
        """Custom-scalars layout: one category per network (G, D), one multiline chart per statistic."""
        nets = sorted({network_of(layer) for layer in layers})
        layout = {f"diagnostics {net}": {f"{net} {m}": ["Multiline", [f"diag/{net}/[^/]+/{m}$"]]
                                         for m in self.SCALARS} for net in nets}
        self.writer.add_custom_scalars(layout)
        self.layout_written = True

    def log(self, record: dict) -> None:
        """Append the record to diagnostics.jsonl and write its TensorBoard scalars, histograms and heatmaps; for
        recycled channels also the counts (recycle/<layer>/count) and one `recycle` event per layer in events.jsonl."""
        append_jsonl(self.path, record)
        self._remember(record)
        step, layers = record["step"], record["layers"]
        columns = [self.columns[s] for s in sorted(self.columns)]
        if not self.layout_written and layers:
            self._write_layout(list(layers))
        for layer, values in layers.items():
            for metric in self.SCALARS:
                if values[metric] is not None:
                    self.writer.add_scalar(f"diag/{layer}/{metric}", values[metric], step)
            for kind, hist in values["hist"].items():
                if hist is not None:
                    self.writer.add_histogram_raw(f"diag_hist/{layer}/{kind}", global_step=step, **hist)
            matrix, _ = channel_matrix(columns, layer)
            self.writer.add_image(f"diag_heatmap/{layer}", heatmap_image(matrix), step, dataformats="HWC")
        for layer, values in record.get("slopes", {}).items():
            self.writer.add_histogram(f"diag_slopes/{layer}", np.asarray(values, np.float64), step)
        for layer, channels in record.get("recycled", {}).items():
            self.writer.add_scalar(f"recycle/{layer}/count", len(channels), step)
            if channels:
                append_event(self.path.parent, step, "recycle", {"net": network_of(layer), "layer": layer,
                                                                 "channels": channels, "count": len(channels)})
        for net, shares in network_summaries(record).items():
            for metric, value in shares.items():
                self.writer.add_scalar(f"diag/{net}/all/{metric}", value, step)
        self.writer.flush()


def final_metrics(record: dict) -> dict[str, float]:
    """Channel-weighted G and D fractions of a record, as "final/<net>_<metric>" metrics for `log_hparams`."""
    return {f"final/{net}_{metric}": value for net, shares in network_summaries(record).items()
            for metric, value in shares.items()}


def log_hparams(writer, hparams: dict, metrics: dict) -> None:
    """Write the run's hparams with its final metrics (HParams tab); every run of a sweep must use the same keys."""
    bad = {k: v for k, v in hparams.items() if not isinstance(v, (bool, str, int, float))}
    if bad:
        raise TypeError(f"hparams must be bool/str/int/float for TensorBoard, got {bad}")
    bad = {k: v for k, v in metrics.items() if not isinstance(v, (int, float)) or not math.isfinite(v)}
    if bad:
        raise ValueError(f"hparam metrics must be finite numbers, got {bad}")
    writer.add_hparams(hparams, {k: float(v) for k, v in metrics.items()}, name="hparams")


def run_hparams(cfg: object) -> dict[str, float | int | str]:
    """The hparams a sweep compares (slope, precision, fusion, model size, loss, activation kinds and every
    kind's act.* parameters, so that all runs share the keys; diagnostics.recycle) from a run's config."""
    return {key: getattr(getattr(cfg, group), attr) for key, (group, attr) in HPARAM_KEYS.items()}


def _share_text(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def dead_channel_table(record: dict) -> str:
    """A check record as a console table (TrainingDiagnostics.dead_channel_table), columns sized to the names."""
    layers = record["layers"]
    width = max([len("layer")] + [len(name) + (len(f" x{v['uses']}") if v.get("uses", 1) > 1 else 0)
                                  for name, v in layers.items()]) + 2
    rows = [f"dead channels at step {record['step']} (share of each layer's channels; docs/diagnostics.md):",
            f"  {'layer':<{width}}{'channels':>9}{'dead':>8}{'dormant':>9}{'grad-dead':>11}{'persistent':>12}"]
    for name, layer in layers.items():
        label = name + (f" x{layer['uses']}" if layer.get("uses", 1) > 1 else "")
        rows.append(f"  {label:<{width}}{layer['channels']:>9}{_share_text(layer['dead_frac']):>8}"
                    f"{_share_text(layer['dormant_frac']):>9}{_share_text(layer['grad_dead_frac']):>11}"
                    f"{_share_text(layer['persistent_frac']):>12}")
    if any(layer.get("uses", 1) > 1 for layer in layers.values()):
        rows.append("  xN: one cell called at N places; its statistics pool the N calls (each call weighted equally)")
    if record.get("unprobed"):
        rows.append("  not probed (not the project's activation cells): " + ", ".join(record["unprobed"]))
    return "\n".join(rows)


class TrainingDiagnostics:
    """A training loop's diagnostics: which steps are checks, the records they write, resume state, final metrics.

    `probes` empty means diagnostics are off: `due` is always False and nothing is written. `recycle(step,
    record)`, when given, acts on each check's record before it is logged and returns {layer: channels
    recycled} (gan.diagnostics.recycle, diagnostics.recycle=true), stored as the record's "recycled" field.
    """

    def __init__(self, probes: list[ProbedActivation], criteria: Criteria, interval: int, writer,
                 run_dir: str | Path, recycle: Callable[[int, dict], dict[str, list[int]]] | None = None) -> None:
        if isinstance(interval, bool) or not isinstance(interval, int) or interval < 1:
            raise ValueError(f"diagnostics.interval={interval!r} is not allowed: it must be an integer >= 1")
        self.probes = probes
        self.interval = interval
        self.writer = writer
        self.tracker = DeadChannelTracker(criteria)
        self.logger = DiagnosticsLogger(writer, run_dir) if probes and writer is not None else None  # None: not rank 0
        self.last: dict | None = None
        self.recycle = recycle

    def due(self, step: int) -> bool:
        """True when the step that ends at `step` (1-based count of steps done) is a check step."""
        return bool(self.probes) and step % self.interval == 0

    def check(self, step: int, reduce: Callable[[dict[str, LayerStats]], dict[str, LayerStats]] | None = None) -> dict:
        """Read the probes after a check step, log the record (TensorBoard, diagnostics.jsonl) and return it.

        `reduce` combines the statistics of all ranks before the record is made (gan.training.distributed).
        """
        stats = {p.layer: p.collect() for p in self.probes}
        self.last = self.tracker.update(step, reduce(stats) if reduce is not None else stats)
        slopes = {p.layer: s for p in self.probes if (s := p.learned_slopes()) is not None}
        if slopes:
            self.last["slopes"] = slopes
        unseen = list(dict.fromkeys(u for p in self.probes for u in p.unseen))
        if unseen:
            self.last["unprobed"] = unseen
        if self.recycle is not None:  # on every rank: the reduced record is the same everywhere
            self.last["recycled"] = self.recycle(step, self.last)
        if self.logger is not None:
            self.logger.log(self.last)
        return self.last

    def dead_channel_table(self) -> str:
        """The last check as a console table: per layer (display names, forward order), the dead, dormant,
        grad-dead and persistent shares; cells used at several places and activations no probe sees noted."""
        if self.last is None:
            return "dead channels: no check ran (diagnostics.enabled=false or fewer steps than diagnostics.interval)"
        return dead_channel_table(self.last)

    def final_metrics(self) -> dict[str, float]:
        """The last check's channel-weighted G/D fractions for `log_hparams` (empty before the first check)."""
        return final_metrics(self.last) if self.last is not None else {}

    def log_hparams(self, hparams: dict, metrics: dict[str, float]) -> None:
        """Write hparams with `metrics` and the last check's fractions (HParams tab), leaving out non-finite values."""
        if self.writer is None:  # a process without outputs (not rank 0)
            return
        merged = {**metrics, **self.final_metrics()}
        log_hparams(self.writer, hparams, {k: v for k, v in merged.items() if math.isfinite(v)})

    def state_dict(self) -> dict:
        """JSON-serialisable tracker history, for the checkpoint metadata."""
        return self.tracker.state_dict()

    def load_state_dict(self, state: dict) -> None:
        """Restore the tracker history saved by `state_dict`."""
        self.tracker.load_state_dict(state)
