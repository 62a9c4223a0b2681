"""Claiming a run directory: one training at a time, and never a new run over another run's files.

A run holds an exclusive lock (`flock` on `run.lock`, which names the holder: pid, host, start time) for its
whole lifetime; a second run in the same directory fails at start naming the holder. Rank 0 of a
distributed job holds it for the job (the other ranks write nothing). The kernel drops the lock when the
process ends, however it ends; the file stays (removing it would let two runs lock two different files).

What may start in a directory that already holds a run's products (`RUN_PRODUCTS`: checkpoints, step logs,
metrics, samples, TensorBoard events, the dashboard page): a resume of that run (train.resume=auto, or a checkpoint
of its own checkpoints/ folder). A fresh run there would append to the old logs and lose its own
checkpoints to the old run's higher steps; a resume from another directory's checkpoint would mix two
runs. Both are refused, naming the directory and the ways out. Hydra's own files (`.hydra/`, the job's
`.log`) and msrun's logs do not make a directory used: Hydra writes them before train.py's code runs. With
train.py the check runs in a Hydra callback (`ClaimRunDir`, configs/config.yaml) before Hydra writes them,
so a refused run leaves the old run's `.hydra/` untouched.

`status.json` records how the run went, for sweep summaries: {"state": running | finished | interrupted |
failed | aborted, "step", "error", "pid", "host", "started", "ended"}; `run_state` tells a run that died
without a word (killed) from one still running by the lock.
"""
from __future__ import annotations

import contextlib
import datetime
import errno
import fcntl
import json
import os
import socket
import stat
from pathlib import Path
from typing import Any, Iterator

from hydra.core.utils import JobReturn, JobStatus
from hydra.errors import CompactHydraException
from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from gan.core.atomic import write_text_atomic
from gan.core.untrusted import read_text
from gan.run.files import (
    CHECKPOINT_DIR,
    DASHBOARD_FILE,
    DIAGNOSTICS_FILE,
    EVENTS_FILE,
    LOSSES_FILE,
    METRICS_FILE,
    METRICS_HISTORY_FILE,
)

LOCK_FILE = "run.lock"
STATUS_FILE = "status.json"
RUN_PRODUCTS = (CHECKPOINT_DIR, LOSSES_FILE, DIAGNOSTICS_FILE, METRICS_HISTORY_FILE, METRICS_FILE, EVENTS_FILE,
                "samples", "tensorboard", DASHBOARD_FILE)
STATES = ("running", "finished", "interrupted", "failed", "aborted")
MAX_STATUS_BYTES = 1 << 16  # a status record is ~200 bytes


class RunDirError(RuntimeError):
    """The run directory cannot be used by this run (in use, another run's files, not writable)."""


def previous_run_files(run_dir: str | Path) -> list[str]:
    """The RUN_PRODUCTS present in run_dir (empty folders do not count), in RUN_PRODUCTS order."""
    run_dir = Path(run_dir)
    found = []
    for name in RUN_PRODUCTS:
        path = run_dir / name
        if path.is_file() or (path.is_dir() and any(path.iterdir())):
            found.append(name)
    return found


def check_run_dir_name(run_dir: str | Path) -> None:
    """RunDirError for an empty run directory name: it would mean the current folder (for train.py often the source
    tree), where the run's checkpoints, logs and lock would mix with whatever is there."""
    if not str(run_dir).strip():
        raise RunDirError(f"the run directory is empty ({str(run_dir)!r}), which would write the run into the current "
                          f"folder {Path.cwd()}; give one, e.g. hydra.run.dir=outputs/my_run")


def _inside(path: Path, folder: Path) -> bool:
    """Whether `path` lies in `folder` (both resolved: symlinks and `..` do not fool it)."""
    return path.resolve().parent == folder.resolve()


def check_start(run_dir: str | Path, resume: str | None) -> None:
    """RunDirError unless a run with train.resume=`resume` may start in run_dir (see the module docstring)."""
    run_dir = Path(run_dir)
    found = previous_run_files(run_dir)
    if not found or resume == "auto":
        return
    if resume is not None and _inside(Path(resume).expanduser(), run_dir / CHECKPOINT_DIR):
        return
    what = ("a fresh run (train.resume=null)" if resume is None
            else f"a resume from train.resume={resume}, a checkpoint of another directory,")
    raise RunDirError(f"{run_dir} already holds the files of another run ({', '.join(found)}), and {what} there "
                      f"would mix its logs and checkpoints with them; continue that run with train.resume=auto, "
                      f"or start this one in a new directory (hydra.run.dir=PATH)")


