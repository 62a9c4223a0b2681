"""Export a checkpoint's generator (its EMA copy when present) for inference, and verify the exported file.

    python scripts/export.py outputs/DATE/TIME/checkpoints/step_00001000.ckpt --format MINDIR --out g.mindir
    python scripts/export.py CKPT --format ONNX --out g.onnx

The exported graph uses only MindSpore built-in layers (native transposed convolutions, BatchNorm in
inference mode, nn.LeakyReLU with each layer's trained slope, Tanh): the project's aot kernels exist only
where their compiled .so does. Checks, on 16 seeded latents (exit status 1 when one fails, and an exported
file that fails its check is removed):
  1. the built-in LeakyReLU gives the same generator outputs as the project's op, within 1e-6;
  2. the exported file, loaded back, gives the training-time generator's outputs, also for another batch
     size when the batch is dynamic: MINDIR (mindspore.load + nn.GraphCell) within 1e-5; ONNX (ONNX
     Runtime) within 2e-4: MindSpore 2.10's CPU Tanh is off exact tanh by up to 1.006e-4 near |x| = 5 (it
     even returns -1.0000098) where ONNX Runtime's is not, and the convolutions sum in another order
     (measured on the default run's generator: max 1.0e-4 at an output MindSpore puts at -1.000009).
The batch axis is dynamic unless --batch fixes it. ONNX (needs `onnx` and `onnxruntime`): MindSpore
exports a static batch only and writes ConvTranspose's output_shape malformed; the file is repaired (that
attribute dropped, the batch axis made symbolic unless --batch). Input: latents (N, nz, 1, 1) float32; output: images
in [-1, 1].
"""
from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("GLOG_v", "3")  # before MindSpore is imported: silence its C++ logs

BUILTIN_TOLERANCE = 1e-6
EXPORT_TOLERANCE = {"MINDIR": 1e-5, "ONNX": 2e-4}
CHECK_LATENTS = 16


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, check, export, reload and compare; print one line per check."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint", help="a .ckpt file written by train.py, or a run directory (its newest one)")
    parser.add_argument("--format", required=True, choices=("MINDIR", "ONNX"), help="export format")
    parser.add_argument("--out", required=True, help="output file (.mindir / .onnx appended when missing)")
    parser.add_argument("--batch", type=int, default=None,
                        help="fix the batch size (default: dynamic batch)")
    parser.add_argument("--no-ema", action="store_true", help="export the raw generator even if an EMA copy exists")
    args = parser.parse_args(argv)
    if args.batch is not None and args.batch < 1:
        parser.error(f"--batch={args.batch} must be at least 1")

    import mindspore as ms

    import ops
    from gan.core.outputs import check_writable
    from gan.core.streams import fixed_latents
    from gan.models.checkpoint import CheckpointError
    from gan.models.deploy import (
        ExportError,
        export_generator,
        export_path,
        max_abs_diff,
        portable_generator,
        repair_onnx,
        run_mindir,
        run_onnx,
    )
    from gan.models.from_checkpoint import generator_from_argument

    if args.format == "ONNX":
        try:
            import onnx  # noqa: F401
            import onnxruntime  # noqa: F401
        except ImportError as err:
            print(f"error: --format ONNX needs the packages onnx and onnxruntime to repair and verify the file "
                  f"({err}); pip install onnx onnxruntime", file=sys.stderr)
            return 2
    try:
        check_writable(export_path(args.out, args.format))
    except OSError as err:
        print(f"error: cannot write {args.out}: {err.strerror or err}", file=sys.stderr)
        return 1
    try:
        net, conf, checkpoint = generator_from_argument(args.checkpoint, use_ema=not args.no_ema)
    except (CheckpointError, FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    n = args.batch or CHECK_LATENTS
    z = fixed_latents(0, n, conf.model.nz)
    trained = net(ms.Tensor(z)).asnumpy()
    try:
        portable = portable_generator(net)
        ours = portable_generator(net, act=lambda slope: ops.LeakyReLU(slope))
        builtin_diff = max_abs_diff(portable(ms.Tensor(z)).asnumpy(), ours(ms.Tensor(z)).asnumpy())
        print(f"built-in LeakyReLU vs the project's op: max |diff| {builtin_diff:.3g} (allowed {BUILTIN_TOLERANCE})")
        if not builtin_diff <= BUILTIN_TOLERANCE:
            print("error: MindSpore's built-in LeakyReLU does not reproduce this generator; not exported",
                  file=sys.stderr)
            return 1
        export_batch = args.batch if args.format == "MINDIR" else n
        path = export_generator(portable, conf.model.nz, args.format, args.out, export_batch)
        if args.format == "ONNX":
            for change in repair_onnx(path, export_batch, dynamic_batch=args.batch is None):
                print(f"repaired: {change}")
        run = run_mindir if args.format == "MINDIR" else run_onnx
        checks = [z] if args.batch else [z, fixed_latents(1, 3, conf.model.nz)]
        for latents in checks:
            expected = trained if latents is z else net(ms.Tensor(latents)).asnumpy()
            try:
                diff = max_abs_diff(run(path, latents), expected)
            except Exception as err:  # the runtime's own error names the node and operator it rejects
                path.unlink()
                raise ExportError(f"the exported {args.format} file does not run ({path} removed): {err}") from err
            print(f"reloaded {args.format}, batch {len(latents)}: max |diff| vs the trained generator {diff:.3g} "
                  f"(allowed {EXPORT_TOLERANCE[args.format]})")
            if not diff <= EXPORT_TOLERANCE[args.format]:
                path.unlink()
                print(f"error: the exported file did not reproduce the generator; {path} removed", file=sys.stderr)
                return 1
    except ExportError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except OSError as err:  # a full disk: export_generator leaves no partial file
        print(f"error: cannot write {args.out}: {err.strerror or err}", file=sys.stderr)
        return 1
    batch = f"batch {args.batch}" if args.batch else "dynamic batch"
    print(f"wrote {path} ({args.format}, {batch}, input (N, {conf.model.nz}, 1, 1) float32)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
