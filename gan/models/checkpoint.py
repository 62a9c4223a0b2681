"""Atomic full-state checkpoints in MindSpore's own format, with a JSON meta entry and resume discovery.

Why MindSpore's format (`ms.save_checkpoint`) rather than `.npz`: it is a protobuf file (loading never
runs code from it), it carries a string entry for the meta, it stores a CRC32 that `load_checkpoint`
verifies, and the G/D weights in it load straight into a network with `ms.load_checkpoint` +
`ms.load_param_into_net`. Its own writer is not atomic for us (it deletes an existing file of the same
name before writing), so we write to a temporary name in the same folder, fsync, then `os.replace`.

The meta entry `MARKER_KEY` holds JSON: the format name and version, a manifest (dtype and shape of
every array: MindSpore drops empty arrays, and the manifest restores them and proves nothing is
missing) and the caller's meta.

Checkpoints may come from other people: before MindSpore reads a file it must be a regular file of at most
`checkpoint_limit_mib()` MiB (MindSpore holds the whole file and more in memory while it checks the CRC), and
every manifest entry and a training checkpoint's meta are checked before a caller uses them.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import stat
from pathlib import Path
from typing import Any, Callable

import mindspore as ms
import numpy as np
from omegaconf.errors import OmegaConfBaseException

from gan.config.schema import Config, config_from_yaml
from gan.core.atomic import umask_mode
from gan.run.files import CHECKPOINT_DIR

FORMAT = "lrelu-gan-checkpoint"
FORMAT_VERSION = 1
# meta["format"] of a training run's checkpoints (gan.training.outputs writes them)
TRAINING_FORMAT = "lrelu-gan/dcgan/1"
MARKER_KEY = "__lrelu_gan_checkpoint__"
_NAME = re.compile(r"step_(\d+)\.ckpt")
_TEMP_PREFIX = ".partial-"  # temporary files of unfinished writes; never taken for checkpoints
_CRC_TRAILER = b"crc_num"  # MindSpore ends a file saved with crc_check=True with this tag + 10 bytes of CRC
_SUPPORTED_KINDS = "biuf"  # bool, signed/unsigned integers, floats
_MAX_DIMS = 32  # numpy's own limit on an array's dimensions
# The size cap on every checkpoint a tool or train.resume reads (scripts/inspect_model.py's --max-ckpt-mib default):
# the shipped models' full training state is at most ~340 MB (DCGAN-128 with EMA and Adam).
MAX_CHECKPOINT_MIB = 2048
LIMIT_ENV = "LRELU_MAX_CKPT_MIB"  # raises (or lowers) the cap for trusted larger checkpoints
# Checkpoint keys of a training run: the parameters of G, D and G's EMA copy under these prefixes (the D step
# runs G too, so names must be unique in one graph), and per network ("g", "d") its optimiser's and loss scaler's
# own Parameters. Every checkpoint already written holds these names: renaming one orphans them all.
G_PREFIX, D_PREFIX, EMA_PREFIX = "generator.", "discriminator.", "ema."
OPTIMIZER_PREFIXES = {"g": "opt_g.", "d": "opt_d."}
SCALER_PREFIXES = {"g": "scaler_g.", "d": "scaler_d."}


class CheckpointError(RuntimeError):
    """A checkpoint file is truncated, corrupt, foreign or of an unknown format version."""


def checkpoint_path(run_dir: str | Path, step: int) -> Path:
    """Where the checkpoint of global step `step` lives: run_dir/checkpoints/step_XXXXXXXX.ckpt."""
    if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or step < 0:
        raise ValueError(f"checkpoint step={step!r} is not allowed: use an integer >= 0")
    return Path(run_dir) / CHECKPOINT_DIR / f"step_{int(step):08d}.ckpt"


def _checkpoints(run_dir: str | Path) -> list[tuple[int, Path]]:
    """(step, path) of every finished checkpoint in run_dir, oldest step first."""
    folder = Path(run_dir) / CHECKPOINT_DIR
    if not folder.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in folder.iterdir() if (m := _NAME.fullmatch(p.name)) and p.is_file()]
    return sorted(found)


def latest_checkpoint(run_dir: str | Path) -> Path | None:
    """The checkpoint with the highest step in run_dir, or None if there is none."""
    found = _checkpoints(run_dir)
    return found[-1][1] if found else None


SUPERSEDED_DIR = "superseded"  # checkpoints/superseded/: checkpoints past the step a run resumed at


def set_aside_later(run_dir: str | Path, step: int) -> list[str]:
    """Before a run resumes at `step`: move its checkpoints of later steps (an abandoned continuation, whose
    records the resume drops) into checkpoints/superseded/, where resume=auto, generate.py and pruning do not
    look, instead of deleting them; returns their names."""
    later = [path for s, path in _checkpoints(run_dir) if s > step]
    if not later:
        return []
    folder = Path(run_dir) / CHECKPOINT_DIR / SUPERSEDED_DIR
    folder.mkdir(exist_ok=True)
    for path in later:
        target = folder / path.name
        n = 1
        while target.exists():  # set aside once before: keep both
            target, n = folder / f"{path.stem}.{n}{path.suffix}", n + 1
        os.replace(path, target)
    return [path.name for path in later]


def resolve_checkpoint(path: str | Path) -> Path:
    """`path` if it is not a folder (a missing file is reported by the loader, naming it); for a run directory or
    its checkpoints/ folder, the newest step_*.ckpt in it (generate.py, export.py, quantize.py take either).
    ValueError saying what to pass when a folder holds none."""
    path = Path(path)
    if not path.is_dir():
        return path
    newest = latest_checkpoint(path.parent if path.name == CHECKPOINT_DIR else path)
    if newest is not None:
        return newest
    others = sorted(p.name for p in path.rglob("*.ckpt"))[:5]
    hint = f"; it holds {others}: pass one of those files" if others else ""
    raise ValueError(f"{path} is a directory without training checkpoints ({CHECKPOINT_DIR}/step_*.ckpt){hint}")


def prune_checkpoints(run_dir: str | Path, keep: int) -> list[Path]:
    """Delete all but the `keep` newest checkpoints and leftovers of interrupted writes; return what went."""
    if isinstance(keep, bool) or not isinstance(keep, (int, np.integer)) or keep < 1:
        raise ValueError(f"keep={keep!r} is not allowed: keep at least the newest checkpoint (an integer >= 1)")
    found = _checkpoints(run_dir)
    doomed = [path for _, path in found[:max(0, len(found) - keep)]]
    folder = Path(run_dir) / CHECKPOINT_DIR
    if folder.is_dir():
        doomed += sorted(p for p in folder.iterdir() if p.name.startswith(_TEMP_PREFIX))
    for path in doomed:
        path.unlink(missing_ok=True)
    return doomed


def _as_array(name: str, value: Any) -> np.ndarray:
    """A numeric numpy array for `value`, or a ValueError naming the entry."""
    if not isinstance(name, str) or not name or name == MARKER_KEY:
        raise ValueError(f"checkpoint array name {name!r} is not allowed: use a non-empty string other than "
                         f"{MARKER_KEY!r}")
    array = np.asarray(value)
    if array.dtype.kind not in _SUPPORTED_KINDS:
        raise ValueError(f"checkpoint array {name!r} has dtype {array.dtype}: only bool, integer and float "
                         f"arrays can be saved")
    return array


def _fsync(path: str | Path) -> None:
    """Flush a file or folder to disk (a rename is durable only once its folder is synced)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def save_checkpoint(path: str | Path, arrays: dict[str, np.ndarray], meta: dict) -> None:
    """Write arrays + JSON meta atomically: a crash mid-write leaves any previous file at `path` intact."""
    path = Path(path)
    arrays = {name: _as_array(name, value) for name, value in arrays.items()}
    manifest = {name: {"dtype": a.dtype.str, "shape": list(a.shape)} for name, a in arrays.items()}
    try:
        header = json.dumps({"format": FORMAT, "version": FORMAT_VERSION, "arrays": manifest, "meta": meta})
    except (TypeError, ValueError) as error:
        raise ValueError(f"checkpoint meta is not JSON-serialisable: {error}") from error
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f"{_TEMP_PREFIX}{os.getpid()}-{path.name}")
    if temp.suffix != ".ckpt":
        temp = temp.with_name(temp.name + ".ckpt")  # MindSpore appends .ckpt to any other name
    entries = [{"name": name, "data": ms.Tensor(a)} for name, a in arrays.items() if a.size]
    try:
        ms.save_checkpoint(entries, str(temp), append_dict={MARKER_KEY: header}, crc_check=True)
        os.chmod(temp, umask_mode())  # MindSpore leaves its files read-only; give the mode open() would
        _fsync(temp)
        os.replace(temp, path)
    except BaseException:
        for leftover in (temp, temp.with_suffix(".tmp")):  # .tmp: MindSpore's own temporary name
            with contextlib.suppress(OSError):  # a read-only folder fails this too: the write's error is the news
                leftover.unlink(missing_ok=True)
        raise
    _fsync(path.parent)


