"""generate, export and quantize (and train.resume) on checkpoints crafted from a tiny real one, as someone else could
send them: each bad file is refused with one line naming it and what is wrong (exit 2) before anything is built at
its declared size, used or written; output that cannot be written is one line (exit 1) and leaves nothing."""
from __future__ import annotations

import errno
import json
import resource
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable

import mindspore
import numpy as np
import pytest

from gan.models.checkpoint import CheckpointError, latest_checkpoint, load_checkpoint, save_checkpoint
from scripts import export, generate, quantize
from tests.helpers import REPO, script_env

pytestmark = pytest.mark.slow  # a tiny training, and the tools on its checkpoint (some in a subprocess)
CONV1 = "ema.layers.conv1.weight"  # (ngf*4, ngf*2, 4, 4) = (32, 16, 4, 4) in the tiny run


def tool_args(tmp_path: Path) -> dict[str, list[str]]:
    """Each tool's arguments after the checkpoint, writing under tmp_path/out."""
    out = tmp_path / "out"
    return {"generate": ["--n", "4", "--out", str(out / "g.png")],
            "export": ["--format", "MINDIR", "--out", str(out / "g.mindir")],
            "quantize": ["--calib", "8", "--eval-n", "8", "--out", str(out / "q")]}


TOOLS = {"generate": generate.main, "export": export.main, "quantize": quantize.main}


@pytest.fixture(scope="module")
def base(tmp_path_factory, tiny_run) -> Path:
    """The newest checkpoint of a 2-step dry run with an EMA generator (ngf 8, nz 16, RGB)."""
    run_dir = tmp_path_factory.mktemp("run")
    tiny_run(run_dir, "train.dry_run=true", "train.ema_beta=0.5")
    return latest_checkpoint(run_dir)


def crafted(base: Path, tmp_path: Path, arrays: Callable[[dict], None] | None = None,
            meta: Callable[[dict], object] | None = None) -> Path:
    """tmp_path/received.ckpt: `base` with its arrays changed in place by `arrays`, its meta replaced by meta(meta)."""
    stored, stored_meta = load_checkpoint(base)
    if arrays is not None:
        arrays(stored)
    path = tmp_path / "received.ckpt"
    save_checkpoint(path, stored, meta(stored_meta) if meta is not None else stored_meta)
    return path


def refusals(received: Path, tmp_path: Path, capsys) -> dict[str, str]:
    """Run every tool on `received` in this process; each must exit 2 with one line and write nothing."""
    errors = {}
    for name, main in TOOLS.items():
        assert main([str(received), *tool_args(tmp_path)[name]]) == 2, name
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and err.startswith("error: ") and "received.ckpt" in err, (name, err)
        errors[name] = err
    assert not (tmp_path / "out").exists()
    return errors


def with_config(old: str, new: str) -> Callable[[dict], dict]:
    return lambda meta: meta | {"config": meta["config"].replace(old, new, 1)}


def without(key: str) -> Callable[[dict], dict]:
    return lambda meta: {k: v for k, v in meta.items() if k != key}


META_CASES = {
    "unknown config key": (with_config("model:\n", "model:\n  bogus: 1\n"),
                           "its stored config is not one this code reads: Key 'bogus' not in 'ModelConfig'"),
    "config a list": (lambda m: m | {"config": "- 1\n- 2\n"}, "the stored config is a YAML list, not a mapping"),
    "config an int": (lambda m: m | {"config": 5}, "meta 'config' is 5, it must be the run's config as YAML text"),
    "config missing": (without("config"), "its meta has no 'config'"),
    "channels missing": (without("channels"), "its meta has no 'channels' (the image channels, an integer >= 1)"),
    "step a string": (lambda m: m | {"step": "../../x"}, "meta 'step' is '../../x', it must be an integer >= 0"),
    "meta a list": (lambda m: [1, 2], "its meta is a list, not a mapping"),
    "meta null": (lambda m: None, "its meta is null, not a mapping"),
}


@pytest.mark.parametrize("case", META_CASES)
def test_malformed_metadata_is_one_line_and_exit_2_in_every_tool(base, tmp_path, capsys, case):
    """Raw KeyError/AttributeError/ConfigKeyError tracebacks (exit 1) before."""
    change, message = META_CASES[case]
    for name, err in refusals(crafted(base, tmp_path, meta=change), tmp_path, capsys).items():
        assert message in err, (name, err)


