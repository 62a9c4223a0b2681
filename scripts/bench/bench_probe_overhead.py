"""Per-step cost of gan.diagnostics.api in a user's own loop: the own-loop example (scripts/examples/own_loop.py,
model-zoo DCGAN 16x16, batch 16, D + G update per step) timed without diagnostics, with diagnostics on ordinary steps
(the plain ms.jit twin: probes compiled out) and on check steps (the probed twin, plus `record`: reading the probes and
writing diagnostics.jsonl / TensorBoard), round-robin in one process so the machine's load hits all three alike.

    PYTHONPATH=. python scripts/bench/bench_probe_overhead.py --json docs/data/probe_overhead.json
        [--rounds 5] [--steps 30]

Each step's time includes reading its losses back (asnumpy), as a loop that logs them does. Every ordinary and
check step is timed right after a step without diagnostics (pairs; the shared machine's load changes over seconds).
Reported (one record of scripts/bench/records.py): a row per setting with its median step time, the median ratio
of its pairs, their quartiles and the overhead in percent; as context the settings and the amortised overhead for a
check every 20 and every 100 steps from those ratios.
"""
from __future__ import annotations

import argparse
import platform
import statistics
import tempfile
import time
from pathlib import Path

import mindspore as ms
import numpy as np
import records

from gan.diagnostics.api import Diagnostics
from scripts.examples.own_loop import build, discs, latents, make_steps

INTERVALS = (20, 100)


def timed(run_step, i: int) -> float:
    """Seconds of one call run_step(i)."""
    start = time.perf_counter()
    run_step(i)
    return time.perf_counter() - start


def quartiles(values: list[float]) -> list[float]:
    """The three quartiles of the pairs' ratios (one ratio: itself three times)."""
    return statistics.quantiles(values, n=4) if len(values) > 1 else values * 3


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", required=True, type=Path, help="write the result here")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (default 5)")
    parser.add_argument("--steps", type=int, default=30, help="steps per setting and round (default 30)")
    parser.add_argument("--checks", type=int, default=5, help="check steps per round (default 5)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps of each setting first (default 3)")
    args = parser.parse_args(argv)
    for name in ("rounds", "steps", "checks", "warmup"):
        if getattr(args, name) < 1:
            parser.error(f"--{name}={getattr(args, name)} is not allowed: use 1 or more")
    started, start, cpu0 = records.utc_now(), time.perf_counter(), time.process_time()
    rng = np.random.default_rng(0)
    batches = [(discs(rng), latents(rng)) for _ in range(8)]
    plain_d, plain_g = (ms.jit(fn) for fn in make_steps(*build(0)))
    g, d = build(0)
    with tempfile.TemporaryDirectory() as tmp:
        diag = Diagnostics(Path(tmp) / "run", g=g, d=d, g_input=batches[0][1], d_input=batches[0][0], every=1)
        d_step, g_step = (diag.step(fn) for fn in make_steps(g, d))
        check_step = [0]

        def without(i: int) -> None:
            real, z = batches[i % len(batches)]
            [float(v.asnumpy()) for v in plain_d(real, z)], float(plain_g(z).asnumpy())

        def ordinary(i: int) -> None:
            real, z = batches[i % len(batches)]
            [float(v.asnumpy()) for v in d_step(real, z, check=False)], float(g_step(z, check=False).asnumpy())

        def check(i: int) -> None:
            real, z = batches[i % len(batches)]
            loss_d, d_x, d_g_z = (float(v.asnumpy()) for v in d_step(real, z, check=True))
            check_step[0] += 1
            diag.record(check_step[0], loss_d=loss_d, loss_g=float(g_step(z, check=True).asnumpy()), d_x=d_x,
                        d_g_z=d_g_z)

        settings = {"without": without, "ordinary": ordinary, "check": check}
        for fn in settings.values():  # compiles every twin
            for i in range(args.warmup):
                timed(fn, i)
        load_before = records.load_average()
        # Paired samples: each ordinary (and check) step right after a step without diagnostics, so that the load
        # of the shared machine, which changes over seconds, hits both alike; ratios are medians of the pairs.
        samples: dict[str, list[float]] = {"without": [], "ordinary": [], "check": []}
        pairs: dict[str, list[float]] = {"ordinary": [], "check": []}
        for r in range(args.rounds):
            for k in range(args.steps):
                for name in ("ordinary", "check") if k < args.checks else ("ordinary",):
                    base, t = timed(without, k), timed(settings[name], k)
                    samples["without"].append(base)
                    samples[name].append(t)
                    pairs[name].append(t / base)
        diag.close()
    step = {name: statistics.median(values) for name, values in samples.items()}
    ratio = {name: statistics.median(values) for name, values in pairs.items()}
    amortised = {str(n): 100 * (((n - 1) * ratio["ordinary"] + ratio["check"]) / n - 1) for n in INTERVALS}
    rows = [{"step": name, "samples": len(samples[name]), "step_s_median": step[name],
             "ratio_to_without": ratio.get(name), "overhead_pct": 100 * (ratio[name] - 1) if name in ratio else None,
             "ratio_to_without_quartiles": quartiles(pairs[name]) if name in pairs else None} for name in samples]
    context = {
        "what": "per-step seconds of scripts/examples/own_loop.py's loop (model-zoo DCGAN 16x16, batch 16, PyNative "
                "+ ms.jit, one D and one G update per step): without diagnostics, with gan.diagnostics.api on ordinary "
                "steps and on check steps (probed twin + record); each ordinary / check step timed right after a "
                "step without diagnostics, in one process; ratios are medians over those pairs",
        "rounds": args.rounds, "steps_per_round": args.steps, "checks_per_round": args.checks, "warmup": args.warmup,
        "amortised_overhead_pct": amortised, "mindspore": ms.__version__, "python": platform.python_version(),
    }
    result = records.record(rows, context=context, started=started, load_before=load_before,
                            wall_s=time.perf_counter() - start, cpu_s=time.process_time() - cpu0)
    records.write(args.json, [result])
    print(f"step (median): without {step['without'] * 1e3:.2f} ms, ordinary {step['ordinary'] * 1e3:.2f} ms, check "
          f"{step['check'] * 1e3:.2f} ms; paired ratios: ordinary {ratio['ordinary']:.3f}, check {ratio['check']:.3f}; "
          f"a check every 100 steps: {amortised['100']:+.2f}%; load {load_before:.1f}")
    return result


if __name__ == "__main__":
    main()
