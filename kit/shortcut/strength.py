"""Fig. 5 / Table 8 on real fine-tunes: does TE's drop grow with contamination strength?

The tiny world retrains its ``+test`` recipe at several copies and learning rates
(:mod:`kit.shortcut.variants`); the real rows of Table 2 already hold two strengths of one recipe,
SmolLM2 fine-tuned on the same leaked ARC-Challenge items once (``+test``, 1x) and five times
(``+5x test``), every other setting equal. The claim compares TE's Δacc of the strongest and the
weakest of those rows on the same test items: a paired bootstrap over items of
Δacc(most copies) - Δacc(fewest copies), predicted negative (a larger drop with more copies). It
says something only where both rows' leaks are established (their ``te.leak[...]`` claims exclude
0): TE has nothing to lower otherwise, so the claim then cannot be decided here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from kit.core.claims import Claim, bootstrap_claim, excludes_null, mark_undecidable
from kit.shortcut.evidence import PAPER, PerItem, _delta

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


def real_strength_claim(
    te: PerItem,
    copies: Mapping[str, int],
    out: Sequence[Claim],
    rests_on: str,
    items: str = "test items",
    n_boot: int = 1000,
    seed: int = 0,
) -> Claim:
    """Δacc(most copies) - Δacc(fewest copies) in points, paired over the test items (``items``:
    what they are, e.g. the held-out ones), against 0 (direction ``less``); cannot be decided when
    either row's leak claim (in ``out``) does not exclude 0."""
    low = min(copies, key=lambda k: (copies[k], k))
    high = max(copies, key=lambda k: (copies[k], k))
    a, b = te[low], te[high]
    if len(a["ori"]) != len(b["ori"]):
        raise ValueError(
            f"rows {low!r} and {high!r} were scored on different items ({len(a['ori'])} vs "
            f"{len(b['ori'])}): the strength contrast pairs them item by item"
        )

    def stat(ori_l, te_l, ori_h, te_h):
        return _delta(ori_h, te_h) - _delta(ori_l, te_l)

    arrays = [np.asarray(x, float) for x in (a["ori"], a["te"], b["ori"], b["te"])]
    c = bootstrap_claim(
        PAPER,
        "Fig. 5 / Table 8",
        CLAIM_ID,
        f"TE's drop grows with contamination strength: Δacc of {high} ({copies[high]}x) minus "
        f"Δacc of {low} ({copies[low]}x), points (the same {items})",
        stat,
        *arrays,
        n_boot=n_boot,
        seed=seed,
        null=0.0,
        null_how="no change with strength (0)",
        direction="less",
        paper_value="larger drops at more occurrences (Fig. 5, Table 8)",
        interval_how=f"paired bootstrap over {len(arrays[0])} {items}",
        rests_on=f"{rests_on}; the {copies[low]}x and {copies[high]}x rows of one recipe",
    )
    leaks = {c_.id: c_ for c_ in out}
    for label in (low, high):
        leak = leaks.get(f"te.leak[{label}]")
        if leak is not None and not excludes_null(leak):
            return mark_undecidable(
                c,
                f"the {label} row's leak is not established ({leak.id}: "
                f"{leak.why.split(';')[0]}): TE has no inflated score to lower",
            )
    return c
