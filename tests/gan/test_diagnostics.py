"""Dead-channel diagnostics: probes in graph and PyNative mode against numpy, the tracker, TensorBoard output,
the trainer wiring (probed twin steps at check steps only)."""
import json

import mindspore as ms
import numpy as np
import pytest
from mindspore import Tensor, nn
from tensorboardX import SummaryWriter

from gan.analysis.channels import Criteria, DeadChannelTracker, Histogram, LayerStats
from gan.config.schema import ActConfig, ConfigError, ModelConfig, compose_config, to_config
from gan.core.streams import Purpose, latents
from gan.diagnostics.probes import (
    DiagnosticsLogger,
    ProbedActivation,
    TrainingDiagnostics,
    attach,
    final_metrics,
    is_diagnostic_param,
    log_hparams,
    set_probing,
)
from gan.models.networks import Discriminator, Generator
from gan.run.files import read_jsonl
from gan.training.loop import EMA, GANTrainer
from ops import BatchNormAct, LeakyReLU
from tests.helpers import tensorboard_events

RNG = np.random.default_rng(0)
W = RNG.normal(size=(4, 3)).astype(np.float32)
# Channel 0 is forced dead (large negative bias), 1 and 3 are healthy, 2 is always positive.
B = np.array([-20.0, 0.0, 20.0, 0.0], np.float32)
X = RNG.normal(size=(2, 3, 5, 5)).astype(np.float32)
# dL/dy of the loss sum(y * T); channel 3 receives a gradient 1e4 times smaller than the others.
T = (RNG.normal(size=(2, 4, 5, 5)) * np.array([1, 1, 1, 1e-4])[None, :, None, None]).astype(np.float32)


class Synthetic(nn.Cell):
    """1x1 conv with a per-channel bias, then the project's LeakyReLU."""

    def __init__(self, slope: float) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 1, has_bias=True, weight_init=Tensor(W[:, :, None, None]),
                              bias_init=Tensor(B))
        self.act = LeakyReLU(slope)

    def construct(self, x):
        return self.act(self.conv(x))


class TargetLoss(nn.Cell):
    """sum(net(x) * T), so dL/dy = T exactly."""

    def __init__(self, net: nn.Cell) -> None:
        super().__init__()
        self.net = net
        self.target = Tensor(T)

    def construct(self, x):
        return (self.net(x) * self.target).sum()


def run_step(slope: float, graph: bool, repeats: int = 1) -> dict:
    """Attach to a fresh Synthetic net, run forward+backward `repeats` times, return the check record."""
    net = Synthetic(slope)
    probes = attach(net, Tensor(X), "S")
    grad_fn = ms.value_and_grad(TargetLoss(net), None, net.trainable_params())
    step = ms.jit(grad_fn) if graph else grad_fn
    for _ in range(repeats):
        step(Tensor(X))
    return DeadChannelTracker().check(10, probes)["layers"]["S/act"]


def numpy_stats(slope: float) -> dict:
    """The expected per-channel statistics, computed with numpy."""
    pre = np.einsum("ci,nihw->nchw", W, X) + B[None, :, None, None]
    y = np.where(pre > 0, pre, slope * pre)
    out_abs, grad_abs = np.abs(y).mean((0, 2, 3)), np.abs(T).mean((0, 2, 3))
    return {"neg_frac": (pre <= 0).mean((0, 2, 3)), "dormant_score": out_abs / out_abs.mean(),
            "grad_score": grad_abs / grad_abs.mean()}


@pytest.mark.parametrize("graph", [True, False], ids=["graph", "pynative"])
def test_forced_dead_channel_is_flagged_and_stats_match_numpy(graph):
    layer = run_step(0.2, graph)
    expected = numpy_stats(0.2)
    for key, values in expected.items():
        np.testing.assert_allclose(layer[key], values, rtol=1e-5, atol=1e-7, err_msg=key)
    assert layer["dead"] == [0]  # the forced-dead channel, not the healthy ones
    assert layer["dead_frac"] == 0.25
    assert layer["grad_dead_frac"] == 0.25 and layer["grad_score"][3] < 0.025
    assert layer["dormant_frac"] == 0.0  # slope 0.2 keeps the dead channel's output away from zero
    assert (layer["passes"], layer["grad_passes"]) == (1, 1)
    assert layer["hist"]["preact"]["num"] == X.shape[0] * 4 * 25
    assert layer["hist"]["grad"]["num"] == T.size
    assert layer["hist"]["preact"]["min"] < -15 and layer["hist"]["preact"]["max"] > 15


