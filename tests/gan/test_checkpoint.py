"""Checkpoint IO: exact round trips, atomic writes, keep-last-K, and clear errors for bad files."""
from __future__ import annotations

import json
import os

import mindspore as ms
import numpy as np
import pytest
from mindspore import nn

from gan.models import checkpoint as ckpt
from gan.models.checkpoint import (
    CheckpointError,
    checkpoint_path,
    latest_checkpoint,
    load_checkpoint,
    prune_checkpoints,
    save_checkpoint,
)


def _arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "G.conv1.weight": rng.standard_normal((8, 4, 3, 3)).astype(np.float32),
        "G.ema.weight_fp16": rng.standard_normal((5, 7)).astype(np.float16),
        "opt.step": np.array(12345, dtype=np.int64),
        "opt.count32": np.arange(6, dtype=np.int32).reshape(2, 3),
        "loss_scale": np.array(65536.0, dtype=np.float32),
        "f64": np.array([1e-300, np.pi]),
        "flags": np.array([True, False]),
        "bytes": np.arange(256, dtype=np.uint8),
        "empty": np.zeros((0, 4), dtype=np.float32),
        "transposed": np.arange(12, dtype=np.float32).reshape(3, 4).T,
    }


META = {"step": 7, "seed": 3, "config": "model:\n  ngf: 32\nnote: é\n", "losses": [0.5, 1.25], "nested": {"a": None}}


def test_round_trip_keeps_values_dtypes_shapes_and_meta(tmp_path):
    path = checkpoint_path(tmp_path, 7)
    save_checkpoint(path, _arrays(), META)
    arrays, meta = load_checkpoint(path)
    assert meta == META
    assert list(arrays) == list(_arrays())
    for name, expected in _arrays().items():
        assert arrays[name].dtype == expected.dtype, name
        assert arrays[name].shape == expected.shape, name
        np.testing.assert_array_equal(arrays[name], expected)


def test_checkpoint_path_layout_and_bad_step(tmp_path):
    assert checkpoint_path(tmp_path, 42) == tmp_path / "checkpoints" / "step_00000042.ckpt"
    with pytest.raises(ValueError, match=r"step=-1"):
        checkpoint_path(tmp_path, -1)


