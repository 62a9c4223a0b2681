"""Outputs of the command-line tools: a check that an output can be written before the work that fills it, and
folders of several files (a quantised generator) that appear whole or not at all."""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

from gan.core.atomic import umask_mode


def _nearest_folder(path: Path) -> Path:
    """The nearest existing ancestor of `path` (the folder a new file or folder there would be created under)."""
    folder = path.absolute().parent
    while not folder.exists():
        folder = folder.parent
    return folder


def check_writable(path: str | Path) -> None:
    """OSError (with the folder as its filename) unless a file can be created where `path` will be written: a
    temporary file is made and removed in the nearest existing folder, so a read-only or forbidden output fails
    before minutes of work rather than after. A full disk can still fail the write itself."""
    folder = _nearest_folder(Path(path))
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as err:
        err.filename = err.filename or str(folder)
        raise


@contextlib.contextmanager
def staged_directory(out: str | Path) -> Iterator[Path]:
    """A private folder to write the files of `out` into; when the block ends they move into `out` (created if
    missing, files of the same names replaced), and if it raises the folder is removed: a failed or interrupted
    run leaves neither a partial nor an empty `out`. The folder is made beside `out` (same file system: the moves
    are renames)."""
    out = Path(out)
    stage = Path(tempfile.mkdtemp(dir=_nearest_folder(out), prefix=f".{out.name}.", suffix=".partial"))
    try:
        os.chmod(stage, umask_mode(0o777))  # the mode mkdir would give, not mkdtemp's 0o700
        yield stage
        if out.is_dir():
            for item in stage.iterdir():
                os.replace(item, out / item.name)
            stage.rmdir()
        else:
            out.parent.mkdir(parents=True, exist_ok=True)
            os.rename(stage, out)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
