"""All trials of one 2D setting trained as one batched model: the trial index leads every weight.

The 2D recipe (`experiment=ring8|grid25`: gan.models.networks' MLPs, Adam, non-saturating BCE) trains one small network
pair per run. Here T trials share every kernel: G's weights are (T, in, out) and its activations (T, N, C);
D works channels-first, weights (T, out, in) and activations (T, C, N), so that D's PReLU is the project's
prelu op on (1, T * C, N) with the (T * C,) weights of all trials along axis 1; the dense layers are batched
matmuls, the activations the project's LeakyReLU and PReLU ops, and one
jitted function does the D step and the G step of all trials, so per-trial launches and host work go away
(the arithmetic stays; docs/sweeps.md has the measured costs). The trials stay independent: the loss is
the sum of the per-trial losses, so each trial's gradient is its own; BatchNorm statistics and Adam moments
are per trial (nn.Adam's kernel on the stacked tensors is element-wise). Each trial t is built to reproduce
`python train.py experiment=D seed=seeds[t] diagnostics.enabled=false`: the same initial weights (made by
gan.models.networks), batches (gan.training.tasks.PointData) and latents, G's forward once per step shared by the D and
G updates (so one BatchNorm moving-statistics update per step), the same evaluation latents and metrics
(gan.metrics.sample_quality.mode_metrics).
One difference: a step whose gradients are not finite in some trial is skipped for every trial (train.py
skips it for that run only); each trial's count of such steps is reported.
"""
from __future__ import annotations

from dataclasses import dataclass

import mindspore as ms
import numpy as np
from mindspore import Tensor, nn, ops

from gan.config.activation_kinds import ACTIVATION_KINDS
from gan.config.plan import MAXOUT
from gan.config.schema import Config, ConfigError
from gan.core.streams import Purpose, latents, stream
from gan.metrics.sample_quality import mode_metrics
from gan.models.build import build_plan
from gan.models.checkpoint import D_PREFIX, EMA_PREFIX, G_PREFIX
from gan.models.networks import MLP_D_DEPTH, MLP_G_DEPTH, NETWORKS, network_slopes
from gan.training.loop import scheduled_lr
from gan.training.tasks import PointData
from ops import leaky_relu, prelu

_BMM = ops.BatchMatMul()
_BN_EPS, _BN_KEEP = 1e-5, 0.9  # nn.BatchNorm2d's defaults: moving = 0.9 * moving + 0.1 * batch
# What the batched trainer does not implement, as (config key, getter, the value it needs).
_REQUIRED = (("model.name", lambda c: c.model.name, "mlp"), ("precision", lambda c: c.precision.name, "fp32"),
             ("distributed", lambda c: c.distributed, False),
             ("model.d_norm", lambda c: c.model.d_norm, "none"), ("model.g_norm", lambda c: c.model.g_norm, "batch"),
             ("train.loss", lambda c: c.train.loss, "bce"), ("train.r1_gamma", lambda c: c.train.r1_gamma, 0.0),
             ("train.d_steps", lambda c: c.train.d_steps, 1),
             ("train.clip_grad_norm", lambda c: c.train.clip_grad_norm, None))
# The activation Cells the batched nets implement, so the kinds they build (gan.config.activation_kinds): the
# LeakyReLU op (leaky_relu, relu), and in D the prelu op or maxout units.
_CELLS = {"d": ("LeakyReLU", "PReLU"), "g": ("LeakyReLU",)}


def check_batchable(conf: Config) -> None:
    """ConfigError naming the key when `conf` is not a 2D run the batched trainer reproduces: its build plan
    (gan.config.plan) must have unfused layers and activations the batched nets implement, and `_REQUIRED` hold."""
    plan = build_plan(conf)
    for net, network in (("d", plan.d), ("g", plan.g)):
        kinds = [kind for kind, row in ACTIVATION_KINDS.items() if row.cell in _CELLS[net]]
        if network.act not in kinds + ([MAXOUT] if net == "d" else []):
            raise ConfigError(f"act.{net}_kind={network.act!r} is not supported by the batched 2D trainer (one of "
                              f"{kinds}); use train.py for this setting")
        if network.fusion != "none":
            raise ConfigError(f"fusion={conf.fusion.name} builds {network.fusion} layers, which the batched 2D trainer "
                              f"does not implement (needs fusion=none); use train.py for this setting")
    for key, get, needed in _REQUIRED:
        if get(conf) != needed:
            raise ConfigError(f"{key}={get(conf)!r} is not supported by the batched 2D trainer (needs {needed!r}); "
                              f"use train.py for this setting")


