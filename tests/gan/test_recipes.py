"""GAN recipes end to end: every allowed loss x normaliser combination runs, exact resume with spectral norm,
R1 and several D steps, gradient accumulation equals the full batch, and gradient clipping."""
import numpy as np
import pytest
from mindspore import Tensor

from gan.config.loss_kinds import LOSS_KINDS
from gan.config.schema import D_NORMS, compose_config
from gan.core.streams import Purpose, latents, mixing_weights
from gan.models.checkpoint import load_checkpoint
from gan.training.loop import GANTrainer, clip_by_global_norm
from gan.training.losses import LOSSES

ALLOWED = [(loss, norm) for loss in LOSSES for norm in D_NORMS
           if not (LOSS_KINDS[loss].gradient_penalty and norm == "batch")]


def losses(summary) -> list[tuple[float, float]]:
    return [(s.loss_d, s.loss_g) for s in summary.history]


@pytest.mark.slow
@pytest.mark.parametrize("loss, d_norm", ALLOWED)
def test_dry_run_of_every_allowed_loss_and_d_norm(tiny_run, tmp_path, loss, d_norm):
    """PyNative (no compile; the graph-mode double backward is covered by the resume test and test_losses)."""
    summary = tiny_run(tmp_path, "train.dry_run=true", "runtime.mode=pynative", f"train.loss={loss}",
                       f"model.d_norm={d_norm}", "eval.enabled=false")
    assert summary.end_step == 2 and np.isfinite(losses(summary)).all()
    assert (tmp_path / "checkpoints" / "step_00000002.ckpt").is_file()


def test_the_disallowed_combinations_are_exactly_the_gradient_penalty_with_batchnorm():
    assert {(loss, norm) for loss in LOSSES for norm in D_NORMS} - set(ALLOWED) == {("wgan_gp", "batch")}


@pytest.mark.slow
def test_g_norm_none_and_the_2d_recipe_with_spectral_norm_run(tiny_run, tmp_path, tiny_2d):
    assert np.isfinite(losses(tiny_run(tmp_path / "g", "train.dry_run=true", "runtime.mode=pynative",
                                       "model.g_norm=none", "eval.enabled=false"))).all()
    from gan.training.loop import run
    summary = run(compose_config([*tiny_2d, "eval.num_samples=64", "runtime.mode=pynative", "train.dry_run=true",
                                  "model.d_norm=spectral", "train.loss=hinge"]), tmp_path / "2d")
    assert np.isfinite(losses(summary)).all()


RESUMABLE = ["model.d_norm=spectral", "train.loss=hinge", "train.r1_gamma=1", "train.r1_every=3", "train.d_steps=2",
             "diagnostics.enabled=false"]


@pytest.mark.slow
def test_resume_is_exact_with_spectral_norm_r1_and_several_d_steps(tiny_run, tmp_path):
    """Graph mode. R1 runs at steps 0 and 3, on both sides of the resume at step 2; u is in the checkpoint."""
    whole = tiny_run(tmp_path / "whole", "train.steps=4", *RESUMABLE)
    tiny_run(tmp_path / "split", "train.steps=2", *RESUMABLE)
    resumed = tiny_run(tmp_path / "split", "train.steps=4", "train.resume=auto", *RESUMABLE)
    assert resumed.start_step == 2
    assert losses(resumed) == losses(whole)[2:]  # bit-identical
    assert len(set(losses(whole))) == 4
    arrays, _ = load_checkpoint(tmp_path / "split" / "checkpoints" / "step_00000002.ckpt")
    us = {k: v for k, v in arrays.items() if k.endswith("sn_u")}
    assert len(us) == 4 and all(abs(np.linalg.norm(u) - 1) < 1e-5 for u in us.values())
    final, _ = load_checkpoint(tmp_path / "whole" / "checkpoints" / "step_00000004.ckpt")
    assert all(not np.array_equal(final[k], us[k]) for k in us if us[k].size > 1)  # the power iteration moved u


STEPS = ["model.conv_impl=gemm", "train.batch_size=8", "diagnostics.enabled=false", "model.g_norm=none"]


@pytest.fixture(scope="module")
def trainer_steps(config, tiny_trainer):
    """trainer_steps(*overrides, steps=2): a tiny GANTrainer's stats and final parameters after `steps` steps on
    fixed random data (conftest's TINY_TRAINER and STEPS)."""
    def train(*overrides: str, steps: int = 2):
        conf = config(*tiny_trainer, *STEPS, *overrides)
        trainer = GANTrainer(conf, 1)
        rng = np.random.default_rng(1)
        stats = []
        for step in range(steps):
            real = [rng.uniform(-1, 1, (8, 1, 32, 32)).astype(np.float32) for _ in range(conf.train.d_steps)]
            z = [latents(0, step, Purpose.Z, 8, 8, k) for k in range(conf.train.d_steps)]
            eps = [mixing_weights(0, step, 8, k) for k in range(conf.train.d_steps)]
            stats.append(trainer.train_step(real, z, eps=eps))
        return stats, trainer.state_arrays()

    return train


