"""DCGAN and 2D MLP generators and discriminators, all built from one conv -> BatchNorm -> activation block;
the activation of each layer comes from one factory (make_activation) building the row of act.d_kind /
act.g_kind in gan.config.activation_kinds. The conv implementation and fusion kind of each network come from the
build plan (gan.config.plan)."""
from __future__ import annotations

import zlib
from collections import OrderedDict
from math import log2
from typing import Callable, NamedTuple

import numpy as np
from mindspore import Tensor, nn

import ops
from gan.config.activation_kinds import ACTIVATION_KINDS
from gan.config.plan import fusion_kind
from gan.config.schema import IMAGE_SIZES, ActConfig, ConfigError, ModelConfig
from gan.models.layers import SpectralNorm, fuse_conv_act, make_conv, spectral
from ops import LeakyReLU, norm_act_layers
from ops.fused import SharedWeight

# The Cells of the random kinds (RReLU): keyed per run seed and layer by seed_random_activations.
RANDOM_CELLS = tuple(getattr(ops, row.cell) for row in ACTIVATION_KINDS.values() if row.random)


def layer_seed(run_seed: int, layer: str) -> int:
    """A 31-bit seed per (run seed, layer name) for random activations (RReLU's key)."""
    return zlib.crc32(f"{run_seed}/{layer}".encode()) & 0x7FFFFFFF


def make_activation(act: ActConfig, net: str, index: int, slope: float, channels: int) -> nn.Cell:
    """The activation of layer `index` of network `net` ("d" or "g"), of kind act.{net}_kind: its row's ops Cell
    with the row's act.* parameters and constants, and the layer's LeakyReLU slope, channel count (learned
    slopes are per channel) or seed as the row asks. Random kinds get layer_seed(0, ...) here;
    `seed_random_activations` mixes in the run's seed."""
    kind = getattr(act, f"{net}_kind")
    if kind not in ACTIVATION_KINDS:
        raise ConfigError(f"act.{net}_kind={kind!r} is not allowed; choose one of {list(ACTIVATION_KINDS)}")
    row = ACTIVATION_KINDS[kind]
    args = dict(row.constants) | {p.arg: getattr(act, p.key) for p in row.params}
    args |= {"negative_slope": slope} if row.layer_slopes else {}
    args |= {"num_parameters": channels} if row.per_channel else {}
    args |= {"seed": layer_seed(0, f"{net}{index}")} if row.random else {}
    return getattr(ops, row.cell)(**args, clamp=act.clamp)


def seed_random_activations(net: nn.Cell, run_seed: int) -> None:
    """Key every random activation (RReLU) of `net` by (run seed, its layer name): other seeds draw other slopes."""
    for name, cell in net.cells_and_names():
        if isinstance(cell, RANDOM_CELLS):
            cell.reseed(layer_seed(run_seed, name))


def num_blocks(image_size: int) -> int:
    """Number of 2x up/down-sampling blocks between 4x4 and `image_size` (= activations per network)."""
    if image_size not in IMAGE_SIZES:
        raise ConfigError(f"model.image_size={image_size!r} is not supported; choose one of {list(IMAGE_SIZES)}")
    return int(log2(image_size)) - 2


def layer_slopes(key: str, per_layer: list[float] | None, default: float, count: int) -> list[float]:
    """Slopes of a network's `count` activations: the per-layer list when given, else `default` everywhere."""
    if per_layer is None:
        return [default] * count
    if len(per_layer) != count:
        raise ConfigError(f"{key} has {len(per_layer)} slopes {list(per_layer)} but this network has {count} "
                          f"LeakyReLU layers; give exactly {count} values or null")
    return [float(s) for s in per_layer]


def network_slopes(act: ActConfig, net: str, count: int) -> list[float]:
    """The LeakyReLU slope of each of the `count` activations of network `net` ("d" or "g"): act.<net>_layers when
    given, else act.negative_slope everywhere (for G, act.g_negative_slope when it is set)."""
    default = act.g_negative_slope if net == "g" and act.g_negative_slope is not None else act.negative_slope
    return layer_slopes(f"act.{net}_layers", getattr(act, f"{net}_layers"), default, count)


class Norm(NamedTuple):
    """One normaliser (`model.d_norm` / `model.g_norm`): whether a BatchNorm follows the layer, whether the
    layer is spectrally normalised, and whether it has a bias (it does when no BatchNorm's beta follows)."""

    batch_norm: bool
    spectral: bool
    bias: bool


