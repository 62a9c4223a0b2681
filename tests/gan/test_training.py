"""The training loop: exact resume, seed reproducibility, graph == PyNative, outputs, NaN hunt, bad input."""
import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from mindspore import Tensor

from gan.config.schema import ActConfig, ConfigError, ModelConfig
from gan.models.checkpoint import CheckpointError, checkpoint_path, latest_checkpoint, load_checkpoint, save_checkpoint
from gan.models.from_checkpoint import generator_from_checkpoint
from gan.models.networks import Generator
from gan.run.files import read_events
from gan.run.grids import image_grid
from gan.training.loop import first_nonfinite_layer


def losses(summary) -> list[tuple[float, float]]:
    return [(s.loss_d, s.loss_g) for s in summary.history]


@pytest.fixture(scope="module")
def baseline(tmp_path_factory, tiny_run):
    """4 uninterrupted graph-mode steps, seed 0, samples and a checkpoint after each step, the newest 3 kept."""
    return tiny_run(tmp_path_factory.mktemp("baseline"), "train.steps=4", "train.ckpt_every=1", "train.keep_last=3",
                 "train.sample_every=1")


@pytest.mark.slow
def test_same_seed_reproduces_and_resume_is_exact(baseline, tmp_path, tiny_run):
    first = tiny_run(tmp_path, "train.steps=2")
    second = tiny_run(tmp_path, "train.steps=4", "train.resume=auto")
    assert (second.start_step, second.end_step) == (2, 4)
    assert losses(first) == losses(baseline)[:2]  # same seed, same losses
    assert losses(second) == losses(baseline)[2:]  # resumed: bit-identical to the uninterrupted run
    # (the baseline also sampled after every step: sampling in inference mode leaves training untouched)
    assert len(set(losses(baseline))) == 4  # the losses move, so equality is a real check
    final = "samples/step_000004.png"  # the fixed latent batch survives the resume
    assert (tmp_path / final).read_bytes() == (baseline.run_dir / final).read_bytes()


@pytest.mark.slow
def test_other_seed_gives_other_losses(baseline, tmp_path, tiny_run):
    assert losses(tiny_run(tmp_path, "train.steps=1", "seed=1"))[0] != losses(baseline)[0]


@pytest.mark.slow
def test_keep_last_k_checkpoints(baseline):
    kept = sorted(p.name for p in (baseline.run_dir / "checkpoints").glob("*.ckpt"))
    assert kept == ["step_00000002.ckpt", "step_00000003.ckpt", "step_00000004.ckpt"]