def test_failed_write_leaves_previous_checkpoint_intact(tmp_path, monkeypatch):
    path = checkpoint_path(tmp_path, 5)
    save_checkpoint(path, {"w": np.ones(3, np.float32)}, {"version": "old"})
    real_save = ms.save_checkpoint

    def crash_mid_write(entries, name, **kwargs):
        real_save(entries, name, **kwargs)
        with open(name, "r+b") as f:  # keep half of what was written, as if the process died
            f.truncate(len(f.read()) // 2)
        raise OSError("simulated crash mid-write")

    monkeypatch.setattr(ckpt.ms, "save_checkpoint", crash_mid_write)
    with pytest.raises(OSError, match="simulated crash"):
        save_checkpoint(path, {"w": np.zeros(3, np.float32)}, {"version": "new"})
    arrays, meta = load_checkpoint(path)
    assert meta == {"version": "old"}
    np.testing.assert_array_equal(arrays["w"], np.ones(3, np.float32))
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_leftover_of_killed_write_is_ignored_and_pruned(tmp_path):
    save_checkpoint(checkpoint_path(tmp_path, 1), {"w": np.ones(1, np.float32)}, {})
    leftover = tmp_path / "checkpoints" / ".partial-999-step_00000002.ckpt"
    leftover.write_bytes(b"half a checkpoint")
    assert latest_checkpoint(tmp_path) == checkpoint_path(tmp_path, 1)
    assert prune_checkpoints(tmp_path, keep=1) == [leftover]
    assert not leftover.exists()


def test_prune_keeps_the_newest_k(tmp_path):
    for step in (1, 2, 3, 40, 500):
        save_checkpoint(checkpoint_path(tmp_path, step), {"s": np.array(step)}, {"step": step})
    removed = prune_checkpoints(tmp_path, keep=2)
    assert removed == [checkpoint_path(tmp_path, s) for s in (1, 2, 3)]
    remaining = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
    assert remaining == ["step_00000040.ckpt", "step_00000500.ckpt"]
    assert prune_checkpoints(tmp_path, keep=5) == []
    with pytest.raises(ValueError, match=r"keep=0"):
        prune_checkpoints(tmp_path, keep=0)


def test_latest_checkpoint_orders_by_step_number_not_name(tmp_path):
    assert latest_checkpoint(tmp_path) is None
    (tmp_path / "checkpoints").mkdir()
    assert latest_checkpoint(tmp_path) is None
    for step in (99_999_999, 100_000_000, 9):  # 9 digits sort before 8 as text
        save_checkpoint(checkpoint_path(tmp_path, step), {"s": np.array(step)}, {})
    (tmp_path / "checkpoints" / "notes.txt").write_text("not a checkpoint")
    assert latest_checkpoint(tmp_path) == checkpoint_path(tmp_path, 100_000_000)


@pytest.mark.parametrize("keep_fraction", [0.0, 0.1, 0.5, 0.99])
def test_truncated_file_is_a_checkpoint_error(tmp_path, keep_fraction):
    path = checkpoint_path(tmp_path, 1)
    save_checkpoint(path, _arrays(), META)
    data = path.read_bytes()
    path.write_bytes(data[:int(len(data) * keep_fraction)])
    with pytest.raises(CheckpointError, match="truncated") as error:
        load_checkpoint(path)
    assert str(path) in str(error.value)


def test_flipped_byte_fails_the_crc(tmp_path):
    path = checkpoint_path(tmp_path, 1)
    save_checkpoint(path, _arrays(), META)
    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="corrupt"):
        load_checkpoint(path)


def test_foreign_mindspore_checkpoint_is_rejected(tmp_path):
    path = tmp_path / "dense.ckpt"
    ms.save_checkpoint(nn.Dense(3, 2), str(path), crc_check=True)
    with pytest.raises(CheckpointError, match="not a lrelu-gan one"):
        load_checkpoint(path)


@pytest.mark.parametrize("content", [b"hello world\n" * 10, bytes(range(256)) * 8])
def test_foreign_file_is_rejected(tmp_path, content):
    path = tmp_path / "foreign.ckpt"
    path.write_bytes(content)
    with pytest.raises(CheckpointError, match="foreign.ckpt"):
        load_checkpoint(path)


def test_unknown_format_version_is_rejected(tmp_path):
    path = tmp_path / "future.ckpt"
    header = json.dumps({"format": ckpt.FORMAT, "version": 99, "arrays": {}, "meta": {}})
    ms.save_checkpoint([{"name": "w", "data": ms.Tensor(np.ones(2, np.float32))}], str(path),
                       append_dict={ckpt.MARKER_KEY: header}, crc_check=True)
    with pytest.raises(CheckpointError, match="version 99"):
        load_checkpoint(path)


def test_missing_file_names_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.ckpt"):
        load_checkpoint(tmp_path / "nope.ckpt")


def test_bad_inputs_are_refused_before_writing(tmp_path):
    path = checkpoint_path(tmp_path, 1)
    with pytest.raises(ValueError, match="not JSON-serialisable"):
        save_checkpoint(path, {"w": np.ones(1)}, {"when": object()})
    with pytest.raises(ValueError, match="'names'.*dtype <U1"):
        save_checkpoint(path, {"names": np.array(["a"])}, {})
    with pytest.raises(ValueError, match="array name"):
        save_checkpoint(path, {ckpt.MARKER_KEY: np.ones(1)}, {})
    assert not path.parent.exists() or not any(path.parent.iterdir())


