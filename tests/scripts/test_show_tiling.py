"""scripts/show_tiling.py prints the articles' worked example and rejects bad parameters clearly."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "show_tiling.py"
WORKED_EXAMPLE = ["1000000", "--dtype", "float32", "--align-elems", "32", "--cores", "8",
                  "--buffers", "1", "--live-tensors", "1"]


def load_script():
    """The script as a module, so main() runs in-process."""
    from scripts import show_tiling

    return show_tiling


@pytest.mark.slow
def test_worked_example_cli() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GLOG_v": "3"}
    result = subprocess.run([sys.executable, str(SCRIPT), *WORKED_EXAMPLE], env=env, cwd=ROOT,
                            capture_output=True, text=True, check=True)
    out = result.stdout
    assert "usable bytes  = floor(196608 * 0.6) = 117,964" in out
    assert "tile_len      = 29,472 elements" in out
    assert "total_tiles   = ceil(1000000 / 29472) = 34" in out
    assert "2 core(s) x 5 tiles, 6 core(s) x 4 tiles" in out
    core_lines = [line.split() for line in out.splitlines() if line.split() and line.split()[0].isdigit()]
    assert [line[0] for line in core_lines] == [str(c) for c in range(8)]
    assert core_lines[-1] == ["7", "884,160", "1,000,000", "115,840", "3", "27,424"]


def test_align_elems_is_converted_with_the_dtype(capsys) -> None:
    assert load_script().main(["1000", "--dtype", "float16", "--align-elems", "16"]) == 0
    assert "align 32 B (16 elements)" in capsys.readouterr().out


def test_cpu_target_uses_the_l2_cache(capsys) -> None:
    from ops.tiling import cpu_default_buffer_bytes
    assert load_script().main(["1000", "--target", "cpu"]) == 0
    assert f"buffer {cpu_default_buffer_bytes():,} B" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["10", "--buffer-bytes", "10"], "too small for one aligned tile"),
    (["10", "--cores", "0"], "cores must be >= 1"),
    (["-5"], "n must be >= 0"),
    (["10", "--align-elems", "0"], "--align-elems must be >= 1, got 0"),
])
def test_bad_parameters_exit_2_with_reason(capsys, argv: list[str], message: str) -> None:
    assert load_script().main(argv) == 2
    assert message in capsys.readouterr().err
