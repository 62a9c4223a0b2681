"""Benchmark the fused BatchNorm + LeakyReLU block against the unfused layers, for DCGAN block shapes.

For each BatchNorm block shape of the DCGAN's generator and discriminator at the given image sizes
(batch 64, ngf = ndf = 32 at 32 px and 64 at 64 px, as in configs/model): forward and forward+backward
time (graph mode, training mode, median of round-robin repeats; the backward is ms.grad with respect
to the input, gamma and beta) of

- builtin: nn.BatchNorm2d + nn.LeakyReLU (MindSpore only),
- none:    the fusion=none layers, nn.BatchNorm2d + ops.LeakyReLU,
- bn_act:  the fusion=bn_act layer, ops.BatchNormAct,
- bn_act_nhwc: ops.BatchNormAct(layout="NHWC") on the same values with the channels last (N, H, W, C).

Without BatchNorm (D with model.d_norm=none|spectral), fusion=bn_act fuses the conv's bias with the activation
instead: for D's conv blocks (1 input channel as MNIST, conv_impl=auto, d_norm=none) it times the conv +
ops.LeakyReLU layers of fusion=none against the fused layer (gan.models.layers.BiasAct), forward and forward+backward
(input and parameter gradients).

Also times the batch-statistics pass (the in-kernel reduction BnActStats vs MindSpore's mean + var) and
the whole training step: img/s of GANTrainer.train_step (D step + G step, as train.py runs it: model=dcgan32
or dcgan64, conv_impl=auto, 3 channels, batch 64, diagnostics off) for fusion=none and fusion=bn_act,
timed round-robin in this process, plus each variant's peak resident memory (ru_maxrss) in a fresh child
process that builds the trainer and runs STEP_MEMORY_STEPS steps. Per block, the peak memory of one
forward+backward (ms.value_and_grad: output, input and parameter gradients) is measured in a fresh process
per (shape, impl) by scripts/bench/peak_memory.py: the run's resident-set peak above the memory before it.

    python scripts/bench/bench_fusion.py [--quick] [--image-sizes 32 64] [--no-memory] --json PATH
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
from collections import OrderedDict
from pathlib import Path
from typing import Callable

os.environ.setdefault("GLOG_v", "3")

import mindspore as ms  # noqa: E402
import numpy as np  # noqa: E402
from bench_op import interleaved_medians  # noqa: E402
from bench_train import time_interleaved  # noqa: E402
from mindspore import nn  # noqa: E402
from peak_memory import execution_peak_mib, in_child  # noqa: E402

from gan.config.plan import FUSION_KINDS  # noqa: E402
from gan.config.schema import (  # noqa: E402
    Config,
    RuntimeConfig,
    compose_config,
    to_config,  # noqa: E402
)
from gan.core.atomic import write_json_atomic  # noqa: E402
from gan.core.streams import Purpose, latents  # noqa: E402
from gan.models.build import build_plan
from gan.models.layers import fuse_conv_act, make_conv  # noqa: E402
from gan.training.loop import GANTrainer  # noqa: E402
from gan.training.runtime import setup_runtime  # noqa: E402
from ops import BatchNormAct, LeakyReLU, norm_act_layers  # noqa: E402
from ops.api import num_threads  # noqa: E402
from ops.fused import kernel  # noqa: E402

SLOPE = 0.2
BATCH = 64
WIDTHS = {32: 32, 64: 64}  # image size -> ngf = ndf (configs/model/dcgan32.yaml, dcgan64.yaml)
IMPLS = ("builtin", "none", "bn_act", "bn_act_nhwc")
DTYPES = {"float32": np.float32, "float16": np.float16}
STEP_FUSIONS = ("none", "bn_act")
STEP_MEMORY_STEPS = 2


def block_shapes(image_size: int, batch: int = BATCH) -> list[tuple[int, int, int, int]]:
    """Distinct (N, C, H, W) inputs of the BatchNorm layers of the DCGAN G and D at image_size."""
    n, width = {32: 3, 64: 4}[image_size], WIDTHS[image_size]
    gen = [(batch, width * 2 ** (n - 1 - i), 4 * 2 ** i, 4 * 2 ** i) for i in range(n)]
    disc = [(batch, width * 2 ** i, image_size // 2 ** (i + 1), image_size // 2 ** (i + 1)) for i in range(1, n)]
    return sorted(set(gen + disc), key=lambda s: (-s[2], s[1]))


def make_block(impl: str, channels: int) -> nn.Cell:
    """The block under test, in training mode."""
    if impl == "builtin":
        block = nn.SequentialCell([nn.BatchNorm2d(channels), nn.LeakyReLU(SLOPE)])
    elif impl == "bn_act_nhwc":
        block = BatchNormAct(channels, SLOPE, layout="NHWC")
    else:
        block = nn.SequentialCell(OrderedDict(norm_act_layers(channels, SLOPE,
                                                              fused=FUSION_KINDS[impl].fused_kernels)))
    block.set_train(True)
    return block


def block_fns(impl: str, x: ms.Tensor) -> tuple[Callable[[], object], Callable[[], object]]:
    """Callables running the jitted forward and forward+backward of one block on x (asnumpy waits); x is
    (N, C, H, W), moved channels-last for bn_act_nhwc."""
    block = make_block(impl, x.shape[1])
    x = channels_last(x) if impl == "bn_act_nhwc" else x
    fwd = ms.jit(block.construct)
    fwdbwd = ms.jit(ms.grad(block.construct, grad_position=0, weights=block.trainable_params()))
    return (lambda: fwd(x).asnumpy()), (lambda: fwdbwd(x)[0].asnumpy())




class ForwardBackward(nn.Cell):
    """One training pass of a block: its output and the gradients of input and parameters (dy = ones)."""

    def __init__(self, block: nn.Cell) -> None:
        super().__init__()
        self.value_and_grad = ms.value_and_grad(block, 0, block.trainable_params())

    def construct(self, x: ms.Tensor) -> tuple:
        return self.value_and_grad(x)


def block_peak_mib(impl: str, shape: tuple[int, ...], dtype: str) -> float:
    """Peak MiB of one forward+backward of the block (run in a fresh process by in_child)."""
    ms.set_context(mode=ms.GRAPH_MODE)
    setup_runtime(RuntimeConfig())
    x = input_tensor(shape, dtype)
    return execution_peak_mib(ForwardBackward(make_block(impl, shape[1])),
                              channels_last(x) if impl == "bn_act_nhwc" else x)


def channels_last(x: ms.Tensor) -> ms.Tensor:
    """(N, C, H, W) -> the same values as a contiguous (N, H, W, C) tensor."""
    return ms.Tensor(np.ascontiguousarray(x.asnumpy().transpose(0, 2, 3, 1)))


def input_tensor(shape: tuple[int, ...], dtype: str) -> ms.Tensor:
    """Seeded normal input of the block."""
    return ms.Tensor(np.random.default_rng(0).standard_normal(shape).astype(DTYPES[dtype]))


def step_config(image_size: int, fusion: str, batch: int) -> Config:
    """The validated config of `train.py model=dcgan<size> fusion=<fusion> data=shapes`, diagnostics off."""
    return to_config(compose_config([f"model=dcgan{image_size}", f"fusion={fusion}", "data=shapes",
                                     f"train.batch_size={batch}", "diagnostics.enabled=false"]))


def trainer_step(cfg: Config) -> Callable[[int], None]:
    """GANTrainer.train_step(i) on fixed images in [-1, 1] and the loop's latents of step i (device already set)."""
    trainer = GANTrainer(cfg, cfg.data.channels)
    size, batch = cfg.model.image_size, cfg.train.batch_size
    real = np.random.default_rng(0).uniform(-1, 1, (batch, cfg.data.channels, size, size)).astype(np.float32)
    return lambda i: trainer.train_step(real, latents(cfg.seed, i, Purpose.Z, batch, cfg.model.nz))