def test_graph_and_pynative_give_the_same_record():
    graph, pynative = run_step(0.0, True), run_step(0.0, False)
    assert graph.keys() == pynative.keys()
    for key in ("neg_frac", "dormant_score", "grad_score"):
        np.testing.assert_allclose(graph[key], pynative[key], rtol=1e-6, err_msg=key)
    for key in ("dead", "dead_frac", "dormant_frac", "grad_dead_frac", "passes", "grad_passes"):
        assert graph[key] == pynative[key], key
    assert graph["hist"]["preact"]["bucket_counts"] == pynative["hist"]["preact"]["bucket_counts"]
    assert graph["hist"]["grad"]["bucket_counts"] == pynative["hist"]["grad"]["bucket_counts"]


def test_relu_dead_channel_is_also_dormant_and_repeated_passes_average():
    layer = run_step(0.0, True, repeats=3)
    assert layer["dormant_frac"] == 0.25 and layer["dormant_score"][0] == 0.0
    assert (layer["passes"], layer["grad_passes"]) == (3, 3)
    np.testing.assert_allclose(layer["neg_frac"], numpy_stats(0.0)["neg_frac"], rtol=1e-5)


def test_check_resets_the_accumulators():
    net = Synthetic(0.2)
    probes = attach(net, Tensor(X), "S")
    net(Tensor(X))
    tracker = DeadChannelTracker()
    assert tracker.check(1, probes)["layers"]["S/act"]["passes"] == 1
    assert tracker.check(2, probes)["layers"] == {}  # no pass since the previous check


@pytest.mark.parametrize("fusion", ("none", "bn_act"))
def test_attach_to_dcgan_names_layers_and_keeps_probe_params_out_of_training(fusion):
    model = ModelConfig(image_size=32, nz=8, ngf=4, ndf=4, conv_impl="native")
    g, d = Generator(model, ActConfig(), 1, "native", fusion), Discriminator(model, ActConfig(), 1, "native", fusion)
    params_before = [p.name for net in (g, d) for p in net.get_parameters()]
    probes = attach(g, Tensor(np.zeros((2, 8, 1, 1), np.float32)), "G")
    probes += attach(d, Tensor(np.zeros((2, 1, 32, 32), np.float32)), "D")
    layers = ["G/act0", "G/act1", "G/act2", "D/act0", "D/act1", "D/act2"]  # act<i> whatever the fusion
    assert [(p.layer, p.channels) for p in probes] == list(zip(layers, [16, 8, 4, 4, 8, 16]))
    names = [p.name for net in (g, d) for p in net.get_parameters() if is_diagnostic_param(p.name)]
    assert len(names) == len(set(names)) == 6 * 10
    # The layers' own parameters keep their names (checkpoints load with diagnostics on or off).
    assert [p.name for net in (g, d) for p in net.get_parameters() if not is_diagnostic_param(p.name)] == params_before
    assert not any(is_diagnostic_param(p.name) for p in d.trainable_params())
    assert isinstance(g.layers[1 if fusion == "bn_act" else 2], ProbedActivation)  # replaced inside the SequentialCell
    g.update_parameters_name("generator.")  # what the trainer does: the helper still recognises them
    assert sum(is_diagnostic_param(p.name) for p in g.get_parameters()) == 30
    assert g(Tensor(np.zeros((2, 8, 1, 1), np.float32))).shape == (2, 1, 32, 32)


def test_attach_rejects_bad_input():
    with pytest.raises(ValueError, match="no ops.LeakyReLU"):
        attach(nn.SequentialCell([nn.ReLU()]), Tensor(X), "S")
    with pytest.raises(ValueError, match="name='G/x'"):
        attach(Synthetic(0.2), Tensor(X), "G/x")
    net = Synthetic(0.2)
    attach(net, Tensor(X), "S")
    with pytest.raises(ValueError, match="already attached"):
        attach(net, Tensor(X), "S")


