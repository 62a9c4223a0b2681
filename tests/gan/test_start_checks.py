"""What a run checks or says at its start, before any work (issue 51, item 16): a device this MindSpore build cannot
run on, and a model that upscales small images far beyond their size."""
from __future__ import annotations

import logging

import mindspore as ms
import pytest

from gan.config.schema import ConfigError, RuntimeConfig
from gan.training.runtime import setup_runtime
from gan.training.tasks import warn_upscaling


@pytest.mark.parametrize("target", ["GPU", "Ascend"])
def test_a_device_this_build_cannot_use_is_a_config_error(target):
    """L11: runtime.device_target=GPU on a CPU-only build was a raw MindSpore C++ error."""
    if getattr(ms.device_context, target.lower()).is_available():
        pytest.skip(f"this MindSpore build runs on {target}")
    with pytest.raises(ConfigError, match=f"runtime.device_target={target}: this MindSpore build .* cannot run on "
                                          f"{target}.*runtime.device_target=CPU"):
        setup_runtime(RuntimeConfig(device_target=target))


@pytest.mark.parametrize("overrides, warned", [
    (["model=dcgan128"], "model.image_size=128 upscales data=mnist's 28x28 images 4.6x per side"),
    (["model=dcgan128", "data=fashion_mnist"], "about 16x the memory and time of model.image_size=32"),
    (["model=dcgan64"], None),
    (["model=dcgan128", "data=shapes"], None),
])
def test_a_model_far_above_the_datas_size_is_warned_with_the_cost(config, caplog, overrides, warned):
    """L14: model=dcgan128 on 28x28 digits ran with only an INFO line (its dry run peaked at 14 GB)."""
    with caplog.at_level(logging.WARNING, logger="gan.training.tasks"):
        warn_upscaling(config(*overrides))
    messages = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert (warned in messages[0] and len(messages) == 1) if warned else not messages


@pytest.mark.parametrize("overrides, needs", [
    (["-m", "hparams_search=slope_optuna", "train.dry_run=true"], "hydra/sweeper=optuna needs the Hydra plugin "
                                                                 "hydra-optuna-sweeper"),
    (["-m", "hydra/launcher=joblib"], "hydra/launcher=joblib needs the Hydra plugin hydra-joblib-launcher"),
    (["-m", "hydra/launcher=slurm"], "hydra/launcher=slurm needs the Hydra plugin hydra-submitit-launcher"),
    (["train.steps=3"], None),
])
def test_a_sweep_without_the_sweep_extra_says_how_to_install_it(monkeypatch, overrides, needs):
    """L12: without the `sweep` extra Hydra only said "Could not find 'hydra/sweeper/optuna'"."""
    import importlib.util

    from gan.config.schema import CONFIG_DIR
    from gan.training import runtime

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)  # no hydra_plugins installed
    hint = runtime.missing_sweep_plugin(overrides, CONFIG_DIR)
    assert (needs in hint and "pip install -e '.[sweep]'" in hint) if needs else hint is None
    monkeypatch.undo()
    assert runtime.missing_sweep_plugin(overrides, CONFIG_DIR) is None  # the test extra installs them


@pytest.mark.parametrize("override", ["train.d_steps=1000000", "train.num_samples=1000000000", "model.ngf=100000"])
def test_a_run_with_a_size_above_its_bound_stops_before_any_work(tmp_path, tiny_run, override):
    """L10: a run gathered 10^6 batches for its first step, or died in numpy's MemoryError."""
    with pytest.raises(ConfigError, match=f"{override.split('=')[0]}=.* is above"):
        tiny_run(tmp_path / "run", override)
    assert not (tmp_path / "run").exists()


def test_an_empty_run_directory_is_refused(tiny_run):
    """L9: run(cfg, '') trained into the current folder."""
    from gan.run.directory import RunDirError

    with pytest.raises(RunDirError, match="the run directory is empty"):
        tiny_run("")
