"""scripts/bench/bench_train.py: argument checks, the interleaved timer, the PyTorch twin, one real (tiny) run."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import script_env

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench" / "bench_train.py"
import bench_train  # noqa: E402
import records  # noqa: E402


@pytest.mark.parametrize("argv,message", [(["--models", "dcgan48"], "dcgan48"), (["--impls", "fast"], "fast"),
                                          (["--steps", "0"], "--steps=0"), (["--batch-size", "-1"], "--batch-size=-1"),
                                          (["--threads", "0"], "--threads=0"), (["--fusions", "conv_bn"], "conv_bn"),
                                          (["--precisions", "fp8"], "fp8"),
                                          (["--peak", "/nonexistent.json"], "--peak")])
def test_bad_arguments_are_named(argv: list[str], message: str, tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit):
        bench_train.main(["--json", str(tmp_path / "out.json"), *argv])
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out.json").exists()


def test_a_peak_file_of_another_shape_is_refused_before_any_step(tmp_path: Path, capsys) -> None:
    old = tmp_path / "peak.json"
    old.write_text('{"problems": []}')  # bench_peak.py's shape before records.py
    with pytest.raises(SystemExit):
        bench_train.main(["--json", str(tmp_path / "out.json"), "--peak", str(old)])
    assert "--peak=" in (err := capsys.readouterr().err) and "peak.json: expected" in err
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


def test_interleaved_timer_lead_in_runs_each_timed_step_after_its_own(monkeypatch) -> None:
    calls: list[tuple[str, int]] = []
    timed: list[str] = []

    def step(name: str):
        def call(i: int) -> None:
            calls.append((name, i))
        return call

    steps = {name: step(name) for name in ("a", "b")}
    real_counter = bench_train.time.perf_counter

    def counter() -> float:  # a timed call is the one whose start is read just before it runs
        timed.append(len(calls))
        return real_counter()

    monkeypatch.setattr(bench_train.time, "perf_counter", counter)
    times = bench_train.time_interleaved(steps, warmup=1, steps=2, max_seconds=1e9, lead_in=True)
    assert calls == [("a", 0), ("b", 0), ("a", 1), ("a", 1), ("b", 1), ("b", 1), ("a", 2), ("a", 2), ("b", 2), ("b", 2)]
    assert [len(t) for t in times.values()] == [2, 2]
    starts = timed[0::2]  # perf_counter is read before and after each timed call
    assert [calls[k][0] for k in starts] == ["a", "b", "a", "b"]  # each timed call ...
    assert [calls[k - 1][0] for k in starts] == ["a", "b", "a", "b"]  # ... right after an untimed call of its own


def test_step_flops_match_a_hand_count_of_a_small_dcgan(config, tiny_overrides) -> None:
    """DCGAN-32 with ngf = ndf = 8, nz = 16, 3 channels, batch 2, counted by hand (multiply-adds per sample):
    G  ConvT 16->32 1->4: 1*1*16*32*16 = 8192;   ConvT 32->16 4->8: 4*4*32*16*16 = 131072;
       ConvT 16->8 8->16: 8*8*16*8*16 = 131072;  ConvT 8->3 16->32: 16*16*8*3*16 = 98304
    D  Conv 3->8 32->16: 16*16*8*3*16 = 98304;   Conv 8->16 16->8: 8*8*16*8*16 = 131072;
       Conv 16->32 8->4: 4*4*32*16*16 = 131072;  Conv 32->1 4->1: 1*1*1*32*16 = 512
    One step: G forward once, D forward 3x (real, fake, fake again in the G step), D backward-weights 2x,
    D backward-data 2x without the first layer plus 1x with it, G backward-weights 1x, G backward-data 1x
    without the first layer."""
    g = [2 * m for m in (8192, 131072, 131072, 98304)]
    d = [2 * m for m in (98304, 131072, 131072, 512)]
    G, D = sum(g), sum(d)
    by_hand = {"g_forward": G, "d_forward": 3 * D, "d_backward_weights": 2 * D,
               "d_backward_data": 2 * (D - d[0]) + D, "g_backward_weights": G, "g_backward_data": G - g[0]}
    cfg = config(*tiny_overrides, "train.batch_size=2")  # TINY: ngf = ndf = 8, nz = 16, shapes
    flops = bench_train.train_step_flops(cfg)
    assert {k: v for k, v in flops.items() if k != "total"} == {k: 2.0 * v for k, v in by_hand.items()}
    assert flops["total"] == 2.0 * sum(by_hand.values()) == 15155200.0
    # two D steps: two G forwards for the fakes and the D work twice; a penalty runs G's forward again
    two = bench_train.step_flops([8192, 131072], [98304, 512], d_steps=2, shared_g_forward=False)
    assert two["g_forward"] == 2.0 * 3 * (8192 + 131072) and two["d_forward"] == 2.0 * 5 * (98304 + 512)
    assert two["d_backward_data"] == 2.0 * (4 * 512 + 98304 + 512)


def test_utilisation_is_the_share_of_the_same_precisions_peak(tmp_path: Path) -> None:
    row = {"problems": [{"problem": "gemm", "precision": "fp32", "peak_gflops": 100.0},
                        {"problem": "conv", "precision": "fp32", "peak_gflops": 120.0},
                        {"problem": "gemm", "precision": "bf16", "peak_gflops": None}]}
    records.write(tmp_path / "peak.json", [records.record([row])])  # a bench_peak.py data file
    peak = bench_train.read_peak(tmp_path / "peak.json", ["fp32", "bf16"])
    assert peak["fp32"] == 120.0 and peak["bf16"] is None  # the better problem; none measured for bf16
    assert bench_train.utilisation(6e9, 0.1, peak["fp32"]) == {"achieved_gflops": 60.0, "peak_share": 0.5}
    assert bench_train.utilisation(6e9, 0.1, None)["peak_share"] is None


def test_render_prints_the_utilisation_and_bf16_tables(tmp_path: Path, capsys) -> None:
    """--render prints the utilisation and bf16 tables of the given runs (results_spec.RUN_TABLES)."""
    record = {"model": "dcgan32", "precision": "bf16", "impl": "onednn", "fusion": "conv_act", "img_per_s": 100.0,
              "gflop_per_step": 6.39, "achieved_gflops": 10.0, "peak_share": 0.073, "peak_gflops": 136.0,
              "ratio_to_fp32": 1.2, "ratio_to_torch": 1.27, "cpu_ratio_to_fp32": 1.25, "cpu_ratio_to_torch": None,
              "torch_img_per_s": 78.7, "torch_achieved_gflops": 7.9, "torch_peak_share": 0.058, "batch_size": 64,
              "threads": 2, "load_average_before": 6.7, "load_average_after": 9.0}
    records.write(tmp_path / "b.json", [records.record([record])])
    bench_train.main(["--render", str(tmp_path / "b.json")])
    out = capsys.readouterr().out
    assert "| b.json | DCGAN-32 | bf16 | 100.0 | 10.0 | 136 | 7.3 | 78.7 | 5.8 | 6.7 | 9.0 |" in out
    assert "| b.json | DCGAN-32 | 100.0 | 1.20 | 1.25 | 1.27 |" in out
    with pytest.raises(SystemExit):
        bench_train.main([])
    assert "--json is required" in capsys.readouterr().err
    (tmp_path / "old.json").write_text(json.dumps([record]))  # the shape before records.py: a list of rows
    with pytest.raises(SystemExit):
        bench_train.main(["--render", str(tmp_path / "old.json")])
    assert "--render: " in (err := capsys.readouterr().err) and "old.json: expected" in err


@pytest.mark.parametrize("model", bench_train.MODELS)
def test_torch_twin_has_the_same_parameters(model: str) -> None:
    """The PyTorch comparison model has the same parameter shapes, layer by layer, as gan.models.networks' DCGAN."""
    pytest.importorskip("torch", reason="the --vs-torch comparison needs PyTorch, an optional benchmark extra")
    from gan.models.networks import Discriminator, Generator

    cfg = bench_train.bench_config(model, "gemm", 64)
    g, d = bench_train.torch_models(cfg)
    for ours, theirs in ((Generator(cfg.model, cfg.act, 3, "gemm"), g),
                         (Discriminator(cfg.model, cfg.act, 3, "gemm"), d)):
        assert [tuple(p.shape) for p in ours.trainable_params()] == [tuple(p.shape) for p in theirs.parameters()]