def _with_header(path, arrays: dict, meta) -> None:
    """A checkpoint whose header is written by hand (save_checkpoint refuses to write these)."""
    header = json.dumps({"format": ckpt.FORMAT, "version": ckpt.FORMAT_VERSION, "arrays": arrays, "meta": meta})
    ms.save_checkpoint([{"name": "w", "data": ms.Tensor(np.ones(2, np.float32))}], str(path),
                       append_dict={ckpt.MARKER_KEY: header}, crc_check=True)


@pytest.mark.parametrize("spec, message", [
    ({"dtype": "nonsense", "shape": [2]}, "has dtype 'nonsense'; checkpoints hold bool, integer and float"),
    ({"dtype": "O", "shape": [0]}, "has dtype 'O'"),
    ({"dtype": "<U3", "shape": [2]}, "has dtype '<U3'"),
    ("float32[2]", "manifest entry 'w' is 'float32\\[2\\]'"),
    ({"dtype": "<f4", "shape": "2"}, "expected \\{'dtype'"),
    ({"dtype": "<f4", "shape": [-5, 0]}, "expected \\{'dtype'"),
])
def test_a_malformed_manifest_entry_is_a_checkpoint_error(tmp_path, spec, message):
    """A manifest dtype numpy does not know, or a spec that is not a dict, raised TypeError tracebacks."""
    path = tmp_path / "manifest.ckpt"
    _with_header(path, {"w": spec}, {})
    with pytest.raises(CheckpointError, match=message) as error:
        load_checkpoint(path)
    assert "manifest.ckpt" in str(error.value)


@pytest.mark.parametrize("meta, kind", [([1, 2], "a list"), (None, "null"), ("step 3", "a str")])
def test_meta_that_is_not_a_mapping_is_a_checkpoint_error(tmp_path, meta, kind):
    path = tmp_path / "meta.ckpt"
    _with_header(path, {"w": {"dtype": "<f4", "shape": [2]}}, meta)
    with pytest.raises(CheckpointError, match=f"meta.ckpt.*its meta is {kind}, not a mapping"):
        load_checkpoint(path)


def test_a_checkpoint_over_the_cap_is_refused_before_reading(tmp_path, monkeypatch):
    """No size cap: a 3 GB sparse file cost 17 s and 6.7 GB of memory in MindSpore's reader before it was refused."""
    sparse = tmp_path / "sparse.ckpt"
    with open(sparse, "wb") as f:
        f.truncate(3 * 2 ** 30)
        f.seek(0, 2)
        f.write(b"crc_num0123456789")  # ends like a MindSpore file, so only the size can refuse it early
    monkeypatch.setattr(ms, "load_checkpoint", lambda *a, **k: pytest.fail("the file was read"))
    with pytest.raises(CheckpointError, match=r"sparse.ckpt' is 3072 MiB, over the 2048 MiB cap on checkpoints; "
                                              r"if you trust the file, raise the cap with LRELU_MAX_CKPT_MIB=<MiB>"):
        load_checkpoint(sparse)
    small = tmp_path / "small.ckpt"
    save_checkpoint(small, _arrays(), META)
    monkeypatch.setenv(ckpt.LIMIT_ENV, "0.001")
    with pytest.raises(CheckpointError, match=r"small.ckpt' is 0.00[0-9]+ MiB, over the 0.001 MiB cap"):
        load_checkpoint(small)
    for bad in ("0", "-1", "lots", "nan", "inf"):
        monkeypatch.setenv(ckpt.LIMIT_ENV, bad)
        with pytest.raises(ValueError, match=f"LRELU_MAX_CKPT_MIB='{bad}' is not allowed"):
            load_checkpoint(small)


def test_a_checkpoint_that_is_not_a_regular_file_is_refused_without_opening_it(tmp_path):
    """A FIFO would block a reader forever; a folder is named as such."""
    fifo = tmp_path / "pipe.ckpt"
    os.mkfifo(fifo)
    with pytest.raises(CheckpointError, match="pipe.ckpt' is not a regular file"):
        load_checkpoint(fifo)
    with pytest.raises(CheckpointError, match="is a directory"):
        load_checkpoint(tmp_path)
