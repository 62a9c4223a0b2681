"""Print the tiling plan of ops/csrc/tiling.h for one tensor: tile length, tiles, and per-core ranges.

The articles' worked example (1,000,000 fp32, 192 KiB UB, 60 % usable, 32-element alignment, 8 cores,
one buffer of one tensor):

    python scripts/show_tiling.py 1000000 --dtype float32 --align-elems 32 --cores 8 --buffers 1 --live-tensors 1
"""

from __future__ import annotations

import argparse
import sys

from ops.tiling import (
    ASCEND_UB_BYTES,
    DEFAULT_ALIGN_BYTES,
    DEFAULT_BUFFERS,
    DEFAULT_USABLE_FRACTION,
    TilingParams,
    core_ranges,
    cpu_default_buffer_bytes,
    plan_tiling,
    usable_bytes,
)

DTYPE_SIZES = {"float32": 4, "float16": 2, "bfloat16": 2}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command line: element count, dtype, and every plan parameter with the product's defaults."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("n", type=int, help="element count")
    parser.add_argument("--dtype", choices=sorted(DTYPE_SIZES), default="float32")
    parser.add_argument("--target", choices=["ascend", "cpu"], default="ascend",
                        help="default buffer: 192 KiB Ascend UB, or this CPU's L2 cache")
    parser.add_argument("--buffer-bytes", type=int, help="on-chip buffer bytes (overrides --target)")
    parser.add_argument("--usable-fraction", type=float, default=DEFAULT_USABLE_FRACTION)
    align = parser.add_mutually_exclusive_group()
    align.add_argument("--align-bytes", type=int, help=f"alignment in bytes (default {DEFAULT_ALIGN_BYTES})")
    align.add_argument("--align-elems", type=int, help="alignment in elements of --dtype")
    parser.add_argument("--cores", type=int, default=1)
    parser.add_argument("--buffers", type=int, default=DEFAULT_BUFFERS, help="2 = double buffering")
    parser.add_argument("--live-tensors", type=int, default=2, help="tensors resident per tile (fwd 2, bwd 3)")
    return parser.parse_args(argv)


def params_from_args(args: argparse.Namespace) -> TilingParams:
    """Plan parameters from the command line, alignment converted to bytes."""
    elem_size = DTYPE_SIZES[args.dtype]
    if args.buffer_bytes is not None:
        buffer_bytes = args.buffer_bytes
    else:
        buffer_bytes = ASCEND_UB_BYTES if args.target == "ascend" else cpu_default_buffer_bytes()
    if args.align_elems is not None:
        align_bytes = args.align_elems * elem_size
    else:
        align_bytes = DEFAULT_ALIGN_BYTES if args.align_bytes is None else args.align_bytes
    return TilingParams(n=args.n, elem_size=elem_size, buffer_bytes=buffer_bytes,
                        usable_fraction=args.usable_fraction, align_bytes=align_bytes, cores=args.cores,
                        buffers=args.buffers, live_tensors=args.live_tensors)


def render(p: TilingParams) -> str:
    """The derivation of the tile length, the plan, and one line per used core."""
    plan = plan_tiling(p)
    usable = usable_bytes(p)
    per_tile = p.buffers * p.live_tensors * p.elem_size
    align_elems = p.align_bytes // p.elem_size
    lines = [
        f"n = {p.n:,} elements x {p.elem_size} B, buffer {p.buffer_bytes:,} B, usable {p.usable_fraction:g}, "
        f"align {p.align_bytes} B ({align_elems} elements), cores {p.cores}, "
        f"buffers {p.buffers} x live tensors {p.live_tensors}",
        f"usable bytes  = floor({p.buffer_bytes} * {p.usable_fraction:g}) = {usable:,}",
        f"raw tile      = floor({usable} / ({p.buffers} * {p.live_tensors} * {p.elem_size})) "
        f"= {usable // per_tile:,} elements",
        f"tile_len      = {plan.tile_len:,} elements ({plan.tile_len * p.elem_size:,} B, "
        f"multiple of {align_elems})",
        f"total_tiles   = ceil({p.n} / {plan.tile_len}) = {plan.total_tiles:,}",
        f"used_cores    = min({p.cores}, {plan.total_tiles}) = {plan.used_cores}; "
        f"{plan.extra_tiles} core(s) x {plan.base_tiles + 1} tiles, "
        f"{plan.used_cores - plan.extra_tiles} core(s) x {plan.base_tiles} tiles",
        "",
        f"{'core':>4} {'start':>14} {'end':>14} {'elements':>14} {'full tiles':>10} {'tail':>10}",
    ]
    lines += [f"{core:>4} {r.start:>14,} {r.end:>14,} {r.end - r.start:>14,} {r.full_tiles:>10,} {r.tail_len:>10,}"
              for core, r in enumerate(core_ranges(plan))]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Print the plan; invalid parameters exit with status 2 and the reason."""
    args = parse_args(argv)
    if args.align_elems is not None and args.align_elems < 1:
        print(f"error: --align-elems must be >= 1, got {args.align_elems}", file=sys.stderr)
        return 2
    try:
        print(render(params_from_args(args)))
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
