"""scripts/bench_train.py: argument checks, the interleaved timer, the PyTorch twin, one real (tiny) run."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_train.py"
sys.path.insert(0, str(SCRIPT.parent))
import bench_train  # noqa: E402


@pytest.mark.parametrize("argv,message", [(["--models", "dcgan48"], "dcgan48"), (["--impls", "fast"], "fast"),
                                          (["--steps", "0"], "--steps=0"), (["--batch-size", "-1"], "--batch-size=-1"),
                                          (["--threads", "0"], "--threads=0"), (["--fusions", "conv_bn"], "conv_bn")])
def test_bad_arguments_are_named(argv: list[str], message: str, tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit):
        bench_train.main(["--json", str(tmp_path / "out.json"), *argv])
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out.json").exists()


def test_vs_torch_without_torch_says_so(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` raise ImportError
    with pytest.raises(SystemExit):
        bench_train.main(["--json", str(tmp_path / "out.json"), "--vs-torch"])
    assert "needs PyTorch" in capsys.readouterr().err


def test_interleaved_timer_round_robin_and_limits() -> None:
    calls: list[tuple[str, int]] = []
    steps = {name: (lambda i, name=name: calls.append((name, i))) for name in ("a", "b")}
    times = bench_train.time_interleaved(steps, warmup=1, steps=3, max_seconds=1e9)
    assert calls == [("a", 0), ("b", 0), ("a", 1), ("b", 1), ("a", 2), ("b", 2), ("a", 3), ("b", 3)]
    assert [len(t) for t in times.values()] == [3, 3]
    calls.clear()
    times = bench_train.time_interleaved(steps, warmup=0, steps=5, max_seconds=0.0)
    assert [len(t) for t in times.values()] == [1, 1]  # over budget after one timed step each


@pytest.mark.parametrize("model", bench_train.MODELS)
def test_torch_twin_has_the_same_parameters(model: str) -> None:
    """The PyTorch comparison model has the same parameter shapes, layer by layer, as gan.models' DCGAN."""
    pytest.importorskip("torch", reason="the --vs-torch comparison needs PyTorch, an optional benchmark extra")
    from gan.models import Discriminator, Generator

    cfg = bench_train.bench_config(model, "gemm", 64)
    g, d = bench_train.torch_models(cfg)
    for ours, theirs in ((Generator(cfg.model, cfg.act, 3, "gemm"), g), (Discriminator(cfg.model, cfg.act, 3, "gemm"), d)):
        assert [tuple(p.shape) for p in ours.trainable_params()] == [tuple(p.shape) for p in theirs.parameters()]


@pytest.mark.slow
def test_tiny_run_writes_records(tmp_path: Path) -> None:
    """The CLI as a user runs it (own process: MindSpore's device is chosen before any kernel runs)."""
    out = tmp_path / "bench.json"
    argv = ["--json", str(out), "--models", "dcgan32", "--impls", "gemm,onednn", "--fusions", "none,conv_act",
            "--batch-size", "2", "--warmup", "1", "--steps", "2", "--threads", "1"]
    done = subprocess.run([sys.executable, str(SCRIPT), *argv], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "GLOG_v": "3"})
    assert done.returncode == 0, done.stderr[-3000:]
    records = json.loads(out.read_text())
    # gemm with conv_act is skipped, naming why: train.py refuses that combination
    assert [(r["model"], r["impl"], r["fusion"]) for r in records] == [
        ("dcgan32", "gemm", "none"), ("dcgan32", "onednn", "none"), ("dcgan32", "onednn", "conv_act")]
    assert "skipped conv_impl=gemm fusion=conv_act" in done.stdout
    for r in records:
        assert r["img_per_s"] > 0 and r["torch_img_per_s"] is None and r["ratio_to_torch"] is None
        assert r["threads"] == 1
        assert (r["onednn"] is None) == (r["impl"] != "onednn")
        assert r["onednn"] is None or r["onednn"]["version"].startswith("3.")
        assert set(r) >= {"model", "impl", "img_per_s", "torch_img_per_s", "ratio_to_torch"}
        assert f"{r['impl']:7s}" in done.stdout
