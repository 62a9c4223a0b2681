"""diagnostics.recycle (ReDo): exactly the flagged channels are re-initialised with the layer's own initialiser
(everything else bit-identical), their outgoing weights zeroed and their Adam moments reset, in graph and
PyNative mode (the compiled step sees the new values); draws keyed by (seed, step, layer); a recycling run
resumes exactly and logs its events; config validation."""
import zlib

import numpy as np
import pytest

from gan.analysis.dashboard import build_dashboard
from gan.config.schema import ConfigError, compose_config, experiment_changes, to_config
from gan.core.streams import Purpose, latents
from gan.diagnostics.recycle import channel_axes
from gan.models.networks import dcgan_values, mlp_values
from gan.run.files import read_events, read_jsonl
from gan.training.loop import GANTrainer, run
from tests.helpers import tensorboard_events

RECYCLE = ["diagnostics.recycle=true", "diagnostics.recycle_nets=[D,G]"]  # on top of conftest's TINY_TRAINER
REAL = np.random.default_rng(1).uniform(-1, 1, (4, 3, 32, 32)).astype(np.float32)
# Channels to recycle per layer: D/act1 sits behind a BatchNorm, D/act0 does not; G's convs are transposed.
FLAGGED = {"D/act0": [1], "D/act1": [0, 3], "G/act0": [2], "G/act2": [0, 1]}


@pytest.fixture(scope="module")
def trainer(config, tiny_trainer):
    """trainer(mode, *overrides): a tiny DCGAN trainer after two steps (the Adam moments are non-zero), its graphs
    compiled."""
    def build(mode: str, *overrides: str) -> GANTrainer:
        t = GANTrainer(config(*tiny_trainer, *RECYCLE, f"runtime.mode={mode}", *overrides), 3)
        for step in range(2):
            t.train_step(REAL, latents(0, step, Purpose.Z, 4, 8))
        return t

    return build


def record(flagged: dict[str, list[int]]) -> dict:
    return {"layers": {layer: {"dormant": channels} for layer, channels in flagged.items()}}


def moment_names(t: GANTrainer, param_name: str) -> list[str]:
    """The state_arrays keys of Adam's first and second moments of a parameter."""
    prefix = "opt_d." if param_name.startswith("discriminator.") else "opt_g."
    return [f"{prefix}moment1.{param_name}", f"{prefix}moment2.{param_name}"]


def expected_changes(t: GANTrainer, step: int, flagged: dict[str, list[int]], values) -> dict[str, np.ndarray]:
    """{state name: boolean mask of changed entries} and the new values, computed here from the ReDo rule."""
    before = t.state_arrays()
    after = {k: v.copy() for k, v in before.items()}
    mask = {k: np.zeros(v.shape, bool) for k, v in before.items()}

    def put(name: str, axis: int, channels: list[int], value) -> None:
        index = (slice(None),) * axis + (channels,)
        after[name][index] = value[index] if isinstance(value, np.ndarray) else value
        mask[name][index] = True
        for moment in moment_names(t, name):
            if moment in after:
                after[moment][index] = 0.0
                mask[moment][index] = True

    for r in t.recyclers:
        for layer, site in r.sites.items():
            channels = flagged.get(layer)
            if not channels:
                continue
            rng = np.random.default_rng([0, step, Purpose.RECYCLE, zlib.crc32(layer.encode())])
            name, cell = site.incoming
            for attr, fresh in values(name, cell, rng).items():
                put(getattr(cell, attr).name, channel_axes(cell)[0] if attr == "weight" else 0, channels, fresh)
            for _, norm in site.norms:
                for attr, fresh in values("bn", norm, rng).items():
                    put(getattr(norm, attr).name, 0, channels, fresh)
                put(norm.moving_mean.name, 0, channels, 0.0)
                put(norm.moving_variance.name, 0, channels, 1.0)
            put(site.outgoing.weight.name, channel_axes(site.outgoing)[1], channels, 0.0)
    return before, after, mask


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["graph", "pynative"])
def test_recycling_changes_exactly_the_flagged_slices_and_the_compiled_step_sees_them(mode, trainer, config,
                                                                                      tiny_trainer):
    t = trainer(mode)
    before, expected, mask = expected_changes(t, 7, FLAGGED, dcgan_values)
    layers = ["D/act0", "D/act1", "D/act2", "G/act0", "G/act1", "G/act2"]
    assert t.recycle(7, record({layer: FLAGGED.get(layer, []) for layer in layers})) == {
        layer: FLAGGED.get(layer, []) for layer in layers}
    after = t.state_arrays()
    changed_moments = 0
    for name, value in after.items():
        np.testing.assert_array_equal(value, expected[name], err_msg=name)  # bit-identical outside the slices
        if "moment" in name and mask[name].any():
            assert np.abs(before[name][mask[name]]).max() > 0, f"{name}: the moments were zero already"
            changed_moments += 1
    assert changed_moments >= 2 * 8  # incoming weights/gamma/beta and outgoing weights of D and G
    # Incoming weights really are fresh draws (not zeros) and the outgoing slices zero.
    conv0 = after["discriminator.layers.conv0.weight"]
    assert np.abs(conv0[1]).max() > 0 and not np.array_equal(conv0[1], before["discriminator.layers.conv0.weight"][1])
    kept = np.setdiff1d(np.arange(8), FLAGGED["D/act1"])  # conv1's rows of its own recycled channels are fresh
    assert not after["discriminator.layers.conv1.weight"][kept, 1].any()
    assert not after["generator.layers.conv1.weight"][2].any()  # transposed conv: (in, out, k, k)
    # The already compiled step trains on the recycled values: the losses of a fresh trainer loaded with them,
    # not those of one loaded with the state before recycling. (A fresh PyNative trainer built after other
    # trainers ran in this process may sum in another order: 2e-7 apart was measured, hence rtol 1e-6.)
    def losses(state: dict | None) -> np.ndarray:
        net = t
        if state is not None:
            net = GANTrainer(config(*tiny_trainer, *RECYCLE, f"runtime.mode={mode}"), 3)
            net.load_state_arrays(state, "state")
        out = net.train_step(REAL, latents(0, 2, Purpose.Z, 4, 8))
        return np.array([out.loss_d, out.loss_g])
    compiled, recycled, stale = losses(None), losses(after), losses(before)
    np.testing.assert_allclose(compiled, recycled, rtol=1e-6)
    assert np.abs(compiled - stale).max() > 1e-4


