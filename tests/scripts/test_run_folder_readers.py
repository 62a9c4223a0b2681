"""scripts/dashboard.py and scripts/summarize_sweep.py on run folders other people made: named pipes where
run.lock or status.json belong, folder names that are not UTF-8, markup and `|` in what goes into Markdown tables.

The commands run in a subprocess with a timeout: a reader that blocks on a named pipe fails the test instead of
hanging the suite."""
import json
import os
from pathlib import Path

import pytest

from gan.analysis.dashboard import build_dashboard
from gan.analysis.sweep import group_summary, groups_markdown, summarize, to_markdown
from tests.helpers import run_script
from tests.scripts.test_sweep import fake_job

TIMEOUT = 120  # seconds; the commands take a few on a busy machine, a hang never ends
MARKUP = "<script>alert(1)</script><img src=x onerror=alert(2)>"


def sweep_with(tmp_path: Path, special: str) -> Path:
    """A two-job sweep whose job 1 has `special` ("lock" or "status") as a named pipe (its status says running)."""
    root = tmp_path / "sweep"
    for number in (0, 1):
        fake_job(root, number, slope=0.1 * number, diagnostics=True)
    job = root / "1"
    if special == "lock":
        (job / "status.json").write_text(json.dumps({"state": "running", "step": 10}))
        os.mkfifo(job / "run.lock")
    else:
        os.mkfifo(job / "status.json")
    return root


@pytest.mark.slow
@pytest.mark.parametrize("special, name", [("lock", "run.lock"), ("status", "status.json")])
def test_a_named_pipe_in_a_run_folder_is_refused_not_waited_on(tmp_path, special, name):
    root = sweep_with(tmp_path, special)
    for script in ("scripts/dashboard.py", "scripts/summarize_sweep.py"):
        done = run_script(script, str(root), timeout=TIMEOUT)
        assert done.returncode == 2, (script, done.stderr[-2000:])
        assert str(root / "1" / name) in done.stderr and "not a regular file" in done.stderr, done.stderr[-2000:]


def non_utf8_sweep(tmp_path: Path) -> tuple[Path, str]:
    """A sweep of one job whose folder name holds the bytes ff fe (not UTF-8), and how a page shows the name."""
    root = tmp_path / "sweep"
    root.mkdir()
    fake_job(root, 0, slope=0.0, diagnostics=True)
    os.rename(root / "0", root / os.fsdecode(b"x\xff\xfey"))
    return root, "x\ufffd\ufffdy"


@pytest.mark.slow
def test_a_folder_name_that_is_not_utf8_shows_with_replacement_characters(tmp_path):
    root, shown = non_utf8_sweep(tmp_path)
    assert shown in build_dashboard(root)
    assert shown in to_markdown(summarize(root))
    assert shown in groups_markdown(group_summary(root))
    done = run_script("scripts/dashboard.py", str(root), "--out", str(tmp_path / "page.html"), timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert shown in (tmp_path / "page.html").read_text(encoding="utf-8")
    done = run_script("scripts/summarize_sweep.py", str(root), timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr[-2000:]
    for name in ("summary.md", "summary.csv", "groups.md", "dashboard.html"):
        assert shown in (root / name).read_text(encoding="utf-8"), name


def test_markup_and_pipes_from_jobs_stay_text_in_the_markdown_tables(tmp_path):
    root = tmp_path / "sweep"
    for number in (0, 1):
        fake_job(root, number, slope=0.1 * number, diagnostics=True)
        overrides = root / str(number) / ".hydra" / "overrides.yaml"
        overrides.write_text(overrides.read_text() + f"- hydra.job.name={MARKUP}|pipe{number}\n")
    (root / "1" / "status.json").write_text(json.dumps({"state": "failed", "error": f"ValueError: {MARKUP}|x"}))
    metrics = root / "0" / "metrics.json"
    metrics.write_text(json.dumps({**json.loads(metrics.read_text()), f"{MARKUP}|m": 1.0}))
    summary, groups = to_markdown(summarize(root)), groups_markdown(group_summary(root))
    for text in (summary, groups):
        assert "<script" not in text and "<img" not in text, text
    for table in (summary, groups.split("\n\n")[0]):
        lines = [line for line in table.splitlines() if line.startswith("|")]
        # every row has as many cells as the header: no | from a job splits a row
        widths = {len(line.replace("\\|", "").split("|")) for line in lines}
        assert len(widths) == 1, table
    assert "hydra.job.name=&lt;script&gt;" in groups or "&lt;script&gt;" in groups