def stats(neg_frac, out_abs=None, grad_abs=None) -> LayerStats:
    """Host-side LayerStats for tracker tests."""
    neg_frac = np.asarray(neg_frac, np.float64)
    out_abs = np.ones_like(neg_frac) if out_abs is None else np.asarray(out_abs, np.float64)
    return LayerStats(neg_frac, out_abs, grad_abs, 1, 0 if grad_abs is None else 1, None, None)


def test_persistently_dead_needs_k_consecutive_checks_and_still_dead_share():
    tracker = DeadChannelTracker(Criteria(persist_checks=2))
    first = tracker.update(1, {"D/a": stats([1.0, 1.0, 0.5, 0.995])})["layers"]["D/a"]
    assert first["dead"] == [0, 1, 3] and first["persistent"] == [] and first["still_dead_frac"] is None
    second = tracker.update(2, {"D/a": stats([1.0, 0.2, 1.0, 0.999])})["layers"]["D/a"]
    assert second["persistent"] == [0, 3] and second["persistent_frac"] == 0.5
    assert second["still_dead_frac"] == pytest.approx(2 / 3)  # 0 and 3 of the previously dead 0, 1, 3
    assert second["grad_dead_frac"] is None and second["grad_score"] is None


def test_tracker_state_round_trips_through_json():
    straight, first = DeadChannelTracker(Criteria(persist_checks=3)), DeadChannelTracker(Criteria(persist_checks=3))
    batches = [[1.0, 0.0], [1.0, 1.0], [1.0, 1.0]]
    for step, neg in enumerate(batches[:2]):
        straight.update(step, {"G/a": stats(neg)})
        first.update(step, {"G/a": stats(neg)})
    resumed = DeadChannelTracker(Criteria(persist_checks=3))
    resumed.load_state_dict(json.loads(json.dumps(first.state_dict())))
    assert resumed.update(2, {"G/a": stats(batches[2])}) == straight.update(2, {"G/a": stats(batches[2])})
    bad = DeadChannelTracker()
    bad.load_state_dict(first.state_dict())
    with pytest.raises(ValueError, match="has 3 channels"):
        bad.update(3, {"G/a": stats([1.0, 1.0, 1.0])})


def test_dormant_and_grad_scores_are_redo_normalised():
    record = DeadChannelTracker(Criteria(tau=0.1, tau_grad=0.1)).update(
        0, {"G/a": stats([0.0] * 4, out_abs=[1.0, 1.0, 1.0, 0.01], grad_abs=np.array([0.0, 1.0, 1.0, 1.0]))})
    layer = record["layers"]["G/a"]
    assert layer["dormant_score"][3] == pytest.approx(0.01 / 0.7525, rel=1e-5)
    assert layer["dormant_frac"] == 0.25 and layer["grad_dead_frac"] == 0.25


@pytest.mark.parametrize("kwargs, message", [
    ({"tau": -0.1}, "diagnostics.tau=-0.1"), ({"dead_neg_frac": 1.5}, "diagnostics.dead_neg_frac=1.5"),
    ({"persist_checks": 0}, "diagnostics.persist_checks=0"), ({"tau_grad": "x"}, "diagnostics.tau_grad='x'")])
