"""Generate samples from a training checkpoint: a PNG grid, or raw samples in an .npz for any number.

    python scripts/generate.py outputs/DATE/TIME/checkpoints/step_00001000.ckpt --n 64 --out grid.png
    python scripts/generate.py outputs/DATE/TIME --n 100000 --npz samples.npz   # the run's newest checkpoint
    python scripts/generate.py --int8 DIR --n 64 --out grid.png   # the int8 generator of scripts/quantize.py

Samples are generated --batch-size latents at a time and streamed to the .npz (array `samples`, float32
(n, C, H, W) in [-1, 1]), so memory stays bounded for any --n; a progress bar shows on stderr when there
is more than one batch. A grid holds at most 1024 images; it is written as PNG, JPEG or WebP after the --out
suffix (.png, .jpg/.jpeg, .webp); a 2D-points checkpoint (experiment=ring8/grid25) gets the scatter plot of its
run's sample pictures. The latents are the run's fixed sample latents (seed 0 by default), so the first images
match the run's sample grids.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

os.environ.setdefault("GLOG_v", "3")  # before MindSpore is imported: silence its C++ logs

import numpy as np  # noqa: E402

from gan.metrics.samples import BATCH, sample_batches, write_npz  # noqa: E402

MAX_GRID = 1024  # images in one PNG grid (32x32 tiles: 4,160 px square at 128 px per image)


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, generate `--n` samples from the run's fixed latents, save the grid and/or the .npz."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint", nargs="?",
                        help="a .ckpt file written by train.py, or a run directory (its newest one)")
    parser.add_argument("--int8", metavar="DIR", help="sample the int8-activation generator that "
                        "scripts/quantize.py wrote to DIR instead of a checkpoint")
    parser.add_argument("--n", type=int, default=64, help="number of samples (default 64)")
    parser.add_argument("--out", default=None,
                        help=f"output PNG grid of at most {MAX_GRID} images (default grid.png unless --npz is given)")
    parser.add_argument("--npz", default=None, help="also or instead write the raw samples to this .npz (any --n)")
    parser.add_argument("--batch-size", type=int, default=BATCH,
                        help=f"latents per generator call; memory grows with it (default {BATCH})")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the latents (default 0; the run's seed reproduces its sample grids)")
    parser.add_argument("--no-ema", action="store_true", help="use the raw generator even if an EMA copy exists")
    args = parser.parse_args(argv)
    for name in ("n", "batch_size"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')}={getattr(args, name)} must be at least 1")
    if (args.checkpoint is None) == (args.int8 is None):
        parser.error("give either a checkpoint or --int8 DIR")
    grid = args.out or (None if args.npz else "grid.png")
    if grid is not None and args.n > MAX_GRID:
        parser.error(f"--n={args.n} is more than one grid shows (at most {MAX_GRID} images); write the raw samples "
                     f"with --npz samples.npz (any --n, generated in batches) or lower --n")
    from gan.run.grids import image_format, save_image

    for option, out in (("--out", grid), ("--npz", args.npz)):
        if out is not None and Path(out).is_dir():
            parser.error(f"{option} {out} is a directory; give a file name in it, e.g. "
                         f"{Path(out) / ('grid.png' if option == '--out' else 'samples.npz')}")
    if grid is not None:
        try:
            image_format(grid)
        except ValueError as err:
            parser.error(f"--out {err}")

    from mindspore import Tensor
    from tqdm import tqdm

    from gan.models.checkpoint import CheckpointError
    from gan.models.from_checkpoint import generator_from_argument
    from gan.models.quantize import QuantError, load_quantized
    from gan.training.tasks import sample_picture

    try:
        if args.int8 is not None:
            forward, conf = load_quantized(args.int8)
        else:
            net, conf, _ = generator_from_argument(args.checkpoint, use_ema=not args.no_ema)
            forward = lambda z: net(Tensor(z)).asnumpy()  # noqa: E731
    except (CheckpointError, QuantError, FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    batches = tqdm(sample_batches(forward, args.seed, args.n, conf.model.nz, args.batch_size), file=sys.stderr,
                   total=math.ceil(args.n / args.batch_size), unit="batch", disable=args.n <= args.batch_size)
    kept: list[np.ndarray] = []  # for the grid: n <= MAX_GRID, small
    try:
        if args.npz is not None:
            stream = (kept.append(batch) or batch for batch in batches) if grid is not None else batches
            print(f"wrote {args.n} samples to {write_npz(args.npz, stream, args.n)}")
        else:
            kept = list(batches)
        if grid is not None:
            picture = sample_picture(conf.data.name)(np.concatenate(kept))
            print(f"wrote {args.n} samples to {save_image(picture, grid)}")
    except OSError as err:
        print(f"error: cannot write {err.filename or grid or args.npz}: {err.strerror or err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
