"""Structured configs: one dataclass per config group, registered in Hydra's ConfigStore as the schema.

Hydra rejects unknown keys and values of the wrong type while composing (the message names the full
key); `__post_init__` checks value ranges and choices when `OmegaConf.to_object` builds the dataclasses, and
`Config.__post_init__` the rules of what may be built together (gan.config.plan). Importable without MindSpore.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from enum import Enum
from pathlib import Path
from typing import Any, List, Optional

from hydra import compose, initialize_config_dir
from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf

from gan.config.activation_kinds import ACT_PARAMS, ACTIVATION_KINDS
from gan.config.errors import ConfigError
from gan.config.loss_kinds import LOSS_KINDS
from gan.config.plan import Fusion, check_config
from gan.core.untrusted import UntrustedFileError, load_yaml

CONFIG_DIR = Path(__file__).resolve().parents[2] / "configs"


def _choice(key: str, value: Any, allowed: tuple) -> None:
    """Raise ConfigError unless `value` is one of `allowed`."""
    if value not in allowed:
        raise ConfigError(f"{key}={value!r} is not allowed; choose one of {list(allowed)}")


def _positive(key: str, value: Any, *, allow_none: bool = False) -> None:
    """Raise ConfigError unless `value` is > 0 (or None when allowed)."""
    if value is None and allow_none:
        return
    if value is None or value <= 0:
        raise ConfigError(f"{key}={value!r} must be a positive number")


def _in_unit_interval(key: str, value: float) -> None:
    """Raise ConfigError unless 0 <= value < 1 (Adam betas, EMA decay)."""
    if not 0.0 <= value < 1.0:
        raise ConfigError(f"{key}={value!r} must be in [0, 1)")


def nonfinite_floats(node: Any, key: str = "") -> list[tuple[str, float]]:
    """(dotted key, value) of every NaN or infinite float in a config dataclass tree (lists included)."""
    if is_dataclass(node):
        return [bad for f in fields(node) for bad in nonfinite_floats(getattr(node, f.name), f"{key}{f.name}.")]
    if isinstance(node, (list, tuple)):
        return [bad for i, item in enumerate(node) for bad in nonfinite_floats(item, f"{key[:-1]}[{i}].")]
    return [(key[:-1], node)] if isinstance(node, float) and not math.isfinite(node) else []


# Upper bounds of the sizes a training run may set, per group: {key: (bound, what it sizes)}. Far above every recipe
# here, and below values that end in a MemoryError minutes into a run (each multiplies an allocation). Checked when a
# run starts (check_sizes), not by the dataclasses: a checkpoint's stored config is checked against its arrays.
SIZE_LIMITS = {
    "model": {"nz": (4096, "the latent size"),
              "ngf": (1024, "G's channel widths (the widest layer holds up to 16x it)"),
              "ndf": (1024, "D's channel widths (the widest layer holds up to 16x it)")},
    "data": {"num_workers": (256, "the image decoding threads")},
    "train": {"batch_size": (4096, "the images of one step"), "num_samples": (4096, "the images of a sample grid"),
              "d_steps": (100, "the real batches drawn for one step (one per D update)")},
    "eval": {"num_samples": (50_000, "the samples generated at once"),
             "fid_samples": (50_000, "the samples generated at once for FID (FID-50k's count)"),
             "fid_reference": (100_000, "the reference images held and featurised")},
}


def check_sizes(conf: "Config") -> None:
    """ConfigError naming the key, its bound and what it sizes for the first SIZE_LIMITS entry above its bound."""
    for group, limits in SIZE_LIMITS.items():
        for key, (bound, what) in limits.items():
            value = getattr(getattr(conf, group), key)
            if value is not None and value > bound:
                raise ConfigError(f"{group}.{key}={value!r} is above {bound}, the largest this project allows: it "
                                  f"sizes {what}, and larger values exhaust memory")


IMAGE_SIZES = (32, 64, 128)
POINT_DATASETS = ("ring8", "grid25")  # 2D data, trained with model=mlp
D_NORMS = ("batch", "spectral", "none")  # gan.models.networks.NORMS builds them
G_NORMS = ("batch", "none")


@dataclass
class ModelConfig:
    """Generator/discriminator shape: dcgan (images) or mlp (2D points; image_size unused), widths, latent size."""

    name: str = "dcgan"
    image_size: int = 32
    nz: int = 64
    ngf: int = 32
    ndf: int = 32
    conv_impl: str = "auto"
    layout: str = "auto"  # activations between layers: auto (gan.config.plan), nchw, nhwc (channels last, onednn only)
    d_norm: str = "batch"  # D's normaliser: batch (BatchNorm from the second block), spectral, none
    g_norm: str = "batch"  # G's normaliser: batch, none
    d_maxout: int = 0  # model=mlp: pieces of D's maxout units (PacGAN's 2D D: 5) in place of act.d_kind; 0 = off

    def __post_init__(self) -> None:
        _choice("model.name", self.name, ("dcgan", "mlp"))
        if isinstance(self.d_maxout, bool) or not isinstance(self.d_maxout, int) or self.d_maxout == 1 \
                or self.d_maxout < 0:
            raise ConfigError(f"model.d_maxout={self.d_maxout!r} is not allowed: 0 (off) or the number of pieces "
                              f"of each maxout unit, an integer >= 2 (PacGAN's 2D discriminator: 5)")
        if self.d_maxout and self.name != "mlp":
            raise ConfigError(f"model.d_maxout={self.d_maxout} is built for model=mlp (PacGAN's 2D discriminator) "
                              f"only, not model={self.name}; set model.d_maxout=0")
        _choice("model.d_norm", self.d_norm, D_NORMS)
        _choice("model.g_norm", self.g_norm, G_NORMS)
        if self.name == "dcgan":
            _choice("model.image_size", self.image_size, IMAGE_SIZES)
        for key in ("nz", "ngf", "ndf"):
            _positive(f"model.{key}", getattr(self, key))
        _choice("model.conv_impl", self.conv_impl, ("auto", "native", "gemm", "onednn"))
        _choice("model.layout", self.layout, ("auto", "nchw", "nhwc"))


@dataclass
class DataConfig:
    """Which images (gan.data.sources.build_image_data) or 2D mixture (gan.training.tasks, PacGAN's ring8/grid25) to
    train on."""

    name: str = "mnist"
    root: Optional[str] = None
    channels: int = 1
    num_workers: int = 2
    num_images: Optional[int] = None

    def __post_init__(self) -> None:
        _choice("data.name", self.name, ("mnist", "fashion_mnist", "folder", "shapes") + POINT_DATASETS)
        _choice("data.channels", self.channels, (1, 3))
        _positive("data.num_workers", self.num_workers)
        _positive("data.num_images", self.num_images, allow_none=True)
        if self.name == "folder" and not self.root:
            raise ConfigError("data=folder needs data.root=PATH (a folder of jpg/png/webp images)")


_FLOAT32_TINY, _FLOAT32_MAX = 1.1754943508222875e-38, 3.4028234663852886e+38


def _float32(key: str, value: float) -> None:
    """Raise ConfigError unless float32 (the kernels' compute dtype) holds a finite non-zero `value` as non-zero
    and finite (e.g. 1e-50 would become 0); NaN and inf are left to Config's finiteness check."""
    if value != 0 and math.isfinite(value) and not _FLOAT32_TINY <= abs(value) <= _FLOAT32_MAX:
        raise ConfigError(f"{key}={value!r} cannot be represented in float32, the kernels' compute dtype; use 0 or "
                          f"a magnitude between {_FLOAT32_TINY:.3g} and {_FLOAT32_MAX:.3g}")


@dataclass
class ActConfig:
    """Activations of D and G: the kind of each network (a row of gan.config.activation_kinds, which names the fields
    below that are its parameters; gan.models.networks.make_activation builds it) and the kinds' parameters.

    leaky_relu slopes: one global value, optionally one per layer for D and for G; relu is leaky_relu with
    slope 0 through the same op. Slopes are in [0, 1], as the op accepts them (1 = identity).
    """

    negative_slope: float = 0.2
    g_negative_slope: Optional[float] = None
    d_layers: Optional[List[float]] = None
    g_layers: Optional[List[float]] = None
    clamp: Optional[float] = None
    d_kind: str = "leaky_relu"
    g_kind: str = "leaky_relu"
    prelu_init: float = 0.25
    rrelu_lower: float = 1 / 8
    rrelu_upper: float = 1 / 3
    elu_alpha: float = 1.0
    adaptive_init: float = 0.2

    def __post_init__(self) -> None:
        slopes = [("act.negative_slope", self.negative_slope), ("act.g_negative_slope", self.g_negative_slope)]
        slopes += [(f"act.d_layers[{i}]", s) for i, s in enumerate(self.d_layers or [])]
        slopes += [(f"act.g_layers[{i}]", s) for i, s in enumerate(self.g_layers or [])]
        slopes += [(f"act.{p.key}", getattr(self, p.key)) for p in ACT_PARAMS if p.unit]
        for key, slope in slopes:
            if slope is not None and not 0.0 <= slope <= 1.0:
                raise ConfigError(f"{key}={slope!r} must be in [0, 1] (0 = ReLU, 1 = identity)")
        if self.rrelu_lower > self.rrelu_upper:
            raise ConfigError(f"act.rrelu_lower={self.rrelu_lower!r} must be <= act.rrelu_upper={self.rrelu_upper!r}")
        for net in ("d", "g"):
            kind = getattr(self, f"{net}_kind")
            _choice(f"act.{net}_kind", kind, tuple(ACTIVATION_KINDS))
            if not ACTIVATION_KINDS[kind].layer_slopes and getattr(self, f"{net}_layers") is not None:
                raise ConfigError(f"act.{net}_layers sets per-layer LeakyReLU slopes, but act.{net}_kind={kind!r}; "
                                  f"use act.{net}_kind=leaky_relu or act.{net}_layers=null")
        numbers = [(f"act.{p.key}", getattr(self, p.key)) for p in ACT_PARAMS if not p.unit]
        for key, value in numbers:
            if not math.isfinite(value):
                raise ConfigError(f"{key}={value!r} must be a finite number")
        _positive("act.clamp", self.clamp, allow_none=True)
        for key, value in slopes + numbers + [("act.clamp", self.clamp)]:
            if value is not None:
                _float32(key, value)


@dataclass
class PrecisionConfig:
    """Compute dtype; fp16 trains with dynamic loss scaling, every precision skips non-finite steps."""

    name: str = "fp32"
    loss_scale: float = 1.0
    scale_window: int = 1000
    max_nonfinite_steps: int = 20

    def __post_init__(self) -> None:
        _choice("precision.name", self.name, ("fp32", "fp16", "bf16"))
        _positive("precision.loss_scale", self.loss_scale)
        _positive("precision.scale_window", self.scale_window)
        _positive("precision.max_nonfinite_steps", self.max_nonfinite_steps)


@dataclass
class FusionConfig:
    """Operator fusion; an enum, so Hydra rejects other values while composing, naming the allowed ones."""

    name: Fusion = Fusion.auto


@dataclass
class TrainConfig:
    """Optimisation length, Adam settings, EMA, output intervals, resume, dry run and BatchNorm sync."""

    steps: Optional[int] = 1000
    epochs: Optional[float] = None
    batch_size: int = 64
    lr: float = 2e-4
    beta1: float = 0.5
    beta2: float = 0.999
    ema_beta: Optional[float] = None
    lr_decay: float = 0.0  # the last share of the run over which both learning rates fall linearly to 0; 0 = constant
    log_every: int = 10
    sample_every: int = 250
    ckpt_every: int = 500
    keep_last: int = 3
    num_samples: int = 64
    resume: Optional[str] = None
    resume_override: bool = False  # resume although experiment settings changed (logged in events.jsonl)
    dry_run: bool = False
    sync_bn: bool = False  # distributed=true: BatchNorm statistics over the global batch instead of per rank
    loss: str = "bce"  # a row of gan.training.losses.LOSSES: bce (non-saturating), hinge, lsgan, wgan_gp
    gp_weight: float = 10.0  # train.loss=wgan_gp: weight of the gradient penalty
    r1_gamma: float = 0.0  # R1 penalty gamma / 2 * E||grad D(x)||^2 on real data; 0 = off
    r1_every: int = 16  # lazy R1: every this many steps, scaled by it (StyleGAN2)
    d_steps: int = 1  # D updates per G update (WGAN-GP uses 5); each takes its own real batch and latents
    clip_grad_norm: Optional[float] = None  # clip each network's global gradient norm to this; null = off
    accumulate: int = 1  # micro-batches per optimiser step: train.batch_size is split into this many

    def __post_init__(self) -> None:
        if (self.steps is None) == (self.epochs is None):
            raise ConfigError(f"set exactly one of train.steps={self.steps!r} and train.epochs={self.epochs!r} "
                              "(the other must be null)")
        _positive("train.steps", self.steps, allow_none=True)
        _positive("train.epochs", self.epochs, allow_none=True)
        for key in ("batch_size", "lr", "log_every", "sample_every", "ckpt_every", "keep_last", "num_samples"):
            _positive(f"train.{key}", getattr(self, key))
        for key in ("beta1", "beta2"):  # MindSpore's Adam takes both in (0, 1) only
            if not 0.0 < getattr(self, key) < 1.0:
                raise ConfigError(f"train.{key}={getattr(self, key)!r} must be in (0, 1) (MindSpore's Adam)")
        if self.ema_beta is not None:
            _in_unit_interval("train.ema_beta", self.ema_beta)
        if isinstance(self.lr_decay, bool) or not 0.0 <= self.lr_decay <= 1.0:
            raise ConfigError(f"train.lr_decay={self.lr_decay!r} must be in [0, 1] (the share of the run at its end "
                              f"over which the learning rates fall linearly to 0; 0 = constant)")
        _choice("train.loss", self.loss, tuple(LOSS_KINDS))
        _positive("train.gp_weight", self.gp_weight)
        if not self.r1_gamma >= 0:
            raise ConfigError(f"train.r1_gamma={self.r1_gamma!r} must be >= 0 (0 = off)")
        for key in ("r1_every", "d_steps", "accumulate"):
            _positive(f"train.{key}", getattr(self, key))
        _positive("train.clip_grad_norm", self.clip_grad_norm, allow_none=True)
        if self.batch_size % self.accumulate:
            raise ConfigError(f"train.accumulate={self.accumulate} must divide train.batch_size={self.batch_size} "
                              f"(the batch is split into that many equal micro-batches)")


def check_diagnostics_thresholds(tau: float, tau_grad: float, dead_neg_frac: float, persist_checks: int) -> None:
    """ConfigError naming the key unless the three shares are numbers in [0, 1] and persist_checks an integer >= 1
    (the one check, for the config group and for gan.analysis.channels.Criteria built in code)."""
    for key, value in (("tau", tau), ("tau_grad", tau_grad), ("dead_neg_frac", dead_neg_frac)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
            raise ConfigError(f"diagnostics.{key}={value!r} is not allowed: it must be a number in [0, 1]")
    if isinstance(persist_checks, bool) or not isinstance(persist_checks, int) or persist_checks < 1:
        raise ConfigError(f"diagnostics.persist_checks={persist_checks!r} is not allowed: it must be an integer >= 1")


# The settings a sweep compares (TensorBoard's HParams tab, the dashboard's columns): name -> (group, key).
HPARAM_KEYS = {"slope": ("act", "negative_slope"), "precision": ("precision", "name"), "fusion": ("fusion", "name"),
               "image_size": ("model", "image_size"), "ngf": ("model", "ngf"), "ndf": ("model", "ndf"),
               "d_norm": ("model", "d_norm"), "d_maxout": ("model", "d_maxout"), "loss": ("train", "loss"),
               "d_kind": ("act", "d_kind"), "g_kind": ("act", "g_kind"), **{p.key: ("act", p.key) for p in ACT_PARAMS},
               "recycle": ("diagnostics", "recycle")}


RECYCLE_NETS = ("D", "G")  # diagnostics.recycle_nets: the probe name prefixes of the two networks


@dataclass
class DiagnosticsConfig:
    """Dead-channel diagnostics (gan.diagnostics.probes): check interval in steps and the thresholds of its
    statistics."""

    enabled: bool = True
    interval: int = 100
    tau: float = 0.025
    tau_grad: float = 0.025
    dead_neg_frac: float = 0.99
    persist_checks: int = 3
    recycle: bool = False  # ReDo: re-initialise the channels found dormant at each check (gan.diagnostics.recycle)
    recycle_nets: List[str] = field(default_factory=lambda: ["D"])  # the networks recycle=true acts on

    def __post_init__(self) -> None:
        _positive("diagnostics.interval", self.interval)
        check_diagnostics_thresholds(self.tau, self.tau_grad, self.dead_neg_frac, self.persist_checks)
        if not isinstance(self.recycle, bool):
            raise ConfigError(f"diagnostics.recycle={self.recycle!r} is not allowed: use true or false")
        nets = list(self.recycle_nets)
        if not nets or len(set(nets)) != len(nets) or not set(nets) <= set(RECYCLE_NETS):
            raise ConfigError(f"diagnostics.recycle_nets={nets!r} is not allowed: give a non-empty list of distinct "
                              f"networks out of {list(RECYCLE_NETS)}, e.g. [D]")
        if self.recycle and not self.enabled:
            raise ConfigError("diagnostics.recycle=true needs diagnostics.enabled=true: channels are recycled at "
                              "the dead-channel checks")


FID_CONVENTIONS = ("stylegan", "clean")  # gan.metrics.resize.CONVENTIONS


@dataclass
class EvalConfig:
    """Sample-quality metrics every `interval` steps and at the end, on `num_samples` samples (gan.training.evaluation);
    the standard Inception metrics (FID, KID, precision/recall; gan.metrics.fid) on `fid_samples` samples every
    `fid_every` steps (0: at the end only) against the first `fid_reference` training images.

    `fid`: null (default) computes them for data=mnist and fashion_mnist when the Inception weights are installed
    (and says how to install them otherwise); true computes them for any image data and requires the weights (the
    run stops at start without them); false turns them off.
    `objective` is the number train.py returns to sweepers: a metric name, "loss_g", or "auto"
    (frechet_distance for mnist, fid for other images when FID runs, reverse_kl for 2D data, else loss_g).
    """

    enabled: bool = True
    interval: int = 500
    num_samples: int = 1000
    objective: str = "auto"
    fid: Optional[bool] = None
    fid_every: int = 0
    fid_samples: int = 2000
    fid_reference: int = 10_000
    fid_convention: str = "stylegan"

    def __post_init__(self) -> None:
        _positive("eval.interval", self.interval)
        if isinstance(self.num_samples, bool) or self.num_samples < 2:
            raise ConfigError(f"eval.num_samples={self.num_samples!r} must be an integer >= 2")
        if isinstance(self.fid_every, bool) or self.fid_every < 0:
            raise ConfigError(f"eval.fid_every={self.fid_every!r} must be an integer >= 0 (0: at the end only)")
        for key in ("fid_samples", "fid_reference"):
            value = getattr(self, key)
            if isinstance(value, bool) or value < 4:
                raise ConfigError(f"eval.{key}={value!r} must be an integer >= 4 (precision/recall use k=3 "
                                  f"neighbours)")
        _choice("eval.fid_convention", self.fid_convention, FID_CONVENTIONS)


@dataclass
class RuntimeConfig:
    """Execution mode, device, CPU threads, host-blocking kernel launch and the collective timeout of distributed
    runs."""

    mode: str = "graph"
    device_target: str = "CPU"
    device_id: int = 0
    threads: Optional[int] = None
    # Launch kernels from the calling thread (MS_DEV_HOST_BLOCKING_RUN=1) instead of MindSpore's async queue,
    # whose waiting thread spins: same results, faster steps on a CPU with few cores (docs/performance.md).
    host_blocking: bool = True
    collective_timeout_s: int = 300  # distributed=true: a rank waiting longer in one collective fails the job
    rank_checksums: bool = False  # debug: each rank appends per-step state checksums to run_dir/distributed/

    def __post_init__(self) -> None:
        _positive("runtime.collective_timeout_s", self.collective_timeout_s)
        _choice("runtime.mode", self.mode, ("graph", "pynative"))
        _choice("runtime.device_target", self.device_target, ("CPU", "GPU", "Ascend"))
        _positive("runtime.threads", self.threads, allow_none=True)


MIN_CLAMP = 0.01  # act.clamp below this saturates nearly every unit (check_clamp says why)
FP16_MAX = 65504.0  # float16's largest finite value


def check_clamp(act: ActConfig, precision: PrecisionConfig) -> None:
    """ConfigError for an act.clamp that defeats itself, naming why: so small that nearly every activation
    saturates (then it passes no gradient and training collapses), or with precision=fp16 above float16's range
    (an fp16 activation overflows to inf before the clamp could cut it)."""
    clamp = act.clamp
    if clamp is None:
        return
    if clamp < MIN_CLAMP:
        raise ConfigError(
            f"act.clamp={clamp!r} is below {MIN_CLAMP}: the activations' outputs are cut to [-clamp, clamp] and pass "
            f"no gradient where cut, while BatchNorm keeps the pre-activations at unit scale, so nearly every unit "
            f"saturates (at clamp 0.01 with slope 0.2, 97.6% of unit-normal inputs; at 1e-30 D's output is constant "
            f"and it stops learning); use act.clamp=null (no clamp) or a value >= {MIN_CLAMP} (StyleGAN2 uses 256)")
    if precision.name == "fp16" and clamp > FP16_MAX:
        raise ConfigError(
            f"act.clamp={clamp!r} with precision=fp16: float16's largest finite value is {FP16_MAX:g}, so an fp16 "
            f"activation overflows to inf before it could reach the clamp, which then prevents no overflow; use "
            f"act.clamp<={FP16_MAX:g} (StyleGAN2 clamps at 256 in fp16) or act.clamp=null")


@dataclass
class Config:
    """The whole run: one field per config group plus the seed."""

    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    act: ActConfig = field(default_factory=ActConfig)
    precision: PrecisionConfig = field(default_factory=PrecisionConfig)
    fusion: FusionConfig = field(default_factory=FusionConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    diagnostics: DiagnosticsConfig = field(default_factory=DiagnosticsConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    runtime: RuntimeConfig = field(default_factory=RuntimeConfig)
    seed: int = 0
    distributed: bool = False  # data parallel under msrun (gan.training.distributed)

    def __post_init__(self) -> None:
        # A generic walk, so float keys added later are covered too (range checks let NaN and inf through).
        bad = nonfinite_floats(self)
        if bad:
            raise ConfigError("; ".join(f"{key}={value!r} must be a finite number" for key, value in bad))
        points = self.data.name in POINT_DATASETS
        if points != (self.model.name == "mlp"):
            raise ConfigError(f"model={self.model.name} cannot train on data={self.data.name}: 2D data "
                              f"{list(POINT_DATASETS)} needs model=mlp, and model=mlp needs 2D data; "
                              f"experiment=ring8 or experiment=grid25 selects the whole 2D recipe")
        if points and self.distributed:
            raise ConfigError(f"distributed=true trains image data only; data={self.data.name} is drawn per step "
                              "and would repeat the same points on every rank")
        check_config(self)  # what may be built together (gan.config.plan)
        if self.distributed and self.eval.fid is not False and self.eval.fid_every:
            raise ConfigError(f"eval.fid_every={self.eval.fid_every} with distributed=true: rank 0 computes FID alone "
                              f"while the other ranks wait in the next step's collectives "
                              f"(runtime.collective_timeout_s); use eval.fid_every=0 (at the end) or eval.fid=false")
        if points and self.train.epochs is not None:
            raise ConfigError(f"train.epochs={self.train.epochs!r}: data={self.data.name} is an endless stream of "
                              "points; set train.steps instead")
        check_clamp(self.act, self.precision)


def to_config(cfg: DictConfig | Config) -> Config:
    """Validated dataclass view of a composed config (range and choice checks run in __post_init__)."""
    return cfg if isinstance(cfg, Config) else OmegaConf.to_object(cfg)


# Keys a resumed run may change without changing the experiment: run length, output and logging cadence,
# how and where it executes (model.conv_impl, model.layout and fusion.name included: native, gemm and onednn
# compute the same convolution, in either activation layout, and every fusion kind the same blocks, with the same
# parameter names, to float32 rounding, so checkpoints are interchangeable), and reporting. Every other key (model,
# act, data, precision, seed, losses, optimiser, batch, EMA, diagnostics thresholds, and any key added later) changes
# the experiment: resuming with another value is an error unless train.resume_override=true (gan.run.files logs the
# event).
RESUME_MAY_CHANGE = frozenset({
    "train.steps", "train.epochs", "train.log_every", "train.sample_every", "train.ckpt_every",
    "train.keep_last", "train.num_samples", "train.resume", "train.resume_override", "train.dry_run",
    "data.num_workers", "model.conv_impl", "model.layout", "fusion.name",
    "diagnostics.enabled", "diagnostics.interval",
    "eval.enabled", "eval.interval", "eval.num_samples", "eval.objective", "eval.fid", "eval.fid_every",
    "eval.fid_samples", "eval.fid_reference", "eval.fid_convention",
    "runtime.mode", "runtime.device_target", "runtime.device_id", "runtime.threads", "runtime.host_blocking",
    "runtime.collective_timeout_s", "runtime.rank_checksums",
})


def flatten(tree: dict, prefix: str = "") -> dict[str, Any]:
    """{"a": {"b": 1}} -> {"a.b": 1}, enums as their values (a config as dotted keys: resume checks, dashboards)."""
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            flat.update(flatten(value, f"{prefix}{key}."))
        else:
            # fusion: "none", not Fusion.none
            flat[f"{prefix}{key}"] = value.value if isinstance(value, Enum) else value
    return flat


# With diagnostics.recycle=true the check schedule changes the weights, so it is part of the experiment.
RECYCLE_SCHEDULE = frozenset({"diagnostics.enabled", "diagnostics.interval"})


def experiment_changes(old: Config, new: Config) -> dict[str, list]:
    """{dotted key: [old, new]} for every key outside RESUME_MAY_CHANGE whose value differs (the check schedule
    included when either run recycles channels)."""
    before, after = flatten(asdict(old)), flatten(asdict(new))
    recycles = old.diagnostics.recycle or new.diagnostics.recycle
    may_change = RESUME_MAY_CHANGE - RECYCLE_SCHEDULE if recycles else RESUME_MAY_CHANGE
    return {key: [before.get(key), after.get(key)] for key in sorted(before.keys() | after.keys())
            if key not in may_change and before.get(key) != after.get(key)}


def _interpolations(node: Any, key: str = "") -> list[str]:
    """Dotted keys of the strings in a parsed YAML tree that OmegaConf would resolve (`${...}`)."""
    if isinstance(node, dict):
        return [bad for k, v in node.items() for bad in _interpolations(v, f"{key}{k}.")]
    if isinstance(node, list):
        return [bad for i, v in enumerate(node) for bad in _interpolations(v, f"{key[:-1]}[{i}].")]
    return [key[:-1]] if isinstance(node, str) and "${" in node else []


def config_from_yaml(text: str, source: str | Path = "the stored config") -> Config:
    """Rebuild a validated Config from the YAML stored in a checkpoint (keys it lacks take their defaults).

    The checkpoint may come from someone else: the YAML is parsed with bounds (gan.core.untrusted.load_yaml) before
    OmegaConf sees it, and OmegaConf interpolations are refused (resolvers such as oc.env would run on this
    machine; a run's stored config is resolved, so it never holds one)."""
    tree = load_yaml(text, source) or {}
    if not isinstance(tree, dict):
        raise UntrustedFileError(f"{source}: the stored config is a YAML {type(tree).__name__}, not a mapping")
    bad = _interpolations(tree)
    if bad:
        raise UntrustedFileError(f"{source}: the stored config holds OmegaConf interpolations (${{...}}) at "
                                 f"{', '.join(bad[:5])}; a stored config is resolved, so this file was not written "
                                 f"by train.py, and its resolvers are not run")
    return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(Config), OmegaConf.create(tree)))


def check_resume(checkpoint: str | Path, stored_yaml: str, new: Config,
                 other_changes: dict[str, list] | None = None) -> dict[str, list]:
    """The experiment keys a resume from `checkpoint` changes, with `other_changes` found by the caller (such as
    {"data.fingerprint": [old, new]}); ConfigError listing them unless train.resume_override=true (then the caller
    logs them)."""
    changes = {**experiment_changes(config_from_yaml(stored_yaml, checkpoint), new), **(other_changes or {})}
    if changes and not new.train.resume_override:
        listed = "\n".join(f"  {key}: {old!r} -> {value!r}" for key, (old, value) in changes.items())
        raise ConfigError(f"train.resume: {checkpoint} was trained with other settings, and these change the "
                          f"experiment:\n{listed}\nresume with the checkpoint's values, start a new run directory, "
                          f"or pass train.resume_override=true to continue anyway (logged in events.jsonl)")
    return changes


def compose_config(overrides: list[str] | tuple[str, ...] = ()) -> DictConfig:
    """The config `python train.py OVERRIDES...` would run, composed outside @hydra.main (tests, scripts)."""
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))


def register_configs() -> None:
    """Store the schema as `base_config`, the first entry of configs/config.yaml's defaults list."""
    ConfigStore.instance().store(name="base_config", node=Config)


register_configs()
