"""The settings notebook 05 runs, and its typed result.

A *setting* is one model on one concept set at some of its layers: MiniLM on UD EWT POS at its
first/middle/last layer (the paper's Tables 1-4), on CoNLL-2000 chunks (Table 6), at every layer
(Tables 7-14), and a decoder (the tiny world's on word roles, or SmolLM2 on POS: the paper ran
encoders only). :func:`plan_encoder` and :func:`plan_decoder` build a setting's concept tasks and
word vectors and lay its units out (:func:`kit.neuronvote.study.plan_study`);
:func:`kit.neuronvote.study.run_plans` computes them. :class:`NeuronVoteStudy` holds everything the
notebook computes, filled step by step, and the claims are declared over its fields
(:mod:`kit.neuronvote.claims`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd

from kit.core.jobs import engine_options
from kit.neuronvote import concepts as nv_concepts
from kit.neuronvote.concepts import ConceptTask
from kit.neuronvote.published import PaperRef
from kit.neuronvote.study import StudyPlan, StudyResult, first_middle_last, plan_study, run_plans

if TYPE_CHECKING:
    from kit.models.tl import HookedModel

_PREPARED: dict = {}


@dataclass
class Setting:
    """One setting's study and what its claims need to know about it."""

    name: str
    """``encoder``, ``decoder``, ``chunking`` or ``layers``: which claims apply (claims module)."""
    prefix: str
    """Prefix of its claim ids (``""`` for the main setting, ``decoder.``...)."""
    title: str
    """What it is, for statements: ``minilm on ud_ewt POS``."""
    result: StudyResult
    concept_counts: pd.DataFrame
    paper: PaperRef | None
    """The paper's tables for this task and model; ``None`` where the paper ran no such setting."""
    rests_on: str
    """The model and data the numbers rest on (claims' ``rests_on``)."""


@dataclass
class NeuronVoteStudy:
    """Everything notebook 05 computes, filled step by step (``None`` / empty until its cell
    ran)."""

    by_definitions: dict[str, StudyResult] = field(default_factory=dict)
    """The main study under each definition set (``paper_text``, ``neurox``)."""
    closeness: pd.DataFrame | None = None
    """Each definition set's gap to the paper's Tables 2-4 (``tables.paper_closeness``)."""
    closest: str = ""
    encoder: Setting | None = None
    """The main study (closest definition set, with its shuffled-label null)."""
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    """Tables 1-4 of the main study, the paper's beside."""
    decoder: Setting | None = None
    chunking: Setting | None = None
    layers: Setting | None = None
    others: dict[str, StudyResult] = field(default_factory=dict)
    """Further encoders and corpora (``extra_encoders``, ``second_source``)."""
    subsets: dict[str, pd.DataFrame] = field(default_factory=dict)
    lobby: pd.DataFrame | None = None

    @property
    def settings(self) -> list[Setting]:
        """The settings run, main first."""
        return [
            s for s in (self.encoder, self.decoder, self.chunking, self.layers) if s is not None
        ]


def study_kwargs(cfg, definitions: str | None = None, shuffles: int = 0) -> dict[str, Any]:
    """:func:`kit.neuronvote.study.plan_study` keyword arguments from a notebook 05 ``Config``."""
    return dict(
        methods=cfg.methods,
        voters=cfg.voters,
        s_values=cfg.s_values,
        accuracy_s=cfg.accuracy_s,
        pairwise_s=cfg.pairwise_s,
        seed=cfg.seed,
        random_draws=cfg.random_draws,
        reseeds=cfg.reseeds,
        shuffles=shuffles,
        iou_percentile=cfg.iou_percentile,
        lambda1=cfg.lambda1,
        lambda2=cfg.lambda2,
        gaussian_max_neurons=cfg.gaussian_max_neurons,
        probe_standardize=cfg.probe_standardize,
        definitions=definitions or cfg.definitions[0],
    )


def _usable(tasks: list[ConceptTask]) -> list[ConceptTask]:
    # A task needs both classes in training and a few test words for the classifier.
    return [
        t for t in tasks if min(len(t.test), int(t.y_train.sum()), int((1 - t.y_train).sum())) > 1
    ]


def _tagged_corpus(
    source: str, tags, min_examples: int, max_sentences: int | None, cap: int | None, seed: int
):
    """Sentences, concept summary and tasks of a POS/chunk corpus (tags counted on the whole corpus,
    then the corpus subsampled to ``max_sentences``, as in the paper the counts decide which tags
    stay)."""
    sentences = nv_concepts.load_sentences(source, max_sentences=None, seed=seed)
    summary = nv_concepts.concept_summary(sentences, tags, min_examples)
    if max_sentences is not None and max_sentences < len(sentences):
        sentences = nv_concepts.load_sentences(source, max_sentences=max_sentences, seed=seed)
    kept = summary.concept[summary.kept].tolist()
    tasks = _usable(
        nv_concepts.build_concept_tasks(
            sentences, kept, min_examples=1, max_per_class=cap, seed=seed
        )
    )
    if not tasks:
        raise ValueError(f"no concept of {tags} has >= {min_examples} examples in {source}")
    return sentences, summary, tasks


