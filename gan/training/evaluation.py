"""Periodic sample-quality evaluation of a run: when to measure, where the numbers go, what sweepers optimise.

Every `eval.interval` steps and at the last step the generator (EMA copy when enabled, BatchNorm in
inference mode) maps one fixed batch of `eval.num_samples` latents, and the task's metrics of those
samples are computed; for image data, every `eval.fid_every` steps (0: only at the last step) it also maps
`eval.fid_samples` fixed latents for the standard Inception metrics (gan.metrics.fid: fid, kid, kid_std, precision,
recall) against the first `eval.fid_reference` training images. The values of a step are written to
  - TensorBoard scalars `metrics/<name>`,
  - `run_dir/metrics.jsonl`, one record {"step", <name>: value...} per evaluation (the history; a resumed
    run first truncates it to the resumed step, gan.run.files),
  - `run_dir/metrics.json`, the latest values as a flat {name: number} (rewritten atomically; the file
    gan.analysis.dashboard and scripts/summarize_sweep.py read),
and the run's objective (`eval.objective`) is what train.py returns to a sweeper.

Objective directions (set `hydra.sweeper.direction` to match): minimise fid, kid, frechet_distance, class_kl,
reverse_kl, loss_g; maximise precision, recall, class_coverage, mean_confidence, modes, hq_fraction.
"""
from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Callable

import numpy as np

from gan.config.schema import POINT_DATASETS, Config, ConfigError, EvalConfig
from gan.core import streams
from gan.core.atomic import write_text_atomic
from gan.metrics.fid import METRIC_NAMES as FID_METRICS
from gan.run.files import METRICS_FILE, METRICS_HISTORY_FILE, append_jsonl, read_jsonl
from gan.run.tensorboard import TensorBoardWriter
from gan.training.tasks import Task

LOSS_OBJECTIVE = "loss_g"  # mean generator loss over the last 10% of steps (gan.training.outputs.RunSummary)
_GENERATE_CHUNK = 500  # latents per generator call: bounds memory, same values (BatchNorm in inference mode)
AUTO_FID_DATASETS = ("mnist", "fashion_mnist")  # eval.fid=null computes FID for these benchmarks only
logger = logging.getLogger("gan.training.evaluation")


def resolve_objective(cfg: EvalConfig, task: Task, fid: bool = False) -> str:
    """The metric name `eval.objective` means for this task (`fid`: whether the run computes gan.metrics.fid's metrics);
    ConfigError when it cannot be computed."""
    names = (*task.metric_names, *(FID_METRICS if fid else ()))
    allowed = (*names, LOSS_OBJECTIVE) if cfg.enabled else (LOSS_OBJECTIVE,)
    name = cfg.objective
    if name == "auto":
        if not cfg.enabled:
            return LOSS_OBJECTIVE
        return task.default_objective if task.metric_names else "fid" if fid else LOSS_OBJECTIVE
    if name not in allowed:
        reason = "" if cfg.enabled else " (metrics need eval.enabled=true)"
        raise ConfigError(f"eval.objective={name!r} is not available for this run{reason}; "
                          f"choose one of {['auto', *allowed]}")
    return name


class EvaluationInterrupted(Exception):
    """The run was asked to stop (Ctrl-C, SIGTERM) while an evaluation computed Inception features."""


class StoppableExtractor:
    """gan.metrics.inception.FeatureExtractor (built on first use) whose `features` asks `stop()` before each batch
    of its batch_size and raises EvaluationInterrupted when it says so: a run asked to stop leaves an evaluation of
    thousands of images (reference or samples) within one batch instead of minutes later. Verifies the pinned
    Inception archive when made (InceptionError), as gan.metrics.fid.StandardMetrics.check does."""

    def __init__(self, stop: Callable[[], bool], **options) -> None:
        from gan.metrics import inception

        inception.verify_archive(inception.archive_path(options.get("archive")))
        self._stop, self._options, self._inner = stop, options, None

    @property
    def inner(self):
        """The FeatureExtractor (the Inception network loads here, once)."""
        if self._inner is None:
            from gan.metrics import inception

            self._inner = inception.FeatureExtractor(**self._options)
        return self._inner

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.inner, name)  # convention, sha256, describe

    def features(self, images: np.ndarray, progress: bool = False) -> np.ndarray:
        """The inner extractor's features of `images`, one batch at a time, stopping between batches if asked."""
        size = self._options["batch_size"]
        parts = []
        for start in range(0, len(images), size):
            if self._stop():
                raise EvaluationInterrupted(f"Inception features stopped after {start} of {len(images)} images")
            parts.append(self.inner.features(images[start:start + size]))
        return np.concatenate(parts) if parts else self.inner.features(images)


