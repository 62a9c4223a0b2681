"""Everything that happens after a training step, behind one call (`RunOutputs.after_step`): the non-finite
policy, rank checksums, dead-channel checks, logging (TensorBoard, losses.jsonl, the progress line), sample
grids, evaluation and checkpoints; then the end of a run (interrupt checkpoint, HParams, the run's dashboard
page and the end-of-run summary on the console).

Rank 0 writes every file; the other ranks train, join the collectives of the checks, and write nothing.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
from omegaconf import OmegaConf

from gan.analysis.channels import Criteria
from gan.analysis.dashboard import write_dashboard
from gan.config.schema import Config
from gan.data.sources import DataError
from gan.diagnostics.probes import TrainingDiagnostics, run_hparams
from gan.models.checkpoint import TRAINING_FORMAT, CheckpointError, checkpoint_path, prune_checkpoints, save_checkpoint
from gan.run.directory import write_status
from gan.run.files import LOSSES_FILE, append_event, append_jsonl, losses_record, nonfinite_detail
from gan.run.grids import save_png
from gan.run.tensorboard import TensorBoardWriter
from gan.training.distributed import World, append_checksum
from gan.training.evaluation import EvaluationInterrupted, Evaluator
from gan.training.tasks import Task

log = logging.getLogger(__name__)


DYNAMIC_SCALING = ("fp16",)  # precisions whose loss scale falls after a non-finite step (gan.training.loop)


class NonFiniteTrainingError(RuntimeError):
    """Training produced non-finite gradients for too many consecutive steps."""


KERNEL_GONE = "couldn't find the AOT binary"  # MindSpore's error when a Custom op's compiled library is missing


class KernelCacheError(RuntimeError):
    """A compiled kernel library vanished from the kernel cache while the run was going."""


def kernel_library_gone(err: BaseException) -> bool:
    """Whether `err` is MindSpore failing to load a Custom op's library (not yet reported as KernelCacheError)."""
    return isinstance(err, RuntimeError) and not isinstance(err, KernelCacheError) and KERNEL_GONE in str(err)


