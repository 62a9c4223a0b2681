"""scripts/bench/bench_fusion.py: DCGAN block shapes, and --quick writes well-formed block and whole-step records."""
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "bench" / "bench_fusion.py"
BLOCK_KEYS = {"image_size", "shape", "dtype", "impl", "fwd_ms", "fwdbwd_ms", "peak_mib"}
STEP_KEYS = {"image_size", "fusion", "batch", "step_s", "img_per_s", "steps", "peak_mb"}


def run_bench(*args: str) -> subprocess.CompletedProcess:
    """The benchmark as a user runs it, with the repository importable."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GLOG_v": "3"}
    return subprocess.run([sys.executable, str(SCRIPT), *args], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


def test_block_shapes_are_the_dcgan_batchnorm_inputs():
    from bench_fusion import block_shapes, d_conv_blocks

    # 32 px, ngf = ndf = 32: G 128x4x4, 64x8x8, 32x16x16; D (BatchNorm from block 1) 64x8x8, 128x4x4.
    assert block_shapes(32) == [(64, 32, 16, 16), (64, 64, 8, 8), (64, 128, 4, 4)]
    # 64 px, ngf = ndf = 64: G 512x4x4 .. 64x32x32; D 128x16x16, 256x8x8, 512x4x4.
    assert block_shapes(64) == [(64, 64, 32, 32), (64, 128, 16, 16), (64, 256, 8, 8), (64, 512, 4, 4)]
    # D's conv blocks without BatchNorm at 32 px: 1 -> 32 at 32x32, 32 -> 64 at 16x16, 64 -> 128 at 8x8.
    assert d_conv_blocks(32) == [((64, 1, 32, 32), 32), ((64, 32, 16, 16), 64), ((64, 64, 8, 8), 128)]


@pytest.mark.slow
def test_quick_json_schema(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    result = run_bench("--quick", "--json", str(out))
    assert result.returncode == 0, result.stderr
    payload = json.loads(out.read_text())
    assert sorted(r["impl"] for r in payload["blocks"]) == ["bn_act", "bn_act_nhwc", "builtin", "none"]
    for r in payload["blocks"]:
        assert set(r) == BLOCK_KEYS and r["shape"] == [8, 128, 4, 4] and r["dtype"] == "float32"
        for key in ("fwd_ms", "fwdbwd_ms"):
            assert isinstance(r[key], float) and math.isfinite(r[key]) and r[key] > 0, (key, r)
        assert isinstance(r["peak_mib"], float) and 0 <= r["peak_mib"] < 1024  # a 64 KiB block: little
    (stats,) = payload["stats"]
    assert stats["kernel_ms"] > 0 and stats["reductions_ms"] > 0
    assert [(r["impl"], r["shape"], r["out_channels"]) for r in payload["bias_act"]] == [
        ("none", [8, 64, 8, 8], 128), ("bias_act", [8, 64, 8, 8], 128)]
    assert all(r["fwd_ms"] > 0 and r["fwdbwd_ms"] > 0 for r in payload["bias_act"])
    assert [r["fusion"] for r in payload["steps"]] == ["none", "bn_act"]
    for r in payload["steps"]:
        assert set(r) == STEP_KEYS and (r["image_size"], r["batch"], r["steps"]) == (32, 8, 2)
        assert math.isclose(r["img_per_s"] * r["step_s"], 8) and r["step_s"] > 0
        assert 100 < r["peak_mb"] < 64 * 1024  # a whole MindSpore process: hundreds of MiB, not bytes or TiB
    assert "fb x" in result.stdout and "in-kernel vs MindSpore" in result.stdout and "img/s" in result.stdout
    assert [p.name for p in tmp_path.iterdir()] == ["bench.json"]  # no temporary file left behind


@pytest.mark.slow
@pytest.mark.parametrize("flag", ["--repeats", "--steps"])
def test_rejects_zero_repeats_or_steps(tmp_path: Path, flag: str) -> None:
    result = run_bench(flag, "0", "--json", str(tmp_path / "b.json"))
    assert result.returncode == 2 and f"{flag} must be >= 1, got 0" in result.stderr