def _now() -> str:
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


def _holder_text(lock: Path) -> str:
    """Who holds a lock, from what it wrote into the lock file."""
    try:
        holder = json.loads(lock.read_text(encoding="utf-8"))
        return f"pid {holder['pid']} on {holder['host']}, started {holder['started']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "holder unknown"


class RunDirLock:
    """The exclusive lock of one run directory, held from `acquire` to `release`."""

    def __init__(self, run_dir: str | Path) -> None:
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / LOCK_FILE
        self._file = None

    def acquire(self) -> None:
        """Take the lock (creating the directory), or RunDirError naming the holder or why it cannot be written.
        The holder is written by `write_holder`, once the run may start (a refused run changes no content)."""
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            handle = open(self.path, "a+", encoding="utf-8")
        except OSError as err:
            raise RunDirError(f"the run directory {self.run_dir} is not writable ({err.strerror or err}); choose a "
                              f"writable hydra.run.dir=PATH") from err
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            handle.close()
            if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise
            raise RunDirError(f"{self.run_dir} is in use by another training run ({_holder_text(self.path)}); "
                              f"wait for it to finish, or use another hydra.run.dir=PATH") from None
        self._file = handle

    def write_holder(self) -> None:
        """Name this process in the lock file (pid, host, start time), for a run that finds the lock taken."""
        self._file.seek(0)
        self._file.truncate()
        self._file.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started": _now()}) + "\n")
        self._file.flush()

    def release(self) -> None:
        """Drop the lock (the file stays)."""
        if self._file is not None:
            fcntl.flock(self._file, fcntl.LOCK_UN)
            self._file.close()
            self._file = None


_HELD: dict[str, RunDirLock] = {}  # run directories this process holds, by resolved path


def hold(run_dir: str | Path, resume: str | None) -> bool:
    """Lock run_dir for this process and check that the run may start there; False if this process already held
    it (the Hydra callback took it before train.py's code ran). RunDirError otherwise."""
    key = str(Path(run_dir).resolve())
    if key in _HELD:
        check_start(run_dir, resume)
        return False
    lock = RunDirLock(run_dir)
    lock.acquire()
    try:
        check_start(run_dir, resume)
        lock.write_holder()
    except BaseException:
        lock.release()
        raise
    _HELD[key] = lock
    return True


def let_go(run_dir: str | Path) -> None:
    """Release the lock `hold` took on run_dir."""
    lock = _HELD.pop(str(Path(run_dir).resolve()), None)
    if lock is not None:
        lock.release()


def write_status(run_dir: str | Path, state: str, **fields: Any) -> None:
    """Record the run's state in status.json (atomically); `fields` such as step= and error= are added."""
    if state not in STATES:
        raise ValueError(f"run state {state!r} is not one of {list(STATES)}")
    path = Path(run_dir) / STATUS_FILE
    record = {"state": state, "pid": os.getpid(), "host": socket.gethostname(), **fields,
              ("started" if state == "running" else "ended"): _now()}
    if state != "running":
        with contextlib.suppress(OSError, ValueError):
            record = {**json.loads(path.read_text(encoding="utf-8")), **record}  # keep "started"
    write_text_atomic(path, json.dumps(record) + "\n")


class ReportedError(CompactHydraException):
    """An error the user can fix (gan.training.loop.USER_ERRORS), re-raised by train.py as `error: Type: message` so
    that Hydra prints that one line and no traceback; the original exception is its __cause__. Hydra still sees
    a failed job: its callbacks record it and the other jobs of a sweep run."""

    @classmethod
    def of(cls, err: BaseException) -> ReportedError:
        return cls(f"error: {type(err).__name__}: {err}")


def describe_error(err: BaseException) -> str:
    """`Type: first line of the message`, for status.json and sweep summaries."""
    first = next((line.strip() for line in str(err).splitlines() if line.strip(" -")), "")
    return f"{type(err).__name__}: {first}" if first else type(err).__name__


@contextlib.contextmanager
def claim_run_dir(run_dir: str | Path, resume: str | None, main: bool = True) -> Iterator[None]:
    """The run's hold on run_dir for the block: lock and start check (`hold`), status "running", and status
    "failed" or "aborted" when the block raises. Ranks other than the main one (`main`) do nothing here."""
    if not main:
        yield
        return
    took = hold(run_dir, resume)
    try:
        write_status(run_dir, "running")
        try:
            yield
        except BaseException as err:
            write_status(run_dir, "aborted" if isinstance(err, KeyboardInterrupt) else "failed",
                         error=describe_error(err))
            raise
    finally:
        if took:
            let_go(run_dir)


