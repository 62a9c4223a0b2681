"""Data-parallel training under MindSpore's launcher (msrun): ranks, gradient averaging, cross-rank means.

msrun starts one process per device; `mindspore.communication.init()` joins them (mccl on CPU, HCCL on
Ascend, NCCL on GPU). Every rank builds the same initial weights from the seed, reads its own data shard
and averages D and G gradients with `nn.DistributedGradReducer` inside the jitted steps, so every rank
applies the same update. One rank is a `World()` of size 1 and every function here is then the identity.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import mindspore as ms
import numpy as np
from mindspore import Tensor, nn, ops

# Seconds a rank waits inside one collective before it fails (read by MindSpore when the op runs).
TIMEOUT_ENV = {"CPU": "MS_CPU_COMM_OP_TIMEOUT", "Ascend": "HCCL_EXEC_TIMEOUT"}
# msrun runs the script in its scheduler process too (MS_SCHED: init() serves the cluster, then exits).
LAUNCHER_ROLES = ("MS_WORKER", "MS_SCHED")


class DistributedError(RuntimeError):
    """The distributed job cannot start or a collective failed (usually: another rank died)."""


def first_message(err: BaseException) -> str:
    """The first informative line of an error: MindSpore's messages open with dashed banners and headers."""
    for line in str(err).splitlines():
        text = line.strip()
        if text.strip("-") and not text.startswith("- "):
            return text
    return type(err).__name__


def _identity(grads: tuple) -> tuple:
    """Gradients unchanged: the reducer of a single process."""
    return grads


@dataclass(frozen=True)
class World:
    """This process's place in the job: rank `rank` of `size` data-parallel ranks (rank 0 writes outputs)."""

    rank: int = 0
    size: int = 1

    def __post_init__(self) -> None:
        if not 0 <= self.rank < self.size:
            raise ValueError(f"rank={self.rank} is not allowed with size={self.size}: use 0 <= rank < size")

    @property
    def is_main(self) -> bool:
        """Whether this rank writes samples, TensorBoard, diagnostics and checkpoints."""
        return self.rank == 0

    def local(self, batch: np.ndarray) -> np.ndarray:
        """This rank's equal share (along axis 0) of an array drawn for the global batch."""
        if len(batch) % self.size:
            raise ValueError(f"a global batch of {len(batch)} cannot be split evenly over {self.size} ranks")
        n = len(batch) // self.size
        return batch[self.rank * n:(self.rank + 1) * n]

    @contextlib.contextmanager
    def guard(self, what: str) -> Iterator[None]:
        """Turn a RuntimeError raised inside (a failed or timed-out collective) into a clear DistributedError."""
        if self.size == 1:
            yield
            return
        try:
            yield
        except DistributedError:
            raise
        except RuntimeError as err:
            raise DistributedError(
                f"rank {self.rank} of {self.size}: {what} failed ({first_message(err)}). In a data-parallel job this "
                f"usually means another rank died or could not be reached and the collective timed out (after "
                f"runtime.collective_timeout_s); the first error is in that rank's log (msrun --log_dir)") from err

    def allreduce_mean(self, values: np.ndarray) -> np.ndarray:
        """The element-wise mean of `values` over all ranks (every rank must call it with the same shape)."""
        values = np.asarray(values)
        if self.size == 1:
            return values
        with self.guard(f"averaging an array of shape {values.shape} across ranks"):
            total = ops.AllReduce()(Tensor(values.astype(np.float32))).asnumpy()
        return (total / self.size).astype(values.dtype if values.dtype.kind == "f" else np.float32)

    def any(self, flag: bool) -> bool:
        """True on every rank when `flag` is true on at least one (e.g. a Ctrl-C seen by one rank)."""
        return bool(self.allreduce_mean(np.array([float(flag)], np.float32))[0] > 0)

    def mean_fields(self, obj: Any, names: Sequence[str]) -> Any:
        """A copy of dataclass `obj` with the named float fields averaged over the ranks (one collective)."""
        if self.size == 1:
            return obj
        means = self.allreduce_mean(np.array([getattr(obj, n) for n in names], np.float64))
        return dataclasses.replace(obj, **{n: float(v) for n, v in zip(names, means)})


    def mean_array_fields(self, records: dict[str, Any]) -> dict[str, Any]:
        """Copies of the dataclass `records` with every numpy-array field averaged over the ranks (one collective).

        Used for the per-channel dead-channel statistics: every rank saw an equal share of the global batch, so
        the mean of the per-rank means is the global mean. Non-array fields are kept as this rank has them.
        """
        if self.size == 1:
            return records
        slots = [(key, f.name) for key, record in records.items() for f in dataclasses.fields(record)
                 if isinstance(getattr(record, f.name), np.ndarray)]
        parts = [np.ravel(getattr(records[key], name)) for key, name in slots]
        if not parts:
            return records
        flat = self.allreduce_mean(np.concatenate(parts).astype(np.float64))
        updates: dict[str, dict[str, np.ndarray]] = {key: {} for key in records}
        offset = 0
        for (key, name), part in zip(slots, parts):
            shape = getattr(records[key], name).shape
            updates[key][name] = flat[offset:offset + part.size].reshape(shape)
            offset += part.size
        return {key: dataclasses.replace(record, **updates[key]) for key, record in records.items()}