def test_criteria_reject_bad_values(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Criteria(**kwargs)


def test_criteria_from_config_takes_matching_fields():
    class Cfg:
        enabled, interval, tau, persist_checks = True, 100, 0.1, 5
    assert Criteria.from_config(Cfg()) == Criteria(tau=0.1, persist_checks=5)



def test_logger_writes_tensorboard_and_jsonl_and_resumes_heatmap(tmp_path):
    net = Synthetic(0.2)
    probes = attach(net, Tensor(X), "S")
    grad_fn = ms.value_and_grad(TargetLoss(net), None, net.trainable_params())
    tracker = DeadChannelTracker()
    writer = SummaryWriter(str(tmp_path / "tb"))
    logger = DiagnosticsLogger(writer, tmp_path)
    for step in (100, 200):
        grad_fn(Tensor(X))
        logger.log(tracker.check(step, probes))
    log_hparams(writer, {"slope": 0.2, "precision": "fp32"},
                final_metrics(read_jsonl(tmp_path / "diagnostics.jsonl")[-1]))
    writer.close()
    records = read_jsonl(tmp_path / "diagnostics.jsonl")
    assert [r["step"] for r in records] == [100, 200]
    values = [v for e in tensorboard_events(tmp_path / "tb") for v in e.summary.value]
    tags = {v.tag for v in values}
    assert {"diag/S/act/dead_frac", "diag/S/all/dead_frac", "diag_hist/S/act/preact", "diag_hist/S/act/grad",
            "diag_heatmap/S/act", "custom_scalars__config__", "_hparams_/session_start_info"} <= tags
    heatmaps = [v.image for v in values if v.tag == "diag_heatmap/S/act"]
    assert (heatmaps[-1].width, heatmaps[-1].height) == (2 * 8, 4 * 8)  # 2 checks x 4 channels, 8 px cells
    resumed = DiagnosticsLogger(SummaryWriter(str(tmp_path / "tb2")), tmp_path)  # continues from the records on disk
    grad_fn(Tensor(X))
    resumed.log(tracker.check(300, probes))
    resumed.writer.close()
    heatmaps = [v.image for e in tensorboard_events(tmp_path / "tb2") for v in e.summary.value
                if v.tag == "diag_heatmap/S/act"]
    assert [(h.width, h.height) for h in heatmaps] == [(3 * 8, 4 * 8)]  # checks 100, 200 and 300


def test_log_hparams_rejects_non_scalar_values(tmp_path):
    writer = SummaryWriter(str(tmp_path))
    with pytest.raises(TypeError, match="layers"):
        log_hparams(writer, {"layers": [0.2, 0.1]}, {})
    with pytest.raises(ValueError, match="nan"):
        log_hparams(writer, {"slope": 0.2}, {"final/G_dead_frac": float("nan")})
    writer.close()


def test_graph_mode_accumulates_again_after_a_check():
    """The reset is in place: a compiled graph keeps writing to the probes after the first check."""
    net = Synthetic(0.2)
    probes = attach(net, Tensor(X), "S")
    step = ms.jit(ms.value_and_grad(TargetLoss(net), None, net.trainable_params()))
    tracker = DeadChannelTracker()
    records = []
    for check in (1, 2):
        step(Tensor(X))
        records.append(tracker.check(check, probes)["layers"]["S/act"])
    assert records[1]["passes"] == records[1]["grad_passes"] == 1
    assert records[1]["neg_frac"] == records[0]["neg_frac"]


def test_probes_switched_off_compile_out_of_one_jitted_step_and_into_its_twin():
    net = Synthetic(0.2)
    probes = attach(net, Tensor(X), "S")
    plain, probed = (ms.jit(ms.value_and_grad(TargetLoss(net), None, net.trainable_params())) for _ in range(2))
    passes = probes[0].diag_passes
    for enabled, step, expected in ((False, plain, [0, 0]), (True, probed, [1, 1]), (False, plain, [1, 1]),
                                    (True, probed, [2, 2])):
        set_probing(probes, enabled)
        step(Tensor(X))
        assert passes.asnumpy().tolist() == expected, (enabled, expected)
    set_probing(probes, False)
    net(Tensor(X))  # PyNative reads the flag on every call
    assert passes.asnumpy().tolist() == [2, 2]


class SyntheticBN(nn.Cell):
    """1x1 conv, then the fused BatchNorm + LeakyReLU; beta forces channel 0 dead and channel 2 alive."""

    def __init__(self, slope: float) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 1, weight_init=Tensor(W[:, :, None, None]))
        self.bn = BatchNormAct(4, slope)
        self.bn.beta.set_data(Tensor(np.array([-20.0, 0.0, 20.0, 0.5], np.float32)))

    def construct(self, x):
        return self.bn(self.conv(x))