@pytest.mark.parametrize("case", ["unknown config key", "step a string", "meta null"])
def test_resume_reads_malformed_metadata_as_a_checkpoint_error(base, tmp_path, tiny_run, case):
    change, message = META_CASES[case]
    received = crafted(base, tmp_path, meta=change)
    with pytest.raises(CheckpointError, match="received.ckpt") as error:
        tiny_run(tmp_path / "resumed", "train.steps=3", f"train.resume={received}")
    assert message in str(error.value)


def set_weight(name: str, value: Callable[[np.ndarray], np.ndarray]) -> Callable[[dict], None]:
    def change(arrays: dict) -> None:
        arrays[name] = value(arrays[name])
    return change


def poke(value: float) -> Callable[[dict], None]:
    def change(arrays: dict) -> None:
        arrays[CONV1][0, 0, 0, 0] = value
    return change


WEIGHT_CASES = {
    "int32": (set_weight(CONV1, lambda w: (w * 100).astype(np.int32)),
              f"'{CONV1}' is int32[32, 16, 4, 4], this generator needs float32[32, 16, 4, 4]: weights must be "
              f"floating point"),
    "bool": (set_weight(CONV1, lambda w: w > 0), f"'{CONV1}' is bool[32, 16, 4, 4], this generator needs float32"),
    "(3, 3)": (set_weight(CONV1, lambda w: np.ones((3, 3), np.float32)),
               f"'{CONV1}' is float32[3, 3], this generator needs float32[32, 16, 4, 4]"),
    "NaN": (poke(np.nan), f"'{CONV1}' holds 1 NaN or inf values of 8192"),
    "inf": (poke(np.inf), f"'{CONV1}' holds 1 NaN or inf values of 8192"),
}


@pytest.mark.parametrize("case", WEIGHT_CASES)
def test_weights_that_do_not_fit_or_are_not_finite_are_refused_naming_the_tensor(base, tmp_path, capsys, case):
    """int32/bool weights were cast silently (other images), a (3, 3) weight failed in oneDNN, NaN gave a black grid
    (generate), blamed MindSpore's LeakyReLU (export) or left a quant.json with Infinity (quantize)."""
    change, message = WEIGHT_CASES[case]
    for name, err in refusals(crafted(base, tmp_path, arrays=change), tmp_path, capsys).items():
        assert message in err, (name, err)


def test_a_config_that_disagrees_with_the_arrays_is_refused(base, tmp_path, capsys):
    """model.ngf=16 in the stored config, arrays of ngf 8: the images came out as if nothing were wrong."""
    received = crafted(base, tmp_path, meta=with_config("ngf: 8", "ngf: 16"))
    for name, err in refusals(received, tmp_path, capsys).items():
        assert ("'ema.layers.conv0.weight' is float32[16, 32, 4, 4], this generator needs float32[16, 64, 4, 4]: "
                "its stored config declares another network than its arrays hold") in err, (name, err)


def limited_run(script: str, *args: str) -> subprocess.CompletedProcess:
    """A tool in a subprocess limited to 12 GiB of address space, as the probe ran them: without the checks before
    building, a declared network of tens of GiB fails with MemoryError there instead of taking the machine."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (12 << 30, 12 << 30))

    return subprocess.run([sys.executable, str(REPO / script), *args], cwd=REPO, env=script_env(), text=True,
                          capture_output=True, timeout=300, preexec_fn=limit)


@pytest.mark.parametrize("tool, change, need", [
    ("generate", with_config("ngf: 8", "ngf: 4000000"), "this generator needs float32[16, 16000000, 4, 4]"),
    ("export", with_config("ngf: 8", "ngf: 4000000"), "this generator needs float32[16, 16000000, 4, 4]"),
    ("quantize", with_config("ngf: 8", "ngf: 4000000"), "this generator needs float32[16, 16000000, 4, 4]"),
    ("generate", with_config("nz: 16", "nz: 1000000000000"), "this generator needs float32[1000000000000, 32, 4, 4]"),
    ("generate", lambda m: m | {"channels": 10 ** 7}, "this generator needs float32[8, 10000000, 4, 4]"),
])
def test_a_declared_huge_network_is_refused_before_anything_is_allocated(base, tmp_path, tool, change, need):
    """model.ngf=4000000 asked for 61 GiB, nz=10^12 for 7 PiB, channels=10^7 for 19 GiB before any array was
    compared; now the network is built without its parameters' memory and its shapes are compared first."""
    received = crafted(base, tmp_path, meta=change)
    done = limited_run(f"scripts/{tool}.py", str(received), *tool_args(tmp_path)[tool])
    assert done.returncode == 2 and need in done.stderr and "received.ckpt" in done.stderr, done.stderr[-2000:]
    assert "MemoryError" not in done.stderr and not (tmp_path / "out").exists()


