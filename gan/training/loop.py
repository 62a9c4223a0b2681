"""GAN training: the jitted steps, D + G in one graph sharing G's forward (losses from gan.training.losses, loss
scaling, clipping, accumulation, EMA, spectral-norm power iteration), and `run`, the loop: step, outputs
(gan.training.outputs), stop (Ctrl-C).

Everything random is a pure function of (seed, step, purpose) (gan.core.streams), so a resumed run replays exactly
the batches, latents and updates of an uninterrupted one without saving RNG states.
"""
from __future__ import annotations

import math
import os
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

import mindspore as ms
import numpy as np
from mindspore import Tensor, amp, nn, ops
from omegaconf import DictConfig

from gan.config.schema import Config, ConfigError, PrecisionConfig, TrainConfig, check_resume, check_sizes, to_config
from gan.core.streams import Purpose, fixed_latents, latents, mixing_weights, stream
from gan.core.untrusted import UntrustedFileError
from gan.data.sources import DataError, ImageData
from gan.diagnostics.probes import ProbedActivation, attach, is_diagnostic_param, set_gradient_taps, set_probing
from gan.diagnostics.recycle import Recycler
from gan.metrics.inception import InceptionError
from gan.models.build import build_plan
from gan.models.checkpoint import (
    D_PREFIX,
    EMA_PREFIX,
    G_PREFIX,
    OPTIMIZER_PREFIXES,
    SCALER_PREFIXES,
    CheckpointError,
    latest_checkpoint,
    load_training_checkpoint,
    set_aside_later,
)
from gan.models.layers import PowerIteration
from gan.models.networks import NETWORKS, Discriminator, Generator, seed_random_activations
from gan.run.directory import RunDirError, check_run_dir_name, claim_run_dir, previous_run_files
from gan.run.files import record_restart, record_resume
from gan.training.distributed import DistributedError, World, gradient_reducer
from gan.training.losses import LOSSES, gradient_penalty, input_gradient, r1_due, r1_penalty
from gan.training.outputs import KernelCacheError, NonFiniteTrainingError, RunOutputs, RunSummary, kernel_library_gone
from gan.training.precision import mixed_precision
from gan.training.runtime import prepare_run
from gan.training.tasks import PointData, build_task
from ops import global_norm

_AVERAGED = ("loss_d", "loss_g", "d_real", "d_fake")  # StepStats fields logged as means over the ranks


def composed_global_norm(grads: tuple) -> Tensor:
    """L2 norm over all gradient tensors from MindSpore ops (a Square and a ReduceSum per tensor, an AddN)."""
    return ops.sqrt(ops.addn([ops.square(g.astype(ms.float32)).sum() for g in grads]))


# The global gradient norm per device target: on CPU one aot kernel over all gradients (float64 sums, so a
# float32 square cannot overflow); elsewhere the composition.
GLOBAL_NORMS: dict[str, Callable[[tuple], Tensor]] = {"CPU": global_norm}


def global_norm_for(device_target: str) -> Callable[[tuple], Tensor]:
    """The global-norm function the steps use on this device target."""
    return GLOBAL_NORMS.get(device_target, composed_global_norm)


def clip_by_global_norm(grads: tuple, norm: Tensor, max_norm: float) -> tuple:
    """grads scaled by max_norm / norm when their global norm exceeds max_norm, as torch.nn.utils.clip_grad_norm_."""
    factor = ops.minimum(max_norm / (norm + 1e-6), 1.0)
    return tuple(g * factor.astype(g.dtype) for g in grads)


class UnitLossScaler(amp.StaticLossScaler):
    """StaticLossScaler(1) whose scale and unscale are the identity: the step graph then holds no multiply per
    gradient (StaticLossScaler(1) still launches one per gradient and one for the loss). `scale_value` stays a
    Parameter, so the logged scale and the checkpoints are the same."""

    def __init__(self) -> None:
        super().__init__(1.0)

    def scale(self, inputs):
        return inputs

    def unscale(self, inputs):
        return inputs


def _loss_scaler(precision: PrecisionConfig) -> amp.LossScaler:
    """Dynamic loss scaling for fp16; a fixed scale (1 by default: the identity) otherwise."""
    if precision.name == "fp16":
        return amp.DynamicLossScaler(precision.loss_scale, 2, precision.scale_window)
    return UnitLossScaler() if precision.loss_scale == 1.0 else amp.StaticLossScaler(precision.loss_scale)


def first_nonfinite_layer(net: Generator | Discriminator, x: Tensor) -> str | None:
    """Run `net` layer by layer (PyNative) and name the first layer whose output is not finite."""
    for name, layer in net.layers.name_cells().items():
        x = layer(x)
        if not np.isfinite(x.astype(ms.float32).asnumpy()).all():
            return f"{type(net).__name__.lower()}.layers.{name} ({type(layer).__name__})"
    return None


