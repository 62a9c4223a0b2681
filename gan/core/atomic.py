"""Atomic whole-file writes (text, JSON, images, checkpoints, npz): a crash mid-write leaves the previous file (or
none), never a truncated one. The run directory's own files and records: gan.run.files."""
from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import BinaryIO, Iterator


def umask_mode(mode: int = 0o666) -> int:
    """`mode` as the process umask lets it through, the mode open() would give a new file."""
    try:  # Linux >= 4.7 reports it without changing it (no window where another thread sees umask 0)
        with open("/proc/self/status", encoding="ascii") as status:
            current = next(int(line.split()[1], 8) for line in status if line.startswith("Umask:"))
    except (OSError, StopIteration):
        current = os.umask(0o022)
        os.umask(current)
    return mode & ~current


@contextlib.contextmanager
def atomic_output(path: str | Path) -> Iterator[BinaryIO]:
    """A binary file to write `path` through: a temporary file in the same folder, fsynced and renamed into
    place when the block ends, removed if it raises. Its mode is what a plain open() would give (0o666 less
    the umask), not mkstemp's 0o600."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, umask_mode())
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):  # a read-only folder fails this too: the write's error is the news
            Path(tmp).unlink(missing_ok=True)
        raise


def write_atomic(path: str | Path, data: bytes) -> Path:
    """Write `data` to `path` atomically (atomic_output): a crash leaves the old file or none."""
    with atomic_output(path) as f:
        f.write(data)
    return Path(path)


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write a UTF-8 text file atomically, as write_atomic."""
    return write_atomic(path, text.encode("utf-8"))


def write_json_atomic(path: str | Path, payload: object, indent: int = 1) -> Path:
    """Write `payload` as indented JSON (and a final newline) atomically, as write_atomic."""
    return write_atomic(path, (json.dumps(payload, indent=indent) + "\n").encode("utf-8"))
