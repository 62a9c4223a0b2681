"""Post-training quantisation of a generator's activations: int8 at every LeakyReLU, float convolutions.

Calibration (min/max): the float generator maps calibration latents; for each LeakyReLU the smallest and
largest pre-activation value seen (widened to include 0) give an asymmetric int8 grid,
scale = (max - min) / 255, zero point = round(-128 - min / scale). The output grid is the image of the input
range under the activation, [slope * min, max], quantised the same way.
Inference: each block's float part (transposed convolution, BatchNorm in inference mode) runs in float32;
its output is quantised to int8 (round half to even, saturate), goes through the int8 LeakyReLU
(`ops.quantized_leaky_relu`, a table lookup), and is dequantised for the next float convolution. Weights
and convolutions stay float32: this measures what int8 activations alone cost in quality.

A quantised generator is a directory: `generator.ckpt` (the float generator's parameters only, the
checkpoint format of gan.models.checkpoint), `quant.json` (per-layer parameters and how they were obtained),
and what scripts/quantize.py reports next to it.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import mindspore as ms
import numpy as np
from mindspore import nn

from gan.config.schema import Config
from gan.core.untrusted import read_text
from gan.models.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from gan.models.deploy import ExportError, portable_generator
from gan.models.from_checkpoint import generator_from_checkpoint
from ops import LeakyReLU, QuantizedLeakyReLU

QUANT_FORMAT = "lrelu-gan-int8-activations"
QUANT_VERSION = 1
QUANT_FILE = "quant.json"
GENERATOR_FILE = "generator.ckpt"
CALIBRATION_METHOD = "minmax"
QMIN, QMAX = -128, 127
CHUNK = 250  # latents per forward pass: bounds memory
MAX_QUANT_BYTES = 1 << 20  # quant.json: a few hundred bytes per activation layer


class QuantError(RuntimeError):
    """A quantised-generator directory is missing, incomplete or inconsistent, or a generator cannot be quantised."""


@dataclass
class ActQuant:
    """One activation layer's int8 parameters and the calibrated pre-activation range they came from."""

    layer: int
    negative_slope: float
    in_min: float
    in_max: float
    in_scale: float
    in_zero_point: int
    out_scale: float
    out_zero_point: int


def affine_grid(lo: float, hi: float) -> tuple[float, int]:
    """(scale, zero point) of the asymmetric int8 grid covering [min(lo, 0), max(hi, 0)]; 0 is exact."""
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    scale = float(np.float32((hi - lo) / (QMAX - QMIN))) if hi > lo else 1.0
    zero_point = int(np.clip(QMIN - np.rint(lo / scale), QMIN, QMAX))
    return scale, zero_point


