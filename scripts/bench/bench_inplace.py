"""Peak memory of training through LeakyReLU with inplace=False vs inplace=True.

The network is a chain of L layers `x <- LeakyReLU(x * w_i)` (one scalar weight per layer, so the
activations are all that is large), trained with ms.value_and_grad in graph mode. Out of place, each
layer keeps two activations for the backward: the LeakyReLU input (its backward reads x) and its
output (the next product's weight gradient reads it). In place, the output is written over the input
and the backward reads the output's sign, so one buffer per layer remains. Each variant is measured in
a fresh process by scripts/bench/peak_memory.py (the run's resident-set peak above the memory before it).

    python scripts/bench/bench_inplace.py [--elements N] [--layers L] --json PATH
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("GLOG_v", "3")

from bench_op import positive_size  # noqa: E402
from peak_memory import in_child  # noqa: E402

from gan.core.atomic import write_json_atomic  # noqa: E402

SLOPE = 0.2


def chain_peak_mib(elements: int, layers: int, inplace: bool) -> float:
    """Peak MiB of one forward+backward of the chain (run in a fresh process by in_child)."""
    import mindspore as ms
    import numpy as np
    from mindspore import nn
    from peak_memory import execution_peak_mib

    from ops import LeakyReLU

    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")

    class Chain(nn.Cell):
        def __init__(self) -> None:
            super().__init__()
            self.acts = nn.CellList([LeakyReLU(SLOPE, inplace=inplace) for _ in range(layers)])
            self.w = ms.Parameter(ms.Tensor(np.linspace(0.5, 1.5, layers).astype(np.float32)), name="w")

        def construct(self, x: ms.Tensor) -> ms.Tensor:
            for i in range(layers):
                x = self.acts[i](x * self.w[i])
            return x.sum()

    class TrainStep(nn.Cell):
        def __init__(self, net: nn.Cell) -> None:
            super().__init__()
            self.value_and_grad = ms.value_and_grad(net, None, net.trainable_params())

        def construct(self, x: ms.Tensor) -> tuple:
            return self.value_and_grad(x)

    x = ms.Tensor(np.random.default_rng(0).standard_normal(elements).astype(np.float32))
    return execution_peak_mib(TrainStep(Chain()), x)


def main(argv: list[str] | None = None) -> int:
    """Measure both variants (float32), print a table, write the JSON records."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--elements", type=positive_size, default=1 << 23, help="elements per activation")
    parser.add_argument("--layers", type=positive_size, default=8)
    parser.add_argument("--json", type=Path, required=True, help="output file: one record per variant")
    args = parser.parse_args(argv)
    tensor_mib = args.elements * 4 / 2 ** 20
    records = []
    for inplace in (False, True):
        peak = in_child("bench_inplace", "chain_peak_mib", args.elements, args.layers, inplace)
        records.append({"elements": args.elements, "layers": args.layers, "dtype": "float32", "inplace": inplace,
                        "tensor_mib": tensor_mib, "peak_mib": peak, "peak_tensors": peak / tensor_mib})
    print(f"{'inplace':>7} {'peak MiB':>9} {'activations':>11}   ({args.layers} layers of {tensor_mib:.0f} MiB)")
    for r in records:
        print(f"{str(r['inplace']):>7} {r['peak_mib']:>9.0f} {r['peak_tensors']:>11.1f}")
    write_json_atomic(args.json, records)
    return 0


if __name__ == "__main__":
    sys.exit(main())