@pytest.mark.slow
def test_tiny_run_writes_records(tmp_path: Path) -> None:
    """The CLI as a user runs it (own process: MindSpore's device is chosen before any kernel runs)."""
    out = tmp_path / "bench.json"
    argv = ["--json", str(out), "--models", "dcgan32", "--impls", "gemm,onednn", "--fusions", "none,conv_act",
            "--batch-size", "2", "--warmup", "1", "--steps", "2", "--threads", "1"]
    done = subprocess.run([sys.executable, str(SCRIPT), *argv], capture_output=True, text=True, timeout=600,
                          env=script_env())  # this checkout's packages, not the installed ones
    assert done.returncode == 0, done.stderr[-3000:]
    [run] = records.read(out)
    assert run["machine"]["model"] and isinstance(run["machine"]["flags"], list) and run["wall_s"] > 0
    assert run["context"]["steps"] == 2 and run["context"]["lead_in"] is True and "--json" in run["command"]
    rows = run["rows"]
    # gemm with conv_act is skipped, naming why: train.py refuses that combination
    assert [(r["model"], r["impl"], r["fusion"]) for r in rows] == [
        ("dcgan32", "gemm", "none"), ("dcgan32", "onednn", "none"), ("dcgan32", "onednn", "conv_act")]
    assert "skipped conv_impl=gemm fusion=conv_act" in done.stdout
    for r in rows:
        assert r["img_per_s"] > 0 and r["torch_img_per_s"] is None and r["ratio_to_torch"] is None
        assert r["precision"] == "fp32" and r["gflop_per_step"] > 0 and r["achieved_gflops"] > 0
        assert 0 < r["peak_share"] and r["peak_gflops"] > 0  # the peak measured in the same round-robin
        assert r["load_average_before"] >= 0 and r["threads"] == 1
        assert (r["onednn"] is None) == (r["impl"] != "onednn")
        assert r["onednn"] is None or r["onednn"]["version"].startswith("3.")
        assert set(r) >= {"model", "impl", "img_per_s", "torch_img_per_s", "ratio_to_torch"}
        assert f"{r['impl']:7s}" in done.stdout