def encoder_data(
    cfg, encoder: str, source: str, tags, max_per_class: int | None | str = "cfg"
) -> tuple[list[ConceptTask], dict[str, np.ndarray], pd.DataFrame, int]:
    """Concept tasks and word vectors of one encoder on one corpus, computed once per session.

    Returns (tasks, site -> Float["n_flat_words d"], concept summary, n_layers). With
    ``cfg.site == "hook_resid_post"`` every layer's output and the embedding output
    (``blocks.0.hook_resid_pre``) are computed in the same forward pass (for the all-layer study).
    ``max_per_class`` (default ``cfg.max_per_class``): when the same corpus was already encoded
    with all examples, a capped variant is drawn from those words (no second forward pass).
    """
    from kit.models.encoders import load_encoder

    cap = cast("int | None", cfg.max_per_class if max_per_class == "cfg" else max_per_class)
    base = (
        encoder,
        source,
        None if tags is None else tuple(tags),
        cfg.site,
        cfg.min_examples,
        cfg.max_sentences,
        cfg.seed,
        cfg.device,
    )
    if base + (cap,) in _PREPARED:
        return _PREPARED[base + (cap,)][:4]
    if cap is not None and base + (None,) in _PREPARED:
        tasks_all, acts, summary, n_layers, sentences = _PREPARED[base + (None,)]
        kept = [t.concept for t in tasks_all]
        tasks = _usable(
            nv_concepts.build_concept_tasks(
                sentences, kept, min_examples=1, max_per_class=cap, seed=cfg.seed
            )
        )
        _PREPARED[base + (cap,)] = (tasks, acts, summary, n_layers, sentences)
        return _PREPARED[base + (cap,)][:4]
    sentences, summary, tasks = _tagged_corpus(
        source, tags, cfg.min_examples, cfg.max_sentences, cap, cfg.seed
    )
    sentences, tasks = nv_concepts.compact(sentences, tasks)
    enc = load_encoder(encoder, device=cfg.device)
    sites = [f"blocks.{L}.{cfg.site}" for L in range(enc.n_layers)]
    if cfg.site == "hook_resid_post":
        sites = ["blocks.0.hook_resid_pre"] + sites
    acts = enc.word_activations(
        [list(s.words) for s in sentences], sites, batch_size=cfg.batch_size
    )
    _PREPARED[base + (cap,)] = (
        tasks,
        {k: v.numpy() for k, v in acts.items()},
        summary,
        enc.n_layers,
        sentences,
    )
    return _PREPARED[base + (cap,)][:4]


def plan_encoder(
    cfg,
    encoder: str | None = None,
    source: str | None = None,
    definitions: str | None = None,
    all_layers: bool = False,
    tags=None,
    max_per_class: int | None | str = "cfg",
    shuffles: int = 0,
) -> tuple[StudyPlan, pd.DataFrame]:
    """One encoder on one tagged corpus, from a notebook 05 ``Config``, laid out as units.

    Loads the corpus, builds the concept tasks (tags below ``cfg.min_examples`` dropped), computes
    word vectors (mean of subtokens) at ``blocks.{L}.{cfg.site}``, with the definition set
    ``definitions`` (default ``cfg.definitions[0]``). Layers: ``cfg.layers`` (default
    first/middle/last block, keyed by block index); ``all_layers``: the embedding output and every
    block, keyed by the paper's numbering (0 = embeddings, k = output of block k - 1; Tables 7-14).
    ``tags``: default ``cfg.tags`` for POS sources, ``concepts.CHUNK_TAGS`` for ``conll2000_chunk``.
    ``max_per_class``: default ``cfg.max_per_class`` (the notebook passes
    ``cfg.extra_max_per_class`` for chunking and the all-layer study). ``shuffles``: shuffled-label
    copies per unit. Returns (plan, concept summary with counts and kept flags).
    """
    encoder = encoder or cfg.encoder
    source = source or cfg.source
    if tags is None:
        tags = list(nv_concepts.CHUNK_TAGS) if source == "conll2000_chunk" else cfg.tags
    tasks, acts, summary, n_layers = encoder_data(cfg, encoder, source, tags, max_per_class)
    if all_layers:
        if cfg.site != "hook_resid_post":
            raise ValueError(
                f"all_layers needs site='hook_resid_post' (the embedding output has no {cfg.site})"
            )
        sites = {0: "blocks.0.hook_resid_pre"} | {
            L + 1: f"blocks.{L}.hook_resid_post" for L in range(n_layers)
        }
    else:
        layers = cfg.layers if cfg.layers is not None else first_middle_last(n_layers)
        bad = [L for L in layers if not 0 <= L < n_layers]
        if bad:
            raise ValueError(
                f"layers {bad} out of range for {encoder} ({n_layers} layers: 0..{n_layers - 1})"
            )
        sites = {L: f"blocks.{L}.{cfg.site}" for L in layers}
    vectors = {L: acts[site] for L, site in sites.items()}
    name = encoder if source == cfg.source else f"{encoder} ({source})"
    plan = plan_study(
        tasks,
        vectors,
        model=name,
        site="all layers (0 = embeddings)" if all_layers else f"blocks.{{L}}.{cfg.site}",
        **study_kwargs(cfg, definitions, shuffles),
    )
    return plan, summary


