"""docs/ pages are reference, not a lab notebook: no page outside docs/results.md holds an ISO date or a commit hash,
and every page stays within its line budget.

The rules, so that ordinary text passes:
- a date is YYYY-MM-DD outside inline code (an archive's name such as `inception-2015-12-05` is an identifier);
- a commit hash is a word of 7-40 hex digits, with at least one letter and one digit, that this repository's git
  knows as a commit (`git cat-file --batch-check`); plain numbers and 64-digit SHA-256 pins of data files never
  match. Outside a git checkout only the date and size rules apply.
"""
from __future__ import annotations

import re
import subprocess

from tests.helpers import REPO

DOCS = REPO / "docs"
REGISTER = "results.md"  # the one page that names when and where its figures were measured
DEFAULT_BUDGET = 450
BUDGETS = {"performance.md": 350, "sweeps.md": 250, "precision.md": 180, "operator.md": 450, "slope_study.md": 300,
           "fusion.md": 200, "metrics.md": 210, "diagnostics.md": 320,
           "results.md": 480}  # the register: rendered tables and a line per section, nothing else
DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
HEXWORD = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b")
CODE = re.compile(r"`[^`\n]*`")


def pages() -> list:
    return [p for p in sorted(DOCS.glob("*.md")) if p.name != REGISTER]


def known_commits(words: set[str]) -> set[str]:
    """The words git resolves to a commit of this repository (none outside a checkout)."""
    if not words:
        return set()
    try:
        done = subprocess.run(["git", "cat-file", "--batch-check"], cwd=REPO, capture_output=True, text=True,
                              input="".join(f"{w}^{{commit}}\n" for w in sorted(words)), timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return set()
    answers = done.stdout.splitlines()
    if done.returncode != 0:
        return set()
    return {w for w, a in zip(sorted(words), answers) if a.split()[1:2] == ["commit"]}


def dates_in(text: str) -> list[str]:
    return DATE.findall(CODE.sub("", text))


def test_no_page_holds_a_date() -> None:
    found = [f"{p.name}: {d}" for p in pages() for d in dates_in(p.read_text(encoding="utf-8"))]
    assert not found, "dates belong in docs/results.md or the data files: " + ", ".join(found)


def test_no_page_names_a_commit() -> None:
    words = {p.name: set(HEXWORD.findall(p.read_text(encoding="utf-8"))) for p in pages()}
    commits = known_commits(set().union(*words.values()))
    found = [f"{name}: {w}" for name, ws in words.items() for w in sorted(ws & commits)]
    assert not found, "commit hashes belong in git and the data files: " + ", ".join(found)


def test_every_page_is_within_its_line_budget() -> None:
    over = [f"{p.name}: {n} lines > {BUDGETS.get(p.name, DEFAULT_BUDGET)}" for p in sorted(DOCS.glob("*.md"))
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > BUDGETS.get(p.name, DEFAULT_BUDGET)]
    assert not over, "; ".join(over)


def test_the_rules_flag_what_they_should_and_nothing_else() -> None:
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    assert dates_in("measured on 2026-12-07 at noon") == ["2026-12-07"]
    assert dates_in("the archive `inception-2015-12-05`") == []
    text = f"main at {head[:7]}, 1234567 steps, sha256 {'ab12' * 16}, deadbeef"
    words = set(HEXWORD.findall(text))
    assert "1234567" not in words and "ab12" * 16 not in words  # a plain number, a 64-digit pin
    if head:
        assert known_commits(words) == {head[:7]} or head[:7].isdigit()
