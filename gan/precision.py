"""What `precision=` does to the networks of a run, decided here (gan.training calls `mixed_precision`).

fp32: nothing. fp16: MindSpore's amp O2 (float16 except BatchNorm) with dynamic loss scaling (gan.training).
bf16 on Ascend: amp O2 with bfloat16. bf16 on CPU (MindSpore's CPU backend has no bfloat16 Conv2D, MatMul,
Tanh or graph-mode Reshape, so amp O2 cannot run there) is `bf16_on_cpu`: bfloat16 activations between the
layers, float32 Parameters everywhere:
- the network's input is cast to bfloat16 once; every layer in BF16_CELLS (the oneDNN convolutions and the
  project's element-wise and fused kernels) reads and writes bfloat16 and computes in float32: convolutions
  in bf16 with float32 accumulation, BatchNorm statistics and every activation formula in float32, one
  rounding per output;
- Parameters stay float32 and reach the kernels as float32: a conv weight is rounded to bfloat16 inside the
  kernel's reorder, and every weight, gamma/beta, bias and PReLU gradient comes out in float32, so the optimiser
  (Adam, float32 moments) never sees a bfloat16 number, and no loss scaling is needed (bfloat16 has float32's
  exponent range);
- FP32_CELLS (MindSpore's own BatchNorm2d with fusion=none, Tanh) and each network's last layer (D's logits,
  G's Tanh) run in float32 (MindSpore's `to_float`, which casts a cell's inputs), the layer after an float32
  island is cast back to bfloat16; the losses take float32 logits;
- a layer with no bfloat16 kernel on CPU (the gemm/native convolutions, dense layers) is a ConfigError at start.
The CPU needs bfloat16 dot-product instructions (`check_bf16_cpu`). Sampling, evaluation and the EMA generator
run the float32 networks (the same weights; only the training steps run the bfloat16 policy).
docs/precision.md compares this with PyTorch's torch.autocast("cpu", dtype=torch.bfloat16).
"""
from __future__ import annotations

from typing import Callable

import mindspore as ms
from mindspore import amp, nn

from gan.config import ConfigError
from gan.diagnostics import ProbedActivation
from gan.layers import OnednnConv2d, OnednnConv2dTranspose
from gan.runtime import compute_dtype
from ops import ELU, AdaptiveLeakyReLU, BatchNormAct, LeakyReLU, PReLU, RReLU, onednn
from ops.fused import SharedWeight

# Layers whose CPU kernels read and write bfloat16 (subclasses included: fused, spectral and bias variants).
BF16_CELLS = (OnednnConv2d, OnednnConv2dTranspose, BatchNormAct, LeakyReLU, PReLU, RReLU, ELU, AdaptiveLeakyReLU,
              SharedWeight)
# Layers that run in float32 inside a bfloat16 network (MindSpore's CPU kernels have no bfloat16 there).
FP32_CELLS = (nn.BatchNorm2d, nn.Tanh)
BF16_FLAGS = "avx512_bf16 or amx_bf16"  # the /proc/cpuinfo flags of the bf16 dot-product instructions


def check_bf16_cpu(isa: Callable[[], onednn.CpuIsa] = onednn.cpu_isa) -> onednn.CpuIsa:
    """oneDNN's CPU ISA when its bfloat16 convolutions run on bf16 dot-product instructions here, else a
    ConfigError naming the missing CPU feature.

    Refused rather than emulated: on AVX-512 without AVX512_BF16 oneDNN 3.10 emulates bfloat16 convolutions
    4-6x slower than float32 (measured on DCGAN layers), on AVX2 it has none; bfloat16 on such a CPU would only
    cost time and precision. `isa` is injectable so that both branches are tested on any CPU.
    """
    try:
        found = isa()
    except (RuntimeError, OSError) as err:
        raise ConfigError(f"precision=bf16 on CPU runs its convolutions through oneDNN (model.conv_impl=onednn), "
                          f"whose kernels are unavailable here: {err}") from err
    if not found.bf16_dot:
        what = ("emulated, 4-6x slower than float32" if found.bf16
                else "missing (oneDNN has bfloat16 convolutions on AVX-512 CPUs only)")
        raise ConfigError(f"precision=bf16 on CPU needs bfloat16 dot-product instructions (CPU flag {BF16_FLAGS}); "
                          f"this CPU has neither (oneDNN's instruction set here: {found.name}), where oneDNN's "
                          f"bfloat16 convolutions are {what}; use precision=fp32")
    return found


def check_bf16_conv_impl(impl: str) -> None:
    """ConfigError unless the resolved model.conv_impl is onednn, the only bfloat16 convolution on CPU."""
    if impl != "onednn":
        raise ConfigError(f"precision=bf16 on CPU computes the convolutions with oneDNN (model.conv_impl=onednn, "
                          f"what auto picks when its headers are installed), not model.conv_impl={impl}: "
                          f"MindSpore's CPU Conv2D and MatMul have no bfloat16 kernel")


def _bf16_target(cell: nn.Cell) -> nn.Cell | None:
    """The cell that computes in bf16 for `cell` (a probe's wrapped activation), None if it has no bf16 kernel."""
    inner = cell.act if isinstance(cell, ProbedActivation) else cell
    return inner if isinstance(inner, BF16_CELLS) else None


class Bf16Input(nn.Cell):
    """`net` with its input cast to bfloat16 (its output is float32: its last layer runs in float32)."""

    def __init__(self, net: nn.Cell) -> None:
        super().__init__(auto_prefix=False)
        self.net = net

    def construct(self, x: ms.Tensor) -> ms.Tensor:
        return self.net(x.astype(ms.bfloat16))


def bf16_on_cpu(net: nn.Cell, role: str) -> nn.Cell:
    """The bfloat16 policy of the module docstring on `net` (its `layers` SequentialCell), in place; returns
    the callable the training steps run. ConfigError naming the first layer without a bfloat16 kernel."""
    cells = list(net.layers.name_cells().items())
    flowing = ms.bfloat16
    for i, (name, cell) in enumerate(cells):
        target = _bf16_target(cell)
        if i == len(cells) - 1 or (target is None and isinstance(cell, FP32_CELLS)):
            cell.to_float(ms.float32)
            flowing = ms.float32
        elif target is None:
            raise ConfigError(f"precision=bf16 on CPU: layer {role}.layers.{name} ({type(cell).__name__}) has no "
                              f"bfloat16 kernel on CPU (bfloat16 runs the oneDNN convolutions and the project's "
                              f"activation and fused kernels); use model.conv_impl=onednn with a DCGAN, or "
                              f"precision=fp32")
        elif flowing == ms.float32:
            target.to_float(ms.bfloat16)  # after a float32 island: cast back (an activation's input)
            flowing = ms.bfloat16
    return Bf16Input(net)


def mixed_precision(net: nn.Cell, precision: str, device_target: str, role: str,
                    probes: list[ProbedActivation]) -> nn.Cell:
    """The callable the training steps run for `net` under precision fp32|fp16|bf16 on device_target."""
    dtype = compute_dtype(precision)
    if dtype is None:
        return net
    if dtype == ms.bfloat16 and device_target == "CPU":
        return bf16_on_cpu(net, role)
    wrapped = amp.auto_mixed_precision(net, "O2", dtype)
    for probe in probes:
        probe.keep_statistics_fp32()
    return wrapped
