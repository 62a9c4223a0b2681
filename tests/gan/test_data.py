"""Image data: mnist/folder/shapes contents, determinism, resume equivalence, shards, bad-input errors."""
from __future__ import annotations

import itertools
import logging
import os
from types import SimpleNamespace

import numpy as np
import pytest
from PIL import Image

from gan.data import sources as gdata
from gan.data.sources import ShapesSource, build_image_data, load_mnist_5k


def _cfg(name: str = "mnist", **fields) -> SimpleNamespace:
    values = {"name": name, "root": None, "channels": 1 if name == "mnist" else 3, "num_workers": 0,
              "num_images": None}
    values.update(fields)
    return SimpleNamespace(**values)


def _take(data, start_step: int, count: int) -> np.ndarray:
    return np.stack(list(itertools.islice(data.batches(start_step), count)))


# --------------------------------------------------------------------------------------------- mnist

def test_mnist_5k_split_is_fixed_balanced_and_disjoint():
    images, labels = load_mnist_5k()
    assert images.shape == (5000, 28, 28) and images.dtype == np.uint8
    assert labels.shape == (5000,) and labels.dtype == np.int64
    train_x, train_y = load_mnist_5k("train")
    held_x, held_y = load_mnist_5k("held_out")
    assert np.bincount(train_y).tolist() == [400] * 10
    assert np.bincount(held_y).tolist() == [100] * 10
    assert np.bincount(labels[:50]).tolist() == [5] * 10  # classes interleaved: prefixes are balanced
    rows = {x.tobytes() for x in train_x}
    assert not any(x.tobytes() in rows for x in held_x)
    assert images.max() == 255 and (images > 0).mean() > 0.1
    with pytest.raises(ValueError, match="'test'"):
        load_mnist_5k("test")


@pytest.mark.parametrize("image_size", [32, 64])
def test_mnist_batches_shape_range_and_padding(image_size):
    data = build_image_data(_cfg(), image_size=image_size, batch_size=16, seed=0)
    assert (data.name, data.channels, data.image_size, data.num_images) == ("mnist", 1, image_size, 4000)
    batch = next(data.batches())
    assert batch.shape == (16, 1, image_size, image_size) and batch.dtype == np.float32
    assert batch.min() == -1.0 and batch.max() <= 1.0 and batch.max() > 0.9
    border = max(1, image_size // 16)  # the 2-pixel pad of 28 -> 32, scaled
    np.testing.assert_array_equal(batch[:, :, :border], -1.0)


def test_mnist_rgb_replicates_gray_and_caps_count():
    data = build_image_data(_cfg(channels=3, num_images=100), image_size=32, batch_size=8, seed=0)
    batch = next(data.batches())
    assert data.num_images == 100 and batch.shape == (8, 3, 32, 32)
    np.testing.assert_array_equal(batch[:, 0], batch[:, 2])


def test_batches_are_a_function_of_seed_and_step():
    first = _take(build_image_data(_cfg(), image_size=32, batch_size=32, seed=1), 0, 3)
    again = _take(build_image_data(_cfg(), image_size=32, batch_size=32, seed=1), 0, 3)
    other = _take(build_image_data(_cfg(), image_size=32, batch_size=32, seed=2), 0, 3)
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)


def test_resume_sees_the_tail_of_the_stream_across_epochs():
    data = build_image_data(_cfg(num_images=50), image_size=32, batch_size=32, seed=3)  # epochs end mid-batch
    full = _take(data, 0, 12)
    for k in (1, 5, 11):
        np.testing.assert_array_equal(_take(data, k, 12 - k), full[k:])


def test_each_epoch_visits_every_image_once_in_a_new_order():
    data = build_image_data(_cfg(num_images=50), image_size=32, batch_size=7, seed=0)
    epoch0, epoch1 = data.stream_indices(0, 50), data.stream_indices(50, 50)
    assert sorted(epoch0) == sorted(epoch1) == list(range(50))
    assert not np.array_equal(epoch0, epoch1)


