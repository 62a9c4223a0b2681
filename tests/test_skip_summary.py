"""The suite's summary names each skip reason once with its count (tests/conftest.py), so a CPU without bfloat16
instructions reads one line for its bf16 skips, not one per test."""
from __future__ import annotations

import subprocess
import sys

from tests.helpers import REPO, script_env

CASES = '''
import pytest

@pytest.mark.parametrize("i", range(3))
def test_bf16(i):
    pytest.skip("this CPU has no bfloat16 dot-product instructions")

@pytest.mark.skipif(True, reason="another reason")
def test_other():
    pass

def test_runs():
    pass
'''


def test_skips_are_counted_once_per_reason(tmp_path):
    (tmp_path / "test_cases.py").write_text(CASES)
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.conftest", "-o", "addopts=", "-rfEX", "-q",
                           "-p", "no:cacheprovider", str(tmp_path)], cwd=REPO, env=script_env(),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert "    3  this CPU has no bfloat16 dot-product instructions" in lines
    assert "    1  another reason" in lines
    assert not any(line.startswith("SKIPPED") for line in lines)
