"""PyTorch's bfloat16 LeakyReLU, PReLU and ELU on the suite's boundary data, written as a fixture the test suite
compares ops.reference (and through it the kernels) with, so the suite needs no PyTorch.

Inputs: the boundary values of tests/ops/leaky_relu_cases.py in bfloat16 (+-0, subnormals, bf16 limits,
+-inf, NaN) and seeded random ones, with a seeded upstream gradient; PReLU on (2, 3, n) with the weight
(0.25,) and per channel (0, 0.203125, 1.5) (values bfloat16 holds exactly, so PyTorch's bfloat16 weight and
the kernels' float32 one are the same numbers). Cases: forward and input gradient of F.leaky_relu for the
slopes 0, 0.01, 0.2, 1, F.prelu, F.elu with alpha 1 and 0.5. Every array is stored as its uint16 bits (hex).

    /work/venv-bench/bin/python -m scripts.bench.crosscheck_torch_bf16 --json tests/ops/data/torch_bf16_activations.json

Run it as a module from the repository root: it reads the boundary values from the tests' own module.
"""
from __future__ import annotations

import argparse
import platform
from pathlib import Path

import ml_dtypes
import numpy as np

from gan.core.atomic import write_json_atomic
from tests.ops.leaky_relu_cases import boundary_values

BF16 = ml_dtypes.bfloat16
SLOPES = (0.0, 0.01, 0.2, 1.0)
PRELU_WEIGHTS = ([0.25], [0.0, 0.203125, 1.5])
ELU_ALPHAS = (1.0, 0.5)
RANDOM = 618  # with the 24 boundary values: 642 = 2 x 3 x 107, the PReLU shape


def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = np.concatenate([boundary_values(BF16), (rng.standard_normal(RANDOM) * 100).astype(BF16)])
    dy = (rng.standard_normal(x.shape) / 10).astype(BF16)
    return x, dy


def bits(a) -> str:
    """The bfloat16 bits of `a` as hex, little-endian uint16 (bytes.fromhex + np.frombuffer read them back)."""
    return np.ascontiguousarray(np.asarray(a).astype(BF16).view(np.uint16).ravel()).astype("<u2").tobytes().hex()


def cases(torch, x: np.ndarray, dy: np.ndarray) -> list[dict]:
    """[{op, params, y, dx}] with PyTorch's bf16 results as bits."""
    F = torch.nn.functional
    tx_of = lambda: torch.from_numpy(x.astype(np.float32)).to(torch.bfloat16).requires_grad_()  # noqa: E731
    tdy = torch.from_numpy(dy.astype(np.float32)).to(torch.bfloat16)
    shape = (2, 3, -1)
    ops = [("leaky_relu", {"negative_slope": s}, lambda t, s=s: F.leaky_relu(t, s)) for s in SLOPES]
    ops += [("prelu", {"weight": w}, lambda t, w=w: F.prelu(t.reshape(shape), torch.tensor(w, dtype=torch.bfloat16)))
            for w in PRELU_WEIGHTS]
    ops += [("elu", {"alpha": a}, lambda t, a=a: F.elu(t, a)) for a in ELU_ALPHAS]
    out = []
    for op, params, fn in ops:
        tx = tx_of()
        y = fn(tx)
        y.backward(tdy.reshape(y.shape))
        out.append({"op": op, "params": params, "y": bits(y.detach().float().numpy()),
                    "dx": bits(tx.grad.float().numpy())})
    return out


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", required=True, type=Path, help="write the fixture here")
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:
        parser.error("needs PyTorch (the bench extra, e.g. /work/venv-bench); the suite reads the fixture without it")
    x, dy = data()
    from records import cpu_info

    fixture = {"torch": torch.__version__, "cpu": cpu_info(), "python": platform.python_version(),
               "x": bits(x), "dy": bits(dy), "prelu_shape": [2, 3, -1], "cases": cases(torch, x, dy)}
    write_json_atomic(args.json, fixture)
    print(f"{len(fixture['cases'])} cases on {x.size} values, torch {torch.__version__}: {args.json}")
    return fixture


if __name__ == "__main__":
    main()
