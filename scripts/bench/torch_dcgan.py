"""The project's PyTorch reference of the app's DCGAN recipe, for cross-checks and benchmarks only: torch is the
`bench` extra and never enters the product or the test suite.

It is the app's recipe at equal work, not a look-alike: the networks of gan.models.networks' DCGAN (the same layers,
named conv<i>/bn<i>/act<i> as the app's checkpoint keys), started from the app's own initial weights (exported from a
GANTrainer: gan.models.networks' seeded init), trained on the app's batches (gan.data.sources's stream for the seed) and
latents (gan.training.loop.step_inputs), with the app's iteration: G's forward once, D's update on the detached fake,
G's update through the updated D, BCE with logits (the non-saturating G loss), Adam.

Conventions made equal (the check below shows they are):
  BatchNorm  MindSpore keeps momentum 0.9 of the old statistics, torch weighs the new batch by momentum: torch
             momentum = 1 - 0.9 = 0.1; eps 1e-5 in both; both update the running variance with the unbiased batch
             variance.
  Adam       MindSpore's Adam (nn.Adam, the Adam primitive) takes the step lr * sqrt(1 - b2^t) / (1 - b1^t) *
             m / (sqrt(v) + eps); torch's divides by sqrt(v / (1 - b2^t)) + eps. Torch's eps is therefore set to
             eps / sqrt(1 - b2^t) before step t, which makes the two updates equal (plain torch eps=1e-8 would be a
             32x smaller eps at step 1, converging to the same eps as t grows; `--plain-adam-eps` runs that).

    python scripts/bench/torch_dcgan.py check --json docs/data/torch_dcgan_equivalence.json [--steps 100] [OVERRIDES...]
    python scripts/bench/torch_dcgan.py train --steps 1000 --out DIR [--samples 10000] [--seed 0] [OVERRIDES...]

OVERRIDES are train.py's (`data=fashion_mnist seed=1`); a setting the reference does not implement (another loss,
EMA, accumulation, ...) is refused, naming the key. `check` writes one record of scripts/bench/records.py: a row per
step-1 value (losses and D's outputs: app, torch, relative difference), and as context the settings, the tensor
comparisons after step 1 and the side-by-side trajectory.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections import OrderedDict
from pathlib import Path
from typing import Iterator

os.environ.setdefault("GLOG_v", "3")

import numpy as np  # noqa: E402
import records  # noqa: E402

from gan.config.schema import Config, compose_config, to_config  # noqa: E402

BN_EPS = 1e-5  # gan.models.networks' BatchNorm layers (nn.BatchNorm2d and ops.fused.BatchNormAct): eps 1e-5
BN_KEEP = 0.9  # ... momentum 0.9: the share of the old running statistics MindSpore keeps
ADAM_EPS = 1e-8  # nn.Adam's default eps, which gan.training.loop uses

# What the reference implements: the app's DCGAN recipe. Any other value of these keys is refused.
RECIPE = {"model.name": "dcgan", "model.d_norm": "batch", "model.g_norm": "batch", "model.d_maxout": 0,
          "act.d_kind": "leaky_relu", "act.g_kind": "leaky_relu", "act.clamp": None, "train.loss": "bce",
          "train.d_steps": 1, "train.accumulate": 1, "train.clip_grad_norm": None, "train.ema_beta": None,
          "train.lr_decay": 0.0, "train.r1_gamma": 0.0, "precision.name": "fp32", "distributed": False}
# torch parameter/buffer suffix -> the app's (gan.models.networks' BatchNorm names gamma, beta, moving_mean,
# moving_variance)
_APP_SUFFIX = {"weight": "weight", "bias": "bias", "running_mean": "moving_mean", "running_var": "moving_variance"}
_NETS = {"generator": "g", "discriminator": "d"}


def check_recipe(conf: Config) -> None:
    """ValueError naming the first setting of `conf` this reference does not implement."""
    for key, wanted in RECIPE.items():
        value = conf
        for part in key.split("."):
            value = getattr(value, part)
        if value != wanted:
            raise ValueError(f"{key}={value!r}: the PyTorch reference implements the DCGAN recipe only "
                             f"({key}={wanted!r}); drop that override")


def recipe_config(overrides: list[str]) -> Config:
    """The validated Config of `python train.py OVERRIDES`, checked against RECIPE."""
    conf = to_config(compose_config(list(overrides)))
    check_recipe(conf)
    return conf


# ---------------------------------------------------------------- what both implementations share

def app_trainer(conf: Config, channels: int):
    """The app's GANTrainer for `conf`, after the runtime setup train.py does (device, threads, seed)."""
    from gan.training.loop import GANTrainer
    from gan.training.runtime import prepare_run

    prepare_run(conf)
    return GANTrainer(conf, channels)


