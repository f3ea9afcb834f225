"""Every relative link and every #anchor in the repository's Markdown resolves (issue 35): README.md,
tests/README.md, any docs/. A link to a file that moved, or to a heading that was renamed, fails here."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\[(?:[^\]]|\][^(])*?\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")  # [text](target "title"), images too
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)


def markdown_files() -> list[Path]:
    out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard", "*.md"],
                         capture_output=True, text=True, check=True).stdout.split()
    return sorted({ROOT / p for p in out if (ROOT / p).is_file()})


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, Markdown marks and punctuation dropped, spaces -> '-'."""
    text = re.sub(r"`([^`]*)`", r"\1", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(md: Path) -> set[str]:
    """The anchors GitHub makes for a file's headings (a repeated one gets -1, -2, ...)."""
    seen: dict[str, int] = {}
    out = set()
    for line in FENCE.sub("", md.read_text()).splitlines():
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        s = slug(m.group(1))
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}")
    out |= set(re.findall(r'<a\s+(?:name|id)="([^"]+)"', md.read_text()))
    return out


def broken(md: Path, root: Path = ROOT) -> list[str]:
    """The links of `md` that do not resolve, each with why (paths relative to `root`)."""
    out = []
    for target in LINK.findall(FENCE.sub("", md.read_text())):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (md.parent / path).resolve() if path else md
        if not dest.exists():
            out.append(f"{target}: no {dest.relative_to(root)}")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            out.append(f"{target}: no heading #{anchor} in {dest.relative_to(root)}")
    return out


def test_the_markdown_files_are_found():
    """README.md, tests/README.md and every docs/*.md are checked (the manual is docs/, by topic)."""
    names = {p.relative_to(ROOT).as_posix() for p in markdown_files()}
    docs = {p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md")}
    assert len(docs) >= 10, docs
    assert {"README.md", "tests/README.md"} | docs <= names


def test_the_readme_leads_to_every_docs_file():
    """The front page's "Where to read more" links each page of the manual: none is left unreachable."""
    readme = FENCE.sub("", (ROOT / "README.md").read_text())
    linked = {(ROOT / t.partition("#")[0]).resolve() for t in LINK.findall(readme)}
    assert sorted(p.name for p in (ROOT / "docs").glob("*.md") if p.resolve() not in linked) == []


@pytest.mark.parametrize("md", markdown_files(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_and_anchor_resolves(md):
    assert broken(md) == []


def test_a_broken_link_and_a_broken_anchor_are_found(tmp_path):
    (tmp_path / "b.md").write_text("# Its `Title`: here\n\n## Again\n## Again\n")
    (tmp_path / "a.md").write_text("[ok](b.md#its-title-here) [ok](b.md#again-1) [ok](#top) [web](https://x.org/y)\n"
                                   "# Top\n[gone](c.md) [no anchor](b.md#nowhere) ![img](pic.png)\n"
                                   "```\n[in code](nothing.md)\n```\n")
    assert broken(tmp_path / "a.md", tmp_path) == ["c.md: no c.md", "b.md#nowhere: no heading #nowhere in b.md",
                                                   "pic.png: no pic.png"]
