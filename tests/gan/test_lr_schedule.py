"""train.lr_decay: the learning rates fall linearly to 0 over the last share of the run, in train.py's loop."""
import numpy as np
import pytest

from gan.config.schema import ConfigError, compose_config, to_config
from gan.models.checkpoint import checkpoint_path, load_checkpoint
from gan.training.loop import GANTrainer, run, scheduled_lr

QUIET = ["diagnostics.enabled=false", "eval.num_samples=500", "runtime.threads=1"]  # on top of conftest's TINY_2D


def test_scheduled_lr_is_constant_then_linear_to_zero(config, tiny_2d):
    train = config(*tiny_2d, *QUIET, "train.lr_decay=0.5").train
    assert [scheduled_lr(train, s, 10) / train.lr for s in range(10)] == pytest.approx(
        [1, 1, 1, 1, 1, 1, 0.8, 0.6, 0.4, 0.2])
    constant = config(*tiny_2d, *QUIET, "train.lr_decay=0").train
    assert scheduled_lr(constant, 9, 10) == constant.lr


@pytest.mark.parametrize("experiment", ["ring8", "grid25"])
def test_2d_experiments_train_the_protocol_length_with_the_decaying_rate(experiment):
    train = to_config(compose_config([f"experiment={experiment}"])).train
    assert (train.steps, train.lr_decay) == (15000, 0.5)
    assert to_config(compose_config([])).train.lr_decay == 0.0  # the image recipes keep a constant rate


@pytest.mark.parametrize("value", ["1.5", "-0.1"])
def test_lr_decay_outside_the_unit_interval_is_named(value, config, tiny_2d):
    with pytest.raises(ConfigError, match="train.lr_decay"):
        config(*tiny_2d, f"train.lr_decay={value}")


@pytest.mark.slow
def test_set_lr_reaches_the_jitted_steps(config, tiny_2d):
    """lr 0 leaves every trainable weight bit-identical; a positive lr set afterwards moves them."""
    trainer = GANTrainer(config(*tiny_2d, *QUIET), 2)
    rng = np.random.default_rng(0)
    n = trainer.train_cfg.batch_size
    real, z = rng.standard_normal((n, 2, 1, 1), np.float32), rng.standard_normal((n, 2, 1, 1), np.float32)
    def weights():
        return {p.name: p.asnumpy().copy() for net in (trainer.g, trainer.d) for p in net.trainable_params()}
    before = weights()
    trainer.set_lr(0.0)
    trainer.train_step(real, z)
    assert all(np.array_equal(before[k], v) for k, v in weights().items())
    trainer.set_lr(1e-3)
    trainer.train_step(real, z)
    assert not all(np.array_equal(before[k], v) for k, v in weights().items())


@pytest.mark.slow
def test_a_decaying_run_resumes_exactly(tmp_path, tiny_2d):
    """The rate is a function of (step, train.steps), so a run resumed halfway ends bit-identical."""
    common = tiny_2d + QUIET + ["train.steps=6", "train.lr_decay=0.5", "train.ckpt_every=3", "train.keep_last=2",
                      "eval.interval=6", "train.sample_every=6"]
    full = run(compose_config(common), tmp_path / "full")
    resumed = run(compose_config(common + [f"train.resume={checkpoint_path(tmp_path / 'full', 3)}"]),
                  tmp_path / "resumed")
    assert resumed.start_step == 3
    end, _ = load_checkpoint(full.checkpoint)
    again, _ = load_checkpoint(resumed.checkpoint)
    for name, value in end.items():
        np.testing.assert_array_equal(again[name], value, err_msg=name)
    constant = run(compose_config([o for o in common if not o.startswith("train.lr_decay")] + ["train.lr_decay=0"]),
                   tmp_path / "constant")
    assert not np.array_equal(load_checkpoint(constant.checkpoint)[0]["generator.layers.conv0.weight"],
                              end["generator.layers.conv0.weight"])  # the schedule changed the last steps