def _stack_trials(conf: Config, seeds: list[int]) -> dict[str, np.ndarray]:
    """Each seed's initial G and D weights exactly as GANTrainer builds them, stacked on a leading trial axis.

    Names are the single-trial parameter names (`generator.layers.conv0.weight`, ...); dense weights keep
    MindSpore's (out, in) layout here.
    """
    nets = NETWORKS["mlp"]
    g = nets.generator(conf.model, conf.act, 2, "native")
    d = nets.discriminator(conf.model, conf.act, 2, "native")
    g.update_parameters_name(G_PREFIX)
    d.update_parameters_name(D_PREFIX)
    per_trial = []
    for seed in seeds:
        nets.init(g, stream(seed, 0, Purpose.INIT_G))
        nets.init(d, stream(seed, 0, Purpose.INIT_D))
        per_trial.append({p.name: p.asnumpy().copy() for net in (g, d) for p in net.get_parameters()})
    return {name: np.stack([arrays[name] for arrays in per_trial]) for name in per_trial[0]}


def _slopes(conf: Config, net: str, depth: int) -> tuple[float, ...]:
    """LeakyReLU slope of each layer of network `net` ("d" or "g"), as gan.models.networks chooses them (unused by
    PReLU): the layer's slope, or the one its kind fixes (relu: 0)."""
    row = ACTIVATION_KINDS[getattr(conf.act, f"{net}_kind")]
    if not row.layer_slopes:
        return (dict(row.constants).get("negative_slope", 0.0),) * depth
    return tuple(network_slopes(conf.act, net, depth))


def _bce_rows(logits: Tensor, target: float) -> Tensor:
    """Per-trial mean BCE-with-logits of (T, N) logits against a constant label: (T,)."""
    return ops.binary_cross_entropy_with_logits(logits, ops.full_like(logits, target), reduction="none").mean(1)


