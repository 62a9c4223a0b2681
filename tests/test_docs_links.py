"""Every relative link in README.md and docs/*.md points to a file that exists, and to a heading that exists."""
from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

from tests.helpers import REPO

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*$")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, markup and punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*]", "", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found, seen, fenced = set(), {}, False
    for line in path.read_text(encoding="utf-8").splitlines():
        fenced ^= line.startswith("```")
        m = None if fenced else HEADING.match(line)
        if m:
            base = slug(m.group(1))
            n = seen.get(base, 0)
            found.add(base if n == 0 else f"{base}-{n}")
            seen[base] = n + 1
    return found


def test_every_relative_link_and_anchor_resolves() -> None:
    broken = []
    for page in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):
                continue  # http(s), mailto
            file_part, _, anchor = target.partition("#")
            path = (page.parent / unquote(file_part)).resolve() if file_part else page
            if not path.exists():
                broken.append(f"{page.relative_to(REPO)}: {target} (no such file)")
            elif anchor and path.suffix == ".md" and anchor not in anchors(path):
                broken.append(f"{page.relative_to(REPO)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def test_slugs_follow_github() -> None:
    assert slug("2. D's activation: relu, leaky_relu 0.01 and 0.2, prelu, rrelu") == \
        "2-ds-activation-relu-leaky_relu-001-and-02-prelu-rrelu"
    assert slug("Kernel launch: `runtime.host_blocking`") == "kernel-launch-runtimehost_blocking"
