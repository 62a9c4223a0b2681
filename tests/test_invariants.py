"""The invariants of docs/extending.md that no other test pins: MindSpore-free imports, ops/ never importing
gan/, and the RNG purpose numbers every resumed run depends on."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO, script_env


def imports_mindspore(module: str) -> bool:
    """Whether importing `module` in a fresh interpreter loads mindspore (the check runs there, not here)."""
    code = f"import sys, {module}; print('mindspore' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=script_env(), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1] == "True"


@pytest.mark.parametrize("module", ["gan.dashboard", "gan.sweep", "gan.run_files", "gan.run_reader", "gan.charts",
                                    "gan.channel_stats", "gan.streams", "gan.images", "gan.plan", "gan.loss_kinds",
                                    "gan.activation_kinds"])
def test_offline_modules_import_without_mindspore(module: str) -> None:
    """Each imported first, in a fresh interpreter: an import cycle shows only in the order that closes it
    (gan.plan before gan.config did, once)."""
    assert not imports_mindspore(module)


def test_config_imports_without_mindspore() -> None:
    assert not imports_mindspore("gan.config, gan.dashboard")


def test_ops_never_imports_gan() -> None:
    offenders = []
    for path in sorted((REPO / "ops").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
            offenders += [f"{path.relative_to(REPO)}:{node.lineno} imports {n}" for n in names
                          if n == "gan" or n.startswith("gan.")]
    assert not offenders, offenders


def test_rng_purpose_numbers_are_those_of_existing_runs() -> None:
    """Every random stream is default_rng([seed, step, purpose]): a changed or reused number changes every run of
    a seed and breaks bit-exact resume of runs already started. A new stream takes a new number."""
    from gan.streams import Purpose

    purposes = {"Z": 1, "FIXED_Z": 2, "INIT_G": 3, "INIT_D": 4, "EVAL_Z": 5, "GP_EPS": 6, "RECYCLE": 7,
                "CALIBRATION": 0x18, "POINTS": 0x2D0, "REAL_POINTS": 0x2D1, "EPOCH_ORDER": 0x0DA7A,
                "SHAPES": 0x5A9E5, "CLASSIFIER_INIT": 0x1A17, "CLASSIFIER_AUGMENT": 0xC1A55,
                "FID_Z": 8, "KID_DRAWS": 0x61D}
    assert {p.name: int(p) for p in Purpose} == purposes  # @unique: no number serves two streams
