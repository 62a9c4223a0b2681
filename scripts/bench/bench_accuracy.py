"""Rounding error of the LeakyReLU op against the real-number result, float32 and float16.

Runs the op (forward, and its backward through ms.vjp with a random upstream gradient) on 2^20 normal(0, 100)
values plus 2^16 values from 0 to -65504, and compares with `ops.reference.exact_forward` (float64 with the
decimal slope): max absolute and max relative error over finite results. For float16 it also gives the error of
naive float16 math (the slope stored as a float16, as `np.float16(0.2) * x` computes), which the op's float32
arithmetic must never exceed. Relative errors are taken where the exact result is in the dtype's normal range:
a result that is subnormal (or flushes to 0) has few significant bits left, so its relative error says nothing
about the op. Each record says whether the op's output equals the numpy reference bit for bit.

    python scripts/bench/bench_accuracy.py --json accuracy.json [--slopes 0.2 0.01]
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np

os.environ.setdefault("GLOG_v", "3")
ROOT = Path(__file__).resolve().parents[2]

from gan.core.atomic import write_text_atomic  # noqa: E402


def inputs(dtype: type) -> np.ndarray:
    """The test values: 2^20 normal(0, 100) draws (seed 0) and 2^16 evenly spaced values from 0 to -65504."""
    normal = np.random.default_rng(0).normal(0.0, 100.0, 1 << 20)
    return np.concatenate([normal, -np.linspace(0.0, 65504.0, 1 << 16)]).astype(dtype)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and np.array_equal(a.view(np.uint8), b.view(np.uint8))


def errors(actual: np.ndarray, exact: np.ndarray, dtype: type) -> tuple[float, float]:
    """Max absolute error over finite results, max relative error over exact results in the normal range."""
    from ops import reference

    normal = np.abs(exact) >= np.finfo(dtype).tiny
    return reference.max_errors(actual, exact)[0], reference.max_errors(actual[normal], exact[normal])[1]


def measure(dtype: type, slope: float) -> dict:
    """Forward and backward errors of the op against exact arithmetic, and its agreement with the reference."""
    import mindspore as ms

    from ops import leaky_relu, reference

    x = inputs(dtype)
    dy = np.random.default_rng(1).standard_normal(x.shape).astype(dtype)
    y, pullback = ms.vjp(lambda t: leaky_relu(t, slope), ms.Tensor(x))
    y, dx = y.asnumpy(), pullback(ms.Tensor(dy))[0].asnumpy()
    x64, dy64 = x.astype(np.float64), dy.astype(np.float64)
    exact_dx = np.where(x64 > 0, dy64, slope * dy64)
    exact_y = reference.exact_forward(x, slope)
    fwd_abs, fwd_rel = errors(y, exact_y, dtype)
    bwd_abs, bwd_rel = errors(dx, exact_dx, dtype)
    record = {"dtype": np.dtype(dtype).name, "slope": slope, "n": int(x.size),
              "forward_max_abs": fwd_abs, "forward_max_rel": fwd_rel, "backward_max_abs": bwd_abs,
              "backward_max_rel": bwd_rel,
              "bit_exact_with_reference": same_bits(y, reference.forward(x, slope))
                                          and same_bits(dx, reference.backward(x, dy, slope))}
    if dtype is np.float16:
        with np.errstate(over="ignore"):
            naive = np.where(x > 0, x, np.float16(slope) * x)
        record["naive_fp16_forward_max_abs"], record["naive_fp16_forward_max_rel"] = errors(naive, exact_y, dtype)
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", type=Path, required=True, help="output file: one record per (dtype, slope)")
    parser.add_argument("--slopes", type=float, nargs="+", default=[0.2, 0.01])
    args = parser.parse_args(argv)
    records = [measure(dtype, slope) for dtype in (np.float32, np.float16) for slope in args.slopes]
    for r in records:
        print(f"{r['dtype']:>8} slope {r['slope']:<5} forward {r['forward_max_abs']:.2g} / "
              f"{r['forward_max_rel']:.2g}, backward rel {r['backward_max_rel']:.2g}, "
              f"bit-exact with the reference: {r['bit_exact_with_reference']}")
    write_text_atomic(args.json, json.dumps(records, indent=1) + "\n")
    return 0 if all(r["bit_exact_with_reference"] for r in records) else 1


if __name__ == "__main__":
    raise SystemExit(main())