NORMS = {"batch": Norm(batch_norm=True, spectral=False, bias=False),
         "spectral": Norm(batch_norm=False, spectral=True, bias=True),
         "none": Norm(batch_norm=False, spectral=False, bias=True)}


def _block(layers: OrderedDict, index: int, conv: nn.Cell, width: int | None, slope: float,
           clamp: float | None, fusion: str, sync_bn: bool, act: nn.Cell, layout: str = "NCHW") -> None:
    """Append conv, then BatchNorm (when `width` is given; over all ranks if `sync_bn`) and the activation
    `act` as `fusion` builds them, as block `index` (a LeakyReLU there is built by norm_act_layers itself).
    Without BatchNorm, fusion=bn_act|conv_act make the conv and its activation one layer under the conv's
    name (gan.models.layers.fuse_conv_act: bias + LeakyReLU/PReLU in one kernel, or conv_act's oneDNN primitive)."""
    leaky = type(act) is LeakyReLU
    fused = fuse_conv_act(conv, act, fusion) if width is None else None
    if getattr(fused, "prelu_weight", None) is not None:
        # "act" first: the network names the shared PReLU weight act<i>.weight, as unfused (norm_act_layers)
        layers[f"act{index}"] = SharedWeight(fused.prelu_weight)
    if fused is not None:
        layers[f"conv{index}"] = fused
        return
    layers[f"conv{index}"] = conv
    for role, cell in norm_act_layers(width, act.negative_slope if leaky else slope,
                                      fused=fusion_kind(fusion).fused_kernels, clamp=clamp, sync=sync_bn,
                                      act=None if leaky else act, layout=layout).items():
        layers[f"{role}{index}"] = cell


class Generator(nn.Cell):
    """z (N, nz, 1, 1) -> images (N, C, S, S) in [-1, 1]: transposed convs, BatchNorm, LeakyReLU, Tanh.
    layout="NHWC" (gan.config.plan's NetworkPlan.layout): the layers pass channels-last activations between them; the
    first reads z and the last writes the images in NCHW."""

    def __init__(self, model: ModelConfig, act: ActConfig, channels: int, conv_impl: str,
                 fusion: str = "none", sync_bn: bool = False, layout: str = "NCHW") -> None:
        super().__init__()
        n = num_blocks(model.image_size)
        slopes = network_slopes(act, "g", n)
        widths = [model.ngf * 2 ** (n - 1 - i) for i in range(n)]
        norm = NORMS[model.g_norm]
        layers: OrderedDict = OrderedDict()
        in_ch = model.nz
        for i, (width, slope) in enumerate(zip(widths, slopes)):
            stride, pad = (1, 0) if i == 0 else (2, 1)
            conv = make_conv(in_ch, width, 4, stride, pad, transpose=True, has_bias=norm.bias, impl=conv_impl,
                             layout=layout, in_layout="NCHW" if i == 0 else layout)
            _block(layers, i, conv, width if norm.batch_norm else None, slope, act.clamp, fusion, sync_bn,
                   make_activation(act, "g", i, slope, width), layout)
            in_ch = width
        layers[f"conv{n}"] = make_conv(in_ch, channels, 4, 2, 1, transpose=True, has_bias=norm.bias, impl=conv_impl,
                                       in_layout=layout)
        layers["tanh"] = nn.Tanh()
        self.layers = nn.SequentialCell(layers)
        self.nz = model.nz

    def construct(self, z: Tensor) -> Tensor:
        return self.layers(z)


class Discriminator(nn.Cell):
    """images (N, C, S, S) -> logits (N,): strided 4x4 convs, LeakyReLU, and `model.d_norm`: BatchNorm from
    the second block (batch), spectral norm on every conv (spectral), or nothing (none). layout="NHWC": the layers
    pass channels-last activations between them; the first reads the images in NCHW.

    No Sigmoid: the losses (gan.training.losses) take logits, which stay finite where sigmoid + log would not.
    """

    def __init__(self, model: ModelConfig, act: ActConfig, channels: int, conv_impl: str,
                 fusion: str = "none", sync_bn: bool = False, layout: str = "NCHW") -> None:
        super().__init__()
        n = num_blocks(model.image_size)
        slopes = network_slopes(act, "d", n)
        norm = NORMS[model.d_norm]
        layers: OrderedDict = OrderedDict()
        in_ch = channels
        for i, slope in enumerate(slopes):
            width = model.ndf * 2 ** i
            conv = make_conv(in_ch, width, 4, 2, 1, has_bias=norm.bias, impl=conv_impl, spectral_norm=norm.spectral,
                             layout=layout, in_layout="NCHW" if i == 0 else layout)
            _block(layers, i, conv, width if norm.batch_norm and i > 0 else None, slope, act.clamp, fusion, sync_bn,
                   make_activation(act, "d", i, slope, width), layout)
            in_ch = width
        layers[f"conv{n}"] = make_conv(in_ch, 1, 4, 1, 0, has_bias=norm.bias, impl=conv_impl,
                                       spectral_norm=norm.spectral, layout=layout)
        self.layers = nn.SequentialCell(layers)

    def construct(self, x: Tensor) -> Tensor:
        return self.layers(x).reshape(-1)


