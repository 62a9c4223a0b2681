"""A generator rebuilt from a training checkpoint: its config decides the network, its arrays fill it (used by
scripts/generate.py, export.py, quantize.py and fid.py).

The checkpoint may come from someone else, and its config may declare any network size: the network is built
without allocating its parameters (MindSpore's no_init_parameters: shapes only), every parameter's shape, dtype
and values are checked against the stored arrays, and only then are the arrays put in. A config that declares a
network larger than its arrays is refused before anything of that size exists.
"""
from __future__ import annotations

import sys
from pathlib import Path

import mindspore as ms
import numpy as np
from mindspore import nn
from mindspore.nn.utils import no_init_parameters

from gan.models.build import build_plan
from gan.models.checkpoint import (
    EMA_PREFIX,
    G_PREFIX,
    CheckpointError,
    load_training_checkpoint,
    resolve_checkpoint,
    training_config,
)
from gan.models.networks import NETWORKS


def checked_weights(path: str | Path, net: nn.Cell, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Each parameter of `net` -> its stored array in the parameter's dtype; CheckpointError naming the first
    tensor that is missing, of another shape, not floating point (int32 or bool weights would be cast silently) or
    not finite (NaN/inf weights give black images)."""
    weights = {}
    for p in net.get_parameters():
        need = np.dtype(ms.dtype_to_nptype(p.dtype))
        if p.name not in arrays:
            raise CheckpointError(f"{path}: missing generator parameter '{p.name}'")
        array = arrays[p.name]
        if array.shape != tuple(p.shape) or array.dtype.kind != "f":
            why = ("weights must be floating point" if array.shape == tuple(p.shape)
                   else "its stored config declares another network than its arrays hold")
            raise CheckpointError(f"{path}: '{p.name}' is {array.dtype}{list(array.shape)}, this generator needs "
                                  f"{need}{list(p.shape)}: {why}")
        value = array.astype(need)
        if not np.isfinite(value).all():
            raise CheckpointError(f"{path}: '{p.name}' holds {np.count_nonzero(~np.isfinite(value))} NaN or inf "
                                  f"values of {value.size}; a generator with non-finite weights gives no images "
                                  f"(did its training diverge? use an earlier checkpoint)")
        weights[p.name] = value
    return weights


def generator_from_checkpoint(path: str | Path, use_ema: bool = True):
    """(generator, Config) of a training checkpoint: its EMA copy when present and `use_ema`, in inference mode."""
    arrays, meta = load_training_checkpoint(path)
    conf = training_config(path, meta)
    g = build_plan(conf).g  # G's convolutions and fusion as the run's config builds them here (NCHW: float32 inference)
    with no_init_parameters():  # shapes only: nothing of the declared size is allocated before the checks
        net = NETWORKS[conf.model.name].generator(conf.model, conf.act, meta["channels"], g.conv_impl, g.fusion)
    prefix = EMA_PREFIX if use_ema and any(k.startswith(EMA_PREFIX) for k in arrays) else G_PREFIX
    net.update_parameters_name(prefix)
    weights = checked_weights(path, net, arrays)
    for p in net.get_parameters():
        p.set_data(ms.Tensor(weights[p.name]))
    net.set_train(False)
    return net, conf


def generator_from_argument(argument: str | Path, use_ema: bool = True):
    """(generator, Config, checkpoint file) of a command line's checkpoint argument: a .ckpt file, or a run
    directory standing for its newest checkpoint (resolve_checkpoint), which stderr then names."""
    path = resolve_checkpoint(argument)
    net, conf = generator_from_checkpoint(path, use_ema=use_ema)
    if path != Path(argument):
        print(f"using {path}, the newest checkpoint in {argument}", file=sys.stderr)
    return net, conf, path
