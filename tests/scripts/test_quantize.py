"""scripts/quantize.py and generate.py --int8 on tiny checkpoints; gan.models.quantize's grids and pipeline."""
import json
import subprocess
from pathlib import Path

import mindspore as ms
import numpy as np
import pytest
from PIL import Image

import gan.training.tasks
from gan.config.schema import compose_config
from gan.core.streams import fixed_latents
from gan.metrics.classifier import ClassifierConfig, load_classifier
from gan.models.checkpoint import latest_checkpoint
from gan.models.from_checkpoint import generator_from_checkpoint
from gan.models.quantize import QuantError, affine_grid, dequantize, float_layers, load_quantized, quantize
from gan.training.loop import run
from ops import LeakyReLU
from ops import reference as ref
from tests.helpers import run_script


def script(name: str, *args: str) -> subprocess.CompletedProcess:
    return run_script(f"scripts/{name}", *args)


def pixels(path: Path) -> np.ndarray:
    with Image.open(path) as image:
        return np.asarray(image)


@pytest.fixture(scope="module")
def quantized(tmp_path_factory, tiny_checkpoint) -> tuple[Path, Path]:
    """(checkpoint, DIR): a 2-step shapes run (different slope per G layer) quantised by the script."""
    run_dir = tmp_path_factory.mktemp("run")
    run(compose_config(tiny_checkpoint + ["act.g_layers=[0.0,0.2,0.5]"]), run_dir)
    out = tmp_path_factory.mktemp("q") / "int8"
    result = script("quantize.py", str(latest_checkpoint(run_dir)), "--calib", "48", "--eval-n", "24",
                    "--out", str(out))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "no quality metrics" in result.stdout and "PSNR" in result.stdout
    return latest_checkpoint(run_dir), out


def test_affine_grid_covers_zero_exactly_and_round_trips():
    scale, zp = affine_grid(-0.5, 1.5)
    assert scale == pytest.approx(2.0 / 255) and quantize(np.float32([0.0]), scale, zp)[0] == zp
    assert quantize(np.float32([-0.5, 1.5, 9.0, -9.0]), scale, zp).tolist() == [-128, 127, 127, -128]
    x = np.linspace(-0.5, 1.5, 101, dtype=np.float32)
    assert np.abs(dequantize(quantize(x, scale, zp), scale, zp) - x).max() <= scale / 2 + 1e-7
    assert affine_grid(0.2, 0.7)[1] == -128  # range widened to include 0
    assert affine_grid(0.0, 0.0) == (1.0, -128)
    # Ties go to even, as ONNX QuantizeLinear: 0.5 and 1.5 grid steps -> 0 and 2.
    assert quantize(np.float32([0.5, 1.5, 2.5]), 1.0, 0).tolist() == [0, 2, 2]


@pytest.mark.slow
def test_directory_holds_generator_parameters_and_per_layer_parameters(quantized):
    ckpt, out = quantized
    record = json.loads((out / "quant.json").read_text())
    assert record["calibration"]["method"] == "minmax" and record["calibration"]["latents"] == 48
    assert [layer["negative_slope"] for layer in record["layers"]] == [0.0, 0.2, 0.5]
    for layer in record["layers"]:
        assert layer["in_min"] < layer["in_max"]
        assert layer["in_scale"] > 0 and -128 <= layer["in_zero_point"] <= 127
    report = json.loads((out / "report.json").read_text())
    assert report["eval_latents"] == 24 and report["output_error"]["psnr_db"] > 30
    assert pixels(out / "samples_int8.png").shape == pixels(out / "samples_float.png").shape


@pytest.mark.slow
def test_int8_pipeline_is_float_blocks_and_the_reference_table(quantized):
    ckpt, out = quantized
    qnet, _ = load_quantized(out)
    z = fixed_latents(9, 6, 16)
    # The same pipeline spelled out with the numpy reference of the int8 op.
    net, _ = generator_from_checkpoint(ckpt)
    acts = {a.layer: a for a in qnet.acts.values()}
    x = ms.Tensor(z)
    for i, cell in enumerate(float_layers(net)):
        if isinstance(cell, LeakyReLU):
            a = acts[i]
            codes = ref.quantized_leaky_relu(quantize(x.asnumpy(), a.in_scale, a.in_zero_point), a.negative_slope,
                                             a.in_scale, a.in_zero_point, a.out_scale, a.out_zero_point)
            x = ms.Tensor(dequantize(codes, a.out_scale, a.out_zero_point))
        else:
            x = cell(x)
    int8 = qnet(z)
    np.testing.assert_array_equal(int8, x.asnumpy())
    float_out = net(ms.Tensor(z)).asnumpy()
    assert not np.array_equal(int8, float_out)  # activations really were quantised
    np.testing.assert_allclose(int8, float_out, atol=0.05)


