"""Dead-channel diagnostics in a training loop of the user's own (no train.py, no Hydra config): the same probes,
records and run-directory files as train.py, so `python scripts/dashboard.py RUN_DIR` and TensorBoard show the run
as they show a train.py run.

    diag = Diagnostics("runs/mine", g=G, d=D, g_input=z, d_input=x, every=100)   # attaches the probes
    step = diag.step(train_step)                  # two ms.jit twins: probes compiled out / compiled in
    for i in range(1, steps + 1):
        loss_d, loss_g = step(real, z, check=diag.is_check_step(i))
        diag.record(i, loss_d=float(loss_d), loss_g=float(loss_g))   # a check step: read + log the probes
    diag.close()                                  # report.html, status.json, the dead-channel table

G and D must use the project's activation cells (ops.swap_activations turns MindSpore's nn.LeakyReLU / nn.ReLU
into them). Collection, statistics and writing are gan.diagnostics.probes (attach, TrainingDiagnostics) unchanged; this
module adds the schedule of a user's loop, the run directory (lock, status.json, losses.jsonl, samples, TensorBoard)
and ReDo recycling (gan.diagnostics.recycle) for networks whose activations sit in one nn.SequentialCell.
"""
from __future__ import annotations

import contextlib
import logging
import math
from pathlib import Path
from typing import Any, Callable, Iterator

import mindspore as ms
import numpy as np
from mindspore import Tensor, nn

from gan.analysis.channels import Criteria
from gan.analysis.dashboard import write_dashboard
from gan.core.streams import Purpose
from gan.diagnostics.probes import (
    PROBED_CELLS,
    ProbedActivation,
    TrainingDiagnostics,
    attach,
    is_diagnostic_param,
    set_probing,
)
from gan.diagnostics.recycle import LINEAR, Recycler
from gan.models.networks import dcgan_values
from gan.run.directory import RunDirError, describe_error, hold, let_go, previous_run_files, write_status
from gan.run.files import LOSSES_FILE, append_jsonl, losses_record
from gan.run.grids import image_grid, save_png
from gan.run.tensorboard import TensorBoardWriter

__all__ = ["Diagnostics", "TwinStep", "dcgan_init", "network_params"]

# record(...) keyword -> TensorBoard tag (those train.py writes) and losses.jsonl field
LOSS_TAGS = {"loss_d": "loss/d", "loss_g": "loss/g", "d_x": "prob/D_x", "d_g_z": "prob/D_G_z"}


def dcgan_init(name: str, cell: nn.Cell, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Fresh values of a recycled channel's layer: gan.models.networks.dcgan_values (conv weights ~ N(0, 0.02), zero
    biases, BatchNorm gamma ~ N(1, 0.02), beta 0) chosen by layer type, as a model-zoo network's layers are named 0,
    1, ..."""
    kind = "conv" if isinstance(cell, LINEAR) else "bn" if isinstance(cell, nn.BatchNorm2d) else name
    return dcgan_values(kind, cell, rng)


def network_params(net: nn.Cell) -> list[dict]:
    """net's Parameters without the probes' accumulators, in the form ms.save_checkpoint takes, so a checkpoint
    of a probed network loads into the plain one: ms.save_checkpoint(network_params(D), "d.ckpt")."""
    return [{"name": p.name, "data": p} for p in net.get_parameters() if not is_diagnostic_param(p.name)]


class TwinStep:
    """A training step in two compiled twins: probes off (ordinary steps: no probe op in the graph) and on (check
    steps). Call it as the step itself, plus check=diag.is_check_step(i). `make()` builds one twin: `ms.jit(fn)`
    (each ms.jit object keeps the graph of its first compile), or for a Cell step (nn.TrainOneStepCell in
    GRAPH_MODE) a new Cell each call; in PyNative without jit both twins are fn, which reads the flag at each call.
    After a check step the probes are switched off again, so PyNative calls outside the steps are not counted."""

    def __init__(self, probes: list[ProbedActivation], make: Callable[[], Callable]) -> None:
        self.probes = probes
        self.plain, self.probed = make(), make()
        self.called: set[int] = set()  # ids of the twins called once (compiled)

    def __call__(self, *args: Any, check: bool) -> Any:
        if not check:
            return self._call(self.plain, args)
        set_probing(self.probes, True)
        try:
            return self._call(self.probed, args)
        finally:
            set_probing(self.probes, False)

    def _call(self, twin: Callable, args: tuple) -> Any:
        """Call a twin; its first call (where ms.jit compiles) without MindSpore's warning that the function "has
        been compiled again": the second ms.jit object of one function is the point of the twins, not a mistake."""
        if id(twin) in self.called:
            return twin(*args)
        self.called.add(id(twin))
        with _without_recompile_warning():
            return twin(*args)


