"""Inspect a GAN snapshot without training it: dead / dormant / grad-dead channels, each activation's observed input
range, share of negatives and float16 overflow, and the dashboard of that snapshot.

    python scripts/inspect_model.py scripts.examples.own_loop:build --g-ckpt g.ckpt --d-ckpt d.ckpt \\
        --data FOLDER --out inspect/ [--batches 4] [--batch-size 16] [--nz 16]

FACTORY is `module:function`, importable from the current directory: called without arguments it returns (G, D),
networks whose parameter names are the checkpoints' keys. MindSpore's activation layers are swapped for the
project's (exact: ops.swap_activations) so they can be probed. Each batch runs G on N(0, 1) latents and D on the
folder's real images (resized to G's output size) and on G's images, with the gradients of the GAN loss (--loss,
default the non-saturating BCE) and no update (BatchNorm on batch statistics; --eval: its moving statistics).
OUT gets diagnostics.jsonl, losses.jsonl, ranges.json, samples/, TensorBoard events and report.html, as a training
run does. Checkpoints are untrusted: read with MindSpore's load_checkpoint (no unpickling), at most --max-ckpt-mib
each.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from pathlib import Path

import numpy as np

from gan.config.loss_kinds import LOSS_KINDS  # MindSpore-free: --help stays quick

EXIT_BAD_INPUT = 2


class InspectError(ValueError):
    """Bad input, said in one message; the CLI exits with status 2."""


def load_factory(spec: str):
    """The callable named by `module:function`; InspectError naming the module, the function and the import error."""
    module_name, sep, function = spec.partition(":")
    if not sep or not module_name or not function:
        raise InspectError(f"factory {spec!r} is not module:function (e.g. scripts.examples.own_loop:build)")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # the user's modules, as `python -m` would find them
    try:
        module = importlib.import_module(module_name)
    except Exception as err:  # noqa: BLE001 (whatever the user's module raises on import)
        raise InspectError(f"cannot import module {module_name!r} of factory {spec!r} (function {function!r}): "
                           f"{type(err).__name__}: {err}") from err
    factory = getattr(module, function, None)
    if not callable(factory):
        raise InspectError(f"module {module_name!r} ({module.__file__}) has no function {function!r} "
                           f"(factory {spec!r})")
    return factory


def build_networks(spec: str):
    """(G, D) from the factory; InspectError when it fails or returns something else."""
    from mindspore import nn

    factory = load_factory(spec)
    try:
        nets = factory()
    except Exception as err:  # noqa: BLE001
        raise InspectError(f"factory {spec!r} failed: {type(err).__name__}: {err}") from err
    if not (isinstance(nets, tuple) and len(nets) == 2 and all(isinstance(n, nn.Cell) for n in nets)):
        raise InspectError(f"factory {spec!r} must return (G, D), two mindspore.nn.Cell, got {type(nets).__name__}")
    return nets


def load_weights(net, path: Path, which: str, max_mib: float) -> int:
    """Load checkpoint `path` into `net` exactly (same keys, same shapes); InspectError naming the missing and
    unexpected keys and the shape mismatches. Returns the number of arrays loaded."""
    import mindspore as ms

    from gan.diagnostics.probes import is_diagnostic_param

    if not path.is_file():
        raise InspectError(f"--{which}-ckpt {str(path)!r} does not exist")
    size = path.stat().st_size / 2 ** 20
    if size > max_mib:
        raise InspectError(f"--{which}-ckpt {str(path)!r} is {size:.0f} MiB, over --max-ckpt-mib={max_mib:g}")
    try:
        entries = ms.load_checkpoint(str(path))
    except (ValueError, RuntimeError, TypeError, OSError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise InspectError(f"--{which}-ckpt {str(path)!r} is not a readable MindSpore checkpoint: {first}") from err
    entries = {k: v for k, v in entries.items() if not is_diagnostic_param(k)}
    params = {p.name: p for p in net.get_parameters()}
    missing = sorted(set(params) - set(entries))
    unexpected = sorted(set(entries) - set(params))
    shapes = [f"{k}: checkpoint {list(entries[k].shape)}, network {list(params[k].shape)}"
              for k in sorted(set(params) & set(entries)) if tuple(entries[k].shape) != tuple(params[k].shape)]
    if missing or unexpected or shapes:
        parts = [f"missing keys {_some(missing)}" if missing else "", f"unexpected keys {_some(unexpected)}"
                 if unexpected else "", f"shape mismatches: {_some(shapes)}" if shapes else ""]
        raise InspectError(f"--{which}-ckpt {str(path)!r} does not match {which.upper()} "
                           f"({type(net).__name__}): " + "; ".join(p for p in parts if p))
    ms.load_param_into_net(net, entries, strict_load=True)
    return len(params)


def _some(items: list[str], n: int = 8) -> str:
    """The first n items, and how many more."""
    more = f" (and {len(items) - n} more)" if len(items) > n else ""
    return "[" + ", ".join(items[:n]) + "]" + more


def ranges_table(ranges: dict[str, list]) -> str:
    """The activations' observed input ranges as a console table."""
    rows = ["activation input ranges (float16 overflows at |x| >= 65520):",
            f"  {'layer':<14}{'kind':<16}{'min':>11}{'max':>11}{'negative':>10}{'fp16':>10}{'clamp':>10}"]
    for net, records in ranges.items():
        for r in records:
            lo, hi = (f"{v:.4g}" if v is not None else "-" for v in (r["minimum"], r["maximum"]))
            clamp = "-" if r["clamp"] is None else ("clips" if r["clips"] else "ok")
            rows.append(f"  {net + '/' + r['path']:<14}{r['kind']:<16}{lo:>11}{hi:>11}{r['negative_share']:>10.1%}"
                        f"{'OVERFLOW' if r['overflows_float16'] else 'ok':>10}{clamp:>10}")
    return "\n".join(rows)