def app_inputs(conf: Config, start_step: int = 0) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(real batch, latents) of steps start_step, start_step + 1, ...: what gan.training.loop.run feeds train_step for
    conf.seed (the data stream of gan.tasks/gan.data.sources and gan.training.loop.step_inputs' latents)."""
    from gan.training.distributed import World
    from gan.training.loop import step_inputs
    from gan.training.tasks import build_task

    world = World()
    batches = build_task(conf).data.batches(start_step)
    step = start_step
    while True:
        inputs = step_inputs(conf, world, batches, step)
        yield inputs["real"][0], inputs["z"][0]
        step += 1


def data_channels(conf: Config) -> int:
    """Channels of the configured data's images (what GANTrainer is built for)."""
    return conf.data.channels


# ---------------------------------------------------------------- the PyTorch side

def torch_models(cfg: Config) -> tuple:
    """gan.models.networks' DCGAN G and D rebuilt in PyTorch, layer by layer under the app's layer names: transposed
    convs / strided convs without bias, BatchNorm in every G block and in D's blocks after the first, LeakyReLU slopes
    of act.*, G's Tanh, D's last conv to one logit per image."""
    from torch import nn

    from gan.models.networks import network_slopes, num_blocks

    m, act, channels = cfg.model, cfg.act, cfg.data.channels
    n = num_blocks(m.image_size)
    bn = lambda width: nn.BatchNorm2d(width, eps=BN_EPS, momentum=1.0 - BN_KEEP)  # noqa: E731
    g: OrderedDict = OrderedDict()
    in_ch = m.nz
    for i, slope in enumerate(network_slopes(act, "g", n)):
        width = m.ngf * 2 ** (n - 1 - i)
        stride, pad = (1, 0) if i == 0 else (2, 1)
        g[f"conv{i}"] = nn.ConvTranspose2d(in_ch, width, 4, stride, pad, bias=False)
        g[f"bn{i}"], g[f"act{i}"] = bn(width), nn.LeakyReLU(slope)
        in_ch = width
    g[f"conv{n}"], g["tanh"] = nn.ConvTranspose2d(in_ch, channels, 4, 2, 1, bias=False), nn.Tanh()
    d: OrderedDict = OrderedDict()
    in_ch = channels
    for i, slope in enumerate(network_slopes(act, "d", n)):
        width = m.ndf * 2 ** i
        d[f"conv{i}"] = nn.Conv2d(in_ch, width, 4, 2, 1, bias=False)
        if i:
            d[f"bn{i}"] = bn(width)
        d[f"act{i}"] = nn.LeakyReLU(slope)
        in_ch = width
    d[f"conv{n}"], d["flatten"] = nn.Conv2d(in_ch, 1, 4, 1, 0, bias=False), nn.Flatten(0)
    return nn.Sequential(g), nn.Sequential(d)


def app_key(net: str, torch_key: str) -> str:
    """The app's checkpoint key of a torch state_dict entry: ("generator", "bn0.weight") ->
    "generator.layers.bn0.gamma" (conv weights keep "weight")."""
    layer, suffix = torch_key.split(".", 1)
    if layer.startswith("bn"):
        suffix = {"weight": "gamma", "bias": "beta"}.get(suffix, _APP_SUFFIX.get(suffix, suffix))
    return f"{net}.layers.{layer}.{suffix}"


class TorchDCGAN:
    """G, D and their Adam optimisers in PyTorch, loaded from the app's state arrays (gan.training.loop's checkpoint
    keys), stepping as GANTrainer.train_step does."""

    def __init__(self, conf: Config, initial: dict[str, np.ndarray], matched_eps: bool = True,
                 dtype: str = "float32") -> None:
        import torch

        self.torch, self.dtype = torch, getattr(torch, dtype)
        self.g, self.d = (net.to(self.dtype) for net in torch_models(conf))
        for net, module in (("generator", self.g), ("discriminator", self.d)):
            state = module.state_dict()
            for key, value in state.items():
                if key.endswith("num_batches_tracked"):
                    continue  # unused with a momentum; the app has no counter
                source = initial[app_key(net, key)]
                if tuple(source.shape) != tuple(value.shape):
                    raise ValueError(f"{app_key(net, key)}: app shape {source.shape}, torch {tuple(value.shape)}")
                state[key] = torch.from_numpy(np.array(source)).to(self.dtype)
            module.load_state_dict(state)
        t = conf.train
        self.betas, self.matched_eps = (t.beta1, t.beta2), matched_eps
        self.opt_g = torch.optim.Adam(self.g.parameters(), t.lr, betas=self.betas, eps=ADAM_EPS)
        self.opt_d = torch.optim.Adam(self.d.parameters(), t.lr, betas=self.betas, eps=ADAM_EPS)
        self.g.train()
        self.d.train()
        self.steps = 0

    def _set_eps(self) -> None:
        """Before Adam step t: torch eps = eps / sqrt(1 - b2^t), MindSpore's update (module docstring)."""
        if self.matched_eps:
            eps = ADAM_EPS / math.sqrt(1.0 - self.betas[1] ** (self.steps + 1))
            for opt in (self.opt_g, self.opt_d):
                for group in opt.param_groups:
                    group["eps"] = eps

    def step(self, real: np.ndarray, z: np.ndarray) -> dict[str, float]:
        """One D update then one G update from the same fake (G's forward once), as GANTrainer.train_step."""
        torch, bce = self.torch, self.torch.nn.functional.binary_cross_entropy_with_logits
        self._set_eps()
        fake = self.g(torch.from_numpy(z).to(self.dtype))
        logits_real, logits_fake = self.d(torch.from_numpy(real).to(self.dtype)), self.d(fake.detach())
        loss_d = bce(logits_real, torch.ones_like(logits_real)) + bce(logits_fake, torch.zeros_like(logits_fake))
        self.opt_d.zero_grad(set_to_none=True)
        loss_d.backward()
        self.opt_d.step()
        logits = self.d(fake)
        loss_g = bce(logits, torch.ones_like(logits))
        self.opt_g.zero_grad(set_to_none=True)
        loss_g.backward()
        self.opt_g.step()
        self.steps += 1
        return {"loss_d": loss_d.item(), "loss_g": loss_g.item(),
                "d_real": float(torch.sigmoid(logits_real.detach()).mean()),
                "d_fake": float(torch.sigmoid(logits_fake.detach()).mean())}

    def state_arrays(self) -> dict[str, np.ndarray]:
        """Weights, BatchNorm statistics and Adam moments under the app's keys (opt_g.moment1.<param key>, ...)."""
        out: dict[str, np.ndarray] = {}
        for net, module, opt in (("generator", self.g, self.opt_g), ("discriminator", self.d, self.opt_d)):
            for key, value in module.state_dict().items():
                if not key.endswith("num_batches_tracked"):
                    out[app_key(net, key)] = value.detach().numpy().copy()
            for key, param in module.named_parameters():
                state = opt.state.get(param, {})
                for moment, name in (("exp_avg", "moment1"), ("exp_avg_sq", "moment2")):
                    if moment in state:
                        out[f"opt_{_NETS[net]}.{name}.{app_key(net, key)}"] = state[moment].numpy().copy()
        return out

    def generate(self, z: np.ndarray) -> np.ndarray:
        """Images from latents, BatchNorm in inference mode (the running statistics), as GANTrainer.generate."""
        self.g.eval()
        try:
            with self.torch.no_grad():
                z = self.torch.from_numpy(np.ascontiguousarray(z, np.float32)).to(self.dtype)
                return self.g(z).numpy().astype(np.float32)
        finally:
            self.g.train()


# ---------------------------------------------------------------- check: equal work, step by step

def _largest(diffs: dict[str, dict]) -> dict:
    """The entry with the largest relative difference of a group, and that value."""
    name = max(diffs, key=lambda k: diffs[k]["rel"])
    return {"max_rel": diffs[name]["rel"], "worst": name, "max_abs": diffs[name]["abs"]}


def compare_states(app: dict[str, np.ndarray], ours: dict[str, np.ndarray]) -> dict[str, dict]:
    """Per shared key: max |app - torch| and that relative to the tensor's scale max |app| (tensors that are all zero
    compare absolutely)."""
    out = {}
    for key in sorted(set(app) & set(ours)):
        a, b = app[key].astype(np.float64), ours[key].astype(np.float64)
        diff = float(np.abs(a - b).max())
        scale = float(np.abs(a).max())
        out[key] = {"abs": diff, "rel": diff / scale if scale > 0 else diff}
    return out


def grouped(diffs: dict[str, dict], lr: float) -> dict[str, dict]:
    """The worst difference per kind of state: weights (also in units of the learning rate: both started from the
    same weights, so it is the difference of the updates), BatchNorm running statistics, gradients (Adam's first
    moment after one step is (1 - beta1) * gradient, so its relative difference is the gradient's), second moments."""
    kinds = {"weights": lambda k: not k.startswith("opt_") and "moving" not in k,
             "batchnorm_statistics": lambda k: "moving" in k,
             "gradients": lambda k: ".moment1." in k,
             "adam_moment2": lambda k: ".moment2." in k}
    out = {kind: _largest({k: v for k, v in diffs.items() if keep(k)}) for kind, keep in kinds.items()}
    weights = [k for k in diffs if kinds["weights"](k)]
    worst_update = max(weights, key=lambda k: diffs[k]["abs"])
    out["weight_updates"] = {"max_abs_in_lr": diffs[worst_update]["abs"] / lr, "worst": worst_update}
    return out


def by_tensor(states: dict[str, dict[str, np.ndarray]], part: str) -> dict[str, dict[str, float]]:
    """{key: {"a_b": relative difference}} for every pair of the named states, over the keys containing `part`."""
    names = list(states)
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    diffs = {f"{a}_{b}": compare_states(states[a], states[b]) for a, b in pairs}
    keys = sorted(k for k in states[names[0]] if part in k)
    return {k: {pair: d[k]["rel"] for pair, d in diffs.items()} for k in keys}


def adam_step_1_residual(before: dict[str, np.ndarray], after: dict[str, np.ndarray], lr: float, beta1: float,
                         beta2: float) -> float:
    """max |w1 - (w0 - u)| / lr over the weights, u = MindSpore's first Adam step from the implementation's own
    gradient g = moment1 / (1 - beta1), in float64: lr * g / (|g| + eps / sqrt(1 - beta2)). Near 0 for both
    implementations: their updates differ only through their gradients."""
    worst = 0.0
    for key, w1 in after.items():
        if key.split(".")[0] not in _NETS or "moving" in key:
            continue
        moment = after[f"opt_{_NETS[key.split('.')[0]]}.moment1.{key}"]
        g = moment.astype(np.float64) / (1.0 - beta1)
        u = lr * g / (np.abs(g) + ADAM_EPS / math.sqrt(1.0 - beta2))
        worst = max(worst, float(np.abs(w1 - (before[key].astype(np.float64) - u)).max()) / lr)
    return worst


def param_distance(app: dict[str, np.ndarray], ours: dict[str, np.ndarray], net: str) -> float:
    """||w_app - w_torch|| / ||w_app|| over the trainable weights of one network ("generator" / "discriminator")."""
    keys = [k for k in app if k.startswith(net + ".") and "moving" not in k]
    num = sum(float(((app[k].astype(np.float64) - ours[k]) ** 2).sum()) for k in keys)
    den = sum(float((app[k].astype(np.float64) ** 2).sum()) for k in keys)
    return math.sqrt(num / den)


def check(conf: Config, steps: int, overrides: list[str]) -> dict:
    """Both implementations from the same initial weights on the same inputs: step 1 compared tensor by tensor
    (and step 1 with torch's plain Adam eps), then `steps` steps side by side (losses, weight distance)."""
    import torch

    channels = data_channels(conf)
    trainer = app_trainer(conf, channels)
    initial = trainer.state_arrays()
    ours = TorchDCGAN(conf, initial)
    plain = TorchDCGAN(conf, initial, matched_eps=False)
    exact = TorchDCGAN(conf, initial, dtype="float64")  # the float64 truth both are measured against at step 1
    shared = compare_states(initial, ours.state_arrays())
    inputs = app_inputs(conf)
    trajectory, first = [], {}
    for step in range(1, steps + 1):
        real, z = next(inputs)
        stats = trainer.train_step(real, z)
        app_loss = {"loss_d": stats.loss_d, "loss_g": stats.loss_g, "d_real": stats.d_real, "d_fake": stats.d_fake}
        torch_loss = ours.step(real, z)
        app_state, torch_state = trainer.state_arrays(), ours.state_arrays()
        if step == 1:
            plain.step(real, z)
            exact.step(real, z)
            truth, t = exact.state_arrays(), conf.train
            first = {"losses": {k: {"app": app_loss[k], "torch": torch_loss[k],
                                    "rel": abs(app_loss[k] - torch_loss[k]) / abs(app_loss[k])} for k in app_loss},
                     "after_step_1": grouped(compare_states(app_state, torch_state), t.lr),
                     "after_step_1_plain_torch_eps": grouped(compare_states(app_state, plain.state_arrays()), t.lr),
                     "after_step_1_vs_float64": {name: grouped(compare_states(truth, state), t.lr)
                                                 for name, state in (("app", app_state), ("torch", torch_state))},
                     "gradients_by_tensor": by_tensor({"app": app_state, "torch": torch_state, "float64": truth},
                                                      ".moment1."),
                     "adam_step_1_residual_in_lr": {
                         name: adam_step_1_residual(initial, state, t.lr, t.beta1, t.beta2)
                         for name, state in (("app", app_state), ("torch", torch_state))}}
        trajectory.append({"step": step, **{f"app_{k}": round(v, 6) for k, v in app_loss.items()},
                           **{f"torch_{k}": round(v, 6) for k, v in torch_loss.items()},
                           "g_weight_distance": param_distance(app_state, torch_state, "generator"),
                           "d_weight_distance": param_distance(app_state, torch_state, "discriminator")})
    return {"overrides": overrides, "seed": conf.seed, "data": conf.data.name, "batch_size": conf.train.batch_size,
            "app": built(trainer.plan), "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
            "initial_weights_max_abs_diff": max(d["abs"] for d in shared.values()),
            "initial_tensors": len(shared), **first, "steps": trajectory}


def check_record(report: dict, **measured) -> dict:
    """`check`'s report as a record of scripts/bench/records.py: a row per step-1 value, the rest as context;
    `measured` is records.record's started, load_before, wall_s and cpu_s."""
    rows = [{"value": name, **values} for name, values in report["losses"].items()]
    return records.record(rows, context={k: v for k, v in report.items() if k != "losses"}, **measured)


def built(plan) -> dict:
    """What the app's networks built (gan.config.plan.BuildPlan): conv implementation and fusion, one value when G and D
    agree, else "G x, D y"; and the plan's own description."""
    both = lambda g, d: g if g == d else f"G {g}, D {d}"  # noqa: E731
    return {"conv_impl": both(plan.g.conv_impl, plan.d.conv_impl), "fusion": both(plan.g.fusion, plan.d.fusion),
            "build_plan": plan.describe()}


def summary_lines(report: dict) -> list[str]:
    """What `check` prints: step 1's worst relative differences and the drift at a few steps."""
    lines = [f"initial weights: {report['initial_tensors']} tensors, "
             f"max |diff| {report['initial_weights_max_abs_diff']:g}"]
    lines += [f"step 1 {k}: app {v['app']:.7f} torch {v['torch']:.7f} rel {v['rel']:.2e}"
              for k, v in report["losses"].items()]
    groups = {"after_step_1": report["after_step_1"],
              "after_step_1_plain_torch_eps": report["after_step_1_plain_torch_eps"],
              **{f"after_step_1 {name} vs float64": g for name, g in report["after_step_1_vs_float64"].items()}}
    for label, group in groups.items():
        lines += [f"{label} {kind}: " + (f"max rel {v['max_rel']:.2e}" if "max_rel" in v else
                                         f"max |diff| {v['max_abs_in_lr']:.2e} lr") + f" ({v['worst']})"
                  for kind, v in group.items()]
    lines += [f"adam step 1 from its own gradient, {name}: max residual {v:.2e} lr"
              for name, v in report["adam_step_1_residual_in_lr"].items()]
    for row in report["steps"]:
        if row["step"] in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000) or row["step"] == len(report["steps"]):
            lines.append(f"step {row['step']:4d}: loss_d app {row['app_loss_d']:.4f} torch {row['torch_loss_d']:.4f}"
                         f"  loss_g app {row['app_loss_g']:.4f} torch {row['torch_loss_g']:.4f}"
                         f"  |dw|/|w| G {row['g_weight_distance']:.2e} D {row['d_weight_distance']:.2e}")
    return lines


