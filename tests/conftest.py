"""Shared fixtures: a composed config, a tiny training run on procedural shapes (fast on 2 CPU cores) and the tiny
configs every test builds on (TINY and its variants, as override lists)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

import pytest

from gan.config.schema import Config, compose_config, to_config

MAX_WORKERS = 4  # past 4 the longest test files bound the suite; each worker is another MindSpore process in memory

# A DCGAN-32 with 8 channels per layer on 64 procedural shapes, batch 8: seconds per run.
TINY = ["model.ngf=8", "model.ndf=8", "model.nz=16", "model.conv_impl=native", "train.batch_size=8",
        "data=shapes", "data.num_images=64", "train.num_samples=16", "train.log_every=1", "train.lr=1e-3"]
# The variants tests share, each TINY with overrides on top (the last value of a key wins); a test adds its own.
TINY_ONEDNN = [*TINY, "model.conv_impl=onednn"]  # oneDNN convolutions: bf16, conv_act, NHWC
TINY_TRAINER = [*TINY, "model.ngf=4", "model.ndf=4", "model.nz=8", "train.batch_size=4"]  # a GANTrainer stepped by hand
TINY_CHECKPOINT = [*TINY, "data.num_images=32", "train.dry_run=true", "train.ema_beta=0.5"]  # what the tools read
# The 2D recipe (experiment=ring8: MLPs on a ring of 8 Gaussians) at 8 units per layer, with TINY's run settings.
TINY_2D = ["experiment=ring8", "model.ngf=8", "model.ndf=8", "train.batch_size=16", "train.num_samples=16",
           "train.log_every=1", "train.lr=1e-3"]


def pytest_xdist_auto_num_workers(config) -> int:
    """`-n auto` (pyproject.toml): one worker per core this process may run on, at most MAX_WORKERS."""
    return max(1, min(len(os.sched_getaffinity(0)), MAX_WORKERS))


def pytest_terminal_summary(terminalreporter) -> None:
    """Skips once per reason with their count (pytest's -rs lists one line per test location): on a CPU without
    bfloat16 instructions every bf16 test skips for the same reason, which reads as one line, not a hundred."""
    reasons: dict[str, int] = {}
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        reason = reason.removeprefix("Skipped: ")
        reasons[reason] = reasons.get(reason, 0) + 1
    if reasons:
        terminalreporter.section("skipped, by reason")
        for reason, count in sorted(reasons.items(), key=lambda item: -item[1]):
            terminalreporter.line(f"{count:5d}  {reason}")


@pytest.fixture(scope="session")
def tiny_overrides() -> list[str]:
    """The TINY overrides (for runs in a subprocess)."""
    return list(TINY)


@pytest.fixture(scope="session")
def tiny_onednn() -> list[str]:
    """TINY on oneDNN convolutions (with tests.helpers.needs_onednn)."""
    return list(TINY_ONEDNN)


@pytest.fixture(scope="session")
def tiny_trainer() -> list[str]:
    """TINY at 4 channels per layer, batch 4: a GANTrainer a test builds and steps on its own arrays."""
    return list(TINY_TRAINER)


@pytest.fixture(scope="session")
def tiny_checkpoint() -> list[str]:
    """TINY as a 2-step dry run with an EMA generator: the checkpoint that generate, export and quantize read."""
    return list(TINY_CHECKPOINT)


@pytest.fixture(scope="session")
def tiny_2d() -> list[str]:
    """The 2D recipe (ring8 MLPs), tiny."""
    return list(TINY_2D)


@pytest.fixture(scope="session")
def config() -> Callable[..., Config]:
    """config(*overrides): the validated Config `python train.py OVERRIDES...` would run."""
    return lambda *overrides: to_config(compose_config(list(overrides)))


@pytest.fixture(scope="session")
def tiny_run() -> Callable:
    """tiny_run(run_dir, *overrides): train the TINY model (fp32) in run_dir; returns the RunSummary."""
    from gan.training.loop import run

    def train(run_dir: Path, *overrides: str):
        return run(compose_config(TINY + list(overrides)), run_dir)

    return train


@pytest.fixture(scope="session")
def own_loop_run(tmp_path_factory) -> Path:
    """The run directory of scripts/examples/own_loop.py (a user's own loop with gan.diagnostics.api): 6 steps, a check
    every 2 (seconds)."""
    from tests.helpers import run_script

    run_dir = tmp_path_factory.mktemp("own_loop") / "run"
    done = run_script("scripts/examples/own_loop.py", "--steps", "6", "--every", "2", "--run-dir", str(run_dir))
    assert done.returncode == 0, done.stderr[-3000:]
    return run_dir
