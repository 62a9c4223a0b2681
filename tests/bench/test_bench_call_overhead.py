"""scripts/bench/bench_call_overhead.py splits calls through MindSpore into launch, kernel and return, per kind."""

import json
import subprocess
from pathlib import Path

import pytest

from tests.helpers import run_script


def run_bench(*args: str) -> subprocess.CompletedProcess:
    """The benchmark as a user runs it, with the repository importable."""
    return run_script("scripts/bench/bench_call_overhead.py", *args, timeout=300)


@pytest.mark.slow
def test_parts_add_up_to_each_clocked_call(tmp_path: Path) -> None:
    out = tmp_path / "o.json"
    result = run_bench("--n", "100003", "--repeats", "3", "--json", str(out))
    assert result.returncode == 0, result.stderr
    r = json.loads(out.read_text())
    assert r["n"] == 100003 and r["repeats"] == 3 and len(r["load_average"]) == 2
    assert r["same_bits"] == {"elu": True, "leaky_relu": True}  # the wrapper runs the op's own entry
    for kind in ("elu", "leaky_relu"):
        for key in ("ms", "clocked", "alone_huge", "alone_4k", "tiny", "builtin_tiny"):
            samples = r["samples_ms"][f"{kind}_{key}"]
            assert len(samples) == 3 and r["summary"][f"{kind}_{key}"]["min_ms"] == min(samples)
        p = r["part_samples"][kind]
        for i, total in enumerate(r["samples_ms"][f"{kind}_clocked"]):
            # the kernel's stamps lie inside the timed call: every part >= 0, and they add up to the call
            assert min(p["launch"][i], p["kernel"][i], p["return"][i]) >= 0
            assert p["launch"][i] + p["kernel"][i] + p["return"][i] == pytest.approx(total, abs=1e-6)
            assert p["outside"][i] == pytest.approx(total - p["kernel"][i], abs=1e-6)
        assert r["parts"][kind]["minflt"]["median_faults"] >= 0
    assert "outside" in result.stdout


@pytest.mark.slow
@pytest.mark.parametrize("args, message", [(["--repeats", "0"], "--repeats must be >= 1, got 0"),
                                           (["--n", "8"], "--n must be >= 16, got 8")])
def test_rejects_too_few_repeats_or_elements(tmp_path: Path, args: list[str], message: str) -> None:
    result = run_bench(*args, "--json", str(tmp_path / "o.json"))
    assert result.returncode == 2 and message in result.stderr


def test_clock_open_tells_a_missing_library_from_missing_entries(tmp_path: Path) -> None:
    import bench_call_overhead

    from ops import build

    lib = bench_call_overhead.clock_library()  # resolves both entries in this checkout's kernel library
    try:
        assert lib.KernelClockOpen(str(tmp_path / "missing.so").encode()) == -1
        assert lib.KernelClockOpen(b"libm.so.6") == 2  # opens, but has neither wrapped entry
    finally:
        assert lib.KernelClockOpen(build.library_path().encode()) == 0