def _has_crc_trailer(path: Path) -> bool:
    """Whether the file ends like a file MindSpore wrote with crc_check=True (a cheap truncation test)."""
    size = path.stat().st_size
    if size < 17:
        return False
    with open(path, "rb") as f:
        f.seek(size - 17)
        return f.read(len(_CRC_TRAILER)) == _CRC_TRAILER


def checkpoint_limit_mib() -> float:
    """The size cap on checkpoints read here, in MiB: $LRELU_MAX_CKPT_MIB when set, else MAX_CHECKPOINT_MIB."""
    raw = os.environ.get(LIMIT_ENV)
    if raw is None:
        return float(MAX_CHECKPOINT_MIB)
    try:
        limit = float(raw)
    except ValueError:
        limit = float("nan")
    if not limit > 0 or limit == float("inf"):
        raise ValueError(f"{LIMIT_ENV}={raw!r} is not allowed: give the size cap on checkpoints in MiB, a number > 0")
    return limit


def check_checkpoint_file(path: str | Path, max_mib: float | None = None,
                          raise_with: str = f"{LIMIT_ENV}=<MiB>") -> int:
    """The size in bytes of checkpoint `path`, before anything reads it: FileNotFoundError when it is missing,
    CheckpointError when it is not a regular file (a FIFO would block the reader) or is larger than `max_mib`
    (default checkpoint_limit_mib()), naming the file, its size, the cap and how to raise it (`raise_with`)."""
    path = Path(path)
    try:
        info = path.stat()
    except FileNotFoundError:
        raise FileNotFoundError(f"checkpoint {str(path)!r} does not exist") from None
    except OSError as err:
        raise CheckpointError(f"checkpoint {str(path)!r} cannot be read: {err.strerror or err}") from None
    if not stat.S_ISREG(info.st_mode):
        what = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
        raise CheckpointError(f"checkpoint {str(path)!r} is {what}; give a .ckpt file")
    limit = checkpoint_limit_mib() if max_mib is None else max_mib
    if info.st_size > limit * 2 ** 20:
        raise CheckpointError(f"checkpoint {str(path)!r} is {info.st_size / 2 ** 20:g} MiB, over the "
                              f"{limit:g} MiB cap on checkpoints; if you trust the file, raise the cap with "
                              f"{raise_with}")
    return info.st_size