def study_encoder(
    cfg,
    encoder: str | None = None,
    source: str | None = None,
    progress: bool = True,
    definitions: str | None = None,
    all_layers: bool = False,
    tags=None,
    max_per_class: int | None | str = "cfg",
    shuffles: int = 0,
) -> tuple[StudyResult, pd.DataFrame]:
    """:func:`plan_encoder` computed on ``cfg``'s engine. Returns (result, concept summary)."""
    plan, summary = plan_encoder(
        cfg, encoder, source, definitions, all_layers, tags, max_per_class, shuffles
    )
    return run_plans([plan], engine_options(cfg), progress, desc=f"{plan.model} units")[0], summary


def decoder_sentences(cfg) -> tuple[list, pd.DataFrame, list[ConceptTask]]:
    """The decoder's concept corpus: the tiny world's word roles (``decoder_source: world-roles``),
    or a POS corpus (``ud_ewt``, ``conll2000``) for a decoder with a real tokenizer (SmolLM2), with
    ``cfg.tags`` and ``cfg.min_examples`` as for the encoder, ``decoder_max_sentences``
    sentences."""
    if cfg.decoder_source == "world-roles":
        sentences = nv_concepts.load_sentences(
            "world-roles", seed=cfg.seed, world_n_per_task=cfg.decoder_n_per_task
        )
        summary = nv_concepts.concept_summary(sentences, None, cfg.decoder_min_examples)
        kept = summary.concept[summary.kept].tolist()
        tasks = nv_concepts.build_concept_tasks(
            sentences, kept, min_examples=1, max_per_class=cfg.max_per_class, seed=cfg.seed
        )
    else:
        sentences, summary, tasks = _tagged_corpus(
            cfg.decoder_source,
            cfg.tags,
            cfg.min_examples,
            cfg.decoder_max_sentences,
            cfg.max_per_class,
            cfg.seed,
        )
    sentences, tasks = nv_concepts.compact(sentences, tasks)
    return sentences, summary, tasks