def run_state(run_dir: str | Path) -> dict | None:
    """status.json of a run, its "state" "died" where it says running but nobody holds the lock; None without one."""
    run_dir = Path(run_dir)
    try:  # bounded, regular files only: a named pipe there must not hang a summary
        status = json.loads(read_text(run_dir / STATUS_FILE, MAX_STATUS_BYTES))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise ValueError(f"{run_dir / STATUS_FILE}: not a run status record ({err})") from err
    if not isinstance(status, dict) or status.get("state") not in STATES:
        raise ValueError(f"{run_dir / STATUS_FILE}: 'state' must be one of {list(STATES)}, got {status!r:.120}")
    if status["state"] == "running" and not _locked(run_dir / LOCK_FILE):
        status = {**status, "state": "died"}
    return status


FAILED_STATES = ("failed", "aborted", "died", "no output")  # runs a summary lists apart, not as results


def job_state(run_dir: str | Path) -> tuple[str, str]:
    """(state, text for a summary) of a run folder: a STATES entry or "died" from status.json, else "unknown" for
    a run from before status.json existed, or "no output" for a folder whose job wrote nothing (it failed before
    training started: its log says why)."""
    status = run_state(run_dir)
    if status is None:
        if previous_run_files(run_dir):
            return "unknown", ""
        return "no output", "no output: the job stopped before training (see its log)"
    state = status["state"]
    text = {"failed": f"failed: {status.get('error')}", "aborted": f"aborted: {status.get('error')}",
            "died": "died: it stopped without a word (killed?)",
            "interrupted": f"interrupted at step {status.get('step')}"}.get(state, state)
    return state, text


def _locked(lock: Path) -> bool:
    """Whether some process holds the lock file (a shared probe lock, released at once); ValueError naming it when
    it is not a regular file (opened without waiting: a named pipe must not hang the reader)."""
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{lock}: not a regular file (a named pipe, device or folder), not a run's lock")
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def _launched_main(config: DictConfig) -> bool | None:
    """For train.py under Hydra: True for the process that writes the run (a plain run, or rank 0 of msrun),
    False for the other ranks, None for msrun's scheduler process (it never trains)."""
    if not config.get("distributed"):
        return True
    if os.environ.get("MS_ROLE") == "MS_SCHED":
        return None
    return os.environ.get("RANK_ID", "0") == "0"


class ClaimRunDir(Callback):
    """Hydra callback of train.py: lock and check hydra.run.dir before Hydra writes `.hydra/` and its log there
    (every rank checks; the main one locks); for a multirun, refuse a sweep directory whose jobs hold runs."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        main = _launched_main(config)
        resume = config.train.resume
        try:
            check_run_dir_name(config.hydra.run.dir)
            if main:
                hold(config.hydra.run.dir, resume)
            elif main is False:
                check_start(config.hydra.run.dir, resume)
        except RunDirError as err:
            raise SystemExit(f"error: {err}") from None

    def on_run_end(self, config: DictConfig, **kwargs: Any) -> None:
        let_go(config.hydra.run.dir)

    def on_job_end(self, config: DictConfig, job_return: JobReturn, **kwargs: Any) -> None:
        """A job that failed before its run claimed the directory (a config error) records why, so a sweep
        summary can say it; a refused run (another run's directory) writes nothing there."""
        error = job_return._return_value  # the exception of a failed job (its return_value property re-raises it)
        if isinstance(error, ReportedError):
            error = error.__cause__
        if (job_return.status != JobStatus.FAILED or _launched_main(config) is not True
                or isinstance(error, RunDirError)):
            return
        run_dir = Path(config.hydra.runtime.output_dir)
        try:
            status = json.loads((run_dir / STATUS_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            status = None
        if status is None or (status.get("pid") == os.getpid() and status.get("state") == "running"):
            write_status(run_dir, "failed", error=describe_error(error))

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        sweep = Path(config.hydra.sweep.dir)
        if config.train.resume is not None or not sweep.is_dir():
            return
        used = sorted(p.name for p in sweep.iterdir() if p.is_dir() and previous_run_files(p))
        if used:
            raise SystemExit(f"error: the sweep directory {sweep} already holds runs (jobs {', '.join(used[:10])}"
                             f"{' ...' if len(used) > 10 else ''}); a new sweep there would mix its jobs' files with "
                             f"theirs: use a new hydra.sweep.dir=PATH, or train.resume=auto to continue them")