def model_params(net: nn.Cell) -> list[ms.Parameter]:
    """The network's own Parameters, without the diagnostics probes' accumulators."""
    return [p for p in net.get_parameters() if not is_diagnostic_param(p.name)]


def optimizer_state(opt: nn.Optimizer) -> list[ms.Parameter]:
    """The optimiser's own Parameters (step count, moments, powers, learning rate), not the network's it updates."""
    updated = {id(p) for p in opt.parameters}
    return [p for p in opt.get_parameters() if id(p) not in updated]


def scaler_state(scaler: amp.LossScaler) -> dict[str, ms.Parameter]:
    """The loss scaler's Parameters by attribute name (scale_value, and counter for dynamic scaling)."""
    return {n: v for n, v in vars(scaler).items() if isinstance(v, ms.Parameter)}


class SetLearningRate(nn.Cell):
    """Writes an optimiser's `learning_rate` Parameter from inside a graph: a host-side set_data after the
    steps compiled is not seen by them (MindSpore 2.10 keeps the graph's own copy)."""

    def __init__(self, opt: nn.Optimizer) -> None:
        super().__init__()
        self.rate = opt.learning_rate  # one optimiser per cell: both optimisers name theirs "learning_rate"

    def construct(self, lr: Tensor) -> Tensor:
        ops.assign(self.rate, lr)
        return lr


class EMA(nn.Cell):
    """Exponential moving average of the generator's parameters (BatchNorm statistics are copied)."""

    def __init__(self, source: nn.Cell, target: nn.Cell, beta: float) -> None:
        super().__init__()
        self.source = ms.ParameterTuple(model_params(source))
        self.target = ms.ParameterTuple(model_params(target))
        self.betas = tuple(beta if p.requires_grad else 0.0 for p in self.source)

    def construct(self) -> Tensor:
        for src, dst, beta in zip(self.source, self.target, self.betas):
            # beta 0 (statistics, counters such as RReLU's int32 draw count): a plain copy
            ops.assign(dst, src if beta == 0.0 else dst * beta + src * (1.0 - beta))
        return ops.zeros((), ms.float32)


def _per_d_step(x: np.ndarray | Sequence[np.ndarray], name: str, d_steps: int) -> list[np.ndarray]:
    """One array per D step: a single array stands for d_steps=1."""
    arrays = [x] if isinstance(x, np.ndarray) else list(x)
    if len(arrays) != d_steps:
        raise ValueError(f"train_step: {name} has {len(arrays)} batches, train.d_steps={d_steps} needs one per D step")
    return arrays


def _part(x: Tensor, i: int, n: int) -> Tensor:
    """Micro-batch i of x (n, B / n, ...); with one, a reshape (no StridedSlice copy)."""
    return x.reshape(x.shape[1:]) if n == 1 else x[i]


def _stack(xs: tuple) -> Tensor:
    """Micro-batches back to (n, B / n, ...); with one, a reshape."""
    return xs[0].reshape((1,) + xs[0].shape) if len(xs) == 1 else ops.stack(xs)


def _add(a: tuple, b: tuple) -> tuple:
    """Elementwise sum of two tuples of tensors (micro-batch outputs or gradients)."""
    return tuple(x + y for x, y in zip(a, b))


def _mean(xs: tuple, n: int) -> tuple:
    """The mean of n micro-batches' summed values (no op for one)."""
    return xs if n == 1 else tuple(x / n for x in xs)


def _updater(opt: nn.Optimizer, scaler: amp.LossScaler, world: World, clip: float | None,
             norm_of: Callable[[tuple], Tensor]) -> Callable[[tuple], tuple[Tensor, Tensor]]:
    """The tail of every optimisation step, grads -> (pre-clip global norm, finite): mean over ranks -> unscale
    -> norm -> adjust the loss scale -> clip the global norm -> update, skipped when the grads are not finite."""
    reduce = gradient_reducer(opt.parameters, world)  # identity on one rank

    def update(grads: tuple) -> tuple[Tensor, Tensor]:
        grads = scaler.unscale(reduce(grads))
        norm = norm_of(grads)
        finite = ops.isfinite(norm)  # inf/NaN in any gradient makes the norm non-finite: one check, not one per tensor
        scaler.adjust(finite)
        if clip is not None:
            grads = clip_by_global_norm(grads, norm, clip)
        if finite:
            opt(grads)
        return norm, finite

    return update


@dataclass
class StepStats:
    """Host-side numbers of one D step + G step."""

    loss_d: float
    loss_g: float
    d_real: float
    d_fake: float
    grad_norm_d: float
    grad_norm_g: float
    loss_scale_d: float
    loss_scale_g: float
    finite: bool