def _manifest_entry(path: Path, name: Any, spec: Any) -> tuple[np.dtype, tuple[int, ...]]:
    """(dtype, shape) of one manifest entry; CheckpointError naming the entry when it is not what save writes."""
    shape = spec.get("shape") if isinstance(spec, dict) else None
    if not (isinstance(shape, list) and len(shape) <= _MAX_DIMS
            and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape)):
        raise CheckpointError(f"checkpoint {str(path)!r}: manifest entry {name!r} is {spec!r}; expected "
                              f"{{'dtype': ..., 'shape': [at most {_MAX_DIMS} integers >= 0]}}")
    try:
        dtype = np.dtype(spec["dtype"]) if isinstance(spec.get("dtype"), str) else None
    except (TypeError, ValueError):  # numpy's words for a string that names no dtype
        dtype = None
    if dtype is None or dtype.kind not in _SUPPORTED_KINDS:
        raise CheckpointError(f"checkpoint {str(path)!r}: manifest entry {name!r} has dtype {spec.get('dtype')!r}; "
                              f"checkpoints hold bool, integer and float arrays only")
    return dtype, tuple(shape)


def load_checkpoint(path: str | Path) -> tuple[dict[str, np.ndarray], dict]:
    """Read a checkpoint written by save_checkpoint: (arrays, meta); CheckpointError if it is not one."""
    path = Path(path)
    check_checkpoint_file(path)
    if not _has_crc_trailer(path):
        raise CheckpointError(f"checkpoint {str(path)!r} is truncated or was not written by lrelu-gan "
                              f"(it does not end with MindSpore's CRC record)")
    try:
        entries = ms.load_checkpoint(str(path), crc_check=True)
    except (ValueError, RuntimeError) as error:
        raise CheckpointError(f"checkpoint {str(path)!r} is corrupt or not a MindSpore checkpoint: "
                              f"{str(error).splitlines()[0]}") from error
    header = _read_header(path, entries.pop(MARKER_KEY, None))
    arrays: dict[str, np.ndarray] = {}
    for name, spec in header["arrays"].items():
        dtype, shape = _manifest_entry(path, name, spec)
        if 0 in shape:
            arrays[name] = np.empty(shape, dtype)
            continue
        if name not in entries:
            raise CheckpointError(f"checkpoint {str(path)!r} lacks array {name!r} listed in its manifest")
        array = entries.pop(name).asnumpy()
        if array.dtype != dtype or array.shape != shape:
            raise CheckpointError(f"checkpoint {str(path)!r}: array {name!r} is {array.dtype}{list(array.shape)}, "
                                  f"its manifest says {dtype}{list(shape)}")
        arrays[name] = array
    if entries:
        raise CheckpointError(f"checkpoint {str(path)!r} holds entries missing from its manifest: {sorted(entries)}")
    return arrays, header["meta"]