@pytest.mark.parametrize("graph", [True, False], ids=["graph", "pynative"])
def test_fused_batchnorm_act_is_probed_on_its_normalised_preactivation(graph):
    net = SyntheticBN(0.2)
    net.set_train(True)
    probes = attach(net, Tensor(X), "F")
    assert [(p.layer, p.channels) for p in probes] == [("F/bn", 4)]
    step = ms.value_and_grad(TargetLoss(net), None, net.trainable_params())
    (ms.jit(step) if graph else step)(Tensor(X))
    layer = DeadChannelTracker().check(1, probes)["layers"]["F/bn"]
    conv = np.einsum("ci,nihw->nchw", W, X)
    mean, var = conv.mean((0, 2, 3), keepdims=True), conv.var((0, 2, 3), keepdims=True)
    pre = (conv - mean) / np.sqrt(var + 1e-5) + np.array([-20.0, 0.0, 20.0, 0.5])[None, :, None, None]
    np.testing.assert_allclose(layer["neg_frac"], (pre <= 0).mean((0, 2, 3)), atol=1e-7)
    assert layer["dead"] == [0] and layer["grad_passes"] == 1
    np.testing.assert_allclose(layer["grad_score"], numpy_stats(0.2)["grad_score"], rtol=1e-5)


def test_training_diagnostics_schedule_and_hparams(tmp_path):
    net = Synthetic(0.0)
    probes = attach(net, Tensor(X), "S")
    writer = SummaryWriter(str(tmp_path / "tb"))
    diagnostics = TrainingDiagnostics(probes, Criteria(), 50, writer, tmp_path)
    assert [s for s in range(1, 201) if diagnostics.due(s)] == [50, 100, 150, 200]
    assert diagnostics.final_metrics() == {}
    net(Tensor(X))
    diagnostics.check(50)
    assert diagnostics.final_metrics()["final/S_dead_frac"] == 0.25
    diagnostics.log_hparams({"slope": 0.0}, {"final/loss_d": float("nan"), "final/loss_g": 1.5})
    writer.close()
    assert [r["step"] for r in read_jsonl(tmp_path / "diagnostics.jsonl")] == [50]
    off = TrainingDiagnostics([], Criteria(), 50, None, tmp_path)
    assert not any(off.due(s) for s in range(1, 201))
    with pytest.raises(ValueError, match="diagnostics.interval=0"):
        TrainingDiagnostics(probes, Criteria(), 0, None, tmp_path)


@pytest.mark.parametrize("override, key", [("diagnostics.tau=1.5", "diagnostics.tau=1.5"),
                                           ("diagnostics.persist_checks=0", "diagnostics.persist_checks=0")])
def test_diagnostics_config_rejects_bad_thresholds(override, key):
    with pytest.raises(ConfigError, match=key):
        to_config(compose_config([override]))


@pytest.fixture(scope="module")
def trainer_record(config, tiny_trainer):
    """trainer_record(*overrides): one plain and one probed step of a tiny GANTrainer; the record of the check after
    them, and the trainer."""
    def record(*overrides: str) -> tuple[dict, GANTrainer]:
        trainer = GANTrainer(config(*tiny_trainer, *overrides), 3)
        real = np.random.default_rng(1).uniform(-1, 1, (4, 3, 32, 32)).astype(np.float32)
        trainer.train_step(real, latents(0, 0, Purpose.Z, 4, 8))
        assert all(p.diag_passes.asnumpy().tolist() == [0, 0] for p in trainer.probes)  # plain step: no probe work
        trainer.train_step(real, latents(0, 1, Purpose.Z, 4, 8), probe=True)
        return DeadChannelTracker().check(2, trainer.probes), trainer

    return record


@pytest.mark.slow
def test_trainer_probes_check_steps_only_and_graph_equals_pynative(trainer_record, config, tiny_trainer):
    graph, _ = trainer_record("runtime.mode=graph")
    pynative, trainer = trainer_record("runtime.mode=pynative", "train.ema_beta=0.9")  # EMA leaves G untouched
    assert list(graph["layers"]) == ["G/act0", "G/act1", "G/act2", "D/act0", "D/act1", "D/act2"]
    for layer, values in graph["layers"].items():
        # G runs once per iteration (its forward is shared by the D and G updates); D on real + fake, then on
        # the fake again for G's loss.
        assert (values["passes"], values["grad_passes"]) == ((1, 1) if layer[0] == "G" else (3, 3))
        for key in ("neg_frac", "dormant_score", "grad_score"):
            np.testing.assert_allclose(values[key], pynative["layers"][layer][key], rtol=1e-4, atol=1e-6,
                                       err_msg=f"{layer} {key}")
    assert not any(is_diagnostic_param(name) for name in trainer.state_arrays())
    ema = EMA(trainer.g, trainer.g_ema, 0.9)  # pairs each G parameter with its EMA copy, probes left out
    assert [p.name.split(".", 1)[1] for p in ema.source] == [p.name.split(".", 1)[1] for p in ema.target]
    with pytest.raises(ValueError, match="diagnostics.enabled=true"):
        GANTrainer(config(*tiny_trainer, "diagnostics.enabled=false"), 3).train_step(
            np.zeros((4, 3, 32, 32), np.float32), latents(0, 0, Purpose.Z, 4, 8), probe=True)