class GANTrainer:
    """G, D, optional EMA generator, two Adam optimizers and two loss scalers, with jitted steps."""

    def __init__(self, cfg: Config, channels: int, world: World = World()) -> None:
        # What each network builds on this machine (conv impl, fusion, activation, layout), decided once
        # (gan.config.plan)
        self.plan = plan = build_plan(cfg)
        self.nz = cfg.model.nz
        nets = NETWORKS[cfg.model.name]
        self.sync_bn = cfg.train.sync_bn and world.size > 1  # one rank: the global batch is the local one
        self.g = nets.generator(cfg.model, cfg.act, channels, plan.g.conv_impl, plan.g.fusion, self.sync_bn,
                                plan.g.layout)
        self.d = nets.discriminator(cfg.model, cfg.act, channels, plan.d.conv_impl, plan.d.fusion, self.sync_bn,
                                    plan.d.layout)
        nets.init(self.g, stream(cfg.seed, 0, Purpose.INIT_G))
        nets.init(self.d, stream(cfg.seed, 0, Purpose.INIT_D))
        for net in (self.g, self.d):
            seed_random_activations(net, cfg.seed)
        # Unique names: the D step also runs G, so both live in one graph.
        self.g.update_parameters_name(G_PREFIX)
        self.d.update_parameters_name(D_PREFIX)
        self.g_ema = None
        if cfg.train.ema_beta is not None:
            self.g_ema = nets.generator(cfg.model, cfg.act, channels, plan.g.conv_impl, plan.g.fusion)  # inference only
            self.g_ema.update_parameters_name(EMA_PREFIX)
            for dst, src in zip(self.g_ema.get_parameters(), self.g.get_parameters()):
                dst.set_data(src.data.copy())
        # MindSpore cells start in inference mode: BatchNorm must use (and update) batch statistics.
        self.g.set_train(True)
        self.d.set_train(True)
        # Diagnostics probes go in before amp wrapping and compilation (gan.diagnostics.probes.attach).
        self.probes: list[ProbedActivation] = []
        self.d_probes: list[ProbedActivation] = []
        if cfg.diagnostics.enabled:
            size = nets.sample_side(cfg.model)
            if plan.d.probed:  # maxout units are not the project's activation cells: G only then
                self.d_probes = attach(self.d, Tensor(np.zeros((2, channels, size, size), np.float32)), "D")
            self.probes = attach(self.g, Tensor(np.zeros((2, self.nz, 1, 1), np.float32)), "G") + self.d_probes
        # precision=fp16|bf16: which layers run in which dtype, decided in gan.training.precision
        self.g_run, self.d_run = (mixed_precision(net, cfg.precision.name, cfg.runtime.device_target, role, self.probes)
                                  for net, role in ((self.g, "generator"), (self.d, "discriminator")))
        t = cfg.train
        self.opt_g = nn.Adam(self.g.trainable_params(), t.lr, t.beta1, t.beta2)
        self.opt_d = nn.Adam(self.d.trainable_params(), t.lr, t.beta1, t.beta2)
        self.scaler_g = _loss_scaler(cfg.precision)
        self.scaler_d = _loss_scaler(cfg.precision)
        # One graph updates both networks: the optimisers' and loss scalers' own Parameters (global_step,
        # beta1_power, learning_rate, scale_value, ...) get unique names, which are also their checkpoint keys.
        for net, opt, scaler in (("g", self.opt_g, self.scaler_g), ("d", self.opt_d, self.scaler_d)):
            for param in optimizer_state(opt):
                param.name = OPTIMIZER_PREFIXES[net] + param.name
            for attr, param in scaler_state(scaler).items():
                param.name = SCALER_PREFIXES[net] + attr
        graph = cfg.runtime.mode == "graph"
        self._compile: Callable = (lambda fn: ms.jit(fn, jit_level=plan.jit_level)) if graph else (lambda fn: fn)
        self.world, self.train_cfg, self.d_steps = world, t, t.d_steps
        self._norm_of = global_norm_for(cfg.runtime.device_target)
        self.loss = LOSSES[t.loss]
        self.gp_weight, self.r1_gamma, self.r1_every = t.gp_weight, t.r1_gamma, t.r1_every
        self._steps: dict[tuple[bool, bool], tuple[Callable, Callable, Callable]] = {}
        self._ema_step = self._compile(EMA(self.g, self.g_ema, t.ema_beta)) if self.g_ema else None
        self._set_lr = tuple(self._compile(SetLearningRate(opt)) for opt in (self.opt_g, self.opt_d))
        self._power_iteration = self._compile(PowerIteration(self.d)) if cfg.model.d_norm == "spectral" else None
        # diagnostics.recycle: ReDo on the networks of diagnostics.recycle_nets (gan.diagnostics.recycle), keyed by
        # (seed, step).
        optimizers = {"G": (self.g, self.opt_g), "D": (self.d, self.opt_d)}
        self.recyclers = [Recycler(*optimizers[net], nets.values, cfg.seed, Purpose.RECYCLE)
                          for net in cfg.diagnostics.recycle_nets] if cfg.diagnostics.recycle else []

    def recycle(self, step: int, record: dict) -> dict[str, list[int]]:
        """Recycle the channels the check `record` of step `step` found dormant; {layer: channel indices}."""
        return {layer: channels for r in self.recyclers for layer, channels in r(step, record).items()}

    def _d_loss(self, r1: bool) -> Callable:
        """D's loss (real, fake, eps) -> (scaled loss, loss, D(x), D(G(z))) on a fake that carries no gradient,
        with the R1 penalty when r1 is True."""
        loss_d, penalty, gp_weight = self.loss.d, self.plan.gradient_penalty, self.gp_weight
        r1_weight = 0.5 * self.r1_gamma * self.r1_every  # lazy: the average over steps is gamma / 2 * E||grad||^2
        input_grad = input_gradient(self.d_run)

        def d_loss(real: Tensor, fake: Tensor, eps: Tensor) -> tuple:
            logits_real, logits_fake = self.d_run(real), self.d_run(fake)
            loss = loss_d(logits_real, logits_fake)
            if penalty:
                loss = loss + gp_weight * gradient_penalty(input_grad, real, fake, eps)
            if r1:
                loss = loss + r1_weight * r1_penalty(input_grad, real)
            d_real = ops.sigmoid(logits_real.astype(ms.float32)).mean()
            d_fake = ops.sigmoid(logits_fake.astype(ms.float32)).mean()
            return self.scaler_d.scale(loss), loss, d_real, d_fake

        return d_loss

    def _g_loss(self) -> Callable:
        """G's loss as a function of the fake, fake -> (scaled loss, loss, D(fake)), through D's current weights."""
        loss_g = self.loss.g

        def g_loss(fake: Tensor) -> tuple:
            logits = self.d_run(fake)
            loss = loss_g(logits)
            return self.scaler_g.scale(loss), loss, ops.sigmoid(logits.astype(ms.float32)).mean()

        return g_loss

    def _make_steps(self, r1: bool) -> tuple[Callable, Callable, Callable]:
        """The (D step, G step, D + G step) functions of a variant, each (real, z, eps) -> outputs, with every
        input (train.accumulate micro-batches, B / accumulate, ...).

        D step: fake = G(z) without gradient, then D's update. G step: fake and G's pullback from one `ms.vjp`
        of G, G's loss gradient with respect to the fake through D, pulled back for G's update. D + G step: the
        vjp first, D's update on its fake, then G's update from the same fake through the UPDATED D: G's forward
        runs once per iteration, as in PyTorch's DCGAN example. The updates equal a D step followed by a G step
        (same weights; BatchNorm normalises with the batch's statistics), while G's BatchNorm running statistics
        move once instead of twice. With a penalty (a gradient of D inside D's loss) MindSpore 2.10 cannot
        compile the D + G step ("Illegal AnfNode for evaluating" on a G Parameter once the pullback's input
        depends on the fake), so train_step runs the D and G steps there.
        The micro-batch loops are unrolled at compile time; the mean of equal micro-batches' gradients of a mean
        loss is the full batch's gradient (up to rounding) whenever no layer mixes samples (BatchNorm does).
        """
        t, g_run = self.train_cfg, self.g_run
        n, g_params = t.accumulate, self.opt_g.parameters
        d_grad = ms.value_and_grad(self._d_loss(r1), None, self.opt_d.parameters, has_aux=True)
        fake_grad = ms.value_and_grad(self._g_loss(), 0, None, has_aux=True)
        update_d, update_g = (_updater(opt, scaler, self.world, t.clip_grad_norm, self._norm_of)
                              for opt, scaler in ((self.opt_d, self.scaler_d), (self.opt_g, self.scaler_g)))

        def generate(z: Tensor) -> Tensor:  # micro-batch by micro-batch: BatchNorm's batches are the micro-batches
            fakes = ()
            for i in range(n):
                fakes += (g_run(_part(z, i, n)),)
            return _stack(fakes)

        def d_half(real: Tensor, fakes: Tensor, eps: Tensor) -> tuple:
            outputs, grads = d_grad(_part(real, 0, n), _part(fakes, 0, n), _part(eps, 0, n))
            for i in range(1, n):
                more, more_grads = d_grad(_part(real, i, n), _part(fakes, i, n), _part(eps, i, n))
                outputs, grads = _add(outputs, more), _add(grads, more_grads)
            return (_mean(outputs, n),) + update_d(_mean(grads, n))

        def g_half(fakes: Tensor, pullback: Callable) -> tuple:
            outputs, d_fake = fake_grad(_part(fakes, 0, n))
            d_fakes = (d_fake,)
            for i in range(1, n):
                more, d_fake = fake_grad(_part(fakes, i, n))
                outputs, d_fakes = _add(outputs, more), d_fakes + (d_fake,)
            _, grads = pullback(_stack(d_fakes))
            return (_mean(outputs, n),) + update_g(_mean(grads, n))

        def d_step(real: Tensor, z: Tensor, eps: Tensor) -> tuple:
            return d_half(real, ops.stop_gradient(generate(z)), eps)

        def g_step(real: Tensor, z: Tensor, eps: Tensor) -> tuple:
            fakes, pullback = ms.vjp(generate, z, weights=g_params)
            return g_half(fakes, pullback)

        def d_and_g_step(real: Tensor, z: Tensor, eps: Tensor) -> tuple:
            fakes, pullback = ms.vjp(generate, z, weights=g_params)
            return d_half(real, ops.stop_gradient(fakes), eps) + g_half(fakes, pullback)

        return d_step, g_step, d_and_g_step

    def _steps_for(self, probe: bool, r1: bool) -> tuple[Callable, Callable, Callable]:
        """The jitted (D step, G step, D + G step) of a (probe, r1) variant, built on first use (each compiles at
        its first call): each jitted function keeps the graph of its first compile, so ordinary steps never run
        the probes or the R1 penalty."""
        key = (probe, r1)
        if key not in self._steps:
            self._steps[key] = tuple(self._compile(fn) for fn in self._make_steps(r1))
        return self._steps[key]

    def _micro(self, x: np.ndarray) -> Tensor:
        """(B, ...) -> (accumulate, B / accumulate, ...): the micro-batches of one optimiser step."""
        return Tensor(x.reshape((self.train_cfg.accumulate, -1) + x.shape[1:]))

    def train_step(self, real: np.ndarray | Sequence[np.ndarray], z: np.ndarray | Sequence[np.ndarray],
                   probe: bool = False, *, eps: np.ndarray | Sequence[np.ndarray] | None = None,
                   r1: bool = False) -> StepStats:
        """train.d_steps D updates, then one G update on the LAST D update's latents; an update is skipped when its
        grads are not finite. Without a penalty the last D update and the G update are one jitted graph running
        G's forward once (the earlier D updates are plain D steps); with one (wgan_gp, or R1 on its steps) they are
        separate D and G steps (`_make_steps` says why). `real`, `z` (and `eps`, the gradient penalty's mixing
        weights (B, 1, 1, 1), needed by loss=wgan_gp) are one array per D step, or one array when d_steps=1.

        probe=True (diagnostics on) runs the probed twin of the steps: the same update, plus the statistics;
        r1=True adds the R1 penalty to the D steps (the caller applies the lazy schedule, gan.training.losses.r1_due).
        """
        if probe and not self.probes:
            raise ValueError("train_step(probe=True) needs diagnostics.enabled=true (no probes are attached)")
        reals, zs = _per_d_step(real, "real", self.d_steps), _per_d_step(z, "z", self.d_steps)
        if eps is None:
            if self.plan.gradient_penalty:
                raise ValueError("train_step: the gradient penalty of train.loss=wgan_gp needs eps")
            eps = [np.zeros((x.shape[0], 1, 1, 1), np.float32) for x in reals]
        epss = _per_d_step(eps, "eps", self.d_steps)
        r1 = r1 and self.plan.r1
        penalty = r1 or self.plan.gradient_penalty  # this step differentiates D twice
        set_probing(self.probes, probe)
        d_step, g_step, d_and_g_step = self._steps_for(probe, r1)
        # D's gradient taps, read at each step's compile: off where D is differentiated twice (a penalty)
        set_gradient_taps(self.d_probes, not penalty)
        finite = True
        for k, (real_k, z_k, eps_k) in enumerate(zip(reals, zs, epss)):
            if self._power_iteration is not None:
                self._power_iteration()
            inputs = (self._micro(real_k), self._micro(z_k), self._micro(eps_k))
            if penalty or k < self.d_steps - 1:
                (_, loss_d, d_real, d_fake), norm_d, finite_d = d_step(*inputs)
            else:
                (_, loss_d, d_real, d_fake), norm_d, finite_d, (_, loss_g, _), norm_g, finite_g = d_and_g_step(*inputs)
            finite = finite and bool(finite_d.asnumpy())
        if penalty:
            set_gradient_taps(self.d_probes, True)
            (_, loss_g, _), norm_g, finite_g = g_step(*inputs)
        if self._ema_step is not None:
            self._ema_step()
        return StepStats(float(loss_d.asnumpy()), float(loss_g.asnumpy()), float(d_real.asnumpy()),
                         float(d_fake.asnumpy()), float(norm_d.asnumpy()), float(norm_g.asnumpy()),
                         float(self.scaler_d.scale_value.asnumpy()), float(self.scaler_g.scale_value.asnumpy()),
                         finite and bool(finite_g.asnumpy()))

    def set_lr(self, lr: float) -> None:
        """Set both optimisers' learning rate (read by the jitted steps from their Parameters)."""
        for set_lr in self._set_lr:
            set_lr(Tensor(lr, ms.float32))

    def generate(self, z: np.ndarray) -> np.ndarray:
        """Images from latents with the EMA generator when enabled, BatchNorm in inference mode."""
        net = self.g_ema or self.g
        net.set_train(False)
        try:
            return net(Tensor(z)).asnumpy()
        finally:
            net.set_train(True)

    def find_nonfinite(self, real: np.ndarray, z: np.ndarray) -> str:
        """Name the first layer whose activations are not finite, checking G(z), D(real), D(G(z))."""
        fake = self.g(Tensor(z))
        for net, x in ((self.g, Tensor(z)), (self.d, Tensor(real)), (self.d, fake)):
            where = first_nonfinite_layer(net, x)
            if where is not None:
                return where
        return "none: every activation is finite, the gradients overflowed"

    def _stateful(self) -> dict[str, ms.Parameter]:
        """Every Parameter a resume needs, keyed by a stable name."""
        params = {p.name: p for p in model_params(self.g)}
        params.update({p.name: p for p in model_params(self.d)})
        if self.g_ema is not None:
            params.update({p.name: p for p in model_params(self.g_ema)})
        for opt, scaler in ((self.opt_g, self.scaler_g), (self.opt_d, self.scaler_d)):
            # named opt_g.* / opt_d.* and scaler_g.* / scaler_d.* at construction
            params.update({p.name: p for p in optimizer_state(opt) + list(scaler_state(scaler).values())})
        return params

    def state_arrays(self) -> dict[str, np.ndarray]:
        """A snapshot of the full training state as numpy arrays (for gan.models.checkpoint); copies, because asnumpy()
        may share the parameter's buffer and a later step would change the snapshot."""
        return {name: p.asnumpy().copy() for name, p in self._stateful().items()}

    def replicated_arrays(self) -> dict[str, np.ndarray]:
        """The state data parallelism keeps identical on every rank: all of it with train.sync_bn, else all
        but the BatchNorm moving statistics (each rank's come from its own batches)."""
        if self.sync_bn:
            return self.state_arrays()
        per_rank = {p.name for net in (self.g, self.d, self.g_ema) if net is not None
                    for p in model_params(net) if not p.requires_grad}
        return {name: a for name, a in self.state_arrays().items() if name not in per_rank}

    def load_state_arrays(self, arrays: dict[str, np.ndarray], source: str | Path) -> None:
        """Restore the state written by `state_arrays`; a missing entry, or one whose shape or dtype kind (float,
        integer) differs from the Parameter's, is a CheckpointError raised before any Parameter changes."""
        params = self._stateful()
        missing = sorted(set(params) - set(arrays))
        if missing:
            raise CheckpointError(f"{source}: not a checkpoint of this model/config; missing {missing[:5]}"
                                  f"{' ...' if len(missing) > 5 else ''}")
        for name, p in params.items():
            array, needed = arrays[name], np.dtype(ms.dtype_to_nptype(p.dtype))
            if tuple(array.shape) != tuple(p.shape):
                raise CheckpointError(f"{source}: '{name}' has shape {array.shape}, this model needs "
                                      f"{tuple(p.shape)} (was it trained with other model.* settings?)")
            if _dtype_kind(array.dtype) != _dtype_kind(needed):
                raise CheckpointError(f"{source}: '{name}' is {array.dtype}{list(array.shape)}, this model needs "
                                      f"{needed}{list(p.shape)}; not a checkpoint train.py wrote")
        for name, p in params.items():
            p.set_data(Tensor(arrays[name].astype(ms.dtype_to_nptype(p.dtype))))


