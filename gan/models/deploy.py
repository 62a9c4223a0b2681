"""A trained generator rebuilt from MindSpore built-in layers only, for export (MINDIR / ONNX).

The training-time generator calls the project's aot kernels (LeakyReLU, fused BatchNorm + LeakyReLU, the
gemm convolutions' im2col/col2im), which exist only where their compiled .so does. `portable_generator`
rebuilds the same network from nn.Conv2dTranspose / nn.Dense, nn.BatchNorm2d (inference mode),
nn.LeakyReLU with each layer's trained slope and nn.Tanh, sharing the trained values; that graph runs
wherever MindSpore (or an ONNX runtime) does.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable

import mindspore as ms
import numpy as np
from mindspore import nn

from gan.core.atomic import umask_mode
from gan.models.layers import GemmConv2d, GemmConv2dTranspose, OnednnConv2d, OnednnConv2dTranspose
from ops import BatchNormAct, LeakyReLU

EXPORT_FORMATS = {"MINDIR": ".mindir", "ONNX": ".onnx"}
ActFactory = Callable[[float], nn.Cell]


class ExportError(RuntimeError):
    """The generator cannot be exported (unsupported layer or option, or a failed equivalence check)."""


def builtin_act(slope: float) -> nn.Cell:
    """MindSpore's own LeakyReLU, the activation of exported graphs."""
    return nn.LeakyReLU(slope)


def _plain_conv(cell: nn.Cell) -> nn.Cell:
    """A native nn.Conv2d / nn.Conv2dTranspose with the gemm or oneDNN cell's configuration and weights."""
    cls = nn.Conv2dTranspose if isinstance(cell, (GemmConv2dTranspose, OnednnConv2dTranspose)) else nn.Conv2d
    conv = cls(cell.in_channels, cell.out_channels, cell.kernel_size, cell.stride, pad_mode="pad",
               padding=cell.padding, has_bias=cell.has_bias, weight_init=ms.Tensor(cell.weight.asnumpy()))
    if cell.has_bias:
        conv.bias.set_data(ms.Tensor(cell.bias.asnumpy()))
    return conv


def _plain_bn(cell: nn.BatchNorm2d) -> nn.BatchNorm2d:
    """An nn.BatchNorm2d with the cell's trained affine and moving statistics (inference mode)."""
    bn = nn.BatchNorm2d(cell.num_features, eps=cell.eps, use_batch_statistics=False)
    for name in ("gamma", "beta", "moving_mean", "moving_variance"):
        getattr(bn, name).set_data(ms.Tensor(getattr(cell, name).asnumpy()))
    return bn


def _act(name: str, cell: nn.Cell, act: ActFactory) -> nn.Cell:
    """act(cell's slope); ExportError for a clamped activation, which has no built-in counterpart here."""
    if cell.clamp is not None:
        raise ExportError(f"layer {name!r} has clamp={cell.clamp}: MindSpore's built-in LeakyReLU has no clamp, so "
                          f"only generators trained with act.clamp=null can be rebuilt from built-in layers")
    return act(cell.negative_slope)


# (layer types, their built-in replacement), first match wins: subclasses before their bases.
_REPLACEMENTS: tuple[tuple[tuple[type, ...], Callable[[str, nn.Cell, ActFactory], list[nn.Cell]]], ...] = (
    ((GemmConv2d, GemmConv2dTranspose, OnednnConv2d, OnednnConv2dTranspose),
     lambda name, cell, act: [_plain_conv(cell)]),
    ((BatchNormAct,), lambda name, cell, act: [_plain_bn(cell), _act(name, cell, act)]),
    ((LeakyReLU,), lambda name, cell, act: [_act(name, cell, act)]),
    ((nn.BatchNorm2d,), lambda name, cell, act: [_plain_bn(cell)]),
    ((nn.Conv2d, nn.Conv2dTranspose, nn.Dense, nn.Tanh), lambda name, cell, act: [cell]),
)


def portable_generator(net: nn.Cell, act: ActFactory = builtin_act) -> nn.SequentialCell:
    """`net`'s layers rebuilt from built-in cells, each LeakyReLU made by `act(slope)`; ExportError naming
    a layer that has no built-in counterpart here."""
    layers = []
    for name, cell in net.layers.name_cells().items():
        replace = next((fn for types, fn in _REPLACEMENTS if isinstance(cell, types)), None)
        if replace is None:
            raise ExportError(f"layer {name!r} ({type(cell).__name__}) has no counterpart among MindSpore's built-in "
                              f"layers")
        layers += replace(name, cell, act)
    portable = nn.SequentialCell(layers)
    portable.set_train(False)
    return portable


