"""gan.diagnostics.api: diagnostics in a user's own loop write the records train.py's machinery writes, in graph mode
(ms.jit twins, nn.TrainOneStepCell) and PyNative; ordinary steps run no probe; recycling on a model-zoo network."""
import mindspore as ms
import numpy as np
import pytest
from mindspore import Tensor, nn
from mindspore.train.serialization import load_param_into_net
from tensorboardX import SummaryWriter

from gan.analysis.channels import Criteria
from gan.config.schema import ActConfig, ModelConfig
from gan.diagnostics.api import Diagnostics, network_params
from gan.diagnostics.probes import TrainingDiagnostics, attach, is_diagnostic_param, set_probing
from gan.models.networks import Discriminator, Generator
from gan.run.directory import RunDirError
from gan.run.files import read_events, read_jsonl
from ops import RangeRecorder, swap_activations
from scripts.examples.model_zoo import DcganD
from tests.helpers import tensorboard_events

MODEL = ModelConfig(image_size=32, nz=8, ngf=4, ndf=4, conv_impl="native")
RNG = np.random.default_rng(3)
BATCHES = [(RNG.uniform(-1, 1, (4, 1, 32, 32)).astype(np.float32), RNG.normal(size=(4, 8, 1, 1)).astype(np.float32))
           for _ in range(4)]
PER_CHANNEL = ("neg_frac", "dormant_score", "grad_score")


def project_nets(copy_of: tuple | None = None) -> tuple[nn.Cell, nn.Cell]:
    """The project's DCGAN G and D (G. and D. name prefixes); with `copy_of`, holding that pair's weights."""
    g, d = Generator(MODEL, ActConfig(), 1, "native", "none"), Discriminator(MODEL, ActConfig(), 1, "native", "none")
    g.update_parameters_name("G."), d.update_parameters_name("D.")
    for net, source in zip((g, d), copy_of or ()):
        load_param_into_net(net, {p.name: p.clone() for p in source.get_parameters()}, strict_load=True)
    g.set_train(), d.set_train()
    return g, d


def grad_step(g: nn.Cell, d: nn.Cell):
    """A D + G forward and backward (no update: the networks stay as they are for the comparison)."""
    def loss(real, z):
        return (d(real) ** 2).mean() + d(g(z)).mean()
    return ms.value_and_grad(loss, None, g.trainable_params() + d.trainable_params())


@pytest.mark.parametrize("graph", (True, False), ids=("jit", "pynative"))
def test_user_loop_writes_the_records_of_train_pys_diagnostics(tmp_path, graph):
    ref_g, ref_d = project_nets()
    own_g, own_d = project_nets((ref_g, ref_d))
    x0, z0 = Tensor(BATCHES[0][0]), Tensor(BATCHES[0][1])
    # train.py's path: attach + TrainingDiagnostics, one jitted step per probe setting
    probes = attach(ref_g, z0, "G") + attach(ref_d, x0, "D")
    writer = SummaryWriter(str(tmp_path / "ref" / "tensorboard"))
    reference = TrainingDiagnostics(probes, Criteria(), 2, writer, tmp_path / "ref")
    fn = grad_step(ref_g, ref_d)
    twins = {False: ms.jit(fn), True: ms.jit(fn)} if graph else {False: fn, True: fn}
    diag = Diagnostics(tmp_path / "own", g=own_g, d=own_d, g_input=z0, d_input=x0, every=2)
    step = diag.step(grad_step(own_g, own_d), jit=graph)
    for i, (x, z) in enumerate(BATCHES, 1):
        set_probing(probes, reference.due(i))
        twins[reference.due(i)](Tensor(x), Tensor(z))
        if reference.due(i):
            reference.check(i)
        assert diag.is_check_step(i) == reference.due(i)
        step(Tensor(x), Tensor(z), check=diag.is_check_step(i))
        diag.record(i, loss_d=0.5, loss_g=1.0)
    writer.close()
    diag.close()
    ref, own = read_jsonl(tmp_path / "ref" / "diagnostics.jsonl"), read_jsonl(tmp_path / "own" / "diagnostics.jsonl")
    assert [r["step"] for r in own] == [r["step"] for r in ref] == [2, 4]
    for r, o in zip(ref, own):
        assert list(o["layers"]) == list(r["layers"]) == ["G/act0", "G/act1", "G/act2", "D/act0", "D/act1", "D/act2"]
        for layer, values in r["layers"].items():
            mine = o["layers"][layer]
            assert (mine["passes"], mine["grad_passes"]) == (values["passes"], values["grad_passes"]) == \
                ((1, 1) if layer[0] == "G" else (2, 2))
            for key in PER_CHANNEL:
                np.testing.assert_allclose(mine[key], values[key], rtol=1e-5, atol=1e-7, err_msg=f"{layer} {key}")
            assert (mine["dead"], mine["dormant"]) == (values["dead"], values["dormant"])
    tags = {v.tag for e in tensorboard_events(tmp_path / "own" / "tensorboard") for v in e.summary.value}
    ref_tags = {v.tag for e in tensorboard_events(tmp_path / "ref" / "tensorboard") for v in e.summary.value}
    assert ref_tags <= tags and {"loss/d", "loss/g", "diag/D/all/dead_frac"} <= tags
    assert [r["step"] for r in read_jsonl(tmp_path / "own" / "losses.jsonl")] == [1, 2, 3, 4]
    assert (tmp_path / "own" / "report.html").read_text().startswith("<!DOCTYPE html>")


