"""The machine's part of the build plan: whether oneDNN's kernels build and load here, and the plan of a config on
this machine (gan.config.plan holds the rules; this module asks ops.onednn)."""
from __future__ import annotations

from gan.config.plan import BuildPlan, resolve_plan
from gan.config.schema import Config
from ops import onednn


def onednn_found(conf: Config) -> bool:
    """Whether oneDNN's kernels build and load here, asked only where the
    config could use them (CPU, model.conv_impl auto or onednn). For model.conv_impl=onednn a RuntimeError
    now, naming the missing headers or library, rather than at the first step."""
    if conf.runtime.device_target != "CPU" or conf.model.conv_impl not in ("auto", "onednn"):
        return False
    if conf.model.conv_impl == "onednn":
        onednn.dnnl_info()
        return True
    return onednn.available()


def build_plan(conf: Config) -> BuildPlan:
    """The plan of `conf` on this machine (call it once, where the networks are built)."""
    return resolve_plan(conf, onednn_found(conf))
