"""Notebook 04's study, one typed object filled section by section.

Each notebook section sets fields of a :class:`CGStudy` (``study.coverage = ...``,
``study.nulls[model] = ...``); the claims (:func:`kit.cg.claims.cg_claims`) are declared over these
fields and :meth:`CGStudy.results` writes the numbers ``results.json`` keeps. Nothing travels as a
string-keyed bag between sections: a field says what it holds, and a missing section leaves its
field at its empty default.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd
import torch
from jaxtyping import Float
from torch import Tensor

import kit
from kit.cg import model_space
from kit.cg import saes as cg_saes
from kit.cg import suite as cg_suite
from kit.cg.answers import ModelAnswers
from kit.cg.nulls import ModelNulls
from kit.cg.planted import PlantedGapResult
from kit.cg.planted_settings import planted_gap_results
from kit.cg.significance import GapTest
from kit.cg.size_control import EqualSizeCoverage, SaeSwap
from kit.cg.suite import Suite


@dataclass
class CGStudy:
    """Everything notebook 04 computes (seed 002), in the order its sections fill it."""

    cfg: Any
    """The notebook's config (:class:`kit.configs.competency_gaps.Config`)."""
    sae_names: list[str] = field(default_factory=list)
    """Concept spaces, smaller first; the last is the main one."""
    suites: dict[str, Suite] = field(default_factory=dict)
    """SAE name -> the suite read through it (section 1)."""
    answers: dict[str, dict[str, ModelAnswers]] = field(default_factory=dict)
    """Model -> benchmark -> the model's own scored answers (``responses: generate`` on the MiniLM
    space)."""
    published: dict[str, dict[str, float]] = field(default_factory=dict)
    """Published response set -> its accuracy and parse rate over the whole file (section 2)."""
    coverage: dict[str, dict] = field(default_factory=dict)
    """SAE name -> :func:`kit.cg.report.coverage_summary` (section 3)."""
    coverage_vs_text: EqualSizeCoverage | None = None
    """Missing shares of the suite and of general text at one size (the coverage claim)."""
    denominators: dict[str, float] = field(default_factory=dict)
    jaccard: pd.DataFrame | None = None
    benchmark_classes: pd.DataFrame | None = None
    """Per benchmark: counts of missing / under / normal / over-represented concepts."""
    model_benchmarks: pd.DataFrame | None = None
    """Per (model, benchmark) scored: items, accuracy, concepts defined (section 4)."""
    model_performance: dict[str, dict] = field(default_factory=dict)
    significance: dict[str, dict] = field(default_factory=dict)
    gap_tests: dict[str, GapTest] = field(default_factory=dict)
    pair: dict | None = None
    """Two models on the same ARC items: profile agreement (section 5)."""
    robustness: dict = field(default_factory=dict)
    """The paper's section 4.2.3 numbers for the primary model (section 6)."""
    nulls: dict[str, ModelNulls] = field(default_factory=dict)
    """Model -> its statistics beside their shuffled-correctness nulls."""
    cross_sae: dict = field(default_factory=dict)
    sae_swap: SaeSwap | None = None
    """Benchmarks' missing fractions at equal size under both SAEs (section 7)."""
    zoo: dict = field(default_factory=dict)
    zoo_error: str = ""
    planted: dict[str, tuple[PlantedGapResult | None, str]] = field(default_factory=dict)
    """``dictionary/pooling`` -> the planted-gap analysis, or None and why not (section 8b)."""
    calibration: pd.DataFrame | None = None
    explorer_concepts: int = 0
    runtime_s: float = 0.0

    @property
    def main_sae(self) -> str:
        return self.sae_names[-1]

    @property
    def small_sae(self) -> str:
        return self.sae_names[0]

    @property
    def suite(self) -> Suite:
        """The suite under the main SAE."""
        return self.suites[self.main_sae]

    @property
    def models(self) -> list[str]:
        """Models with per-item scores, in the order the suite lists them."""
        return list(self.suite.model_scores)

    @property
    def primary(self) -> str | None:
        """The model the single-model sections analyse (the first one)."""
        return self.models[0] if self.models else None

    def claim_models(self) -> list[str]:
        """Models whose gaps become claims: every model that answered here (``responses:
        generate``), else the primary model (published responses)."""
        if self.cfg.responses == "generate":
            return self.models
        return [self.primary] if self.primary else []

    def source_of(self, model: str) -> str:
        """Where ``model``'s per-item scores come from, in words (a claim's ``rests_on``)."""
        benches = ", ".join(self.suite.model_scores[model])
        n = sum(len(s) for s in self.suite.model_scores[model].values())
        how = (
            "its own greedy answers generated here"
            if model in self.answers or self.cfg.responses == "generate"
            else "published greedy responses"
        )
        space = ("MiniLM SAE " if self.cfg.concept_space == "minilm" else "") + self.main_sae
        return f"{model}: {how} ({n} items of {benches}), concepts from {space}"

    def results(self) -> dict[str, Any]:
        """The numbers ``results.json`` keeps (JSON-plain)."""
        cfg = self.cfg
        out: dict[str, Any] = {
            "main_sae": self.main_sae,
            "sae_names": self.sae_names,
            "n_reruns": cfg.n_reruns,
            "drop_frac": cfg.drop_frac,
            "label_source": self.suite.label_source,
            "coverage": self.coverage,
            "x_bench_denominators": self.denominators,
        }
        if cfg.concept_space == "minilm":
            from kit.cg.saes import minilm_sae_meta  # lazy: imports torch and sae_lens

            out["sae_meta"] = {
                n: {
                    k: minilm_sae_meta(n)[k]
                    for k in ("width", "k", "train_tokens", "fvu_train", "dead_fraction")
                }
                for n in self.sae_names
            }
        if self.published:
            out["response_accuracy"] = {n: v["accuracy"] for n, v in self.published.items()}
            out["response_parse_rate"] = {n: v["parse_rate"] for n, v in self.published.items()}
        if self.answers:
            out["answers"] = [a.summary() for per in self.answers.values() for a in per.values()]
        if self.coverage_vs_text is not None:
            out["coverage_vs_text"] = self.coverage_vs_text.summary()
        if self.jaccard is not None:
            out["jaccard"] = self.jaccard
        if self.benchmark_classes is not None:
            out["per_benchmark_classes"] = self.benchmark_classes.to_dict(orient="index")
        if self.model_benchmarks is not None:
            out["model_benchmarks"] = self.model_benchmarks.to_dict(orient="records")
        out.update(model_performance=self.model_performance, significance=self.significance)
        if self.pair is not None:
            out["llama_vs_qwen"] = self.pair
        if self.robustness:
            out.update(robustness_model=self.primary, robustness=self.robustness)
        if self.nulls:
            out["nulls"] = {m: n.table().to_dict(orient="records") for m, n in self.nulls.items()}
        out["cross_sae"] = self.cross_sae
        if self.sae_swap is not None:
            out["sae_swap"] = self.sae_swap.summary()
        if self.zoo:
            out["zoo"] = self.zoo
        if self.zoo_error:
            out["zoo_error"] = self.zoo_error
        if self.planted:
            out.update(planted_gap_results(self.planted))
        if self.calibration is not None:
            out["calibration_suite"] = self.calibration[
                self.calibration.benchmark == "(suite)"
            ].to_dict(orient="records")
        out.update(explorer_concepts=self.explorer_concepts, runtime_s=self.runtime_s)
        return {k: _plain(v) for k, v in out.items()}