def plan_decoder(cfg, shuffles: int = 0) -> tuple[StudyPlan, pd.DataFrame]:
    """The decoder ``cfg.decoder_model`` (a zoo member or ``real/...``) on
    :func:`decoder_sentences`, at ``blocks.{L}.{cfg.decoder_site}``, laid out as units. Returns
    (plan, concept summary)."""
    from kit.models.encoders import decoder_word_activations
    from kit.models.load import load_model

    sentences, summary, tasks = decoder_sentences(cfg)
    model = cast("HookedModel", load_model(cfg.decoder_model, device=cfg.device, world=cfg.world))
    n_layers = model.cfg.n_layers
    layers = cfg.decoder_layers if cfg.decoder_layers is not None else first_middle_last(n_layers)
    bad = [L for L in layers if not 0 <= L < n_layers]
    if bad:
        raise ValueError(
            f"decoder_layers {bad} out of range for {cfg.decoder_model} ({n_layers} layers)"
        )
    sites = {L: f"blocks.{L}.{cfg.decoder_site}" for L in layers}
    acts = decoder_word_activations(
        model, [list(s.words) for s in sentences], list(sites.values()), batch_size=cfg.batch_size
    )
    vectors = {L: acts[site].numpy() for L, site in sites.items()}
    d = min(v.shape[1] for v in vectors.values())
    # Small decoders may have fewer neurons than the largest s; an s >= d would make every top-s
    # set the whole layer (overlap 1), so such s are left out.
    clip = lambda xs: [s for s in xs if s < d] or [max(1, d // 4)]  # noqa: E731
    kw: dict[str, Any]
    kw = study_kwargs(cfg, shuffles=shuffles) | dict(
        s_values=clip(cfg.s_values),
        accuracy_s=clip(cfg.accuracy_s),
        pairwise_s=clip(cfg.pairwise_s),
    )
    plan = plan_study(
        tasks, vectors, model=cfg.decoder_model, site=f"blocks.{{L}}.{cfg.decoder_site}", **kw
    )
    return plan, summary


def study_decoder(
    cfg, progress: bool = True, shuffles: int = 0
) -> tuple[StudyResult, pd.DataFrame]:
    """:func:`plan_decoder` computed on ``cfg``'s engine. Returns (result, concept summary)."""
    plan, summary = plan_decoder(cfg, shuffles)
    return run_plans([plan], engine_options(cfg), progress, desc=f"{plan.model} units")[0], summary


MODEL_KIND = {
    "minilm": "all-MiniLM-L6-v2 (a pretrained 6-layer BERT encoder, offline)",
    "real/smollm2-135m-instruct": "SmolLM2-135M-Instruct (a pretrained 30-layer decoder, GGUF "
    "Q4_1 dequantised)",
    "real/gemma-3-270m": "Gemma-3-270M (a pretrained 18-layer decoder, GGUF Q4_K_M dequantised)",
}
PAPER_RAN = "the paper ran 12-layer encoders (BERT, RoBERTa, XLM-R) only"


def setting(
    name: str,
    result: StudyResult,
    counts: pd.DataFrame,
    cfg,
    source: str,
    max_per_class: int | None,
    paper: PaperRef | None,
) -> Setting:
    """A :class:`Setting` with its claim prefix (``""`` for ``encoder``, else ``name.``), its title
    and what it rests on (the model, how it was made, the corpus and its size)."""
    model = result.model.split(" (")[0]
    from kit.models.sources import form_of

    if form_of(model).world_member:
        kind = f"the tiny world's decoder {model} (trained here, ~250-word vocabulary)"
    else:
        kind = MODEL_KIND.get(model, model)
    words = (
        "every example" if max_per_class is None else f"<= {max_per_class} positives per concept"
    )
    corpus = f"{source}: {result.scores.concept.nunique()} concepts, {words}"
    layers = sorted(result.scores.layer.unique())
    rests = f"{kind}, layers {', '.join(map(str, layers))}, {corpus}"
    if paper is None and name == "decoder":
        rests += f"; {PAPER_RAN}"
    concept_set = {"conll2000_chunk": "chunks", "world-roles": "word roles"}.get(source, "POS")
    title = f"{model} on {source} {concept_set}" + (", every layer" if name == "layers" else "")
    return Setting(
        name=name,
        prefix="" if name == "encoder" else f"{name}.",
        title=title,
        result=result,
        concept_counts=counts,
        paper=paper,
        rests_on=rests,
    )


def testability(cfg, study: NeuronVoteStudy) -> list[str]:
    """Which of the paper's claims this run tests, on what, and which it cannot test and why."""
    n_layers = lambda st: st.result.scores.layer.nunique()  # noqa: E731
    ran = [f"{st.title} ({n_layers(st)} layer{'s' * (n_layers(st) != 1)})" for st in study.settings]
    lines = [
        "Tested here, each as a claim on our own rankings: the voters' order against the paper's "
        "table (Table 2 / 6 / 8), their agreement against shuffled labels (Figure 1, Table 2), "
        "Probeless as the most compatible method (Table 3, abstract), the probing methods' drop at "
        "the last layer (Table 3, section 4.2) and MeanSelect against shuffled labels (Table 4), "
        "on: " + "; ".join(ran) + "."
    ]
    cap = "every example" if cfg.max_per_class is None else f"at most {cfg.max_per_class} positives"
    lines.append(
        f"Scale: the main study uses {cap} per concept (the paper: every example), "
        f"{cfg.shuffles} shuffled-label copies per (concept, layer), s = {cfg.s_values}, the "
        f"Gaussian's greedy search {cfg.gaussian_max_neurons or 'all'} steps."
    )
    missing = ["SEM (Table 5): no semantic-tag corpus (PMB) offline"]
    if not cfg.extra_encoders:
        missing.append(
            "RoBERTa and XLM-R (Table 3's other columns, Tables 9-12) and BERT itself: their "
            "weights need the Hugging Face hub (the paper profile); MiniLM (6 layers x 384) "
            "stands in"
        )
    if cfg.decoder_model is None:
        missing.append("a decoder: none configured")
    elif study.decoder is not None:
        missing.append(
            f"a reproduction on a decoder: {PAPER_RAN}, so the claims on {study.decoder.title} say "
            "whether its findings carry over to a decoder, and show no paper value"
        )
    if not cfg.chunking:
        missing.append("chunking (Table 6): switched off (chunking: false)")
    if not cfg.all_layers:
        missing.append("every layer (Tables 7-14): switched off (all_layers: false)")
    lines.append("Not tested here: " + "; ".join(missing) + ".")
    return lines
