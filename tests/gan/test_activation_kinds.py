"""act.d_kind / act.g_kind: the kinds' rows agree with ops.ACTIVATIONS; every kind trains (dry run), resumes
exactly, is probed by the diagnostics, and records its learned slopes; bad kinds and parameters fail at
composition naming the key."""
import inspect
import json

import numpy as np
import pytest
from omegaconf import OmegaConf

import ops
from gan.config.activation_kinds import ACTIVATION_KINDS
from gan.config.schema import ActConfig, ConfigError, compose_config
from gan.models.networks import Discriminator, Generator, make_activation
from ops import ELU, LeakyReLU, PReLU
from ops.activations import check_unit
from tests.helpers import tensorboard_events

ACT_KINDS = tuple(ACTIVATION_KINDS)


@pytest.mark.parametrize("kind", ACT_KINDS)
def test_each_kind_row_agrees_with_its_ops_row_and_cell(kind):
    """The MindSpore-free row repeats the op's facts (ops.ACTIVATIONS): capabilities, learnable tensor,
    randomness; its Cell exists in ops and takes the arguments the row sets, whose defaults (PyTorch's) are
    the ActConfig defaults, with the op's range check."""
    row, op = ACTIVATION_KINDS[kind], ops.ACTIVATIONS[ACTIVATION_KINDS[kind].op]
    assert (row.bn_fusable, row.second_derivative, row.learnable, row.random) == \
        (op.bn_fusable, op.second_derivative, op.learnable, op.random)
    signature = inspect.signature(getattr(ops, row.cell)).parameters
    given = [p.arg for p in row.params] + [arg for arg, _ in row.constants] + [
        arg for arg, used in (("negative_slope", row.layer_slopes), ("num_parameters", row.per_channel),
                              ("seed", row.random)) if used]
    assert set(given) <= set(signature)  # what make_activation passes
    op_params = {p.name: p for p in op.params}
    for p in row.params:
        assert getattr(ActConfig(), p.key) == signature[p.arg].default
        if p.arg in op_params:
            assert op_params[p.arg].default == signature[p.arg].default
            assert p.unit == (op_params[p.arg].check is check_unit)
    if row.learnable:  # what the diagnostics record
        assert getattr(make_activation(ActConfig(d_kind=kind), "d", 0, 0.2, 4), row.learnable).shape == (4,)


def test_factory_builds_each_kind_with_its_parameters():
    act = OmegaConf.to_object(compose_config(["act.prelu_init=0.1", "act.elu_alpha=0.5", "act.rrelu_lower=0.2",
                                              "act.rrelu_upper=0.3", "act.adaptive_init=0.4"])).act
    for kind in ACT_KINDS:
        act.d_kind = kind
        cell = make_activation(act, "d", 1, 0.2, 16)
        assert type(cell) is getattr(ops, ACTIVATION_KINDS[kind].cell)
    act.d_kind = "prelu"
    assert make_activation(act, "d", 0, 0.2, 16).weight.asnumpy().tolist() == [np.float32(0.1)] * 16
    act.d_kind = "relu"
    assert make_activation(act, "d", 0, 0.2, 16).negative_slope == 0.0


@pytest.mark.slow
@pytest.mark.parametrize("kind", ACT_KINDS)
def test_dry_run_with_every_kind_in_both_networks(kind, tmp_path, capsys, tiny_run):
    summary = tiny_run(tmp_path, "train.dry_run=true", f"act.d_kind={kind}", f"act.g_kind={kind}",
                       "train.ema_beta=0.9")
    assert summary.end_step == 2 and all(np.isfinite([s.loss_d, s.loss_g]).all() for s in summary.history)
    assert "D/act0" in capsys.readouterr().out  # the diagnostics probed D's activations
    records = [json.loads(line) for line in (tmp_path / "diagnostics.jsonl").read_text().splitlines()]
    layers = records[-1]["layers"]
    assert {"G/act0", "D/act0", "D/act1"} <= set(layers) and all(0 <= v["dead_frac"] <= 1 for v in layers.values())
    slopes = records[-1].get("slopes")
    if ACTIVATION_KINDS[kind].learnable:
        assert set(slopes) == set(layers)
        assert all(len(slopes[layer]) == layers[layer]["channels"] for layer in layers)
    else:
        assert slopes is None


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["rrelu", "prelu"])
def test_resume_is_exact(kind, tmp_path, tiny_run):
    kinds = [f"act.d_kind={kind}", f"act.g_kind={kind}"]
    whole = tiny_run(tmp_path / "whole", "train.steps=4", *kinds)
    tiny_run(tmp_path / "part", "train.steps=2", *kinds)
    resumed = tiny_run(tmp_path / "part", "train.steps=4", "train.resume=auto", *kinds)
    losses = [(s.loss_d, s.loss_g) for s in whole.history]
    assert [(s.loss_d, s.loss_g) for s in resumed.history] == losses[2:]
    assert len(set(losses)) == 4


