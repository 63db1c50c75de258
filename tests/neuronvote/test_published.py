"""The paper's printed numbers a setting is compared with (kit.neuronvote.published), checked
against values read off the CSVs by hand."""

from __future__ import annotations

import pytest

from kit.neuronvote import published
from kit.neuronvote.published import ALL_LAYERS_BERT, CHUNKING_BERT, POS_BERT


def test_layer_trend_is_last_minus_first_of_the_probing_methods():
    # Table 3, BERT: LCA/Lasso/Ridge at layer 1 = .501/.496/.332, at layer 12 = .391/.395/.360.
    assert published.layer_trend(POS_BERT) == pytest.approx((1.146 - 1.329) / 3, abs=1e-9)
    # RoBERTa's column of the same table: layer 1 = .550/.475/.452, layer 12 = .380/.350/.510.
    assert published.layer_trend(published.pos_ref("RoBERTa")) == pytest.approx(
        (1.240 - 1.477) / 3, abs=1e-9
    )


def test_mean_scores_take_table2_where_printed_else_the_mean_over_printed_layers():
    pos = published.mean_scores(POS_BERT, "NeuronVote")
    assert pos["probeless"] == pytest.approx(0.532) and pos["lca"] == pytest.approx(0.514)
    assert published.mean_scores(POS_BERT, "AvgOverlap")["probeless"] == pytest.approx(0.269)
    chunk = published.mean_scores(CHUNKING_BERT, "NeuronVote")  # Table 6, BERT layers 1/6/12
    assert chunk["probeless"] == pytest.approx((0.465 + 0.506 + 0.422) / 3)
    assert chunk["lca"] == pytest.approx((0.395 + 0.469 + 0.300) / 3)
    assert published.mean_scores(CHUNKING_BERT, "AvgOverlap").empty, "Table 6 prints no AvgOverlap"
    assert not published.mean_scores(ALL_LAYERS_BERT, "AvgOverlap").empty, "Table 7 does"


def test_meanselect_and_labels():
    assert published.meanselect_mean(POS_BERT) == pytest.approx((0.464 + 0.476 + 0.402) / 3)
    assert published.meanselect_mean(CHUNKING_BERT) is None, "the paper ran no MeanSelect on chunks"
    assert published.table_label("004_table06_neuronvote_chunking") == "Table 6"
    assert CHUNKING_BERT.label == "BERT, Chunking"
    with pytest.raises(ValueError, match="no per-layer AvgOverlap"):
        published.by_layer(POS_BERT, "AvgOverlap")
