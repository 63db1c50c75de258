"""The README's fifteen-line example runs as written, and is the same text as docs/example.py."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKER = "<!-- example -->"


def readme_example() -> str:
    """The first ```python block after the marker line of README.md."""
    text = (ROOT / "README.md").read_text()
    lines = text.splitlines()
    assert MARKER in lines, f"README.md has no line {MARKER!r} before its example"
    after = "\n".join(lines[lines.index(MARKER) + 1 :]) + "\n"
    block = re.search(r"^```python\n(.*?)^```", after, flags=re.S | re.M)
    assert block, f"no ```python block after {MARKER!r} in README.md"
    return block.group(1)


def test_the_example_is_docs_example_and_at_most_fifteen_lines():
    code = readme_example()
    assert code == (ROOT / "docs" / "example.py").read_text(), (
        "README.md's example and docs/example.py differ: edit one, copy it to the other"
    )
    assert len(code.splitlines()) <= 15


def test_the_readme_example_runs(micro_world, monkeypatch, capsys):
    monkeypatch.setenv("KIT_WORLD", micro_world)  # the same names, the small world's members
    exec(compile(readme_example(), "README.md example", "exec"), {"__name__": "__example__"})
    out = capsys.readouterr().out
    assert re.search(r"accuracy \d\.\d\d, MUI \d+\.\d\d%", out), out
    assert re.search(r"shortcut neurons \[\(\d+, \d+\).*\] Ori \d\.\d\d -> TE \d\.\d\d", out), out
    assert "NeuronVote {'probeless': " in out and "'gaussian': " in out, out
