"""DCGAN shapes, layouts, per-layer slopes through the custom op, and the DCGAN initialisation."""
import numpy as np
import pytest
from mindspore import Tensor, nn

from gan.config.schema import ActConfig, ConfigError, ModelConfig
from gan.models.networks import (
    Discriminator,
    Generator,
    Maxout,
    MLPDiscriminator,
    init_dcgan_weights,
    layer_slopes,
    num_blocks,
)
from ops import LeakyReLU


def _acts(net):
    return [c for name, c in net.layers.name_cells().items() if name.startswith("act")]


@pytest.mark.parametrize("size, channels", [(32, 1), (32, 3), (64, 3), (128, 1)])
def test_shapes_for_every_size_and_channel_count(size, channels):
    model = ModelConfig(image_size=size, nz=8, ngf=4, ndf=4, conv_impl="native")
    g = Generator(model, ActConfig(), channels, "native")
    d = Discriminator(model, ActConfig(), channels, "native")
    images = g(Tensor(np.random.default_rng(0).standard_normal((2, 8, 1, 1), dtype=np.float32)))
    assert images.shape == (2, channels, size, size)
    assert np.abs(images.asnumpy()).max() <= 1.0
    assert d(images).shape == (2,)
    assert len(_acts(g)) == len(_acts(d)) == num_blocks(size) == int(np.log2(size)) - 2


def test_discriminator_layout_of_the_article():
    d = Discriminator(ModelConfig(image_size=64, ndf=8), ActConfig(), 3, "native")
    names = list(d.layers.name_cells())
    # conv, LeakyReLU; then conv, BatchNorm, LeakyReLU blocks; a final 4x4 conv to one logit, no Sigmoid.
    assert names == ["conv0", "act0", "conv1", "bn1", "act1", "conv2", "bn2", "act2", "conv3", "bn3", "act3", "conv4"]
    assert not any(isinstance(c, nn.Sigmoid) for _, c in d.cells_and_names())


def test_every_activation_is_the_custom_op_with_the_configured_slopes():
    act = ActConfig(negative_slope=0.2, d_layers=[0.2, 0.1, 0.05], g_negative_slope=0.0)
    model = ModelConfig(ngf=4, ndf=4)
    g, d = Generator(model, act, 1, "native"), Discriminator(model, act, 1, "native")
    assert all(isinstance(a, LeakyReLU) for a in _acts(g) + _acts(d))
    assert [a.negative_slope for a in _acts(d)] == [0.2, 0.1, 0.05]
    assert [a.negative_slope for a in _acts(g)] == [0.0, 0.0, 0.0]  # ReLU through the same op
    g_layers = Generator(model, ActConfig(g_layers=[0.3, 0.2, 0.1]), 1, "native")
    assert [a.negative_slope for a in _acts(g_layers)] == [0.3, 0.2, 0.1]


def test_per_layer_list_of_the_wrong_length_names_the_key():
    with pytest.raises(ConfigError, match=r"act.d_layers has 4 slopes .* 3 LeakyReLU layers"):
        Discriminator(ModelConfig(ngf=4, ndf=4), ActConfig(d_layers=[0.2, 0.2, 0.1, 0.05]), 1, "native")
    assert layer_slopes("k", None, 0.3, 2) == [0.3, 0.3]


def test_unsupported_image_size_is_a_clear_error():
    with pytest.raises(ConfigError, match=r"model.image_size=48 .* \[32, 64, 128\]"):
        num_blocks(48)


def test_dcgan_init_statistics_and_seeding():
    model = ModelConfig(image_size=64, ngf=32)
    g = Generator(model, ActConfig(), 3, "native")
    init_dcgan_weights(g, np.random.default_rng(0))
    cells = g.layers.name_cells()
    weight = cells["conv1"].weight.asnumpy()
    gamma = cells["bn1"].gamma.asnumpy()
    assert abs(weight.mean()) < 1e-3 and abs(weight.std() - 0.02) < 1e-3
    assert abs(gamma.mean() - 1.0) < 0.01 and abs(gamma.std() - 0.02) < 0.01
    assert np.all(cells["bn1"].beta.asnumpy() == 0)
    again = Generator(model, ActConfig(), 3, "native")
    init_dcgan_weights(again, np.random.default_rng(0))
    assert np.array_equal(again.layers.name_cells()["conv1"].weight.asnumpy(), weight)


def test_maxout_is_the_max_of_consecutive_pieces_with_its_gradient_on_the_winner():
    x = np.random.default_rng(1).standard_normal((4, 6, 1, 1)).astype(np.float32)
    out = Maxout(3)(Tensor(x)).asnumpy()
    np.testing.assert_array_equal(out, x.reshape(4, 2, 3, 1).max(axis=2).reshape(4, 2, 1, 1))
    from mindspore import ops
    grad = ops.grad(lambda v: Maxout(3)(v).sum())(Tensor(x)).asnumpy().reshape(4, 2, 3)
    winners = x.reshape(4, 2, 3).argmax(axis=2)
    np.testing.assert_array_equal(grad, np.eye(3, dtype=np.float32)[winners])


def test_mlp_discriminator_with_maxout_units():
    d = MLPDiscriminator(ModelConfig(name="mlp", ndf=8, d_norm="none", d_maxout=5), ActConfig(), 2, "native")
    cells = dict(d.layers.name_cells())
    assert [type(cells[f"act{i}"]) for i in range(3)] == [Maxout] * 3
    assert cells["conv0"].weight.shape == (40, 2) and cells["conv1"].weight.shape == (40, 8)
    assert d(Tensor(np.zeros((3, 2, 1, 1), np.float32))).shape == (3,)
