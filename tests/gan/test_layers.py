"""gan.models.layers: the gemm convolutions (im2col/col2im kernels + MatMul) match MindSpore's native layers.

Forward, input and weight gradients, with and without bias, in PyNative and graph mode, float32 and float16.

Tolerance: fp32, |gemm - native| <= 1e-5 + 1e-4 * |native| elementwise (sums of up to ~150 products
reordered; observed differences are ~1e-7 on forward and ~1e-5 relative on weight gradients).
"""
from __future__ import annotations

import mindspore as ms
import numpy as np
import pytest
from mindspore import Tensor, nn

from gan.models.layers import GemmConv2d, GemmConv2dTranspose, make_conv

RTOL, ATOL = 1e-4, 1e-5

# (in, out, kernel, stride, padding, height, width): odd sizes, stride 1 and 2, padding 0 and 1, kernel 3 and 4.
CASES = [
    (3, 5, 4, 2, 1, 9, 10),
    (2, 4, 3, 1, 1, 11, 8),
    (4, 3, 4, 1, 0, 8, 13),
    (3, 2, 3, 2, 0, 17, 9),
    (2, 3, 4, 2, 1, 16, 16),
    (5, 1, 4, 1, 0, 4, 4),   # the discriminator's last layer: 4x4 -> 1x1 (the dense path)
    (3, 2, 3, 2, 0, 3, 3),   # dense path with stride 2
]
TRANSPOSE_CASES = [
    (3, 5, 4, 2, 1, 5, 4),
    (2, 4, 3, 1, 1, 7, 8),
    (4, 3, 4, 1, 0, 1, 1),   # the generator's first layer: z (N, nz, 1, 1) -> 4x4 (the dense path)
    (2, 3, 3, 2, 0, 1, 1),   # dense path with stride 2
    (3, 2, 3, 2, 0, 5, 3),
    (2, 3, 4, 2, 1, 8, 9),
]


def _grads(net: nn.Cell, x: Tensor, seed_out: np.ndarray) -> tuple[np.ndarray, ...]:
    """Output, d<out, seed_out>/dx and /dparams of `net` (a fixed random projection makes every grad distinct)."""
    _, (gx, gparams) = ms.value_and_grad(_projected(net, Tensor(seed_out)), 0, net.trainable_params())(x)
    return (net(x).asnumpy(), gx.asnumpy(), *(g.asnumpy() for g in gparams))


def _projected(net: nn.Cell, seed: Tensor):
    """The scalar <net(x), seed> as a function of x."""
    def loss(inp: Tensor) -> Tensor:
        return (net(inp) * seed).sum()
    return loss


def _pair(case: tuple, transpose: bool, has_bias: bool) -> tuple[nn.Cell, nn.Cell, Tensor]:
    """A native layer, a gemm layer carrying the native layer's parameters, and a batch-2 input."""
    cin, cout, k, s, p, h, w = case
    rng = np.random.default_rng(list(case) + [transpose, has_bias])
    native = make_conv(cin, cout, k, s, p, transpose=transpose, has_bias=has_bias, impl="native")
    gemm = make_conv(cin, cout, k, s, p, transpose=transpose, has_bias=has_bias, impl="gemm")
    for param in native.get_parameters():
        param.set_data(Tensor(rng.standard_normal(param.shape).astype(np.float32)))
    ms.load_param_into_net(gemm, {p.name: p.clone() for p in native.get_parameters()}, strict_load=True)
    return native, gemm, Tensor(rng.standard_normal((2, cin, h, w)).astype(np.float32))


@pytest.mark.parametrize("has_bias", [False, True])
@pytest.mark.parametrize("transpose,case", [(False, c) for c in CASES] + [(True, c) for c in TRANSPOSE_CASES])
def test_gemm_matches_native_forward_and_grads(transpose: bool, case: tuple, has_bias: bool) -> None:
    native, gemm, x = _pair(case, transpose, has_bias)
    want_y = native(x).asnumpy()
    assert gemm(x).shape == want_y.shape
    seed = np.random.default_rng(1).standard_normal(want_y.shape).astype(np.float32)
    names = ["output", "input grad", "weight grad", "bias grad"]
    for name, got, want in zip(names, _grads(gemm, x, seed), _grads(native, x, seed)):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=f"{name} differs for {case}")


def test_gemm_matches_native_in_graph_mode() -> None:
    native, gemm, x = _pair(CASES[0], False, True)
    compiled = ms.jit(gemm.construct)
    np.testing.assert_allclose(compiled(x).asnumpy(), native(x).asnumpy(), rtol=RTOL, atol=ATOL)