def _read_header(path: Path, raw: Any) -> dict:
    """Parse and check the meta entry: format marker, known version, manifest."""
    if not isinstance(raw, str):
        raise CheckpointError(f"checkpoint {str(path)!r} is a MindSpore checkpoint but not a lrelu-gan one "
                              f"(no {MARKER_KEY!r} entry)")
    try:
        header = json.loads(raw)
    except json.JSONDecodeError as error:
        raise CheckpointError(f"checkpoint {str(path)!r} has an unreadable meta entry: {error}") from error
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise CheckpointError(f"checkpoint {str(path)!r} has the marker entry but not format {FORMAT!r}")
    if header.get("version") != FORMAT_VERSION:
        raise CheckpointError(f"checkpoint {str(path)!r} has format version {header.get('version')!r}; this "
                              f"code reads version {FORMAT_VERSION}")
    if not isinstance(header.get("arrays"), dict) or "meta" not in header:
        raise CheckpointError(f"checkpoint {str(path)!r} has a meta entry without manifest or meta")
    if not isinstance(header["meta"], dict):
        raise CheckpointError(f"checkpoint {str(path)!r}: its meta is {_kind(header['meta'])}, not a mapping")
    return header


def _kind(value: Any) -> str:
    """How a message names a JSON value's type: 'a list', 'null', ..."""
    return "null" if value is None else f"a {type(value).__name__}"


def _count(minimum: int) -> Callable[[Any], bool]:
    """A check of a meta count: an integer (not a bool) >= minimum."""
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= minimum


# What a training checkpoint's meta must hold before anything uses it: key -> (check, what is allowed).
_TRAINING_META = {
    "config": (lambda v: isinstance(v, str), "the run's config as YAML text"),
    "channels": (_count(1), "the image channels, an integer >= 1"),
    "step": (_count(0), "an integer >= 0"),
}


def load_training_checkpoint(path: str | Path) -> tuple[dict[str, np.ndarray], dict]:
    """(arrays, meta) of a training run's checkpoint; CheckpointError if it is another kind of checkpoint or its
    meta lacks or garbles what tools and train.resume read (config, channels, step)."""
    arrays, meta = load_checkpoint(path)
    if meta.get("format") != TRAINING_FORMAT:
        raise CheckpointError(f"{path}: format {meta.get('format')!r} is not {TRAINING_FORMAT!r}")
    for key, (valid, allowed) in _TRAINING_META.items():
        if key not in meta:
            raise CheckpointError(f"checkpoint {str(path)!r}: its meta has no '{key}' ({allowed}); not a checkpoint "
                                  f"train.py wrote")
        if not valid(meta[key]):
            raise CheckpointError(f"checkpoint {str(path)!r}: meta '{key}' is {meta[key]!r:.80}, it must be "
                                  f"{allowed}; not a checkpoint train.py wrote (or it was edited)")
    training_config(path, meta)
    return arrays, meta


def training_config(path: str | Path, meta: dict) -> Config:
    """The validated Config stored in a training checkpoint's meta; CheckpointError naming the file and the key
    when the stored YAML is not a config this code reads (unknown key, wrong type, unsafe YAML, bad value)."""
    try:
        return config_from_yaml(meta["config"], path)
    except (ValueError, LookupError, TypeError, OmegaConfBaseException) as err:  # OmegaConf's kinds and ours
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        if str(path) in first:  # gan.core.untrusted's errors name the file already
            raise CheckpointError(first) from None
        key = getattr(err, "full_key", None)
        where = f" (at {key})" if key and key not in first else ""
        raise CheckpointError(f"checkpoint {str(path)!r}: its stored config is not one this code reads: "
                              f"{first}{where}") from None
