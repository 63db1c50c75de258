"""Tests of kit.shortcut.published: seed 001's Table 2 and Table 9 recomputed."""

from __future__ import annotations

import pandas as pd
import pytest

from kit.shortcut import evaluate, published, study


def test_paper_relative_changes_from_table2():
    r = published.paper_relative_changes()
    # LLaMA +GSM-i: (27.0 - 40.5) / 40.5 = -33.3%; the text's 37% and 3% are such relative numbers
    assert 35 < r["con_drop_table2"] < 38 and 2 < r["un_change_table2"] < 3.5
    t = pd.DataFrame(
        {
            "contaminated": [True, False],
            "ref": [20.0, 25.0],
            "ori": [40.0, 20.0],
            "te": [30.0, 21.0],
        }
    )
    s = evaluate.table2_summary(t)
    assert s["contaminated_mean_relative_delta_acc"] == pytest.approx(-25.0)
    assert s["uncontaminated_mean_abs_relative_delta_acc"] == pytest.approx(5.0)
    text = "\n".join(study.findings(s, 29, 2048, paper=r | {"con_drop": 37.0, "un_change": 3.0}))
    assert (
        "clean |change| 5.0%, contaminated drop 25.0%" in text and "paper text: 3% and 37%" in text
    )
    assert (
        "|TE-Ref| = 4.0 vs |Ori-Ref| = 5.0 pts (point values" in text
        and "claim te.clean_toward_ref" in text
    )
    a2 = study.a2_findings(
        pd.DataFrame(
            {
                "variant": ["+train split"],
                "ori": [30.0],
                "ref": [28.0],
                "te": [32.0],
                "delta_acc": [2.0],
            }
        )
    )
    assert "rises" in a2[0] and "drops (-6.5 / -4.3 pts)" in a2[0]


def test_table9_recomputed_from_printed_values():
    t9 = published.table9_agreement()
    te, ori = t9.set_index("score").loc["TE"], t9.set_index("score").loc["ORI"]
    assert te["spearman"] > ori["spearman"], (
        "the paper's point: TE ranks models closer to MixEval than Ori"
    )
    assert te["rmse"] < ori["rmse"]
    assert 0.8 < te["spearman"] <= 1.0
