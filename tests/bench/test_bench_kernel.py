"""scripts/bench/bench_kernel.py times the kernels' C entry points per library, side by side, and checks their bits."""

import json
import subprocess
from pathlib import Path

import pytest

from tests.helpers import run_script


def run_bench(*args: str) -> subprocess.CompletedProcess:
    """The benchmark as a user runs it, with the repository importable."""
    return run_script("scripts/bench/bench_kernel.py", *args, timeout=300)


@pytest.mark.slow
def test_two_libraries_side_by_side(tmp_path: Path) -> None:
    from ops import build

    lib = build.library_path()
    copy = tmp_path / "copy.so"  # a second library file with the same kernels: the same bits
    copy.write_bytes(Path(lib).read_bytes())
    out = tmp_path / "k.json"
    result = run_bench("--libs", lib, str(copy), "--n", "100003", "--dtype", "float16", "--repeats", "3",
                       "--clock", "cpu", "--json", str(out))
    assert result.returncode == 0, result.stderr
    payload = json.loads(out.read_text())
    records = payload["records"]
    assert [(r["lib"], r["entry"]) for r in records] == [
        (path, entry) for path in (lib, str(copy)) for entry in ("leaky_relu_fwd", "elu_fwd", "elu_bwd")]
    for r in records:
        assert r["n"] == 100003 and r["dtype"] == "float16" and r["threads"] == 2 and r["clock"] == "cpu"
        assert r["same_bits"] is True
        assert len(r["samples_ms"]) == 3 and r["min_ms"] == min(r["samples_ms"]) <= r["median_ms"]
    assert len(payload["load_average"]) == 3
    assert "x floor" in result.stdout


@pytest.mark.slow
def test_rejects_a_missing_library(tmp_path: Path) -> None:
    result = run_bench("--libs", str(tmp_path / "nope.so"), "--json", str(tmp_path / "k.json"))
    assert result.returncode == 2 and "no such file" in result.stderr and "nope.so" in result.stderr


@pytest.mark.slow
def test_rejects_zero_repeats(tmp_path: Path) -> None:
    result = run_bench("--repeats", "0", "--json", str(tmp_path / "k.json"))
    assert result.returncode == 2 and "--repeats must be >= 1, got 0" in result.stderr


def test_a_failing_kernel_call_names_the_entry() -> None:
    import ctypes

    import bench_kernel
    import numpy as np
    import pytest

    from ops import build

    x = np.zeros(64, np.float64)  # not a kernel dtype: the entry returns status 1
    call = bench_kernel.kernel_call(ctypes.CDLL(build.library_path()), bench_kernel.ENTRIES["elu_fwd"], x, x, x, 1)
    with pytest.raises(RuntimeError, match="EluForward returned 1"):
        call()