def _dtype_kind(dtype: np.dtype) -> str:
    """"float" or "integer" (signed or unsigned), else the dtype's own kind code (bool, complex, object...)."""
    return {"f": "float", "i": "integer", "u": "integer"}.get(np.dtype(dtype).kind, np.dtype(dtype).kind)


# What a user's config, files, run folder or data can cause, each with a message naming the key, file or value
# and what is allowed: train.py re-raises it as gan.run.directory.ReportedError, one line without a traceback (which
# stays for the project's bugs).
USER_ERRORS = (ConfigError, CheckpointError, DataError, RunDirError, UntrustedFileError, InceptionError,
               DistributedError, NonFiniteTrainingError, KernelCacheError)


class TrainingAborted(KeyboardInterrupt):
    """A second Ctrl-C (or SIGTERM): training stopped at once, without saving; the message names the newest
    checkpoint (train.py prints it and exits 130)."""


class _InterruptFlag:
    """First Ctrl-C (or SIGTERM) asks the loop to checkpoint and stop after the current step, and says so; a
    second aborts at once without saving (TrainingAborted), also while that checkpoint is being written.

    SIGTERM is handled too because MindSpore's runtime installs its own SIGINT handler on every jit call,
    and that handler turns Ctrl-C into a SIGTERM to this process.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)
    NOTICE = "\nstopping after this step (saving a checkpoint); Ctrl-C again to abort without saving\n"

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.requested = False
        self._previous: dict = {}

    def __enter__(self) -> "_InterruptFlag":
        self._previous = {sig: signal.signal(sig, self._handle) for sig in self.SIGNALS}
        return self

    def __exit__(self, *exc) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def _handle(self, signum, frame) -> None:
        if self.requested:
            newest = latest_checkpoint(self.run_dir)
            raise TrainingAborted("aborted by a second Ctrl-C (or SIGTERM) without saving: nothing was saved since "
                                  "the last checkpoint, " + (f"{newest}; resume from it with train.resume=auto"
                                                             if newest else "and this run has none"))
        self.requested = True
        os.write(2, self.NOTICE.encode())  # not print(): the handler may interrupt a write to sys.stderr


def scheduled_lr(train: TrainConfig, step: int, end: int) -> float:
    """The learning rate of 0-based step `step` of a run of `end` steps: train.lr, falling linearly to 0 over the
    last train.lr_decay share of the run (a decaying rate lets G settle onto the modes instead of jittering)."""
    decay_steps = train.lr_decay * end
    return train.lr if decay_steps <= 0 else train.lr * min(1.0, (end - step) / decay_steps)


def total_steps(cfg: Config, num_images: int) -> int:
    """train.steps, or train.epochs converted to steps with the dataset size (a step takes train.d_steps batches)."""
    if cfg.train.steps is not None:
        return cfg.train.steps
    return max(1, math.ceil(cfg.train.epochs * num_images / (cfg.train.batch_size * cfg.train.d_steps)))


def _resume_path(resume: str | None, run_dir: Path) -> Path | None:
    """The checkpoint to resume from: newest in run_dir for `auto` (None if there is none yet), else the file."""
    if resume is None:
        return None
    if resume == "auto":
        return latest_checkpoint(run_dir)
    path = Path(resume).expanduser()
    if not path.is_file():
        raise ConfigError(f"train.resume={resume!r}: no such checkpoint file (use 'auto' or a .ckpt path)")
    return path


def _count(value: object) -> bool:
    """Whether `value` is an integer >= 0 (a bool is not)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= 0


