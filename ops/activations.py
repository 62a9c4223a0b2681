"""The activation family as one table: one row per activation (as StyleGAN2-ADA's `bias_act.activation_funcs`),
and the public functions and Cells written thinly over it.

A row names the activation, its numpy reference forward/backward (ops.reference, the specification the
kernels are tested against bit for bit), its kernel entry points (ops/csrc/cpu) and their input signature
(ops._custom.SIGNATURES), its float parameters by name with defaults and checks, the name of its learnable
tensor, whether it is random and whether it may run in place, and its capabilities: whether ops.fused fuses it
with BatchNorm (and with a conv's bias) and whether its op has a second derivative (gradient penalties
differentiate twice; the other kernels have first derivatives only). Semantics follow PyTorch where PyTorch has
the activation (docs/operator.md); every activation: NaN propagates, `clamp` limits outputs to
[-clamp, clamp] keeping NaN (gradient 0 where cut off), float32 and float16 tensors (float32 math, one
rounding), graph and PyNative mode.

Adding an activation: one row here, its formula in the kernel file's header comment and its kernel
(ops/csrc/cpu/activations.cc), its reference (ops.reference), its tests (tests/ops/test_activations.py);
see docs/operator.md "Adding an activation".
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from numbers import Real
from typing import Any, Callable

import mindspore as ms
import numpy as np
from mindspore import Parameter, Tensor, nn
from mindspore import ops as msops
from mindspore.ops import constexpr

from . import params, reference
from ._custom import check_cpu, check_dtype, num_threads, primitive

logger = logging.getLogger("ops")

_F32 = np.finfo(np.float32)


def check_float32(name: str, value: float) -> float:
    """value unchanged; ValueError naming it when float32 (the kernels' compute dtype) cannot hold it:
    a non-zero value that would become 0 or a subnormal, or a finite one that would become inf."""
    magnitude = abs(value)
    if (value != 0 and magnitude < _F32.tiny) or (math.isfinite(value) and magnitude > _F32.max):
        with np.errstate(over="ignore", under="ignore"):
            becomes = float(np.float32(value))
        raise ValueError(f"{name}={value!r} is not allowed: the kernels compute in float32, where it becomes "
                         f"{becomes!r}; use 0 or a magnitude between {_F32.tiny:.3g} and {_F32.max:.3g}")
    return value


def _real(name: str, value: Any, rule: str) -> float:
    """value as a finite float; ValueError naming it and `rule` unless it is a real number."""
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
        raise ValueError(f"{name}={value!r} is not allowed: it must be a finite number with {rule}")
    return check_float32(name, float(value))


def check_unit(name: str, value: Any) -> float:
    """A finite number in [0, 1] that float32 holds (slopes, RReLU bounds)."""
    rule = f"0 <= {name} <= 1"
    v = _real(name, value, rule)
    if not 0.0 <= v <= 1.0:
        raise ValueError(f"{name}={value!r} is not allowed: it must be a finite number with {rule}")
    return v


def check_finite(name: str, value: Any) -> float:
    """Any finite number that float32 holds (ELU's alpha, PReLU's initial weight)."""
    return _real(name, value, f"|{name}| <= {_F32.max:.3g}")


def check_negative_slope(negative_slope: float) -> float:
    """LeakyReLU's slope as float; ValueError unless it is a finite number in [0, 1] that float32 holds."""
    return check_unit("negative_slope", negative_slope)


def check_clamp(clamp: float | None) -> float | None:
    """The clamp as float (or None); ValueError unless it is None or a number > 0 that float32 holds."""
    if clamp is None:
        return None
    if isinstance(clamp, bool) or not isinstance(clamp, Real) or not clamp > 0:
        raise ValueError(f"clamp={clamp!r} is not allowed: it must be None or a number > 0")
    return check_float32("clamp", float(clamp))


@dataclass(frozen=True)
class Param:
    """A named float parameter of an activation: its default (None: required) and its check."""

    name: str
    default: float | None
    check: Callable[[str, Any], float]


@dataclass(frozen=True)
class Activation:
    """One row of the table (see the module docstring)."""

    name: str
    formula: str                      # the semantics in one line (README and docs table)
    reference_forward: Callable
    reference_backward: Callable
    kernels: tuple[str, str]          # (forward, backward) entry points of the CPU library
    signature: str                    # inputs of the forward kernel: ops._custom.SIGNATURES
    params: tuple[Param, ...]
    learnable: str | None = None      # name of the learnable tensor
    random: bool = False
    inplace: bool = False
    bn_fusable: bool = False          # ops.fused has its BatchNorm + activation (and bias + activation) kernel
    second_derivative: bool = False   # its public op's backward is differentiable again

    def resolve(self, **values: Any) -> dict[str, float]:
        """Checked float values of every parameter, defaults filled in; ValueError naming a bad one."""
        unknown = sorted(set(values) - {p.name for p in self.params})
        if unknown:
            raise TypeError(f"{self.name} has no parameter {unknown[0]!r}; it takes {[p.name for p in self.params]}")
        out = {}
        for p in self.params:
            value = values.get(p.name, p.default)
            if value is None:
                raise TypeError(f"{self.name} needs {p.name} (no default on purpose)")
            out[p.name] = p.check(p.name, value)
        return out


ACTIVATIONS: dict[str, Activation] = {row.name: row for row in (
    Activation("leaky_relu", "x > 0 ? x : negative_slope * x", reference.forward, reference.backward,
               ("LeakyReluForwardSelect", "LeakyReluBackward"), "x",
               (Param("negative_slope", None, check_unit),), inplace=True, bn_fusable=True, second_derivative=True),
    Activation("prelu", "x > 0 ? x : weight[c] * x, weight (1,) or (C,) learned", reference.prelu_forward,
               reference.prelu_backward, ("PreluForward", "PreluBackward"), "x,weight", (), learnable="weight",
               bn_fusable=True),
    Activation("rrelu", "x > 0 ? x : s * x, s ~ U[lower, upper] per element in training, (lower+upper)/2 in eval",
               reference.rrelu_forward, reference.rrelu_backward, ("RreluTrainForward", "RreluTrainBackward"),
               "x,key", (Param("lower", 1 / 8, check_unit), Param("upper", 1 / 3, check_unit)),
               random=True),
    Activation("elu", "x > 0 ? x : alpha * expm1(x)", reference.elu_forward, reference.elu_backward,
               ("EluForward", "EluBackward"), "x", (Param("alpha", 1.0, check_finite),)),
    Activation("adaptive", "prelu with weight[c] = sigmoid(mean_c(x) / sqrt(var_c(x) + eps)) * alpha, alpha learned",
               reference.adaptive_forward, reference.prelu_backward, ("PreluForward", "PreluBackward"), "x,weight",
               (), learnable="alpha"),
)}


def _kernel(row: str) -> msops.Custom:
    """The forward primitive (with its bprop) of a row."""
    a = ACTIVATIONS[row]
    return primitive(*a.kernels, a.signature)


def _scalars(clamp: float | None, **fields: float) -> Tensor:
    """The ActParams tensor of one configuration."""
    return params.pack("act", clamp=math.inf if clamp is None else clamp, threads=num_threads(), **fields)


@constexpr
def _check_weight(op: str, shape: tuple, weight_shape: tuple) -> None:
    """ValueError unless the weight is (1,) or (C,) with C = shape[1] (compile time under ms.jit)."""
    channels = shape[1] if len(shape) >= 2 else None
    if len(weight_shape) != 1 or weight_shape[0] not in (1, channels):
        raise ValueError(f"{op} expects a weight of shape (1,) or (C,) with C = x.shape[1] = {channels}, "
                         f"got weight shape {weight_shape} for x of shape {shape}")


@constexpr
def _prelu_scalars(clamp: float | None) -> Tensor:
    return _scalars(check_clamp(clamp))


@constexpr
def _elu_scalars(alpha: float, clamp: float | None) -> Tensor:
    return _scalars(check_clamp(clamp), slope=ACTIVATIONS["elu"].resolve(alpha=alpha)["alpha"])


@constexpr
def _rrelu_bounds(lower: float, upper: float) -> tuple[float, float]:
    """Checked (lower, upper): both in [0, 1] and lower <= upper."""
    v = ACTIVATIONS["rrelu"].resolve(lower=lower, upper=upper)
    if v["lower"] > v["upper"]:
        raise ValueError(f"lower={lower!r}, upper={upper!r} are not allowed: rrelu needs 0 <= lower <= upper <= 1")
    return v["lower"], v["upper"]


@constexpr
def _rrelu_scalars(lower: float, upper: float, clamp: float | None) -> Tensor:
    lo, hi = _rrelu_bounds(lower, upper)
    return _scalars(check_clamp(clamp), slope=(lo + hi) / 2, lower=lo, upper=hi)


def _check_tensor(op: str, x: Any) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op} expects a mindspore.Tensor, got {type(x).__name__}")


