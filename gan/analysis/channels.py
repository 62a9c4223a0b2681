"""Dead-channel statistics without MindSpore: check records from per-channel sums, network summaries, per-channel
matrices over checks and their heatmap images.

Training (gan.diagnostics.probes: its probes collect the sums, its logger writes the records) and the offline viewers
(gan.analysis.dashboard, gan.analysis.sweep, scripts/bench/bench_dashboard.py) share this module, so a viewer never
needs MindSpore and training never imports a viewer.

Statistics per layer and channel c at a check (formulas in docs/diagnostics.md): neg_frac[c] = share of the
pre-activations <= 0; dormant score = mean|y|[c] / mean over channels; grad score = mean|dL/dy|[c] / mean over
channels; dead = neg_frac >= dead_neg_frac; persistently dead = dead at `persist_checks` consecutive checks;
still-dead share = dead now among those dead at the previous check.
"""
from __future__ import annotations

import io
import math
import re
import warnings
from dataclasses import asdict, dataclass, fields

import numpy as np
from PIL import Image

from gan.config.schema import DiagnosticsConfig, check_diagnostics_thresholds

# Histogram bins are uniform in u = asinh(v / HIST_SCALE): linear within +-1e-8, log-spaced (x1.65 per bin)
# beyond; |v| above ~1e3 falls into the end bins. One fixed set of bins serves activations and gradients.
HIST_SCALE = 1e-8
HIST_U_MAX = 26.0
HIST_BINS = 104
HIST_EDGES = HIST_SCALE * np.sinh(np.linspace(-HIST_U_MAX, HIST_U_MAX, HIST_BINS + 1))
# The shares of a layer's channels every record holds, summed over a network by network_summary.
SUMMARY_METRICS = ("dead_frac", "dormant_frac", "grad_dead_frac", "persistent_frac")
STAT_TITLES = {"dead_frac": "dead (always negative)", "dormant_frac": "dormant (no output)",
               "grad_dead_frac": "grad-dead (no gradient)", "persistent_frac": "persistently dead"}
_DEFAULTS = DiagnosticsConfig()


@dataclass(frozen=True)
class Criteria:
    """Thresholds of the dead-channel statistics (config keys of the same names, defaults those of the config)."""

    tau: float = _DEFAULTS.tau
    tau_grad: float = _DEFAULTS.tau_grad
    dead_neg_frac: float = _DEFAULTS.dead_neg_frac
    persist_checks: int = _DEFAULTS.persist_checks

    def __post_init__(self) -> None:
        check_diagnostics_thresholds(self.tau, self.tau_grad, self.dead_neg_frac, self.persist_checks)

    @classmethod
    def from_config(cls, cfg: object) -> "Criteria":
        """Criteria from any config object, taking the attributes named like the fields and defaults for the rest."""
        return cls(**{f.name: getattr(cfg, f.name) for f in fields(cls) if hasattr(cfg, f.name)})


@dataclass
class Histogram:
    """A fixed-bin histogram with moments, in the arguments of tensorboardX `add_histogram_raw`."""

    min: float
    max: float
    num: float
    sum: float
    sum_squares: float
    bucket_limits: list[float]
    bucket_counts: list[float]

    @classmethod
    def from_sums(cls, counts: np.ndarray, extremes: np.ndarray, sums: np.ndarray) -> "Histogram | None":
        """From accumulated bin counts, [-min, max] and [sum, sum of squares]; None when nothing was counted."""
        nonzero = np.flatnonzero(counts)
        if nonzero.size == 0 or not np.isfinite(np.concatenate([counts, extremes, sums])).all():
            return None  # nothing counted, or NaN/inf values (JSON and TensorBoard hold neither)
        lo, hi = nonzero[0], nonzero[-1] + 1  # drop empty end bins; TensorBoard takes the left edge from min
        return cls(float(-extremes[0]), float(extremes[1]), float(counts.sum()), float(sums[0]), float(sums[1]),
                   [float(v) for v in HIST_EDGES[lo + 1:hi + 1]], [float(v) for v in counts[lo:hi]])


@dataclass
class LayerStats:
    """Per-channel statistics of one probed layer averaged over the passes since the previous check."""

    neg_frac: np.ndarray
    out_abs: np.ndarray
    grad_abs: np.ndarray | None
    passes: int
    grad_passes: int
    preact_hist: Histogram | None
    grad_hist: Histogram | None
    path: str = ""  # the full Cell path of the layer in its network ("" where unknown)
    uses: int = 1  # places the forward pass calls this cell; its statistics pool all of them


