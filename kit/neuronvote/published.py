"""The paper's printed numbers (seed 004, ``../shared/paper_tables/004_*.csv``) that apply to a
setting.

Each of notebook 05's settings names the paper's tables for its task and model in a
:class:`PaperRef`; a setting the paper never ran (a decoder: the paper ran three 12-layer encoders
only) has no reference, so its claims and tables show no paper value rather than another task's.

- POS, BERT, layers 1/6/12: Table 2 (AvgOverlap and NeuronVote, mean over layers), Table 3
  (NeuronVote per layer), Table 4 (MeanSelect), Table 1 (classifier accuracy);
- Chunking, BERT, layers 1/6/12: Table 6 (NeuronVote per layer; its mean over the three layers is
  the Table 2 analogue the paper does not print);
- POS, BERT, every layer 0-12: Tables 7 and 8 (AvgOverlap, NeuronVote), Table 14 (MeanSelect).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from kit.data.paper_tables import load_table
from kit.neuronvote import methods as nv

PROBING = ("lca", "lasso", "ridge")
"""The probing methods whose NeuronVote the paper says drops at the last layer (section 4.2)."""
_KEY = {v: k for k, v in nv.DISPLAY.items()}


@dataclass(frozen=True)
class PaperRef:
    """Which printed tables apply to a setting: ``task`` (``POS`` / ``Chunking``), the paper's
    ``model`` column (``BERT``...), and the per-layer NeuronVote table."""

    task: str
    model: str
    neuronvote_by_layer: str
    """Table of NeuronVote per method and layer (``004_table03_neuronvote_pos``...)."""
    avgoverlap_by_layer: str | None = None
    """Table of AvgOverlap per method and layer, where printed (all layers: Table 7)."""
    compatibility: str | None = None
    """Table 2 (AvgOverlap and NeuronVote averaged over layers 1/6/12), printed for POS/BERT
    only."""
    meanselect: str | None = None
    """MeanSelect's NeuronVote per layer (Table 4, or Table 14 for every layer)."""
    accuracy: str | None = None
    """Table 1 (classifier accuracy), POS/BERT only."""

    @property
    def label(self) -> str:
        return f"{self.model}, {self.task}"


POS_BERT = PaperRef(
    "POS",
    "BERT",
    "004_table03_neuronvote_pos",
    compatibility="004_table02_avgoverlap_neuronvote_pos_bert",
    meanselect="004_table04_meanselect_neuronvote_pos",
    accuracy="004_table01_classifier_accuracy_pos_bert",
)
CHUNKING_BERT = PaperRef("Chunking", "BERT", "004_table06_neuronvote_chunking")
ALL_LAYERS_BERT = PaperRef(
    "POS, every layer",
    "BERT",
    "004_table08_neuronvote_bert_all_layers",
    avgoverlap_by_layer="004_table07_avgoverlap_bert_all_layers",
    meanselect="004_table14_meanselect_neuronvote_all_layers",
)


def pos_ref(model: str = "BERT") -> PaperRef:
    """The POS tables of one of the paper's models (Tables 1-2 exist for BERT only)."""
    if model == "BERT":
        return POS_BERT
    return PaperRef("POS", model, POS_BERT.neuronvote_by_layer, meanselect=POS_BERT.meanselect)


PAPER_MODELS = {"bert-base-cased": "BERT", "roberta-base": "RoBERTa", "xlm-roberta-base": "XLMR"}
"""Hugging Face ids of the paper's encoders -> the model column of its tables."""


def table_label(name: str) -> str:
    """``004_table06_neuronvote_chunking`` -> ``Table 6``."""
    return f"Table {int(name.split('_')[1].removeprefix('table'))}"


def by_layer(ref: PaperRef, metric: str = "NeuronVote") -> pd.DataFrame:
    """method (our keys) x layer of the paper's ``metric`` for ``ref.model``."""
    name = ref.neuronvote_by_layer if metric == "NeuronVote" else ref.avgoverlap_by_layer
    if name is None:
        raise ValueError(f"the paper prints no per-layer {metric} for {ref.label}")
    t = load_table(name)
    t = t[t["model"] == ref.model]
    if "metric" in t.columns:
        t = t[t["metric"] == metric]
    out = t.pivot_table(index="method", columns="layer", values="score", aggfunc="first")
    out.index = [_KEY.get(m, m.lower()) for m in out.index]
    return out


def mean_scores(ref: PaperRef, metric: str = "NeuronVote") -> pd.Series:
    """method (our keys) -> the paper's ``metric`` averaged as our tables average it: Table 2 where
    printed, else the mean over the printed layers of the per-layer table. Empty when the paper
    prints no ``metric`` for ``ref``."""
    if ref.compatibility is not None:
        t = load_table(ref.compatibility)
        t = t[t["metric"] == metric]
        return pd.Series(
            t["score"].to_numpy(float), index=[_KEY.get(m, m.lower()) for m in t["method"]]
        )
    if metric == "AvgOverlap" and ref.avgoverlap_by_layer is None:
        return pd.Series(dtype=float)
    return by_layer(ref, metric).mean(axis=1)


def layer_trend(ref: PaperRef) -> float:
    """The probing methods' mean NeuronVote at the paper's last printed layer minus its first."""
    t = by_layer(ref).loc[[m for m in PROBING]]
    return float(t[max(t.columns)].mean() - t[min(t.columns)].mean())


def meanselect_mean(ref: PaperRef) -> float | None:
    """MeanSelect's NeuronVote averaged over the printed layers, or ``None`` when not printed."""
    if ref.meanselect is None:
        return None
    t = load_table(ref.meanselect)
    t = t[(t["model"] == ref.model) & (t["method"] == "MeanSelect")]
    if "metric" in t.columns:
        t = t[t["metric"] == "NeuronVote"]
    return float(t["score"].mean()) if len(t) else None
