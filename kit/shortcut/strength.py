"""Fig. 5 / Table 8 on real fine-tunes: which rows are one recipe at several strengths.

The tiny world retrains its ``+test`` recipe at several copies and learning rates
(:mod:`kit.shortcut.variants`); the real rows of Table 2 already hold two strengths of one recipe,
SmolLM2 fine-tuned on the same leaked ARC-Challenge items once (``+test``, 1x) and five times
(``+5x test``), every other setting equal. The claim (``strength.table8`` in
:mod:`kit.shortcut.claims`) compares TE's Δacc of the strongest and the
weakest of those rows on the same test items: a paired bootstrap over items of
Δacc(most copies) - Δacc(fewest copies), predicted negative (a larger drop with more copies). It
says something only where both rows' leaks are established (their ``te.leak[...]`` claims exclude
0): TE has nothing to lower otherwise, so the claim then cannot be decided here.
"""

from __future__ import annotations

from collections.abc import Mapping

CLAIM_ID = "strength.table8"


def strength_rows(variants: Mapping[str, str]) -> dict[str, int]:
    """Table 2's labels whose models are real recipes leaking the test items verbatim (no
    paraphrase) and differ from each other only in ``copies``: label -> copies. Empty unless two
    or more copy levels are found."""
    from dataclasses import replace

    from kit.models.recipes import RECIPES  # lazy: keeps this module import-light

    rows = {
        label: RECIPES[name]
        for label, name in variants.items()
        if name in RECIPES and RECIPES[name].inject == "test" and not RECIPES[name].paraphrase
    }
    if not rows:
        return {}
    # one recipe at several strengths: everything but name and copies equal
    first = next(iter(rows.values()))
    same = {
        label: r
        for label, r in rows.items()
        if replace(r, name=first.name, copies=first.copies) == first
    }
    copies = {label: r.copies for label, r in same.items()}
    return copies if len(set(copies.values())) >= 2 else {}
