"""Config of notebooks/01_utility_law.ipynb (seed 000: sections 2, 3.2, 3.5-3.8, B.1, B.6)."""

from typing import Annotated, Literal

from pydantic import Field, model_validator

from kit.core.params import BaseConfig, Count, Fraction, distinct
from kit.core.registry import one_of


def _mui_scores():
    from kit.mui.scores import MUI_SCORES  # when validating: this module stays free of torch

    return MUI_SCORES


def _mui_thresholds():
    from kit.mui.key_neurons import MUI_THRESHOLDS

    return MUI_THRESHOLDS


Score = Annotated[str, one_of(_mui_scores)]
"""A name of :data:`kit.mui.scores.MUI_SCORES` (the table's names when the config is validated)."""
Threshold = Annotated[str, one_of(_mui_thresholds)]
"""A name of :data:`kit.mui.key_neurons.MUI_THRESHOLDS`."""


RANK_MIN_MODELS = 3
"""The Utility Law across models and PUR's ranking need at least three models."""


class Config(BaseConfig):
    models: list[str] | None = Field(None, min_length=1)
    """Models of the law/PUR study (kit.load_model names); None: every zoo member except training
    checkpoints. Fewer than :data:`RANK_MIN_MODELS` run every per-model section, and the law and
    PUR ranking read "not testable" with the count as the cause (checked here, before any model
    loads: see :meth:`Config.law_testable`)."""
    include_contaminated: bool = True
    """With ``models: null``, also include the contaminated fine-tunes (``+<task>-test-x*``,
    ``-syn-x*``)."""
    tasks: list[str] | None = Field(None, min_length=1)
    """Task families: ``kit.world.TASKS`` names for zoo models, ``kit.load_benchmark`` names for hub
    models; None: every world task."""
    n_items: int = Field(100, ge=4, le=2000)
    """Test items per task for performance and MUI (tiny world test splits hold 200)."""
    n_fresh: int = Field(100, ge=0, le=2000)
    """Fresh (never published) items per task whose accuracy is the true capability (tiny world
    only; 0 to skip)."""
    reference_order: list[str] | None = Field(None, min_length=3)
    """True ranking of ``models`` (every one of them), best first; None: by mean fresh-item
    accuracy (tiny world only: Hugging Face models have no fresh items, so they need it)."""
    family_pair: list[str] | None = Field(None, min_length=2, max_length=2)
    """Two sizes of one model family, smaller first (both in ``models``): the law within the
    family, does the larger score higher with a lower MUI (:mod:`kit.mui.size_pair`)? None: no
    such claims."""
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    """Hugging Face models: weight dtype (``bfloat16`` holds a 7B model in ~15 GB); zoo models are
    always float32."""
    max_new_tokens: int = Field(1, ge=1, le=8192)
    """Greedy response length (every tiny-world answer is one token; the paper used 1024)."""
    prompt_style: Literal["instructed", "plain"] = "instructed"
    """Real benchmarks: ``instructed`` wraps each question in its benchmark's answer-format
    instruction (``kit.data.prompts``: lm-evaluation-harness's Llama-3 instruct templates where they
    exist), ``plain`` shows the bare question (as the MUI paper's code shows instruct models).
    Tiny-world tasks keep their format."""
    score: Score = "score"
    """Neuron contribution score (kit.mui.scores.MUI_SCORES): Eq. 3 ``score`` is the paper's
    choice."""
    threshold: Threshold = "topk"
    """Key-neuron threshold (kit.mui.key_neurons.MUI_THRESHOLDS): per-token per-layer top-k is the
    paper's choice."""
    k: int | None = Field(None, ge=1)
    """k of ``topk``/``global_topk``; None: max(1, round(d_mlp/1000)) per layer (x n_layers for
    global)."""
    frac: float | None = Field(None, gt=0.0, le=1.0)
    """Fraction of ``top_pct`` (default 0.001) or ``topscore`` (default 0.2 of the layer max)."""
    alpha: float = Field(0.5, ge=0.0, le=2.0)
    """PUR penalty exponent: PUR = performance / MUI**alpha (0.5 reproduces Table 1 from Table
    5)."""
    batch_size: int = Field(32, ge=1, le=4096)
    """Rows per MUI scoring pass of zoo models (their prompts are a few words long)."""
    max_batch_tokens: int = Field(8192, ge=1)
    """Hugging Face models: padded tokens per teacher-forced MUI pass, in every section
    (length-sorted batches cut after their last response token;
    kit.mui.metric.mui_key_neurons, kit.mui.metric.token_budget_chunks)."""
    focus_model: str | None = None
    """Model of sections 3.6-3.8; None: ``zoo/base-m`` if present, else the first model."""
    growth_tasks: list[str] | None = Field(None, min_length=1)
    """Single-capability pools of section 3.6; None: the first task of each task group."""
    growth_pool_size: int = Field(100, ge=2, le=2000)
    """Items per pool (the mixed pool draws the same number evenly from the single pools' tasks)."""
    growth_sizes: list[Count] = Field([1, 2, 5, 10, 20, 50, 100], min_length=1)
    """Sample counts at which the union MUI is measured (each 1 .. ``growth_pool_size``)."""
    growth_repeats: int = Field(5, ge=1, le=100)
    """Random subsets per sample count."""
    correctness_n: int = Field(60, ge=4, le=2000)
    """Test items per task pooled for section 3.7 (correct vs incorrect, equal counts)."""
    masking_task_a: str | None = None
    """Task whose key neurons are masked in section 3.8; None: the first math task."""
    masking_task_b: str | None = None
    """Control task of section 3.8; None: the first task of another group."""
    masking_ks: list[Count] = Field([1, 2, 4, 8, 16, 32, 64, 128], min_length=1)
    """Numbers of neurons masked (each >= 1)."""
    masking_n_items: int = Field(100, ge=4, le=2000)
    """Items to find key neurons (test split) and to evaluate (fresh split) on each task."""
    masking_random_repeats: int = Field(3, ge=1, le=50)
    """Random-neuron draws per k (their accuracy is averaged)."""
    grid_models: list[str] | None = Field(None, min_length=1)
    """Models of the B.6 score x threshold grid; None: the base models (no ``+`` fine-tunes)."""
    grid_tasks: list[str] | None = Field(None, min_length=1)
    """Tasks of the B.6 grid; None: the first task of each group."""
    grid_n_items: int = Field(30, ge=2, le=2000)
    """Items per (model, task) cell of the B.6 grid (``gradient`` costs n_layers x 10 backward
    passes)."""
    grid_scores: list[Score] = Field(
        ["score", "activate", "gradient", "score_sum", "activate_sum"], min_length=1
    )
    """Contribution scores of the B.6 grid."""
    grid_thresholds: list[Threshold] = Field(
        ["topk", "global_topk", "top_pct", "topscore"], min_length=1
    )
    """Thresholds of the B.6 grid (each at its default parameter; ``topscore`` at every
    ``grid_topscore_fracs``)."""
    grid_topscore_fracs: list[Fraction] = Field([0.2, 0.8, 0.85, 0.9, 0.95], min_length=1)
    """``topscore`` fractions of the B.6 grid: 0.2 (A.4, Dai et al.) and MUI-Eval's 0.8-0.95."""
    law_form: Literal["mui_vs_log_perf", "perf_vs_log_mui"] = "mui_vs_log_perf"
    """Utility Law regression (kit.mui.law.LAW_FORMS): the paper's MUI = -alpha ln P + beta, or the
    inverse."""
    public_code_k: int | None = Field(None, ge=1)
    """k of the ``public_code`` variant; None: MUI-Eval's int(d_mlp/1000), replaced by 1
    (and said so) when 0."""
    multi_token_tasks: list[str] | None = None
    """Multi-token section: answer families (kit.world.EXTRA_TASKS names) whose per-sample MUI is
    shown; None: all of them; []: skip the section (hub models skip it)."""
    multi_token_models: list[str] | None = Field(None, min_length=1)
    """Zoo models of the multi-token section; None: the base models (no fine-tunes) of
    ``models``."""
    multi_token_n_items: int = Field(100, ge=4, le=200)
    """Multi-token section: test items per family (and per the one-token comparison task) and
    model."""
    multi_token_focus: str | None = None
    """Model whose correct vs incorrect per-sample MUI is compared on the multi-token
    families; None: the model with the largest k (zoo/base-xl)."""
    sae_names: list[str] | None = None
    """SAEs for the SAE-based MUI (kit.load_sae names); None: every SAE of the world (zoo models);
    []: skip the section."""
    sae_top: int = Field(50, ge=1, le=100000)
    """Features kept per layer and token at the reference width (A.3: top 50 at 128K)."""
    sae_reference_width: int | None = Field(131072, ge=1)
    """Width at which ``sae_top`` applies; the count is scaled to each SAE's width (None: no
    scaling)."""
    stability_seeds: list[int] = Field(default_factory=lambda: [1, 2], max_length=10)
    """Bootstrap seeds the claims are recomputed under (``kit.core.claims.mark_stability``: a
    verdict that differs under any of them is marked as flipping); []: no stability check."""

    @model_validator(mode="after")
    def _lists(self) -> "Config":
        for field in (
            "models",
            "tasks",
            "reference_order",
            "growth_tasks",
            "growth_sizes",
            "masking_ks",
            "grid_models",
            "grid_tasks",
            "grid_scores",
            "grid_thresholds",
            "multi_token_models",
        ):
            distinct(field, getattr(self, field))
        too_big = [n for n in self.growth_sizes if n > self.growth_pool_size]
        if too_big:
            raise ValueError(
                f"field 'growth_sizes': {too_big} exceed growth_pool_size="
                f"{self.growth_pool_size} (got {self.growth_sizes}); allowed values: "
                "1 .. growth_pool_size"
            )
        return self

    def law_testable(self) -> str | None:
        """None when the law and PUR ranking can run on ``models``; else why not (the cause the
        claims print), e.g. ``"1 model (real/smollm2-135m-instruct): ..."``."""
        if self.models is None or len(self.models) >= RANK_MIN_MODELS:
            return None
        n = len(self.models)
        return (
            f"not testable: {n} model{'s' if n > 1 else ''} ({', '.join(self.models)}); the law "
            f"across models and PUR's ranking need >= {RANK_MIN_MODELS}"
        )

    def requirements(self) -> list[str]:
        """>= 3 models to rank when ``models`` is None (an explicit shorter list runs without the
        law sections) and a true order that covers them."""
        models = self.models
        if models is None:
            # lazy: kit.mui.law pulls in the MUI stack; only a default model list needs it
            from kit.mui.law import default_models

            models = default_models(self.world, self.include_contaminated)
            if len(models) < 3:
                return [
                    f"field 'models': None gives {len(models)} model(s) of world "
                    f"{self.world!r} ({', '.join(models)}); the ranking needs >= 3: name them"
                ]
        if self.family_pair is not None and not set(self.family_pair) <= set(models):
            return [
                f"field 'family_pair': {self.family_pair} must both be in models "
                f"({', '.join(models)})"
            ]
        if len(models) < RANK_MIN_MODELS:
            return []  # no ranking: no true order needed (law_testable() says why)
        from kit.models.sources import form_of

        if self.reference_order is not None:
            missing = [m for m in models if m not in self.reference_order]
            if missing:
                return [
                    f"field 'reference_order': lacks {missing}; it must rank every model of "
                    f"models ({', '.join(models)})"
                ]
        elif any(not form_of(m).world_member for m in models):
            return [
                "field 'reference_order': required when models are not tiny-world members (got "
                f"models={models}): only the tiny world has fresh items to rank them by"
            ]
        return []
