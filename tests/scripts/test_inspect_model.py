"""scripts/inspect_model.py: a snapshot's report and dashboard from a factory, its checkpoints and a folder of
images; each bad input (factory, checkpoint, data folder) is a clear error with exit status 2."""
import json
from pathlib import Path

import mindspore as ms
import numpy as np
import pytest
from PIL import Image

from gan.analysis.runs import load_run
from gan.diagnostics.api import network_params
from gan.run.files import read_jsonl
from scripts.examples.model_zoo import DcganG
from scripts.examples.own_loop import build
from scripts.inspect_model import main
from tests.helpers import run_script

FACTORY = "scripts.examples.own_loop:build"


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory) -> dict[str, Path]:
    """Checkpoints of the example's G and D (as its factory builds them) and a folder of 12 grey images."""
    root = tmp_path_factory.mktemp("snapshot")
    g, d = build(0)
    ms.save_checkpoint(network_params(g), str(root / "g.ckpt"))
    ms.save_checkpoint(network_params(d), str(root / "d.ckpt"))
    images = root / "images" / "nested"
    images.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for i in range(12):
        Image.fromarray(rng.integers(0, 256, (20, 24), np.uint8)).save(images / f"{i}.png")
    (root / "empty").mkdir()
    (root / "empty" / "notes.txt").write_text("no images here")
    return {"g": root / "g.ckpt", "d": root / "d.ckpt", "data": root / "images", "empty": root / "empty"}


def args(snapshot, out: Path, **change) -> list[str]:
    """CLI arguments for the snapshot, with `change` replacing options (factory=: the factory)."""
    factory = change.pop("factory", FACTORY)
    options = {"--g-ckpt": snapshot["g"], "--d-ckpt": snapshot["d"], "--data": snapshot["data"], "--out": out,
               "--nz": 16, "--batches": 2, "--batch-size": 8} | {f"--{k.replace('_', '-')}": v
                                                                for k, v in change.items()}
    return [factory] + [str(x) for k, v in options.items() if v is not None for x in (k, v)]


@pytest.mark.slow
def test_inspects_a_checkpoint_it_wrote(snapshot, tmp_path):
    done = run_script("scripts/inspect_model.py", *args(snapshot, tmp_path / "out"))
    assert done.returncode == 0, done.stderr[-3000:]
    out = tmp_path / "out"
    assert "G: loaded 11 arrays" in done.stdout and "grad-dead" in done.stdout and "negative" in done.stdout
    record, = read_jsonl(out / "diagnostics.jsonl")
    assert list(record["layers"]) == ["G/2", "G/5", "D/1", "D/4"]
    # 2 batches: G runs for D's fake batch and again for G's loss; D on real, fake, and fake again
    assert {k: (v["passes"], v["grad_passes"]) for k, v in record["layers"].items()} == {
        "G/2": (4, 2), "G/5": (4, 2), "D/1": (6, 6), "D/4": (6, 6)}
    ranges = json.loads((out / "ranges.json").read_text())
    assert [r["path"] for r in ranges["D"]] == ["main.1", "main.4"]
    assert [r["path"] for r in ranges["G"]] == ["main.2", "main.5", "main.7"]  # the final Tanh too
    for net, calls in (("G", 2), ("D", 4)):  # G on each batch's latents, D on its real and fake images
        for r in ranges[net]:
            assert r["calls"] == calls and 0 < r["negative_share"] < 1 and r["overflows_float16"] is False, r
    run = load_run(out)
    assert run.diagnostics and run.losses and run.sample is not None
    assert (out / "report.html").read_text().startswith("<!DOCTYPE html>")


@pytest.mark.parametrize("factory, message", [
    ("no_such_module_xyz:build", "cannot import module 'no_such_module_xyz' of factory 'no_such_module_xyz:build' "
                                 "(function 'build'): ModuleNotFoundError"),
    ("scripts.examples.own_loop:no_such_function", "has no function 'no_such_function'"),
    ("scripts.examples.own_loop", "is not module:function"),
    ("scripts.examples.own_loop:discs", "factory 'scripts.examples.own_loop:discs' failed: TypeError")])
