"""Helpers shared by tests that run the project's scripts in a subprocess (as a user would)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def script_env() -> dict[str, str]:
    """The environment for a subprocess: quiet MindSpore logs, this checkout's packages first."""
    return {**os.environ, "GLOG_v": "3", "PYTHONPATH": str(REPO)}


def run_script(path: str, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run `python REPO/path ARGS...` from the repository root, capturing text output."""
    return subprocess.run([sys.executable, str(REPO / path), *args], cwd=REPO, env=script_env(),
                          capture_output=True, text=True, timeout=timeout)