class _DropRecompileWarning(logging.Filter):
    """Drops MindSpore's "The function ... has been compiled again" warning (mindspore/graph/api.py)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "has been compiled again" not in record.getMessage()


@contextlib.contextmanager
def _without_recompile_warning() -> Iterator[None]:
    """MindSpore's logger without the recompile warning for the duration of the block."""
    from mindspore import log as ms_log

    logger, drop = ms_log._get_logger(), _DropRecompileWarning()  # noqa: SLF001 (its logger has no public getter)
    logger.addFilter(drop)
    try:
        yield
    finally:
        logger.removeFilter(drop)


class Diagnostics:
    """Dead-channel diagnostics of G and/or D in the user's own loop, writing a train.py run directory.

    `g_input`/`d_input`: one input batch of each network, a tuple for a network of several inputs (e.g. (z, labels)
    for a class-conditional G, (condition, image) for a two-input D); it teaches the probes the channel counts (run
    once in PyNative). `every`: a check after every `every`-th step (steps counted from 1). `criteria`: the
    thresholds (gan.analysis.channels.Criteria). `recycle`: {"G" or "D": its nn.Adam} to re-initialise dormant
    channels after each check (ReDo, gan.diagnostics.recycle) with `init` (default dcgan_init), draws keyed by
    (seed, step). `hparams`: flat {name: bool/str/int/float} for TensorBoard's HParams tab. The run directory must not
    hold another run's files (it is locked while in use, as train.py locks it).
    """

    def __init__(self, run_dir: str | Path, *, g: nn.Cell | None = None, d: nn.Cell | None = None,
                 g_input: Tensor | tuple | None = None, d_input: Tensor | tuple | None = None, every: int = 100,
                 criteria: Criteria = Criteria(), recycle: dict[str, nn.Adam] | None = None,
                 init: Callable[[str, nn.Cell, np.random.Generator], dict] = dcgan_init, seed: int = 0,
                 hparams: dict[str, bool | str | int | float] | None = None, progress: bool = False) -> None:
        nets = {name: (net, example) for name, net, example in (("G", g, g_input), ("D", d, d_input))
                if net is not None}
        if not nets:
            raise ValueError("Diagnostics needs g=..., d=... or both: the networks to probe")
        missing = [f"{name.lower()}_input" for name, (_, example) in nets.items() if example is None]
        if missing:
            raise ValueError(f"Diagnostics needs {' and '.join(missing)}: one input batch per probed network "
                             f"(e.g. g_input=z of shape (N, nz, 1, 1), d_input=a real batch)")
        if g is not None and g is d:
            raise ValueError(f"Diagnostics got one network ({type(g).__name__}) as both g and d: give two networks")
        bare = [f"{name} ({type(net).__name__})" for name, (net, _) in nets.items()
                if not any(isinstance(cell, PROBED_CELLS) for _, cell in net.cells_and_names())]
        if bare:  # refused before the run directory is created or locked
            raise ValueError(f"{' and '.join(bare)} has no activation layer the probes can wrap (the project's "
                             f"activation cells: ops.swap_activations turns MindSpore's into them)")
        unknown = sorted(set(recycle or {}) - set(nets))
        if unknown:
            raise ValueError(f"recycle={sorted(recycle)}: {unknown} is not a probed network (probed: {sorted(nets)})")
        self.run_dir = Path(run_dir)
        self.hparams = dict(hparams or {})
        found = previous_run_files(self.run_dir)
        if found:
            raise RunDirError(f"{self.run_dir} already holds the files of another run ({', '.join(found)}); give "
                              f"Diagnostics a new run_dir (nothing was changed there or in the networks)")
        hold(self.run_dir, None)  # the run directory's lock, as train.py takes it (refused while another run holds it)
        try:
            self.probes_of = {name: attach(net, example, name) for name, (net, example) in nets.items()}
            self.probes = [p for probes in self.probes_of.values() for p in probes]
            set_probing(self.probes, False)  # on only inside a check step's twin (TwinStep)
            recyclers = [Recycler(nets[name][0], optimizer, init, seed, Purpose.RECYCLE)
                         for name, optimizer in (recycle or {}).items()]
            write_status(self.run_dir, "running")
            self.tensorboard = TensorBoardWriter(self.run_dir, None, 0, progress=progress)
        except BaseException:
            let_go(self.run_dir)
            raise
        recycle_fn = (lambda step, record: {k: v for r in recyclers for k, v in r(step, record).items()}) \
            if recyclers else None
        self.training = TrainingDiagnostics(self.probes, criteria, every, self.tensorboard.writer, self.run_dir,
                                            recycle_fn)
        self.last_step = 0
        self.closed = False

    def step(self, fn: Callable | None = None, *, jit: bool = True,
             make: Callable[[], Callable] | None = None) -> TwinStep:
        """The step `fn` as a TwinStep: compiled twice with ms.jit (jit=False: fn itself, run in PyNative); or
        `make` builds each twin (e.g. lambda: nn.TrainOneStepCell(net_with_loss, optimizer) in GRAPH_MODE)."""
        if (fn is None) == (make is None):
            raise ValueError("Diagnostics.step needs either the step function fn or make=... (one, not both)")
        if make is None and not jit and ms.get_context("mode") == ms.GRAPH_MODE:
            raise ValueError("Diagnostics.step(fn, jit=False) runs fn in PyNative, but the context is GRAPH_MODE, "
                             "where each Cell compiles once with the probes as they were: use jit=True, or make=... "
                             "building a new step Cell per twin")
        if make is None:
            make = (lambda: ms.jit(fn)) if jit else (lambda: fn)
        return TwinStep(self.probes, make)

    def is_check_step(self, step: int) -> bool:
        """True when step `step` (1-based count of steps done) is a check: run it with check=True, then record."""
        return self.training.due(step)

    def record(self, step: int, *, loss_d: float | None = None, loss_g: float | None = None,
               d_x: float | None = None, d_g_z: float | None = None, samples: np.ndarray | None = None,
               scalars: dict[str, float] | None = None) -> dict | None:
        """After step `step`: on a check step read and reset the probes and write the record (diagnostics.jsonl,
        TensorBoard; recycling); given losses, a losses.jsonl line and their TensorBoard scalars (train.py's tags);
        given `samples` (NCHW in [-1, 1]), samples/step_XXXXXX.png and the TensorBoard image; `scalars`: more
        TensorBoard scalars by tag. Returns the check's record, None on other steps. Steps must increase from call
        to call (the logs are in step order); a call that raises does not count as the last step."""
        if self.closed:
            raise RuntimeError("Diagnostics.record after close()")
        if isinstance(step, bool) or not isinstance(step, int) or step < 1:
            raise ValueError(f"step={step!r} is not allowed: steps count from 1 (the number of steps done)")
        if step <= self.last_step:
            raise ValueError(f"step={step} is not allowed: step {self.last_step} was recorded already, and each "
                             f"record() must come after the last one (a step greater than {self.last_step})")
        record = self._check(step) if self.is_check_step(step) else None
        losses = {k: v for k, v in (("loss_d", loss_d), ("loss_g", loss_g), ("d_x", d_x), ("d_g_z", d_g_z))
                  if v is not None}
        if losses:
            values = {k: float(losses.get(k, math.nan)) for k in LOSS_TAGS}
            append_jsonl(self.run_dir / LOSSES_FILE, losses_record(step, **values))
            self.tensorboard.scalars(step, {LOSS_TAGS[k]: float(v) for k, v in losses.items()})
        if scalars:
            self.tensorboard.scalars(step, scalars)
        if samples is not None:
            grid = image_grid(np.asarray(samples))
            save_png(grid, self.run_dir / "samples" / f"step_{step:06d}.png")
            self.tensorboard.image("samples", grid, step)
        self.last_step = step
        return record

    def _check(self, step: int) -> dict:
        """Read the probes of a check step; an error when no probed pass ran since the previous check."""
        passes = sum(int(p.diag_passes.asnumpy()[0]) for p in self.probes)
        if passes == 0:
            raise RuntimeError(f"step {step} is a check step but no probed pass ran since the last check: call the "
                               f"step with check=diag.is_check_step({step}) (a TwinStep from diag.step)")
        return self.training.check(step)

    def table(self) -> str:
        """The last check as the console table train.py prints at the end of a run."""
        return self.training.dead_channel_table()

    def close(self, state: str = "finished", error: BaseException | None = None) -> str | None:
        """End the run: HParams (with the last check's fractions), TensorBoard closed, report.html written,
        status.json `state`, the lock released. Returns where the dashboard page is
        (gan.analysis.dashboard.write_dashboard)."""
        if self.closed:
            return None
        self.closed = True
        try:
            if self.hparams:
                self.training.log_hparams(self.hparams, {})
            self.tensorboard.close()
            page = write_dashboard(self.run_dir)
            write_status(self.run_dir, state, step=self.last_step,
                         **({"error": describe_error(error)} if error is not None else {}))
        finally:
            let_go(self.run_dir)
        return page

    def __enter__(self) -> "Diagnostics":
        return self

    def __exit__(self, kind: type | None, error: BaseException | None, tb: Any) -> None:
        self.close("finished" if error is None else "aborted" if isinstance(error, KeyboardInterrupt) else "failed",
                   error)
