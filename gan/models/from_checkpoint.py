"""A generator rebuilt from a training checkpoint: its config decides the network, its arrays fill it (used by
scripts/generate.py, export.py, quantize.py and fid.py)."""
from __future__ import annotations

import sys
from pathlib import Path

import mindspore as ms

from gan.config.schema import config_from_yaml
from gan.models.build import build_plan
from gan.models.checkpoint import EMA_PREFIX, G_PREFIX, CheckpointError, load_training_checkpoint, resolve_checkpoint
from gan.models.networks import NETWORKS


def generator_from_checkpoint(path: str | Path, use_ema: bool = True):
    """(generator, Config) of a training checkpoint: its EMA copy when present and `use_ema`, in inference mode."""
    arrays, meta = load_training_checkpoint(path)
    conf = config_from_yaml(meta["config"], path)
    g = build_plan(conf).g  # G's convolutions and fusion as the run's config builds them here (NCHW: float32 inference)
    net = NETWORKS[conf.model.name].generator(conf.model, conf.act, int(meta["channels"]), g.conv_impl, g.fusion)
    prefix = EMA_PREFIX if use_ema and any(k.startswith(EMA_PREFIX) for k in arrays) else G_PREFIX
    net.update_parameters_name(prefix)
    for p in net.get_parameters():
        if p.name not in arrays:
            raise CheckpointError(f"{path}: missing generator parameter '{p.name}'")
        p.set_data(ms.Tensor(arrays[p.name]))
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