class BatchedGAN(nn.Cell):
    """G and D of T trials as (T, ...) Parameters, the per-trial Adam state, and the fused D+G step."""

    def __init__(self, conf: Config, seeds: list[int]) -> None:
        super().__init__()
        check_batchable(conf)
        if not seeds or len(set(seeds)) != len(seeds):
            raise ValueError(f"seeds={seeds!r}: give one or more distinct seeds")
        self.trials = len(seeds)
        self.g_slopes = _slopes(conf, "g", MLP_G_DEPTH)
        self.d_slopes = _slopes(conf, "d", MLP_D_DEPTH)
        self.clamp = conf.act.clamp
        self.d_maxout = conf.model.d_maxout  # pieces of D's maxout units (0: LeakyReLU/PReLU)
        init = _stack_trials(conf, seeds)

        def param(name: str, array: np.ndarray, trainable: bool = True) -> ms.Parameter:
            return ms.Parameter(Tensor(np.ascontiguousarray(array, np.float32)), name=name, requires_grad=trainable)

        def weight(name: str) -> ms.Parameter:  # (T, out, in) -> (T, in, out) for x @ w
            return param(name, init[name].transpose(0, 2, 1))

        g, d = f"{G_PREFIX}layers.", f"{D_PREFIX}layers."
        self.g_w = ms.ParameterTuple([weight(f"{g}conv{i}.weight") for i in range(MLP_G_DEPTH + 1)])
        self.g_b = param(f"{g}conv{MLP_G_DEPTH}.bias", init[f"{g}conv{MLP_G_DEPTH}.bias"])
        self.gamma = ms.ParameterTuple([param(f"{g}bn{i}.gamma", init[f"{g}bn{i}.gamma"]) for i in range(MLP_G_DEPTH)])
        self.beta = ms.ParameterTuple([param(f"{g}bn{i}.beta", init[f"{g}bn{i}.beta"]) for i in range(MLP_G_DEPTH)])
        self.moving_mean = ms.ParameterTuple([param(f"{g}bn{i}.moving_mean", init[f"{g}bn{i}.moving_mean"], False)
                                              for i in range(MLP_G_DEPTH)])
        self.moving_var = ms.ParameterTuple([param(f"{g}bn{i}.moving_variance", init[f"{g}bn{i}.moving_variance"],
                                                   False) for i in range(MLP_G_DEPTH)])
        self.d_w = ms.ParameterTuple([param(f"{d}conv{i}.weight", init[f"{d}conv{i}.weight"])
                                      for i in range(MLP_D_DEPTH + 1)])  # (T, out, in): D is channels-first
        self.d_b = ms.ParameterTuple([param(f"{d}conv{i}.bias", init[f"{d}conv{i}.bias"])
                                      for i in range(MLP_D_DEPTH + 1)])
        self.d_prelu = ms.ParameterTuple([param(f"{d}act{i}.weight", init[f"{d}act{i}.weight"])
                                          for i in range(MLP_D_DEPTH)] if f"{d}act0.weight" in init else [])  # PReLU
        self.g_params = ms.ParameterTuple([*self.g_w, self.g_b, *self.gamma, *self.beta])
        self.d_params = ms.ParameterTuple([*self.d_w, *self.d_b, *self.d_prelu])
        # The single-run names, kept before the optimisers are attached (nn.Adam's owner prefixes them).
        self._state = tuple((*self.g_params, *self.moving_mean, *self.moving_var, *self.d_params))
        self._names = tuple(p.name for p in self._state)
        t = conf.train
        # G's EMA (train.ema_beta) as train.py keeps it: averaged weights, BatchNorm statistics taken from G.
        self.ema_beta = t.ema_beta
        self.ema = ms.ParameterTuple([param(EMA_PREFIX + p.name[len(G_PREFIX):], p.asnumpy(), False)
                                      for p in self.g_params] if t.ema_beta is not None else [])
        self.opt_g = nn.Adam(self.g_params, t.lr, t.beta1, t.beta2)
        self.opt_d = nn.Adam(self.d_params, t.lr, t.beta1, t.beta2)
        self.skipped = ms.Parameter(Tensor(np.zeros(self.trials, np.float32)), name="skipped_steps",
                                    requires_grad=False)
        self.grad_d = ms.value_and_grad(self._d_loss, None, self.d_params, has_aux=True)
        self.grad_fake = ms.value_and_grad(self._g_loss, 0, None, has_aux=True)  # G's loss w.r.t. the fake points

    def generator(self, z: Tensor, training: bool, params: tuple | None = None) -> tuple[Tensor, tuple]:
        """(T, N, nz) latents -> ((T, N, 2) points, per BatchNorm the batch's (mean, unbiased variance), each (T, C)).
        training: each trial's batch statistics normalise (`update_moving` folds them into the moving ones);
        otherwise the moving statistics do and no statistics are returned.
        `params`: weights in g_params' order (default G's own; `self.ema` for the EMA generator)."""
        params = self.g_params if params is None else params
        w, b = params[:MLP_G_DEPTH + 1], params[MLP_G_DEPTH + 1]
        gamma, beta = params[MLP_G_DEPTH + 2:2 * MLP_G_DEPTH + 2], params[2 * MLP_G_DEPTH + 2:]
        h, stats = z, ()
        for i in range(MLP_G_DEPTH):
            y = _BMM(h, w[i])
            if training:
                mean = y.mean(1, keep_dims=True)
                var = ops.square(y - mean).mean(1, keep_dims=True)
                n = y.shape[1]
                stats += ((mean.squeeze(1), var.squeeze(1) * (n / (n - 1.0))),)
            else:
                mean, var = self.moving_mean[i].expand_dims(1), self.moving_var[i].expand_dims(1)
            y = (y - mean) / ops.sqrt(var + _BN_EPS) * gamma[i].expand_dims(1) + beta[i].expand_dims(1)
            h = leaky_relu(y, self.g_slopes[i], clamp=self.clamp)
        return _BMM(h, w[MLP_G_DEPTH]) + b.expand_dims(1), stats

    def _train_generator(self, z: Tensor) -> tuple[Tensor, tuple]:
        """G in training mode as a function of the latents only: what ms.vjp differentiates."""
        return self.generator(z, True)

    def update_moving(self, stats: tuple) -> None:
        """Fold one step's batch statistics into G's moving ones as nn.BatchNorm2d does; outside the differentiated
        G, so that ms.vjp's pullback cannot run the update a second time."""
        for i, (mean, var) in enumerate(stats):
            ops.assign(self.moving_mean[i], _BN_KEEP * self.moving_mean[i] + (1 - _BN_KEEP) * mean)
            ops.assign(self.moving_var[i], _BN_KEEP * self.moving_var[i] + (1 - _BN_KEEP) * var)

    def discriminator(self, x: Tensor) -> Tensor:
        """(T, N, 2) points -> (T, N) logits, computed channels-first: (T, C, N) activations."""
        h = x.transpose(0, 2, 1)
        for i in range(MLP_D_DEPTH):
            y = _BMM(self.d_w[i], h) + self.d_b[i].expand_dims(2)
            if self.d_maxout:  # unit c: the max of channels c * k .. c * k + k - 1, as gan.models.networks.Maxout
                h = y.reshape(y.shape[0], -1, self.d_maxout, y.shape[2]).max(axis=2)
            elif self.d_prelu:  # every trial's channel weights along axis 1 of one (1, T * C, N) tensor
                h = prelu(y.reshape(1, -1, y.shape[2]), self.d_prelu[i].reshape(-1), clamp=self.clamp).reshape(y.shape)
            else:
                h = leaky_relu(y, self.d_slopes[i], clamp=self.clamp)
        return (_BMM(self.d_w[MLP_D_DEPTH], h) + self.d_b[MLP_D_DEPTH].expand_dims(2)).squeeze(1)

    def _d_loss(self, real: Tensor, fake: Tensor) -> tuple:
        logits_real, logits_fake = self.discriminator(real), self.discriminator(fake)
        per_trial = _bce_rows(logits_real, 1.0) + _bce_rows(logits_fake, 0.0)
        return per_trial.sum(), per_trial, ops.sigmoid(logits_real).mean(1), ops.sigmoid(logits_fake).mean(1)

    def _g_loss(self, fake: Tensor) -> tuple:
        per_trial = _bce_rows(self.discriminator(fake), 1.0)  # non-saturating
        return per_trial.sum(), per_trial

    def _per_trial_finite(self, grads: tuple) -> Tensor:
        """(T,) whether each trial's gradients are all finite: one reduction per tensor, as an inf or NaN makes
        the sum non-finite (a sum of finite values overflowing, far beyond any gradient here, would skip too)."""
        return ops.isfinite(ops.addn([g.reshape(self.trials, -1).sum(1) for g in grads]))

    def construct(self, real: Tensor, z: Tensor, lr: Tensor) -> tuple:
        """One D step then one G step of every trial on (T, N, 2) real points and (T, N, nz) latents, both
        optimisers at learning rate `lr` (a graph input: the schedule of train.lr_decay costs no extra launch).
        G's forward runs once: D's update on its points, then G's gradient pulled back from the updated D's."""
        ops.assign(self.opt_d.learning_rate, lr)
        ops.assign(self.opt_g.learning_rate, lr)
        fake, pullback, stats = ms.vjp(self._train_generator, z, weights=self.g_params, has_aux=True)
        self.update_moving(stats)
        (_, loss_d, d_real, d_fake), grads_d = self.grad_d(real, ops.stop_gradient(fake))
        finite_d = self._per_trial_finite(grads_d)
        if finite_d.all():
            self.opt_d(grads_d)
        (_, loss_g), d_points = self.grad_fake(fake)
        _, grads_g = pullback(d_points)
        finite_g = self._per_trial_finite(grads_g)
        if finite_g.all():
            self.opt_g(grads_g)
        if self.ema_beta is not None:
            for src, dst in zip(self.g_params, self.ema):
                ops.assign(dst, dst * self.ema_beta + src * (1.0 - self.ema_beta))
        finite = ops.logical_and(finite_d, finite_g)
        ops.assign_add(self.skipped, ops.logical_not(finite).astype(ms.float32))
        return loss_d, loss_g, d_real, d_fake, finite

    def trial_arrays(self, trial: int) -> dict[str, np.ndarray]:
        """Trial `trial`'s G and D parameters under the single-run names and layouts (dense weights (out, in))."""
        arrays = {}
        for name, p in zip(self._names, self._state):
            value = p.asnumpy()[trial]
            g_weight = name.startswith(G_PREFIX) and name.endswith(".weight")  # G's dense weights: (in, out)
            arrays[name] = value.T if g_weight else value
        for p in self.ema:
            arrays[p.name] = p.asnumpy()[trial].T if p.name.endswith(".weight") else p.asnumpy()[trial]
        for name in [n for n in arrays if ".moving_" in n]:  # train.py's EMA copies G's statistics
            arrays[name.replace(G_PREFIX, EMA_PREFIX)] = arrays[name] if self.ema else None
        return {k: v for k, v in arrays.items() if v is not None}


