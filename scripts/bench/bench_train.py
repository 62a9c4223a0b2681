"""Images/s of one full training step (D step + G step) for DCGAN-32/64 per conv implementation, fusion and
precision, its convolution FLOPs and their share of the machine's measured peak.

Measures what `python train.py` runs: the config is composed from configs/ exactly like train.py
(model=dcgan32|dcgan64, data=shapes for 3 channels, batch 64, precision=fp32|bf16) and the step is
GANTrainer.train_step, the jitted D + G step plus the host read-back of the logged numbers. With --vs-torch
(and PyTorch installed, an optional comparison only) the identical architecture, loss and optimiser run in
PyTorch in the same process, so both see the same machine load: float32, and for precision bf16 under
torch.autocast("cpu", dtype=torch.bfloat16) (ratio_to_torch compares equal precisions). The contenders take turns,
one timed step each, and each timed step comes right after an untimed step of the same contender (`lead_in`): a
step timed right after another contender's starts in its leftovers and runs slower than after its own step
(docs/performance.md#timing-each-step-after-its-own).

    python scripts/bench/bench_train.py --json bench_train.json [--vs-torch] [--models dcgan32] [--impls auto]
        [--fusions none,bn_act] [--precisions fp32,bf16] [--peak measure|PATH]
    python scripts/bench/bench_train.py --render A.json [B.json ...]   # the utilisation and bf16 tables of runs

Utilisation: `gflop_per_step` counts the multiply-adds (2 FLOP each) of every convolution of one step from the
layer shapes (`step_flops`, the structure of GANTrainer's D + G step: see its docstring), `achieved_gflops` is
that over the step time and `peak_share` its share of the peak GFLOP/s of the same precision. The peak is
measured in the same round-robin as the steps (`--peak measure`, default: scripts/bench/bench_peak.py's GEMM and
convolution, the better of the two) or read from a bench_peak.py JSON. The run is one record of
scripts/bench/records.py: its machine (CPU model, bf16/AMX flags) and load, its context (OMP_WAIT_POLICY: PyTorch's
OpenMP threads spin while they wait unless it is PASSIVE, and on a machine loaded past its cores the spinning takes
cores from the threads with work; lead-in, warm-up, steps, the peak's source) and one row per model and
configuration, with the threads and the 1-minute load average before and after that model's round-robin.
`step_cpu_s` (and the cpu_ratio_* fields) is the median CPU time of this process per step: where the
machine has more runnable threads than cores, wall time includes the waits for a core and CPU time what the step
itself costs (threads that spin while idle count too).

Each row names its conv impl, fusion and precision; with conv_impl=onednn it also carries the oneDNN version
and library file the kernels call (`ops.onednn.dnnl_info`) and the ISA oneDNN dispatches to (`isa`, which
$ONEDNN_MAX_CPU_ISA lowers: a run capped below the CPU says so).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import time
from pathlib import Path
from typing import Callable

os.environ.setdefault("GLOG_v", "3")

import numpy as np  # noqa: E402
import records  # noqa: E402
from torch_dcgan import torch_models  # noqa: E402  (first: it puts this checkout first on sys.path; torch on call)

from gan.config.plan import FUSION_KINDS as PLAN_FUSIONS  # noqa: E402
from gan.config.schema import Config, ConfigError, compose_config, to_config  # noqa: E402
from gan.models.build import build_plan

MODELS = ("dcgan32", "dcgan64")
FUSION_KINDS = tuple(map(str, PLAN_FUSIONS))  # the fusion= kinds auto resolves to
IMPLS = ("native", "auto", "gemm", "onednn")
PRECISIONS = ("fp32", "bf16")


def bench_config(model: str, impl: str, batch_size: int, threads: int | None = None, fusion: str = "none",
                 extra: list[str] | tuple[str, ...] = (), precision: str = "fp32") -> Config:
    """The validated Config train.py would run for `model=<model> data=shapes model.conv_impl=<impl>
    fusion=<fusion> precision=<precision>` (and `runtime.threads=<threads>` when given) plus the `extra`
    overrides (e.g. experiment=sngan_mnist)."""
    overrides = [f"model={model}", "data=shapes", f"model.conv_impl={impl}", f"train.batch_size={batch_size}",
                 f"fusion={fusion}", f"precision={precision}"]
    overrides += [] if threads is None else [f"runtime.threads={threads}"]
    return to_config(compose_config(overrides + list(extra)))


def layer_macs(net, side: int, batch: int) -> list[int]:
    """Multiply-adds of one forward of each convolution (or dense layer) of `net.layers`, in order, for a batch of
    (batch, C, side, side) inputs; a transposed conv costs what the conv it is the adjoint of costs."""
    from mindspore import nn

    from gan.diagnostics.probes import ProbedActivation

    macs = []
    for cell in net.layers.cell_list:
        cell = cell.act if isinstance(cell, ProbedActivation) else cell
        if isinstance(cell, (nn.Conv2d, nn.Conv2dTranspose)):
            k, s, p = cell.kernel_size[0], cell.stride[0], cell.padding
            p = p if isinstance(p, int) else p[0]
            if isinstance(cell, nn.Conv2dTranspose):  # each input pixel scatters a k x k x out patch
                macs.append(batch * side * side * cell.in_channels * cell.out_channels * k * k)
                side = (side - 1) * s - 2 * p + k
            else:
                side = (side + 2 * p - k) // s + 1
                macs.append(batch * side * side * cell.out_channels * cell.in_channels * k * k)
        elif isinstance(cell, nn.Dense):
            macs.append(batch * cell.in_channels * cell.out_channels)
    return macs


def step_flops(g_macs: list[int], d_macs: list[int], d_steps: int = 1, shared_g_forward: bool = True) -> dict:
    """FLOPs (2 per multiply-add) of the convolutions/GEMMs of one GANTrainer.train_step, by part.

    Per D step: G's forward (no gradient) for the fake, D's forward on the real and on the fake batch, and D's
    backward for both: backward-weights of every D layer, backward-data of every layer but the first (the images
    need no gradient: data, and a fake without gradient). The G step: D's forward on the fake with the updated
    D, D's backward-data through every layer down to the fake (no D weight gradient: the G step differentiates
    w.r.t. the fake only), then G's backward: backward-weights of every G layer and backward-data of every layer
    but the first (z needs none). Without a penalty the last D step and the G step share G's forward
    (`shared_g_forward`); with one (WGAN-GP, R1) the G step runs G's forward again, and the penalties' double
    backward is not counted. A backward-data or backward-weights costs the multiply-adds of the forward.
    """
    g, d = sum(g_macs), sum(d_macs)
    parts = {"g_forward": (d_steps + (0 if shared_g_forward else 1)) * g,
             "d_forward": (2 * d_steps + 1) * d,
             "d_backward_weights": 2 * d_steps * d,
             "d_backward_data": 2 * d_steps * (d - d_macs[0]) + d,
             "g_backward_weights": g,
             "g_backward_data": g - g_macs[0]}
    flops = {name: 2.0 * macs for name, macs in parts.items()}
    return {**flops, "total": sum(flops.values())}


def train_step_flops(cfg: Config) -> dict:
    """step_flops of the run `cfg` configures, from its generator's and discriminator's layer shapes."""
    from gan.models.networks import NETWORKS

    nets = NETWORKS[cfg.model.name]
    g = nets.generator(cfg.model, cfg.act, cfg.data.channels, "native")
    d = nets.discriminator(cfg.model, cfg.act, cfg.data.channels, "native")
    batch = cfg.train.batch_size
    penalty = cfg.train.loss == "wgan_gp" or cfg.train.r1_gamma > 0
    return step_flops(layer_macs(g, 1, batch), layer_macs(d, nets.sample_side(cfg.model), batch), cfg.train.d_steps,
                      not penalty)


def time_interleaved(steps_by_name: dict[str, Callable[[int], None]], warmup: int, steps: int,
                     max_seconds: float, cpu_seconds: dict[str, list[float]] | None = None, *,
                     lead_in: bool = False) -> dict[str, list[float]]:
    """Seconds per timed call of each step(i), round-robin so every contender sees the same machine load.

    Each contender first runs `warmup` untimed calls (graph compilation); a contender leaves the rotation
    after `steps` timed calls or once its timed calls add up to `max_seconds` (it always gets one).
    `cpu_seconds`, when given, receives each call's CPU time of this process (all its threads): on a machine
    loaded past its cores, wall time also counts the waits for a core, CPU time what the step itself cost.
    lead_in: each timed call follows an untimed call of the same contender, so it starts from its own caches and
    threads, as a training step follows a step of the same network, not from the previous contender's (another
    framework's spinning threads, a large GEMM's evicted caches).
    """
    for step in steps_by_name.values():
        for i in range(warmup):
            step(i)
    times: dict[str, list[float]] = {name: [] for name in steps_by_name}
    cpu = {name: [] for name in steps_by_name} if cpu_seconds is None else cpu_seconds
    while True:
        active = [n for n, ts in times.items() if len(ts) < steps and (not ts or sum(ts) < max_seconds)]
        if not active:
            return times
        for name in active:
            if lead_in:
                steps_by_name[name](warmup + len(times[name]))
            t0, c0 = time.perf_counter(), time.process_time()
            steps_by_name[name](warmup + len(times[name]))
            times[name].append(time.perf_counter() - t0)
            cpu.setdefault(name, []).append(time.process_time() - c0)


def mindspore_step(cfg: Config) -> Callable[[int], None]:
    """GANTrainer.train_step on fixed random images in [-1, 1] and per-step latents, as in the training loop."""
    from gan.core.streams import Purpose, latents, mixing_weights
    from gan.training.loop import GANTrainer
    from gan.training.runtime import setup_runtime

    setup_runtime(cfg.runtime)  # the run's device, threads and launch mode (runtime.host_blocking), as run() sets them
    trainer = GANTrainer(cfg, cfg.data.channels)
    size, batch, d_steps = cfg.model.image_size, cfg.train.batch_size, cfg.train.d_steps
    real = np.random.default_rng(0).uniform(-1, 1, (batch, cfg.data.channels, size, size)).astype(np.float32)

    def step(i: int) -> None:  # train.d_steps D steps (each on the same images here) and one G step
        trainer.train_step([real] * d_steps,
                           [latents(cfg.seed, i, Purpose.Z, batch, cfg.model.nz, k) for k in range(d_steps)],
                           eps=[mixing_weights(cfg.seed, i, batch, k) for k in range(d_steps)])

    return step


def torch_step(cfg: Config, precision: str = "fp32") -> Callable[[int], None]:
    """One D step and one G step in PyTorch: BCE-with-logits, Adam, as GANTrainer.train_step; precision bf16
    runs the forwards and losses under torch.autocast("cpu", dtype=torch.bfloat16), as a PyTorch user would
    (float32 parameters and Adam, no loss scaling).

    runtime.threads, when set, is PyTorch's intra-op thread count too. Unlike GANTrainer's G step, loss_g.backward()
    also computes D's weight gradients (then discarded), as PyTorch's DCGAN example does.
    """
    import torch
    from torch import nn

    def autocast():
        return torch.autocast("cpu", dtype=torch.bfloat16) if precision == "bf16" else contextlib.nullcontext()

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
        with autocast():
            fake = g(z)
            logits_real, logits_fake = d(real), d(fake.detach())
            loss_d = bce(logits_real, torch.ones_like(logits_real)) + bce(logits_fake, torch.zeros_like(logits_fake))
        opt_d.zero_grad()
        loss_d.backward()
        opt_d.step()
        with autocast():
            logits = d(fake)
            loss_g = bce(logits, torch.ones_like(logits))
        opt_g.zero_grad()
        loss_g.backward()
        opt_g.step()
        loss_d.item(), loss_g.item()  # host read-back, as train_step does for its StepStats

    return step


def onednn_version(impls: list[str]) -> dict | None:
    """{"version", "headers", "library", "isa"} of the oneDNN the onednn kernels call, when onednn is benchmarked."""
    if "onednn" not in impls:
        return None
    from ops import onednn

    return {**onednn.dnnl_info(), "isa": onednn.cpu_isa().name}


def fusion_applies(impl: str, fusion: str) -> bool:
    """False (with a note) for a combination train.py refuses, e.g. fusion=conv_act with conv_impl=gemm."""
    try:
        build_plan(bench_config(MODELS[0], impl, 8, fusion=fusion))
    except ConfigError as err:
        print(f"skipped conv_impl={impl} fusion={fusion}: {err}", flush=True)
        return False
    return True


def precision_applies(impl: str, precision: str) -> bool:
    """False (with a note) where train.py refuses the precision: bf16 on CPU without oneDNN or bf16 instructions."""
    from gan.training.precision import check_precision_supported

    try:
        check_precision_supported(bench_config(MODELS[0], impl, 8, precision=precision))
    except ConfigError as err:
        print(f"skipped conv_impl={impl} precision={precision}: {err}", flush=True)
        return False
    return True


def peak_contenders(threads: int, precisions: list[str]) -> tuple[dict[str, Callable[[int], None]], Callable]:
    """scripts/bench/bench_peak.py's problems as round-robin contenders, and a function returning the peak GFLOP/s per
    precision from the calls they made (oneDNN's own timing of each primitive call, the best call)."""
    import bench_peak

    seconds: dict[tuple[str, str], list[float]] = {}
    impls: dict[tuple[str, str], str] = {}

    def contender(kind: str, precision: str) -> Callable[[int], None]:
        def call(_: int) -> None:
            timed, impls[(kind, precision)] = bench_peak.time_problem(kind, precision, threads, 1)
            seconds.setdefault((kind, precision), []).extend(timed)
        return call

    def peaks() -> dict:
        problems = [{"problem": k, "precision": p, "impl": impls[(k, p)],
                     "peak_gflops": round(bench_peak.PROBLEMS[k][2] / min(t) / 1e9, 1) if t else None}
                    for (k, p), t in seconds.items()]
        return {"problems": problems, **{p: bench_peak.peak_of({"problems": problems}, p) for p in precisions}}

    return {f"peak/{k}/{p}": contender(k, p) for p in precisions for k in bench_peak.PROBLEMS}, peaks


def read_peak(path: Path, precisions: list[str]) -> dict:
    """The peak GFLOP/s per precision of a scripts/bench/bench_peak.py data file (its last record's row)."""
    import bench_peak

    row = records.read(path)[-1]["rows"][0]
    return {"problems": row["problems"], "source": str(path), **{p: bench_peak.peak_of(row, p) for p in precisions}}


def utilisation(flops: float, step_s: float, peak: float | None) -> dict:
    """GFLOP/s of a step and its share of the peak of the same precision."""
    achieved = flops / step_s / 1e9
    return {"achieved_gflops": round(achieved, 1), "peak_share": None if not peak else round(achieved / peak, 4)}


def main(argv: list[str] | None = None) -> list[dict]:
    """Run the benchmark, print a table, write its record to --json (or print the tables of --render files); returns
    the rows."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="write the run's record here (required unless --render)")
    parser.add_argument("--render", nargs="+", type=Path, metavar="JSON",
                        help="print the markdown utilisation table of these bench_train JSONs and exit")
    parser.add_argument("--vs-torch", action="store_true", help="also time the same model in PyTorch")
    parser.add_argument("--models", default=",".join(MODELS), help=f"comma-separated subset of {MODELS}")
    parser.add_argument("--impls", default="native,auto", help=f"comma-separated subset of {IMPLS}")
    parser.add_argument("--fusions", default="none", help=f"comma-separated subset of {FUSION_KINDS}")
    parser.add_argument("--precisions", default="fp32", help=f"comma-separated subset of {PRECISIONS}")
    parser.add_argument("--peak", default="measure",
                        help="'measure' (scripts/bench/bench_peak.py's problems in the same round-robin), 'none', or a "
                             "bench_peak.py JSON to read the peak GFLOP/s from")
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
    parser.add_argument("--lead-in", action=argparse.BooleanOptionalAction, default=True,
                        help="time each step right after an untimed step of the same contender (default); "
                             "--no-lead-in times it right after the previous contender's, as before 2026-12-06")
    args = parser.parse_args(argv)
    if args.render:  # the utilisation and bf16 tables of these runs, by scripts/bench/render_results.py's specs
        from render_results import render_files
        from results_spec import RUN_TABLES

        try:
            runs = [run for path in args.render for run in records.read(path)]
        except records.RecordError as e:
            parser.error(f"--render: {e}")
        bf16 = any(r.get("precision") == "bf16" for run in runs for r in run["rows"])
        print(render_files(RUN_TABLES if bf16 else RUN_TABLES[:1], args.render))
        return []
    if args.json is None:
        parser.error("--json is required (or --render to print the tables of existing JSONs)")
    models, impls, fusions = args.models.split(","), args.impls.split(","), args.fusions.split(",")
    precisions = args.precisions.split(",")
    for name, values, allowed in (("--models", models, MODELS), ("--impls", impls, IMPLS),
                                  ("--fusions", fusions, FUSION_KINDS), ("--precisions", precisions, PRECISIONS)):
        bad = [v for v in values if v not in allowed]
        if bad:
            parser.error(f"{name}: {bad} not in {list(allowed)}")
    for name in ("batch_size", "steps") + (("threads",) if args.threads is not None else ()):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')}={getattr(args, name)} must be >= 1")
    if args.peak not in ("measure", "none"):
        try:  # before any step is timed: the peak is read after them
            read_peak(Path(args.peak), precisions)
        except (records.RecordError, LookupError, TypeError) as e:
            parser.error(f"--peak={args.peak!r}: not 'measure', 'none' or a bench_peak.py data file ({e})")
    if args.vs_torch:
        try:
            import torch  # noqa: F401
        except ImportError:
            parser.error("--vs-torch needs PyTorch (pip install torch); it is not a dependency of the product")

    from gan.training.runtime import setup_runtime
    from ops.api import num_threads

    if args.threads is not None:
        os.environ["LRELU_NUM_THREADS"] = str(args.threads)  # ops.api.num_threads: the aot kernels' threads
    setup_runtime(bench_config(models[0], impls[0], args.batch_size, args.threads).runtime)  # once, first
    dnnl = onednn_version(impls)
    runs = [(impl, fusion, precision) for impl in impls for fusion in fusions for precision in precisions
            if fusion_applies(impl, fusion) and precision_applies(impl, precision)]
    threads = args.threads or num_threads()
    context = {"omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),  # PyTorch's idle OpenMP threads spin or sleep
               "lead_in": args.lead_in,  # each timed step right after an untimed one of the same contender
               "warmup": args.warmup, "steps": args.steps, "max_seconds": args.max_seconds, "peak": args.peak}
    run_load, started, start, cpu0 = records.load_average(), records.utc_now(), time.perf_counter(), time.process_time()
    rows = []
    for model in models:
        load_before = records.load_average()
        contenders = {f"{impl}/{fusion}/{precision}": mindspore_step(
                          bench_config(model, impl, args.batch_size, args.threads, fusion, args.override, precision))
                      for impl, fusion, precision in runs}
        torch_precisions = sorted({p for _, _, p in runs}) if args.vs_torch else []
        for precision in torch_precisions:
            contenders[f"torch/{precision}"] = torch_step(bench_config(model, "native", args.batch_size, args.threads),
                                                          precision)
        peaks = lambda: {}  # noqa: E731
        if args.peak == "measure":
            peak_steps, peaks = peak_contenders(threads, sorted({p for _, _, p in runs}))
            contenders.update(peak_steps)
        cpu_seconds: dict[str, list[float]] = {}
        medians = {name: statistics.median(ts) for name, ts in
                   time_interleaved(contenders, args.warmup, args.steps, args.max_seconds, cpu_seconds,
                                    lead_in=args.lead_in).items()}
        cpu = {name: statistics.median(ts) for name, ts in cpu_seconds.items()}
        peak = peaks() if args.peak == "measure" else {} if args.peak == "none" else read_peak(Path(args.peak),
                                                                                               precisions)
        load = {"load_average_before": load_before, "load_average_after": records.load_average()}
        flops = train_step_flops(bench_config(model, runs[0][0], args.batch_size, args.threads, runs[0][1],
                                              extra=args.override))  # the layer shapes: the same in every run
        for impl, fusion, precision in runs:
            step_s = medians[f"{impl}/{fusion}/{precision}"]
            ips = args.batch_size / step_s
            torch_s = medians.get(f"torch/{precision}")
            fp32_s = medians.get(f"{impl}/{fusion}/fp32")
            used = utilisation(flops["total"], step_s, peak.get(precision))
            torch_used = utilisation(flops["total"], torch_s, peak.get(precision)) if torch_s else {}
            rows.append({
                "model": model, "impl": impl, "fusion": fusion, "precision": precision, "img_per_s": round(ips, 2),
                "torch_img_per_s": None if torch_s is None else round(args.batch_size / torch_s, 2),
                "ratio_to_torch": None if torch_s is None else round(torch_s / step_s, 4),
                "ratio_to_fp32": None if fp32_s is None or precision == "fp32" else round(fp32_s / step_s, 4),
                "step_s": round(step_s, 4), "step_cpu_s": round(cpu[f"{impl}/{fusion}/{precision}"], 4),
                "cpu_ratio_to_torch": None if torch_s is None else round(cpu[f"torch/{precision}"]
                                                                         / cpu[f"{impl}/{fusion}/{precision}"], 4),
                "cpu_ratio_to_fp32": None if fp32_s is None or precision == "fp32" else round(
                    cpu[f"{impl}/{fusion}/fp32"] / cpu[f"{impl}/{fusion}/{precision}"], 4),
                "batch_size": args.batch_size, "threads": threads,
                "gflop_per_step": round(flops["total"] / 1e9, 3),
                "flops_by_part": {k: round(v / 1e9, 4) for k, v in flops.items() if k != "total"},
                **used, "peak_gflops": peak.get(precision), "peak": peak or None,
                "torch_achieved_gflops": torch_used.get("achieved_gflops"),
                "torch_peak_share": torch_used.get("peak_share"),
                "onednn": dnnl if impl == "onednn" else None, "overrides": args.override, **load})
            r = rows[-1]
            share = "" if r["peak_share"] is None else f" {100 * r['peak_share']:5.1f}% of {r['peak_gflops']:.0f}"
            print(f"{model:8s} {impl:7s} {fusion:8s} {precision:4s} {ips:9.1f} img/s  step {step_s:7.3f} s  "
                  f"{r['gflop_per_step']:7.2f} GFLOP {r['achieved_gflops']:7.1f} GFLOP/s{share}"
                  + ("" if torch_s is None else f"  torch {r['torch_img_per_s']:8.1f} img/s  ratio "
                                                f"{r['ratio_to_torch']:.3f}")
                  + ("" if r["ratio_to_fp32"] is None else f"  vs fp32 {r['ratio_to_fp32']:.3f}")
                  + f"  (CPU time: {r['step_cpu_s']:.3f} s"
                  + ("" if torch_s is None else f", ratio {r['cpu_ratio_to_torch']:.3f}")
                  + ("" if r["cpu_ratio_to_fp32"] is None else f", vs fp32 {r['cpu_ratio_to_fp32']:.3f}") + ")",
                  flush=True)
    records.write(args.json, [records.record(rows, context=context, started=started, load_before=run_load,
                                             wall_s=time.perf_counter() - start, cpu_s=time.process_time() - cpu0)])
    return rows


if __name__ == "__main__":
    main()