def dcgan_values(name: str, cell: nn.Cell, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Fresh DCGAN-initialised values of one layer's parameters, by attribute: conv weights ~ N(0, 0.02), biases
    0, BatchNorm gamma ~ N(1, 0.02), beta 0 (the initialiser of a new run and of recycled channels)."""
    if name.startswith("conv"):
        values = {"weight": rng.normal(0.0, 0.02, cell.weight.shape).astype(np.float32)}
        return values | ({"bias": np.zeros(cell.bias.shape, np.float32)} if cell.has_bias else {})
    if name.startswith("bn"):
        return {"gamma": rng.normal(1.0, 0.02, cell.gamma.shape).astype(np.float32),
                "beta": np.zeros(cell.beta.shape, np.float32)}
    return {}


def initialise(values: Callable[[str, nn.Cell, np.random.Generator], dict[str, np.ndarray]]) -> Callable:
    """A network's seeded init from its per-layer initialiser `values`; spectral norm's u becomes a random unit
    vector (seeded, host-side) right after its layer's weight."""

    def init(net: nn.Cell, rng: np.random.Generator) -> None:
        for name, cell in net.layers.name_cells().items():
            for attr, value in values(name, cell, rng).items():
                getattr(cell, attr).set_data(Tensor(value))
            if isinstance(cell, SpectralNorm):
                cell.reset_u(rng)

    return init


init_dcgan_weights = initialise(dcgan_values)


MLP_G_DEPTH, MLP_D_DEPTH = 4, 3  # hidden layers of PacGAN's 2D generator and discriminator


class PointwiseDense(nn.Dense):
    """A dense layer on (N, C, 1, 1) maps: what a 1x1 convolution computes there, faster on CPU (one MatMul)."""

    def construct(self, x: Tensor) -> Tensor:
        return super().construct(x.reshape(x.shape[0], -1)).reshape(x.shape[0], -1, 1, 1)

    def forward_with(self, x: Tensor, weight: Tensor) -> Tensor:
        """The layer on another weight of the same shape (spectral norm)."""
        y = self.matmul(x.reshape(x.shape[0], -1), weight.astype(x.dtype))
        if self.has_bias:
            y = self.bias_add(y, self.bias.astype(x.dtype))
        return y.reshape(x.shape[0], -1, 1, 1)


def _check_nchw(layout: str) -> None:
    """ValueError unless `layout` is NCHW: the 2D networks' (N, C, 1, 1) maps have no channels-last variant."""
    if layout != "NCHW":
        raise ValueError(f"the 2D networks are built in layout NCHW only, not {layout!r}")


def dense(in_channels: int, out_channels: int, norm: Norm) -> nn.Cell:
    """A PointwiseDense with the bias and spectral norm `norm` asks for."""
    return (spectral(PointwiseDense) if norm.spectral else PointwiseDense)(in_channels, out_channels,
                                                                            has_bias=norm.bias)


class MLPGenerator(nn.Cell):
    """z (N, nz, 1, 1) -> points (N, C, 1, 1): MLP_G_DEPTH hidden layers of width ngf, `model.g_norm` + LeakyReLU.

    Activations stay (N, C, 1, 1) maps (PointwiseDense layers), so the 2D nets share the DCGAN's block
    factory, fusion kinds, diagnostics and training loop unchanged; 2D points travel as (N, 2, 1, 1).
    """

    def __init__(self, model: ModelConfig, act: ActConfig, channels: int, conv_impl: str,
                 fusion: str = "none", sync_bn: bool = False, layout: str = "NCHW") -> None:
        super().__init__()
        _check_nchw(layout)
        slopes = network_slopes(act, "g", MLP_G_DEPTH)
        norm = NORMS[model.g_norm]
        layers: OrderedDict = OrderedDict()
        in_ch = model.nz
        for i, slope in enumerate(slopes):
            width = model.ngf if norm.batch_norm else None
            _block(layers, i, dense(in_ch, model.ngf, norm), width, slope, act.clamp, fusion, sync_bn,
                   make_activation(act, "g", i, slope, model.ngf))
            in_ch = model.ngf
        layers[f"conv{MLP_G_DEPTH}"] = PointwiseDense(in_ch, channels)
        self.layers = nn.SequentialCell(layers)
        self.nz = model.nz

    def construct(self, z: Tensor) -> Tensor:
        return self.layers(z)


class Maxout(nn.Cell):
    """(N, C * pieces, 1, 1) -> (N, C, 1, 1): unit c is the max of its `pieces` consecutive channels
    (Goodfellow et al. 2013; PacGAN's 2D D: 5 pieces). A unit cannot die as a ReLU can: its gradient always
    reaches the piece that wins."""

    def __init__(self, pieces: int) -> None:
        super().__init__()
        self.pieces = pieces

    def construct(self, x: Tensor) -> Tensor:
        return x.reshape(x.shape[0], -1, self.pieces, 1).max(axis=2).reshape(x.shape[0], -1, 1, 1)


class MLPDiscriminator(nn.Cell):
    """points (N, C, 1, 1) -> logits (N,): MLP_D_DEPTH hidden layers of width ndf, `model.d_norm` and LeakyReLU
    (PacGAN's D has no normaliser: configs/model/mlp.yaml sets d_norm=none), or with model.d_maxout=k maxout
    units: each hidden layer computes k * ndf channels and Maxout(k) keeps ndf (layers conv<i>, act<i>)."""

    def __init__(self, model: ModelConfig, act: ActConfig, channels: int, conv_impl: str,
                 fusion: str = "none", sync_bn: bool = False, layout: str = "NCHW") -> None:
        super().__init__()
        _check_nchw(layout)
        slopes = network_slopes(act, "d", MLP_D_DEPTH)
        norm = NORMS[model.d_norm]
        layers: OrderedDict = OrderedDict()
        in_ch = channels
        pieces = model.d_maxout or 1
        for i, slope in enumerate(slopes):
            width = model.ndf * pieces if norm.batch_norm else None
            _block(layers, i, dense(in_ch, model.ndf * pieces, norm), width, slope, act.clamp, fusion, sync_bn,
                   Maxout(pieces) if model.d_maxout else make_activation(act, "d", i, slope, model.ndf))
            in_ch = model.ndf
        layers[f"conv{MLP_D_DEPTH}"] = dense(in_ch, 1, NORMS["spectral" if norm.spectral else "none"])
        self.layers = nn.SequentialCell(layers)

    def construct(self, x: Tensor) -> Tensor:
        return self.layers(x).reshape(-1)


def mlp_values(name: str, cell: nn.Cell, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Fresh values of one 2D layer's parameters: Glorot-uniform weights and zero biases (TensorFlow's dense
    defaults, as in PacGAN), BatchNorm gamma 1, beta 0."""
    if name.startswith("conv"):
        fan_out, fan_in = cell.weight.shape[:2]
        bound = np.sqrt(6.0 / (fan_in + fan_out))
        values = {"weight": rng.uniform(-bound, bound, cell.weight.shape).astype(np.float32)}
        return values | ({"bias": np.zeros(cell.bias.shape, np.float32)} if cell.bias is not None else {})
    if name.startswith("bn"):
        return {"gamma": np.ones(cell.gamma.shape, np.float32), "beta": np.zeros(cell.beta.shape, np.float32)}
    return {}


init_mlp_weights = initialise(mlp_values)


def image_side(model: ModelConfig) -> int:
    """Height (= width) of one DCGAN sample: model.image_size."""
    return model.image_size


def point_side(model: ModelConfig) -> int:
    """Height (= width) of one 2D point as the MLPs see it, (C, 1, 1): 1 (model.image_size is unused)."""
    return 1


class Networks(NamedTuple):
    """The generator and discriminator classes of one `model.name`, their seeded weight init, and sample size."""

    generator: type[nn.Cell]
    discriminator: type[nn.Cell]
    init: Callable[[nn.Cell, np.random.Generator], None]
    values: Callable[[str, nn.Cell, np.random.Generator], dict[str, np.ndarray]]  # one layer's fresh parameters
    sample_side: Callable[[ModelConfig], int]  # a sample (and D's input) is (channels, side, side)


NETWORKS = {"dcgan": Networks(Generator, Discriminator, init_dcgan_weights, dcgan_values, image_side),
            "mlp": Networks(MLPGenerator, MLPDiscriminator, init_mlp_weights, mlp_values, point_side)}
