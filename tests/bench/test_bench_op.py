"""scripts/bench/bench_op.py --quick writes one record (scripts/bench/records.py's shape) with one well-formed row per
(size, dtype, formulation)."""

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import records

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "bench" / "bench_op.py"
KEYS = {"kind", "n", "dtype", "impl", "fwd_ms", "fwdbwd_ms", "fwd_gbps", "builtin_fwd_ms", "builtin_fwdbwd_ms",
        "copy_gbps", "floor_ms", "fwd2_ms", "builtin_fwd2_ms", "fwd_min_ms", "fwdbwd_min_ms", "builtin_fwd_min_ms",
        "builtin_fwdbwd_min_ms", "fwd_x_paired", "fwdbwd_x_paired", "fwd_ratio", "fwdbwd_ratio"}


def run_bench(*args: str) -> subprocess.CompletedProcess:
    """The benchmark as a user runs it, with the repository importable."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GLOG_v": "3"}
    return subprocess.run([sys.executable, str(SCRIPT), *args], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.slow
def test_quick_json_schema_on_the_smallest_size(tmp_path: Path) -> None:
    from ops import FORMULATIONS

    out = tmp_path / "bench.json"
    result = run_bench("--quick", "--sizes", "65536", "--json", str(out))
    assert result.returncode == 0, result.stderr
    [run] = records.read(out)
    assert run["context"] == {"sizes": [65536], "dtypes": ["float32", "float16"], "kinds": ["leaky_relu"],
                              "repeats": 3, "copy_workers": run["context"]["copy_workers"]}
    assert run["machine"]["model"] and run["wall_s"] > 0 and "--quick" in run["command"]
    rows = run["rows"]
    assert sorted((r["dtype"], r["impl"]) for r in rows) == sorted(
        (d, f) for d in ("float32", "float16") for f in FORMULATIONS)
    for r in rows:
        assert set(r) == KEYS and r["n"] == 65536
        assert r["kind"] == "leaky_relu"
        times = [r[k] for k in KEYS - {"kind", "n", "dtype", "impl"}]
        assert all(isinstance(t, float) and math.isfinite(t) and t > 0 for t in times)
        nbytes = 65536 * (4 if r["dtype"] == "float32" else 2)
        assert math.isclose(r["fwd_gbps"], 2 * nbytes / (r["fwd_ms"] * 1e-3) / 1e9)
        assert all(r[f"{k}_min_ms"] <= r[f"{k}_ms"] for k in ("fwd", "fwdbwd", "builtin_fwd", "builtin_fwdbwd"))
        assert math.isclose(r["fwd_ratio"], r["builtin_fwd_ms"] / r["fwd_ms"])
    assert ("fwd x" in result.stdout and "%copy" in result.stdout and "in-graph x" in result.stdout
            and "min x" in result.stdout)
    assert "pair x" in result.stdout
    assert [p.name for p in tmp_path.iterdir()] == ["bench.json"]  # no temporary file left behind


@pytest.mark.slow
@pytest.mark.parametrize("argv, message", [(["--sizes", "0"], "size must be >= 1, got 0"),
                                           (["--kinds", "leaky_relu,swish"], "unknown kind(s) ['swish']")])
def test_bad_arguments_exit_2_naming_them(tmp_path: Path, argv: list[str], message: str) -> None:
    result = run_bench(*argv, "--json", str(tmp_path / "b.json"))
    assert result.returncode == 2 and message in result.stderr


@pytest.mark.slow
def test_every_kind_is_measured_beside_its_builtin(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    result = run_bench("--kinds", "prelu,rrelu,elu", "--sizes", "4096", "--dtypes", "float32", "--repeats", "1",
                       "--json", str(out))
    assert result.returncode == 0, result.stderr
    rows = records.read(out)[0]["rows"]
    assert [(r["kind"], r["impl"]) for r in rows] == [("prelu", "kernel"), ("rrelu", "eval"), ("rrelu", "train"),
                                                      ("elu", "kernel")]
    assert all(set(r) == KEYS and r["builtin_fwd_ms"] > 0 for r in rows)


@pytest.mark.slow
def test_qleaky_relu_kind_compares_int8_with_fp32(tmp_path: Path) -> None:
    out = tmp_path / "q.json"
    result = run_bench("--kinds", "qleaky_relu", "--sizes", "65536", "--repeats", "2", "--json", str(out))
    assert result.returncode == 0, result.stderr
    [r] = records.read(out)[0]["rows"]
    assert r["kind"] == "qleaky_relu" and r["dtype"] == "int8" and r["n"] == 65536
    assert math.isclose(r["elems_per_s"], 65536 / (r["fwd_ms"] * 1e-3))
    assert math.isclose(r["fwd_gbps"], 2 * 65536 / (r["fwd_ms"] * 1e-3) / 1e9)  # 1 byte read + 1 written
    assert math.isclose(r["fp32_gbps"], 2 * 4 * 65536 / (r["fp32_fwd_ms"] * 1e-3) / 1e9)
    assert math.isclose(r["speedup"], r["elems_per_s"] / r["fp32_elems_per_s"])
    assert "int8 Gel/s" in result.stdout and "fwd x" not in result.stdout


def test_paired_ratio_is_the_median_of_per_repeat_ratios() -> None:

    import bench_op

    # repeat ratios 2, 4, 3 -> 3; the ratio of the medians would be 4 / 1 = 4, of the minima 2 / 1 = 2
    assert bench_op.paired_ratio([2.0, 4.0, 30.0], [1.0, 1.0, 10.0]) == 3.0
    with pytest.raises(ValueError):
        bench_op.paired_ratio([1.0, 2.0], [1.0])
