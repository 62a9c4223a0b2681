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

import math

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


# ---- the rest of the activation family (ops/activations.py); same rounding rules as LeakyReLU ----

def _clamp_f32(y: np.ndarray, clamp: float | None) -> np.ndarray:
    """y (float32) limited to [-clamp, clamp]; NaN stays NaN."""
    if clamp is None:
        return y
    c = np.float32(clamp)
    return np.where(y > c, c, np.where(y < -c, -c, y))


def _clamped_out(y: np.ndarray, clamp: float | None) -> np.ndarray:
    """Where the clamp cuts y (float32) off: there the gradient is 0."""
    if clamp is None:
        return np.zeros(y.shape, bool)
    return (y > np.float32(clamp)) | (y < -np.float32(clamp))


def _slopes_forward(x: np.ndarray, slopes: np.ndarray) -> np.ndarray:
    """x > 0 ? x : slope * x in float32 (slopes broadcast against x), the product rounded to x's dtype."""
    xf = _as_f32(x)
    with np.errstate(invalid="ignore", over="ignore"):
        return np.where(xf > 0, xf, (np.asarray(slopes, np.float32) * xf).astype(x.dtype).astype(np.float32))


def _slopes_backward(x: np.ndarray, dy: np.ndarray, slopes: np.ndarray, clamp: float | None) -> np.ndarray:
    """dx of _slopes_forward + clamp, in x's dtype."""
    xf, s = _as_f32(x), np.asarray(slopes, np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        dx = np.where(xf > 0, _as_f32(dy), (s * _as_f32(dy)).astype(x.dtype).astype(np.float32))
        dx = np.where(_clamped_out(_slopes_forward(x, s), clamp), np.float32(0.0), dx)
    return dx.astype(x.dtype)


def channel_weight(weight: np.ndarray, ndim: int) -> np.ndarray:
    """A PReLU weight of shape (1,) or (C,) as float32, shaped to broadcast along axis 1 of an ndim tensor."""
    w = np.asarray(weight).astype(np.float32)
    return w.reshape(1) if w.size == 1 else w.reshape((1, -1) + (1,) * (ndim - 2))


def prelu_forward(x: np.ndarray, weight: np.ndarray, clamp: float | None = None) -> np.ndarray:
    """PReLU as torch.nn.functional.prelu: x > 0 ? x : weight[channel] * x (float32 math, one rounding)."""
    with np.errstate(invalid="ignore"):
        return _clamp_f32(_slopes_forward(x, channel_weight(weight, x.ndim)), clamp).astype(x.dtype)


def prelu_backward(x: np.ndarray, dy: np.ndarray, weight: np.ndarray, clamp: float | None = None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(dx in x's dtype, dweight in weight's dtype): dweight[c] = sum of x * dy over channel c where x <= 0
    and the output was not clamped (float32 products summed in float64, rounded once)."""
    w = channel_weight(weight, x.ndim)
    dx = _slopes_backward(x, dy, w, clamp)
    with np.errstate(invalid="ignore", over="ignore"):
        xf = _as_f32(x)
        keep = ~(xf > 0) & ~_clamped_out(_slopes_forward(x, w), clamp)
        terms = np.where(keep, xf * _as_f32(dy), np.float32(0.0)).astype(np.float64)
    axes = tuple(range(x.ndim)) if np.asarray(weight).size == 1 else (0,) + tuple(range(2, x.ndim))
    return dx, terms.sum(axes).reshape(np.shape(weight)).astype(np.float32).astype(np.asarray(weight).dtype)


_LOG2E, _LN2_HI, _LN2_LO = np.float32(1.44269504088896341), np.float32(0.693359375), np.float32(-2.12194440e-4)
_TAYLOR = [np.float32(1.0 / math.factorial(n)) for n in range(2, 9)]


def _fma32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """a * b + c rounded once to float32 (the float32 product is exact in float64; the float64 sum is then
    rounded to float32, which equals one rounding except in ties too rare to occur in the tests)."""
    return (np.asarray(a, np.float64) * np.asarray(b, np.float64) + np.asarray(c, np.float64)).astype(np.float32)


def _pow2(k: np.ndarray) -> np.ndarray:
    """2^k as float32 for integral float32 k (NaN stays NaN)."""
    return np.where(np.isnan(k), k, np.ldexp(np.float32(1), np.nan_to_num(k).astype(np.int32))).astype(np.float32)


def _exp_parts(x: np.ndarray, lo: float, shift: int) -> tuple[np.ndarray, np.ndarray]:
    """(2^(k + shift), p = expm1(r)) for x limited to [lo, 0], x = k ln2 + r, as the kernel's exp_parts
    (activations.cc): k = rint(x * log2(e)), r = x - k * ln2 (two fmas), p = fma(r * r, q(r), r) with q the
    Taylor polynomial of (expm1(r) - r) / r^2 to degree 6 (Horner, fmas)."""
    with np.errstate(invalid="ignore", over="ignore"):
        x = np.asarray(x, np.float32)
        x = np.where(x < lo, np.float32(lo), x)
        x = np.where(x > 0, np.float32(0), x)
        k = np.rint(x * _LOG2E).astype(np.float32)
        r = _fma32(-k, _LN2_HI, x)
        r = _fma32(-k, _LN2_LO, r)
        q = np.full(x.shape, _TAYLOR[-1], np.float32)
        for c in _TAYLOR[-2::-1]:
            q = _fma32(q, r, c)
        return _pow2((k + np.float32(shift)).astype(np.float32)), _fma32((r * r).astype(np.float32), q, r)


def elu_expm1(x: np.ndarray) -> np.ndarray:
    """expm1(x) for float32 x <= 0 as the ELU forward kernel computes it: x limited to [-17.5, 0] (below,
    float32 expm1 rounds to -1, as it does at -17.5), expm1 = fma(2^k, p, 2^k - 1); expm1(-0) = -0."""
    s, p = _exp_parts(x, -17.5, 0)
    with np.errstate(invalid="ignore", over="ignore"):
        return np.where(x == 0, np.asarray(x, np.float32), _fma32(s, p, (s - np.float32(1)).astype(np.float32)))


def elu_exp(x: np.ndarray) -> np.ndarray:
    """exp(x) for float32 x <= 0 as the ELU backward kernel computes it: x limited to [-104, 0] (below, exp
    rounds to 0), a = 2^(k + 64) (normal for every k here), exp = fma(a, p, a) * 2^-64 (one rounding into
    the subnormals)."""
    a, p = _exp_parts(x, -104.0, 64)
    with np.errstate(invalid="ignore", over="ignore", under="ignore"):
        return (_fma32(a, p, a) * np.float32(2.0 ** -64)).astype(np.float32)


def elu_forward(x: np.ndarray, alpha: float = 1.0, clamp: float | None = None) -> np.ndarray:
    """ELU as torch.nn.functional.elu: x > 0 ? x : alpha * expm1(x), with elu_expm1 (float32, within 1 ulp of
    the exact value), times the float32 alpha, rounded once to x's dtype."""
    xf = _as_f32(x)
    em1 = elu_expm1(xf)
    with np.errstate(invalid="ignore", over="ignore"):
        y = np.where(xf > 0, xf, (np.float32(alpha) * em1).astype(x.dtype).astype(np.float32))
    return _clamp_f32(y, clamp).astype(x.dtype)


def elu_backward(x: np.ndarray, dy: np.ndarray, alpha: float = 1.0, clamp: float | None = None) -> np.ndarray:
    """dx = dy where x > 0, else dy * (alpha * exp(x)) with elu_exp (float32 products), 0 where the clamp cut
    the output off; rounded once to x's dtype."""
    xf, dyf = _as_f32(x), _as_f32(dy)
    ex = elu_exp(xf)
    with np.errstate(invalid="ignore", over="ignore"):
        g = (np.float32(alpha) * ex).astype(np.float32)
        dx = np.where(xf > 0, dyf, (dyf * g).astype(x.dtype).astype(np.float32))
        y = elu_forward(x, alpha).astype(np.float32)
        dx = np.where(_clamped_out(y, clamp), np.float32(0.0), dx)
    return dx.astype(x.dtype)


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix64(z: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser on uint64 (wrapping arithmetic)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def rrelu_uniforms(seed: int, counter: int, n: int) -> np.ndarray:
    """u_i in [0, 1) (24 bits, float64) of element i = 0..n-1 for the key (seed, counter): a pure function.

    key = mix64(seed << 32 | counter) (both as uint32), u_i = (mix64(key + (i + 1) * golden) >> 40) / 2^24.
    """
    with np.errstate(over="ignore"):
        key = _mix64(np.array([(int(seed) & 0xFFFFFFFF) << 32 | (int(counter) & 0xFFFFFFFF)], np.uint64))[0]
        h = _mix64(key + (np.arange(1, n + 1, dtype=np.uint64) * _GOLDEN))
    return (h >> np.uint64(40)).astype(np.float64) / 16777216.0


def rrelu_slopes(seed: int, counter: int, shape: tuple, lower: float, upper: float) -> np.ndarray:
    """The per-element slopes of RReLU in training: float32(lower + (upper - lower) * u_i) in float64 math,
    with lower and upper taken as float32, element i in row-major order."""
    lo, hi = float(np.float32(lower)), float(np.float32(upper))
    u = rrelu_uniforms(seed, counter, int(np.prod(shape, dtype=np.int64)))
    return (lo + (hi - lo) * u).astype(np.float32).reshape(shape)


def rrelu_forward(x: np.ndarray, lower: float = 1 / 8, upper: float = 1 / 3, *, training: bool = False,
                  key: tuple[int, int] = (0, 0), clamp: float | None = None) -> np.ndarray:
    """RReLU: in training x > 0 ? x : s_i * x with rrelu_slopes(*key); in eval LeakyReLU with the slope
    float32((lower + upper) / 2) (as torch.nn.functional.rrelu with training=False)."""
    if not training:
        return forward(x, (lower + upper) / 2, clamp)
    with np.errstate(invalid="ignore"):
        return _clamp_f32(_slopes_forward(x, rrelu_slopes(*key, x.shape, lower, upper)), clamp).astype(x.dtype)


def rrelu_backward(x: np.ndarray, dy: np.ndarray, lower: float = 1 / 8, upper: float = 1 / 3, *,
                   training: bool = False, key: tuple[int, int] = (0, 0), clamp: float | None = None) -> np.ndarray:
    """dx of rrelu_forward: the same slopes as the forward (same key), 0 where clamped."""
    if not training:
        return backward(x, dy, (lower + upper) / 2, clamp)
    return _slopes_backward(x, dy, rrelu_slopes(*key, x.shape, lower, upper), clamp)


def adaptive_slopes(x: np.ndarray, alpha: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    """AdaptiveLeakyReLU's per-channel slopes in float64: sigmoid(mean_c / sqrt(var_c + eps)) * alpha_c, with
    the mean and the population (biased) variance of channel c (axis 1) over batch and space."""
    x64 = np.asarray(x, np.float64)
    axes = (0,) + tuple(range(2, x64.ndim))
    z = x64.mean(axes) / np.sqrt(x64.var(axes) + eps)
    return np.asarray(alpha, np.float64) / (1.0 + np.exp(-z))


def adaptive_forward(x: np.ndarray, alpha: np.ndarray, eps: float = 1e-5, clamp: float | None = None) -> np.ndarray:
    """AdaptiveLeakyReLU: PReLU with the weight adaptive_slopes(x, alpha) (rounded to float32)."""
    return prelu_forward(x, adaptive_slopes(x, alpha, eps).astype(np.float32), clamp)


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