def inspect(args: argparse.Namespace) -> int:
    """Run the inspection; InspectError for bad input."""
    import mindspore as ms
    from mindspore import Tensor, ops

    from gan.core.atomic import write_text_atomic
    from gan.data.sources import FolderSource, to_model_range
    from gan.training.losses import LOSSES
    from gan.diagnostics.api import Diagnostics
    from ops import RangeRecorder, swap_activations

    ms.set_context(mode=ms.PYNATIVE_MODE)
    g, d = build_networks(args.factory)
    for net, which, path in ((g, "g", args.g_ckpt), (d, "d", args.d_ckpt)):
        if path is not None:
            print(f"{which.upper()}: loaded {load_weights(net, path, which, args.max_ckpt_mib)} arrays from {path}")
        else:
            print(f"{which.upper()}: no checkpoint given, weights as the factory built them")
    swap_activations(g), swap_activations(d)
    g.set_train(not args.eval), d.set_train(not args.eval)
    rng = np.random.default_rng(args.seed)
    z_fixed = Tensor(rng.standard_normal((args.batch_size, args.nz, 1, 1)).astype(np.float32))
    try:
        shape = g(z_fixed).shape
    except Exception as err:  # noqa: BLE001 (a wrong --nz shows up here)
        raise InspectError(f"G does not take latents of shape {tuple(z_fixed.shape)} (--nz={args.nz}): "
                           f"{type(err).__name__}: {str(err).strip().splitlines()[0]}") from err
    if len(shape) != 4 or shape[1] not in (1, 3) or shape[2] != shape[3]:
        raise InspectError(f"G returns shape {tuple(shape)}; inspect_model needs square NCHW images with 1 or 3 "
                           f"channels")
    try:
        images = FolderSource(args.data, shape[2], shape[1], num_workers=1)
    except (OSError, ValueError) as err:
        raise InspectError(f"--data: {err}") from err
    count = args.batches * args.batch_size
    order = [i % len(images) for i in range(count)]
    reals = [Tensor(to_model_range(np.stack([images[i] for i in order[b:b + args.batch_size]])))
             for b in range(0, count, args.batch_size)]
    zs = [Tensor(rng.standard_normal((args.batch_size, args.nz, 1, 1)).astype(np.float32)) for _ in reals]
    print(f"data: {len(images)} images under {args.data}, {args.batches} batches of {args.batch_size} "
          f"({shape[1]}x{shape[2]}x{shape[3]})" + (" (images repeat)" if count > len(images) else ""))

    with RangeRecorder(g, clamp=args.clamp) as g_ranges, RangeRecorder(d, clamp=args.clamp) as d_ranges:
        for real, z in zip(reals, zs):
            d(real), d(g(z))
    ranges = {"G": [r.to_dict() for r in g_ranges.ranges()], "D": [r.to_dict() for r in d_ranges.ranges()]}

    loss = LOSSES[args.loss]  # the project's loss table (gan.training.losses), on D's logits

    def d_loss(real, z):
        real_logit, fake_logit = d(real), d(ops.stop_gradient(g(z)))
        return loss.d(real_logit, fake_logit), ops.sigmoid(real_logit).mean(), ops.sigmoid(fake_logit).mean()

    def g_loss(z):
        return loss.g(d(g(z)))

    d_grad = ms.value_and_grad(d_loss, None, d.trainable_params(), has_aux=True)
    g_grad = ms.value_and_grad(g_loss, None, g.trainable_params())

    def batch(real, z):  # gradients computed, never applied
        (loss_d, d_x, d_g_z), _ = d_grad(real, z)
        loss_g, _ = g_grad(z)
        return loss_d, loss_g, d_x, d_g_z

    with Diagnostics(args.out, g=g, d=d, g_input=z_fixed, d_input=reals[0], every=1,
                     hparams={"factory": args.factory, "batches": args.batches}) as diag:
        step = diag.step(batch, jit=False)
        outs = [[float(v.asnumpy()) for v in step(real, z, check=True)] for real, z in zip(reals, zs)]
        loss_d, loss_g, d_x, d_g_z = np.mean(outs, axis=0).tolist()
        diag.record(args.step, loss_d=loss_d, loss_g=loss_g, d_x=d_x, d_g_z=d_g_z, samples=g(z_fixed).asnumpy())
        write_text_atomic(args.out / "ranges.json", json.dumps(ranges, indent=1, allow_nan=False) + "\n")
    print(diag.table())
    print(ranges_table(ranges))
    print(f"wrote {args.out / 'report.html'}, {args.out / 'ranges.json'}, {args.out / 'diagnostics.jsonl'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("factory", help="module:function returning (G, D), e.g. scripts.examples.own_loop:build")
    parser.add_argument("--g-ckpt", type=Path, help="G's checkpoint (MindSpore .ckpt; default: the factory's weights)")
    parser.add_argument("--d-ckpt", type=Path, help="D's checkpoint")
    parser.add_argument("--data", type=Path, required=True, help="a folder of jpg/png/webp images (searched below)")
    parser.add_argument("--out", type=Path, required=True, help="a new directory for the report")
    parser.add_argument("--batches", type=int, default=4, help="batches to run (default 4)")
    parser.add_argument("--batch-size", type=int, default=16, help="images per batch (default 16)")
    parser.add_argument("--nz", type=int, default=100, help="G's latent size: z is (N, nz, 1, 1) (default 100)")
    parser.add_argument("--loss", default="bce", choices=tuple(LOSS_KINDS),
                        help="the GAN loss whose gradients are measured (gan.training.losses; default bce, non-saturating)")
    parser.add_argument("--step", type=int, default=1, help="the step the snapshot is labelled with (default 1)")
    parser.add_argument("--clamp", type=float, help="also report where outputs would exceed this clamp")
    parser.add_argument("--eval", action="store_true", help="BatchNorm on its moving statistics (default: batch)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the latents (default 0)")
    parser.add_argument("--max-ckpt-mib", type=float, default=4096, help="refuse larger checkpoints (default 4096)")
    args = parser.parse_args(argv)
    for name in ("batches", "batch_size", "nz", "step"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')}={getattr(args, name)} is not allowed: use 1 or more")
    from gan.run.directory import RunDirError

    try:
        return inspect(args)
    except InspectError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except RunDirError as err:  # --out holds another run's files, or is in use
        print(f"error: --out: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
