"""scripts/dashboard.py: a fake sweep of two runs becomes one self-contained page that headless Chromium renders."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from gan.dashboard import (append_jsonl, build_dashboard, find_runs, heatmap_image, losses_record, read_jsonl,
                           write_text_atomic)
from gan.diagnostics import DeadChannelTracker, LayerStats

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "dashboard.py"
LAYERS = {"G/act0": 16, "G/act1": 8, "D/act0": 8, "D/act1": 16}


def fake_run(run_dir: Path, slope: float, seed: int) -> None:
    """A run directory as training writes it: config, diagnostics/losses jsonl, metrics, a sample grid."""
    rng = np.random.default_rng(seed)
    (run_dir / ".hydra").mkdir(parents=True)
    (run_dir / ".hydra" / "config.yaml").write_text(
        f"act:\n  negative_slope: {slope}\nprecision:\n  name: fp32\nmodel:\n  image_size: 32\n  ngf: 32\n")
    tracker = DeadChannelTracker()
    for check, step in enumerate(range(100, 1100, 100)):
        stats = {}
        for layer, channels in LAYERS.items():
            # With slope 0 more channels drift to always-negative as training goes on.
            dying = int(channels * (0.5 if slope == 0 else 0.1) * check / 9)
            neg = rng.uniform(0.3, 0.7, channels)
            neg[:dying] = 1.0
            stats[layer] = LayerStats(neg, rng.uniform(0.5, 1.5, channels), rng.uniform(0.5, 1.5, channels),
                                      3, 3, None, None)
        append_jsonl(run_dir / "diagnostics.jsonl", tracker.update(step, stats))
        append_jsonl(run_dir / "losses.jsonl", {"step": step, "loss_d": 1.0 + rng.normal() * 0.1,
                                                "loss_g": 2.0 + rng.normal() * 0.1, "d_x": 0.7, "d_g_z": 0.3})
    (run_dir / "metrics.json").write_text('{"class_coverage": 0.9, "frechet": 12.5}')
    (run_dir / "samples").mkdir()
    Image.fromarray(rng.integers(0, 255, (66, 66, 3), np.uint8)).save(run_dir / "samples" / "step_001000.png")


@pytest.fixture
def sweep(tmp_path: Path) -> Path:
    root = tmp_path / "multirun"
    fake_run(root / "0", 0.0, 0)
    fake_run(root / "1", 0.2, 1)
    return root


def test_page_compares_runs_and_is_self_contained(sweep):
    page = build_dashboard(sweep)
    assert page.count("<table") == 3  # summary + one heatmap table per run
    assert page.count("<img") == 2 * len(LAYERS) + 2  # heatmaps + one sample grid per run
    assert page.count("<svg") == len(LAYERS) + 2  # dead fraction per layer + two loss charts
    assert "0 (slope 0.0)" in page and "1 (slope 0.2)" in page and "class_coverage" in page
    assert not re.search(r"(src|href)=\"(?!data:)", page) and "<script" not in page
    summary = page.split("</table>")[0]
    # Final dead fractions in the summary: slope 0 lost half its G channels, slope 0.2 one of 24.
    assert "<td>0.5</td>" in summary and "<td>0.04167</td>" in summary


def test_single_run_directory_and_errors(sweep, tmp_path):
    assert find_runs(sweep / "1") == [sweep / "1"]
    assert build_dashboard(sweep / "1").count("<table") == 2
    with pytest.raises(FileNotFoundError, match="no run found"):
        build_dashboard(tmp_path / "multirun" / "0" / "samples")
    with pytest.raises(FileNotFoundError, match="is not a directory"):
        build_dashboard(tmp_path / "missing")


def test_jsonl_reader_tolerates_only_a_partial_last_line(tmp_path):
    path = tmp_path / "d.jsonl"
    for step in (1, 2, 1):
        append_jsonl(path, {"step": step, "v": step * 10})
    path.write_text(path.read_text() + '{"step": 3, "v"')  # crash mid-write
    assert read_jsonl(path) == [{"step": 1, "v": 10}, {"step": 2, "v": 20}]  # last record per step wins
    path.write_text('{"step": 1}\nnot json\n{"step": 2}\n')
    with pytest.raises(ValueError, match="d.jsonl:2"):
        read_jsonl(path)


def test_heatmap_rows_are_channels_and_colour_follows_neg_frac():
    image = heatmap_image(np.array([[0.0, 1.0], [1.0, 0.0], [0.5, 0.5]]))
    assert image.shape == (3 * 8, 2 * 8, 3)
    assert tuple(image[0, 0]) == (68, 1, 84) and tuple(image[0, 15]) == (253, 231, 37)
    assert heatmap_image(np.zeros((1024, 3)), max_size=256).shape == (256, 3 * 8, 3)
    with pytest.raises(ValueError, match="shape"):
        heatmap_image(np.zeros(3))


def test_cli_writes_the_page_atomically_and_rejects_an_empty_directory(sweep, tmp_path):
    env = {**os.environ, "GLOG_v": "3"}
    out = tmp_path / "report.html"
    done = subprocess.run([sys.executable, str(SCRIPT), str(sweep), "--out", str(out)], env=env,
                          capture_output=True, text=True, check=True)
    assert f"wrote {out}" in done.stdout and out.read_text().startswith("<!DOCTYPE html>")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".report")] == []
    empty = tmp_path / "empty"
    empty.mkdir()
    failed = subprocess.run([sys.executable, str(SCRIPT), str(empty)], env=env, capture_output=True, text=True)
    assert failed.returncode == 2 and "no run found" in failed.stderr


def chromium(*args: str, profile: Path) -> subprocess.CompletedProcess:
    """Run headless Chromium with no network features and console messages on stderr."""
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    assert binary, "Debian's chromium is required for this test (.ci/run installs it: apt-get install chromium)"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", "--window-size=1400,2000"]
    return subprocess.run([binary, *flags, *args], capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_headless_chromium_renders_tables_and_images(sweep, tmp_path):
    page = write_text_atomic(tmp_path / "report.html", build_dashboard(sweep))
    dom = chromium("--dump-dom", page.as_uri(), profile=tmp_path / "profile")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert dom.stdout.count("<table") == 3 and dom.stdout.count("<img") == 2 * len(LAYERS) + 2
    shot = tmp_path / "dashboard.png"
    run = chromium(f"--screenshot={shot}", page.as_uri(), profile=tmp_path / "profile")
    for result in (dom, run):
        assert "Uncaught" not in result.stderr and "ERROR:CONSOLE" not in result.stderr, result.stderr[-2000:]
    pixels = np.asarray(Image.open(shot).convert("RGB"))
    assert pixels.shape == (2000, 1400, 3) and pixels.std() > 10  # rendered, not a blank page
    # Viridis yellow (dead channels) reached the screen: the heatmap images were decoded and drawn.
    assert (np.abs(pixels.astype(int) - (253, 231, 37)).sum(axis=-1) < 10).sum() > 100
    if os.environ.get("DASHBOARD_SCREENSHOT"):  # docs/img/dashboard.png is refreshed this way
        shutil.copyfile(shot, os.environ["DASHBOARD_SCREENSHOT"])


@pytest.mark.slow
def test_cli_screenshot_option_renders_the_page(sweep, tmp_path):
    shot = tmp_path / "shots" / "report.png"
    done = subprocess.run([sys.executable, str(SCRIPT), str(sweep), "--out", str(tmp_path / "r.html"), "--screenshot",
                           str(shot)], env={**os.environ, "GLOG_v": "3"}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    pixels = np.asarray(Image.open(shot).convert("RGB"))
    assert pixels.shape == (2000, 1400, 3) and pixels.std() > 10
    assert [p.name for p in shot.parent.iterdir()] == ["report.png"]  # no temporary left behind


def test_losses_record_keeps_diverged_steps_as_null(tmp_path):
    record = losses_record(7, float("nan"), float("inf"), 0.5, 0.25)
    assert record == {"step": 7, "loss_d": None, "loss_g": None, "d_x": 0.5, "d_g_z": 0.25}
    append_jsonl(tmp_path / "losses.jsonl", record)  # strict JSON: NaN would raise here
    assert read_jsonl(tmp_path / "losses.jsonl") == [record]