def _share(mask: np.ndarray) -> float:
    """Fraction of True entries."""
    return float(mask.mean()) if mask.size else 0.0


def _score(values: np.ndarray) -> np.ndarray:
    """ReDo normalisation: each channel's value over the layer mean (all zeros for a silent layer)."""
    mean = values.mean()
    return values / mean if mean > 0 else np.zeros_like(values)


def json_values(values: np.ndarray) -> list[float]:
    """Per-channel values as JSON floats with 6 significant digits (None for NaN/inf, which JSON lacks)."""
    return [float(f"{v:.6g}") if math.isfinite(v) else None for v in values]


class DeadChannelTracker:
    """Turns per-check layer statistics into records, keeping the history that "persistently dead" needs."""

    def __init__(self, criteria: Criteria = Criteria()) -> None:
        self.criteria = criteria
        self.streaks: dict[str, list[int]] = {}  # consecutive dead checks per channel
        self.checks = 0

    def check(self, step: int, probes: list) -> dict:
        """Read and reset the probes (gan.diagnostics.probes.ProbedActivation); return the JSON-serialisable record."""
        return self.update(step, {p.layer: p.collect() for p in probes})

    def update(self, step: int, stats: dict[str, LayerStats]) -> dict:
        """The record for `step` from layer statistics; layers without a forward pass since the last check are left
        out."""
        c = self.criteria
        layers = {}
        for layer, s in stats.items():
            if s.passes == 0:
                continue
            dead = s.neg_frac >= c.dead_neg_frac
            previous = np.array(self.streaks.get(layer, [0] * len(dead)))
            if previous.shape != dead.shape:
                raise ValueError(f"layer {layer!r} has {dead.size} channels, its history has {previous.size}")
            streak = np.where(dead, previous + 1, 0)
            self.streaks[layer] = streak.tolist()
            was_dead = previous > 0
            dormant = _score(s.out_abs)
            grad = None if s.grad_abs is None else _score(s.grad_abs)
            layers[layer] = {
                **({"path": s.path} if s.path else {}), **({"uses": s.uses} if s.uses > 1 else {}),
                "channels": int(dead.size), "passes": s.passes, "grad_passes": s.grad_passes,
                "dead_frac": _share(dead), "dormant_frac": _share(dormant <= c.tau),
                "grad_dead_frac": None if grad is None else _share(grad <= c.tau_grad),
                "persistent_frac": _share(streak >= c.persist_checks),
                "still_dead_frac": _share(dead[was_dead]) if was_dead.any() else None,
                "neg_frac": json_values(s.neg_frac), "dormant_score": json_values(dormant),
                "grad_score": None if grad is None else json_values(grad),
                "dead": np.flatnonzero(dead).tolist(), "dormant": np.flatnonzero(dormant <= c.tau).tolist(),
                "persistent": np.flatnonzero(streak >= c.persist_checks).tolist(),
                "hist": {"preact": s.preact_hist and asdict(s.preact_hist),
                         "grad": s.grad_hist and asdict(s.grad_hist)},
            }
        self.checks += 1
        return {"step": int(step), "criteria": asdict(c), "layers": layers}

    def state_dict(self) -> dict:
        """JSON-serialisable history, for the checkpoint."""
        return {"criteria": asdict(self.criteria), "checks": self.checks,
                "streaks": {k: list(v) for k, v in self.streaks.items()}}

    def load_state_dict(self, state: dict) -> None:
        """Restore the history of `state_dict` (the criteria stay those of this tracker)."""
        self.checks = int(state["checks"])
        self.streaks = {k: [int(n) for n in v] for k, v in state["streaks"].items()}


def network_of(layer: str) -> str:
    """The network ("G" or "D") of a probed layer name such as "D/act1"."""
    return layer.split("/")[0]


def network_order(names) -> list[str]:
    """Layer names (and bare network names, e.g. the "G" of a summary) in the order the viewers show them: G's,
    then D's, then other networks', each network's layers in the order given (the records hold them in forward
    order), the network itself after its layers. Duplicates are dropped."""
    names = list(dict.fromkeys(names))
    nets = list(dict.fromkeys(network_of(n) for n in names))

    def key(item: tuple[int, str]) -> tuple:
        index, name = item
        net = network_of(name)
        return net != "G", net != "D", nets.index(net), "/" not in name, index

    return [name for _, name in sorted(enumerate(names), key=key)]


