"""What a notebook section hands back, and the one printed summary of findings every notebook ends
with.

A section function in a paper package (``kit.mui.growth.growth_section``...) computes its numbers
and returns a :class:`Section`; the notebook cell is then a call, :func:`publish`, and a display.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence


@dataclass
class Section:
    """The outputs of one notebook section."""

    record: dict[str, Any] = field(default_factory=dict)
    """Key numbers for ``results.json`` (``run.record(**record)``)."""
    findings: list[str] = field(default_factory=list)
    """Sentences for the notebook's findings, each stating computed numbers."""
    tables: dict[str, Any] = field(default_factory=dict)
    """Tables to display, by name (pandas DataFrames)."""
    figures: dict[str, Any] = field(default_factory=dict)
    """Matplotlib figures to save, by file stem."""
    data: dict[str, Any] = field(default_factory=dict)
    """Objects later sections need (rankings, fitted tables...)."""


def publish(run, section: Section, findings: list[str] | None = None) -> Section:
    """Save the section's figures, record its numbers, append its findings; returns it for
    display."""
    for name, fig in section.figures.items():
        run.save_figure(fig, name)
    if section.record:
        run.record(**section.record)
    if findings is not None:
        findings.extend(section.findings)
    return section


def findings_text(lines: Sequence[str], title: str = "Findings (computed in this run):") -> str:
    """Join computed finding sentences into the summary a notebook prints: one bullet each; lines
    that start with a space continue the previous bullet (indented sub-items)."""
    return title + "\n" + "\n".join(line if line.startswith(" ") else f"- {line}" for line in lines)
