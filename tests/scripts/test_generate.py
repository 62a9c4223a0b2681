"""scripts/generate.py writes a sample grid from a checkpoint and rejects files that are not checkpoints."""
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from gan.config.schema import compose_config
from gan.models.checkpoint import CheckpointError, latest_checkpoint
from gan.run.grids import image_grid
from gan.training.loop import run
from tests.helpers import run_script

pytestmark = pytest.mark.slow  # every test here is end-to-end



def generate(*args: str) -> subprocess.CompletedProcess:
    return run_script("scripts/generate.py", *args, timeout=300)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, tiny_checkpoint) -> Path:
    """A 2-step dry run with an EMA generator; its sample grids use 16 latents from seed 0."""
    path = tmp_path_factory.mktemp("run")
    run(compose_config(tiny_checkpoint), path)
    return path


def pixels(path: Path) -> np.ndarray:
    with Image.open(path) as image:
        return np.asarray(image)


def test_reproduces_the_runs_final_sample_grid(run_dir, tmp_path):
    out = tmp_path / "grid.png"
    result = generate(str(latest_checkpoint(run_dir)), "--n", "16", "--out", str(out))
    assert result.returncode == 0, result.stderr[-3000:]
    assert pixels(out).shape == (4 * 34 + 2, 4 * 34 + 2, 3)  # 4x4 tiles of 32 px, 2 px padding, RGB
    np.testing.assert_array_equal(pixels(out), pixels(run_dir / "samples" / "step_000002.png"))


def test_no_ema_uses_the_raw_generator(run_dir, tmp_path):
    result = generate(str(latest_checkpoint(run_dir)), "--n", "16", "--no-ema", "--out", str(tmp_path / "raw.png"))
    assert result.returncode == 0, result.stderr[-3000:]
    assert not np.array_equal(pixels(tmp_path / "raw.png"), pixels(run_dir / "samples" / "step_000002.png"))


def test_rejects_a_file_that_is_not_a_checkpoint(tmp_path):
    bogus = tmp_path / "bogus.ckpt"
    bogus.write_bytes(b"not a checkpoint")
    result = generate(str(bogus), "--out", str(tmp_path / "x.png"))
    assert result.returncode == 2 and "bogus.ckpt" in result.stderr
    assert not (tmp_path / "x.png").exists()


def test_a_run_directory_means_its_newest_checkpoint(run_dir, tmp_path):
    for given in (run_dir, run_dir / "checkpoints"):
        out = tmp_path / f"{given.name}.png"
        result = generate(str(given), "--n", "16", "--out", str(out))
        assert result.returncode == 0, result.stderr[-3000:]
        assert f"using {latest_checkpoint(run_dir)}" in result.stderr
        np.testing.assert_array_equal(pixels(out), pixels(run_dir / "samples" / "step_000002.png"))


def test_a_directory_without_checkpoints_says_what_to_pass(tmp_path):
    (tmp_path / "empty").mkdir()
    result = generate(str(tmp_path / "empty"))
    assert result.returncode == 2 and "is a directory without training checkpoints" in result.stderr
    assert "does not exist" not in result.stderr
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "best.ckpt").write_bytes(b"")
    result = generate(str(tmp_path / "other"))
    assert result.returncode == 2 and "best.ckpt" in result.stderr and "pass one of those" in result.stderr


def test_large_n_streams_raw_samples_in_batches_and_the_grid_is_limited(run_dir, tmp_path, monkeypatch, capsys):
    import gan.models.from_checkpoint
    from scripts import generate as script

    calls = []
    load = gan.models.from_checkpoint.generator_from_checkpoint

    def counting(*args, **kwargs):
        net, conf = load(*args, **kwargs)
        return (lambda z: calls.append(z.shape[0]) or net(z)), conf

    monkeypatch.setattr(gan.models.from_checkpoint, "generator_from_checkpoint", counting)
    out = tmp_path / "samples.npz"
    assert script.main([str(run_dir), "--n", "1000", "--batch-size", "96", "--npz", str(out)]) == 0
    assert max(calls) == 96 and sum(calls) == 1000  # never more than one batch in memory
    assert "batch" in capsys.readouterr().err  # the progress bar
    samples = np.load(out)["samples"]
    assert samples.shape == (1000, 3, 32, 32) and samples.dtype == np.float32
    assert -1.0 <= samples.min() and samples.max() <= 1.0
    grid = tmp_path / "grid.png"
    assert script.main([str(latest_checkpoint(run_dir)), "--n", "16", "--out", str(grid)]) == 0
    np.testing.assert_array_equal(image_grid(samples[:16]), pixels(grid))  # the npz starts with the grid's samples
    with pytest.raises(SystemExit):
        script.main([str(run_dir), "--n", "100000", "--out", str(tmp_path / "huge.png")])
    assert "at most 1024 images" in capsys.readouterr().err and not (tmp_path / "huge.png").exists()