def test_a_factory_that_fails_is_named(snapshot, tmp_path, capsys, factory, message):
    assert main(args(snapshot, tmp_path / "out", factory=factory)) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_checkpoint_that_does_not_match_names_keys_and_shapes(snapshot, tmp_path, capsys):
    assert main(args(snapshot, tmp_path / "a", g_ckpt=snapshot["d"])) == 2
    err = capsys.readouterr().err
    assert "does not match G (DcganG)" in err and "missing keys [G.main.0.weight" in err
    assert "unexpected keys [D.main.0.weight" in err
    narrow = DcganG(16, 16, 1, 4)  # half the width: the same keys, other shapes
    narrow.update_parameters_name("G.")
    ms.save_checkpoint(network_params(narrow), str(tmp_path / "narrow.ckpt"))
    assert main(args(snapshot, tmp_path / "b", g_ckpt=tmp_path / "narrow.ckpt")) == 2
    assert "shape mismatches: [G.main.0.weight: checkpoint [16, 8, 4, 4], network [16, 16, 4, 4]" in \
        capsys.readouterr().err
    (tmp_path / "junk.ckpt").write_bytes(b"\x80\x04not a checkpoint" * 10)
    assert main(args(snapshot, tmp_path / "c", d_ckpt=tmp_path / "junk.ckpt")) == 2
    assert "is not a readable MindSpore checkpoint" in capsys.readouterr().err
    assert main(args(snapshot, tmp_path / "d", d_ckpt=tmp_path / "missing.ckpt")) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(args(snapshot, tmp_path / "e", max_ckpt_mib=0.001)) == 2
    assert "over the 0.001 MiB cap on checkpoints; if you trust the file, raise the cap with --max-ckpt-mib" \
        in capsys.readouterr().err


def test_a_data_folder_without_images_is_refused(snapshot, tmp_path, capsys):
    assert main(args(snapshot, tmp_path / "out", data=snapshot["empty"])) == 2
    assert "holds no .jpg/.jpeg/.png/.webp files" in capsys.readouterr().err
    assert main(args(snapshot, tmp_path / "out", data=tmp_path / "nowhere")) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(args(snapshot, tmp_path / "out", nz=7)) == 2  # wrong latent size: named, before any output
    assert "--nz=7" in capsys.readouterr().err


def test_the_loss_whose_gradients_are_measured_is_chosen(snapshot, tmp_path, capsys):
    assert main(args(snapshot, tmp_path / "hinge", loss="hinge", batches=1, g_ckpt=None)) == 0
    out = capsys.readouterr().out
    assert "G: no checkpoint given" in out and "D: loaded 7 arrays" in out
    record, = read_jsonl(tmp_path / "hinge" / "diagnostics.jsonl")
    assert all(v["grad_passes"] > 0 and v["grad_score"] for v in record["layers"].values())
    with pytest.raises(SystemExit):
        main(args(snapshot, tmp_path / "x", loss="l2"))
    assert "invalid choice: 'l2'" in capsys.readouterr().err


# ---- bad networks and checkpoints: one line, exit 2, nothing left in --out (issue 51 item 14) ----

def same_net_twice():
    g, _ = build(0)
    return g, g


def without_activations():
    """A G and D that run on the snapshot's latents and images but hold no activation layer."""
    from mindspore import nn
    return (nn.SequentialCell([nn.Conv2dTranspose(16, 1, 16, 1, "valid")]),
            nn.SequentialCell([nn.Conv2d(1, 1, 16, pad_mode="valid"), nn.Flatten()]))


def plain_conditional():
    """The class-conditional example's networks returned as a plain (G, D) factory: G needs labels too."""
    from scripts.examples.conditional import inspect_factory
    g, d, _ = inspect_factory()
    return g, d


@pytest.mark.parametrize("factory, message", [
    (f"{__name__}:same_net_twice", "returned networks that share layers as G and D ([(the network itself)"),
    (f"{__name__}:without_activations", "G (SequentialCell) has no activation layer to probe"),
    (f"{__name__}:plain_conditional", "G does not take latents of shape (--nz=16) ((8, 16, 1, 1)): TypeError"),
])
def test_networks_inspection_cannot_use_are_one_line_and_leave_no_out(snapshot, tmp_path, capsys, factory, message):
    assert main(args(snapshot, tmp_path / "out", factory=factory, g_ckpt=None, d_ckpt=None)) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out").exists()  # no run.lock, no folder


def test_the_plain_factory_on_a_conditional_g_says_what_the_factory_must_return(snapshot, tmp_path, capsys):
    assert main(args(snapshot, tmp_path / "out", factory=f"{__name__}:plain_conditional", g_ckpt=None,
                     d_ckpt=None)) == 2
    assert "or (G, D, Feed) with Feed(image_size, channels, batch)" in capsys.readouterr().err


@pytest.mark.parametrize("dtype", [np.float64, np.int8])
def test_a_checkpoint_of_another_dtype_is_refused_naming_the_tensor(snapshot, tmp_path, capsys, dtype):
    g, _ = build(0)
    ms.save_checkpoint([{"name": p.name, "data": ms.Tensor(p.asnumpy().astype(dtype))}
                        for p in (q["data"] for q in network_params(g))], str(tmp_path / "g.ckpt"))
    assert main(args(snapshot, tmp_path / "out", g_ckpt=tmp_path / "g.ckpt")) == 2
    err = capsys.readouterr().err
    name = {np.float64: "Float64", np.int8: "Int8"}[dtype]
    assert f"dtype mismatches: [G.main.0.weight: checkpoint {name}, network Float32" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