@pytest.mark.slow
def test_spectral_norm_and_fused_batchnorm_layers_recycle_and_keep_u(trainer):
    """D with spectral norm (u untouched), G with fusion=bn_act (the BatchNorm lives inside the probed activation)."""
    t = trainer("pynative", "model.d_norm=spectral", "fusion=bn_act")
    assert [name for name, _ in t.recyclers[1].sites["G/act1"].norms] == ["bn1"]  # fused: the probe wraps bn<i>
    flagged = {"D/act0": [1], "D/act1": [0, 3], "G/act0": [2], "G/act2": [0, 1]}  # D: bias + act fused into conv<i>
    _, expected, mask = expected_changes(t, 9, flagged, dcgan_values)
    t.recycle(9, record(flagged))
    after = t.state_arrays()
    for name, value in after.items():
        np.testing.assert_array_equal(value, expected[name], err_msg=name)
    assert mask["generator.layers.bn0.moving_variance"][2] and after["generator.layers.bn0.moving_variance"][2] == 1.0
    assert not any(mask[name].any() for name in after if name.endswith("sn_u"))


@pytest.mark.slow
def test_recycle_returns_the_checked_layers_and_skips_layers_without_channels(trainer):
    t = trainer("pynative", "diagnostics.recycle_nets=[D]")
    before = t.state_arrays()
    done = t.recycle(3, record({"D/act0": [], "D/act2": [], "G/act0": [1]}))
    assert done == {"D/act0": [], "D/act2": []}  # G is not recycled with recycle_nets=[D]; D/act1 was not checked
    assert all(np.array_equal(v, before[k]) for k, v in t.state_arrays().items())


@pytest.mark.slow
def test_mlp_dense_layers_recycle_rows_and_columns(config, tiny_2d):
    t = GANTrainer(config(*tiny_2d, "diagnostics.recycle=true", "runtime.mode=pynative"), 2)
    points = np.random.default_rng(1).normal(size=(16, 2, 1, 1)).astype(np.float32)
    t.train_step(points, latents(0, 0, Purpose.Z, 16, 2))
    flagged = {"D/act0": [5], "D/act2": [0, 7]}
    _, expected, _ = expected_changes(t, 4, flagged, mlp_values)
    t.recycle(4, record(flagged))
    for name, value in t.state_arrays().items():
        np.testing.assert_array_equal(value, expected[name], err_msg=name)
    assert not t.state_arrays()["discriminator.layers.conv3.weight"][:, [0, 7]].any()  # D's output layer