@pytest.mark.slow
@pytest.mark.parametrize("d_norm, loss", [("spectral", "hinge"), ("none", "wgan_gp")])
def test_accumulated_step_equals_one_full_batch_step(d_norm, loss, trainer_steps):
    """Without BatchNorm the mean of 4 micro-batches' gradients is the full batch's: same losses, gradient norms
    and, after two Adam steps, parameters within 1e-5."""
    common = (f"model.d_norm={d_norm}", f"train.loss={loss}")
    full, full_state = trainer_steps(*common)
    micro, micro_state = trainer_steps(*common, "train.accumulate=4")
    for a, b in zip(full, micro):
        for key in ("loss_d", "loss_g", "grad_norm_d", "grad_norm_g"):
            assert getattr(b, key) == pytest.approx(getattr(a, key), rel=1e-5, abs=1e-6), key
    for name, value in full_state.items():
        np.testing.assert_allclose(micro_state[name], value, rtol=1e-5, atol=1e-5, err_msg=name)
    assert full[0].grad_norm_d != full[1].grad_norm_d  # the steps really differ


def test_clip_by_global_norm_matches_numpy():
    rng = np.random.default_rng(0)
    grads = [rng.standard_normal(s).astype(np.float32) for s in ((3, 4), (5,))]
    norm = np.sqrt(sum((g.astype(np.float64) ** 2).sum() for g in grads))
    for max_norm in (norm / 4, norm * 2):
        got = clip_by_global_norm(tuple(Tensor(g) for g in grads), Tensor(np.float32(norm)), float(max_norm))
        want = [g * min(1.0, max_norm / (norm + 1e-6)) for g in grads]
        for a, b in zip(got, want):
            np.testing.assert_allclose(a.asnumpy(), b, rtol=1e-6)
    clipped = clip_by_global_norm(tuple(Tensor(g) for g in grads), Tensor(np.float32(norm)), float(norm / 4))
    assert np.sqrt(sum((c.asnumpy() ** 2).sum() for c in clipped)) == pytest.approx(norm / 4, rel=1e-5)


@pytest.mark.slow
def test_clipping_logs_the_pre_clip_norm_and_changes_only_what_it_clips(trainer_steps):
    base, base_state = trainer_steps("model.d_norm=none")
    loose, loose_state = trainer_steps("model.d_norm=none", "train.clip_grad_norm=1e9")
    tight, tight_state = trainer_steps("model.d_norm=none", "train.clip_grad_norm=1e-9")
    assert [s.grad_norm_d for s in loose] == [s.grad_norm_d for s in base]
    assert all(np.array_equal(loose_state[k], v) for k, v in base_state.items())  # never clipped: same run
    assert tight[0].grad_norm_d == base[0].grad_norm_d  # step 1: same state, the pre-clip norm is logged
    moved = [k for k in base_state if k.startswith("discriminator.") and not np.allclose(tight_state[k], base_state[k])]
    assert moved  # clipping to 1e-9 shrank the updates (Adam's eps dominates)


@pytest.mark.slow
def test_cpu_steps_take_the_global_norm_in_one_kernel(monkeypatch, trainer_steps):
    """On CPU the steps' gradient norm is ops.global_norm (one kernel for all gradients); the logged norms and,
    with clipping on, the updates match the composed norm's (the sums differ only in rounding)."""
    from gan.training import loop as training
    from ops import global_norm

    assert training.global_norm_for("CPU") is global_norm
    assert training.global_norm_for("Ascend") is training.composed_global_norm
    clip = ("model.d_norm=none", "train.clip_grad_norm=1e-5")  # below the norms of these steps: every update clipped
    kernel, kernel_state = trainer_steps(*clip)
    monkeypatch.delitem(training.GLOBAL_NORMS, "CPU")
    composed, composed_state = trainer_steps(*clip)
    for a, b in zip(kernel, composed):
        assert a.grad_norm_d > 1e-5 and a.grad_norm_g > 1e-5
        for key in ("loss_d", "loss_g", "grad_norm_d", "grad_norm_g"):
            assert getattr(a, key) == pytest.approx(getattr(b, key), rel=1e-5), key
    for name, value in composed_state.items():
        np.testing.assert_allclose(kernel_state[name], value, rtol=1e-5, atol=1e-6, err_msg=name)
