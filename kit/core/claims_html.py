"""The claims table as a notebook shows it: every claim's full text, its verdict coloured, the
table wrapped to the page's width.

A DataFrame's own HTML cut the claim text at 50 characters (pandas' ``display.max_colwidth``), ran
past the right edge of the notebook and left verdicts uncoloured. :class:`ClaimsTable` renders the
same frame (:func:`kit.core.claims.table`) as an HTML table with inline styles only (JupyterLab
keeps inline styles in an untrusted notebook and drops ``<style>`` blocks' scope): fixed layout at
100% width, text wrapped inside its cell, the claim column widest, the verdict cell tinted with
the report's colour for it (:data:`VERDICT_COLOURS`, shared with :mod:`kit.core.report`).
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

VERDICT_COLOURS = {
    "supported": "#e3f4e3",
    "contradicted": "#f8dede",
    "inconclusive": "#fdf6dc",
    "not testable here": "#eeeeee",
    "cannot be decided here": "#ece8f4",
    "pass": "#e3f4e3",
    "fail": "#f8dede",
}
"""Background of a verdict, in the notebooks' claims tables and the run's report.html."""

COLUMN_WIDTHS = {"claim": 30, "why": 14, "section": 7, "null is": 8, "vs paper": 7}
"""Share of the table's width (%) of the wide columns; the rest share what is left equally."""

_CELL = (
    "text-align:left;vertical-align:top;white-space:normal;overflow-wrap:anywhere;"
    "padding:3px 5px;border:1px solid #ddd"
)


@dataclass
class ClaimsTable:
    """A notebook's claims table: ``frame`` (one row per claim, the columns of
    :func:`kit.core.claims.table`) for code, the styled table for display."""

    frame: Any
    """The pandas DataFrame."""

    def _repr_html_(self) -> str:
        columns = [str(c) for c in self.frame.columns]
        fixed = sum(COLUMN_WIDTHS.get(c, 0) for c in columns)
        rest = [c for c in columns if c not in COLUMN_WIDTHS]
        share = (100 - fixed) / max(len(rest), 1)
        widths = "".join(f'<col style="width:{COLUMN_WIDTHS.get(c, share):.1f}%">' for c in columns)
        head = "".join(
            f'<th style="{_CELL};background:#f3f3f3">{html.escape(c)}</th>' for c in columns
        )
        rows = []
        for record in self.frame.to_dict("records"):
            cells = []
            for c in columns:
                text = html.escape("" if record[c] is None else str(record[c]))
                style = _CELL
                if c == "verdict":
                    colour = VERDICT_COLOURS.get(str(record[c]), "transparent")
                    style += f";background-color:{colour};font-weight:bold"
                cells.append(f'<td style="{style}">{text}</td>')
            rows.append("<tr>" + "".join(cells) + "</tr>")
        return (
            '<table class="kit-claims" style="table-layout:fixed;width:100%;max-width:100%;'
            'border-collapse:collapse;font-size:12px;margin:0">'
            f"<colgroup>{widths}</colgroup><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>"
        )

    def __repr__(self) -> str:
        return self.frame.to_string(index=False, max_colwidth=None)
