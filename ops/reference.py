"""NumPy reference of the LeakyReLU operator: the specification the C++ kernels are tested against.

Forward, for slope s in [0, 1] and an optional clamp c > 0::

    y = x              if x > 0          (strict: x == 0 and x == -0.0 take the slope branch)
    y = s * x          otherwise         (NaN -> NaN, -inf -> -inf for s > 0, -inf -> NaN for s == 0)
    y = min(max(y, -c), c)               (only with a clamp; NaN stays NaN)

Arithmetic: x is widened to float32, multiplied by the float32 slope and rounded once to x's dtype.
For float16 this is what PyTorch and CANN do; it is never worse than naive float16 math, where 0.2 is
stored as 0.2001953125. Because 0 <= s <= 1, |s * x| <= |x|, so a finite input never overflows to inf.

Backward: dx = dy where x > 0, s * dy otherwise (so the gradient at 0 is s, as in PyTorch and
TensorFlow), and 0 where the clamp cut the output off. Computed in float32, rounded once.

Formulations: "select" is `x > 0 ? x : s*x` (PyTorch, TensorFlow, CANN). "maxmin" is the branch-free
`max(x, 0) + s*min(x, 0)`; it gives bit-identical results on every finite input except -0.0, which
becomes +0.0 (select keeps -0.0), and it turns NaN into +0.0 (select propagates NaN).
"""
from __future__ import annotations

import numpy as np

FORMULATIONS = ("select", "maxmin")


def _as_f32(x: np.ndarray) -> np.ndarray:
    """x widened (exactly) to float32."""
    return np.asarray(x).astype(np.float32)


def forward(x: np.ndarray, negative_slope: float, clamp: float | None = None,
            formulation: str = "select") -> np.ndarray:
    """Bit-exact expected kernel output in x's dtype (float32 math with the float32 slope, one rounding)."""
    xf = _as_f32(x)
    s = np.float32(negative_slope)
    with np.errstate(invalid="ignore", over="ignore"):
        if formulation == "select":
            y = np.where(xf > 0, xf, (s * xf).astype(x.dtype).astype(np.float32))
        elif formulation == "maxmin":
            pos = np.where(xf > 0, xf, np.float32(-0.0))
            neg = np.where(xf < 0, xf, np.float32(0.0))
            y = (pos + s * neg).astype(x.dtype).astype(np.float32)
        else:
            raise ValueError(f"formulation={formulation!r} is not one of {FORMULATIONS}")
    if clamp is not None:
        c = np.float32(clamp)
        y = np.where(y < -c, -c, y)
        y = np.where(y > c, c, y)
    return y.astype(x.dtype)


def backward(x: np.ndarray, dy: np.ndarray, negative_slope: float, clamp: float | None = None) -> np.ndarray:
    """Bit-exact expected gradient w.r.t. x in x's dtype, given the upstream gradient dy."""
    xf = _as_f32(x)
    s = np.float32(negative_slope)
    with np.errstate(invalid="ignore", over="ignore"):
        dx = np.where(xf > 0, _as_f32(dy), (s * _as_f32(dy)).astype(x.dtype).astype(np.float32))
        if clamp is not None:
            y = forward(x, negative_slope).astype(np.float32)
            dx = np.where((y > np.float32(clamp)) | (y < -np.float32(clamp)), np.float32(0.0), dx)
    return dx.astype(x.dtype)


def exact_forward(x: np.ndarray, negative_slope: float) -> np.ndarray:
    """Real-number result in float64 with the decimal slope: the yardstick for measuring rounding errors."""
    x64 = np.asarray(x).astype(np.float64)
    with np.errstate(invalid="ignore"):
        return np.where(x64 > 0, x64, np.float64(negative_slope) * x64)


def max_errors(actual: np.ndarray, expected: np.ndarray) -> tuple[float, float]:
    """(max absolute, max relative) error over elements where both are finite; NaN/inf must match exactly."""
    a = np.asarray(actual).astype(np.float64)
    e = np.asarray(expected).astype(np.float64)
    if a.shape != e.shape:
        raise ValueError(f"shape mismatch: actual {a.shape} vs expected {e.shape}")
    same_special = (np.isnan(a) & np.isnan(e)) | (np.isinf(a) & (a == e))
    finite = np.isfinite(a) & np.isfinite(e)
    if not np.all(same_special | finite):
        bad = np.flatnonzero(~(same_special | finite))[0]
        raise AssertionError(f"non-finite mismatch at flat index {bad}: actual {a.flat[bad]}, "
                             f"expected {e.flat[bad]}")
    if not finite.any():
        return 0.0, 0.0
    diff = np.abs(a[finite] - e[finite])
    scale = np.abs(e[finite])
    rel = np.divide(diff, scale, out=np.zeros_like(diff), where=scale > 0)
    return float(diff.max()), float(rel.max())