def measure_step_peak_mb(image_size: int, fusion: str, batch: int) -> float:
    """Peak resident memory (MiB) of this process after building the trainer and STEP_MEMORY_STEPS steps."""
    setup_runtime(RuntimeConfig())
    step = trainer_step(step_config(image_size, fusion, batch))
    for i in range(STEP_MEMORY_STEPS):
        step(i)
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bench_steps(image_size: int, batch: int, warmup: int, steps: int, memory: bool) -> list[dict]:
    """Whole-step img/s of GANTrainer for each fusion value, timed round-robin in this process."""
    contenders = {fusion: trainer_step(step_config(image_size, fusion, batch)) for fusion in STEP_FUSIONS}
    times = time_interleaved(contenders, warmup, steps, max_seconds=float("inf"))
    return [{"image_size": image_size, "fusion": fusion, "batch": batch, "step_s": statistics.median(times[fusion]),
             "img_per_s": batch / statistics.median(times[fusion]), "steps": len(times[fusion]),
             "peak_mb": in_child("bench_fusion", "measure_step_peak_mb", image_size, fusion, batch) if memory else None}
            for fusion in STEP_FUSIONS]


def bench_block(image_size: int, shape: tuple[int, ...], dtype: str, repeats: int, memory: bool) -> list[dict]:
    """One record per impl for one block shape, timed side by side; peak memory each in its own process."""
    x = input_tensor(shape, dtype)
    fns = {}
    for impl in IMPLS:
        fns[f"{impl}_fwd"], fns[f"{impl}_fwdbwd"] = block_fns(impl, x)
    t = interleaved_medians(fns, repeats)
    return [{"image_size": image_size, "shape": list(shape), "dtype": dtype, "impl": impl,
             "fwd_ms": t[f"{impl}_fwd"], "fwdbwd_ms": t[f"{impl}_fwdbwd"],
             "peak_mib": in_child("bench_fusion", "block_peak_mib", impl, shape, dtype) if memory else None}
            for impl in IMPLS]


