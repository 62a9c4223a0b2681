"""Samples of a generator for the run's fixed latents, streamed in batches into an .npz (array `samples`,
float32 (n, C, H, W) in [-1, 1]): what scripts/generate.py --npz writes and scripts/fid.py scores."""
from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Callable, Iterable, Iterator

import numpy as np

from gan.core.atomic import atomic_output
from gan.core.streams import fixed_latent_batches

BATCH = 256  # latents per generator call: bounds memory, same values


def sample_batches(forward: Callable[[np.ndarray], np.ndarray], seed: int, n: int, nz: int,
                   batch: int) -> Iterator[np.ndarray]:
    """Outputs of `forward` (latents -> images, numpy) for the run's fixed latents, `batch` at a time."""
    for z in fixed_latent_batches(seed, n, nz, batch):
        yield forward(z)


def write_npz(path: str | Path, batches: Iterable[np.ndarray], n: int) -> Path:
    """Stream `n` samples, arriving in batches, into an .npz as the float32 array `samples` (atomic write)."""
    written = 0
    with atomic_output(path) as f, zipfile.ZipFile(f, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        with archive.open("samples.npy", "w", force_zip64=True) as member:
            for batch in batches:
                batch = np.ascontiguousarray(batch, "<f4")
                if written == 0:
                    header = {"descr": "<f4", "fortran_order": False, "shape": (n, *batch.shape[1:])}
                    np.lib.format.write_array_header_2_0(member, header)
                member.write(batch.tobytes())
                written += len(batch)
    if written != n:
        raise RuntimeError(f"wrote {written} samples to {path}, expected {n}")
    return Path(path)
