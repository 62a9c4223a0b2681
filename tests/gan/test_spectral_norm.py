"""Spectral normalisation: sigma by power iteration against numpy's SVD, identical layers on the native and gemm
conv paths, and the estimate vector as checkpointed, non-trainable state."""
import mindspore as ms
import numpy as np
import pytest
from mindspore import Tensor

from gan.config.schema import ActConfig, ModelConfig
from gan.models.layers import PowerIteration, SpectralNorm, make_conv
from gan.models.networks import NETWORKS, NORMS, PointwiseDense, dense
from ops import onednn


def _set_weight(layer, rng):
    layer.weight.set_data(Tensor(rng.standard_normal(layer.weight.shape).astype(np.float32)))


def _sigma_svd(layer) -> float:
    w = layer.weight.asnumpy().astype(np.float64)
    return float(np.linalg.svd(w.reshape(w.shape[0], -1), compute_uv=False)[0])


@pytest.mark.parametrize("kind", ["native", "gemm", "dense"])
def test_sigma_converges_to_the_largest_singular_value(kind):
    rng = np.random.default_rng(0)
    layer = dense(48, 16, NORMS["spectral"]) if kind == "dense" else make_conv(
        8, 16, 4, 2, 1, impl=kind, spectral_norm=True)
    _set_weight(layer, rng)
    layer.reset_u(rng)
    iterate = ms.jit(PowerIteration(layer))
    first = float(iterate().asnumpy()[0])
    for _ in range(49):
        sigma = float(iterate().asnumpy()[0])
    exact = _sigma_svd(layer)
    assert sigma == pytest.approx(exact, rel=0.01)
    assert float(layer.sigma().asnumpy()) == pytest.approx(exact, rel=0.01)  # what the forward divides by
    assert first < 0.99 * exact  # one iteration is not enough: the test sees convergence


@pytest.mark.parametrize("impl", ["native", "gemm"])
def test_forward_is_the_layer_with_weight_over_sigma(impl):
    rng = np.random.default_rng(1)
    sn = make_conv(3, 4, 4, 2, 1, has_bias=True, impl=impl, spectral_norm=True)
    plain = make_conv(3, 4, 4, 2, 1, has_bias=True, impl=impl)
    _set_weight(sn, rng)
    sn.bias.set_data(Tensor(rng.standard_normal(4).astype(np.float32)))
    plain.weight.set_data(Tensor(sn.weight.asnumpy() / float(sn.sigma().asnumpy())))
    plain.bias.set_data(sn.bias.data)
    x = Tensor(rng.standard_normal((2, 3, 8, 8)).astype(np.float32))
    np.testing.assert_allclose(sn(x).asnumpy(), plain(x).asnumpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("impl", ["gemm", "onednn"])
def test_spectral_layers_agree_across_conv_impls_and_share_parameter_names(impl):
    if impl == "onednn" and onednn.unavailable_reason() is not None:
        pytest.skip(f"oneDNN kernels unavailable: {onednn.unavailable_reason()}")
    rng = np.random.default_rng(2)
    native = make_conv(3, 4, 4, 2, 1, has_bias=True, impl="native", spectral_norm=True)
    gemm = make_conv(3, 4, 4, 2, 1, has_bias=True, impl=impl, spectral_norm=True)
    assert [p.name for p in native.get_parameters()] == [p.name for p in gemm.get_parameters()]
    for a, b in zip(native.get_parameters(), gemm.get_parameters()):
        b.set_data(Tensor(rng.standard_normal(a.shape).astype(np.float32)))
        a.set_data(b.data)
    x = Tensor(rng.standard_normal((2, 3, 8, 8)).astype(np.float32))
    np.testing.assert_allclose(native(x).asnumpy(), gemm(x).asnumpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("model", ["dcgan", "mlp"])
def test_spectral_discriminator_has_no_batchnorm_and_keeps_u_out_of_the_optimiser(model):
    nets = NETWORKS[model]
    conf = ModelConfig(name=model, ngf=8, ndf=8, nz=4, d_norm="spectral")
    d = nets.discriminator(conf, ActConfig(), 1, "gemm")
    nets.init(d, np.random.default_rng(0))
    layers = [c for _, c in d.cells_and_names() if isinstance(c, SpectralNorm)]
    assert len(layers) == sum(name.startswith("conv") for name in d.layers.name_cells())
    assert not any(name.startswith("bn") for name in d.layers.name_cells())
    us = [p for p in d.get_parameters() if p.name.endswith("sn_u")]
    assert len(us) == len(layers) and not any(p.requires_grad for p in us)
    assert all(p.requires_grad for p in d.trainable_params())
    assert all(abs(np.linalg.norm(p.asnumpy()) - 1) < 1e-6 for p in us)


def test_power_iteration_needs_a_spectral_layer():
    with pytest.raises(ValueError, match="no spectral-norm layer"):
        PowerIteration(PointwiseDense(2, 2))


def test_transposed_conv_has_no_spectral_norm():
    with pytest.raises(ValueError, match="not Conv2dTranspose"):
        make_conv(2, 2, 4, 2, 1, transpose=True, spectral_norm=True)