def prelu(x: Tensor, weight: Tensor, *, clamp: float | None = None) -> Tensor:
    """PReLU (torch.nn.functional.prelu): x > 0 ? x : weight[c] * x, weight (1,) or (C,) along axis 1;
    differentiable in x and weight (the weight gradient is reduced over batch and space in the kernel)."""
    _check_tensor("prelu", x)
    check_cpu("prelu")
    check_dtype("prelu", x.dtype)
    check_dtype("prelu weight", weight.dtype)
    _check_weight("prelu", x.shape, weight.shape)
    return _kernel("prelu")(x, weight, _prelu_scalars(clamp))


def elu(x: Tensor, alpha: float = 1.0, *, clamp: float | None = None) -> Tensor:
    """ELU (torch.nn.functional.elu): x > 0 ? x : alpha * expm1(x), float32 math for float16 inputs."""
    _check_tensor("elu", x)
    check_cpu("elu")
    check_dtype("elu", x.dtype)
    return _kernel("elu")(x, _elu_scalars(alpha, clamp))


def rrelu(x: Tensor, lower: float = 1 / 8, upper: float = 1 / 3, *, training: bool = False,
          clamp: float | None = None, key: Tensor | None = None) -> Tensor:
    """RReLU (torch.nn.functional.rrelu). Eval: LeakyReLU with slope (lower + upper) / 2. Training: each
    element x_i <= 0 gets its own slope drawn uniformly in [lower, upper] from `key` = int32 [seed, counter]
    (reference.rrelu_slopes: a pure function of key and i), and the backward uses the same slopes."""
    _check_tensor("rrelu", x)
    check_cpu("rrelu")
    check_dtype("rrelu", x.dtype)
    scalars = _rrelu_scalars(lower, upper, clamp)
    if not training:
        return _kernel("leaky_relu")(x, scalars)
    if key is None:
        raise ValueError("rrelu(training=True) needs key=Tensor([seed, counter], int32): the slopes are drawn "
                         "from it, so the same key gives the same slopes (the RReLU Cell keeps a counter)")
    return _kernel("rrelu")(x, key, scalars)


