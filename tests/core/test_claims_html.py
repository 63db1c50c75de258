"""The claims table as a notebook shows it (kit.core.claims_html): the full claim text, each
verdict tinted with the report's colour, a table wrapped to the page's width."""

from __future__ import annotations

import re

from kit.core import claims as C
from kit.core.claims_html import VERDICT_COLOURS, ClaimsTable

LONG = (
    "TE lowers the test accuracy of contaminated +5x test-Syn (Δacc = TE - Ori, points) <beyond> "
    "what the uncontaminated fine-tunes lose"
)


def _table() -> ClaimsTable:
    rows = [
        C.claim("001", "Table 2", "a", LONG, -3.0, ci=(-5.0, -1.0), null=0.0, direction="less"),
        C.claim(
            "001", "Table 2", "b", "the other way", 3.0, ci=(1.0, 5.0), null=0.0, direction="less"
        ),
        C.claim("001", "Fig. 4", "c", "unclear", 0.1, ci=(-0.2, 0.4), null=0.0),
    ]
    return ClaimsTable(C.table(rows))


def test_the_claim_text_is_whole_and_escaped_and_verdicts_are_coloured():
    table = _table()
    html = table._repr_html_()
    # pandas' own HTML cut it at 50 characters ("TE lowers the test accuracy of contaminated...")
    assert LONG.replace("<", "&lt;").replace(">", "&gt;") in html
    verdicts = list(table.frame.verdict)
    assert verdicts == ["supported", "contradicted", "inconclusive"]
    cells = re.findall(r'<td style="[^"]*background-color:(#\w+)[^"]*">([a-z ]+)</td>', html)
    assert cells == [(VERDICT_COLOURS[v], v) for v in verdicts]
    assert len({VERDICT_COLOURS[v] for v in verdicts}) == 3, "each verdict its own colour"


def test_the_table_wraps_to_the_page_and_reads_as_text():
    table = _table()
    html = table._repr_html_()
    assert "table-layout:fixed;width:100%" in html and "white-space:normal" in html
    widths = [float(w) for w in re.findall(r'<col style="width:([\d.]+)%">', html)]
    assert len(widths) == len(table.frame.columns) and abs(sum(widths) - 100) < 0.5
    claim_col = list(table.frame.columns).index("claim")
    assert widths[claim_col] == max(widths), "the claim is the widest column"
    assert LONG in repr(table), "the text form keeps the whole claim too"


def test_the_report_colours_verdicts_as_the_notebooks_do():
    from kit.core.report import _CSS

    for verdict, colour in VERDICT_COLOURS.items():
        assert f".{verdict.replace(' ', '-')}{{background:{colour}}}" in _CSS
    assert set(VERDICT_COLOURS) == set(C.ALL_VERDICTS)
