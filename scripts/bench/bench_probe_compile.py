"""First-call cost of Diagnostics' two ms.jit twins in a user's own loop: the plain twin compiles at the first
ordinary step, the probed twin (the same D and G updates plus the probes' statistics) at the first check step.

    PYTHONPATH=. python scripts/bench/bench_probe_compile.py --json docs/data/probe_compile.json [--rounds 2]

Models: the own-loop example (model-zoo DCGAN 16x16, 4 probed activations, batch 16) and the U-Net + PatchGAN
pair of scripts/examples/unet.py (16x16, 19 probed activations, batch 4, the condition as scripts/examples/pix2pix.py
makes it). Each round builds fresh networks and
twins and times, per twin, its first call (compile + step) and its second call (the step alone); compile = first -
second. `--jit-level` compiles both twins at that ms.jit level (default: MindSpore's). The JSON is one record of
scripts/bench/records.py: a row per (model, round), the jit level, rounds and MindSpore version as context.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Callable

import mindspore as ms
import numpy as np
import records
from mindspore import nn, ops

from gan.diagnostics.api import Diagnostics
from ops import swap_activations
from scripts.examples import own_loop, pix2pix


def pix2pix_case(rng: np.random.Generator) -> tuple[nn.Cell, nn.Cell, tuple, tuple, list[Callable], tuple]:
    """The U-Net example: (G, D, g_input, d_input, [D step, G step], the steps' arguments)."""
    g, d, _ = pix2pix.inspect_factory()
    swap_activations(g), swap_activations(d)
    real = ms.Tensor(rng.uniform(-1, 1, (4, 3, 16, 16)).astype(np.float32))
    cond = pix2pix.grey(real)
    opt_d, opt_g = (nn.Adam(n.trainable_params(), 2e-4, beta1=0.5) for n in (d, g))

    def d_loss(c, x):
        return ops.softplus(-d(c, x)).mean() + ops.softplus(d(c, ops.stop_gradient(g(c)))).mean()

    def g_loss(c):
        return ops.softplus(-d(c, g(c))).mean()

    d_grad = ms.value_and_grad(d_loss, None, opt_d.parameters)
    g_grad = ms.value_and_grad(g_loss, None, opt_g.parameters)

    def d_step(c, x):
        loss, grads = d_grad(c, x)
        opt_d(grads)
        return loss

    def g_step(c, x):
        loss, grads = g_grad(c)
        opt_g(grads)
        return loss

    return g, d, (cond,), (cond, real), [d_step, g_step], (cond, real)


def model_zoo_case(rng: np.random.Generator):
    """The own-loop example (model-zoo DCGAN): the same tuple as pix2pix_case."""
    g, d = own_loop.build(0)
    real, z = own_loop.discs(rng), own_loop.latents(rng)
    d_step, g_step = own_loop.make_steps(g, d)

    def g_on_batch(x, z):  # one argument list for both steps
        return g_step(z)

    return g, d, (z,), (real,), [d_step, g_on_batch], (real, z)


CASES = {"model_zoo_dcgan16": model_zoo_case, "pix2pix_unet16": pix2pix_case}


def first_and_second(call: Callable[[], object]) -> tuple[float, float]:
    """Seconds of the first and of the second call."""
    times = []
    for _ in range(2):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return times[0], times[1]


def one_round(case: Callable, jit_level: str | None) -> dict[str, float]:
    """Fresh networks and twins; each twin's first call, second call and their difference (the compile)."""
    g, d, g_input, d_input, steps, batch = case(np.random.default_rng(0))
    with tempfile.TemporaryDirectory() as tmp:
        with Diagnostics(Path(tmp) / "run", g=g, d=d, g_input=g_input, d_input=d_input, every=1) as diag:
            make = (lambda fn: (lambda: ms.jit(fn, jit_level=jit_level))) if jit_level else (lambda fn: None)
            twins = [diag.step(fn) if jit_level is None else diag.step(make=make(fn)) for fn in steps]
            out: dict[str, float] = {}
            for name, check in (("plain", False), ("probed", True)):
                def call(check=check):  # every output read back, as a loop that logs its losses does
                    return [ops.stack(ops.atleast_1d(t(*batch, check=check))).asnumpy() for t in twins]

                first, second = first_and_second(call)
                out |= {f"{name}_first_s": first, f"{name}_step_s": second, f"{name}_compile_s": first - second}
            diag.record(1)
        return out | {"probed_layers": len(diag.probes)}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", required=True, type=Path, help="write the result here")
    parser.add_argument("--rounds", type=int, default=2, help="rounds per model (default 2)")
    parser.add_argument("--jit-level", choices=("O0", "O1"), help="ms.jit's level for both twins")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error(f"--rounds={args.rounds} is not allowed: use 1 or more")
    load, started, start, cpu0 = records.load_average(), records.utc_now(), time.perf_counter(), time.process_time()
    rows = [{"model": name, "round": i, **one_round(case, args.jit_level)}
            for name, case in CASES.items() for i in range(1, args.rounds + 1)]
    result = records.record(rows, context={"jit_level": args.jit_level or "default", "rounds": args.rounds,
                                           "mindspore": ms.__version__},
                            started=started, load_before=load, wall_s=time.perf_counter() - start,
                            cpu_s=time.process_time() - cpu0)
    records.write(args.json, [result])
    for name in CASES:
        median = {k: statistics.median(r[f"{k}_compile_s"] for r in rows if r["model"] == name)
                  for k in ("probed", "plain")}
        print(f"{name}: probed twin compile {median['probed']:.1f} s, plain twin {median['plain']:.1f} s (median of "
              f"{args.rounds}; load {load:.1f} on {result['machine']['cpus']} CPUs)")
    return result


if __name__ == "__main__":
    main()