def max_abs_diff(a: np.ndarray, b: np.ndarray) -> float:
    """Largest absolute difference of two equally shaped arrays (inf when shapes differ or NaN appears)."""
    if a.shape != b.shape:
        return float("inf")
    diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
    return float(diff.max()) if np.isfinite(diff).all() else float("inf")


def export_path(out: str | Path, fmt: str) -> Path:
    """The file MindSpore writes for `out` in format `fmt` (it appends the suffix when missing)."""
    suffix = EXPORT_FORMATS[fmt]
    out = Path(out)
    return out if out.suffix.lower() == suffix else out.with_name(out.name + suffix)


def export_generator(portable: nn.Cell, nz: int, fmt: str, out: str | Path, batch: int | None) -> Path:
    """Write `portable` as MINDIR or ONNX for latents (batch, nz, 1, 1); batch None = dynamic. Returns the path.

    MindSpore writes into a private temporary folder beside `out`, and the file is then moved into place: its
    ONNX writer changes the mode of the folder it writes into to 0700 (with `--out generator.onnx`, the user's
    working directory), so it gets a folder of its own. ExportError naming the exporter's complaint (for ONNX:
    the operator it could not convert).
    """
    if fmt not in EXPORT_FORMATS:
        raise ExportError(f"format {fmt!r} is not one of {list(EXPORT_FORMATS)}")
    path = export_path(out, fmt)
    path.parent.mkdir(parents=True, exist_ok=True)
    spec = ms.Tensor(shape=[batch, nz, 1, 1], dtype=ms.float32) if batch is None \
        else ms.Tensor(np.zeros((batch, nz, 1, 1), np.float32))
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=f".{path.name}.") as private:
        staged = Path(private) / path.name
        try:
            ms.export(portable, spec, file_name=str(staged.with_suffix("")), file_format=fmt)
        except (RuntimeError, TypeError, ValueError) as err:
            raise ExportError(f"MindSpore's {fmt} exporter failed on the generator: {err}") from err
        if not staged.exists():
            raise ExportError(f"MindSpore's {fmt} exporter reported success but wrote no {path.name}")
        os.chmod(staged, umask_mode())  # MindSpore leaves its files read-only (and the ONNX repair rewrites the file)
        os.replace(staged, path)
    return path


def repair_onnx(path: str | Path, batch: int, dynamic_batch: bool = True) -> list[str]:
    """Fix what MindSpore 2.10's ONNX exporter gets wrong for these graphs, in place; returns what was changed.

    It writes ConvTranspose's `output_shape` as the full (N, C, H, W) shape where ONNX specifies the
    spatial (H, W) only, which ONNX Runtime rejects ("Attribute output_shape has incorrect size"). The
    attribute is dropped: the explicit pads and strides it also writes give the same output size. With
    `dynamic_batch` the batch axis of the input and output is made symbolic ("batch"), and Reshape targets
    that start with the exported `batch` (the 2D generator's dense layers) start with 0 instead ("copy the
    input's first axis"); the caller's check on another batch size confirms the result.
    """
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path))
    changes = []
    constants = {node.output[0]: node for node in model.graph.node if node.op_type == "Constant"}
    for node in model.graph.node:
        if node.op_type == "ConvTranspose":
            kept = [a for a in node.attribute if a.name != "output_shape"]
            if len(kept) != len(node.attribute):
                del node.attribute[:]
                node.attribute.extend(kept)
                changes.append(f"{node.name}: dropped output_shape")
        elif node.op_type == "Reshape" and dynamic_batch and node.input[1] in constants:
            value = constants[node.input[1]].attribute[0]
            shape = numpy_helper.to_array(value.t).copy()
            if shape.size and shape[0] == batch:
                shape[0] = 0
                value.t.CopyFrom(numpy_helper.from_array(shape, value.t.name))
                changes.append(f"{node.name}: target shape starts with 0 (the input's batch) instead of {batch}")
    if dynamic_batch:
        for value in (*model.graph.input, *model.graph.output):
            value.type.tensor_type.shape.dim[0].dim_param = "batch"
        changes.append("batch axis made dynamic")
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return changes


def run_mindir(path: str | Path, z: np.ndarray) -> np.ndarray:
    """Outputs of an exported MINDIR on latents z, loaded with mindspore.load + nn.GraphCell."""
    cell = nn.GraphCell(ms.load(str(path)))
    return cell(ms.Tensor(z)).asnumpy()


def run_onnx(path: str | Path, z: np.ndarray) -> np.ndarray:
    """Outputs of an exported ONNX model on latents z with ONNX Runtime (CPU)."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: z})[0]