def test_shards_are_disjoint_and_cover_the_data():
    shards = [build_image_data(_cfg(num_images=100), image_size=32, batch_size=8, seed=0, shard_id=k, num_shards=3)
              for k in range(3)]
    seen = [set(np.concatenate([d.batch_indices(s) for s in range(40)]).tolist()) for d in shards]
    for a, b in itertools.combinations(seen, 2):
        assert not a & b
    assert set().union(*seen) == set(range(100))
    assert [d.num_images for d in shards] == [34, 33, 33]


@pytest.mark.parametrize("fields, kwargs, message", [
    ({"name": "cifar"}, {}, "data.name='cifar'"),
    ({"channels": 2}, {}, "data.channels=2"),
    ({"num_workers": -1}, {}, "data.num_workers=-1"),
    ({}, {"shard_id": 2, "num_shards": 2}, "shard_id=2"),
    ({}, {"batch_size": 0}, "batch_size=0"),
    ({}, {"seed": -5}, "seed=-5"),
    ({}, {"image_size": 0}, "image_size=0"),
])
def test_bad_settings_name_the_value(fields, kwargs, message):
    args = {"image_size": 32, "batch_size": 8, "seed": 0} | kwargs
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        build_image_data(_cfg(**fields), **args)


def test_sample_is_deterministic_and_may_exceed_the_dataset():
    data = build_image_data(_cfg(num_images=20), image_size=32, batch_size=8, seed=0)
    sample = data.sample(30)
    assert sample.shape == (30, 1, 32, 32)
    np.testing.assert_array_equal(sample, data.sample(30))
    np.testing.assert_array_equal(sample[:8], next(data.batches()))


# --------------------------------------------------------------------------------------------- shapes

def test_shapes_are_deterministic_varied_and_in_range():
    a, b, c = (ShapesSource(100, 32, 3, seed) for seed in (0, 0, 1))
    np.testing.assert_array_equal(np.stack([a[i] for i in range(10)]), np.stack([b[i] for i in range(10)]))
    assert not np.array_equal(a[0], c[0])
    assert all(len(np.unique(a[i].reshape(-1, 3), axis=0)) > 2 for i in range(10))  # background + a shape + edges
    data = build_image_data(_cfg("shapes", num_images=64), image_size=32, batch_size=16, seed=0)
    batch = next(data.batches())
    assert (data.num_images, batch.shape) == (64, (16, 3, 32, 32))
    assert -1.0 <= batch.min() and batch.max() <= 1.0
    np.testing.assert_array_equal(_take(data, 2, 2), _take(data, 0, 4)[2:])
    with pytest.raises(IndexError, match="100"):
        a[100]


def test_shapes_gray_and_default_count():
    data = build_image_data(_cfg("shapes", channels=1), image_size=16, batch_size=4, seed=0)
    assert data.num_images == gdata.SHAPES_DEFAULT_COUNT
    assert next(data.batches()).shape == (4, 1, 16, 16)


# --------------------------------------------------------------------------------------------- folder

def _three_stripes(width: int = 30, height: int = 10) -> Image.Image:
    """Red | green | blue thirds: a center crop of the square keeps only green."""
    array = np.zeros((height, width, 3), np.uint8)
    third = width // 3
    array[:, :third, 0] = array[:, third:2 * third, 1] = array[:, 2 * third:, 2] = 255
    return Image.fromarray(array)