def test_the_size_cap_applies_to_every_tool_and_to_resume(base, tmp_path, capsys, tiny_run, monkeypatch):
    """generate/export/quantize/resume had no cap (a 3 GB file cost 6.7 GB of memory before it was refused)."""
    received = crafted(base, tmp_path)
    monkeypatch.setenv("LRELU_MAX_CKPT_MIB", "0.25")  # the tiny checkpoint is ~0.46 MiB
    for err in refusals(received, tmp_path, capsys).values():
        assert "MiB, over the 0.25 MiB cap on checkpoints; if you trust the file, raise the cap with " \
               "LRELU_MAX_CKPT_MIB=<MiB>" in err
    with pytest.raises(CheckpointError, match="received.ckpt' is .* MiB, over the 0.25 MiB cap"):
        tiny_run(tmp_path / "resumed", "train.steps=3", f"train.resume={received}")


@pytest.fixture(scope="module")
def int8_dir(base, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("int8") / "q"
    assert quantize.main([str(base), "--calib", "8", "--eval-n", "8", "--out", str(out)]) == 0
    return out


def test_generate_int8_refuses_a_quant_json_with_non_finite_values(int8_dir, tmp_path, capsys):
    """quantize used to write "in_min": Infinity for NaN weights, and generate --int8 then drew with it."""
    copy = tmp_path / "q"
    shutil.copytree(int8_dir, copy)
    record = json.loads((copy / "quant.json").read_text())
    record["layers"][0]["in_scale"] = float("inf")
    (copy / "quant.json").write_text(json.dumps(record))
    assert generate.main(["--int8", str(copy), "--n", "4", "--out", str(tmp_path / "g.png")]) == 2
    err = capsys.readouterr().err
    assert "quant.json is unreadable or incomplete: it holds Infinity; every quantisation parameter must be a " \
           "finite number" in err
    assert not (tmp_path / "g.png").exists()


def test_quantize_that_fails_while_writing_leaves_no_folder(base, tmp_path, capsys, monkeypatch):
    """A full disk left an empty --out folder (and raw OSError tracebacks)."""
    import gan.run.grids

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(gan.run.grids, "save_png", full)
    out = tmp_path / "new" / "q"
    assert quantize.main([str(base), "--calib", "8", "--eval-n", "8", "--out", str(out)]) == 1
    assert capsys.readouterr().err.strip() == f"error: cannot write {out}: No space left on device"
    assert list(tmp_path.iterdir()) == []  # neither the folder, its parent nor a staging folder


def test_quantize_into_an_existing_folder_replaces_its_files_at_the_end(base, int8_dir, tmp_path):
    out = tmp_path / "q"
    shutil.copytree(int8_dir, out)
    (out / "notes.txt").write_text("mine")
    assert quantize.main([str(base), "--calib", "16", "--eval-n", "8", "--out", str(out)]) == 0
    assert json.loads((out / "quant.json").read_text())["calibration"]["latents"] == 16
    assert (out / "notes.txt").read_text() == "mine" and sorted(p.name for p in tmp_path.iterdir()) == ["q"]


@pytest.mark.parametrize("tool", ["export", "quantize"])
def test_an_output_that_cannot_be_created_fails_before_the_work(base, tmp_path, capsys, tool):
    """A read-only or impossible --out failed with a raw OSError only after the work."""
    (tmp_path / "file").write_text("")
    out = tmp_path / "file" / "sub" / ("g.mindir" if tool == "export" else "q")
    args = ["--format", "MINDIR"] if tool == "export" else ["--calib", "8"]
    assert TOOLS[tool]([str(base), *args, "--out", str(out)]) == 1
    captured = capsys.readouterr()
    assert captured.err.strip() == f"error: cannot write {out}: Not a directory" and captured.out == ""


def test_export_on_a_full_disk_is_one_line_and_leaves_nothing(base, tmp_path, capsys, monkeypatch):
    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(mindspore, "export", full)
    assert export.main([str(base), "--format", "MINDIR", "--out", str(tmp_path / "g.mindir")]) == 1
    assert capsys.readouterr().err.strip() == f"error: cannot write {tmp_path / 'g.mindir'}: No space left on device"
    assert list(tmp_path.iterdir()) == []
