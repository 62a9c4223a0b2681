"""Overhead of dead-channel diagnostics on DCGAN training (D step + G step), measured side by side.

Two GANTrainers from the default config (train.py's composition, data=shapes for fixed random images)
run in the same process: one with diagnostics.enabled=false, one with diagnostics on. The second runs
its ordinary steps (jitted without probes) and its check steps (the probed twin: same update plus the
statistics), timed round-robin with the first so all see the same machine load. The host cost of a
check (read + reset the probes, build the record, write TensorBoard and diagnostics.jsonl) is timed too:

    overhead = ((interval - 1) * ordinary + check_step + check_host) / interval / without - 1

`overhead_pct_checks_amortised` counts only what the check steps add, (check_step + check_host -
ordinary) / interval / without: ordinary steps run the same graph as a trainer without diagnostics, so on
a noisy machine this is the steadier estimate. The probed twin's one-time compile (its first call minus
a check step) is reported separately.

    python scripts/bench/bench_diagnostics.py --json bench_diagnostics.json [--interval 100] [--batch-size 64]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("GLOG_v", "3")

import numpy as np  # noqa: E402
from tensorboardX import SummaryWriter  # noqa: E402

from gan.analysis.channels import Criteria  # noqa: E402
from gan.config.schema import (
    compose_config,  # noqa: E402
    to_config,  # noqa: E402
)
from gan.core.atomic import write_text_atomic  # noqa: E402
from gan.core.streams import Purpose, latents  # noqa: E402
from gan.diagnostics.probes import TrainingDiagnostics  # noqa: E402
from gan.training.loop import GANTrainer  # noqa: E402
from gan.training.runtime import setup_runtime  # noqa: E402


def timed(fn) -> float:
    """Seconds one call of fn takes."""
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> dict:
    """Time both trainers, print a summary line, write the result to --json."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", required=True, type=Path, help="write the result here")
    parser.add_argument("--model", default="dcgan32", choices=("dcgan32", "dcgan64"))
    parser.add_argument("--conv-impl", default="auto", choices=("auto", "native", "gemm"))
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--interval", type=int, default=None,
                        help="diagnostics interval in steps (default: the config's diagnostics.interval)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps per trainer (graph compilation)")
    parser.add_argument("--steps", type=int, default=6, help="timed rounds (medians are reported)")
    args = parser.parse_args(argv)
    for key in ("batch_size", "interval", "warmup", "steps"):
        value = getattr(args, key)
        if value is not None and value < 1:
            parser.error(f"--{key.replace('_', '-')}={value} is not allowed: it must be >= 1")

    overrides = [f"model={args.model}", "data=shapes", f"train.batch_size={args.batch_size}",
                 f"model.conv_impl={args.conv_impl}"]
    on_cfg = to_config(compose_config(overrides + ["diagnostics.enabled=true"]))
    off_cfg = to_config(compose_config(overrides + ["diagnostics.enabled=false"]))
    interval = args.interval or on_cfg.diagnostics.interval
    setup_runtime(on_cfg.runtime)
    size, batch, channels, nz = on_cfg.model.image_size, on_cfg.train.batch_size, on_cfg.data.channels, on_cfg.model.nz
    real = np.random.default_rng(0).uniform(-1, 1, (batch, channels, size, size)).astype(np.float32)
    off, on = GANTrainer(off_cfg, channels), GANTrainer(on_cfg, channels)

    for i in range(args.warmup):
        z = latents(0, i, Purpose.Z, batch, nz)
        off.train_step(real, z)
        on.train_step(real, z)
    first_probed = timed(lambda: on.train_step(real, latents(0, 0, Purpose.Z, batch, nz), probe=True))

    times: dict[str, list[float]] = {"without": [], "ordinary": [], "check_step": [], "check_host": []}
    with tempfile.TemporaryDirectory() as run_dir:
        writer = SummaryWriter(str(Path(run_dir) / "tensorboard"))
        diagnostics = TrainingDiagnostics(on.probes, Criteria.from_config(on_cfg.diagnostics), interval, writer,
                                          run_dir)
        diagnostics.check(0)  # reset what the compile call accumulated
        for i in range(args.steps):
            z = latents(0, args.warmup + i, Purpose.Z, batch, nz)
            times["without"].append(timed(lambda: off.train_step(real, z)))
            times["ordinary"].append(timed(lambda: on.train_step(real, z)))
            times["check_step"].append(timed(lambda: on.train_step(real, z, probe=True)))
            times["check_host"].append(timed(lambda: diagnostics.check(i + 1)))
        record = diagnostics.last
        writer.close()

    med = {key: statistics.median(values) for key, values in times.items()}
    amortised = ((interval - 1) * med["ordinary"] + med["check_step"] + med["check_host"]) / interval
    result = {
        "benchmark": "diagnostics_overhead", "model": args.model, "conv_impl": args.conv_impl,
        "batch_size": batch, "interval": interval, "steps": args.steps, "layers": len(on.probes),
        "step_s_without": med["without"], "step_s_ordinary": med["ordinary"], "step_s_check": med["check_step"],
        "check_host_s": med["check_host"], "step_s_amortised": amortised,
        "overhead_pct_ordinary_step": 100 * (med["ordinary"] / med["without"] - 1),
        "overhead_pct_check_step": 100 * ((med["check_step"] + med["check_host"]) / med["without"] - 1),
        "overhead_pct_at_interval": 100 * (amortised / med["without"] - 1),
        "overhead_pct_checks_amortised": 100 * (med["check_step"] + med["check_host"] - med["ordinary"])
        / interval / med["without"],
        "probed_compile_s": first_probed - med["check_step"],
        "samples_s": times, "last_record_dead_frac": {k: v["dead_frac"] for k, v in record["layers"].items()},
    }
    write_text_atomic(args.json, json.dumps(result, indent=2))
    print(f"{args.model} batch {batch}: step {med['without'] * 1e3:.0f} ms without diagnostics, "
          f"{med['ordinary'] * 1e3:.0f} ms ordinary, {med['check_step'] * 1e3:.0f} ms + "
          f"{med['check_host'] * 1e3:.0f} ms host at a check; every {interval} steps -> overhead "
          f"{result['overhead_pct_at_interval']:.1f}% ({result['overhead_pct_checks_amortised']:.2f}% from the checks "
          f"alone; one-time probed compile {result['probed_compile_s']:.1f} s)")
    return result


if __name__ == "__main__":
    main()
