"""Quantise a checkpoint's generator to int8 activations and report what it costs in sample quality.

    python scripts/quantize.py outputs/DATE/TIME/checkpoints/step_00001000.ckpt --calib 512 --out int8_g
    python scripts/generate.py --int8 int8_g --out grid.png

Calibration: min/max of every LeakyReLU's input over `--calib` seeded latents (per tensor, asymmetric int8;
see gan/models/quantize.py). Inference: int8 activations at every activation layer through the project's int8
LeakyReLU (ops.quantized_leaky_relu); the transposed convolutions, BatchNorm and Tanh stay float32.
Report (printed and written to DIR/report.json): the run's quality metrics (MNIST: class coverage, class
KL, confidence, Frechet distance; 2D mixtures: mode metrics; other data: none) of the float and the int8
generator on the run's evaluation latents, and the int8 output's error against the float output.
DIR also gets samples_float.png and samples_int8.png (the run's sample-grid latents).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("GLOG_v", "3")  # before MindSpore is imported: silence its C++ logs

GRID_SAMPLES = 64


def output_error(float_images, int8_images) -> dict[str, float]:
    """Max and mean absolute difference, and PSNR in dB for the [-1, 1] range (peak-to-peak 2)."""
    import numpy as np

    diff = int8_images.astype(np.float64) - float_images.astype(np.float64)
    mse = float(np.mean(diff ** 2))
    return {"max_abs": float(np.abs(diff).max()), "mean_abs": float(np.abs(diff).mean()),
            "psnr_db": float(10 * np.log10(4.0 / mse)) if mse > 0 else float("inf")}


def main(argv: list[str] | None = None) -> int:
    """Calibrate, save DIR, evaluate float vs int8, write the report and the grids."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint", help="a .ckpt file written by train.py, or a run directory (its newest one)")
    parser.add_argument("--calib", type=int, default=512, help="number of calibration latents (default 512)")
    parser.add_argument("--out", required=True, help="output directory of the quantised generator")
    parser.add_argument("--eval-n", type=int, default=None,
                        help="evaluation latents (default: the run's eval.num_samples)")
    parser.add_argument("--no-ema", action="store_true", help="quantise the raw generator even if an EMA copy exists")
    args = parser.parse_args(argv)
    for name in ("calib", "eval_n"):
        value = getattr(args, name)
        if value is not None and value < 2:
            parser.error(f"--{name.replace('_', '-')}={value} must be at least 2")

    from gan.core.outputs import check_writable, staged_directory
    from gan.models.checkpoint import CheckpointError
    from gan.models.from_checkpoint import generator_from_argument
    from gan.models.quantize import QuantError

    if Path(args.out).exists() and not Path(args.out).is_dir():
        parser.error(f"--out {args.out} is a file; give a directory name (it is created)")
    try:
        check_writable(Path(args.out) / "quant.json")
    except OSError as err:
        print(f"error: cannot write {args.out}: {err.strerror or err}", file=sys.stderr)
        return 1
    try:
        net, conf, checkpoint = generator_from_argument(args.checkpoint, use_ema=not args.no_ema)
    except (CheckpointError, FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    try:
        with staged_directory(args.out) as stage:  # the whole folder appears at the end, or nothing does
            quantize_into(stage, args, net, conf, checkpoint)
    except QuantError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except OSError as err:
        print(f"error: cannot write {args.out}: {err.strerror or err}", file=sys.stderr)
        return 1
    print(f"wrote {args.out}: generator.ckpt, quant.json, report.json, samples_float.png, samples_int8.png")
    return 0


def quantize_into(folder: Path, args: argparse.Namespace, net, conf, checkpoint: Path) -> None:
    """Calibrate, save the quantised generator into `folder`, evaluate float vs int8, write the report and grids."""
    import numpy as np
    from mindspore import Tensor

    from gan.core.streams import Purpose, fixed_latents, latents
    from gan.models.quantize import CALIBRATION_METHOD, CHUNK, calibrate, load_quantized, save_quantized
    from gan.run.grids import save_png
    from gan.training.tasks import build_task

    nz = conf.model.nz
    acts = calibrate(net, latents(conf.seed, 0, Purpose.CALIBRATION, args.calib, nz))
    for a in acts:
        print(f"layer {a.layer}: slope {a.negative_slope:g}, input range [{a.in_min:.4g}, {a.in_max:.4g}] -> "
              f"in scale {a.in_scale:.4g} zp {a.in_zero_point}, out scale {a.out_scale:.4g} zp {a.out_zero_point}")
    save_quantized(folder, checkpoint, not args.no_ema, acts,
                   {"latents": args.calib, "seed": conf.seed, "purpose": Purpose.CALIBRATION})
    qnet, _ = load_quantized(folder)  # evaluate exactly what was saved

    def float_g(z: np.ndarray) -> np.ndarray:
        return np.concatenate([net(Tensor(z[i:i + CHUNK])).asnumpy() for i in range(0, len(z), CHUNK)])

    n = args.eval_n or conf.eval.num_samples
    z = latents(conf.seed, 0, Purpose.EVAL_Z, n, nz)
    float_images, int8_images = float_g(z), qnet(z)
    report = {"checkpoint": str(checkpoint), "calibration": {"method": CALIBRATION_METHOD, "latents": args.calib},
              "eval_latents": n, "output_error": output_error(float_images, int8_images)}
    task = build_task(conf)
    if task.metric_names:
        task.prepare(print)
        report["float"], report["int8"] = task.metrics(float_images), task.metrics(int8_images)
        report["change"] = {k: report["int8"][k] - report["float"][k] for k in report["float"]}
        print(f"{'metric':<18}{'float':>12}{'int8':>12}{'change':>12}")
        for k in report["float"]:
            print(f"{k:<18}{report['float'][k]:>12.4g}{report['int8'][k]:>12.4g}{report['change'][k]:>+12.4g}")
    else:
        print(f"data={conf.data.name} has no quality metrics; only the output error is reported")
    e = report["output_error"]
    print(f"int8 vs float output on {n} latents: max |diff| {e['max_abs']:.4g}, mean |diff| {e['mean_abs']:.4g}, "
          f"PSNR {e['psnr_db']:.1f} dB")
    grid_z = fixed_latents(conf.seed, GRID_SAMPLES, nz)
    save_png(task.picture(float_g(grid_z)), folder / "samples_float.png")
    save_png(task.picture(qnet(grid_z)), folder / "samples_int8.png")
    (folder / "report.json").write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