def test_neg_frac_matches_the_independent_range_recorder(tmp_path):
    g, d = project_nets()
    x = Tensor(BATCHES[0][0])
    with RangeRecorder(d) as recorder:  # numpy on the hooked inputs, no probe involved
        d(x)
    probed = project_nets((g, d))[1]
    diag = Diagnostics(tmp_path, d=probed, d_input=x, every=1)
    diag.step(probed, jit=False)(x, check=True)
    record = diag.record(1)
    diag.close()
    assert len(recorder.ranges()) == len(record["layers"]) == 3
    for seen, (layer, values) in zip(recorder.ranges(), record["layers"].items()):
        assert np.mean(values["neg_frac"]) == pytest.approx((seen.negative + seen.zero) / seen.count, abs=1e-6), layer


@pytest.mark.parametrize("graph", (True, False), ids=("jit", "pynative"))
def test_ordinary_steps_run_no_probe_and_check_steps_do(tmp_path, graph):
    g, d = project_nets()
    x, z = Tensor(BATCHES[0][0]), Tensor(BATCHES[0][1])
    diag = Diagnostics(tmp_path, g=g, d=d, g_input=z, d_input=x, every=3)
    step = diag.step(grad_step(g, d), jit=graph)
    for i in (1, 2):
        step(x, z, check=diag.is_check_step(i))
        assert diag.record(i) is None
        assert all(p.diag_passes.asnumpy().tolist() == [0, 0] for p in diag.probes)
    step(x, z, check=True)
    assert not any(p.enabled for p in diag.probes)  # off again: PyNative calls outside the steps are not counted
    g(z)
    assert {tuple(p.diag_passes.asnumpy().tolist()) for p in diag.probes} == {(1, 1), (2, 2)}
    assert diag.record(3)["step"] == 3
    step(x, z, check=False)  # a check step run with the plain twin is an error, not an empty record
    with pytest.raises(RuntimeError, match=r"check=diag.is_check_step\(6\)"):
        diag.record(6)
    diag.close()
    assert not any(is_diagnostic_param(p["name"]) for p in network_params(d))


def test_train_one_step_cell_in_graph_mode(tmp_path):
    d = project_nets()[1]
    x = Tensor(BATCHES[0][0])
    diag = Diagnostics(tmp_path, d=d, d_input=x, every=2)
    optimizer = nn.Adam(d.trainable_params(), 1e-3)
    loss = nn.WithLossCell(d, nn.MSELoss())
    target = Tensor(np.zeros(4, np.float32))
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        step = diag.step(make=lambda: nn.TrainOneStepCell(loss, optimizer))
        step(x, target, check=False)
        assert all(p.diag_passes.asnumpy().tolist() == [0, 0] for p in diag.probes)
        step(x, target, check=True)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    record = diag.record(2)
    assert {(v["passes"], v["grad_passes"]) for v in record["layers"].values()} == {(1, 1)}
    diag.close()


