"""Images/s of one full training step (D step + G step) for DCGAN-32/64 per conv implementation.

Measures what `python train.py` runs: the config is composed from configs/ exactly like train.py
(model=dcgan32|dcgan64, data=shapes for 3 channels, batch 64) and the step is GANTrainer.train_step,
the jitted D + G step plus the host read-back of the logged numbers. With --vs-torch (and PyTorch
installed, an optional comparison only) the identical architecture, loss and optimiser run in PyTorch
in the same process, so both see the same machine load.

    python scripts/bench_train.py --json bench_train.json [--vs-torch] [--models dcgan32] [--impls auto]
        [--fusions none,bn_act]

Each record names its conv impl and fusion; with conv_impl=onednn it also carries the oneDNN version and
library file the kernels call (`ops.onednn.dnnl_info`).
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Callable

os.environ.setdefault("GLOG_v", "3")

import numpy as np  # noqa: E402

from torch_dcgan import torch_models  # noqa: E402  (first: it puts this checkout first on sys.path; torch on call)
from gan.config import Config, ConfigError, compose_config, to_config  # noqa: E402
from gan.atomic import write_json_atomic  # noqa: E402
from gan.plan import FUSION_KINDS as PLAN_FUSIONS, build_plan  # noqa: E402

MODELS = ("dcgan32", "dcgan64")
FUSION_KINDS = tuple(map(str, PLAN_FUSIONS))  # the fusion= kinds auto resolves to
IMPLS = ("native", "auto", "gemm", "onednn")


def bench_config(model: str, impl: str, batch_size: int, threads: int | None = None, fusion: str = "none",
                 extra: list[str] | tuple[str, ...] = ()) -> Config:
    """The validated Config train.py would run for `model=<model> data=shapes model.conv_impl=<impl>
    fusion=<fusion>` (and `runtime.threads=<threads>` when given) plus the `extra` overrides
    (e.g. experiment=sngan_mnist)."""
    overrides = [f"model={model}", "data=shapes", f"model.conv_impl={impl}", f"train.batch_size={batch_size}",
                 f"fusion={fusion}"] + ([] if threads is None else [f"runtime.threads={threads}"])
    return to_config(compose_config(overrides + list(extra)))


def time_interleaved(steps_by_name: dict[str, Callable[[int], None]], warmup: int, steps: int,
                     max_seconds: float) -> dict[str, list[float]]:
    """Seconds per timed call of each step(i), round-robin so every contender sees the same machine load.

    Each contender first runs `warmup` untimed calls (graph compilation); a contender leaves the rotation
    after `steps` timed calls or once its timed calls add up to `max_seconds` (it always gets one).
    """
    for step in steps_by_name.values():
        for i in range(warmup):
            step(i)
    times: dict[str, list[float]] = {name: [] for name in steps_by_name}
    while True:
        active = [n for n, ts in times.items() if len(ts) < steps and (not ts or sum(ts) < max_seconds)]
        if not active:
            return times
        for name in active:
            t0 = time.perf_counter()
            steps_by_name[name](warmup + len(times[name]))
            times[name].append(time.perf_counter() - t0)


def mindspore_step(cfg: Config) -> Callable[[int], None]:
    """GANTrainer.train_step on fixed random images in [-1, 1] and per-step latents, as in the training loop."""
    from gan.runtime import setup_runtime
    from gan.streams import Purpose, latents, mixing_weights
    from gan.training import GANTrainer

    setup_runtime(cfg.runtime)  # the run's device, threads and launch mode (runtime.host_blocking), as run() sets them
    trainer = GANTrainer(cfg, cfg.data.channels)
    size, batch, d_steps = cfg.model.image_size, cfg.train.batch_size, cfg.train.d_steps
    real = np.random.default_rng(0).uniform(-1, 1, (batch, cfg.data.channels, size, size)).astype(np.float32)

    def step(i: int) -> None:  # train.d_steps D steps (each on the same images here) and one G step
        trainer.train_step([real] * d_steps, [latents(cfg.seed, i, Purpose.Z, batch, cfg.model.nz, k) for k in range(d_steps)],
                           eps=[mixing_weights(cfg.seed, i, batch, k) for k in range(d_steps)])

    return step


def torch_step(cfg: Config) -> Callable[[int], None]:
    """One D step and one G step in PyTorch: BCE-with-logits, Adam, as GANTrainer.train_step.

    runtime.threads, when set, is PyTorch's intra-op thread count too.
    """
    import torch
    from torch import nn

    if cfg.runtime.threads is not None:
        torch.set_num_threads(cfg.runtime.threads)
    m, t, channels = cfg.model, cfg.train, cfg.data.channels
    g, d = torch_models(cfg)
    opt_g = torch.optim.Adam(g.parameters(), t.lr, betas=(t.beta1, t.beta2))
    opt_d = torch.optim.Adam(d.parameters(), t.lr, betas=(t.beta1, t.beta2))
    bce = nn.functional.binary_cross_entropy_with_logits
    real = torch.empty(t.batch_size, channels, m.image_size, m.image_size).uniform_(-1, 1)

    def step(i: int) -> None:
        z = torch.randn(t.batch_size, m.nz, 1, 1)
        fake = g(z)
        logits_real, logits_fake = d(real), d(fake.detach())
        loss_d = bce(logits_real, torch.ones_like(logits_real)) + bce(logits_fake, torch.zeros_like(logits_fake))
        opt_d.zero_grad()
        loss_d.backward()
        opt_d.step()
        logits = d(fake)
        loss_g = bce(logits, torch.ones_like(logits))
        opt_g.zero_grad()
        loss_g.backward()
        opt_g.step()
        loss_d.item(), loss_g.item()  # host read-back, as train_step does for its StepStats

    return step


def onednn_version(impls: list[str]) -> dict | None:
    """{"version", "headers", "library"} of the oneDNN the onednn kernels call, when onednn is benchmarked."""
    if "onednn" not in impls:
        return None
    from ops import onednn

    return onednn.dnnl_info()


def fusion_applies(impl: str, fusion: str) -> bool:
    """False (with a note) for a combination train.py refuses, e.g. fusion=conv_act with conv_impl=gemm."""
    try:
        build_plan(bench_config(MODELS[0], impl, 8, fusion=fusion))
    except ConfigError as err:
        print(f"skipped conv_impl={impl} fusion={fusion}: {err}", flush=True)
        return False
    return True


def main(argv: list[str] | None = None) -> list[dict]:
    """Run the benchmark, print a table, write the records to --json."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", required=True, type=Path, help="write the result records here")
    parser.add_argument("--vs-torch", action="store_true", help="also time the same model in PyTorch")
    parser.add_argument("--models", default=",".join(MODELS), help=f"comma-separated subset of {MODELS}")
    parser.add_argument("--impls", default="native,auto", help=f"comma-separated subset of {IMPLS}")
    parser.add_argument("--fusions", default="none", help=f"comma-separated subset of {FUSION_KINDS}")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first (graph compilation)")
    parser.add_argument("--steps", type=int, default=10, help="timed steps (median is reported)")
    parser.add_argument("--threads", type=int, default=None,
                        help="CPU threads of MindSpore (runtime.threads), the project's kernels and PyTorch "
                             "(default: each framework's own); 1 compares per-core speed on a loaded machine")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                        help="extra train.py override for the MindSpore runs (repeatable), e.g. experiment=sngan_mnist")
    parser.add_argument("--max-seconds", type=float, default=60.0,
                        help="stop timing a configuration after this long (at least one step is timed)")
    args = parser.parse_args(argv)
    models, impls, fusions = args.models.split(","), args.impls.split(","), args.fusions.split(",")
    for name, values, allowed in (("--models", models, MODELS), ("--impls", impls, IMPLS),
                                  ("--fusions", fusions, FUSION_KINDS)):
        bad = [v for v in values if v not in allowed]
        if bad:
            parser.error(f"{name}: {bad} not in {list(allowed)}")
    for name in ("batch_size", "steps") + (("threads",) if args.threads is not None else ()):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')}={getattr(args, name)} must be >= 1")
    if args.vs_torch:
        try:
            import torch  # noqa: F401
        except ImportError:
            parser.error("--vs-torch needs PyTorch (pip install torch); it is not a dependency of the product")

    from gan.runtime import setup_runtime

    if args.threads is not None:
        os.environ["LRELU_NUM_THREADS"] = str(args.threads)  # ops.api.num_threads: the aot kernels' threads
    setup_runtime(bench_config(models[0], impls[0], args.batch_size, args.threads).runtime)  # once, first
    dnnl = onednn_version(impls)
    runs = [(impl, fusion) for impl in impls for fusion in fusions if fusion_applies(impl, fusion)]
    records = []
    for model in models:
        contenders = {f"{impl}/{fusion}": mindspore_step(bench_config(model, impl, args.batch_size, args.threads,
                                                                      fusion, args.override))
                      for impl, fusion in runs}
        if args.vs_torch:
            contenders["torch"] = torch_step(bench_config(model, "native", args.batch_size, args.threads))
        medians = {name: statistics.median(ts) for name, ts in
                   time_interleaved(contenders, args.warmup, args.steps, args.max_seconds).items()}
        torch_ips = args.batch_size / medians["torch"] if args.vs_torch else None
        for impl, fusion in runs:
            step_s = medians[f"{impl}/{fusion}"]
            ips = args.batch_size / step_s
            records.append({"model": model, "impl": impl, "fusion": fusion, "img_per_s": round(ips, 2),
                            "torch_img_per_s": None if torch_ips is None else round(torch_ips, 2),
                            "ratio_to_torch": None if torch_ips is None else round(ips / torch_ips, 4),
                            "step_s": round(step_s, 4), "batch_size": args.batch_size,
                            "threads": args.threads, "onednn": dnnl if impl == "onednn" else None,
                            "overrides": args.override})
            print(f"{model:8s} {impl:7s} {fusion:7s} {ips:9.1f} img/s  step {step_s:7.3f} s"
                  + ("" if torch_ips is None else f"  torch {torch_ips:8.1f} img/s  ratio {ips / torch_ips:.3f}"),
                  flush=True)
    write_json_atomic(args.json, records, indent=2)
    return records


if __name__ == "__main__":
    main()
