"""Run the Ascend C LeakyReLU kernels (ops/csrc/ascendc) on the CPU through the strict Ascend C twin.

    python -m tools.ascend_twin --n 1000000 --dtype float16 --slope 0.2 --clamp 256   # float32|float16|bfloat16
    python -m tools.ascend_twin --n 100 --dump --range 90:100

Run it from the repository root: the twin is a developer tool beside the kernels, not part of the installed package.

Compiles the unmodified host tiling and kernels against tools/ascend_twin (cached), runs the forward and
backward kernels over the planned cores on boundary values + random data, compares them bit for bit with
ops/reference.py, and prints the plan and the result. Exits 1 on any mismatch or broken hardware rule.
--dump prints, per tile, every UB buffer the kernel writes for the elements of --range (default: the last
8 elements, i.e. the tail). See docs/ascend_twin.md.
"""
from __future__ import annotations

import argparse

import ml_dtypes
import numpy as np

from ops import reference as ref
from tools.ascend_twin import twin

MAX_N = 1 << 26  # the twin holds every tensor in host memory (about 16 bytes per element)


def parse_range(text: str, n: int) -> tuple[int, int]:
    """'A:B' -> (A, B) with 0 <= A < B <= n."""
    parts = text.split(":")
    if len(parts) != 2 or not all(p.strip().lstrip("-").isdigit() for p in parts):
        raise ValueError(f"--range must look like A:B (element indices), got {text!r}")
    lo, hi = int(parts[0]), int(parts[1])
    if not 0 <= lo < hi <= n:
        raise ValueError(f"--range {text} must satisfy 0 <= A < B <= --n ({n})")
    return lo, hi


def inputs(n: int, dtype: type, clamp: float | None, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """x: random values with the boundary values (+-0, subnormals, extremes, NaN, +-inf, +-clamp) at the
    start and again at the end, so the first tile and the tail both see them; dy: random."""
    rng = np.random.default_rng(seed)
    info = ml_dtypes.finfo(dtype)
    special = [0.0, -0.0, 1.0, -1.0, float(info.tiny), -float(info.tiny), float(info.smallest_subnormal),
               -float(info.smallest_subnormal), float(info.max), -float(info.max), np.nan, np.inf, -np.inf]
    if clamp is not None:
        special += [clamp, -clamp, 2 * clamp, -2 * clamp]
    x = (rng.standard_normal(n) * 100).astype(dtype)
    k = min(len(special), n)
    x[:k] = np.array(special[:k], dtype=dtype)
    x[n - k:] = np.array(special[:k], dtype=dtype)
    return x, (rng.standard_normal(n) * 10).astype(dtype)


def show_plan(p: twin.TwinPlan, soc: str, direction: str) -> None:
    plan = p.plan
    print(f"{direction} plan ({soc}, host tiling of ops/csrc/ascendc/op_host): n={plan.n:,} tile_len={plan.tile_len:,} "
          f"total_tiles={plan.total_tiles} used_cores={plan.used_cores} base_tiles={plan.base_tiles} "
          f"extra_tiles={plan.extra_tiles} block_dim={p.block_dim} slope={p.slope:.9g} "
          f"clamp={'off' if not p.has_clamp else f'{p.clamp:.9g}'}")


def check(direction: str, x: np.ndarray, dy: np.ndarray | None, expected: np.ndarray, args) -> bool:
    """One launch through the twin; prints its plan, UB use, dump and verdict. True when bit-exact."""
    dump = parse_range(args.range, x.size) if args.range else (max(0, x.size - 8), x.size)
    try:
        result = twin.run(x, dy=dy, slope=args.slope, clamp=args.clamp, soc=args.soc,
                          dump=dump if args.dump and x.size else None, variant=args.variant)
    except twin.TwinRuleError as error:
        print(f"{direction}: RULE BROKEN: {error}")
        return False
    show_plan(result.plan, args.soc, direction)
    if args.dump:
        print(f"{direction} UB dump of elements [{dump[0]}, {dump[1]}) (~ = never written; VECCALC#buf0[k * "
              f"{result.plan.plan.tile_len}] is scratch tile k):")
        print(result.dump, end="")
    bad = twin.mismatches(result.output, expected)
    verdict = "bit-exact vs ops/reference.py" if bad.size == 0 else (
        f"MISMATCH: {bad.size} elements differ, first at {bad[0]}: twin {result.output[bad[0]]!r} vs "
        f"reference {expected[bad[0]]!r}")
    print(f"{direction}: {x.size:,} elements on {result.plan.block_dim} core(s), {result.tiles} tiles, UB "
          f"{result.ub_bytes:,} of {twin.UB_ALLOC_BYTES:,} allocatable bytes, no rule broken; {verdict}")
    return bad.size == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.ascend_twin", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, required=True, help=f"element count, 0..{MAX_N:,}")
    parser.add_argument("--dtype", choices=sorted(twin.DTYPES), default="float32")
    parser.add_argument("--slope", type=float, default=0.2, help="negative_slope attribute (default 0.2)")
    parser.add_argument("--clamp", type=float, default=None, help="clamp attribute (default: off)")
    parser.add_argument("--soc", choices=sorted(twin.SOCS), default=twin.DEFAULT_SOC)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dump", action="store_true", help="print each tile's UB buffers for --range")
    parser.add_argument("--range", default=None, help="A:B element range of --dump (default: the last 8)")
    parser.add_argument("--variant", choices=sorted(twin.VARIANTS), default=None,
                        help="run a deliberately broken kernel instead (to see what the twin reports)")
    args = parser.parse_args(argv)
    if not 0 <= args.n <= MAX_N:
        parser.error(f"--n must be in 0..{MAX_N:,}, got {args.n}")
    if args.range is not None:
        try:
            parse_range(args.range, args.n)
        except ValueError as error:
            parser.error(str(error))
    dtype = twin.DTYPES[args.dtype][2]
    x, dy = inputs(args.n, dtype, args.clamp, args.seed)
    ok = check("forward", x, None, ref.forward(x, args.slope, args.clamp), args)
    ok &= check("backward", x, dy, ref.backward(x, dy, args.slope, args.clamp), args)
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
