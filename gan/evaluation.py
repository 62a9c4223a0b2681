"""Periodic sample-quality evaluation of a run: when to measure, where the numbers go, what sweepers optimise.

Every `eval.interval` steps and at the last step the generator (EMA copy when enabled, BatchNorm in
inference mode) maps one fixed batch of `eval.num_samples` latents, and the task's metrics of those
samples are written to
  - TensorBoard scalars `metrics/<name>`,
  - `run_dir/metrics.jsonl`, one record {"step", <name>: value...} per evaluation (the history; a resumed
    run first truncates it to the resumed step, gan.run_files),
  - `run_dir/metrics.json`, the latest values as a flat {name: number} (rewritten atomically; the file
    gan.dashboard and scripts/summarize_sweep.py read),
and the run's objective (`eval.objective`) is what train.py returns to a sweeper.

Objective directions (set `hydra.sweeper.direction` to match): minimise frechet_distance, class_kl,
reverse_kl, loss_g; maximise class_coverage, mean_confidence, modes, hq_fraction.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import numpy as np

from gan.atomic import write_text_atomic
from gan.config import Config, ConfigError, EvalConfig
from gan.run_files import METRICS_FILE, METRICS_HISTORY_FILE, append_jsonl
from gan.tasks import Task
from gan.tensorboard_writer import TensorBoardWriter

LOSS_OBJECTIVE = "loss_g"  # mean generator loss over the last 10% of steps (gan.outputs.RunSummary)
_GENERATE_CHUNK = 500  # latents per generator call: bounds memory, same values (BatchNorm in inference mode)


def resolve_objective(cfg: EvalConfig, task: Task) -> str:
    """The metric name `eval.objective` means for this task; ConfigError when it cannot be computed."""
    allowed = (*task.metric_names, LOSS_OBJECTIVE) if cfg.enabled else (LOSS_OBJECTIVE,)
    name = cfg.objective
    if name == "auto":
        return task.default_objective if cfg.enabled else LOSS_OBJECTIVE
    if name not in allowed:
        reason = "" if cfg.enabled else " (metrics need eval.enabled=true)"
        raise ConfigError(f"eval.objective={name!r} is not available for this run{reason}; "
                          f"choose one of {['auto', *allowed]}")
    return name


class Evaluator:
    """Measures the task's metrics on fixed latents at `eval.interval` and at the end, and records them."""

    def __init__(self, conf: Config, task: Task, run_dir: str | Path, tensorboard: TensorBoardWriter,
                 latents: np.ndarray) -> None:
        self.objective = resolve_objective(conf.eval, task)
        self.active = conf.eval.enabled and bool(task.metric_names)
        self.interval = conf.eval.interval
        self.task = task
        self.run_dir = Path(run_dir)
        self.tensorboard = tensorboard
        self.latents = latents
        if self.active:
            task.prepare(tensorboard.write)

    def due(self, step: int, end: int) -> bool:
        """Whether `step` (1-based count of finished steps) is an evaluation step."""
        return self.active and (step % self.interval == 0 or step == end)

    def evaluate(self, step: int, generate: Callable[[np.ndarray], np.ndarray]) -> dict[str, float]:
        """Metrics of generate(latents) at `step`, logged to TensorBoard, metrics.jsonl and metrics.json."""
        samples = np.concatenate([generate(self.latents[i:i + _GENERATE_CHUNK])
                                  for i in range(0, len(self.latents), _GENERATE_CHUNK)])
        values = self.task.metrics(samples)
        self.tensorboard.scalars(step, {f"metrics/{name}": value for name, value in values.items()})
        append_jsonl(self.run_dir / METRICS_HISTORY_FILE, {"step": step, **values})
        write_text_atomic(self.run_dir / METRICS_FILE, json.dumps(values, indent=1, allow_nan=False) + "\n")
        self.tensorboard.write(f"step {step} metrics: " + ", ".join(f"{k}={v:.4g}" for k, v in values.items()))
        return values
