"""kit.neuronvote.tables: Tables 1-4 beside the paper's, key numbers, closeness to the paper's
definitions."""

from __future__ import annotations

import json

import pytest

from kit.neuronvote import tables as nv_tables


def test_random_is_least_compatible(study):
    t2 = nv_tables.table2_compatibility(study, paper=None)
    assert not [c for c in t2.columns if c.startswith("paper")], (
        "no paper column without a paper table"
    )
    assert t2["ours NeuronVote"].idxmin() == "Random", t2
    assert t2.loc["Probeless", "ours NeuronVote"] > 2 * t2.loc["Random", "ours NeuronVote"]


def test_tables_with_paper_and_key_numbers(study):
    tables = nv_tables.all_tables(study)
    assert "paper NeuronVote" in tables["table2"] and "paper s=30" in tables["table1"]
    assert tables["table2"].loc["Probeless", "paper NeuronVote"] == pytest.approx(0.532)
    assert list(tables["table3"].columns[:3]) == ["ours first", "ours middle", "ours last"]
    assert set(tables["table4"].index) == {"MeanSelect", "Random"}
    numbers = nv_tables.key_numbers(study, tables)
    assert all(not k.startswith("paper") for col in numbers["compatibility"] for k in [col]), (
        "key numbers must hold only our computed values"
    )
    from kit.core.figures import _jsonable

    json.dumps(_jsonable(numbers))
    text = "\n".join(nv_tables.numbers(study, tables["table2"]))
    assert (
        "NeuronVote (mean over concepts" in text
        and "Random: AvgOverlap" in text
        and "paper: " in text
    )
    for verdict in ("supported", "contradicted", "beats", "most compatible"):
        assert verdict not in text, (
            "the numbers lines state numbers, never verdicts (those are the claims')"
        )


def test_paper_columns_follow_the_setting(study):
    """Chunking rows show Table 6 (chunking), not Table 2 (POS); a decoder shows no paper column."""
    from kit.data.paper_tables import load_table
    from kit.neuronvote.published import ALL_LAYERS_BERT, CHUNKING_BERT

    t6 = load_table("004_table06_neuronvote_chunking")
    t6 = t6[t6.model == "BERT"]
    chunk = nv_tables.all_tables(study, CHUNKING_BERT)
    assert chunk["table2"].loc["Probeless", "paper NeuronVote"] == pytest.approx(
        t6[t6.method == "Probeless"].score.mean(), abs=5e-4
    ), "chunking: the mean of Table 6's printed layers"
    assert chunk["table2"].loc["Probeless", "paper NeuronVote"] != pytest.approx(0.532), (
        "not POS Table 2"
    )
    assert "paper AvgOverlap" not in chunk["table2"], "Table 6 prints no AvgOverlap"
    assert "paper s=30" not in chunk["table1"], "Table 1 is POS only"
    assert chunk["table3"].loc["LCA", "paper BERT L12"] == pytest.approx(
        float(t6[(t6.method == "LCA") & (t6.layer == 12)].score.iloc[0])
    )
    for t in nv_tables.all_tables(study, None).values():
        assert not [c for c in t.columns if c.startswith("paper")], "a decoder has no paper column"
    every = nv_tables.table2_compatibility(study, ALL_LAYERS_BERT)
    t8 = load_table("004_table08_neuronvote_bert_all_layers")
    assert every.loc["LCA", "paper NeuronVote"] == pytest.approx(
        t8[t8.method == "LCA"].score.mean(), abs=5e-4
    )


def test_paper_closeness_marks_one_definition_set(study):
    out = nv_tables.paper_closeness({"a": study, "b": study})
    assert out["closest"].all() and (out["mean MAE"] >= 0).all()


def test_closeness_findings_name_the_closer_set():
    import pandas as pd

    c = pd.DataFrame(
        {
            "table2 MAE": [0.08, 0.12],
            "table3 MAE": [0.09, 0.18],
            "table4 MAE": [0.03, 0.04],
            "table2 NeuronVote Spearman": [0.64, 0.96],
        },
        index=["paper_text", "neurox"],
    )
    c["mean MAE"] = c[["table2 MAE", "table3 MAE", "table4 MAE"]].mean(axis=1)
    lines = nv_tables.closeness_findings(c)
    assert "Closer by the mean absolute gap: paper_text (by 0.047)" in lines[1]
    assert "the two criteria disagree" in lines[1]