@pytest.mark.slow
def test_rrelu_layers_draw_per_run_seed(tmp_path, tiny_run):
    kinds = ["act.d_kind=rrelu", "act.g_kind=rrelu", "train.steps=2"]
    first, other = tiny_run(tmp_path / "a", *kinds), tiny_run(tmp_path / "b", *kinds, "seed=1")
    assert first.history[0].loss_d != other.history[0].loss_d


def test_generator_learns_prelu_slopes_per_channel(config, tiny_overrides):
    act = OmegaConf.to_object(compose_config(["act.g_kind=prelu", "act.d_kind=elu"])).act
    model = config(*tiny_overrides).model
    g, d = Generator(model, act, 1, "native"), Discriminator(model, act, 1, "native")
    assert [p.shape for n, p in g.parameters_and_names() if n.endswith("act0.weight")] == [(32,)]
    assert any(isinstance(c, ELU) for _, c in d.cells_and_names())


@pytest.mark.parametrize("override, message", [
    (["act.d_kind=swish"], "act.d_kind='swish' is not allowed"),
    (["act.g_kind=elu", "fusion=bn_act"], r"fusion=bn_act fuses BatchNorm with \['leaky_relu', 'relu', 'prelu'\] "
                                          r"only, got act.g_kind='elu'"),
    (["act.rrelu_lower=0.4", "act.rrelu_upper=0.2"], "act.rrelu_lower=0.4 must be <= act.rrelu_upper=0.2"),
    (["act.rrelu_upper=1.5"], r"act.rrelu_upper=1.5 must be in \[0, 1\]"),
    (["act.elu_alpha=1e-50"], "act.elu_alpha=1e-50 cannot be represented in float32"),
    (["act.negative_slope=1e-50"], "act.negative_slope=1e-50 cannot be represented in float32"),
    (["act.clamp=1e-50"], "act.clamp=1e-50 cannot be represented in float32"),
    (["act.d_kind=prelu", "act.d_layers=[0.1,0.1,0.1]"], "act.d_layers sets per-layer LeakyReLU slopes"),
])
def test_bad_act_settings_fail_at_composition_naming_the_key(override, message):
    with pytest.raises(ConfigError, match=message):
        OmegaConf.to_object(compose_config(override))


def test_negative_slope_one_is_accepted_by_config_and_op():
    """The op and the config agree: slopes in [0, 1], 1 being the identity."""
    assert OmegaConf.to_object(compose_config(["act.negative_slope=1.0"])).act.negative_slope == 1.0
    assert LeakyReLU(1.0).negative_slope == 1.0


def test_learned_slopes_reach_jsonl_and_tensorboard_histograms(tmp_path):
    from mindspore import Tensor, nn
    from tensorboardX import SummaryWriter

    from gan.analysis.channels import Criteria
    from gan.diagnostics.probes import TrainingDiagnostics, attach
    from gan.run.files import read_jsonl

    net = nn.SequentialCell([nn.Conv2d(1, 4, 1, has_bias=True), PReLU(4, 0.3)])
    probes = attach(net, Tensor(np.ones((2, 1, 3, 3), np.float32)), "D")
    writer = SummaryWriter(str(tmp_path / "tb"))
    diag = TrainingDiagnostics(probes, Criteria(), 1, writer, tmp_path)
    net(Tensor(np.ones((2, 1, 3, 3), np.float32)))
    record = diag.check(1)
    writer.close()
    assert record["slopes"] == {"D/1": [0.3] * 4}
    assert read_jsonl(tmp_path / "diagnostics.jsonl")[-1]["slopes"] == {"D/1": [0.3] * 4}
    assert "diag_slopes/D/1" in {v.tag for e in tensorboard_events(tmp_path / "tb") for v in e.summary.value}


@pytest.mark.slow
def test_bn_act_fusion_trains_prelu_and_relu(tmp_path, tiny_run, config, tiny_overrides):
    from ops import BatchNormPReLU

    tiny_run(tmp_path, "train.dry_run=true", "fusion=bn_act", "act.d_kind=prelu", "act.g_kind=relu")
    record = [json.loads(line) for line in (tmp_path / "diagnostics.jsonl").read_text().splitlines()][-1]
    # D: act0 is a plain PReLU (no BatchNorm before it), bn1.. are fused BatchNorm + PReLU (probes named act<i>)
    assert sorted(record["slopes"]) == ["D/act0", "D/act1", "D/act2"]
    act = config(*tiny_overrides, "fusion=bn_act", "act.d_kind=prelu")
    d = Discriminator(act.model, act.act, 3, "native", "bn_act")
    assert type(dict(d.layers.name_cells())["bn1"]) is BatchNormPReLU