def standard_metrics(conf: Config, task: Task, say: Callable[[str], None], stop: Callable[[], bool] = lambda: False):
    """The run's gan.metrics.fid.StandardMetrics against its first eval.fid_reference training images, or None: for 2D
    data, with eval.enabled=false or eval.fid=false, in a dry run (after checking the weights), and with
    eval.fid=null for data other than AUTO_FID_DATASETS or when the Inception weights are not installed (said
    once, with the install command). eval.fid=true without them raises InceptionError now, before the first step.
    Its features stop between batches once `stop()` is true (StoppableExtractor)."""
    from gan.metrics.inception import DEFAULT_BATCH, InceptionError

    cfg = conf.eval
    if not cfg.enabled or cfg.fid is False or conf.data.name in POINT_DATASETS:
        return None
    if cfg.fid is None and conf.data.name not in AUTO_FID_DATASETS:
        say(f"eval: FID/KID/precision-recall are off by default for data={conf.data.name} (on for "
            f"{'/'.join(AUTO_FID_DATASETS)}); eval.fid=true computes them at the end of the run")
        return None
    from gan.metrics.fid import StandardMetrics

    data, size = task.data, conf.model.image_size
    count = min(cfg.fid_reference, data.source_size)
    name = f"{conf.data.name} training images[:{count}] {size}x{size}"
    try:
        extractor = StoppableExtractor(stop, convention=cfg.fid_convention,
                                       batch_size=min(DEFAULT_BATCH, cfg.fid_samples))
    except InceptionError as err:
        if cfg.fid:
            raise
        say(f"eval: FID/KID/precision-recall off ({err})")
        return None
    metrics = StandardMetrics(lambda: data.source_images(count), name, extractor=extractor, say=say)
    if conf.train.dry_run:
        say(f"eval: dry run: the Inception weights are in place; FID/KID/precision-recall on {cfg.fid_samples} "
            f"samples are not computed")
        return None
    say(f"eval: FID/KID/precision-recall ({cfg.fid_convention} convention) on {cfg.fid_samples} samples against "
        f"{name}, " + (f"every {cfg.fid_every} steps and at the end" if cfg.fid_every else "at the end of the run"))
    return metrics


def _generate_all(generate: Callable[[np.ndarray], np.ndarray], latents: np.ndarray) -> np.ndarray:
    """generate(latents) in chunks of _GENERATE_CHUNK (bounded memory, the same values)."""
    return np.concatenate([generate(latents[i:i + _GENERATE_CHUNK]) for i in range(0, len(latents), _GENERATE_CHUNK)])


class Evaluator:
    """Measures the task's metrics on fixed latents at `eval.interval` and at the end, the standard Inception
    metrics at `eval.fid_every` and at the end, and records them."""

    def __init__(self, conf: Config, task: Task, run_dir: str | Path, tensorboard: TensorBoardWriter,
                 latents: np.ndarray, stop: Callable[[], bool] = lambda: False) -> None:
        self.active = conf.eval.enabled and bool(task.metric_names)
        self.fid = standard_metrics(conf, task, tensorboard.write, stop)
        self.objective = resolve_objective(conf.eval, task, self.fid is not None)
        self.interval, self.fid_every = conf.eval.interval, conf.eval.fid_every
        self.task = task
        self.run_dir = Path(run_dir)
        self.tensorboard = tensorboard
        self.latents = latents
        self.fid_latents = streams.latents(conf.seed, 0, streams.Purpose.FID_Z, conf.eval.fid_samples,
                                            conf.model.nz) if self.fid else None
        self.latest: dict[str, float] = {}  # every metric's latest value (a resumed run starts from its history)
        history = self.run_dir / METRICS_HISTORY_FILE
        for record in read_jsonl(history) if history.exists() else []:
            self.latest.update({k: v for k, v in record.items() if k != "step"})
        self.fid_note = ""
        if self.active:
            task.prepare(tensorboard.write)

    def due(self, step: int, end: int) -> bool:
        """Whether `step` (1-based count of finished steps) is an evaluation step of either kind."""
        return self._task_due(step, end) or self._fid_due(step, end)

    def _task_due(self, step: int, end: int) -> bool:
        return self.active and (step % self.interval == 0 or step == end)

    def _fid_due(self, step: int, end: int) -> bool:
        return self.fid is not None and (step == end or (self.fid_every > 0 and step % self.fid_every == 0))

    def evaluate(self, step: int, generate: Callable[[np.ndarray], np.ndarray], end: int) -> dict[str, float]:
        """The metrics due at `step` of a run ending at `end`, logged to TensorBoard, metrics.jsonl and metrics.json
        (every metric's latest value); returns the latest values. EvaluationInterrupted (nothing recorded) when the
        run is asked to stop during the Inception features."""
        values: dict[str, float] = {}
        if self._task_due(step, end):
            values.update(self.task.metrics(_generate_all(generate, self.latents)))
            self.tensorboard.write(f"step {step} metrics: " + ", ".join(f"{k}={v:.4g}" for k, v in values.items()))
        if self._fid_due(step, end):
            values.update(self._standard(step, generate))
        self.tensorboard.scalars(step, {f"metrics/{name}": value for name, value in values.items()})
        append_jsonl(self.run_dir / METRICS_HISTORY_FILE, {"step": step, **values})
        self.latest.update(values)
        write_text_atomic(self.run_dir / METRICS_FILE, json.dumps(self.latest, indent=1, allow_nan=False) + "\n")
        return dict(self.latest)

    def _standard(self, step: int, generate: Callable[[np.ndarray], np.ndarray]) -> dict[str, float]:
        """fid, kid, kid_std, precision, recall of eval.fid_samples samples, with a console line naming the
        convention, the counts and the cost."""
        start = time.perf_counter()
        result = self.fid(_generate_all(generate, self.fid_latents))
        values = {name: result[name] for name in FID_METRICS}
        about = self.fid.describe()
        self.fid_note = (f"{about['convention']} convention, {result['n_generated']} samples vs {about['reference']}, "
                         f"Inception sha256 {about['extractor_sha256'][:12]}")
        self.tensorboard.write(f"step {step} FID ({self.fid_note}; {time.perf_counter() - start:.0f} s): "
                            + ", ".join(f"{k}={v:.4g}" for k, v in values.items()))
        return values
