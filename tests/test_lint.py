"""The tree conforms to the one ruff configuration in pyproject.toml (line length, pycodestyle, pyflakes, import
order)."""
from __future__ import annotations

import subprocess
import sys

from tests.helpers import REPO


def test_ruff_finds_nothing() -> None:
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--output-format", "concise", "."], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]