def _diagnostics_state(value: object) -> bool:
    """Whether `value` is a dead-channel tracker state: {"checks": count, "streaks": {layer: [count, ...]}}."""
    if not isinstance(value, dict) or not isinstance(value.get("streaks"), dict):
        return False
    return _count(value.get("checks")) and all(isinstance(v, list) and all(map(_count, v))
                                               for v in value["streaks"].values())


# The meta entries a resume reads: (required, what it must be, check). Checked before any file of the run changes.
RESUME_META = {
    "step": (True, "an integer >= 0", _count),
    "config": (True, "the run's config as YAML text", lambda v: isinstance(v, str)),
    "skipped_steps": (False, "an integer >= 0", _count),
    "diagnostics": (False, "a dead-channel history {checks: N, streaks: {layer: [N, ...]}}", _diagnostics_state),
}


def check_resume_meta(path: Path, meta: dict) -> None:
    """CheckpointError naming the file and the entry unless every RESUME_META entry of `meta` is what it must be."""
    for key, (required, what, valid) in RESUME_META.items():
        if key not in meta:
            if required:
                raise CheckpointError(f"{path}: its meta has no '{key}' ({what}); not a checkpoint train.py wrote")
        elif not valid(meta[key]):
            raise CheckpointError(f"{path}: meta '{key}' is {meta[key]!r:.80}, it must be {what}; the file was not "
                                  f"written by train.py (or was edited), so the run cannot resume from it")


