"""batched_2d: T trials trained as one batched model reproduce T separate `train.py experiment=ring8` runs."""
import mindspore as ms
import numpy as np
import pytest
from batched_2d import BatchedTrainer, check_batchable
from mindspore import Tensor

from gan.config.schema import ConfigError, compose_config
from gan.models.checkpoint import load_checkpoint
from gan.training.loop import run, to_config

STEPS = 20
SEEDS = [3, 7]
# float32, 20 steps: the batched BatchNorm is computed with other kernels than nn.BatchNorm2d's, so weights
# agree to rounding, not bit for bit (differences seen: up to ~5e-8, a few float32 ulps).
ATOL = 1e-6


@pytest.fixture(scope="module")
def small(tiny_2d) -> list[str]:
    """conftest's TINY_2D at the recipe's own batch and learning rate and 32/24 units (the sizes whose batched and
    separate weights agree within ATOL), for STEPS steps, evaluated and saved once at the end, one thread per run."""
    return [*tiny_2d, "model.ngf=32", "model.ndf=24", "train.batch_size=64", "train.lr=2e-4", f"train.steps={STEPS}",
            "diagnostics.enabled=false", "eval.num_samples=500", f"eval.interval={STEPS}", f"train.ckpt_every={STEPS}",
            f"train.sample_every={STEPS}", "runtime.threads=1"]


@pytest.fixture(scope="module")
def batched(small):
    trainer = BatchedTrainer(to_config(compose_config(small)), SEEDS)
    stats = trainer.train_to(STEPS)
    return trainer, stats


@pytest.mark.slow
@pytest.mark.parametrize("trial", range(len(SEEDS)))
def test_batched_trials_match_separate_runs(batched, trial, tmp_path, small):
    trainer, stats = batched
    summary = run(compose_config(small + [f"seed={SEEDS[trial]}"]), tmp_path)
    arrays, _ = load_checkpoint(summary.checkpoint)
    mine = trainer.model.trial_arrays(trial)
    assert set(mine) <= set(arrays)
    for name, value in mine.items():
        np.testing.assert_allclose(value, arrays[name], rtol=0, atol=ATOL, err_msg=name)
    last = summary.history[-1]
    np.testing.assert_allclose([stats.loss_d[trial], stats.loss_g[trial], stats.d_real[trial], stats.d_fake[trial]],
                               [last.loss_d, last.loss_g, last.d_real, last.d_fake], atol=1e-5)
    assert trainer.evaluate()[trial] == pytest.approx(summary.metrics, abs=1e-9)


