"""Files the app writes get the mode the user's umask allows, like files opened the ordinary way."""
import os
import stat

import numpy as np
import pytest

from gan.checkpoint import save_checkpoint
from gan.files import umask_mode, write_atomic
from gan.run_files import write_text_atomic


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