def _channel_view(v: np.ndarray, ndim: int) -> np.ndarray:
    """A per-channel vector shaped to broadcast against (N, C, ...) in float64."""
    return np.asarray(v, np.float64).reshape((1, -1) + (1,) * (ndim - 2))


def bn_act_forward(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, negative_slope: float, *,
                   stats: tuple[np.ndarray, np.ndarray] | None = None, eps: float = 1e-5, gain: float = 1.0,
                   clamp: float | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fused BatchNorm + LeakyReLU + gain + clamp in float64, y rounded once to x's dtype.

    Returns (y, mean, biased variance) of the statistics used: the batch's over all axes but 1 when
    stats is None (training), else the given ones (eval). The clamp keeps NaN, as the LeakyReLU op does.
    """
    x64 = np.asarray(x, np.float64)
    axes = (0,) + tuple(range(2, x64.ndim))
    mean, var = (x64.mean(axes), x64.var(axes)) if stats is None else (np.asarray(s, np.float64) for s in stats)
    z = (x64 - _channel_view(mean, x64.ndim)) / np.sqrt(_channel_view(var, x64.ndim) + eps) \
        * _channel_view(gamma, x64.ndim) + _channel_view(beta, x64.ndim)
    with np.errstate(invalid="ignore"):
        y = gain * np.where(z > 0, z, negative_slope * z)
        if clamp is not None:
            y = np.where(y > clamp, clamp, np.where(y < -clamp, -clamp, y))
    return y.astype(x.dtype), mean, var


def bn_act_backward(x: np.ndarray, dy: np.ndarray, gamma: np.ndarray, beta: np.ndarray, negative_slope: float, *,
                    stats: tuple[np.ndarray, np.ndarray] | None = None, eps: float = 1e-5, gain: float = 1.0,
                    clamp: float | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dx in x's dtype, dgamma, dbeta in float64) of bn_act_forward; with stats=None dx includes the
    batch statistics' dependence on x (BatchNorm's training backward), else they are constants."""
    x64, dy64 = np.asarray(x, np.float64), np.asarray(dy, np.float64)
    axes = (0,) + tuple(range(2, x64.ndim))
    mean, var = (x64.mean(axes), x64.var(axes)) if stats is None else (np.asarray(s, np.float64) for s in stats)
    rstd = 1.0 / np.sqrt(_channel_view(var, x64.ndim) + eps)
    xhat = (x64 - _channel_view(mean, x64.ndim)) * rstd
    z = xhat * _channel_view(gamma, x64.ndim) + _channel_view(beta, x64.ndim)
    y = gain * np.where(z > 0, z, negative_slope * z)
    dz = gain * dy64 * np.where(z > 0, 1.0, negative_slope)
    if clamp is not None:
        dz = np.where((y > clamp) | (y < -clamp), 0.0, dz)
    dgamma, dbeta = (dz * xhat).sum(axes), dz.sum(axes)
    dxhat = dz * _channel_view(gamma, x64.ndim)
    if stats is None:
        m = x64.size // x64.shape[1]
        dxhat = dxhat - _channel_view(dbeta * np.asarray(gamma, np.float64), x64.ndim) / m \
            - xhat * _channel_view(dgamma * np.asarray(gamma, np.float64), x64.ndim) / m
    return (dxhat * rstd).astype(x.dtype), dgamma, dbeta


QUANT_RANGES = {"int8": (-128, 127), "uint8": (0, 255)}


def quantized_leaky_relu_table(dtype: str, negative_slope: float, in_scale: float, in_zero_point: int,
                               out_scale: float, out_zero_point: int) -> np.ndarray:
    """The 256 output codes, in the dtype, for the input codes qmin..qmax (ONNX Runtime QLinearLeakyRelu).

    float32 throughout, one rounding per step: x = in_scale * (q - in_zp); y = x if x >= 0 else slope * x;
    out = saturate(round_half_to_even(y / out_scale) + out_zp), the division a true division.
    """
    lo, hi = QUANT_RANGES[dtype]
    codes = np.arange(lo, hi + 1, dtype=np.int32)
    with np.errstate(over="ignore", invalid="ignore"):
        x = np.float32(in_scale) * (codes - np.int32(in_zero_point)).astype(np.float32)
        y = np.where(x >= 0, x, np.float32(negative_slope) * x)
        q = np.clip(y / np.float32(out_scale), np.float32(lo - out_zero_point), np.float32(hi - out_zero_point))
    return (np.rint(q).astype(np.int32) + out_zero_point).astype(dtype)


def quantized_leaky_relu(q: np.ndarray, negative_slope: float, in_scale: float, in_zero_point: int,
                         out_scale: float, out_zero_point: int) -> np.ndarray:
    """Expected kernel output for int8/uint8 codes q: each code looked up in quantized_leaky_relu_table."""
    q = np.asarray(q)
    table = quantized_leaky_relu_table(q.dtype.name, negative_slope, in_scale, in_zero_point, out_scale,
                                       out_zero_point)
    return table[q.astype(np.int32) - QUANT_RANGES[q.dtype.name][0]]
