"""scripts/train_classifier.py: the default recipe reaches >= 97% held-out accuracy; caching, --force, bad input."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "train_classifier.py"


def load_script():
    """The script as a module, so main() runs in-process."""
    from scripts import train_classifier

    return train_classifier


def test_below_the_bar_fails_and_the_cache_is_reused(tmp_path, capsys) -> None:
    main = load_script().main
    report_path = tmp_path / "report.json"
    args = ["--epochs", "1", "--cache-dir", str(tmp_path / "cache"), "--json", str(report_path)]
    assert main(args) == 1  # one epoch is far from 97%
    report = json.loads(report_path.read_text())
    assert 0.5 < report["held_out_accuracy"] < 0.97
    assert Path(report["path"]).exists() and report["config"]["epochs"] == 1
    assert "bar 97%" in capsys.readouterr().out
    assert main(args + ["--min-accuracy", "0.5"]) == 0  # loaded from the cache: same accuracy
    assert json.loads(report_path.read_text())["held_out_accuracy"] == report["held_out_accuracy"]
    assert main(args + ["--force", "--seed", "1"]) == 1
    assert not list(tmp_path.glob(".*.tmp"))


def test_bad_epochs_is_rejected(capsys) -> None:
    assert load_script().main(["--epochs", "0"]) == 2
    assert "epochs=0" in capsys.readouterr().err


@pytest.mark.slow
def test_default_recipe_reaches_97_percent(tmp_path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GLOG_v": "3"}
    report_path = tmp_path / "report.json"
    result = subprocess.run([sys.executable, str(SCRIPT), "--cache-dir", str(tmp_path), "--json", str(report_path)],
                            env=env, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(report_path.read_text())["held_out_accuracy"] >= 0.97
