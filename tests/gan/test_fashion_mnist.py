"""data=fashion_mnist: the standard idx files read from data.root and checked (gzip, magic numbers, dimensions,
sizes, labels) with errors naming the file; tiny idx files written here; the Debian package's files when installed."""
from __future__ import annotations

import gzip
import struct
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from gan.config.schema import ConfigError, compose_config, to_config
from gan.data import sources as gdata
from gan.data.sources import FASHION_MNIST_ROOT, build_image_data, dataset_images, load_fashion_mnist, read_idx

COUNTS = {"train": 12, "test": 5}


def _idx(images: np.ndarray | None = None, labels: np.ndarray | None = None, magic: int | None = None,
         dims: tuple | None = None, extra: bytes = b"") -> bytes:
    if images is not None:
        head = struct.pack(">IIII", magic or 0x803, *(dims or images.shape))
        return head + images.astype(np.uint8).tobytes() + extra
    head = struct.pack(">II", magic or 0x801, *(dims or labels.shape))
    return head + labels.astype(np.uint8).tobytes() + extra


def write_fashion(root: Path, counts=COUNTS, **overrides: bytes) -> Path:
    """The four gzipped idx files under root; overrides replace a file's (uncompressed) bytes by name."""
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for split, prefix in (("train", "train"), ("test", "t10k")):
        n = counts[split]
        files = {f"{prefix}-images-idx3-ubyte.gz": _idx(images=rng.integers(0, 256, (n, 28, 28))),
                 f"{prefix}-labels-idx1-ubyte.gz": _idx(labels=np.arange(n) % 10)}
        for name, payload in files.items():
            (root / name).write_bytes(gzip.compress(overrides.get(name, payload)))
    return root


@pytest.fixture
def small(monkeypatch, tmp_path):
    """Tiny Fashion-MNIST files (12 train, 5 test images) and the reader's expected counts set to match."""
    monkeypatch.setattr(gdata, "FASHION_MNIST_COUNTS", COUNTS)
    gdata._fashion_mnist.cache_clear()
    yield write_fashion(tmp_path / "fm")
    gdata._fashion_mnist.cache_clear()


def test_reads_both_splits_in_file_order(small):
    images, labels = load_fashion_mnist("train", small)
    assert images.shape == (12, 28, 28) and images.dtype == np.uint8 and labels.tolist() == [i % 10 for i in range(12)]
    assert not images.flags.writeable
    assert load_fashion_mnist("test", small)[0].shape == (5, 28, 28)
    with pytest.raises(ValueError, match="'val'"):
        load_fashion_mnist("val", small)


def test_training_data_is_padded_to_32_like_mnist(small):
    cfg = SimpleNamespace(name="fashion_mnist", root=str(small), channels=1, num_workers=0, num_images=None)
    data = build_image_data(cfg, image_size=32, batch_size=4, seed=0)
    assert (data.num_images, data.channels, data.source_size) == (12, 1, 12)
    batch = next(data.batches())
    assert batch.shape == (4, 1, 32, 32) and batch.min() >= -1 and batch.max() <= 1
    np.testing.assert_array_equal(batch[:, :, :2], -1.0)  # the 2-pixel black border
    raw, _ = load_fashion_mnist("train", small)
    np.testing.assert_array_equal(data.source_images(3)[:, 2:30, 2:30, 0], raw[:3])
    np.testing.assert_array_equal(dataset_images("fashion_mnist", "test", 5, 32, root=small)[:, 2:30, 2:30, 0],
                                  load_fashion_mnist("test", small)[0])
    with pytest.raises(ValueError, match="has 5 images, fewer than the 6 requested"):
        dataset_images("fashion_mnist", "test", 6, 32, root=small)


@pytest.mark.parametrize("name, payload, match", [
    ("train-images-idx3-ubyte.gz", _idx(images=np.zeros((12, 28, 28)), magic=0x801), "magic number 0x00000801"),
    ("train-images-idx3-ubyte.gz", _idx(images=np.zeros((12, 28, 27))), r"dimensions \(12, 28, 27\), expected"),
    ("train-images-idx3-ubyte.gz", _idx(images=np.zeros((11, 28, 28))), r"dimensions \(11, 28, 28\)"),
    ("train-images-idx3-ubyte.gz", _idx(images=np.zeros((12, 28, 28)))[:-5], "data bytes, the header announces"),
    ("train-images-idx3-ubyte.gz", _idx(images=np.zeros((12, 28, 28)), extra=b"x"), r"\+ data bytes"),
    ("train-labels-idx1-ubyte.gz", _idx(labels=np.full(12, 10)), "label 10 is not a class"),
    ("train-labels-idx1-ubyte.gz", b"\x00\x00", "shorter than an idx header"),
])
def test_bad_files_name_the_file_and_what_was_expected(monkeypatch, tmp_path, name, payload, match):
    monkeypatch.setattr(gdata, "FASHION_MNIST_COUNTS", COUNTS)
    gdata._fashion_mnist.cache_clear()
    root = write_fashion(tmp_path / "bad", **{name: payload})
    with pytest.raises(ValueError, match=match) as err:
        load_fashion_mnist("train", root)
    assert name in str(err.value) and "apt-get install dataset-fashion-mnist" in str(err.value)


def test_missing_corrupt_and_absent_folders(monkeypatch, tmp_path):
    monkeypatch.setattr(gdata, "FASHION_MNIST_COUNTS", COUNTS)
    gdata._fashion_mnist.cache_clear()
    root = write_fashion(tmp_path / "fm")
    (root / "t10k-labels-idx1-ubyte.gz").unlink()
    with pytest.raises(FileNotFoundError, match="t10k-labels-idx1-ubyte.gz does not exist.*apt-get install"):
        load_fashion_mnist("test", root)
    (root / "train-images-idx3-ubyte.gz").write_bytes(b"plain bytes, not gzip")
    with pytest.raises(ValueError, match="train-images-idx3-ubyte.gz: not a readable gzip file"):
        load_fashion_mnist("train", root)
    cut = gzip.compress(_idx(images=np.zeros((12, 28, 28))))[:-20]  # truncated stream
    (root / "train-images-idx3-ubyte.gz").write_bytes(cut)
    with pytest.raises(ValueError, match="not a readable gzip file"):
        load_fashion_mnist("train", root)
    with pytest.raises(FileNotFoundError, match="is not a folder.*dataset-fashion-mnist"):
        load_fashion_mnist("train", tmp_path / "nowhere")


def test_config_group_and_default_root():
    conf = to_config(compose_config(["data=fashion_mnist"]))
    assert (conf.data.name, conf.data.root, conf.data.channels, conf.model.image_size) == \
        ("fashion_mnist", FASHION_MNIST_ROOT, 1, 32)
    with pytest.raises(ConfigError, match="fashion"):
        to_config(compose_config(["data.name=fashion"]))


@pytest.mark.skipif(not Path(FASHION_MNIST_ROOT).is_dir(),
                    reason="Debian's dataset-fashion-mnist is not installed (apt-get install dataset-fashion-mnist)")
def test_the_installed_package_has_the_standard_files():
    gdata._fashion_mnist.cache_clear()
    train_x, train_y = load_fashion_mnist("train")
    test_x, test_y = load_fashion_mnist("test")
    assert train_x.shape == (60_000, 28, 28) and test_x.shape == (10_000, 28, 28)
    assert np.bincount(train_y).tolist() == [6000] * 10 and np.bincount(test_y).tolist() == [1000] * 10
    assert read_idx(Path(FASHION_MNIST_ROOT) / "t10k-labels-idx1-ubyte.gz", "labels", 10_000).shape == (10_000,)