# ---- conditional and image-to-image GANs: a factory returning (G, D, Feed) (issue 54 item 3) ----

@pytest.mark.parametrize("factory, counts", [
    ("scripts.examples.conditional:inspect_factory", (3, 2)),  # ConditionalGenerator's ReLUs, DcganD's LeakyReLUs
    ("scripts.examples.pix2pix:inspect_factory", (16, 3))])  # the U-Net's 16 activation cells, PatchGAN's 3
def test_conditional_and_image_to_image_gans_are_inspected(snapshot, tmp_path, factory, counts):
    out = tmp_path / "out"
    done = run_script("scripts/inspect_model.py", *args(snapshot, out, factory=factory, g_ckpt=None, d_ckpt=None,
                                                       nz=None, batches=1, batch_size=4))
    assert done.returncode == 0, done.stderr[-3000:]
    record, = read_jsonl(out / "diagnostics.jsonl")
    names = list(record["layers"])
    assert (sum(n.startswith("G/") for n in names), sum(n.startswith("D/") for n in names)) == counts
    # one batch: G for D's fake pass and G's loss; D on the real, the fake and the fake again, each with gradients
    # (a cell called at k places per pass counts k times)
    assert all(v["passes"] % (2 if n.startswith("G/") else 3) == 0 and v["grad_passes"] > 0
               for n, v in record["layers"].items()), record["layers"]
    ranges = json.loads((out / "ranges.json").read_text())
    assert all(r["calls"] == 2 for r in ranges["D"])  # D(condition, real) and D(condition, G's image)
    probed = [r["name"] for net in ("G", "D") for r in ranges[net] if r["name"] in record["layers"]]
    assert sorted(probed) == sorted(names)  # the report and the dead-channel record name layers alike
    assert set(names) & set(done.stdout.split())
    run = load_run(out)
    assert run.losses and run.sample is not None
    page = (out / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and '<section id="overview">' in page  # the snapshot's overview


def broken_feed():
    from scripts.examples.pix2pix import inspect_factory
    from scripts.inspect_model import Feed
    g, d, _ = inspect_factory()
    return g, d, Feed(image_size=16, channels=3, batch=lambda images, rng: (images,))


def feed_without_condition():
    """The U-Net pair fed as if D took the image alone."""
    from scripts.examples.pix2pix import grey, inspect_factory
    from scripts.inspect_model import Fed, Feed
    g, d, _ = inspect_factory()
    return g, d, Feed(16, 3, lambda images, rng: Fed(g=(grey(images),), real=images, d=lambda image: (image,)))


def test_a_feed_that_returns_something_else_is_named(snapshot, tmp_path, capsys):
    assert main(args(snapshot, tmp_path / "out", factory=f"{__name__}:broken_feed", g_ckpt=None, d_ckpt=None)) == 2
    err = capsys.readouterr().err
    assert "Feed.batch returned tuple: the factory must return (G, D)" in err and not (tmp_path / "out").exists()
    assert main(args(snapshot, tmp_path / "out", factory=f"{__name__}:feed_without_condition", g_ckpt=None,
                     d_ckpt=None)) == 2
    err = capsys.readouterr().err
    assert "D does not take its inputs for the real images ((8, 3, 16, 16)): TypeError" in err, err
    assert "Fed.d(image) D's inputs" in err and not (tmp_path / "out").exists()


def test_the_docs_factory_builds_and_feeds_the_pair_it_describes():
    """docs/your_model.md's U-Net + PatchGAN factory, run as written: G translates the grey condition, D scores
    (condition, image) patches."""
    from mindspore import Tensor

    from tests.helpers import REPO

    page = (REPO / "docs" / "your_model.md").read_text()
    code = next(b for b in page.split("```python\n")[1:] if "def inspect_factory" in b).split("```", 1)[0]
    namespace: dict = {}
    exec(code, namespace)  # noqa: S102 (the page's own example)
    g, d, feed = namespace["inspect_factory"]()
    assert (feed.image_size, feed.channels) == (16, 3)
    fed = feed.batch(Tensor(np.zeros((2, 3, 16, 16), np.float32)), np.random.default_rng(0))
    image = g(*fed.g)
    assert image.shape == (2, 3, 16, 16) and d(*fed.d(image)).shape[:2] == (2, 1)
