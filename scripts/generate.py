"""Write a grid of generated images from a training checkpoint.

    python scripts/generate.py outputs/DATE/TIME/checkpoints/step_00001000.ckpt --n 64 --out grid.png
"""
from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("GLOG_v", "3")  # before MindSpore is imported: silence its C++ logs


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, sample `--n` images with a seeded latent batch, save the PNG grid."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint", help="a .ckpt file written by train.py")
    parser.add_argument("--n", type=int, default=64, help="number of images (default 64)")
    parser.add_argument("--out", default="grid.png", help="output PNG path (default grid.png)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the latent batch (default 0; the run's seed reproduces its sample grids)")
    parser.add_argument("--no-ema", action="store_true", help="use the raw generator even if an EMA copy exists")
    args = parser.parse_args(argv)
    if args.n < 1:
        parser.error(f"--n={args.n} must be at least 1")

    from mindspore import Tensor

    from gan.checkpoint import CheckpointError
    from gan.report import image_grid, save_png
    from gan.checkpoint import generator_from_checkpoint
    from gan.training import fixed_latents

    try:
        net, conf = generator_from_checkpoint(args.checkpoint, use_ema=not args.no_ema)
    except (CheckpointError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    z = fixed_latents(args.seed, args.n, conf.model.nz)
    path = save_png(image_grid(net(Tensor(z)).asnumpy()), args.out)
    print(f"wrote {args.n} samples to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