@pytest.mark.slow
def test_pynative_resumed_from_a_path_matches_graph_mode(baseline, tmp_path, tiny_overrides):
    """Resumed in PyNative, as a user runs it: `python train.py` in a fresh process.

    A fresh process, because in one process a PyNative trainer built after another PyNative trainer gave
    different G losses (a state MindSpore 2.10 keeps between PyNative runs; open, see docs/training.md).
    """
    path = baseline.run_dir / "checkpoints" / "step_00000002.ckpt"
    code = ("import sys; from gan.config.schema import compose_config; from gan.training.loop import run; "
            "s = run(compose_config(sys.argv[2:]), sys.argv[1]); print([(h.loss_d, h.loss_g) for h in s.history])")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path), *tiny_overrides, "train.steps=4",
                           "runtime.mode=pynative", f"train.resume={path}"], cwd=Path(__file__).parents[2],
                          capture_output=True, text=True, timeout=600, env={**os.environ, "GLOG_v": "3"})
    assert done.returncode == 0, done.stderr[-2000:]
    pynative = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    np.testing.assert_allclose(pynative, losses(baseline)[2:], rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_checkpoint_holds_the_full_state(baseline):
    arrays, meta = load_checkpoint(latest_checkpoint(baseline.run_dir))
    assert meta["step"] == 4 and meta["seed"] == 0 and "model:" in meta["config"]
    prefixes = {name.split(".")[0] for name in arrays}
    assert {"generator", "discriminator", "opt_g", "opt_d", "scaler_g", "scaler_d"} <= prefixes
    assert any(n.startswith("opt_d.moment1.") for n in arrays) and "opt_g.beta1_power" in arrays
    # BatchNorm trained on batch statistics, so its moving statistics left their initial values.
    assert not np.allclose(arrays["generator.layers.bn0.moving_variance"], 1.0)
    assert not np.allclose(arrays["discriminator.layers.bn1.moving_mean"], 0.0)



@pytest.mark.parametrize("precision", ["fp32", "fp16"])
def test_optimiser_and_scaler_checkpoint_keys_are_those_of_older_checkpoints(precision, config, tiny_trainer):
    """The optimiser/scaler Parameters renamed for the one D + G graph keep the keys checkpoints had before
    (read from the old code's state_arrays), so a run from before the rename resumes."""
    from gan.training.loop import GANTrainer

    trainer = GANTrainer(config(*tiny_trainer, f"precision={precision}"), 3)
    scaler = ("scale_value", "counter") if precision == "fp16" else ("scale_value",)
    want = {f"scaler_{net}.{attr}" for net in "gd" for attr in scaler}
    for net, params in (("g", trainer.g.trainable_params()), ("d", trainer.d.trainable_params())):
        want |= {f"opt_{net}.{n}" for n in ("global_step", "beta1_power", "beta2_power", "learning_rate")}
        want |= {f"opt_{net}.moment{m}.{p.name}" for m in (1, 2) for p in params}
    assert {n for n in trainer.state_arrays() if n.startswith(("opt_", "scaler_"))} == want


@pytest.mark.slow
def test_train_seconds_count_the_steps_not_the_outputs(tmp_path, tiny_run, monkeypatch, capsys):
    """RunSummary.train_seconds (what scripts/bench/bench_quality.py reports) leaves out what happens between steps."""
    import time

    import gan.training.outputs

    save_png = gan.training.outputs.save_png
    monkeypatch.setattr(gan.training.outputs, "save_png", lambda *args: (time.sleep(1.0), save_png(*args))[1])
    began = time.perf_counter()
    summary = tiny_run(tmp_path, "train.steps=3", "train.sample_every=1")
    wall = time.perf_counter() - began
    assert 0 < summary.train_seconds <= wall - 4.0  # real.png and 3 sample grids, each slowed by 1 s, are outside
    assert f"done: steps 0..3 in {summary.train_seconds:.1f} s of training" in capsys.readouterr().out


@pytest.mark.slow
def test_dry_run_writes_every_output(tmp_path, capsys, tiny_run):
    summary = tiny_run(tmp_path, "train.dry_run=true", "train.steps=1000", "train.ema_beta=0.9")
    assert summary.end_step == 2
    report = capsys.readouterr().out
    assert "dead channels at step 2" in report and "D/act0" in report and "G/act0" in report
    assert f"dashboard   {tmp_path / 'report.html'}" in report
    assert "<table" in (tmp_path / "report.html").read_text()
    assert {p.name for p in (tmp_path / "samples").iterdir()} == {"real.png", "step_000001.png", "step_000002.png"}
    assert latest_checkpoint(tmp_path).name == "step_00000002.ckpt"
    assert list((tmp_path / "tensorboard").glob("events.out.tfevents.*"))
    arrays, _ = load_checkpoint(latest_checkpoint(tmp_path))
    assert any(n.startswith("ema.") for n in arrays)
    net, conf = generator_from_checkpoint(latest_checkpoint(tmp_path))
    assert conf.model.ngf == 8 and net(Tensor(np.zeros((2, 16, 1, 1), np.float32))).shape == (2, 3, 32, 32)


@pytest.mark.slow
def test_a_failing_dashboard_is_a_warning_and_the_run_keeps_its_files(tmp_path, capsys, caplog, monkeypatch,
                                                                       tiny_run):
    """The dashboard page is a viewer: its failure at the end of a run (here a builder that raises) is a warning
    naming the error and the command that rebuilds the page, after the checkpoint and samples were written."""
    import gan.analysis.dashboard

    def broken(run_dir, title=None):
        raise ValueError("a damaged events.jsonl")

    monkeypatch.setattr(gan.analysis.dashboard, "build_dashboard", broken)  # what write_dashboard calls
    summary = tiny_run(tmp_path, "train.steps=2", "train.ckpt_every=2", "train.sample_every=2")
    assert summary.end_step == 2 and latest_checkpoint(tmp_path).name == "step_00000002.ckpt"
    assert (tmp_path / "samples" / "step_000002.png").is_file() and not (tmp_path / "report.html").exists()
    rebuild = f"python scripts/dashboard.py {tmp_path} --out {tmp_path / 'report.html'}"
    warning = " ".join(r.getMessage() for r in caplog.records if r.levelname == "WARNING")
    assert "ValueError: a damaged events.jsonl" in warning and rebuild in warning
    out = capsys.readouterr().out
    assert f"dashboard   not written (ValueError); rebuild it with: {rebuild}" in out and "dead channels:" in out
    assert json.loads((tmp_path / "status.json").read_text())["state"] == "finished"


@pytest.mark.slow
def test_resume_from_a_truncated_or_missing_file_is_a_clear_error(baseline, tmp_path, tiny_run):
    good = latest_checkpoint(baseline.run_dir).read_bytes()
    bad = tmp_path / "bad.ckpt"
    bad.write_bytes(good[: len(good) // 2])
    with pytest.raises(CheckpointError, match="bad.ckpt"):
        tiny_run(tmp_path / "run", "train.steps=4", f"train.resume={bad}")
    with pytest.raises(ConfigError, match="train.resume='/nonexistent.ckpt'"):
        tiny_run(tmp_path / "run", "train.steps=4", "train.resume=/nonexistent.ckpt")


@pytest.mark.slow
def test_resume_with_another_model_names_the_mismatch(baseline, tmp_path, tiny_run):
    resume = f"train.resume={latest_checkpoint(baseline.run_dir)}"
    with pytest.raises(ConfigError, match="model.ngf: 8 -> 16"):
        tiny_run(tmp_path, "train.steps=6", "model.ngf=16", resume)
    with pytest.raises(CheckpointError, match="shape"):  # overriding cannot load weights of another shape
        tiny_run(tmp_path, "train.steps=6", "model.ngf=16", "train.resume_override=true", resume)


def strict_steps(path: Path) -> list[int]:
    """Steps of every line, each of which must be a complete JSON record."""
    return [json.loads(line)["step"] for line in path.read_text().splitlines()]


@pytest.mark.slow
def test_resume_repairs_a_partial_line_and_drops_steps_after_the_checkpoint(tmp_path, tiny_run):
    probed = ["train.steps=4", "train.ckpt_every=2", "diagnostics.interval=1"]
    tiny_run(tmp_path, *probed)
    diag = tmp_path / "diagnostics.jsonl"
    lines = diag.read_text().splitlines(keepends=True)
    diag.write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])  # a crash mid-append at step 4
    older = checkpoint_path(tmp_path, 2)
    resumed = tiny_run(tmp_path, *probed, f"train.resume={older}")  # steps 3 and 4 are already logged
    assert (resumed.start_step, resumed.end_step) == (2, 4)
    for name in ("losses.jsonl", "diagnostics.jsonl"):
        assert strict_steps(tmp_path / name) == [1, 2, 3, 4], name  # no partial line, no duplicate step
    # the abandoned step-4 checkpoint was set aside (not deleted, not found by resume=auto), then written anew
    assert read_events(tmp_path) == [{"step": 2, "kind": "resume",
                                      "detail": {"checkpoint": str(older), "superseded": ["step_00000004.ckpt"]}}]
    assert (tmp_path / "checkpoints" / "superseded" / "step_00000004.ckpt").is_file()
    assert latest_checkpoint(tmp_path) == checkpoint_path(tmp_path, 4)


@pytest.mark.slow
def test_resume_refuses_experiment_changes_unless_overridden(baseline, tmp_path, tiny_run):
    checkpoint = latest_checkpoint(baseline.run_dir)
    with pytest.raises(ConfigError) as info:
        tiny_run(tmp_path, "train.steps=5", "act.negative_slope=0.05", "seed=3", f"train.resume={checkpoint}")
    for text in ("act.negative_slope: 0.2 -> 0.05", "seed: 0 -> 3", "train.resume_override=true", checkpoint.name):
        assert text in str(info.value)
    assert not (tmp_path / "checkpoints").exists()
    # Length, cadence and sample-count changes keep the experiment: accepted without an override event.
    tiny_run(tmp_path / "same", "train.steps=5", "train.log_every=2", "train.sample_every=5", "train.keep_last=1",
          "train.num_samples=4", f"train.resume={checkpoint}")
    assert [e["kind"] for e in read_events(tmp_path / "same")] == ["resume"]
    overridden = tiny_run(tmp_path / "mixed", "train.steps=5", "act.negative_slope=0.05", "train.resume_override=true",
                       f"train.resume={checkpoint}")
    assert overridden.end_step == 5
    assert read_events(tmp_path / "mixed")[1] == {"step": 4, "kind": "resume_override",
                                                  "detail": {"changed": {"act.negative_slope": [0.2, 0.05]}}}


@pytest.mark.slow
def test_persistent_non_finite_training_stops_naming_the_first_bad_layer(tmp_path, tiny_run):
    with pytest.raises(RuntimeError, match=r"3 consecutive steps had non-finite .* first non-finite activation: "
                                           r"(generator|discriminator)\.layers\.\w+"):
        tiny_run(tmp_path, "train.steps=50", "train.lr=1e30", "precision.max_nonfinite_steps=3")
    *skips, stop = read_events(tmp_path)
    assert len(skips) >= 3 and {e["kind"] for e in skips} == {"nonfinite_skip"}  # each skipped step is on record
    assert [e["step"] for e in skips[-3:]] == list(range(skips[-1]["step"] - 2, skips[-1]["step"] + 1))
    assert all(e["detail"]["networks"] and set(e["detail"]["networks"]) <= {"D", "G"} for e in skips)
    assert stop["kind"] == "nonfinite_stop" and stop["step"] == skips[-1]["step"]
    assert (tmp_path / "checkpoints" / stop["detail"]["checkpoint"]).is_file()  # checkpointed before stopping
    assert json.loads((tmp_path / "status.json").read_text())["state"] == "failed"


@pytest.mark.slow
def test_fp32_run_ending_non_finite_fails_even_before_max_nonfinite_steps(tmp_path, tiny_run):
    """lr=1e30 (issue 51, L15): every step of a 2-step run is non-finite; the run does not report "finished"."""
    with pytest.raises(RuntimeError, match=r"training stopped at step 2: its last 2 step\(s\) had non-finite "
                                           r"gradients, and precision=fp32 has no loss scale to lower"):
        tiny_run(tmp_path, "train.steps=2", "train.lr=1e30", "eval.enabled=false")
    assert [e["kind"] for e in read_events(tmp_path)] == ["nonfinite_skip", "nonfinite_skip", "nonfinite_stop"]
    assert checkpoint_path(tmp_path, 2).is_file()
    assert json.loads((tmp_path / "status.json").read_text())["state"] == "failed"


@pytest.mark.slow
def test_resuming_nan_weights_stops_as_failed(baseline, tmp_path, tiny_run):
    arrays, meta = load_checkpoint(checkpoint_path(baseline.run_dir, 2))
    nan = {k: np.full_like(a, np.nan) if k.startswith("generator.") and a.dtype.kind == "f" else a
           for k, a in arrays.items()}
    save_checkpoint(checkpoint_path(tmp_path, 2), nan, meta)
    with pytest.raises(RuntimeError, match="training stopped at step 4: .* first non-finite activation: generator"):
        tiny_run(tmp_path, "train.steps=4", "train.resume=auto", "eval.enabled=false")
    assert read_events(tmp_path)[-1]["kind"] == "nonfinite_stop"
    assert json.loads((tmp_path / "status.json").read_text())["state"] == "failed"


def test_nan_hunt_names_the_poisoned_layer():
    g = Generator(ModelConfig(nz=4, ngf=4), ActConfig(), 1, "native")
    z = Tensor(np.ones((2, 4, 1, 1), np.float32))
    assert first_nonfinite_layer(g, z) is None
    conv = g.layers.name_cells()["conv1"]
    conv.weight.set_data(Tensor(np.full(conv.weight.shape, np.inf, np.float32)))
    assert first_nonfinite_layer(g, z) == "generator.layers.conv1 (Conv2dTranspose)"


@pytest.mark.slow
def test_bf16_on_cpu_with_native_convs_fails_at_start_with_a_clear_message(tmp_path, tiny_run):
    with pytest.raises(ConfigError, match="precision=bf16 on CPU computes the convolutions with oneDNN"):
        tiny_run(tmp_path, "precision=bf16")


def test_image_grid_tiles_and_scales():
    images = np.stack([np.full((3, 4, 4), v, np.float32) for v in (-1.0, 0.0, 1.0)])
    grid = image_grid(images, nrow=2, padding=1)
    assert grid.shape == (11, 11, 3) and grid.dtype == np.uint8
    assert grid[1, 1, 0] == 0 and grid[1, 6, 0] == 128 and grid[6, 1, 0] == 255 and grid[0, 0, 0] == 0
    with pytest.raises(ValueError, match="NCHW"):
        image_grid(np.zeros((2, 2, 4, 4), np.float32))


SECOND_RUN_THREADS = """
import os
from gan.config.schema import ConfigError, RuntimeConfig
from gan.training.runtime import setup_runtime
setup_runtime(RuntimeConfig(threads=1))
setup_runtime(RuntimeConfig(threads=1))  # a second run in one process (bench_modes, basic sweeps, joblib workers)
assert os.environ["MS_DEV_HOST_BLOCKING_RUN"] == "1"
try:
    setup_runtime(RuntimeConfig(threads=2))
except ConfigError as err:
    print(err)
"""


@pytest.mark.slow
def test_second_run_in_one_process_may_repeat_runtime_threads_only():
    """MindSpore takes the CPU kernel thread count once per process: the same value again is fine, another is named."""
    result = subprocess.run([sys.executable, "-c", SECOND_RUN_THREADS], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "GLOG_v": "3"}, cwd=Path(__file__).resolve().parents[2])
    assert result.returncode == 0, result.stderr[-3000:]
    assert "runtime.threads=2: this process already runs MindSpore's CPU kernels with 1 threads" in result.stdout