def d_conv_blocks(image_size: int, batch: int = BATCH) -> list[tuple[tuple[int, int, int, int], int]]:
    """(input shape, output channels) of D's strided conv blocks (1 input channel) at image_size."""
    n, width = {32: 3, 64: 4}[image_size], WIDTHS[image_size]
    return [((batch, 1 if i == 0 else width * 2 ** (i - 1), image_size // 2 ** i, image_size // 2 ** i),
             width * 2 ** i) for i in range(n)]


def bench_bias_act(image_size: int, shape: tuple[int, ...], out_channels: int, repeats: int) -> list[dict]:
    """One D block without BatchNorm: conv + ops.LeakyReLU (fusion=none) vs the fused bias + act layer."""
    impl = build_plan(Config()).g.conv_impl  # model.conv_impl=auto on CPU
    conv = make_conv(shape[1], out_channels, 4, 2, 1, has_bias=True, impl=impl)
    blocks = {"none": nn.SequentialCell([conv, LeakyReLU(SLOPE)]),
              "bias_act": fuse_conv_act(conv, LeakyReLU(SLOPE), "bn_act")}
    x = input_tensor(shape, "float32")
    fns = {}
    for name, block in blocks.items():
        fwd = ms.jit(block.construct)
        fwdbwd = ms.jit(ms.grad(block.construct, grad_position=0, weights=block.trainable_params()))
        fns[f"{name}_fwd"], fns[f"{name}_fwdbwd"] = (lambda f=fwd: f(x).asnumpy()), (lambda f=fwdbwd: f(x)[0].asnumpy())
    t = interleaved_medians(fns, repeats)
    return [{"image_size": image_size, "shape": list(shape), "out_channels": out_channels, "conv_impl": impl,
             "impl": name, "fwd_ms": t[f"{name}_fwd"], "fwdbwd_ms": t[f"{name}_fwdbwd"]} for name in blocks]


def bench_stats(shape: tuple[int, ...], dtype: str, repeats: int) -> dict:
    """Batch statistics of one input: the fused kernel's reduction pass (which also computes the new
    moving statistics) vs MindSpore's mean and var."""
    x = input_tensor(shape, dtype)
    _, stats_op, scalars = kernel(SLOPE, None, 1.0, True, 1e-5, 0.9, num_threads())
    moving = (ms.Parameter(ms.Tensor(np.zeros(shape[1], np.float32)), name="moving_mean"),
              ms.Parameter(ms.Tensor(np.ones(shape[1], np.float32)), name="moving_var"))

    @ms.jit
    def in_kernel(t: ms.Tensor) -> ms.Tensor:
        return stats_op(t, *moving, scalars)[1]

    @ms.jit
    def reductions(t: ms.Tensor) -> tuple[ms.Tensor, ms.Tensor]:
        t32 = t.astype(ms.float32)
        return t32.mean(axis=(0, 2, 3)), t32.var(axis=(0, 2, 3))

    t = interleaved_medians({"kernel": lambda: in_kernel(x).asnumpy(),
                             "reductions": lambda: reductions(x)[1].asnumpy()}, repeats)
    return {"shape": list(shape), "dtype": dtype, "kernel_ms": t["kernel"], "reductions_ms": t["reductions"]}


def table(records: list[dict]) -> str:
    """Aligned text table; speed-ups are relative to the builtin block of the same shape and dtype."""
    builtin = {(tuple(r["shape"]), r["dtype"]): r for r in records if r["impl"] == "builtin"}
    rows = [f"{'px':>3} {'shape':>18} {'dtype':>8} {'impl':>8} {'fwd ms':>8} {'fwdbwd ms':>10} {'fwd x':>6} "
            f"{'fb x':>6} {'peak MiB':>9}"]
    for r in records:
        b = builtin[(tuple(r["shape"]), r["dtype"])]
        peak = "-" if r["peak_mib"] is None else f"{r['peak_mib']:.1f}"
        rows.append(f"{r['image_size']:>3} {'x'.join(map(str, r['shape'])):>18} {r['dtype']:>8} {r['impl']:>8} "
                    f"{r['fwd_ms']:>8.3f} {r['fwdbwd_ms']:>10.3f} {b['fwd_ms'] / r['fwd_ms']:>6.2f} "
                    f"{b['fwdbwd_ms'] / r['fwdbwd_ms']:>6.2f} {peak:>9}")
    return "\n".join(rows)


def step_table(records: list[dict]) -> str:
    """Aligned text table of whole-step records; the speed-up is relative to fusion=none at the same size."""
    none = {r["image_size"]: r for r in records if r["fusion"] == "none"}
    rows = [f"{'px':>3} {'batch':>5} {'fusion':>8} {'step s':>8} {'img/s':>8} {'x':>6} {'peak MiB':>9}"]
    for r in records:
        peak = "-" if r["peak_mb"] is None else f"{r['peak_mb']:.0f}"
        rows.append(f"{r['image_size']:>3} {r['batch']:>5} {r['fusion']:>8} {r['step_s']:>8.3f} {r['img_per_s']:>8.2f} "
                    f"{r['img_per_s'] / none[r['image_size']]['img_per_s']:>6.2f} {peak:>9}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print the tables, write {"blocks": [...], "stats": [...], "steps": [...]} as JSON."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="the smallest block and the whole step at 32 px, batch 8, 3 repeats, 2 steps")
    parser.add_argument("--image-sizes", type=int, nargs="+", choices=sorted(WIDTHS), default=sorted(WIDTHS))
    parser.add_argument("--dtypes", nargs="+", choices=sorted(DTYPES), default=["float32"])
    parser.add_argument("--repeats", type=int, help="timed calls per measurement (default 3 quick, 10 full)")
    parser.add_argument("--steps", type=int, help="timed whole steps per fusion value (default 2 quick, 6 full)")
    parser.add_argument("--no-memory", action="store_true", help="skip the memory measurements (block and step)")
    parser.add_argument("--json", type=Path, required=True, help="output file")
    args = parser.parse_args(argv)
    repeats = args.repeats if args.repeats is not None else (3 if args.quick else 10)
    steps = args.steps if args.steps is not None else (2 if args.quick else 6)
    for flag, value in (("--repeats", repeats), ("--steps", steps)):
        if value < 1:
            parser.error(f"{flag} must be >= 1, got {value}")
    ms.set_context(mode=ms.GRAPH_MODE)
    setup_runtime(RuntimeConfig())  # device CPU, before any kernel runs
    batch = 8 if args.quick else BATCH
    step_records = [r for size in (args.image_sizes[:1] if args.quick else args.image_sizes)
                    for r in bench_steps(size, batch, 1 if args.quick else 2, steps, not args.no_memory)]
    cases = [(size, shape) for size in args.image_sizes
             for shape in block_shapes(size, 8 if args.quick else BATCH)]
    if args.quick:
        cases = [min(cases, key=lambda c: np.prod(c[1]))]
    blocks, stats = [], []
    for size, shape in cases:
        for dtype in args.dtypes:
            blocks += bench_block(size, shape, dtype, repeats, not args.no_memory)
            stats.append(bench_stats(shape, dtype, repeats))
            print(table(blocks[-len(IMPLS):]).split("\n", 1)[1], flush=True, file=sys.stderr)
    print(table(blocks))
    print("\nbatch statistics: in-kernel vs MindSpore mean+var (ms)")
    for s in stats:
        print(f"{'x'.join(map(str, s['shape'])):>18} {s['dtype']:>8} {s['kernel_ms']:>8.3f} {s['reductions_ms']:>8.3f}")
    bias_cases = [(size, shape, out) for size in (args.image_sizes[:1] if args.quick else args.image_sizes)
                  for shape, out in d_conv_blocks(size, batch)]
    bias_records = [r for size, shape, out in (bias_cases[-1:] if args.quick else bias_cases)
                    for r in bench_bias_act(size, shape, out, repeats)]
    print("\nD block without BatchNorm: conv + ops.LeakyReLU (none) vs fused bias + act (ms, float32)")
    for r in bias_records:
        print(f"{r['image_size']:>3} {'x'.join(map(str, r['shape'])):>18} -> {r['out_channels']:>4} {r['impl']:>8} "
              f"{r['fwd_ms']:>8.3f} {r['fwdbwd_ms']:>10.3f}")
    print("\nwhole training step (GANTrainer D + G step, conv_impl=auto, float32)")
    print(step_table(step_records))
    write_json_atomic(args.json, {"blocks": blocks, "stats": stats, "bias_act": bias_records, "steps": step_records})
    return 0


if __name__ == "__main__":
    sys.exit(main())
