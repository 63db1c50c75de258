"""Seed 001's published numbers (``../shared/paper_tables``): Figure 4's agreement recomputed from
Table 9, the relative accuracy changes recomputed from Table 2, and the running text's numbers.
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from kit.shortcut.evaluate import agreement


def table9_agreement(table: pd.DataFrame | None = None) -> pd.DataFrame:
    """Figure 4 (right) recomputed from the printed Table 9: TE vs Ref and Ori vs Ref (MixEval)."""
    if table is None:
        from kit.data.paper_tables import load_table

        table = load_table("001_table09_real_world_models")
    rows = []
    for col in ("te", "ori"):
        a = agreement(table[col].to_numpy(float), table["ref_mixeval"].to_numpy(float))
        rows.append({"score": col.upper(), **a})
    return pd.DataFrame(rows)


def paper_relative_changes(exclude_clean: Sequence[str] = ("+GSM8K Train",)) -> dict[str, float]:
    """Relative Δacc (% of Ori) recomputed from the printed Table 2: the mean drop of contaminated
    rows (the text's 37%) and the mean |change| of clean rows without ``exclude_clean`` (the text's
    3%: 2.7% without +GSM8K Train, 5.4% with it; the text does not say which rows it averaged)."""
    from kit.data.paper_tables import load_table

    t = load_table("001_table02_trustworthy_eval_gsm8k")
    t = t[t.model_variant != "Vanilla"].assign(
        ori=lambda d: d.ori.astype(float), te=lambda d: d.te.astype(float)
    )
    rel = 100 * (t.te - t.ori) / t.ori
    con = t.model_variant.str.contains("GSM-i")
    clean = ~con & ~t.model_variant.isin(list(exclude_clean))
    return {
        "con_drop_table2": float(-rel[con].mean()),
        "un_change_table2": float(rel[clean].abs().mean()),
        "un_change_table2_all_clean": float(rel[~con].abs().mean()),
    }


def paper_text_numbers() -> dict[str, float]:
    """The running-text numbers the findings compare against, loaded from
    ``001_text_numbers.csv``."""
    from kit.data.paper_tables import load_table

    t = load_table("001_text_numbers", numeric=False).set_index("quantity")["value"]

    def pick(fragment: str) -> float:
        hits = [v for k, v in t.items() if fragment in str(k)]
        return float(hits[0].replace(",", ""))

    return {
        "rho": pick("Spearman correlation of TE"),
        "con_drop": pick("average accuracy drop of contaminated"),
        "un_change": pick("average accuracy change of uncontaminated"),
        "percent": pick("share of LLaMA2-7B"),
    }