@pytest.mark.parametrize("net", [Generator, Discriminator])
def test_prelu_networks_name_their_parameters_alike_under_every_fusion(net, config, tiny_overrides):
    # fusion=bn_act keeps the PReLU weight as act<i>.weight (a SharedWeight beside the fused bn<i>), so a
    # checkpoint of one fusion loads into the other; the loaded network computes the same outputs.
    import mindspore as ms

    conf = config(*tiny_overrides, "act.d_kind=prelu", "act.g_kind=prelu")
    unfused, fused = (net(conf.model, conf.act, 3, "native", kind) for kind in ("none", "bn_act"))
    assert sorted((p.name, p.shape) for p in fused.get_parameters()) == \
        sorted((p.name, p.shape) for p in unfused.get_parameters())
    assert any(p.name.startswith("layers.act1.weight") for p in fused.get_parameters())
    rng = np.random.default_rng(0)
    for p in unfused.get_parameters():  # distinct per-channel slopes and BatchNorm state, not the inits
        p.set_data(ms.Tensor((rng.standard_normal(p.shape) * 0.1 + (1.0 if "variance" in p.name else 0.2))
                             .astype(np.float32)))
    arrays = {p.name: p.asnumpy() for p in unfused.get_parameters()}
    for p in fused.get_parameters():
        p.set_data(ms.Tensor(arrays[p.name]))
    x = ms.Tensor(rng.standard_normal((4, conf.model.nz, 1, 1) if net is Generator else (4, 3, 32, 32))
                  .astype(np.float32))
    for train_mode in (False, True):
        unfused.set_train(train_mode)
        fused.set_train(train_mode)
        np.testing.assert_allclose(fused(x).asnumpy(), unfused(x).asnumpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("source, target", [("none", "bn_act"), ("bn_act", "none")])
def test_prelu_checkpoints_resume_across_fusion(source, target, tmp_path, tiny_run):
    kinds = ["act.d_kind=prelu", "act.g_kind=prelu", "diagnostics.enabled=false"]
    whole = tiny_run(tmp_path / "whole", "train.steps=4", f"fusion={source}", *kinds)
    tiny_run(tmp_path / "part", "train.steps=2", f"fusion={source}", *kinds)
    resumed = tiny_run(tmp_path / "part", "train.steps=4", "train.resume=auto", f"fusion={target}",
                    "train.resume_override=true", *kinds)
    assert (resumed.start_step, resumed.end_step) == (2, 4)
    # the same network computed by the other kernels: equal up to float32 rounding order (amplified by Adam)
    np.testing.assert_allclose([(s.loss_d, s.loss_g) for s in resumed.history],
                               [(s.loss_d, s.loss_g) for s in whole.history][2:], rtol=5e-3)


def test_run_hparams_name_the_kinds_and_their_parameters(tmp_path):
    from tensorboardX import SummaryWriter

    from gan.config.schema import HPARAM_KEYS
    from gan.diagnostics.probes import log_hparams, run_hparams

    cfg = OmegaConf.to_object(compose_config(["act.d_kind=prelu", "act.g_kind=elu", "act.prelu_init=0.1",
                                              "act.elu_alpha=0.5"]))
    hparams = run_hparams(cfg)
    assert {k: hparams[k] for k in ("d_kind", "g_kind", "prelu_init", "elu_alpha")} == \
        {"d_kind": "prelu", "g_kind": "elu", "prelu_init": 0.1, "elu_alpha": 0.5}
    # every kind's parameters, used or not: the runs of a sweep must share one set of keys
    assert {"rrelu_lower", "rrelu_upper", "adaptive_init"} <= set(hparams) and set(hparams) == set(HPARAM_KEYS)
    writer = SummaryWriter(str(tmp_path / "tb"))
    log_hparams(writer, hparams, {"final/loss_d": 1.0})
    writer.close()
    content = b"".join(v.metadata.plugin_data.content for e in tensorboard_events(tmp_path / "tb")
                       for v in e.summary.value if v.tag == "_hparams_/session_start_info")
    assert all(name in content for name in (b"d_kind", b"prelu", b"g_kind", b"elu", b"prelu_init", b"elu_alpha"))