class PReLU(nn.Cell):
    """PReLU layer (torch.nn.PReLU): a learnable weight of `num_parameters` values (1 or the channels)."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, *, clamp: float | None = None) -> None:
        super().__init__()
        if isinstance(num_parameters, bool) or not isinstance(num_parameters, int) or num_parameters < 1:
            raise ValueError(f"num_parameters={num_parameters!r} is not allowed: it must be an integer >= 1")
        self.init = check_finite("init", init)
        self.clamp = check_clamp(clamp)
        self.weight = Parameter(Tensor(np.full(num_parameters, self.init, np.float32)), name="weight")

    def construct(self, x: Tensor) -> Tensor:
        return prelu(x, self.weight, clamp=self.clamp)

    def extend_repr(self) -> str:
        return f"num_parameters={self.weight.shape[0]}, init={self.init}, clamp={self.clamp}"


class ELU(nn.Cell):
    """ELU layer (torch.nn.ELU)."""

    def __init__(self, alpha: float = 1.0, *, clamp: float | None = None) -> None:
        super().__init__()
        self.alpha = ACTIVATIONS["elu"].resolve(alpha=alpha)["alpha"]
        self.clamp = check_clamp(clamp)

    def construct(self, x: Tensor) -> Tensor:
        return elu(x, self.alpha, clamp=self.clamp)

    def extend_repr(self) -> str:
        return f"alpha={self.alpha}, clamp={self.clamp}"


class RReLU(nn.Cell):
    """RReLU layer (torch.nn.RReLU); training follows the Cell's mode (set_train).

    Reproducible draws: every training call uses the key (seed, counter) and then increments `counter`, a
    non-trainable int32 Parameter, so it is saved in checkpoints and a resumed run draws the same slopes.
    The slopes are recomputed in the backward from the key: no noise tensor is stored (memory cost 0).
    `seed` tells layers apart (the training app derives it from the run's seed and the layer's position).
    """

    def __init__(self, lower: float = 1 / 8, upper: float = 1 / 3, *, clamp: float | None = None,
                 seed: int = 0) -> None:
        super().__init__()
        self.lower, self.upper = _rrelu_bounds(lower, upper)
        self.clamp = check_clamp(clamp)
        self.reseed(seed)
        self.counter = Parameter(Tensor([0], ms.int32), name="counter", requires_grad=False)
        self.one = Tensor([1], ms.int32)
        self.scalars = _rrelu_scalars(self.lower, self.upper, self.clamp)
        self.train_op, self.eval_op = _kernel("rrelu"), _kernel("leaky_relu")

    def reseed(self, seed: int) -> None:
        """Set the layer's seed (before the network is compiled)."""
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2 ** 31:
            raise ValueError(f"seed={seed!r} is not allowed: it must be an integer in [0, 2**31)")
        self.seed = seed
        self.seed_tensor = Tensor([seed], ms.int32)

    def construct(self, x: Tensor) -> Tensor:
        check_cpu("rrelu")
        check_dtype("rrelu", x.dtype)
        if not self.training:
            return self.eval_op(x, self.scalars)
        key = msops.concat((self.seed_tensor, self.counter))
        y = self.train_op(x, key, self.scalars)
        return msops.depend(y, msops.assign_add(self.counter, self.one))

    def extend_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}, clamp={self.clamp}, seed={self.seed}"