@pytest.fixture
def image_tree(tmp_path):
    """Nested jpg/png/webp files, plus a truncated jpg, a text file named .png and a non-image extension."""
    rng = np.random.default_rng(0)
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "c").mkdir()
    for i, name in enumerate(["a/one.jpg", "a/b/two.png", "a/b/three.webp", "c/four.JPG", "five.jpeg",
                              "c/six.png"]):
        Image.fromarray(rng.integers(0, 256, (20 + i, 24, 3), dtype=np.uint8)).save(tmp_path / name)
    _three_stripes().save(tmp_path / "c" / "stripes.png")
    whole = (tmp_path / "a" / "one.jpg").read_bytes()
    (tmp_path / "a" / "truncated.jpg").write_bytes(whole[: len(whole) // 2])
    (tmp_path / "c" / "fake.png").write_text("this is not an image")
    (tmp_path / "README.txt").write_text("ignored: not an image extension")
    return tmp_path


def test_folder_skips_unreadable_files_with_one_counted_warning(image_tree, caplog):
    with caplog.at_level(logging.WARNING, logger="gan.data.sources"):
        data = build_image_data(_cfg("folder", root=str(image_tree)), image_size=8, batch_size=4, seed=0)
    warnings = [r.getMessage() for r in caplog.records if r.name == "gan.data.sources" and r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "skipped 2 unreadable image file(s) of 9" in warnings[0]
    assert "truncated.jpg" in warnings[0] and "fake.png" in warnings[0]
    assert (data.name, data.num_images, data.channels) == ("folder", 7, 3)
    batch = next(data.batches())
    assert batch.shape == (4, 3, 8, 8) and batch.dtype == np.float32
    assert -1.0 <= batch.min() and batch.max() <= 1.0


def test_folder_center_crops_to_a_square(tmp_path):
    _three_stripes(60, 20).save(tmp_path / "stripes.png")
    image = gdata.read_image(tmp_path / "stripes.png", 8, "RGB")
    assert image.shape == (8, 8, 3)
    np.testing.assert_array_equal(image[2:6, 2:6], np.broadcast_to([0, 255, 0], (4, 4, 3)))


def test_folder_pipeline_matches_in_process_loading_and_resumes(image_tree, monkeypatch):
    monkeypatch.setattr(gdata, "PIPELINE_CHUNK_STEPS", 3)  # cross MindSpore pipeline boundaries quickly
    kwargs = {"image_size": 8, "batch_size": 5, "seed": 4}
    piped = build_image_data(_cfg("folder", root=str(image_tree), num_workers=2), **kwargs)
    local = build_image_data(_cfg("folder", root=str(image_tree), num_workers=0), **kwargs)
    full = _take(piped, 0, 8)
    np.testing.assert_array_equal(full, _take(local, 0, 8))
    np.testing.assert_array_equal(_take(piped, 4, 4), full[4:])


def test_folder_gray_and_cap(image_tree):
    data = build_image_data(_cfg("folder", root=str(image_tree), channels=1, num_images=3), image_size=8,
                            batch_size=3, seed=0)
    assert data.num_images == 3 and next(data.batches()).shape == (3, 1, 8, 8)


@pytest.mark.parametrize("name", ["folder", "shapes"])
def test_fewer_images_than_a_batch_is_refused_with_the_counts(image_tree, name):
    """3 images and batch 64 would train on each image ~21 times a batch: refused, naming both numbers."""
    cfg = _cfg(name, root=str(image_tree), num_images=3)
    with pytest.raises(ValueError, match=r"has 3 images, fewer than train.batch_size=64.*train.batch_size<=3"):
        build_image_data(cfg, image_size=8, batch_size=64, seed=0)
    with pytest.raises(ValueError, match=r"3 images in this rank's shard \(1 of 2\), fewer than train.batch_size=4"):
        build_image_data(_cfg(name, root=str(image_tree), num_images=6), image_size=8, batch_size=4, seed=0,
                         shard_id=1, num_shards=2)


def test_empty_missing_and_unreadable_folders_name_the_path(tmp_path):
    kwargs = {"image_size": 8, "batch_size": 2, "seed": 0}
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    with pytest.raises(ValueError, match="empty.*holds no"):
        build_image_data(_cfg("folder", root=str(tmp_path / "empty")), **kwargs)
    with pytest.raises(FileNotFoundError, match="missing"):
        build_image_data(_cfg("folder", root=str(tmp_path / "missing")), **kwargs)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "x.png").write_text("nope")
    with pytest.raises(ValueError, match="bad.*none of its 1 image files is readable"):
        build_image_data(_cfg("folder", root=str(tmp_path / "bad")), **kwargs)
    with pytest.raises(ValueError, match="data.root=PATH"):
        build_image_data(_cfg("folder"), **kwargs)


@pytest.mark.parametrize("mode", ["I;16", "I;16B"])
@pytest.mark.parametrize("channels", ["L", "RGB"])
def test_16_bit_grey_is_scaled_to_8_bits_not_clipped(tmp_path, mode, channels):
    """A 0..65535 gradient keeps its range: 65535 -> 255, 32896 -> 128, 0 -> 0 (Pillow alone clips at 255)."""
    values = np.linspace(0, 65535, 32).round().astype(np.uint16)
    wide = np.tile(values, (32, 1))
    raw = wide.astype("<u2" if mode == "I;16" else ">u2")
    image = Image.frombytes(mode, (32, 32), raw.tobytes())
    path = tmp_path / "gradient16.png"
    image.save(path)
    with Image.open(path) as saved:
        assert saved.mode.startswith("I")  # really stored 16-bit
    got = gdata.read_image(path, 32, channels)
    expected = np.round(wide / 257.0).astype(np.uint8)
    for c in range(got.shape[2]):
        np.testing.assert_array_equal(got[:, :, c], expected)
    assert got.min() == 0 and got.max() == 255 and (got == 255).mean() < 0.05


def _folder_of(root, count: int):
    """`count` random 12x12 PNGs img_00.png ... under root."""
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(1)
    for i in range(count):
        Image.fromarray(rng.integers(0, 256, (12, 12, 3), dtype=np.uint8)).save(root / f"img_{i:02d}.png")
    return root


@pytest.mark.parametrize("workers", [0, 2])
def test_an_image_that_vanishes_during_training_is_skipped_then_too_many_stop_the_stream(tmp_path, workers,
                                                                                      monkeypatch):
    monkeypatch.setattr(gdata, "PIPELINE_CHUNK_STEPS", 2)  # the pipeline reads each chunk's files when it starts
    root = _folder_of(tmp_path / "images", 20)
    data = build_image_data(_cfg("folder", root=str(root), num_workers=workers), image_size=8, batch_size=5, seed=0)
    stream = data.batches()
    next(stream), next(stream)
    (root / "img_03.png").unlink()  # deleted after start-up: every later epoch still visits it
    for _ in range(8):  # two epochs
        assert next(stream).shape == (5, 3, 8, 8)
    [(name, why)] = data.new_unreadable()
    assert name == "img_03.png" and "FileNotFoundError" in why
    assert data.new_unreadable() == []  # reported once
    for i in (4, 5):  # 3 of 20 lost: more than 10%
        (root / f"img_{i:02d}.png").unlink()
    with pytest.raises(gdata.DataError, match=r"3 of the 20 images under data.root=.* became unreadable during "
                                              r"training \(more than 10%\), e.g. img_03.png"):
        for _ in range(12):
            next(stream)


def test_the_fingerprint_follows_a_folders_contents_not_its_timestamps(tmp_path):
    root = _folder_of(tmp_path / "images", 6)
    cfg = _cfg("folder", root=str(root))

    def fingerprint() -> dict:
        return build_image_data(cfg, image_size=8, batch_size=2, seed=0).fingerprint()

    first = fingerprint()
    assert first["dataset"] == "folder" and first["images"] == 6 and first == fingerprint()
    os.utime(root / "img_00.png", (0, 0))  # copied without preserving times: still the same data
    assert fingerprint() == first
    Image.fromarray(np.zeros((12, 12, 3), np.uint8)).save(root / "img_00.png")  # same name, other picture
    replaced = fingerprint()
    assert replaced["images"] == 6 and replaced != first
    Image.fromarray(np.zeros((12, 12, 3), np.uint8)).save(root / "img_99.png")
    assert fingerprint()["images"] == 7
    shapes = [build_image_data(_cfg("shapes", num_images=n), image_size=8, batch_size=2, seed=0).fingerprint()
              for n in (10, 10, 20)]
    assert shapes[0] == shapes[1] != shapes[2]
    mnist = build_image_data(_cfg(num_images=50), image_size=32, batch_size=2, seed=0).fingerprint()
    assert mnist["dataset"] == "mnist" and len(mnist["sha256"]) == 64
