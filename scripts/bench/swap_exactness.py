"""How exactly `ops.swap_activations` preserves a network's outputs: each MindSpore activation layer against its
swapped replacement, forward (y) and backward (dx for an upstream dy; PReLU's weight gradient dw), float32 and
float16, PyNative and graph mode (ms.jit), split by input class (normal numbers, +-0, subnormals, +-inf, NaN).

float32 inputs: normal(0, 100) values, log-uniform magnitudes over the whole float32 range, every float16 value,
random subnormals and the specials; float16 inputs: all 65536 bit patterns. RReLU is random: its slopes are
compared as distributions (training and eval) instead. --json writes one record of the docs/data shape
(scripts/bench/records.py): rows = one per layer, dtype, mode, output and input class, then RReLU's slope rows
(layer nn.RReLU); context = the MindSpore version and --quick.

    python scripts/bench/swap_exactness.py --json docs/data/swap_exactness.json
    python scripts/bench/swap_exactness.py --render docs/data/swap_exactness.json   # the table of docs/operator.md
    python scripts/bench/swap_exactness.py --boundaries   # the porting check's boundary values of each layer kind
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Callable

import mindspore as ms
import numpy as np
import records  # noqa: E402  (beside this file: the record shape of docs/data)
from mindspore import Tensor, nn

import ops

CLASSES = ("normal", "small", "subnormal", "zero", "inf", "nan")
PRELU_WEIGHTS = np.float32([0.25, 0.01, -0.3, 1.5])  # learned weights leave [0, 1]; ops.PReLU takes any
RRELU = "nn.RReLU"  # the layer of the slope rows (compared as distributions, not value by value)


def _slopes(negative: np.ndarray | float) -> Callable:
    """Exact (float64) y and dy/dx of x > 0 ? x : negative * x, negative per channel (the last axis of 4)."""
    def exact(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        s = np.broadcast_to(negative, x.reshape(-1, 4).shape).reshape(-1)
        return np.where(x > 0, x, s * x), np.where(x > 0, 1.0, s)
    return exact


def _elu(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0))), np.where(x > 0, 1.0, np.exp(np.minimum(x, 0)))


# name -> (factory of the MindSpore layer, exact float64 (y, dy/dx) of its parameters as written)
LAYERS: dict[str, tuple[Callable[[], nn.Cell], Callable]] = {
    "nn.LeakyReLU(0.2)": (lambda: nn.LeakyReLU(0.2), _slopes(0.2)),
    "nn.LeakyReLU(0.01)": (lambda: nn.LeakyReLU(0.01), _slopes(0.01)),
    "nn.LeakyReLU(0)": (lambda: nn.LeakyReLU(0.0), _slopes(0.0)),
    "nn.ReLU": (nn.ReLU, _slopes(0.0)),
    "nn.PReLU(4)": (lambda: nn.PReLU(4, PRELU_WEIGHTS.tolist()), _slopes(PRELU_WEIGHTS.astype(np.float64))),
    "nn.ELU": (nn.ELU, _elu),
}


def inputs(dtype: type, quick: bool, seed: int = 0) -> np.ndarray:
    """The test inputs of one dtype, as a flat array whose length is a multiple of 4 (PReLU's channels)."""
    rng = np.random.default_rng(seed)
    if dtype == np.float16:
        x = np.arange(2 ** 16, dtype=np.uint16).view(np.float16)
    else:
        n = 2 ** 12 if quick else 2 ** 18
        info = np.finfo(np.float32)
        parts = [rng.standard_normal(n) * 100,
                 rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(np.log10(info.tiny), np.log10(info.max), n),
                 np.arange(2 ** 16, dtype=np.uint16).view(np.float16)[:: 16 if quick else 1].astype(np.float64),
                 (rng.integers(1, 2 ** 23, n // 16) * rng.choice([-1, 1], n // 16)).astype(np.int32)
                 .view(np.float32).astype(np.float64),
                 [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan] * 8]
        with np.errstate(over="ignore"):
            x = np.concatenate(parts).astype(np.float32)
    return np.concatenate([x, np.zeros((-len(x)) % 4, x.dtype)])


def classify(x: np.ndarray) -> dict[str, np.ndarray]:
    """Masks of the input classes; 'small' normal inputs (below 256 x the smallest normal) can have subnormal
    results (slope * x), which MindSpore's kernels may flush to zero."""
    tiny = np.finfo(x.dtype).tiny
    a = np.abs(x.astype(np.float64))
    return {"normal": np.isfinite(a) & (a >= 256 * tiny), "small": (a >= tiny) & (a < 256 * tiny),
            "subnormal": (a > 0) & (a < tiny), "zero": a == 0, "inf": np.isinf(a), "nan": np.isnan(a)}


def ordered(v: np.ndarray) -> np.ndarray:
    """Float bits as integers ordered like the values (+0 and -0 both 0), for ulp distances."""
    bits = v.view(np.int16 if v.dtype == np.float16 else np.int32).astype(np.int64)
    magnitude = bits & (0x7FFF if v.dtype == np.float16 else 0x7FFFFFFF)
    return np.where(bits < 0, -magnitude, magnitude)


def ulp_error(v: np.ndarray, exact: np.ndarray) -> float:
    """Max |v - exact| in units of the last place of v's dtype at exact, where exact is a normal number there."""
    info = np.finfo(v.dtype)
    keep = np.isfinite(v) & (np.abs(exact) >= info.tiny) & (np.abs(exact) <= info.max)
    if not keep.any():
        return 0.0
    with np.errstate(over="ignore"):
        unit = np.spacing(np.abs(exact[keep]).astype(v.dtype)).astype(np.float64)
    return float(np.max(np.abs(v[keep].astype(np.float64) - exact[keep]) / unit))


def compare(ours: np.ndarray, theirs: np.ndarray, x: np.ndarray, exact: np.ndarray) -> dict:
    """Agreement of two outputs: same bits (NaN = NaN), equal values (also +0 = -0), max abs difference where both
    are finite, max ulp distance where both are normal numbers, each one's ulp error against the exact float64
    value, and up to three differing inputs with both outputs."""
    both_nan = np.isnan(ours) & np.isnan(theirs)
    width = np.uint16 if ours.dtype == np.float16 else np.uint32
    bitwise = (ours.view(width) == theirs.view(width)) | both_nan
    equal = (ours == theirs) | both_nan
    finite = np.isfinite(ours) & np.isfinite(theirs)
    tiny = np.finfo(ours.dtype).tiny
    normal = finite & (np.abs(ours) >= tiny) & (np.abs(theirs) >= tiny)
    diff = np.abs(ours[finite].astype(np.float64) - theirs[finite])
    ulps = np.abs(ordered(ours[normal]) - ordered(theirs[normal]))
    bad = np.flatnonzero(~bitwise)[:3]
    return {"n": int(ours.size), "bitwise": int(bitwise.sum()), "equal": int(equal.sum()),
            "max_abs": float(diff.max()) if diff.size else 0.0, "max_ulp": int(ulps.max()) if ulps.size else 0,
            "ulp_error_ours": ulp_error(ours, exact), "ulp_error_mindspore": ulp_error(theirs, exact),
            "examples": [[repr(float(x.flat[i])), repr(float(ours.flat[i])), repr(float(theirs.flat[i]))]
                         for i in bad]}


def run_layer(net: nn.Cell, x: np.ndarray, dy: np.ndarray, graph: bool) -> dict[str, np.ndarray]:
    """y, dx (and dw for a layer with a weight) of net at x for the upstream gradient dy."""
    weights = net.trainable_params()
    shape = (-1, 4)

    def loss(t, g):
        return (net(t) * g).sum()

    grad = ms.grad(loss, grad_position=0, weights=weights or None)

    def step(t, g):
        return net(t), grad(t, g)

    fn = ms.jit(step) if graph else step
    y, grads = fn(Tensor(x.reshape(shape)), Tensor(dy.reshape(shape)))
    dx, dws = grads if weights else (grads, ())
    out = {"y": y.asnumpy().reshape(-1), "dx": dx.asnumpy().reshape(-1)}
    if weights:
        out["dw"] = dws[0].asnumpy()
    return out


def measure_layer(name: str, dtype: type, graph: bool, quick: bool) -> list[dict]:
    """Records of one layer, dtype and mode: every output and input class, and PReLU's weight gradient."""
    factory, exact = LAYERS[name]
    x = inputs(dtype, quick)
    dy = np.random.default_rng(1).standard_normal(x.size).astype(dtype)
    native, swapped = ms.nn.SequentialCell([factory()]), ms.nn.SequentialCell([factory()])
    ops.swap_activations(swapped)
    theirs, ours = run_layer(native, x, dy, graph), run_layer(swapped, x, dy, graph)
    y64, slope64 = exact(x.astype(np.float64))
    truth = {"y": y64, "dx": slope64 * dy}
    base = {"layer": name, "dtype": np.dtype(dtype).name, "mode": "graph" if graph else "pynative"}
    records = [{**base, "output": out, "class": cls, **compare(ours[out][m], theirs[out][m], x[m], truth[out][m])}
               for out in ("y", "dx") for cls, m in classify(x).items() if m.any()]
    if "dw" in ours:  # a reduction: on moderate inputs, whose sums stay finite in float16 too
        rng = np.random.default_rng(3)
        xm, dym = (rng.standard_normal(4096 if dtype == np.float16 else 2 ** 16).astype(dtype) for _ in range(2))
        a, b = run_layer(swapped, xm, dym, graph)["dw"], run_layer(native, xm, dym, graph)["dw"]
        x64, dy64 = xm.astype(np.float64).reshape(-1, 4), dym.astype(np.float64).reshape(-1, 4)
        dw = np.where(x64 > 0, 0.0, x64 * dy64).sum(axis=0)
        records.append({**base, "output": "dw", "class": "normal", **compare(a, b, PRELU_WEIGHTS, dw)})
    return records


def rrelu_slopes(quick: bool) -> list[dict]:
    """RReLU's slopes y / x on negative inputs, MindSpore's and the swapped layer's, in training and eval."""
    x = -np.abs(np.random.default_rng(2).standard_normal(2 ** 12 if quick else 2 ** 18)).astype(np.float32) - 0.5
    out = []
    for mode in ("pynative", "graph"):
        for training in (True, False):
            native, swapped = ms.nn.SequentialCell([nn.RReLU()]), ms.nn.SequentialCell([nn.RReLU()])
            ops.swap_activations(swapped)
            for who, net in (("mindspore", native), ("swapped", swapped)):
                net.set_train(training)
                fn = ms.jit(net.construct) if mode == "graph" else net
                s = fn(Tensor(x)).asnumpy() / x
                out.append({"layer": RRELU, "mode": mode, "training": training, "who": who,
                            "min": float(s.min()), "mean": float(s.mean()), "max": float(s.max()),
                            "distinct": int(np.unique(s).size)})
    return out


def measure(quick: bool) -> list[dict]:
    """Every layer x dtype x mode comparison, then RReLU's slope rows."""
    return [r for name in LAYERS for dtype in (np.float32, np.float16) for graph in (False, True)
            for r in measure_layer(name, dtype, graph, quick)] + rrelu_slopes(quick)


def summary(r: dict) -> str:
    """One table cell: 'same bits', or how the outputs differ (and how far each is from the exact value)."""
    if r["bitwise"] == r["n"]:
        return "same bits"
    share = f"{r['n'] - r['bitwise']}/{r['n']}"
    if r["equal"] == r["n"]:
        return f"equal, sign of 0 differs ({share})"
    x, a, b = r["examples"][0]
    if r["output"] == "dw" or (r["class"] == "normal" and r["max_ulp"]):
        return (f"{share} differ, max {r['max_ulp']} ulp apart, abs {r['max_abs']:.2g}; vs exact: ours "
                f"{r['ulp_error_ours']:.2g} ulp, MindSpore {r['ulp_error_mindspore']:.2g}")
    return f"{share} differ, e.g. x={float(x):.3g}: {float(a):.3g} vs {float(b):.3g}"


def boundary_table() -> str:
    """The porting check's boundary columns for each layer kind at its defaults (ops.swap.KINDS; tests/ops/test_swap.py
    measures them on MindSpore), as a markdown table."""
    layers = [nn.LeakyReLU(), nn.ReLU(), nn.PReLU(), nn.ELU(), nn.RReLU(), nn.Tanh(), nn.Sigmoid(), nn.ReLU6(),
              nn.SeLU(), nn.SiLU(), nn.GELU(), nn.HSwish(), nn.Mish(), nn.CELU(), nn.Hardtanh(), ops.LeakyReLU(0.2),
              ops.PReLU(), ops.ELU(), ops.RReLU()]
    records = ops.activation_report(nn.SequentialCell(layers))
    labels = list(records[0].boundary)
    lines = ["| layer | output range | " + " | ".join(labels) + " | swapped for |", "|" + "---|" * (3 + len(labels))]
    lines += [f"| {r.old} | {r.output_range} | " + " | ".join(r.boundary.values()) + f" | {r.new or '(none)'} |"
              for r in records]
    return "\n".join(lines)


def render(measured: list[dict]) -> str:
    """The markdown table: one row per layer, dtype, output; modes merged where they agree; then RReLU's slopes."""
    cells: dict[tuple, dict[str, dict]] = {}
    for r in (r for r in measured if r["layer"] != RRELU):
        cells.setdefault((r["layer"], r["dtype"], r["output"], r["mode"]), {})[r["class"]] = r
    rows: dict[tuple, list[str]] = {}
    for (layer, dtype, output, mode), by_class in cells.items():
        line = tuple(summary(by_class[c]) if c in by_class else "" for c in CLASSES)
        rows.setdefault((layer, dtype, output, line), []).append(mode)
    head = "| layer | dtype | output | mode | " + " | ".join(CLASSES) + " |"
    lines = [head, "|" + "---|" * (4 + len(CLASSES))]
    lines += [f"| {layer} | {dtype} | {output} | {', '.join(modes)} | " + " | ".join(line) + " |"
              for (layer, dtype, output, line), modes in rows.items()]
    lines += ["", "| RReLU slopes | mode | training | min | mean | max | distinct values |",
              "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['who']} | {r['mode']} | {r['training']} | {r['min']:.4f} | {r['mean']:.4f} | {r['max']:.4f} | "
              f"{r['distinct']} |" for r in measured if r["layer"] == RRELU]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the measurements here")
    parser.add_argument("--render", type=Path, help="print the markdown table of a written JSON and exit")
    parser.add_argument("--quick", action="store_true", help="fewer float32 inputs (the test of this script)")
    parser.add_argument("--boundaries", action="store_true", help="print the boundary-value table and exit")
    args = parser.parse_args()
    if args.boundaries:
        print(boundary_table())
        return
    if args.render:
        print(render([r for run in records.read(args.render) for r in run["rows"]]))
        return
    started, load_before = records.utc_now(), records.load_average()
    clock, cpu = time.perf_counter(), time.process_time()
    rows = measure(args.quick)
    if args.json:
        records.write(args.json, [records.record(rows, context={"mindspore": ms.__version__, "quick": args.quick},
                                                 started=started, load_before=load_before,
                                                 wall_s=time.perf_counter() - clock, cpu_s=time.process_time() - cpu)])
    print(render(rows))


if __name__ == "__main__":
    main()
