"""Pictures a run writes: grids of sample images, and image files (PNG, JPEG, WebP) written atomically (Pillow)."""
from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np
from PIL import Image

from gan.core.atomic import write_atomic


def image_grid(images: np.ndarray, nrow: int | None = None, padding: int = 2) -> np.ndarray:
    """Tile NCHW images in [-1, 1] into one HWC uint8 image (C = 1 or 3), `nrow` images per row."""
    if images.ndim != 4 or images.shape[1] not in (1, 3):
        raise ValueError(f"images must be NCHW with 1 or 3 channels, got shape {images.shape}")
    n, c, h, w = images.shape
    nrow = nrow or math.ceil(math.sqrt(n))
    rows = math.ceil(n / nrow)
    grid = np.zeros((rows * (h + padding) + padding, nrow * (w + padding) + padding, c), np.uint8)
    pixels = np.clip((images.astype(np.float32) + 1.0) * 127.5 + 0.5, 0, 255).astype(np.uint8)
    for i in range(n):
        top, left = padding + (i // nrow) * (h + padding), padding + (i % nrow) * (w + padding)
        grid[top:top + h, left:left + w] = pixels[i].transpose(1, 2, 0)
    return grid


IMAGE_FORMATS = {".png": "PNG", ".jpg": "JPEG", ".jpeg": "JPEG", ".webp": "WEBP"}  # save_image: by file suffix


def save_png(grid: np.ndarray, path: str | Path, image_format: str = "PNG") -> Path:
    """Write an HWC uint8 image as PNG (or `image_format`, a Pillow format name) atomically (temp file in the same
    folder, then rename)."""
    buffer = io.BytesIO()
    Image.fromarray(grid[..., 0] if grid.shape[-1] == 1 else grid).save(
        buffer, format=image_format, **({} if image_format == "PNG" else {"quality": 95}))
    return write_atomic(path, buffer.getvalue())


def image_format(path: str | Path) -> str:
    """The Pillow format of an image file name's suffix (IMAGE_FORMATS); ValueError naming the allowed ones."""
    suffix = Path(path).suffix.lower()
    if suffix not in IMAGE_FORMATS:
        raise ValueError(f"{path}: {suffix or 'no suffix'} is not an image type written here; end the name with one "
                         f"of {', '.join(IMAGE_FORMATS)}")
    return IMAGE_FORMATS[suffix]


def save_image(grid: np.ndarray, path: str | Path) -> Path:
    """Write an HWC uint8 image in the format its suffix names (.png, .jpg/.jpeg, .webp), atomically."""
    return save_png(grid, path, image_format(path))
