"""scripts/bench/profile_train.py: the per-op-type summary of the profiler's CSV, argument checks, one real tiny run."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ops.onednn import available as onednn_available

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench" / "profile_train.py"
import profile_train  # noqa: E402

from tests.helpers import needs_onednn  # noqa: E402


def test_summary_is_per_step_sorted_with_shares(tmp_path: Path) -> None:
    csv = tmp_path / profile_train.TYPE_INFO
    csv.write_text("op_type,type_occurrences,execution_frequency(per-step),total_compute_time,avg_time(ms),percent\n"
                   "Adam,36,18,30.0,0.8,0.1\nMatMul,90,45,240.0,2.6,0.8\nCustom,122,61,30.0,0.2,0.1\n")
    rows = profile_train.summarize(csv, steps=2)
    assert [r["op_type"] for r in rows][0] == "MatMul"
    assert rows[0] == {"op_type": "MatMul", "ms_per_step": 120.0, "share": 0.8, "calls_per_step": 45}
    assert {r["op_type"]: r["calls_per_step"] for r in rows[1:]} == {"Adam": 18, "Custom": 61}
    assert sum(r["share"] for r in rows) == pytest.approx(1.0)


def test_empty_profile_is_named(tmp_path: Path) -> None:
    csv = tmp_path / profile_train.TYPE_INFO
    csv.write_text("op_type,type_occurrences,execution_frequency(per-step),total_compute_time,avg_time(ms),percent\n")
    with pytest.raises(ValueError, match="lists no ops"):
        profile_train.summarize(csv, steps=1)


@pytest.mark.parametrize("argv,message", [(["--model", "dcgan48"], "dcgan48"), (["--steps", "0"], "--steps=0"),
                                          (["--threads", "0"], "--threads=0")])
def test_bad_arguments_are_named(argv: list[str], message: str, tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit):
        profile_train.main(["--json", str(tmp_path / "out.json"), *argv])
    assert message in capsys.readouterr().err


@pytest.mark.slow
def test_tiny_run_profiles_the_step(tmp_path: Path) -> None:
    out = tmp_path / "profile.json"
    argv = ["--json", str(out), "--batch-size", "2", "--warmup", "1", "--steps", "1", "--threads", "1"]
    done = subprocess.run([sys.executable, str(SCRIPT), *argv], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "GLOG_v": "3"})
    assert done.returncode == 0, done.stderr[-3000:]
    record = json.loads(out.read_text())
    types = {r["op_type"]: r for r in record["ops"]}
    # conv_impl=auto: the convolutions are oneDNN Custom kernels when the headers are installed, else MatMul (gemm)
    assert {"Custom", "Adam"} <= set(types) and ({"MatMul"} <= set(types) or onednn_available())
    assert types["Custom"]["calls_per_step"] > 0 and record["wall_ms_per_step"] > 0 and record["threads"] == 1


def test_onednn_rows_sum_each_primitive_per_step() -> None:
    """Executions of one (kind, impl, direction, problem) add up, per step, slowest first; reorders are split by
    their layouts; creation lines and other output are ignored."""
    conv = ("onednn_verbose,v1,primitive,exec,cpu,convolution,jit:avx512_core,forward_training,"
            "src:f32::blocked:aBcd16b::f0,,alg:convolution_direct,mb64_ic32oc64_ih16oh8kh4sh2dh0ph1_iw16ow8kw4sw2dw0pw1,{}")
    reorder = ("onednn_verbose,v1,primitive,exec,cpu,reorder,jit:blk,undef,"
               "src:f32::blocked:{}::f0 dst:f32::blocked:aBcd16b::f0,,,64x32x16x16,{}")
    lines = [conv.format(3.0), conv.format(5.0), reorder.format("abcd", 1.0), reorder.format("acdb", 0.5),
             "onednn_verbose,v1,primitive,create:cache_miss,cpu,convolution,jit:avx512_core,forward_training,,,,mb1,0.2",
             "some other output"]
    rows = profile_train.onednn_rows(lines, steps=2)
    assert [(r["kind"], r["ms_per_step"], r["calls_per_step"]) for r in rows] == [
        ("convolution", 4.0, 1.0), ("reorder", 0.5, 0.5), ("reorder", 0.25, 0.5)]
    assert rows[0]["problem"].startswith("mb64_ic32oc64") and "abcd" in rows[1]["problem"]


@pytest.mark.slow
@needs_onednn()
def test_tiny_run_splits_the_onednn_work(tmp_path: Path) -> None:
    out = tmp_path / "profile.json"
    argv = ["--json", str(out), "--batch-size", "2", "--warmup", "1", "--steps", "1", "--threads", "1",
            "--impl", "onednn", "--fusion", "conv_act", "--onednn"]
    done = subprocess.run([sys.executable, str(SCRIPT), *argv], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "GLOG_v": "3"})
    assert done.returncode == 0, done.stderr[-3000:]
    record = json.loads(out.read_text())
    props = {(r["kind"], r["prop"]) for r in record["onednn"]}
    assert {("convolution", "forward_training"), ("convolution", "backward_weights")} <= props
    assert record["onednn_wall_ms_per_step"] > 0 and all(r["ms_per_step"] >= 0 for r in record["onednn"])
