"""Inspect a GAN snapshot without training it: dead / dormant / grad-dead channels, each activation's observed input
range, share of negatives and float16 overflow, and the dashboard of that snapshot.

    python scripts/inspect_model.py scripts.examples.own_loop:build --g-ckpt g.ckpt --d-ckpt d.ckpt \\
        --data FOLDER --out inspect/ [--batches 4] [--batch-size 16] [--nz 16]

FACTORY is `module:function`, importable from the current directory: called without arguments it returns (G, D),
networks whose parameter names are the checkpoints' keys, or (G, D, Feed) for a GAN whose G takes more than
latents or whose D takes more than an image (class-conditional, image-to-image, two-input D): the Feed says at which
size the folder's images are read and turns each batch of them into G's inputs, the real image and D's inputs.
MindSpore's activation layers are swapped for the project's (exact: ops.swap_activations) so they can be probed.
Each batch runs G (on N(0, 1) latents, or on what the Feed makes) and D on the folder's real images (resized to G's
output size) and on G's images, with the gradients of the GAN loss (--loss, default the non-saturating BCE) and no
update (BatchNorm on batch statistics; --eval: its moving statistics).
OUT gets diagnostics.jsonl, losses.jsonl, ranges.json, samples/, TensorBoard events and report.html, as a training
run does. Checkpoints are untrusted: read with MindSpore's load_checkpoint (no unpickling), at most --max-ckpt-mib
each, and must match the network's names, shapes and dtypes.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from gan.config.loss_kinds import LOSS_KINDS  # MindSpore-free: --help stays quick

EXIT_BAD_INPUT = 2
FEED_CONTRACT = ("the factory must return (G, D), two mindspore.nn.Cell for G(z) and D(image), or (G, D, Feed) with "
                 "Feed(image_size, channels, batch) from scripts.inspect_model, batch(images, rng) returning Fed(g=G's "
                 "inputs as a tuple, real=the real image, d=a function image -> D's inputs as a tuple) "
                 "(docs/your_model.md, 'Conditional and image-to-image GANs')")


class InspectError(ValueError):
    """Bad input, said in one message; the CLI exits with status 2."""


@dataclass(frozen=True)
class Fed:
    """One batch as the networks take it: G's inputs, the real image D is shown, and D's inputs for an image (the
    real one or G's output: e.g. lambda image: (condition, image) for a two-input D)."""

    g: tuple
    real: Any
    d: Callable[[Any], tuple]


@dataclass(frozen=True)
class Feed:
    """How to feed a GAN whose G takes more than latents or whose D more than an image (class-conditional,
    image-to-image): the folder's images are read at image_size x image_size with `channels` channels (centre crop,
    as training reads them); batch(images, rng) turns a batch of them ((N, C, S, S) float32 Tensor in [-1, 1]) and
    the inspection's seeded numpy Generator into a Fed."""

    image_size: int
    channels: int
    batch: Callable[[Any, np.random.Generator], Fed]


def latent_feed(nz: int, image_size: int, channels: int) -> Feed:
    """The plain (G, D) factory's feeding: G(z) on z ~ N(0, 1) of shape (N, nz, 1, 1), D(image)."""
    from mindspore import Tensor

    def batch(images, rng: np.random.Generator) -> Fed:
        z = Tensor(rng.standard_normal((images.shape[0], nz, 1, 1)).astype(np.float32))
        return Fed(g=(z,), real=images, d=lambda image: (image,))

    return Feed(image_size, channels, batch)


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
    """(G, D, Feed or None) from the factory; InspectError when it fails, returns something else, or returns one
    network (or networks sharing layers) as both G and D."""
    from mindspore import nn

    factory = load_factory(spec)
    try:
        nets = factory()
    except Exception as err:  # noqa: BLE001
        raise InspectError(f"factory {spec!r} failed: {type(err).__name__}: {err}") from err
    shape_ok = isinstance(nets, tuple) and len(nets) in (2, 3) and all(isinstance(n, nn.Cell) for n in nets[:2])
    if not shape_ok or (len(nets) == 3 and not _fields(nets[2], Feed)):
        got = type(nets).__name__ if not isinstance(nets, tuple) else \
            "(" + ", ".join(type(n).__name__ for n in nets) + ")"
        raise InspectError(f"factory {spec!r} returned {got}: {FEED_CONTRACT}")
    g, d = nets[:2]
    g_cells = {id(cell): path for path, cell in g.cells_and_names()}
    shared = [path or "(the network itself)" for path, cell in d.cells_and_names() if id(cell) in g_cells]
    if shared:
        raise InspectError(f"factory {spec!r} returned networks that share layers as G and D ({_some(shared)} of D "
                           f"is also in G): inspection needs two separate networks")
    if len(nets) == 2:
        return g, d, None
    feed = nets[2]
    for name, allowed, ok in (("image_size", "an integer in [1, 4096]", lambda v: 1 <= v <= 4096),
                              ("channels", "1 or 3", lambda v: v in (1, 3))):
        value = getattr(feed, name)
        if isinstance(value, bool) or not isinstance(value, int) or not ok(value):
            raise InspectError(f"factory {spec!r}: Feed.{name}={value!r} is not allowed: use {allowed}")
    if not callable(feed.batch):
        raise InspectError(f"factory {spec!r}: Feed.batch is not callable: {FEED_CONTRACT}")
    return g, d, feed


def _fields(value: Any, kind: type) -> bool:
    """Whether value has the fields of dataclass `kind` (a Feed or Fed built from this module, also when it runs as
    __main__, or any object with those attributes)."""
    return all(hasattr(value, f) for f in kind.__dataclass_fields__)


def load_weights(net, path: Path, which: str, max_mib: float | None) -> int:
    """Load checkpoint `path` into `net` exactly (same keys, shapes and dtypes); InspectError naming the missing and
    unexpected keys and the shape and dtype mismatches. Returns the number of arrays loaded."""
    import mindspore as ms

    from gan.diagnostics.probes import is_diagnostic_param
    from gan.models.checkpoint import CheckpointError, check_checkpoint_file

    try:  # the rule of every tool that reads checkpoints: a regular file, at most the cap
        check_checkpoint_file(path, max_mib, raise_with="--max-ckpt-mib")
    except (CheckpointError, FileNotFoundError) as err:
        raise InspectError(f"--{which}-ckpt: {err}") from None
    try:
        entries = ms.load_checkpoint(str(path))
    except (ValueError, RuntimeError, TypeError, OSError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise InspectError(f"--{which}-ckpt {str(path)!r} is not a readable MindSpore checkpoint: {first}") from err
    entries = {k: v for k, v in entries.items() if not is_diagnostic_param(k)}
    params = {p.name: p for p in net.get_parameters()}
    missing = sorted(set(params) - set(entries))
    unexpected = sorted(set(entries) - set(params))
    common = sorted(set(params) & set(entries))
    shapes = [f"{k}: checkpoint {list(entries[k].shape)}, network {list(params[k].shape)}"
              for k in common if tuple(entries[k].shape) != tuple(params[k].shape)]
    dtypes = [f"{k}: checkpoint {entries[k].dtype}, network {params[k].dtype}"
              for k in common if entries[k].dtype != params[k].dtype]
    if missing or unexpected or shapes or dtypes:
        parts = [f"missing keys {_some(missing)}" if missing else "", f"unexpected keys {_some(unexpected)}"
                 if unexpected else "", f"shape mismatches: {_some(shapes)}" if shapes else "",
                 f"dtype mismatches: {_some(dtypes)}" if dtypes else ""]
        raise InspectError(f"--{which}-ckpt {str(path)!r} does not match {which.upper()} "
                           f"({type(net).__name__}): " + "; ".join(p for p in parts if p))
    ms.load_param_into_net(net, entries, strict_load=True)
    return len(params)


def _some(items: list[str], n: int = 8) -> str:
    """The first n items, and how many more."""
    more = f" (and {len(items) - n} more)" if len(items) > n else ""
    return "[" + ", ".join(items[:n]) + "]" + more


def ranges_table(ranges: dict[str, list]) -> str:
    """The activations' observed input ranges as a console table, layers by their display names (the layer column as
    wide as its longest name)."""
    rows = [(r["name"], r) for records in ranges.values() for r in records]
    width = max([len("layer")] + [len(name) for name, _ in rows]) + 2
    lines = ["activation input ranges (float16 overflows at |x| >= 65520):",
             f"  {'layer':<{width}}{'kind':<16}{'min':>11}{'max':>11}{'negative':>10}{'fp16':>10}{'clamp':>10}"]
    for name, r in rows:
        lo, hi = (f"{v:.4g}" if v is not None else "-" for v in (r["minimum"], r["maximum"]))
        clamp = "-" if r["clamp"] is None else ("clips" if r["clips"] else "ok")
        lines.append(f"  {name:<{width}}{r['kind']:<16}{lo:>11}{hi:>11}{r['negative_share']:>10.1%}"
                     f"{'OVERFLOW' if r['overflows_float16'] else 'ok':>10}{clamp:>10}")
    return "\n".join(lines)


def _first_line(err: Exception) -> str:
    return f"{type(err).__name__}: {(str(err).strip().splitlines() or [''])[0]}"


def _shapes(values: tuple) -> str:
    return ", ".join(str(tuple(v.shape)) if hasattr(v, "shape") else type(v).__name__ for v in values)


def _probed_layers(net, which: str) -> None:
    """InspectError, before any output, when `net` has no activation layer the probes can wrap."""
    from gan.diagnostics.probes import PROBED_CELLS

    if not any(isinstance(cell, PROBED_CELLS) for _, cell in net.cells_and_names()):
        raise InspectError(f"{which} ({type(net).__name__}) has no activation layer to probe, even after "
                           f"ops.swap_activations: activations called as functions in construct (ops.relu(x)) are "
                           f"not layers (docs/your_model.md, 'What cannot be probed')")


def _feed(feed: Feed, images, rng: np.random.Generator) -> Fed:
    """feed.batch(images, rng), checked: InspectError naming what it must return."""
    try:
        fed = feed.batch(images, rng)
    except Exception as err:  # noqa: BLE001 (the user's function)
        raise InspectError(f"Feed.batch failed on images of shape {tuple(images.shape)}: {_first_line(err)}") from err
    if not (_fields(fed, Fed) and isinstance(fed.g, tuple) and callable(fed.d)):
        raise InspectError(f"Feed.batch returned {type(fed).__name__}: {FEED_CONTRACT}")
    return fed


def _forward(net, inputs: tuple, what: str, plain: bool):
    """net(*inputs), or InspectError naming the inputs and, for the plain factory, the Feed that would fix it."""
    try:
        return net(*inputs)
    except Exception as err:  # noqa: BLE001 (a wrong --nz or an unsupported input shows up here)
        hint = (f"; a GAN whose G takes more than latents or whose D takes more than an image needs a Feed: "
                f"{FEED_CONTRACT}") if plain else \
            "; check the factory's Feed.batch: Fed.g must be G's inputs and Fed.d(image) D's inputs, as tuples"
        raise InspectError(f"{what} ({_shapes(inputs)}): {_first_line(err)}{hint}") from err


def _check_image(shape: tuple) -> None:
    if len(shape) != 4 or shape[1] not in (1, 3) or shape[2] != shape[3]:
        raise InspectError(f"G returns shape {tuple(shape)}; inspect_model needs square NCHW images with 1 or 3 "
                           f"channels")


def inspect(args: argparse.Namespace) -> int:
    """Run the inspection; InspectError for bad input (checked before anything is written)."""
    import mindspore as ms
    from mindspore import Tensor, ops

    from gan.core.atomic import write_text_atomic
    from gan.data.sources import FolderSource, to_model_range
    from gan.diagnostics.api import Diagnostics
    from gan.training.losses import LOSSES
    from ops import RangeRecorder, swap_activations

    ms.set_context(mode=ms.PYNATIVE_MODE)
    g, d, feed = build_networks(args.factory)
    for net, which, path in ((g, "g", args.g_ckpt), (d, "d", args.d_ckpt)):
        if path is not None:
            print(f"{which.upper()}: loaded {load_weights(net, path, which, args.max_ckpt_mib)} arrays from {path}")
        else:
            print(f"{which.upper()}: no checkpoint given, weights as the factory built them")
    swap_activations(g), swap_activations(d)
    _probed_layers(g, "G"), _probed_layers(d, "D")
    g.set_train(not args.eval), d.set_train(not args.eval)
    rng = np.random.default_rng(args.seed)
    plain = feed is None
    if plain:  # G's output size is the size the folder is read at
        z_fixed = Tensor(rng.standard_normal((args.batch_size, args.nz, 1, 1)).astype(np.float32))
        shape = _forward(g, (z_fixed,), f"G does not take latents of shape (--nz={args.nz})", plain).shape
        _check_image(shape)
        feed = latent_feed(args.nz, shape[2], shape[1])
    try:
        images = FolderSource(args.data, feed.image_size, feed.channels, num_workers=1)
    except (OSError, ValueError) as err:
        raise InspectError(f"--data: {err}") from err
    count = args.batches * args.batch_size
    order = [i % len(images) for i in range(count)]
    reals = [Tensor(to_model_range(np.stack([images[i] for i in order[b:b + args.batch_size]])))
             for b in range(0, count, args.batch_size)]
    fixed = Fed((z_fixed,), reals[0], lambda image: (image,)) if plain else _feed(feed, reals[0], rng)
    fed = [_feed(feed, real, rng) for real in reals]
    fake = _forward(g, fixed.g, "G does not take the inputs", plain)
    _check_image(fake.shape)
    for image, which in ((fixed.real, "real images"), (fake, "G's images")):
        _forward(d, fixed.d(image), f"D does not take its inputs for the {which}", plain)
    print(f"data: {len(images)} images under {args.data}, {args.batches} batches of {args.batch_size} "
          f"({feed.channels}x{feed.image_size}x{feed.image_size})"
          + (" (images repeat)" if count > len(images) else ""))

    with RangeRecorder(g, clamp=args.clamp) as g_ranges, RangeRecorder(d, clamp=args.clamp) as d_ranges:
        for batch_in in fed:
            d(*batch_in.d(batch_in.real)), d(*batch_in.d(g(*batch_in.g)))
    ranges = {"G": [r.to_dict() for r in g_ranges.ranges()], "D": [r.to_dict() for r in d_ranges.ranges()]}

    loss = LOSSES[args.loss]  # the project's loss table (gan.training.losses), on D's logits

    def batch(b: Fed):  # gradients computed, never applied
        def d_loss():
            real_logit, fake_logit = d(*b.d(b.real)), d(*b.d(ops.stop_gradient(g(*b.g))))
            return loss.d(real_logit, fake_logit), ops.sigmoid(real_logit).mean(), ops.sigmoid(fake_logit).mean()

        def g_loss():
            return loss.g(d(*b.d(g(*b.g))))

        (loss_d, d_x, d_g_z), _ = ms.value_and_grad(d_loss, None, d.trainable_params(), has_aux=True)()
        loss_g, _ = ms.value_and_grad(g_loss, None, g.trainable_params())()
        return loss_d, loss_g, d_x, d_g_z

    with Diagnostics(args.out, g=g, d=d, g_input=fixed.g, d_input=fixed.d(fixed.real), every=1,
                     hparams={"factory": args.factory, "batches": args.batches}) as diag:
        step = diag.step(batch, jit=False)
        outs = [[float(v.asnumpy()) for v in step(b, check=True)] for b in fed]
        loss_d, loss_g, d_x, d_g_z = np.mean(outs, axis=0).tolist()
        diag.record(args.step, loss_d=loss_d, loss_g=loss_g, d_x=d_x, d_g_z=d_g_z, samples=g(*fixed.g).asnumpy())
        names = {(net, p.path): p.layer for net, probes in diag.probes_of.items() for p in probes}
        for net, records in ranges.items():  # the names of the dead-channel table; unprobed layers by their path
            for r in records:
                r["name"] = names.get((net, r["path"]), f"{net}/{r['path']}")
        write_text_atomic(args.out / "ranges.json", json.dumps(ranges, indent=1, allow_nan=False) + "\n")
    print(diag.table())
    print(ranges_table(ranges))
    print(f"wrote {args.out / 'report.html'}, {args.out / 'ranges.json'}, {args.out / 'diagnostics.jsonl'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("factory", help="module:function returning (G, D) or (G, D, Feed), e.g. "
                        "scripts.examples.own_loop:build, scripts.examples.pix2pix:inspect_factory")
    parser.add_argument("--g-ckpt", type=Path, help="G's checkpoint (MindSpore .ckpt; default: the factory's weights)")
    parser.add_argument("--d-ckpt", type=Path, help="D's checkpoint")
    parser.add_argument("--data", type=Path, required=True, help="a folder of jpg/png/webp images (searched below)")
    parser.add_argument("--out", type=Path, required=True, help="a new directory for the report")
    parser.add_argument("--batches", type=int, default=4, help="batches to run (default 4)")
    parser.add_argument("--batch-size", type=int, default=16, help="images per batch (default 16)")
    parser.add_argument("--nz", type=int, default=100, help="G's latent size: z is (N, nz, 1, 1) (default 100; "
                        "unused with a Feed, which makes G's inputs)")
    parser.add_argument("--loss", default="bce", choices=tuple(LOSS_KINDS),
                        help="the GAN loss whose gradients are measured (gan.training.losses; default bce, "
                             "non-saturating)")
    parser.add_argument("--step", type=int, default=1, help="the step the snapshot is labelled with (default 1)")
    parser.add_argument("--clamp", type=float, help="also report where outputs would exceed this clamp")
    parser.add_argument("--eval", action="store_true", help="BatchNorm on its moving statistics (default: batch)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the latents (default 0)")
    parser.add_argument("--max-ckpt-mib", type=float, default=None,
                        help="refuse larger checkpoints (default: the cap of every tool, $LRELU_MAX_CKPT_MIB or "
                             "gan.models.checkpoint.MAX_CHECKPOINT_MIB)")
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