def test_setup_runtime_after_kernels_ran_keeps_the_same_device():
    """A process that already ran kernels (this test session) can call run() again on the same device."""
    from gan.config.schema import RuntimeConfig
    from gan.training.runtime import setup_runtime

    Tensor(np.ones(3, np.float32)).sum().asnumpy()
    setup_runtime(RuntimeConfig())  # raised "The runtime has been initialized" before


def test_unit_loss_scale_is_the_identity_and_other_scales_multiply():
    """fp32 with loss_scale 1 (the default) scales nothing (no multiply per gradient in the step graph) but keeps
    a scale_value Parameter of 1 for the logs and checkpoints; another static scale still multiplies."""
    from gan.config.schema import PrecisionConfig
    from gan.training.loop import UnitLossScaler, _loss_scaler

    unit = _loss_scaler(PrecisionConfig())
    loss, grads = Tensor(np.float32(3.0)), (Tensor(np.ones(2, np.float32)), Tensor(np.ones((2, 2), np.float32)))
    assert isinstance(unit, UnitLossScaler) and float(unit.scale_value.asnumpy()) == 1.0
    assert unit.scale(loss) is loss and unit.unscale(grads) is grads
    four = _loss_scaler(PrecisionConfig(loss_scale=4.0))
    assert not isinstance(four, UnitLossScaler) and float(four.scale(loss).asnumpy()) == 12.0
    np.testing.assert_allclose(four.unscale(grads)[1].asnumpy(), np.full((2, 2), 0.25, np.float32))