def setup_distributed(enabled: bool, device_target: str, timeout_s: int) -> World:
    """Join the msrun job when `enabled` (data parallel, gradients averaged); a single World() otherwise."""
    if not enabled:
        return World()
    if os.environ.get("MS_ROLE") not in LAUNCHER_ROLES:
        raise DistributedError("distributed=true needs MindSpore's launcher: run `msrun --worker_num=N "
                               "--local_worker_num=M ... train.py distributed=true` or scripts/train_distributed.sh "
                               f"(MS_ROLE={os.environ.get('MS_ROLE')!r} is not one of {LAUNCHER_ROLES})")
    if device_target in TIMEOUT_ENV:
        os.environ[TIMEOUT_ENV[device_target]] = str(timeout_s)
    from mindspore.communication import get_group_size, get_rank, init

    try:
        init()
    except RuntimeError as err:
        if os.environ["MS_ROLE"] == "MS_SCHED":  # the scheduler's init() serves the whole job, then returns
            raise DistributedError(f"msrun's scheduler stopped the job: {first_message(err)} (a rank died, stopped "
                                   "answering or never joined; the ranks' logs in msrun --log_dir have the first "
                                   "error)") from err
        raise DistributedError(f"joining the msrun job failed on {device_target}: {first_message(err)}") from err
    ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True)
    return World(get_rank(), get_group_size())


def gradient_reducer(parameters: Sequence[ms.Parameter], world: World) -> Callable[[tuple], tuple]:
    """Averages a gradient tuple over the ranks inside a jitted step; the identity on one rank."""
    if world.size == 1:
        return _identity
    return nn.DistributedGradReducer(parameters, mean=True, degree=world.size)


def state_checksum(arrays: dict[str, np.ndarray]) -> str:
    """SHA-256 over the named arrays (sorted by name): equal on two ranks iff the arrays are bit-identical."""
    digest = hashlib.sha256()
    for name in sorted(arrays):
        digest.update(name.encode())
        digest.update(np.ascontiguousarray(arrays[name]).tobytes())
    return digest.hexdigest()


def append_checksum(run_dir: str | Path, world: World, step: int, arrays: dict[str, np.ndarray],
                    losses: dict[str, float]) -> Path:
    """Debug record (distributed.checksums=true): append this rank's state checksum after `step` to a JSONL file."""
    path = Path(run_dir) / "distributed" / f"rank_{world.rank}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps({"step": step, "rank": world.rank, "size": world.size,
                            "checksum": state_checksum(arrays), **losses}) + "\n")
    return path