def resume_state(trainer: GANTrainer, conf: Config, world: World, run_dir: Path,
                 data: ImageData | PointData) -> tuple[Path | None, int, int, dict]:
    """Load train.resume into the trainer: (checkpoint path or None, step to start from, step to end at, its meta).

    Everything the resume reads is checked before any file of the run changes: the meta entries (RESUME_META),
    the experiment keys (changed ones, or other data than the checkpoint's (`data.fingerprint()`), stop the run
    unless train.resume_override; gan.config.schema.check_resume), every array against the network, and the step
    against the run's length. Only then does rank 0 record the resume in the run's files, before anything reads or
    appends them, setting aside checkpoints past the resumed step. resume=auto in a directory whose run saved no
    checkpoint starts over at step 0."""
    path = _resume_path(conf.train.resume, run_dir)
    if path is None:
        end = end_step(conf, data.num_images, 0, None)
        if conf.train.resume == "auto" and world.is_main and previous_run_files(run_dir):
            record_restart(run_dir)
        return None, 0, end, {}
    arrays, meta = load_training_checkpoint(path)
    check_resume_meta(path, meta)
    stored, current = meta.get("data"), data.fingerprint()
    changes = check_resume(path, meta["config"], conf,
                           {"data.fingerprint": [stored, current]} if stored is not None and stored != current else {})
    trainer.load_state_arrays(arrays, path)
    start = int(meta["step"])
    end = end_step(conf, data.num_images, start, path)
    if world.is_main:
        record_resume(run_dir, start, path, changes, set_aside_later(run_dir, start))
    return path, start, end, meta


