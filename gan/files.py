"""Atomic file writes: a crash mid-write leaves the previous file (or none), never a truncated one."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def write_atomic(path: str | Path, data: bytes) -> Path:
    """Write `data` to `path` through a temporary file in the same folder, fsync, then rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_json_atomic(path: str | Path, payload: object, indent: int = 1) -> Path:
    """Write `payload` as indented JSON (and a final newline) atomically, as write_atomic."""
    return write_atomic(path, (json.dumps(payload, indent=indent) + "\n").encode("utf-8"))