def test_gemm_stack_grads_match_native_in_graph_mode() -> None:
    """A conv -> transposed conv stack (several im2col/col2im geometries in one graph) under ms.jit."""
    nets = {}
    for impl in ("native", "gemm"):
        nets[impl] = nn.SequentialCell([make_conv(3, 4, 4, 2, 1, impl=impl), make_conv(4, 5, 3, 1, 1, impl=impl),
                                        make_conv(5, 2, 4, 2, 1, transpose=True, impl=impl)])
    rng = np.random.default_rng(7)
    for param in nets["native"].get_parameters():
        param.set_data(Tensor(rng.standard_normal(param.shape).astype(np.float32)))
    ms.load_param_into_net(nets["gemm"], {p.name: p.clone() for p in nets["native"].get_parameters()},
                           strict_load=True)
    x = Tensor(rng.standard_normal((2, 3, 10, 10)).astype(np.float32))
    seed = Tensor(rng.standard_normal((2, 2, 10, 10)).astype(np.float32))
    results = {}
    for impl, net in nets.items():
        _, (gx, gparams) = ms.jit(ms.value_and_grad(_projected(net, seed), 0, net.trainable_params()))(x)
        results[impl] = [gx.asnumpy(), *(g.asnumpy() for g in gparams)]
    for got, want in zip(results["gemm"], results["native"]):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=1e-4)


@pytest.mark.parametrize("transpose", [False, True])
def test_state_dict_moves_between_impls(transpose: bool) -> None:
    """A native layer's saved parameters load into a gemm layer (and back) and give the same outputs."""
    native, _, x = _pair(CASES[0], transpose, True)
    gemm = make_conv(*CASES[0][:5], transpose=transpose, has_bias=True, impl="gemm")
    assert [(p.name, p.shape) for p in gemm.get_parameters()] == [(p.name, p.shape) for p in native.get_parameters()]
    not_loaded, _ = ms.load_param_into_net(gemm, {p.name: p.clone() for p in native.get_parameters()})
    assert not_loaded == []
    back = make_conv(*CASES[0][:5], transpose=transpose, has_bias=True, impl="native")
    ms.load_param_into_net(back, {p.name: p.clone() for p in gemm.get_parameters()}, strict_load=True)
    np.testing.assert_allclose(gemm(x).asnumpy(), native(x).asnumpy(), rtol=RTOL, atol=ATOL)
    np.testing.assert_array_equal(back(x).asnumpy(), native(x).asnumpy())


@pytest.mark.parametrize("transpose,case", [(False, CASES[0]), (False, CASES[1]), (False, CASES[5]),
                                            (True, TRANSPOSE_CASES[0]),
                                            (True, TRANSPOSE_CASES[2])])
def test_gemm_runs_in_fp16(transpose: bool, case: tuple) -> None:
    """Mixed precision casts the layer to fp16: output, input and weight gradients stay fp16 and near fp32 native.

    Tolerance 2e-2 absolute on O(1..10) values: fp16 inputs and weights carry ~5e-4 relative rounding each.
    """
    native, gemm, x = _pair(case, transpose, False)
    gemm.to_float(ms.float16)
    want_y = native(x).asnumpy()
    seed = np.random.default_rng(2).standard_normal(want_y.shape).astype(np.float32)
    got = _grads(gemm, x.astype(ms.float16), seed.astype(np.float16))
    assert got[0].dtype == np.float16 and got[1].dtype == np.float16
    for name, g, want in zip(["output", "input grad", "weight grad"], got, _grads(native, x, seed)):
        np.testing.assert_allclose(g.astype(np.float32), want, rtol=2e-2, atol=2e-2 * max(1.0, np.abs(want).max() / 10),
                                   err_msg=f"fp16 {name} differs for {case}")


def test_make_conv_builds_the_requested_class() -> None:
    assert type(make_conv(2, 3, 4, 2, 1, impl="gemm")) is GemmConv2d
    assert type(make_conv(2, 3, 4, 2, 1, transpose=True, impl="gemm")) is GemmConv2dTranspose
    assert type(make_conv(2, 3, 4, 2, 1)) is nn.Conv2d
    assert type(make_conv(2, 3, 4, 2, 1, transpose=True)) is nn.Conv2dTranspose


def test_unresolved_impl_is_named() -> None:  # resolving model.conv_impl: tests/gan/test_plan.py
    with pytest.raises(ValueError, match="'auto'.*resolve_conv_impl"):
        make_conv(2, 3, 4, 2, 1, impl="auto")


@pytest.mark.parametrize("kwargs,bad", [({"kernel_size": 0}, "kernel_size=0"), ({"stride": 1.5}, "stride=1.5"),
                                        ({"padding": -1}, "padding=-1"), ({"in_channels": True}, "in_channels=True")])
def test_bad_sizes_are_named(kwargs: dict, bad: str) -> None:
    args = {"in_channels": 2, "out_channels": 3, "kernel_size": 4, "stride": 2, "padding": 1} | kwargs
    with pytest.raises(ValueError, match=bad):
        make_conv(**args, impl="gemm")