def test_bench_generate_reports_peak_memory_per_n(run_dir, tmp_path):
    out = tmp_path / "bench.json"
    done = run_script("scripts/bench/bench_generate.py", str(run_dir), "--n", "64,600", "--batch-size", "64",
                      "--json", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    records = json.loads(out.read_text())
    assert [r["n"] for r in records] == [64, 600]
    assert all(r["peak_rss_mib"] > 50 and r["seconds"] > 0 for r in records)
    assert records[1]["npz_bytes"] > 600 * 3 * 32 * 32 * 4  # the samples were written


# The probe's 351-byte "billion laughs" (10^7 leaves once expanded), appended to a checkpoint's stored config.
LAUGHS = "laughs:\n  a: &a [l, l, l, l, l, l, l, l, l, l]\n" + "".join(
    f"  {chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]\n" for i in range(6))


def tampered(run_dir: Path, tmp_path: Path, config_tail: str) -> Path:
    """A copy of the run's checkpoint whose stored config ends with `config_tail`."""
    from gan.models.checkpoint import load_checkpoint, save_checkpoint

    arrays, meta = load_checkpoint(latest_checkpoint(run_dir))
    meta["config"] += config_tail
    path = tmp_path / "received.ckpt"
    save_checkpoint(path, arrays, meta)
    return path


@pytest.mark.parametrize("tail, message", [
    (LAUGHS, "uses the YAML alias *a"),
    ("data:\n  root: ${oc.env:HOME}/data\n", "holds OmegaConf interpolations (${...}) at data.root"),
])
def test_a_received_checkpoint_cannot_hang_or_run_resolvers_in_any_tool(run_dir, tmp_path, tail, message,
                                                                        tiny_overrides):
    """A 351-byte alias bomb in the embedded config hung generate/export/quantize/resume in OmegaConf.create."""
    received = str(tampered(run_dir, tmp_path, tail))
    for script, args in (("scripts/generate.py", ["--n", "4", "--out", str(tmp_path / "x.png")]),
                         ("scripts/export.py", ["--format", "MINDIR", "--out", str(tmp_path / "x.mindir")]),
                         ("scripts/quantize.py", ["--calib", "8", "--out", str(tmp_path / "q")])):
        result = run_script(script, received, *args, timeout=120)
        assert result.returncode == 2 and "received.ckpt" in result.stderr and message in result.stderr, script
    with pytest.raises(CheckpointError, match="received.ckpt"):  # the loader's error, as in every tool
        run(compose_config([*tiny_overrides, "data.num_images=32", "train.steps=3", f"train.resume={received}"]),
            tmp_path / "resumed")


@pytest.mark.parametrize("suffix, image_format", [(".png", "PNG"), (".jpg", "JPEG"), (".webp", "WEBP")])
def test_the_grid_is_written_in_the_format_its_name_says(run_dir, tmp_path, suffix, image_format):
    out = tmp_path / f"grid{suffix}"
    result = generate(str(run_dir), "--n", "4", "--out", str(out))
    assert result.returncode == 0, result.stderr[-3000:]
    with Image.open(out) as image:
        assert image.format == image_format


@pytest.mark.parametrize("args, message", [
    (["--out", "grid.xyz"], "--out grid.xyz: .xyz is not an image type written here; end the name with one of .png"),
    (["--out", "{tmp}"], "--out {tmp} is a directory; give a file name in it, e.g. {tmp}/grid.png"),
    (["--npz", "{tmp}"], "--npz {tmp} is a directory; give a file name in it, e.g. {tmp}/samples.npz"),
])
def test_an_output_that_cannot_be_written_is_a_usage_error(run_dir, tmp_path, args, message):
    result = generate(str(run_dir), *[a.format(tmp=tmp_path) for a in args])
    assert result.returncode == 2 and message.format(tmp=tmp_path) in result.stderr, result.stderr[-2000:]


def test_a_2d_checkpoint_gives_the_scatter_plot_of_its_run(tmp_path, tiny_2d):
    """A ring8 generator's samples are points: the grid is the run's scatter plot (raw ValueError before), also
    for its int8 quantisation (generate --int8)."""
    run_dir = tmp_path / "ring8"
    run(compose_config([*tiny_2d, "train.dry_run=true", "eval.num_samples=64", "train.num_samples=64",
                        "diagnostics.enabled=false"]), run_dir)
    result = generate(str(run_dir), "--n", "64", "--out", str(tmp_path / "points.png"))
    assert result.returncode == 0, result.stderr[-3000:]
    np.testing.assert_array_equal(pixels(tmp_path / "points.png"), pixels(run_dir / "samples" / "step_000002.png"))
    quantized = run_script("scripts/quantize.py", str(run_dir), "--calib", "16", "--eval-n", "64", "--out",
                           str(tmp_path / "q"))
    assert quantized.returncode == 0, quantized.stderr[-3000:]
    result = generate("--int8", str(tmp_path / "q"), "--n", "64", "--out", str(tmp_path / "q.png"))
    assert result.returncode == 0 and pixels(tmp_path / "q.png").shape == (320, 320, 3), result.stderr[-3000:]