@pytest.mark.slow
def test_trials_are_independent(batched, small):
    """A trial's result does not depend on which other trials share the batch."""
    trainer, _ = batched
    alone = BatchedTrainer(to_config(compose_config(small)), SEEDS[1:])
    alone.train_to(STEPS)
    for name, value in alone.model.trial_arrays(0).items():
        np.testing.assert_allclose(value, trainer.model.trial_arrays(1)[name], rtol=0, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("override, key", [("data=mnist", "data"), ("train.loss=hinge", "train.loss"),
                                           ("model.d_norm=spectral", "model.d_norm"),
                                           ("precision=fp16", "precision"), ("act.g_kind=prelu", "act.g_kind"),
                                           ("act.d_kind=elu", "act.d_kind")])
def test_unsupported_settings_are_named(override, key, small):
    with pytest.raises(ConfigError, match=key):  # data=mnist is refused while composing, the others here
        check_batchable(to_config(compose_config(small + [override])))


def test_a_non_finite_trial_skips_the_step_and_is_counted(small):
    """A NaN gradient in one trial skips the update of every trial (documented) and counts for that trial."""
    trainer = BatchedTrainer(to_config(compose_config(small)), SEEDS)
    before = [trainer.model.trial_arrays(t) for t in range(len(SEEDS))]
    real, z = trainer.inputs(0)
    real[1, 0, 0] = np.nan
    *_, finite = trainer._step(Tensor(real), Tensor(z), Tensor(trainer.conf.train.lr, ms.float32))
    assert finite.asnumpy().tolist() == [True, False]
    assert trainer.model.skipped.asnumpy().tolist() == [0.0, 1.0]
    for t, arrays in enumerate(before):
        for name, value in trainer.model.trial_arrays(t).items():
            if "moving" not in name:  # BatchNorm statistics come from G's forward pass, which ran
                np.testing.assert_array_equal(value, arrays[name], err_msg=name)


@pytest.mark.slow
def test_relu_kind_matches_a_separate_run(tmp_path, small):
    """act.d_kind=relu (LeakyReLU slope 0 in every D layer) batched, against train.py's run of the same seed."""
    overrides = small + ["act.d_kind=relu", "train.steps=5", "eval.interval=5", "train.ckpt_every=5",
                         "train.sample_every=5"]
    trainer = BatchedTrainer(to_config(compose_config(overrides)), [5])
    assert trainer.model.d_slopes == (0.0, 0.0, 0.0)
    trainer.train_to(5)
    arrays, _ = load_checkpoint(run(compose_config(overrides + ["seed=5"]), tmp_path).checkpoint)
    for name, value in trainer.model.trial_arrays(0).items():
        np.testing.assert_allclose(value, arrays[name], rtol=0, atol=ATOL, err_msg=name)


def _learned_prelu_weights(mine: dict) -> None:
    assert {f"discriminator.layers.act{i}.weight" for i in range(3)} <= set(mine)
    assert not np.allclose(mine["discriminator.layers.act0.weight"], 0.25)  # the weights did learn


def _three_maxout_pieces(mine: dict) -> None:
    assert mine["discriminator.layers.conv1.weight"].shape == (24 * 3, 24)  # 3 pieces of 24 units from 24 units


@pytest.mark.slow
@pytest.mark.parametrize("override, check", [
    ("act.d_kind=prelu", _learned_prelu_weights),  # two trials' channel weights in one prelu call
    ("model.d_maxout=3", _three_maxout_pieces),  # PacGAN's maxout D
])
def test_d_variant_matches_a_separate_run(override, check, tmp_path, small):
    """A PReLU or maxout D batched (trial 1 of two), against train.py's run of the same seed."""
    overrides = small + [override, "train.steps=5", "eval.interval=5", "train.ckpt_every=5", "train.sample_every=5"]
    trainer = BatchedTrainer(to_config(compose_config(overrides)), [5, 6])
    trainer.train_to(5)
    arrays, _ = load_checkpoint(run(compose_config(overrides + ["seed=6"]), tmp_path).checkpoint)
    mine = trainer.model.trial_arrays(1)
    check(mine)
    for name, value in mine.items():
        np.testing.assert_allclose(value, arrays[name], rtol=0, atol=ATOL, err_msg=name)


@pytest.mark.slow
def test_ema_and_lr_decay_match_a_separate_run(tmp_path, small):
    """train.ema_beta (EMA generator, also what evaluate() uses) and train.lr_decay batched, against train.py."""
    overrides = small + ["train.steps=6", "eval.interval=6", "train.ckpt_every=6", "train.sample_every=6",
                         "train.ema_beta=0.5", "train.lr_decay=0.5"]
    trainer = BatchedTrainer(to_config(compose_config(overrides)), [5])
    trainer.train_to(6)
    with pytest.raises(ValueError, match="train.lr_decay"):
        trainer.train_to(7)  # past the schedule's end
    summary = run(compose_config(overrides + ["seed=5"]), tmp_path)
    arrays, _ = load_checkpoint(summary.checkpoint)
    mine = trainer.model.trial_arrays(0)
    assert any(name.startswith("ema.") for name in mine) and set(mine) <= set(arrays)
    for name, value in mine.items():
        np.testing.assert_allclose(value, arrays[name], rtol=0, atol=ATOL, err_msg=name)
    assert not np.allclose(mine["ema.layers.conv0.weight"], mine["generator.layers.conv0.weight"], atol=1e-5)
    assert trainer.evaluate()[0] == pytest.approx(summary.metrics, abs=1e-9)