@pytest.mark.slow
def test_trainer_probes_the_2d_mlps(config, tiny_2d):
    """experiment=ring8 trains with diagnostics on: D's probes are attached on (N, 2, 1, 1) points, not image-sized
    input."""
    trainer = GANTrainer(config(*tiny_2d), 2)
    points = np.random.default_rng(1).normal(size=(16, 2, 1, 1)).astype(np.float32)
    trainer.train_step(points, latents(0, 0, Purpose.Z, 16, 2), probe=True)
    record = DeadChannelTracker().check(1, trainer.probes)
    assert list(record["layers"]) == [*(f"G/act{i}" for i in range(4)), *(f"D/act{i}" for i in range(3))]
    assert {name: values["channels"] for name, values in record["layers"].items()} == dict.fromkeys(record["layers"], 8)


@pytest.mark.slow
@pytest.mark.parametrize("fusion", ["none", "bn_act"])
def test_fp16_check_steps_record_statistics_in_float32(fusion, trainer_record):
    """precision=fp16 (amp O2) with the probes on: the check step compiles and its statistics agree with fp32's
    (amp wraps BatchNorm cells, the fused BatchNormAct too, and would cast the probes' sums to float16)."""
    fp32, _ = trainer_record(f"fusion={fusion}")
    fp16, trainer = trainer_record(f"fusion={fusion}", "precision=fp16", "precision.loss_scale=1024")
    assert list(fp16["layers"]) == list(fp32["layers"])
    for layer, values in fp16["layers"].items():
        assert (values["passes"], values["grad_passes"]) == ((1, 1) if layer[0] == "G" else (3, 3))
        # float16 activations: the shares of negative inputs agree to a few samples per channel
        np.testing.assert_allclose(values["neg_frac"], fp32["layers"][layer]["neg_frac"], atol=0.05, err_msg=layer)
    assert all(p.diag_preact_sums.dtype == ms.float32 for p in trainer.probes)


def test_histogram_of_non_finite_sums_or_counts_is_none():
    """A check step whose statistics overflowed (e.g. float16) records no histogram: JSON holds no inf."""
    counts, extremes, sums = np.zeros(8), np.array([-0.5, 1.0]), np.array([2.0, 3.0])
    counts[2] = 4.0
    assert Histogram.from_sums(counts, extremes, sums).num == 4.0
    for bad in ("counts", "extremes", "sums"):
        arrays = {"counts": counts.copy(), "extremes": extremes.copy(), "sums": sums.copy()}
        arrays[bad][0] = np.inf
        assert Histogram.from_sums(**arrays) is None, bad


def test_probes_of_a_channels_last_batchnorm_act_count_its_last_axis():
    """A BatchNormAct built with layout="NHWC" keeps its channels last: its probe reads them there, and its
    statistics are those of the NCHW layer on the same values."""
    rng = np.random.default_rng(5)
    x = rng.normal(0.3, 1.0, (4, 6, 5, 3)).astype(np.float32)
    dy = rng.normal(size=x.shape).astype(np.float32)
    stats = []
    for layout, move in (("NCHW", lambda a: a), ("NHWC", lambda a: np.ascontiguousarray(a.transpose(0, 2, 3, 1)))):
        net = nn.SequentialCell([BatchNormAct(6, 0.2, layout=layout)])
        net.set_train(True)
        (probe,) = attach(net, Tensor(move(x)), "D")
        ms.grad(lambda t: (net(t) * Tensor(move(dy))).sum())(Tensor(move(x)))
        stats.append(probe.collect())
    assert stats[1].neg_frac.shape == (6,)
    for field in ("neg_frac", "out_abs", "grad_abs"):
        np.testing.assert_allclose(getattr(stats[1], field), getattr(stats[0], field), rtol=1e-5, atol=1e-6)