@dataclass
class RunSummary:
    """What a run did: per-step losses, counters, where outputs went, and the sweep objective."""

    run_dir: Path
    start_step: int
    end_step: int
    history: list = field(default_factory=list)  # gan.training.loop.StepStats, one per step
    skipped_steps: int = 0
    unreadable_images: int = 0  # image files that became unreadable during the run (skipped)
    interrupted: bool = False
    checkpoint: Path | None = None  # the newest checkpoint of the run (the one resumed from until a save)
    metrics: dict[str, float] = field(default_factory=dict)  # every metric's latest value (gan.training.evaluation)
    metrics_note: str = ""  # what the FID numbers are: convention, sample counts, reference, extractor
    objective_name: str = "loss_g"
    train_seconds: float = 0.0  # wall time of this run's steps and their inputs, without the outputs between them
    elapsed_before: float = 0.0  # wall time of the earlier sessions up to the checkpoint resumed from (elapsed_s)

    @property
    def objective(self) -> float:
        """The final value of metric `objective_name` (NaN if never evaluated), or for "loss_g" the mean
        generator loss over the last 10% of this run's steps (lower: G fools D more)."""
        if self.objective_name != "loss_g":
            return float(self.metrics.get(self.objective_name, float("nan")))
        tail = self.history[-max(1, len(self.history) // 10):]
        return float(np.mean([s.loss_g for s in tail])) if tail else float("nan")


class RunOutputs:
    """The outputs of one run from `start` to `end`; `trainer` is the gan.training.loop.GANTrainer, `meta` the meta of
    the checkpoint `resumed_from` (empty and None for a new run), `stop` whether the run was asked to stop (Ctrl-C,
    SIGTERM: an evaluation then ends early)."""

    def __init__(self, conf: Config, run_dir: Path, task: Task, trainer, world: World, start: int, end: int,
                 meta: dict, resumed_from: Path | None, eval_latents: np.ndarray, fixed_latents: np.ndarray,
                 stop: Callable[[], bool] = lambda: False) -> None:
        t = conf.train
        self.conf, self.run_dir, self.task = conf, run_dir, task
        self.trainer, self.world, self.end = trainer, world, end
        self.fixed_z = fixed_latents
        self.writes = world.is_main
        self.resumed_from = resumed_from
        self.data_fingerprint = task.data.fingerprint()  # stored in every checkpoint: a resume compares it
        # A dry run exercises every output on each of its 2 steps.
        self.log_every, self.sample_every, self.ckpt_every = (1, 1, 1) if t.dry_run else (
            t.log_every, t.sample_every, t.ckpt_every)
        self.yaml = OmegaConf.to_yaml(OmegaConf.structured(conf))
        self.summary = RunSummary(run_dir, start, start, skipped_steps=int(meta.get("skipped_steps", 0)),
                                  checkpoint=resumed_from, elapsed_before=_elapsed_of(meta, resumed_from))
        self.tensorboard = TensorBoardWriter(run_dir, end, start) if self.writes else None
        self.evaluator = Evaluator(conf, task, run_dir, self.tensorboard, eval_latents, stop) if self.writes else None
        self.evaluation_interrupted = False  # a stop request (`stop()`) ended an evaluation: the loop stops too
        if self.evaluator is not None:
            self.summary.objective_name = self.evaluator.objective
        self._session_start = time.perf_counter()  # RunOutputs.elapsed_s counts from here
        self.diagnostics = TrainingDiagnostics(trainer.probes, Criteria.from_config(conf.diagnostics),
                                               1 if t.dry_run else conf.diagnostics.interval,
                                               self.tensorboard and self.tensorboard.writer, run_dir,
                                               trainer.recycle if trainer.recyclers else None)
        if "diagnostics" in meta:
            self.diagnostics.load_state_dict(meta["diagnostics"])  # dead-streak history for "persistently dead"
        self._consecutive_bad = 0
        self._last_time, self._last_step = time.perf_counter(), start
        real_png = run_dir / "samples" / "real.png"
        if self.writes and not real_png.exists():
            save_png(task.picture(task.data.sample(t.num_samples)), real_png)
        self._outputs_done = time.perf_counter()  # training resumes: RunSummary.train_seconds counts from here

    def announce(self) -> None:
        """Print the resolved config, what each network builds (gan.config.plan), the run directory and where the run
        resumed."""
        if self.world.size > 1:
            print(f"rank {self.world.rank} of {self.world.size} (data parallel)", flush=True)
        start = self.summary.start_step
        resumed = f"\nresumed from {self.resumed_from} at step {start}" if self.resumed_from else ""
        if self.resumed_from and start == self.end:
            resumed += f": the run is already at its last step ({self.end}), nothing to train"
        plan = self.trainer.plan.describe().replace("\n", "\n  ")
        print(self.yaml + f"build plan:\n  {plan}\nrun directory: {self.run_dir.resolve()}{resumed}", flush=True)

    def batches(self, start_step: int) -> Iterator[np.ndarray]:
        """The data stream from `start_step`; when the data breaks under the run (gan.data.sources.DataError: too many
        images unreadable), rank 0 checkpoints the last finished step and the error says where."""
        stream = self.task.data.batches(start_step)
        while True:
            try:
                batch = next(stream)
            except DataError as err:
                s = self.summary
                if self.writes and s.end_step > s.start_step:
                    s.checkpoint = self.save(s.end_step)
                saved = f"saved {s.checkpoint} (step {s.end_step})" if s.checkpoint else "no checkpoint to save"
                raise DataError(f"training stopped after step {s.end_step}: {err}; {saved}") from None
            yield batch

    def probe_due(self, step: int) -> bool:
        """Whether step `step` (1-based) is a dead-channel check step (the trainer runs its probed twin)."""
        return self.diagnostics.due(step)

    def after_step(self, done: int, stats, real: np.ndarray, z: np.ndarray) -> None:
        """Everything after step `done` (1-based); NonFiniteTrainingError when too many steps in a row were skipped."""
        self.summary.train_seconds += time.perf_counter() - self._outputs_done
        try:
            self._after_step(done, stats, real, z)
        except RuntimeError as err:
            if kernel_library_gone(err):
                raise self.kernels_gone(err, done) from err  # the trainer holds step `done`'s state: save it
            raise
        finally:
            self._outputs_done = time.perf_counter()

    def _after_step(self, done: int, stats, real: np.ndarray, z: np.ndarray) -> None:
        s = self.summary
        if self.conf.runtime.rank_checksums:
            append_checksum(self.run_dir, self.world, done, self.trainer.replicated_arrays(),
                            {"loss_d": stats.loss_d, "loss_g": stats.loss_g})
        s.history.append(stats)
        s.end_step = done
        self._check_finite(done, stats, real, z)
        self._note_unreadable(done)
        if self.diagnostics.due(done):
            self.diagnostics.check(done, self.world.mean_array_fields)
        if not self.writes:
            return
        if self._due(done, self.log_every):
            self._log(done, stats)
        if self._due(done, self.sample_every):
            self._sample(done)
        if self.evaluator.due(done, self.end):
            try:
                s.metrics = self.evaluator.evaluate(done, self.trainer.generate, self.end)
            except EvaluationInterrupted as stopped:
                self.evaluation_interrupted = True
                self.tensorboard.write(f"step {done}: evaluation stopped ({stopped}); its metrics are not recorded")
                return  # the loop checkpoints this step as interrupted
            s.metrics_note = self.evaluator.fid_note
        if self._due(done, self.ckpt_every):
            s.checkpoint = self.save(done)

    def interrupted(self, done: int) -> None:
        """Ctrl-C: checkpoint at step `done` and say how to resume."""
        self.summary.interrupted = True
        if self.writes:
            self.summary.checkpoint = self.save(done)
            self.tensorboard.write(f"interrupted: saved {self.summary.checkpoint}; resume with train.resume=auto")

    def kernels_gone(self, err: RuntimeError, done: int | None) -> KernelCacheError:
        """The error for a kernel library deleted under the run (its cache folder removed), after checkpointing step
        `done` (None: the state is not that of a finished step, so the newest checkpoint is named instead)."""
        from ops.build import cache_dir

        if self.writes and done is not None:
            self.summary.checkpoint = self.save(done)
        missing = str(err).split(KERNEL_GONE, 1)[1].split("\n", 1)[0].strip(" :")
        kept = (f"saved {self.summary.checkpoint} (step {done})" if done is not None and self.summary.checkpoint
                else f"the newest checkpoint is {self.summary.checkpoint}" if self.summary.checkpoint
                else "this run has no checkpoint yet")
        return KernelCacheError(f"training stopped after step {self.summary.end_step}: the compiled kernel {missing} "
                                f"is gone (the kernel cache {cache_dir()} was deleted or emptied while the run was "
                                f"going); {kept}; rerun the same command with train.resume=auto, which builds the "
                                f"kernels again")

    def finish(self) -> None:
        """The HParams record of this run's settings and final numbers (rank 0)."""
        if self.writes and self.summary.history:
            last = self.summary.history[-1]
            self.diagnostics.log_hparams(run_hparams(self.conf), {"final/loss_d": last.loss_d,
                                                                  "final/loss_g": last.loss_g})

    def close(self) -> None:
        """Flush and close TensorBoard (also after an error)."""
        if self.tensorboard is not None:
            self.tensorboard.close()

    def print_summary(self) -> None:
        """Rank 0 writes the run's dashboard page, prints the end-of-run summary and records how the run ended
        (gan.run.directory.write_status)."""
        if self.writes:
            dashboard = write_dashboard(self.run_dir)
            print(end_of_run_summary(self.summary, self.diagnostics, self.run_dir, dashboard), flush=True)
            write_status(self.run_dir, "interrupted" if self.summary.interrupted else "finished",
                         step=self.summary.end_step, elapsed_s=round(self.elapsed_s(), 1))

    def elapsed_s(self) -> float:
        """Wall time of the run so far (compiling, steps, outputs, evaluations): this session's, unless it trained
        nothing (a finished run started again), plus the earlier sessions' up to the checkpoint it resumed from, so
        the steps a kill made it redo count once."""
        s = self.summary
        return s.elapsed_before + (time.perf_counter() - self._session_start if s.end_step > s.start_step else 0.0)

    def save(self, step: int) -> Path:
        """Checkpoint the full training state at `step` and prune to train.keep_last."""
        meta = {"format": TRAINING_FORMAT, "step": step, "seed": self.conf.seed, "channels": self.task.data.channels,
                "skipped_steps": self.summary.skipped_steps, "config": self.yaml,
                "diagnostics": self.diagnostics.state_dict(), "data": self.data_fingerprint,
                "elapsed_s": self.elapsed_s()}
        path = checkpoint_path(self.run_dir, step)
        save_checkpoint(path, self.trainer.state_arrays(), meta)
        prune_checkpoints(self.run_dir, self.conf.train.keep_last)
        return path

    def _due(self, done: int, every: int) -> bool:
        return done % every == 0 or done == self.end

    def _check_finite(self, done: int, stats, real: np.ndarray, z: np.ndarray) -> None:
        """Count skipped (non-finite) steps, each an event; stop when training cannot recover (`_unrecoverable`):
        checkpoint, a `nonfinite_stop` event, and NonFiniteTrainingError naming the first non-finite layer."""
        self._consecutive_bad = 0 if stats.finite else self._consecutive_bad + 1
        self.summary.skipped_steps += not stats.finite
        if self.writes and not stats.finite:
            append_event(self.run_dir, done, "nonfinite_skip", nonfinite_detail(stats))
        why = self._unrecoverable(done)
        if why is None:
            return
        where = self.trainer.find_nonfinite(real, z)
        if self.writes:
            self.summary.checkpoint = self.save(done)
            append_event(self.run_dir, done, "nonfinite_stop", {"steps": self._consecutive_bad, "layer": where,
                                                                "checkpoint": self.summary.checkpoint.name})
        saved = f"; saved {self.summary.checkpoint}" if self.summary.checkpoint else ""
        raise NonFiniteTrainingError(
            f"training stopped at step {done}: {why} (precision={self.conf.precision.name}, loss scale D "
            f"{stats.loss_scale_d:g} / G {stats.loss_scale_g:g}, losses D {stats.loss_d:g} / G {stats.loss_g:g}); "
            f"first non-finite activation: {where}{saved}; lower train.lr, or resume from an earlier checkpoint")

    def _unrecoverable(self, done: int) -> str | None:
        """Why training cannot recover from its non-finite steps, or None: precision.max_nonfinite_steps of them in
        a row, or (without dynamic loss scaling, which could still end the streak) a run ending in one."""
        n, precision = self._consecutive_bad, self.conf.precision
        if n >= precision.max_nonfinite_steps:
            return f"{n} consecutive steps had non-finite gradients"
        if n and done == self.end and precision.name not in DYNAMIC_SCALING:
            return (f"its last {n} step(s) had non-finite gradients, and precision={precision.name} has no loss "
                    f"scale to lower, so further steps would be too")
        return None

    def _note_unreadable(self, done: int) -> None:
        """Images that became unreadable (skipped by the data source): a warning and a `data_skip` event each."""
        for name, why in self.task.data.new_unreadable():
            self.summary.unreadable_images += 1
            log.warning("step %d: image %s became unreadable (%s); skipped, %d so far", done, name, why,
                        self.summary.unreadable_images)
            if self.writes:
                append_event(self.run_dir, done, "data_skip",
                             {"file": name, "reason": why, "count": self.summary.unreadable_images})

    def _log(self, done: int, stats) -> None:
        now = time.perf_counter()
        step_time = (now - self._last_time) / (done - self._last_step)
        img_per_s = self.conf.train.batch_size / step_time
        self.tensorboard.scalars(done, {
            "loss/d": stats.loss_d, "loss/g": stats.loss_g, "prob/D_x": stats.d_real, "prob/D_G_z": stats.d_fake,
            "grad_norm/d": stats.grad_norm_d, "grad_norm/g": stats.grad_norm_g, "loss_scale/d": stats.loss_scale_d,
            "loss_scale/g": stats.loss_scale_g, "skipped_steps": self.summary.skipped_steps,
            "perf/step_time_s": step_time, "perf/img_per_s": img_per_s})
        append_jsonl(self.run_dir / LOSSES_FILE, losses_record(done, stats.loss_d, stats.loss_g, stats.d_real,
                                                               stats.d_fake))
        self.tensorboard.progress(done - self._last_step, {"loss_d": stats.loss_d, "loss_g": stats.loss_g,
                                                        "D(x)": stats.d_real, "D(G(z))": stats.d_fake,
                                                        "img/s": img_per_s})
        self._last_time, self._last_step = now, done

    def _sample(self, done: int) -> None:
        grid = self.task.picture(self.trainer.generate(self.fixed_z))
        save_png(grid, self.run_dir / "samples" / f"step_{done:06d}.png")
        self.tensorboard.image("samples", grid, done)


def _elapsed_of(meta: dict, checkpoint: Path | None) -> float:
    """The wall time a checkpoint's meta records (0 for checkpoints from before it was recorded); CheckpointError
    naming the checkpoint when it is not a finite number >= 0."""
    value = meta.get("elapsed_s", 0.0)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
        raise CheckpointError(f"checkpoint {checkpoint}: meta 'elapsed_s' must be a finite number of seconds >= 0, "
                              f"got {value!r:.60}")
    return float(value)


def end_of_run_summary(summary: RunSummary, diagnostics: TrainingDiagnostics, run_dir: Path,
                       dashboard: str | None = None) -> str:
    """What a finished run leaves behind, for the console: samples, checkpoint, metrics, the dashboard page
    (`dashboard`: where it is, or why not, from gan.analysis.dashboard.write_dashboard), the dead-channel table."""
    samples = sorted((run_dir / "samples").glob("step_*.png"))
    metrics = ", ".join(f"{k} {v:.4g}" for k, v in (summary.metrics or {}).items())
    steps = summary.end_step - summary.start_step
    speed = f" in {summary.train_seconds:.1f} s of training" if steps and summary.train_seconds > 0 else ""
    lines = [f"done: steps {summary.start_step}..{summary.end_step}{speed}"
             + (f", {summary.skipped_steps} skipped (non-finite)" if summary.skipped_steps else "")
             + (f", {summary.unreadable_images} unreadable images skipped" if summary.unreadable_images else ""),
             f"  samples     {samples[-1] if samples else 'none'}",
             f"  checkpoint  {summary.checkpoint}",
             f"  tensorboard tensorboard --logdir {run_dir / 'tensorboard'}"]
    if metrics:
        lines.append(f"  metrics     {metrics}")
    if summary.metrics_note:
        lines.append(f"  fid         {summary.metrics_note}")
    if dashboard is not None:
        lines.append(f"  dashboard   {dashboard}")
    return "\n".join(lines + [diagnostics.dead_channel_table()])
