"""scripts/examples/own_loop.py (docs/your_model.md): a model-zoo DCGAN in its own loop writes a run directory that
the dashboard and TensorBoard read as they read a train.py run."""
import subprocess
import sys

import pytest

from gan.analysis.runs import load_run
from gan.run.directory import run_state
from gan.run.files import read_jsonl
from tests.helpers import REPO, run_script, script_env, tensorboard_events

pytestmark = pytest.mark.slow  # every test here is end-to-end


def test_example_writes_a_train_py_run_directory(own_loop_run):
    records = read_jsonl(own_loop_run / "diagnostics.jsonl")
    assert [r["step"] for r in records] == [2, 4, 6]
    assert list(records[0]["layers"]) == ["G/2", "G/5", "D/1", "D/4"]  # nn.ReLU / nn.LeakyReLU swapped, probed
    for layer, values in records[0]["layers"].items():
        # per step: G for D's fake batch and for G's loss; D on real, fake, and fake again for G's loss
        assert (values["passes"], values["grad_passes"]) == ((2, 1) if layer[0] == "G" else (3, 3))
    run = load_run(own_loop_run)
    assert [r["step"] for r in run.losses] == list(range(1, 7)) and run.sample.name == "step_000006.png"
    tags = {v.tag for e in tensorboard_events(own_loop_run / "tensorboard") for v in e.summary.value}
    assert {"loss/d", "prob/D_x", "diag/G/2/dead_frac", "diag/D/all/dormant_frac", "samples"} <= tags
    assert any(tag.startswith("diag_heatmap/D/") for tag in tags) and any(t.startswith("diag_hist/") for t in tags)
    assert run_state(own_loop_run)["state"] == "finished"
    assert (own_loop_run / "report.html").read_text().startswith("<!DOCTYPE html>")


def test_example_refuses_a_used_run_directory(own_loop_run):
    done = run_script("scripts/examples/own_loop.py", "--steps", "1", "--run-dir", str(own_loop_run))
    assert done.returncode != 0 and "already holds the files of another run" in done.stderr
    assert [r["step"] for r in read_jsonl(own_loop_run / "diagnostics.jsonl")] == [2, 4, 6]  # nothing lost


def test_the_example_of_docs_your_model_runs(tmp_path):
    """The page's code block, shortened to 4 steps with a check every 2, runs and writes its run directory."""
    page = (REPO / "docs" / "your_model.md").read_text()
    code = page.split("```python\n", 1)[1].split("```", 1)[0]
    run_dir = tmp_path / "own"
    short = code.replace('"runs/own"', repr(str(run_dir))).replace("range(1, 201)", "range(1, 5)") \
        .replace("every=20", "every=2").replace("i % 20", "i % 2")
    assert short.count(repr(str(run_dir))) == 1 and "range(1, 5)" in short and "every=2)" in short
    script = tmp_path / "example.py"
    script.write_text(short)
    done = subprocess.run([sys.executable, str(script)], cwd=REPO, env=script_env(), capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "dead channels at step 4" in done.stdout
    assert [r["step"] for r in read_jsonl(run_dir / "diagnostics.jsonl")] == [2, 4]
    assert (run_dir / "report.html").is_file() and (run_dir / "samples" / "step_000004.png").is_file()