def record_layers(records: list[dict]) -> list[str]:
    """Every layer of the records, in network order (network_order) and first-seen order within a network."""
    return network_order(layer for record in records for layer in record.get("layers", {}))


MAX_NAME = 40  # characters of a display name, its network prefix ("G/") included
_BLOCK_LEAF = re.compile(r"(?:act|bn|conv)(\d+)")


def _leaf_name(path: str) -> str:
    """The leaf of a Cell path; act<i> for the leaves act<i>, bn<i> and conv<i> of block i (the project's networks
    name a block's activation so whatever the fusion built), so names match across fusion kinds."""
    leaf = path.rsplit(".", 1)[-1]
    match = _BLOCK_LEAF.fullmatch(leaf)
    return f"act{match.group(1)}" if match else leaf


def _collapsed(path: str) -> list[str]:
    """The path's segments with every repeat of a named segment dropped: model.1.model.3.model.2 -> model 1 3 2
    (wrappers such as pix2pix's `model` repeat at every depth; the block indices say where the layer is)."""
    seen, kept = set(), []
    for part in path.split("."):
        if not part.isdigit():
            if part in seen:
                continue
            seen.add(part)
        kept.append(part)
    return kept


def display_names(paths: list[str], net: str, limit: int = MAX_NAME) -> list[str]:
    """Short names "<net>/<name>", unique and at most `limit` characters, of a network's activation cells from their
    full Cell paths (same order): the leaf where it is unique and not a bare index (act<i> of the project's
    networks), else the path with repeated named segments collapsed and the segments all paths share up front
    removed; a longer name keeps its end. Every viewer and writer names layers with it, and each record keeps the
    full path beside the name."""
    room = limit - len(net) - 1
    if room < 8:
        raise ValueError(f"network name {net!r} leaves {room} characters of the {limit} a layer name may have")
    leaves = [_leaf_name(p) for p in paths]
    collapsed = [_collapsed(p) for p in paths]
    common = 0
    while len(paths) > 1 and all(len(c) > common + 1 and c[common] == collapsed[0][common] for c in collapsed):
        common += 1
    names = [leaf if leaves.count(leaf) == 1 and not leaf.isdigit() else ".".join(c[common:])
             for leaf, c in zip(leaves, collapsed)]
    names = [n if len(n) <= room else ".." + n[-(room - 2):] for n in names]
    for i, name in enumerate(names):  # clashes (a leaf equal to another's shortened path, cut ends): number them
        if names.count(name) > 1:
            suffix = f"~{i}"
            names[i] = name[:room - len(suffix)] + suffix
    return [f"{net}/{n}" for n in names]


def network_summary(record: dict, net: str, metric: str) -> float | None:
    """Channel-weighted `metric` over the layers of `net` ("G" or "D") in one record; None if it has none."""
    layers = [v for k, v in record["layers"].items() if network_of(k) == net and v.get(metric) is not None]
    channels = sum(v["channels"] for v in layers)
    return sum(v[metric] * v["channels"] for v in layers) / channels if channels else None


def network_summaries(record: dict) -> dict[str, dict[str, float]]:
    """{net: {metric: value}} of each network in the record (sorted) and each SUMMARY_METRICS share it has."""
    nets = sorted({network_of(layer) for layer in record["layers"]})
    return {net: {m: v for m in SUMMARY_METRICS if (v := network_summary(record, net, m)) is not None} for net in nets}


PER_CHANNEL = ("neg_frac", "dormant_score", "grad_score", "slopes")  # the per-channel fields of a record


def channel_values(record: dict, layer: str, field: str) -> list | None:
    """The per-channel values of `field` (PER_CHANNEL) for `layer` in one record: a layer's statistic, or its
    learned slopes (kept beside the statistics under "slopes"); None when the record has none."""
    if field == "slopes":
        return record.get("slopes", {}).get(layer)
    return record.get("layers", {}).get(layer, {}).get(field)


