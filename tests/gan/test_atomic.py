"""Files the app writes get the mode the user's umask allows, like files opened the ordinary way."""
import os
import stat

import numpy as np
import pytest

from gan.core.atomic import umask_mode, write_atomic, write_text_atomic
from gan.models.checkpoint import save_checkpoint


@pytest.fixture(params=[0o022, 0o002, 0o077])
def umask(request):
    previous = os.umask(request.param)
    yield request.param
    os.umask(previous)


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_atomic_writes_and_checkpoints_honour_the_umask(umask, tmp_path):
    expected = 0o666 & ~umask
    assert umask_mode() == expected
    assert mode(write_atomic(tmp_path / "a.bin", b"x")) == expected
    assert mode(write_text_atomic(tmp_path / "report.html", "<html>")) == expected
    save_checkpoint(tmp_path / "step.ckpt", {"w": np.ones(3, np.float32)}, {"step": 1})
    assert mode(tmp_path / "step.ckpt") == expected
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    assert mode(plain) == expected  # the same as any file opened the ordinary way


def test_a_failed_write_reports_its_own_error_when_its_cleanup_fails_too(tmp_path, monkeypatch):
    """A read-only checkpoints/ folder: the temporary file's unlink fails with EROFS as well; the error shown must
    be the write's (it hid it before), for checkpoints and for every atomic file."""
    import errno
    from pathlib import Path

    import gan.models.checkpoint

    def disk_full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    def read_only(self, missing_ok=False):
        raise OSError(errno.EROFS, "Read-only file system", str(self))

    monkeypatch.setattr(gan.models.checkpoint.ms, "save_checkpoint", disk_full)
    monkeypatch.setattr(Path, "unlink", read_only)
    with pytest.raises(OSError) as info:
        save_checkpoint(tmp_path / "c.ckpt", {"w": np.zeros(2, np.float32)}, {})
    assert info.value.errno == errno.ENOSPC
    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(OSError) as info:
        write_atomic(tmp_path / "report.html", b"<html>")
    assert info.value.errno == errno.ENOSPC