def _plain(v: Any) -> Any:
    """numpy scalars to Python numbers (``results.json`` is plain JSON)."""
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    return v


# ------------------------------------------------------------------ the notebook's concept space
def build_suites(cfg, answers=None) -> tuple[list[str], dict[str, Suite]]:
    """(SAE names, {SAE name: Suite}) for a notebook config: the offline MiniLM concept space with
    published responses and/or the models' own ``answers`` (:func:`kit.cg.answers.run_answers`), or
    (``concept_space='model'``) the paper's setting."""
    if cfg.concept_space == "minilm":
        names = cfg.sae_names()
        suites = cg_suite.real_suite(
            names,
            cfg.benchmarks,
            cfg.n_items,
            cfg.response_sets,
            cfg.n_response_items,
            include_responses=cfg.include_responses,
            max_length=cfg.max_length,
            seed=cfg.seed,
            device=cfg.device,
            answers=answers,
            n_text_items=cfg.null_text_items,
        )
    else:
        names = list(cfg.model_saes)
        suites = model_space.model_suites(
            cfg.models,
            names,
            cfg.benchmarks,
            cfg.n_items,
            cfg.max_new_tokens,
            cfg.max_length,
            cfg.seed,
            cfg.device,
            cfg.include_responses,
            dtype=cfg.dtype,
            max_batch_tokens=cfg.max_batch_tokens,
            gen_batch_size=cfg.gen_batch_size,
            labels=cfg.labels,
            label_texts=cfg.label_texts,
            n_text_items=cfg.null_text_items,
        )
    for suite in suites.values():
        suite.x_bench_denominator = cfg.x_bench_denominator
    return names, suites


def token_features(cfg, texts: Sequence[str]) -> list[Float[Tensor, "n_tokens d_sae"]]:
    """Per text, its per-token concept activations in the notebook's main concept space, the input
    of eq. 1 (:func:`kit.cg.metrics.item_concept_activation`): MiniLM's residual stream at the SAE's
    site encoded by the main MiniLM SAE (``concept_space: minilm``, as
    :func:`kit.cg.saes.item_concepts` reads it), or the first model's activations encoded by its own
    SAE, BOS excluded (``model``, as :func:`kit.cg.model_space.hooked_item_concepts` reads it).
    Texts cut to ``cfg.max_length``."""
    if cfg.concept_space == "minilm":
        from kit.models.encoders import load_encoder

        name = cfg.sae_names()[-1]
        sae = cg_saes.load_minilm_sae(name, device=cfg.device)
        acts = load_encoder("minilm", device=cfg.device).token_activations(
            list(texts), cg_saes.MinilmSAESpec.from_name(name).site, max_length=cfg.max_length
        )
        with torch.inference_mode():
            return [sae.encode(a.to(sae.W_enc.device)).float().cpu() for a in acts]
    model = kit.load_model(cfg.models[0], device=cfg.device, dtype=cfg.dtype)
    sae = kit.load_sae(cfg.model_saes[0], device=cfg.device)
    rows = model_space._item_rows(model, texts, cfg.max_length)
    out = []
    with torch.inference_mode():
        for i in range(len(rows)):
            a = model_space._forward_batches(model, sae.cfg.metadata.hook_name, rows, [i])[0]
            a = a[1:] if a.shape[0] > 1 else a
            out.append(sae.encode(a.to(sae.W_enc.device, sae.W_enc.dtype)).float().cpu())
    return out
