"""What `precision=` does to the networks of a run, decided here (gan.training.loop calls `mixed_precision`).

fp32: nothing. fp16: MindSpore's amp O2 (float16 except BatchNorm) with dynamic loss scaling (gan.training.loop).
bf16 on Ascend: amp O2 with bfloat16. bf16 on CPU (MindSpore's CPU backend has no bfloat16 Conv2D, MatMul,
Tanh or graph-mode Reshape, and its bfloat16 Cast takes ~27 ns per element, so amp O2 cannot run there) is
`bf16_on_cpu`, which sets each oneDNN convolution's compute and output dtype and adds no cast at all:
- every convolution computes in bfloat16 (bf16 data, float32 accumulation; AMX or AVX512-BF16), reading its
  input and float32 weight in whatever dtype they come (the kernel's reorder into oneDNN's layout rounds them);
- a convolution writes bfloat16 when the next layer has a bfloat16 kernel (BF16_CELLS: the project's
  activation and fused BatchNorm + activation kernels, float32 math and one rounding, BatchNorm statistics in
  float32), else float32: the networks take and return float32 (G's Tanh and D's logits, so the losses are
  float32), and MindSpore's own BatchNorm2d (fusion=none) gets float32 (its activation then runs in float32);
- Parameters stay float32: every weight, gamma/beta, bias and PReLU gradient comes out of the kernels in
  float32, so Adam (float32 moments) never sees a bfloat16 number; no loss scaling (bfloat16 has float32's
  exponent range);
- a layer with no bfloat16 path on CPU (the gemm/native convolutions, dense layers) is a ConfigError at start.
The CPU needs bfloat16 dot-product instructions (`check_bf16_cpu`). Sampling and evaluation run the same
networks; the EMA generator (inference only) stays float32. docs/precision.md compares this with PyTorch's
torch.autocast("cpu", dtype=torch.bfloat16).
"""
from __future__ import annotations

from typing import Callable

import mindspore as ms
import numpy as np
from mindspore import Tensor, amp, nn

from gan.config.plan import resolve_conv_impl
from gan.config.schema import Config, ConfigError
from gan.diagnostics.probes import ProbedActivation
from gan.models.build import onednn_found
from gan.models.layers import OnednnConv2d, OnednnConv2dTranspose, make_conv
from ops import ELU, AdaptiveLeakyReLU, BatchNormAct, LeakyReLU, PReLU, RReLU, onednn
from ops.fused import SharedWeight

# Layers whose CPU kernels read and write bfloat16 (subclasses included: fused, spectral and bias variants).
BF16_CELLS = (OnednnConv2d, OnednnConv2dTranspose, BatchNormAct, LeakyReLU, PReLU, RReLU, ELU, AdaptiveLeakyReLU,
              SharedWeight)
# Layers without a bfloat16 kernel that a DCGAN may hold: they get float32 inputs (MindSpore's own kernels).
FP32_CELLS = (nn.BatchNorm2d, nn.Tanh)
BF16_FLAGS = "avx512_bf16 or amx_bf16"  # the /proc/cpuinfo flags of the bf16 dot-product instructions


def check_bf16_cpu(isa: Callable[[], onednn.CpuIsa] = onednn.cpu_isa) -> onednn.CpuIsa:
    """oneDNN's CPU ISA when its bfloat16 convolutions run on bf16 dot-product instructions here, else a
    ConfigError naming the missing CPU feature.

    Refused rather than emulated: on AVX-512 without AVX512_BF16 oneDNN 3.10 emulates bfloat16 convolutions
    several times slower than float32, on AVX2 it has none; bfloat16 on such a CPU would only
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


def _inner(cell: nn.Cell) -> nn.Cell:
    """The layer a diagnostics probe wraps, else the cell itself."""
    return cell.act if isinstance(cell, ProbedActivation) else cell


def bf16_on_cpu(net: nn.Cell, role: str) -> nn.Cell:
    """The bfloat16 policy of the module docstring, set on `net`'s layers (its `layers` SequentialCell) in
    place; returns `net`. ConfigError naming the first layer that has no bfloat16 path on CPU."""
    cells = [(name, _inner(cell)) for name, cell in net.layers.name_cells().items()]
    for i, (name, cell) in enumerate(cells):
        if not isinstance(cell, BF16_CELLS + FP32_CELLS):
            raise ConfigError(f"precision=bf16 on CPU: layer {role}.layers.{name} ({type(cell).__name__}) has no "
                              f"bfloat16 kernel on CPU (bfloat16 runs the oneDNN convolutions and the project's "
                              f"activation and fused kernels); use model.conv_impl=onednn with a DCGAN, or "
                              f"precision=fp32")
        if isinstance(cell, (OnednnConv2d, OnednnConv2dTranspose)):
            after = cells[i + 1][1] if i + 1 < len(cells) else None
            cell.compute_dtype = ms.bfloat16
            cell.out_dtype = ms.bfloat16 if isinstance(after, BF16_CELLS) else ms.float32
    return net


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


def compute_dtype(precision: str):
    """The MindSpore dtype of a reduced precision ("fp16"/"bf16"), None for fp32."""
    return {"fp16": ms.float16, "bf16": ms.bfloat16}.get(precision)


def check_precision_supported(conf: Config) -> None:
    """Fail at start, with a clear message, when the device cannot run a convolution in the dtype. bf16 on CPU
    needs the oneDNN convolutions (model.conv_impl as gan.config.plan resolves it) and a CPU with bfloat16 dot-product
    instructions (gan.training.precision)."""
    precision, device_target = conf.precision, conf.runtime.device_target
    dtype = compute_dtype(precision.name)
    if dtype is None:
        return
    if precision.name == "bf16" and device_target == "CPU":
        check_bf16_conv_impl(resolve_conv_impl(conf.model.conv_impl, device_target, onednn_found(conf)))
        check_bf16_cpu()
        return
    conv = make_conv(1, 1, 1, 1, 0).to_float(dtype)
    try:
        conv(Tensor(np.ones((1, 1, 1, 1), np.float32)).astype(dtype)).asnumpy()
    except (RuntimeError, TypeError, ValueError) as err:
        lines = [line for line in str(err).splitlines() if line.strip(" -") and not line.startswith("- ")]
        reason = lines[0] if lines else type(err).__name__
        raise ConfigError(f"precision={precision.name} is not supported on runtime.device_target={device_target} "
                          f"(a {precision.name} convolution failed: {reason}); use precision=fp32 or precision=fp16"
                          ) from err
