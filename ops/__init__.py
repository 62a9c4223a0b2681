"""The custom LeakyReLU operator for MindSpore (C++ CPU kernel via ops.Custom aot), with its reference, and
its family (PReLU, RReLU, ELU, AdaptiveLeakyReLU) from one table (ops.activations); also the fused
BatchNorm + LeakyReLU/PReLU op, the im2col/col2im kernels of the gemm convolutions, the quantised
(int8/uint8) LeakyReLU and a one-kernel global norm of a list of tensors; and for networks written with
MindSpore's layers, `swap_activations` (MindSpore's nn.LeakyReLU/ReLU/PReLU/ELU/RReLU -> the project's) and the
porting check `activation_report` / `format_report` (ops.swap), and each activation's observed input range
(`activation_ranges`, `RangeRecorder`: ops.ranges).

Import it without shadowing `mindspore.ops`, e.g. `from ops import leaky_relu, LeakyReLU` or
`import ops as lrelu_ops`.
"""
import os

os.environ.setdefault("GLOG_v", "3")  # before MindSpore is imported: silence its INFO/WARNING logs

from .activations import ACTIVATIONS, ELU, AdaptiveLeakyReLU, PReLU, RReLU, elu, prelu, rrelu  # noqa: E402
from .api import FLOAT_DTYPES, LeakyReLU, leaky_relu  # noqa: E402
from .fused import BatchNormAct, BatchNormPReLU, SyncBatchNorm2d, batch_moments, bias_act, fused_bn_act, norm_act_layers  # noqa: E402
from .global_norm import global_norm  # noqa: E402
from .im2col import col2im, im2col  # noqa: E402
from .quantized import QUANT_DTYPES, QuantizedLeakyReLU, quantized_leaky_relu  # noqa: E402
from .ranges import InputRange, RangeRecorder, activation_ranges  # noqa: E402
from .reference import FORMULATIONS  # noqa: E402
from .swap import ActivationRecord, activation_report, format_report, swap_activations  # noqa: E402

__all__ = ["ACTIVATIONS", "ActivationRecord", "AdaptiveLeakyReLU", "BatchNormAct", "BatchNormPReLU", "ELU",
           "FLOAT_DTYPES", "FORMULATIONS", "InputRange", "LeakyReLU", "PReLU", "QUANT_DTYPES", "QuantizedLeakyReLU",
           "RReLU", "RangeRecorder", "SyncBatchNorm2d", "activation_ranges", "activation_report", "batch_moments",
           "bias_act", "col2im", "elu", "format_report", "fused_bn_act", "global_norm", "im2col", "leaky_relu",
           "norm_act_layers", "prelu", "quantized_leaky_relu", "rrelu", "swap_activations"]