def channel_matrix(records: list[dict], layer: str, field: str = "neg_frac") -> tuple[np.ndarray, list[int]]:
    """(channels, checks) values of `field` for `layer` over the records (in step order) that have them, and
    their steps. A null channel value (non-finite in training) is NaN."""
    columns = [(r["step"], v) for r in records if (v := channel_values(r, layer, field)) is not None]
    if not columns:
        raise ValueError(f"layer {layer!r} has no {field!r} values in any of the {len(records)} records")
    sizes = {len(v) for _, v in columns}
    if len(sizes) != 1:
        raise ValueError(f"layer {layer!r}: {field!r} changes its channel count across records ({sorted(sizes)})")
    matrix = np.array([v for _, v in columns], np.float64).T  # None -> NaN
    return matrix, [s for s, _ in columns]


# Viridis anchors: 0 (dark purple) ... 1 (yellow); in every heatmap yellow is the "dead/silent" end.
_VIRIDIS = np.array([[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]], np.float64)
_LEVELS = 63  # palette heatmaps: 63 viridis levels, index 63 = grey for a channel missing at a check
_MISSING_RGB = (200, 200, 200)
MAX_ROWS, MAX_COLS = 512, 480  # heatmap_png pixels per side; larger matrices are averaged down


def _viridis(t: np.ndarray) -> np.ndarray:
    """RGB (float) of values in [0, 1] on the viridis ramp (linear between 5 anchors)."""
    t = np.clip(np.nan_to_num(np.asarray(t, np.float64), nan=0.0), 0.0, 1.0) * (len(_VIRIDIS) - 1)
    low = np.minimum(t.astype(int), len(_VIRIDIS) - 2)
    frac = (t - low)[..., None]
    return _VIRIDIS[low] * (1 - frac) + _VIRIDIS[low + 1] * frac


_PALETTE = [int(v) for v in np.vstack([_viridis(np.linspace(0, 1, _LEVELS)).round(), [_MISSING_RGB]]).ravel()]


def heatmap_image(matrix: np.ndarray, max_size: int = 512) -> np.ndarray:
    """Render a (channels, checks) matrix of values in [0, 1] as an HWC uint8 viridis image (rows = channels).

    For TensorBoard: each cell gets an integer number of pixels (up to 8) so single channels stay visible;
    matrices larger than `max_size` on a side are box-averaged down to it.
    """
    matrix = np.asarray(matrix, np.float64)
    if matrix.ndim != 2 or matrix.size == 0:
        raise ValueError(f"heatmap needs a non-empty (channels, checks) matrix, got shape {matrix.shape}")
    rgb = _viridis(matrix).round().astype(np.uint8)
    rows, cols = matrix.shape
    image = Image.fromarray(rgb)
    size = tuple(min(max_size, n * max(1, min(8, max_size // n))) for n in (cols, rows))
    resample = Image.Resampling.NEAREST if size[0] >= cols and size[1] >= rows else Image.Resampling.BOX
    return np.asarray(image.resize(size, resample))


def _shrink(matrix: np.ndarray, max_rows: int = MAX_ROWS, max_cols: int = MAX_COLS) -> np.ndarray:
    """Average blocks of rows/columns (ignoring NaN) until the matrix fits max_rows x max_cols."""
    for axis, limit in ((0, max_rows), (1, max_cols)):
        n = matrix.shape[axis]
        if n > limit:
            k = math.ceil(n / limit)
            pad = [(0, 0), (0, 0)]
            pad[axis] = (0, (-n) % k)
            padded = np.pad(matrix, pad, constant_values=np.nan)
            shape = (padded.shape[0] // k, k, padded.shape[1]) if axis == 0 else (padded.shape[0], -1, k)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN block stays NaN (grey)
                matrix = np.nanmean(padded.reshape(shape), axis=axis + 1)
    return matrix


def heatmap_png(colour: np.ndarray) -> bytes:
    """A (rows, cols) matrix of colour positions in [0, 1] (NaN = missing, grey) as a small palette PNG, 1 px/cell."""
    colour = _shrink(np.asarray(colour, np.float64))
    index = np.where(np.isnan(colour), _LEVELS, np.rint(np.clip(np.nan_to_num(colour), 0, 1) * (_LEVELS - 1)))
    image = Image.frombytes("P", (colour.shape[1], colour.shape[0]), index.astype(np.uint8).tobytes())
    image.putpalette(_PALETTE)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()