def end_step(conf: Config, num_images: int | None, start: int, resumed_from: Path | None) -> int:
    """The step the run ends at: start + 2 for a dry run, else train.steps (or train.epochs in steps); a
    ConfigError when the checkpoint resumed from is already past it (there would be nothing to train)."""
    if conf.train.dry_run:
        return start + 2
    end = total_steps(conf, num_images)
    if start > end:
        length = (f"train.steps={conf.train.steps}" if conf.train.steps is not None
                  else f"train.epochs={conf.train.epochs} ({end} steps)")
        raise ConfigError(f"train.resume: {resumed_from} is at step {start}, past {length}: there is nothing to "
                          f"train; set train.steps above {start} to train it further")
    return end


def step_inputs(conf: Config, world: World, batches: Iterator[np.ndarray], step: int) -> dict:
    """train_step's inputs of global step `step`: train.d_steps real batches, latents and penalty weights, each a
    pure function of (seed, step) and this rank's shard; and whether the lazy R1 penalty is due."""
    t, n = conf.train, conf.train.batch_size * world.size
    return {"real": [next(batches) for _ in range(t.d_steps)],
            "z": [world.local(latents(conf.seed, step, Purpose.Z, n, conf.model.nz, k)) for k in range(t.d_steps)],
            "eps": [world.local(mixing_weights(conf.seed, step, n, k)) for k in range(t.d_steps)],
            "r1": r1_due(step, t.r1_gamma, t.r1_every)}