@pytest.mark.slow
def test_generate_int8_reproduces_the_int8_grid(quantized, tmp_path):
    _, out = quantized
    grid = tmp_path / "grid.png"
    result = script("generate.py", "--int8", str(out), "--n", "64", "--out", str(grid))
    assert result.returncode == 0, result.stderr[-3000:]
    np.testing.assert_array_equal(pixels(grid), pixels(out / "samples_int8.png"))


@pytest.mark.slow
def test_generate_needs_exactly_one_source_and_rejects_other_directories(quantized, tmp_path):
    ckpt, out = quantized
    assert script("generate.py", str(ckpt), "--int8", str(out)).returncode == 2
    assert script("generate.py").returncode == 2
    result = script("generate.py", "--int8", str(tmp_path), "--out", str(tmp_path / "x.png"))
    assert result.returncode == 2 and "quant.json is missing" in result.stderr
    with pytest.raises(QuantError, match="quant.json"):
        load_quantized(tmp_path)


@pytest.mark.slow
def test_mnist_report_compares_the_projects_metrics(tmp_path, monkeypatch, tiny_checkpoint):
    """In-process on a tiny mnist run, with a small classifier standing in for the cached default one."""
    run_dir = tmp_path / "run"
    run(compose_config(tiny_checkpoint + ["data=mnist", "eval.enabled=false"]), run_dir)
    small = load_classifier(config=ClassifierConfig(hidden=(64,), epochs=3), directory=tmp_path / "classifier")
    monkeypatch.setattr(gan.training.tasks, "load_classifier", lambda: small)
    from scripts import quantize as module
    out = tmp_path / "q"
    assert module.main([str(latest_checkpoint(run_dir)), "--calib", "32", "--eval-n", "40", "--out", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    names = ["class_coverage", "class_kl", "mean_confidence", "frechet_distance"]
    assert list(report["float"]) == names and list(report["int8"]) == names
    assert report["change"]["frechet_distance"] == pytest.approx(
        report["int8"]["frechet_distance"] - report["float"]["frechet_distance"])


@pytest.mark.slow
def test_a_generator_without_leaky_relu_is_refused_by_quantize_in_its_own_words(tmp_path, tiny_checkpoint):
    """An ELU generator: an ExportError traceback about export before; now one line from quantize, exit 1."""
    run_dir = tmp_path / "elu"
    run(compose_config(tiny_checkpoint + ["act.g_kind=elu", "fusion=none"]), run_dir)
    result = script("quantize.py", str(run_dir), "--calib", "8", "--out", str(tmp_path / "q"))
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert "cannot quantise this generator: layer 'act0' (ELU)" in result.stderr
    assert "LeakyReLU or ReLU (act.g_kind=leaky_relu|relu)" in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("tool", ["quantize.py", "export.py"])
def test_a_run_directory_means_its_newest_checkpoint_and_an_empty_one_is_named(quantized, tmp_path, tool):
    checkpoint, _ = quantized
    run_dir = checkpoint.parent.parent
    args = ["--calib", "8", "--eval-n", "8", "--out", str(tmp_path / "q")] if tool == "quantize.py" else \
        ["--format", "MINDIR", "--out", str(tmp_path / "g.mindir")]
    result = script(tool, str(run_dir), *args)
    assert result.returncode == 0 and f"using {checkpoint}" in result.stderr, result.stderr[-3000:]
    (tmp_path / "empty").mkdir()
    result = script(tool, str(tmp_path / "empty"), *args)
    assert result.returncode == 2 and "is a directory without training checkpoints" in result.stderr
    assert "does not exist" not in result.stderr