class AdaptiveLeakyReLU(nn.Cell):
    """LeakyReLU whose slope follows the input's statistics, per channel c on axis 1:

        slope_c = sigmoid(mean_c / sqrt(var_c + eps)) * alpha_c,    y = x > 0 ? x : slope_c * x

    mean_c and var_c are the mean and the population (biased) variance over batch and space of the current
    input, in float32 (eps = 1e-5 keeps std = 0 finite: then slope = sigmoid(mean / sqrt(eps)) * alpha);
    alpha is learnable ((1,) shared or (C,)), so 0 < slope_c < alpha_c. The slopes are an ordinary
    differentiable expression, so gradients reach alpha and flow into x through the mean and variance as well
    as through the PReLU kernel, which takes the slopes as its weight tensor (reference.adaptive_forward).
    """

    def __init__(self, init_alpha: float = 0.2, num_parameters: int = 1, *, eps: float = 1e-5,
                 clamp: float | None = None) -> None:
        super().__init__()
        if isinstance(num_parameters, bool) or not isinstance(num_parameters, int) or num_parameters < 1:
            raise ValueError(f"num_parameters={num_parameters!r} is not allowed: it must be an integer >= 1")
        self.init_alpha = check_finite("init_alpha", init_alpha)
        if not eps > 0:
            raise ValueError(f"eps={eps!r} is not allowed: it must be a number > 0")
        self.eps = check_float32("eps", float(eps))
        self.clamp = check_clamp(clamp)
        self.alpha = Parameter(Tensor(np.full(num_parameters, self.init_alpha, np.float32)), name="alpha")

    def slopes(self, x: Tensor) -> Tensor:
        """The per-channel slopes (C,) (or (1,) for inputs with fewer than 2 dims) in float32."""
        xf = x.astype(ms.float32)
        axes = (0,) + tuple(range(2, x.ndim)) if x.ndim >= 2 else tuple(range(x.ndim))
        mean = xf.mean(axes)
        var = ((xf - mean.reshape(_view(x.ndim))) ** 2).mean(axes) if x.ndim >= 2 else ((xf - mean) ** 2).mean()
        return (msops.sigmoid(mean / msops.sqrt(var + self.eps)) * self.alpha.astype(ms.float32)).reshape(-1)

    def construct(self, x: Tensor) -> Tensor:
        return prelu(x, self.slopes(x), clamp=self.clamp)

    def extend_repr(self) -> str:
        return f"init_alpha={self.init_alpha}, num_parameters={self.alpha.shape[0]}, eps={self.eps}, clamp={self.clamp}"


def _view(ndim: int) -> tuple[int, ...]:
    """Shape that broadcasts a per-channel vector along axis 1 of an ndim tensor."""
    return (1, -1) + (1,) * (ndim - 2)