def run(cfg: DictConfig | Config, run_dir: str | Path) -> RunSummary:
    """Train (or resume) a GAN as configured, writing samples, checkpoints and TensorBoard to run_dir."""
    check_run_dir_name(run_dir)
    conf, run_dir = to_config(cfg), Path(run_dir)
    check_sizes(conf)
    world = prepare_run(conf)  # device, threads, ranks, precision check, seed (gan.training.runtime)
    with claim_run_dir(run_dir, conf.train.resume, world.is_main):  # locked, not another run's (gan.run.directory)
        task = build_task(conf, world.rank, world.size)  # data shard, sample pictures and metrics (gan.training.tasks)
        trainer = GANTrainer(conf, task.data.channels, world)
        resumed_from, start, end, meta = resume_state(trainer, conf, world, run_dir, task.data)
        interrupt = _InterruptFlag(run_dir)
        outputs = RunOutputs(conf, run_dir, task, trainer, world, start, end, meta, resumed_from,
                             latents(conf.seed, 0, Purpose.EVAL_Z, conf.eval.num_samples, conf.model.nz),
                             fixed_latents(conf.seed, conf.train.num_samples, conf.model.nz),
                             lambda: interrupt.requested)
        outputs.announce()
        batches = outputs.batches(start * conf.train.d_steps)  # D takes train.d_steps batches per step
        try:
            with interrupt:
                for step in range(start, end):
                    inputs = step_inputs(conf, world, batches, step)
                    if conf.train.lr_decay:
                        trainer.set_lr(scheduled_lr(conf.train, step, end))
                    with world.guard(f"training step {step + 1}"):
                        stats = world.mean_fields(trainer.train_step(probe=outputs.probe_due(step + 1), **inputs),
                                                  _AVERAGED)
                        stop = world.any(interrupt.requested)  # every rank stops at the same step
                    outputs.after_step(step + 1, stats, inputs["real"][0], inputs["z"][0])
                    if stop or outputs.evaluation_interrupted:
                        outputs.interrupted(step + 1)
                        break
            outputs.finish()
        except RuntimeError as err:
            if not kernel_library_gone(err):
                raise
            raise outputs.kernels_gone(err, None) from err  # inside a step: its state is not a finished step's
        finally:
            outputs.close()
        outputs.print_summary()
        return outputs.summary
