"""Probes on networks nobody here wrote (scripts/examples/unet.py): a pix2pix-shaped U-Net G, a two-input PatchGAN
D and a class-conditional G. Layers come in the order the forward pass reaches them (checked with forward hooks
of our own), with short display names unique within the network and at most 40 characters, the full Cell path
kept in every record, a cell used at several places said so, and the activations no probe can see listed."""
import mindspore as ms
import numpy as np
import pytest
from mindspore import Tensor
from tensorboardX import SummaryWriter

from gan.analysis.channels import MAX_NAME, DeadChannelTracker, display_names
from gan.diagnostics.probes import PROBED_CELLS, TrainingDiagnostics, attach, unprobed_activations
from ops import swap_activations
from scripts.examples.unet import ConditionalGenerator, PatchDiscriminator, UnetGenerator
from tests.helpers import tensorboard_events

RNG = np.random.default_rng(0)
IMAGES = Tensor(RNG.normal(size=(2, 3, 16, 16)).astype(np.float32))
Z, LABELS = Tensor(RNG.normal(size=(2, 8, 1, 1)).astype(np.float32)), Tensor(np.array([1, 7], np.int32))


def forward_order(net, inputs: tuple) -> tuple[list[str], dict[str, int]]:
    """The project's activation cells of `net` in the order one PyNative pass calls them, and their call counts,
    from forward hooks (independent of attach)."""
    calls: list[str] = []
    handles = [cell.register_forward_hook(lambda c, i, o, path=path: calls.append(path))
               for path, cell in net.cells_and_names() if isinstance(cell, PROBED_CELLS)]
    net.set_train(False)
    net(*inputs)
    for handle in handles:
        handle.remove()
    return list(dict.fromkeys(calls)), {p: calls.count(p) for p in calls}


def registration_order(net) -> list[str]:
    return [path for path, cell in net.cells_and_names() if isinstance(cell, PROBED_CELLS)]


@pytest.mark.parametrize("make, inputs, net, count", [
    (UnetGenerator, (IMAGES,), "G", 16),
    (PatchDiscriminator, (IMAGES, IMAGES), "D", 3),
    (ConditionalGenerator, (Z, LABELS), "G", 3)], ids=["unet", "two_input_d", "conditional_g"])
def test_probes_follow_the_forward_pass_with_short_unique_names_and_full_paths(make, inputs, net, count):
    ms.set_context(mode=ms.PYNATIVE_MODE)
    model = make()
    swap_activations(model)
    order, calls = forward_order(model, inputs)
    probes = attach(model, inputs, net)
    assert len(probes) == count and [p.path for p in probes] == order
    names = [p.layer for p in probes]
    assert len(set(names)) == len(names) and all(n.startswith(f"{net}/") and len(n) <= MAX_NAME for n in names)
    assert {p.path: p.uses for p in probes} == calls
    model.set_train(True)
    model(*inputs)
    record = DeadChannelTracker().check(1, probes)
    assert list(record["layers"]) == names  # the record, and so every viewer, keeps the forward order
    assert [v["path"] for v in record["layers"].values()] == order


def test_the_unet_is_what_the_tests_claim():
    """>= 15 activations in nested blocks, registration order not forward order, one cell called twice, a
    primitive no probe can see; its names are the collapsed paths."""
    model = UnetGenerator()
    swap_activations(model)
    order, calls = forward_order(model, (IMAGES,))
    assert len(order) >= 15 and registration_order(model) != order
    assert [p for p, n in calls.items() if n > 1] == ["model.model.1.model.5.model.5.model.5.relu"]
    assert max(p.count("model.") for p in order) >= 4  # nested 4 deep
    probes = attach(model, (IMAGES,), "G")
    by_path = {p.path: p.layer for p in probes}
    assert by_path["model.model.1.model.5.model.3"] == "G/1.5.3"
    assert by_path["model.model.1.model.5.model.5.model.5.relu"] == "G/relu"
    assert unprobed_activations(model, "G") == ["G/tanh (primitive Tanh)"]


def test_a_reused_cell_and_unprobed_activations_are_said_in_the_record_and_the_table(tmp_path):
    model = UnetGenerator()
    swap_activations(model)
    probes = attach(model, (IMAGES,), "G")
    writer = SummaryWriter(str(tmp_path / "tb"))
    diagnostics = TrainingDiagnostics(probes, DeadChannelTracker().criteria, 1, writer, tmp_path)
    model(IMAGES)
    record = diagnostics.check(1)
    writer.close()
    tags = {v.tag for e in tensorboard_events(tmp_path / "tb") for v in e.summary.value}
    assert {f"diag/{p.layer}/dead_frac" for p in probes} <= tags  # TensorBoard names layers as the page does
    assert record["layers"]["G/relu"]["uses"] == 2 and record["unprobed"] == ["G/tanh (primitive Tanh)"]
    table = diagnostics.dead_channel_table()
    assert "G/relu x2" in table and "pool the N calls" in table and "G/tanh (primitive Tanh)" in table
    rows = table.splitlines()[2:2 + len(probes)]
    assert len({len(row) for row in rows}) == 1  # aligned columns whatever the name lengths


def test_conditional_g_lists_its_unswapped_tanh_cell():
    model = ConditionalGenerator()
    swap_activations(model)
    assert unprobed_activations(model, "G") == ["G/main.10 (nn.Tanh)"]


@pytest.mark.parametrize("paths, names", [
    (["layers.act0", "layers.bn1", "layers.conv2"], ["G/act0", "G/act1", "G/act2"]),  # the project's networks
    (["main.2", "main.5"], ["G/2", "G/5"]),
    (["model.model.1.model.3.model.3.model.2", "model.model.1.model.3.model.5", "model.model.3"],
     ["G/1.3.3.2", "G/1.3.5", "G/3"]),
    (["blocks.0.relu", "blocks.1.relu", "head.relu_out"], ["G/blocks.0.relu", "G/blocks.1.relu", "G/relu_out"]),
    (["act"], ["G/act"])])
def test_display_names_collapse_repeats_drop_the_shared_start_and_keep_block_indices(paths, names):
    assert display_names(paths, "G") == names


def test_display_names_stay_unique_and_short_for_deep_paths():
    deep = ["model." + ".".join(f"stage{i}.model.{j}" for i in range(12)) + f".act{k}" for j in range(3)
            for k in range(2)]
    names = display_names(deep + ["x.act0"], "D")
    assert len(set(names)) == len(names) and max(map(len, names)) <= MAX_NAME, names