@pytest.mark.slow
def test_draws_are_a_pure_function_of_seed_step_and_layer(trainer):
    first, second = trainer("pynative"), trainer("pynative")
    first.recycle(5, record(FLAGGED))
    second.recycle(5, record(FLAGGED))
    a, b = ({k: v.copy() for k, v in x.state_arrays().items()} for x in (first, second))
    assert all(np.array_equal(a[k], b[k]) for k in a)
    other = trainer("pynative")
    other.recycle(6, record(FLAGGED))
    assert not np.array_equal(other.state_arrays()["discriminator.layers.conv0.weight"],
                              a["discriminator.layers.conv0.weight"])
    r = first.recyclers[0]
    assert r.rng(5, "D/act0").random() != r.rng(5, "D/act1").random()


# tau=1 flags every channel at or below its layer's mean score, so a 6-step run recycles at every check.
RUN = ["model.d_norm=none", "act.d_kind=relu", "diagnostics.interval=2", "diagnostics.tau=1.0", "train.ckpt_every=2",
       "eval.enabled=false"]  # on top of conftest's TINY



@pytest.mark.slow
@pytest.mark.parametrize("mode", ["graph", "pynative"])
def test_a_recycling_run_logs_its_events_and_resumes_exactly(mode, tmp_path, tiny_overrides):
    args = tiny_overrides + RUN + [f"runtime.mode={mode}"]
    whole = run(compose_config(args + ["train.steps=6", "diagnostics.recycle=true"]), tmp_path / "whole")
    plain = run(compose_config(args + ["train.steps=6"]), tmp_path / "plain")
    run(compose_config(args + ["train.steps=4", "diagnostics.recycle=true"]), tmp_path / "part")
    resumed = run(compose_config(args + ["train.steps=6", "diagnostics.recycle=true", "train.resume=auto"]),
                  tmp_path / "part")
    losses = [(s.loss_d, s.loss_g) for s in whole.history]
    assert [(s.loss_d, s.loss_g) for s in resumed.history] == losses[4:]
    plain_losses = [(s.loss_d, s.loss_g) for s in plain.history]
    assert plain_losses[:2] == losses[:2]  # the first recycling comes after step 2: it changes step 3 on
    assert all(a != b for a, b in zip(plain_losses[2:], losses[2:]))
    records = read_jsonl(whole.run_dir / "diagnostics.jsonl")
    assert [r["step"] for r in records] == [2, 4, 6]
    for r in records:
        assert set(r["recycled"]) == {"D/act0", "D/act1", "D/act2"}
        assert all(r["recycled"][layer] == r["layers"][layer]["dormant"] for layer in r["recycled"])
    events = [e for e in read_events(whole.run_dir) if e["kind"] == "recycle"]
    assert events and all(e["detail"]["count"] == len(e["detail"]["channels"]) > 0 for e in events)
    assert {(e["step"], e["detail"]["layer"]): e["detail"]["channels"] for e in events} == {
        (r["step"], layer): ch for r in records for layer, ch in r["recycled"].items() if ch}
    part = [e for e in read_events(tmp_path / "part") if e["kind"] == "recycle"]
    assert [(e["step"], e["detail"]) for e in part] == [(e["step"], e["detail"]) for e in events]
    assert "dead channels recycled" in build_dashboard(whole.run_dir, "recycled")  # the C markers
    assert not (plain.run_dir / "events.jsonl").exists() or not [
        e for e in read_events(plain.run_dir) if e["kind"] == "recycle"]
    counts = {(e.step, v.tag): v.simple_value for e in tensorboard_events(whole.run_dir) for v in e.summary.value
              if v.tag.startswith("recycle/")}
    assert counts == {(r["step"], f"recycle/{layer}/count"): len(ch) for r in records
                      for layer, ch in r["recycled"].items()}


@pytest.mark.parametrize("override, key", [
    (["diagnostics.recycle=true", "diagnostics.enabled=false"], "diagnostics.recycle=true needs diagnostics.enabled"),
    (["diagnostics.recycle_nets=[X]"], "diagnostics.recycle_nets"),
    (["diagnostics.recycle_nets=[]"], "diagnostics.recycle_nets"),
    (["diagnostics.recycle_nets=[D,D]"], "diagnostics.recycle_nets"),
])
def test_config_rejects_bad_recycle_settings(override, key):
    with pytest.raises(ConfigError, match=key.replace("[", r"\[")):
        to_config(compose_config(override))


def test_with_recycling_the_check_interval_is_part_of_the_experiment():
    old = to_config(compose_config(["diagnostics.recycle=true"]))
    assert experiment_changes(old, to_config(compose_config(["diagnostics.recycle=true", "diagnostics.interval=50"]))) \
        == {"diagnostics.interval": [100, 50]}
    assert experiment_changes(to_config(compose_config([])),
                              to_config(compose_config(["diagnostics.interval=50"]))) == {}
    assert to_config(compose_config([])).diagnostics.recycle is False
