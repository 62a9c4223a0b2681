"""What a run builds, decided once: per network (G and D) the conv implementation, the fusion kind, the
activation, the normaliser and the activation layout; whether D is differentiated twice (a gradient penalty); the
jit level.

`resolve_plan(conf, onednn)` is pure and holds every rule of what may be built together (a ConfigError naming
the keys otherwise); of the machine it needs one fact, whether oneDNN's kernels build and load here.
`Config.__post_init__` runs it through `check_config`, so a wrong combination fails while the config is
read (this module and gan.config.schema import no MindSpore); `build_plan(conf)` asks the machine (ops.onednn) and
is called once where networks are built (gan.training.loop.GANTrainer, gan.models.checkpoint, batched_2d). The
trainer prints `BuildPlan.describe()` at start. docs/fusion.md explains the choices.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from typing import TYPE_CHECKING, NamedTuple

from gan.config.activation_kinds import ACTIVATION_KINDS, kinds_with
from gan.config.errors import ConfigError
from gan.config.loss_kinds import LOSS_KINDS

if TYPE_CHECKING:  # the schema imports this module to check a config; this module reads a config only
    from gan.config.schema import Config


class Fusion(StrEnum):
    """How each block's BatchNorm and LeakyReLU run (docs/fusion.md); gan.config.plan.FUSION_KINDS says what each
    builds."""

    # the fastest kind this run allows (gan.config.plan.resolve_fusion): conv_act or bn_act on CPU, else none
    auto = "auto"
    none = "none"  # separate BatchNorm2d and LeakyReLU layers
    bn_act = "bn_act"  # the project's fused BatchNorm + LeakyReLU kernel
    graph_kernel = "graph_kernel"  # MindSpore's graph-kernel fusion (jit level O1), GPU and Ascend only
    conv_act = "conv_act"  # bn_act, and conv + bias + LeakyReLU as one oneDNN primitive (conv_impl=onednn)


class FusionKind(NamedTuple):
    """What a resolved `fusion=` kind builds (the Fusion enum documents each)."""

    fused_kernels: bool  # BatchNorm + activation as one kernel, or the conv's bias + activation where no BatchNorm is
    onednn_conv: bool    # conv + bias + LeakyReLU as one oneDNN primitive (needs model.conv_impl onednn)
    jit_level: str       # ms.jit's level: O1 lets MindSpore's graph-kernel fusion fuse


FUSION_KINDS = {Fusion.none: FusionKind(False, False, "O0"), Fusion.bn_act: FusionKind(True, False, "O0"),
                Fusion.graph_kernel: FusionKind(False, False, "O1"), Fusion.conv_act: FusionKind(True, True, "O0")}
# Where MindSpore's graph-kernel fusion fuses BatchNorm. Measured with MindSpore 2.10 on CPU:
# enable_graph_kernel=True only fuses the elementwise tail (LeakyReLU as Mul+Maximum), and jit level O1
# compiles no fused kernel at all.
GRAPH_KERNEL_DEVICES = ("GPU", "Ascend")
MAXOUT = "maxout"  # D's activation with model.d_maxout: not a kind of ACTIVATION_KINDS (nothing fuses or probes it)


def fusion_kind(name: str) -> FusionKind:
    """The FusionKind of a resolved kind; ValueError naming it otherwise (auto is resolved by resolve_plan)."""
    if name not in FUSION_KINDS:
        raise ValueError(f"fusion={name!r} is not a resolved fusion kind; choose one of "
                         f"{[str(k) for k in FUSION_KINDS]} (gan.config.plan.resolve_plan resolves auto)")
    return FUSION_KINDS[name]


@dataclass(frozen=True)
class NetworkPlan:
    """What one network builds: conv implementation, fusion kind (resolved), activation, normaliser, and
    notes saying why a choice differs from what the config asked for."""

    conv_impl: str
    fusion: str
    act: str
    norm: str
    notes: tuple[str, ...] = ()
    layout: str = "NCHW"  # of the activations between its layers: NCHW, or NHWC (channels last)

    @property
    def probed(self) -> bool:
        """Whether the dead-channel diagnostics can probe its activations (the project's cells; maxout is not)."""
        return self.act in ACTIVATION_KINDS


@dataclass(frozen=True)
class BuildPlan:
    """The whole run's build: G's and D's plans, the penalties that differentiate D twice, and the jit level.
    `requested` is (model.conv_impl, fusion.name) as configured."""

    g: NetworkPlan
    d: NetworkPlan
    gradient_penalty: bool  # train.loss=wgan_gp: on every D step
    r1: bool                # train.r1_gamma > 0: on the lazy R1 steps
    jit_level: str
    requested: tuple[str, str]

    @property
    def differentiated_twice(self) -> bool:
        """Whether a penalty differentiates D twice (on some steps at least)."""
        return self.gradient_penalty or self.r1

    def describe(self) -> str:
        """One line per network, e.g. "G: model.conv_impl=auto -> onednn, fusion=auto -> conv_act, act leaky_relu,
        norm batch", with the notes in parentheses."""
        impl, fusion = self.requested
        return "\n".join(f"{name}: model.conv_impl={impl} -> {p.conv_impl}, fusion={fusion} -> {p.fusion}, "
                         f"act {p.act}, norm {p.norm}, layout {p.layout}"
                         + (f" ({'; '.join(p.notes)})" if p.notes else "")
                         for name, p in (("G", self.g), ("D", self.d)))


def _check_rules(conf: Config, penalty: str) -> None:
    """ConfigError naming the keys for a combination nothing can build, whatever the machine; `penalty` names the
    keys that add a gradient penalty (empty without one)."""
    m, a, t = conf.model, conf.act, conf.train
    fused = conf.fusion.name in (Fusion.bn_act, Fusion.conv_act)
    if LOSS_KINDS[t.loss].gradient_penalty and m.d_norm == "batch":
        raise ConfigError(f"train.loss={t.loss} with model.d_norm=batch: the gradient penalty constrains each "
                          "sample's gradient, but BatchNorm makes D's output for one sample depend on the whole "
                          "batch, so the penalty is not the one WGAN-GP defines (its critic has no BatchNorm); "
                          "use model.d_norm=none or model.d_norm=spectral")
    twice_kinds = kinds_with("second_derivative")
    if penalty and a.d_kind not in twice_kinds:
        raise ConfigError(f"act.d_kind={a.d_kind!r} with a gradient penalty (train.loss=wgan_gp or "
                          f"train.r1_gamma>0): the penalty differentiates D twice, and only the kinds "
                          f"{twice_kinds} have a second derivative (the other activation kernels "
                          f"have first derivatives only); use one of them in D, or drop the penalty")
    if penalty and m.conv_impl == "onednn":
        raise ConfigError("model.conv_impl=onednn with a gradient penalty (train.loss=wgan_gp or train.r1_gamma>0):"
                          " the penalty differentiates D twice and the oneDNN convolution kernels have first "
                          "derivatives only; use model.conv_impl=auto (D then runs gemm), gemm or native")
    if t.r1_gamma > 0 and fused and m.d_norm == "batch":
        raise ConfigError(f"train.r1_gamma>0 with fusion={conf.fusion.name} and model.d_norm=batch: a gradient penalty "
                          "differentiates D twice, and the fused BatchNorm + LeakyReLU kernel has a first "
                          "derivative only; use fusion=none, or model.d_norm=none|spectral (D then has no "
                          "BatchNorm to fuse)")
    if m.d_maxout and (a.d_kind != "leaky_relu" or a.d_layers is not None):
        raise ConfigError(f"model.d_maxout={m.d_maxout} replaces D's activation by maxout units, so "
                          f"act.d_kind={a.d_kind!r} / act.d_layers={a.d_layers!r} would be "
                          f"ignored; keep act.d_kind=leaky_relu and act.d_layers=null, or set model.d_maxout=0")
    if m.d_maxout and conf.diagnostics.recycle and "D" in conf.diagnostics.recycle_nets:
        raise ConfigError(f"diagnostics.recycle=true on D with model.d_maxout={m.d_maxout}: dead-channel "
                          f"diagnostics and recycling probe the project's activation cells, and D's maxout units "
                          f"are not one; set diagnostics.recycle_nets=[G] or model.d_maxout=0")
    bn_kinds = kinds_with("bn_fusable")
    if fused and m.d_maxout and m.d_norm == "batch":
        raise ConfigError(f"fusion={conf.fusion.name} with model.d_maxout={m.d_maxout} and "
                          f"model.d_norm=batch: the fused kernels fuse BatchNorm with {bn_kinds} only, "
                          f"not with maxout units; use fusion=none or fusion=auto")
    for net in ("d", "g") if fused else ():
        kind = getattr(a, f"{net}_kind")
        if kind not in bn_kinds:
            raise ConfigError(f"fusion={conf.fusion.name} fuses BatchNorm with {bn_kinds} only, got "
                              f"act.{net}_kind={kind!r}; use fusion=none for it")


def resolve_conv_impl(requested: str, device_target: str, onednn: bool) -> str:
    """model.conv_impl for the device: auto is the fastest implementation there, onednn on CPU when its kernels
    build and load here (`onednn`), else gemm, and native elsewhere; onednn itself is CPU only."""
    if requested == "auto":
        return "native" if device_target != "CPU" else "onednn" if onednn else "gemm"
    if requested == "onednn" and device_target != "CPU":
        raise ConfigError(f"model.conv_impl=onednn runs on CPU only, not on runtime.device_target={device_target!r}; "
                          f"use model.conv_impl=auto")
    return requested


def resolve_fusion(conf: Config, impl: str) -> tuple[str, str]:
    """(the fusion kind the run builds, why auto chose it): fusion.name, or for auto the fastest kind this run
    allows. On CPU that is conv_act when the convolutions run through oneDNN (`impl`), else bn_act; none when
    an activation kind has no fused BatchNorm kernel (D's maxout units neither), with R1 on a BatchNorm D (the
    fused kernel has no second derivative), and on GPU/Ascend (the fused kernels are CPU kernels)."""
    if conf.fusion.name != Fusion.auto:
        return str(conf.fusion.name), ""
    unfused = [f"act.{net}_kind={kind}" for net, kind in (("g", conf.act.g_kind), ("d", conf.act.d_kind))
               if not ACTIVATION_KINDS[kind].bn_fusable]
    unfused += [f"model.d_maxout={conf.model.d_maxout}"] if conf.model.d_maxout else []
    if conf.runtime.device_target != "CPU":
        return str(Fusion.none), "the fused kernels are CPU kernels"
    if unfused:
        return str(Fusion.none), f"no fused BatchNorm kernel for {', '.join(unfused)}"
    if conf.train.r1_gamma > 0 and conf.model.d_norm == "batch":
        return str(Fusion.none), "R1 on a BatchNorm D, and the fused BatchNorm kernel has no second derivative"
    return str(Fusion.conv_act if impl == "onednn" else Fusion.bn_act), ""


def channels_last_blockers(conf: Config, net: NetworkPlan) -> list[str]:
    """Why network plan `net` cannot compute in NHWC (empty when it can): only the oneDNN convolutions and the
    fused BatchNorm + LeakyReLU / bias + LeakyReLU kernels take channels-last activations."""
    checks = ((conf.model.name == "dcgan", f"model.name={conf.model.name} (NHWC is built for the DCGANs)"),
              (net.conv_impl == "onednn", f"conv_impl {net.conv_impl} (NHWC needs onednn)"),
              (FUSION_KINDS[net.fusion].fused_kernels, f"fusion {net.fusion} (NHWC needs bn_act or conv_act)"),
              (net.act == "leaky_relu", f"act {net.act} (NHWC is built for leaky_relu)"))
    return [why for ok, why in checks if not ok]


def resolve_layout(conf: Config, net: NetworkPlan) -> str:
    """The activation layout of network plan `net`: model.layout, where auto is NHWC on CPU for precision fp32 and
    bf16 wherever the network can take it, else NCHW. oneDNN's fastest kernels compute in nhwc (AMX, and its brgemm
    kernels at AVX-512), so a network kept in NHWC moves no activation between layouts; alternated with NCHW at
    every oneDNN instruction set from AMX down to AVX2 it was as fast or faster (docs/precision.md#channels-last).
    fp16 keeps NCHW (not measured). ConfigError for model.layout=nhwc on a network that cannot take it
    (channels_last_blockers)."""
    blockers = channels_last_blockers(conf, net)
    if conf.model.layout == "nhwc" and blockers:
        raise ConfigError(f"model.layout=nhwc cannot be built here: {'; '.join(blockers)}; use model.layout=auto")
    if conf.model.layout == "auto":
        measured = conf.precision.name in ("fp32", "bf16") and conf.runtime.device_target == "CPU"
        return "NHWC" if measured and not blockers else "NCHW"
    return conf.model.layout.upper()


def resolve_plan(conf: Config, onednn: bool) -> BuildPlan:
    """The plan of `conf` on a machine where oneDNN's kernels build and load (`onednn`) or not; ConfigError naming
    the keys for a combination that cannot be built."""
    gradient_penalty, r1 = LOSS_KINDS[conf.train.loss].gradient_penalty, conf.train.r1_gamma > 0
    penalty = " and ".join(key for key, on in ((f"train.loss={conf.train.loss}", gradient_penalty),
                                               ("train.r1_gamma>0", r1)) if on)  # D is differentiated twice
    _check_rules(conf, penalty)
    impl = resolve_conv_impl(conf.model.conv_impl, conf.runtime.device_target, onednn)
    fusion, why = resolve_fusion(conf, impl)
    if FUSION_KINDS[fusion].onednn_conv and impl != "onednn":
        raise ConfigError(f"fusion=conv_act fuses convolutions through oneDNN and needs model.conv_impl=onednn "
                          f"(auto on CPU), not {impl!r}; use fusion=bn_act with other implementations")
    if fusion == Fusion.graph_kernel and conf.runtime.device_target not in GRAPH_KERNEL_DEVICES:
        raise ConfigError(f"fusion=graph_kernel is not supported on device_target={conf.runtime.device_target!r}: "
                          f"MindSpore's graph-kernel fusion (jit_level O1) fuses BatchNorm only on "
                          f"{' and '.join(GRAPH_KERNEL_DEVICES)}; on CPU use fusion=bn_act")
    notes = (f"fusion {fusion}: {why}",) if why else ()
    g = NetworkPlan(impl, fusion, conf.act.g_kind, conf.model.g_norm, notes)
    d = _discriminator(conf, impl, fusion, notes, penalty)
    g, d = (replace(net, layout=resolve_layout(conf, net)) for net in (g, d))
    return BuildPlan(g=g, d=d, gradient_penalty=gradient_penalty, r1=r1, jit_level=FUSION_KINDS[fusion].jit_level,
                     requested=(conf.model.conv_impl, str(conf.fusion.name)))


def _discriminator(conf: Config, impl: str, fusion: str, notes: tuple[str, ...], penalty: str) -> NetworkPlan:
    """D's plan: G's conv impl and fusion, except under a gradient penalty (`penalty`: its keys), which
    differentiates D twice while the oneDNN and fused kernels have first derivatives only: D then runs gemm (for
    model.conv_impl=auto; _check_rules refused an explicit onednn) and unfused."""
    onednn = bool(penalty) and impl == "onednn"
    fused = bool(penalty) and FUSION_KINDS[fusion].fused_kernels
    kernels = [name for name, first_only in (("oneDNN's convolutions", onednn), ("the fused kernels", fused))
               if first_only]
    if kernels:
        notes += (f"{penalty} differentiates D twice, and {' and '.join(kernels)} have first derivatives only",)
    return NetworkPlan("gemm" if onednn else impl, str(Fusion.none) if fused else fusion,
                       MAXOUT if conf.model.d_maxout else conf.act.d_kind, conf.model.d_norm, notes)


def check_config(conf: Config) -> None:
    """Every rule that does not depend on the machine (Config.__post_init__ runs it): the plan as if oneDNN's
    kernels were available, the one answer that refuses nothing the other would allow."""
    resolve_plan(conf, onednn=True)
