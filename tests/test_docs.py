"""The README and docs/: short enough to read, every relative link resolving to a file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
INLINE = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
REFERENCE = re.compile(r"^\s*\[[^\]]+\]:\s*(\S+)", re.MULTILINE)


def _links(text: str) -> list[str]:
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)  # code is not a link
    return INLINE.findall(text) + REFERENCE.findall(text)


def test_readme_is_at_most_200_lines_of_at_most_120_characters():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, (
        f"README.md has {len(lines)} lines (at most 200): move detail to docs/"
    )
    long = [(i, len(line)) for i, line in enumerate(lines, 1) if len(line) > 120]
    assert not long, f"README.md lines over 120 characters (line, length): {long}"


def test_readme_names_the_commands_ci_and_users_run():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in ci and "make test" in text  # CI runs the README's test command
    for command in ("make run", "make real", "report.html", "<!-- example -->"):
        assert command in text


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves_to_a_file(page):
    assert page.exists(), f"{page.relative_to(ROOT)} is missing"
    missing = []
    for target in _links(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue  # a web address or an anchor in the same page
        path = (page.parent / target.split("#")[0]).resolve()
        if not path.exists():
            missing.append(target)
    assert not missing, f"{page.relative_to(ROOT)} links to missing files: {missing}"


def test_the_docs_pages_the_readme_promises_exist():
    for name in ("results", "timings", "models", "tiny-world", "scaling", "extending"):
        assert (ROOT / "docs" / f"{name}.md").exists(), f"docs/{name}.md"
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