def test_recycling_a_model_zoo_discriminator(tmp_path):
    d = DcganD(16, 1, 8)
    swap_activations(d)
    with pytest.raises(ValueError):  # not swapped: nothing to probe
        Diagnostics(tmp_path / "a", d=DcganD(16, 1, 8), d_input=Tensor(np.zeros((2, 1, 16, 16), np.float32)))
    first_conv = d.main[0]
    weight = first_conv.weight.asnumpy().copy()
    weight[3] = 0.0  # channel 3 of the first activation is silent: dormant
    first_conv.weight.set_data(Tensor(weight))
    optimizer = nn.Adam(d.trainable_params(), 1e-3)
    x = Tensor(RNG.uniform(-1, 1, (4, 1, 16, 16)).astype(np.float32))
    diag = Diagnostics(tmp_path / "run", d=d, d_input=x, every=1, recycle={"D": optimizer}, seed=5)
    step = diag.step(lambda t: d(t).sum(), jit=False)
    step(x, check=True)
    record = diag.record(1)
    layer = next(iter(record["layers"]))
    assert 3 in record["layers"][layer]["dormant"] and 3 in record["recycled"][layer]
    assert np.abs(first_conv.weight.asnumpy()[3]).sum() > 0  # re-initialised
    diag.close()
    assert [e["detail"]["layer"] for e in read_events(tmp_path / "run") if e["kind"] == "recycle"] == [layer]


def test_bad_input_is_refused_with_the_reason(tmp_path):
    g, d = project_nets()
    z = Tensor(BATCHES[0][1])
    with pytest.raises(ValueError, match="g=..., d=..."):
        Diagnostics(tmp_path / "x")
    with pytest.raises(ValueError, match="g_input"):
        Diagnostics(tmp_path / "x", g=g)
    with pytest.raises(ValueError, match=r"\['X'\] is not a probed network"):
        Diagnostics(tmp_path / "x", g=g, g_input=z, recycle={"X": None})
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "losses.jsonl").write_text('{"step": 1}\n')
    with pytest.raises(RunDirError, match="already holds the files of another run"):
        Diagnostics(tmp_path / "used", g=project_nets()[0], g_input=z)
    diag = Diagnostics(tmp_path / "ok", g=project_nets()[0], g_input=z, every=2)
    with pytest.raises(ValueError, match="not both"):
        diag.step(lambda: None, make=lambda: None)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        with pytest.raises(ValueError, match="context is GRAPH_MODE"):
            diag.step(lambda: None, jit=False)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    with pytest.raises(ValueError, match="steps count from 1"):
        diag.record(0)
    diag.close()
    with pytest.raises(RuntimeError, match="after close"):
        diag.record(1)


def test_record_refuses_steps_out_of_order_and_a_failed_call_is_not_the_last_step(tmp_path):
    """Issue 51, L13: steps 5, 3, 3 wrote losses.jsonl backwards; a record() that raised (a check step without a
    probed pass) still became status.json's step."""
    import json

    diag = Diagnostics(tmp_path / "run", g=project_nets()[0], g_input=Tensor(BATCHES[0][1]), every=2)
    diag.record(5, loss_d=1.0, loss_g=1.0)
    for step in (3, 5):
        with pytest.raises(ValueError, match=f"step={step} is not allowed: step 5 was recorded already"):
            diag.record(step, loss_d=1.0, loss_g=1.0)
    with pytest.raises(RuntimeError, match="no probed pass ran"):
        diag.record(10**12)  # a check step (every 2) without a probed pass
    diag.record(7, loss_d=1.0, loss_g=1.0)
    diag.close()
    assert [r["step"] for r in read_jsonl(tmp_path / "run" / "losses.jsonl")] == [5, 7]
    assert json.loads((tmp_path / "run" / "status.json").read_text())["step"] == 7
