"""The activation kinds of `act.d_kind` / `act.g_kind`: one row each, importable without MindSpore.

A row says how gan.models.networks builds the kind (the ops Cell, which act.* keys set which of its arguments, what the
layer adds: its slope, its channel count, its seed) and what the kind can do (fuse with BatchNorm, be
differentiated twice for a gradient penalty, learn a slope tensor). Everything else on the gan side reads the
rows: the config's choices and checks, the build plan's rules (gan.config.plan), the diagnostics' probed cells and
learned slopes, the batched 2D trainer, the hparams and the dashboard. The op facts repeat those of the
kind's row of ops.ACTIVATIONS (which needs MindSpore); tests/gan/test_activation_kinds.py keeps them equal.
A new kind: a row here, its ActConfig field(s) and configs/act/default.yaml (docs/extending.md).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ActParam:
    """An act.* config key of a kind, the argument of the kind's Cell it sets, and its range: unit (like a
    slope, in [0, 1]) or any finite number. Its default is the ActConfig field's (the Cell's own default)."""

    key: str
    arg: str
    unit: bool = False


@dataclass(frozen=True)
class ActivationKind:
    """One kind: its ops.ACTIVATIONS row, the ops Cell class gan.models.networks builds (and gan.diagnostics.probes
    probes), by name, and its act.* parameters; the Cell arguments fixed by the kind (relu: slope 0) or given by the
    layer (its LeakyReLU slope, its channel count for per-channel weights, a seed); and the capabilities."""

    name: str
    op: str
    cell: str
    params: tuple[ActParam, ...] = ()
    constants: tuple[tuple[str, float], ...] = ()
    layer_slopes: bool = False  # negative_slope is each layer's slope (act.negative_slope, act.*_layers)
    per_channel: bool = False   # num_parameters is the layer's channel count
    random: bool = False        # seeded per layer and run (gan.models.networks.seed_random_activations)
    bn_fusable: bool = False    # fusion=bn_act|conv_act fuse it with BatchNorm (or with the conv's bias)
    second_derivative: bool = False  # a gradient penalty (WGAN-GP, R1) may differentiate it twice
    learnable: str | None = None     # the Cell's attribute holding its learned slopes (recorded at checks)

    @property
    def keys(self) -> tuple[str, ...]:
        """Its act.* keys."""
        return tuple(p.key for p in self.params)


ACTIVATION_KINDS: dict[str, ActivationKind] = {row.name: row for row in (
    ActivationKind("leaky_relu", "leaky_relu", "LeakyReLU", layer_slopes=True, bn_fusable=True,
                   second_derivative=True),
    ActivationKind("relu", "leaky_relu", "LeakyReLU", constants=(("negative_slope", 0.0),), bn_fusable=True,
                   second_derivative=True),
    ActivationKind("prelu", "prelu", "PReLU", (ActParam("prelu_init", "init"),), per_channel=True, bn_fusable=True,
                   learnable="weight"),
    ActivationKind("rrelu", "rrelu", "RReLU", (ActParam("rrelu_lower", "lower", unit=True),
                                              ActParam("rrelu_upper", "upper", unit=True)), random=True),
    ActivationKind("elu", "elu", "ELU", (ActParam("elu_alpha", "alpha"),)),
    ActivationKind("adaptive", "adaptive", "AdaptiveLeakyReLU", (ActParam("adaptive_init", "init_alpha"),),
                   per_channel=True, learnable="alpha"),
)}
ACT_PARAMS = tuple(p for row in ACTIVATION_KINDS.values() for p in row.params)  # every kind's act.* parameters


def kinds_with(capability: str) -> list[str]:
    """The kinds that have `capability` (a boolean field, e.g. "bn_fusable"), in table order."""
    return [name for name, row in ACTIVATION_KINDS.items() if getattr(row, capability)]