# ---------------------------------------------------------------- train: the benchmark's PyTorch run

def sample_file(out: Path, step: int) -> Path:
    """Where a run's samples at `step` go (both implementations: bench_quality.py reads them)."""
    return out / f"samples_step_{step:08d}.npz"


def write_samples(forward, conf: Config, n: int, path: Path) -> Path:
    """n samples of `forward` on the run's fixed latents (scripts/generate.py's --seed conf.seed), as its --npz."""
    from gan.metrics.samples import BATCH, sample_batches, write_npz

    return write_npz(path, sample_batches(forward, conf.seed, n, conf.model.nz, BATCH), n)


def train(conf: Config, steps: int, out: Path, samples: int, sample_steps: list[int],
          matched_eps: bool = True) -> dict:
    """Train the reference for `steps` steps on the app's inputs, writing `samples` samples at each of sample_steps
    (and at the end); returns the timings (train_s: the step loop with its input fetching, as the app's
    RunSummary.train_seconds; run_s: all but writing the samples, sample_s) and the sample files."""
    import torch

    began = time.perf_counter()
    channels = data_channels(conf)
    model = TorchDCGAN(conf, app_trainer(conf, channels).state_arrays(), matched_eps)
    inputs = app_inputs(conf)
    files, train_s, sample_s, history = {}, 0.0, 0.0, []
    due = sorted(set(sample_steps) | {steps})
    t0 = time.perf_counter()
    for step in range(1, steps + 1):
        history.append(model.step(*next(inputs)))
        if step in due:
            t1 = time.perf_counter()
            train_s += t1 - t0
            files[step] = str(write_samples(model.generate, conf, samples, sample_file(out, step)))
            t0 = time.perf_counter()
            sample_s += t0 - t1
    total_s = time.perf_counter() - began
    return {"impl": "torch", "steps": steps, "train_s": train_s, "run_s": total_s - sample_s, "sample_s": sample_s,
            "img_per_s": steps * conf.train.batch_size / train_s, "samples": files, "final": history[-1],
            "torch": torch.__version__, "threads": torch.get_num_threads(),
            "adam_eps": "matched" if matched_eps else "plain"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("check", help="step-by-step comparison with the app, to a JSON")
    c.add_argument("--json", required=True, type=Path)
    c.add_argument("--steps", type=int, default=100, help="steps side by side (default 100)")
    t = sub.add_parser("train", help="train the reference, write samples (.npz) and timings (train.json)")
    t.add_argument("--steps", type=int, required=True)
    t.add_argument("--out", type=Path, required=True, help="folder for the sample files and train.json")
    t.add_argument("--samples", type=int, default=1000, help="samples written at each sample step (default 1000)")
    t.add_argument("--sample-steps", default="", help="comma-separated steps that also write samples")
    t.add_argument("--plain-adam-eps", action="store_true", help="torch's own Adam eps (not matched to MindSpore's)")
    for p in (c, t):
        p.add_argument("overrides", nargs="*", help="train.py overrides, e.g. data=fashion_mnist seed=1")
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error(f"--steps={args.steps} must be at least 1")
    try:
        conf = recipe_config(args.overrides)
    except ValueError as err:
        parser.error(str(err))
    try:
        import torch  # noqa: F401
    except ImportError:
        parser.error("this script needs PyTorch (the bench extra: /work/venv-bench or pip install torch); "
                     "it is not a dependency of the product")
    if args.command == "check":
        load_before, started = records.load_average(), records.utc_now()
        start, cpu0 = time.perf_counter(), time.process_time()
        report = check(conf, args.steps, args.overrides)
        print("\n".join(summary_lines(report)))
        records.write(args.json, [check_record(report, started=started, load_before=load_before,
                                               wall_s=time.perf_counter() - start, cpu_s=time.process_time() - cpu0)])
        return 0
    sample_steps = [int(s) for s in args.sample_steps.split(",") if s]
    args.out.mkdir(parents=True, exist_ok=True)
    record = train(conf, args.steps, args.out, args.samples, sample_steps, not args.plain_adam_eps)
    (args.out / "train.json").write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps({k: v for k, v in record.items() if k != "samples"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