@dataclass
class TrialBatch:
    """Per-trial numbers of the last step, numpy arrays of length T."""

    loss_d: np.ndarray
    loss_g: np.ndarray
    d_real: np.ndarray
    d_fake: np.ndarray
    finite: np.ndarray
    skipped_steps: np.ndarray  # per trial, since the start: steps with a non-finite gradient in that trial


class BatchedTrainer:
    """Trains trials `seeds` of one 2D config together; `train_to(step)` and `evaluate()` per trial."""

    def __init__(self, conf: Config, seeds: list[int]) -> None:
        self.conf = conf
        self.seeds = list(seeds)
        self.model = BatchedGAN(conf, self.seeds)
        self.data = [PointData(conf.data.name, conf.train.batch_size, seed) for seed in self.seeds]
        self.step = 0
        self.length = conf.train.steps  # the learning-rate schedule's run length (train.lr_decay)
        self._step = ms.jit(self.model.construct)

    def inputs(self, step: int) -> tuple[np.ndarray, np.ndarray]:
        """Real points and latents (T, N, 2) of global step `step`: each trial's, as its own run draws them."""
        nz, n = self.conf.model.nz, self.conf.train.batch_size
        real = np.stack([d.batch(step).reshape(n, 2) for d in self.data])
        z = np.stack([latents(seed, step, Purpose.Z, n, nz).reshape(n, nz) for seed in self.seeds])
        return real, z

    def train_to(self, end: int) -> TrialBatch:
        """Train every trial from the current step to step `end`; the numbers of the last step."""
        if end <= self.step:
            raise ValueError(f"train_to({end}) but the trainer is already at step {self.step}")
        if self.conf.train.lr_decay and end > self.length:
            raise ValueError(f"train_to({end}) runs past train.steps={self.length}, the length train.lr_decay's "
                             f"schedule decays to 0 at")
        while self.step < end:
            lr = Tensor(scheduled_lr(self.conf.train, self.step, self.length), ms.float32)
            real, z = self.inputs(self.step)
            outputs = self._step(Tensor(real), Tensor(z), lr)
            self.step += 1
        return TrialBatch(*(o.asnumpy() for o in outputs), self.model.skipped.asnumpy().astype(np.int64))

    def generate(self, z: np.ndarray, ema: bool = True) -> np.ndarray:
        """(T, N, nz) latents -> (T, N, 2) points, BatchNorm in inference mode, with the EMA generator when
        train.ema_beta is set and `ema` (as gan.training.evaluation does)."""
        params = self.model.ema if ema and self.model.ema else None
        return self.model.generator(Tensor(z.astype(np.float32)), False, params)[0].asnumpy()

    def evaluate(self, ema: bool = True) -> list[dict[str, float]]:
        """Each trial's mode metrics on its run's fixed evaluation latents (eval.num_samples points), from the
        EMA generator when train.ema_beta is set (as train.py) unless ema=False (then from G itself)."""
        n, nz = self.conf.eval.num_samples, self.conf.model.nz
        z = np.stack([latents(seed, 0, Purpose.EVAL_Z, n, nz).reshape(n, nz) for seed in self.seeds])
        return [mode_metrics(points, self.conf.data.name) for points in self.generate(z, ema)]
