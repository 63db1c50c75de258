"""kit.neuronvote.tables: Tables 1-4 beside the paper's, key numbers, closeness to the paper's
definitions."""

from __future__ import annotations

import json

import pytest

from kit.neuronvote import tables as nv_tables


def test_random_is_least_compatible(study):
    t2 = nv_tables.table2_compatibility(study, with_paper=False)
    assert t2["ours NeuronVote"].idxmin() == "Random", t2
    assert t2.loc["Probeless", "ours NeuronVote"] > 2 * t2.loc["Random", "ours NeuronVote"]


def test_tables_with_paper_and_key_numbers(study):
    tables = nv_tables.all_tables(study)
    assert "paper NeuronVote" in tables["table2"] and "paper s=30" in tables["table1"]
    assert tables["table2"].loc["Probeless", "paper NeuronVote"] == pytest.approx(0.532)
    assert list(tables["table3"].columns[:3]) == ["ours first", "ours middle", "ours last"]
    assert set(tables["table4"].index) == {"MeanSelect", "Random"}
    numbers = nv_tables.key_numbers(study, tables)
    assert all(not k.startswith("paper") for col in numbers["compatibility"] for k in [col]), \
        "key numbers must hold only our computed values"
    from kit.core.figures import _jsonable

    json.dumps(_jsonable(numbers))
    text = "\n".join(nv_tables.findings(study, **tables))
    assert "NeuronVote ranking" in text and "Random baseline" in text


def test_paper_closeness_marks_one_definition_set(study):
    out = nv_tables.paper_closeness({"a": study, "b": study})
    assert out["closest"].all() and (out["mean MAE"] >= 0).all()


def test_closeness_findings_name_the_closer_set():
    import pandas as pd

    c = pd.DataFrame({"table2 MAE": [0.08, 0.12], "table3 MAE": [0.09, 0.18], "table4 MAE": [0.03, 0.04],
                      "table2 NeuronVote Spearman": [0.64, 0.96]}, index=["paper_text", "neurox"])
    c["mean MAE"] = c[["table2 MAE", "table3 MAE", "table4 MAE"]].mean(axis=1)
    lines = nv_tables.closeness_findings(c)
    assert "Closer by the mean absolute gap: paper_text (by 0.047)" in lines[1]
    assert "the two criteria disagree" in lines[1]