def quantize(x: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """float32 -> int8 codes: saturate(round_half_to_even(x / scale) + zero_point), as ONNX QuantizeLinear."""
    q = np.rint(x.astype(np.float32) / np.float32(scale))
    return np.clip(q + zero_point, QMIN, QMAX).astype(np.int8)


def dequantize(q: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """int8 codes -> float32 values (q - zero_point) * scale, as ONNX DequantizeLinear."""
    return (q.astype(np.int32) - zero_point).astype(np.float32) * np.float32(scale)


def float_layers(net: nn.Cell) -> list[nn.Cell]:
    """The generator as a flat list of float layers, each LeakyReLU the project's op with its trained slope;
    QuantError naming a layer that int8 quantisation cannot rebuild (ELU, PReLU, ... or a clamp)."""
    try:
        return list(portable_generator(net, act=LeakyReLU).cell_list)
    except ExportError as err:
        raise QuantError(f"cannot quantise this generator: {err}; int8 quantisation supports generators whose "
                         f"activations are LeakyReLU or ReLU (act.g_kind=leaky_relu|relu) without act.clamp") from None


def calibrate(net: nn.Cell, z: np.ndarray) -> list[ActQuant]:
    """Min/max calibration of every activation layer's input over latents z; see the module docstring."""
    layers = float_layers(net)
    ranges: dict[int, list[float]] = {}
    for start in range(0, len(z), CHUNK):
        x = ms.Tensor(z[start:start + CHUNK])
        for i, cell in enumerate(layers):
            if isinstance(cell, LeakyReLU):
                values = x.asnumpy()
                lo, hi = ranges.get(i, [np.inf, -np.inf])
                ranges[i] = [min(lo, float(values.min())), max(hi, float(values.max()))]
            x = cell(x)
    acts = []
    for i, (lo, hi) in sorted(ranges.items()):
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise QuantError(f"layer {i}: its inputs over the calibration latents reach {lo} .. {hi}; a finite "
                             f"range is needed for an int8 grid")
        slope = layers[i].negative_slope
        in_scale, in_zp = affine_grid(lo, hi)
        out_scale, out_zp = affine_grid(slope * min(lo, 0.0), hi)
        acts.append(ActQuant(i, slope, lo, hi, in_scale, in_zp, out_scale, out_zp))
    return acts


class QuantizedGenerator:
    """The generator with int8 activations: float blocks, quantise, int8 LeakyReLU, dequantise (PyNative)."""

    def __init__(self, net: nn.Cell, acts: list[ActQuant]) -> None:
        self.layers = float_layers(net)
        self.acts = {a.layer: a for a in acts}
        found = sorted(i for i, cell in enumerate(self.layers) if isinstance(cell, LeakyReLU))
        if found != sorted(self.acts):
            raise QuantError(f"the generator has activation layers {found}, the quantisation parameters "
                             f"cover {sorted(self.acts)}")
        self.kernels = {a.layer: QuantizedLeakyReLU(ms.int8, a.negative_slope, a.in_scale, a.in_zero_point,
                                                    a.out_scale, a.out_zero_point) for a in acts}

    def __call__(self, z: np.ndarray) -> np.ndarray:
        """Images for latents z (N, nz, 1, 1) float32, computed in chunks."""
        return np.concatenate([self._forward(z[i:i + CHUNK]) for i in range(0, len(z), CHUNK)])

    def _forward(self, z: np.ndarray) -> np.ndarray:
        x = ms.Tensor(z)
        for i, cell in enumerate(self.layers):
            if i in self.acts:
                a = self.acts[i]
                codes = self.kernels[i](ms.Tensor(quantize(x.asnumpy(), a.in_scale, a.in_zero_point)))
                x = ms.Tensor(dequantize(codes.asnumpy(), a.out_scale, a.out_zero_point))
            else:
                x = cell(x)
        return x.asnumpy()


def save_quantized(directory: str | Path, checkpoint: str | Path, use_ema: bool, acts: list[ActQuant],
                   calibration: dict) -> Path:
    """Write generator.ckpt (the chosen generator's parameters only) and quant.json into directory."""
    directory = Path(directory)
    arrays, meta = load_checkpoint(checkpoint)
    net, _ = generator_from_checkpoint(checkpoint, use_ema=use_ema)
    names = [p.name for p in net.get_parameters()]
    save_checkpoint(directory / GENERATOR_FILE, {name: arrays[name] for name in names}, meta)
    record = {"format": QUANT_FORMAT, "version": QUANT_VERSION, "dtype": "int8",
              "source_checkpoint": str(Path(checkpoint).resolve()), "use_ema": use_ema,
              "calibration": {"method": CALIBRATION_METHOD, **calibration},
              "activations": "int8 at every LeakyReLU (ops.quantized_leaky_relu); convolutions, BatchNorm "
                             "and Tanh in float32",
              "layers": [asdict(a) for a in acts]}
    path = directory / QUANT_FILE
    path.write_text(json.dumps(record, indent=1, allow_nan=False) + "\n")
    return path


def _no_constant(name: str) -> float:
    """json.loads' hook for NaN/Infinity: refused, a layer's grid must be finite."""
    raise ValueError(f"it holds {name}; every quantisation parameter must be a finite number")


def _act_quant(layer: Any) -> ActQuant:
    """One quant.json layer record as an ActQuant; ValueError unless every field is a number, the scales > 0 and
    the zero points int8 integers."""
    act = ActQuant(**layer)
    for name, value in asdict(act).items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"layer field {name}={value!r} is not a number")
    if not (act.in_scale > 0 and act.out_scale > 0):
        raise ValueError(f"layer {act.layer} has scales {act.in_scale}, {act.out_scale}; scales must be > 0")
    if not all(isinstance(z, int) and QMIN <= z <= QMAX for z in (act.in_zero_point, act.out_zero_point)):
        raise ValueError(f"layer {act.layer} has zero points {act.in_zero_point}, {act.out_zero_point}; they must be "
                         f"integers in [{QMIN}, {QMAX}]")
    return act


def load_quantized(directory: str | Path) -> tuple[QuantizedGenerator, Config]:
    """The quantised generator saved in directory by save_quantized; QuantError naming what is wrong."""
    directory = Path(directory)
    path = directory / QUANT_FILE
    if not path.is_file():
        raise QuantError(f"{directory} is not a quantised generator: {QUANT_FILE} is missing "
                         f"(write one with scripts/quantize.py)")
    try:
        record = json.loads(read_text(path, MAX_QUANT_BYTES), parse_constant=_no_constant)
        if record.get("format") != QUANT_FORMAT or record.get("version") != QUANT_VERSION:
            raise QuantError(f"{path}: format {record.get('format')!r} version {record.get('version')!r} is not "
                             f"{QUANT_FORMAT!r} version {QUANT_VERSION}")
        acts = [_act_quant(layer) for layer in record["layers"]]
    except (ValueError, KeyError, TypeError, AttributeError) as err:  # JSONDecodeError and UntrustedFileError too
        raise QuantError(f"{path} is unreadable or incomplete: {err}") from err
    try:
        net, conf = generator_from_checkpoint(directory / GENERATOR_FILE)
    except (CheckpointError, FileNotFoundError) as err:
        raise QuantError(f"{directory}: {err}") from err
    return QuantizedGenerator(net, acts), conf
