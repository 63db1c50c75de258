"""Notebook 05's experiments (seed 004): every neuron-ranking method on every POS concept at three
layers of an encoder (or a decoder), AvgOverlap and NeuronVote over them, classifier accuracy at a
few budgets; seed stability, bootstrap intervals of the scores, consensus subsets and the lobby
effect of duplicated voters. Tables beside the paper's are in :mod:`kit.neuronvote.tables`, the
figures in :mod:`kit.neuronvote.plots`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from kit.neuronvote import methods as nv
from kit.neuronvote.concepts import ConceptTask

POSITIONS = ("first", "middle", "last")

PAPER_LAYER = {"first": 1, "middle": 6, "last": 12}
"""Which of BERT's 12 layers the paper reports for our first/middle/last layer."""


def first_middle_last(n_layers: int) -> list[int]:
    """Layer indices 0, n_layers // 2 - 1 ... : the first, middle and last block (0-based).

    The paper's layers 1/6/12 of 12 are blocks 0/5/11; for 6 layers this gives 0/2/5.
    """
    if n_layers < 1:
        raise ValueError(f"n_layers must be >= 1, got {n_layers}")
    return sorted({0, max(0, n_layers // 2 - 1), n_layers - 1})


def position_names(layers: Sequence[int]) -> dict[int, str]:
    """Layer -> "first"/"middle"/"last" when there are three layers, else "L<k>"."""
    layers = list(layers)
    if len(layers) == 3:
        return dict(zip(layers, POSITIONS))
    return {L: f"L{L}" for L in layers}


@dataclass
class StudyResult:
    """Long tables of one model's study."""

    model: str
    site: str
    scores: pd.DataFrame
    """Columns layer, position, concept, s, method, metric (AvgOverlap / NeuronVote), score."""
    accuracy: pd.DataFrame
    """Columns layer, position, concept, s, method, accuracy (test split)."""
    pairwise: dict[str, pd.DataFrame] = field(default_factory=dict)
    """Position -> method x method overlap, averaged over concepts and ``pairwise_s``."""
    n_neurons: int = 0
    pairwise_s: tuple[int, ...] = ()
    """The top-s sizes averaged in ``pairwise``."""
    definitions: str = "paper_text"
    """Which definition set ranked the neurons (``kit.neuronvote.methods.DEFINITIONS``)."""
    rankings: dict = field(default_factory=dict)
    """(layer, concept) -> method -> ranking: kept for consensus subsets and the lobby check."""
    voters: tuple[str, ...] = ()
    reseed_scores: pd.DataFrame | None = None
    """``scores`` again under every study seed (column ``seed``: the study's own seed first, then
    ``reseeds`` more): new tie-breaks, probe initialisations and Random draws; the Gaussian, which
    uses no seed, keeps its ranking. ``None`` when no reseeds were run."""

    @property
    def s_label(self) -> str:
        s = sorted(self.pairwise_s)
        return f"top {s[0]}-{s[-1]}" if len(s) > 1 else (f"top {s[0]}" if s else "")


def run_study(tasks: Sequence[ConceptTask], vectors: Mapping[int, np.ndarray], model: str, site: str,
              methods: Sequence[str] = nv.METHODS, voters: Sequence[str] = nv.PAPER_METHODS,
              s_values: Sequence[int] = (10, 30, 50), accuracy_s: Sequence[int] = (30, 50, 70, 100),
              pairwise_s: Sequence[int] = (10, 20, 30, 40, 50), seed: int = 0,
              progress: bool = True, random_draws: int = 20, reseeds: int = 0, **rank_kwargs) -> StudyResult:
    """Rank, score and evaluate every method on every concept task and layer.

    ``vectors``: layer -> Float[ndarray, "n_flat_words d"] word activations (rows = the tasks'
    flat word indices). Rankings use the train split only; classifier accuracy trains on train
    and reports test. ``voters`` form the consensus (methods outside it, e.g. Random or
    MeanSelect, are scored against it but do not vote). ``rank_kwargs`` go to
    :func:`kit.neuronvote.methods.rank_neurons` (iou_percentile, lambda1, lambda2, gaussian_max_neurons,
    probe_standardize, definitions). Every method gets its own tie-break stream per concept and
    layer (:func:`kit.neuronvote.methods.rank_all`); Random's AvgOverlap / NeuronVote are the mean
    over ``random_draws`` independent permutations (its classifier accuracy uses the first one).
    ``reseeds``: rerank with that many further study seeds (every method but the seedless Gaussian)
    and score again: ``StudyResult.reseed_scores``, the seed-stability of every number.
    """
    from threadpoolctl import threadpool_limits

    # One BLAS thread: the problems are small, and threads spinning on a shared CPU made the
    # scikit-learn fits ~10x slower here.
    with threadpool_limits(limits=1):
        return _run_study(tasks, vectors, model, site, methods, voters, s_values, accuracy_s, pairwise_s,
                          seed, progress, random_draws, rank_kwargs, reseeds)


SEEDLESS = ("gaussian",)
"""Methods whose ranking uses no seed (no tie-break, no initialisation): reused across reseeds."""


def _consensus_rows(rankings, voters, s_values, draws, L, pos, concept, extra=()):
    rows = []
    for s in s_values:
        for metric, fn in (("AvgOverlap", nv.avg_overlap), ("NeuronVote", nv.neuron_vote)):
            values = fn(rankings, s, voters=voters)
            if draws:  # Random = mean over independent draws (the voters' consensus is unchanged)
                pool = {v: rankings[v] for v in voters}
                values["random"] = float(np.mean([values["random"]] + [
                    fn({**pool, "random": r}, s, voters=voters)["random"] for r in draws]))
            for m, v in values.items():
                rows.append((L, pos, concept, s, m, metric, v, *extra))
    return rows


def _random_draws(seed, concept, L, d, random_draws):
    return [np.random.default_rng(nv.method_seed(seed, f"random#{r}", concept, L)).permutation(d)
            for r in range(1, random_draws)]


def _run_study(tasks, vectors, model, site, methods, voters, s_values, accuracy_s, pairwise_s, seed,
               progress, random_draws, rank_kwargs, reseeds=0) -> StudyResult:
    from tqdm.auto import tqdm

    unknown = [m for m in list(methods) + list(voters) if m not in nv.METHODS]
    if unknown:
        raise ValueError(f"unknown methods {unknown}; allowed: {', '.join(nv.METHODS)}")
    missing = [v for v in voters if v not in methods]
    if missing:
        raise ValueError(f"voters {missing} are not among the methods run ({list(methods)})")
    names = position_names(sorted(vectors))
    widths = {np.asarray(v).shape[1] for v in vectors.values()}
    d = min(widths)
    too_big = [s for s in list(s_values) + list(accuracy_s) + list(pairwise_s) if s > d]
    if too_big:
        raise ValueError(f"s values {too_big} exceed the number of neurons per layer ({d})")
    if random_draws < 1:
        raise ValueError(f"random_draws must be >= 1, got {random_draws}")
    if reseeds < 0:
        raise ValueError(f"reseeds must be >= 0, got {reseeds}")
    score_rows, acc_rows, reseed_rows = [], [], []
    pair_sum: dict[str, pd.DataFrame] = {}
    kept_rankings = {}
    jobs = [(L, t) for L in sorted(vectors) for t in tasks]
    for L, task in tqdm(jobs, desc=f"{model} rank+score", disable=not progress):
        arr = task.arrays(vectors[L])
        rankings = nv.rank_all(arr["x_train"], arr["y_train"], methods, seed=seed, task=(task.concept, L),
                               **rank_kwargs)
        kept_rankings[(L, task.concept)] = rankings
        pos = names[L]
        d_here = arr["x_train"].shape[1]
        draws = _random_draws(seed, task.concept, L, d_here, random_draws) if "random" in rankings else []
        score_rows += _consensus_rows(rankings, voters, s_values, draws, L, pos, task.concept)
        for r in range(1, reseeds + 1):
            again = nv.rank_all(arr["x_train"], arr["y_train"], [m for m in methods if m not in SEEDLESS],
                                seed=seed + r, task=(task.concept, L), **rank_kwargs)
            again = {m: again.get(m, rankings[m]) for m in methods}
            d_r = _random_draws(seed + r, task.concept, L, d_here, random_draws) if "random" in again else []
            reseed_rows += _consensus_rows(again, voters, s_values, d_r, L, pos, task.concept, extra=(seed + r,))
        for s in accuracy_s:
            for m in methods:
                acc = nv.classifier_accuracy(arr["x_train"], arr["y_train"], arr["x_test"], arr["y_test"],
                                             rankings[m][:s])
                acc_rows.append((L, pos, task.concept, s, m, acc))
        pw = nv.pairwise_overlap(rankings, list(pairwise_s))
        pair_sum[pos] = pw if pos not in pair_sum else pair_sum[pos] + pw
    scores = pd.DataFrame(score_rows, columns=["layer", "position", "concept", "s", "method", "metric", "score"])
    accuracy = pd.DataFrame(acc_rows, columns=["layer", "position", "concept", "s", "method", "accuracy"])
    pairwise = {pos: m / max(len(tasks), 1) for pos, m in pair_sum.items()}
    reseed_scores = None
    if reseeds:
        cols = list(scores.columns) + ["seed"]
        reseed_scores = pd.concat([scores.assign(seed=seed), pd.DataFrame(reseed_rows, columns=cols)],
                                  ignore_index=True)
    return StudyResult(model=model, site=site, scores=scores, accuracy=accuracy, pairwise=pairwise, n_neurons=d,
                       pairwise_s=tuple(pairwise_s), definitions=rank_kwargs.get("definitions", "paper_text"),
                       rankings=kept_rankings, voters=tuple(voters), reseed_scores=reseed_scores)


def _rank_kwargs(cfg, definitions: str | None = None) -> dict:
    return dict(iou_percentile=cfg.iou_percentile, lambda1=cfg.lambda1, lambda2=cfg.lambda2,
                gaussian_max_neurons=cfg.gaussian_max_neurons, probe_standardize=cfg.probe_standardize,
                definitions=definitions or cfg.definitions[0], random_draws=cfg.random_draws, reseeds=cfg.reseeds)


def seed_stability(result: StudyResult) -> pd.DataFrame:
    """Per method and metric: the overall mean (over layers, concepts, s) under each study seed,
    their mean and spread (max - min). Empty without reseeds."""
    rs = result.reseed_scores
    if rs is None or rs.empty:
        return pd.DataFrame(columns=["method", "metric", "mean", "min", "max", "spread", "n_seeds"])
    by = rs.groupby(["method", "metric", "seed"]).score.mean().unstack("seed")
    out = pd.DataFrame({"mean": by.mean(axis=1), "min": by.min(axis=1), "max": by.max(axis=1)})
    out["spread"] = out["max"] - out["min"]
    out["n_seeds"] = by.shape[1]
    out = out.reset_index()
    out["method"] = out["method"].map(lambda m: nv.DISPLAY.get(m, m))
    return out.round(4)


_PREPARED: dict = {}


def encoder_data(cfg, encoder: str, source: str, tags, max_per_class: int | None | str = "cfg"
                 ) -> tuple[list[ConceptTask], dict[str, np.ndarray], pd.DataFrame, int]:
    """Concept tasks and word vectors of one encoder on one corpus, computed once per session.

    Returns (tasks, site -> Float["n_flat_words d"], concept summary, n_layers). With
    ``cfg.site == "hook_resid_post"`` every layer's output and the embedding output
    (``blocks.0.hook_resid_pre``) are computed in the same forward pass (for the all-layer study).
    ``max_per_class`` (default ``cfg.max_per_class``): when the same corpus was already encoded
    with all examples, a capped variant is drawn from those words (no second forward pass).
    """
    from kit.models.encoders import load_encoder
    from kit.neuronvote import concepts as concepts

    cap = cfg.max_per_class if max_per_class == "cfg" else max_per_class
    base = (encoder, source, None if tags is None else tuple(tags), cfg.site, cfg.min_examples,
            cfg.max_sentences, cfg.seed, cfg.device)
    if base + (cap,) in _PREPARED:
        return _PREPARED[base + (cap,)][:4]
    if cap is not None and base + (None,) in _PREPARED:
        tasks_all, acts, summary, n_layers, sentences = _PREPARED[base + (None,)]
        kept = [t.concept for t in tasks_all]
        tasks = concepts.build_concept_tasks(sentences, kept, min_examples=1, max_per_class=cap, seed=cfg.seed)
        tasks = [t for t in tasks if min(len(t.test), int(t.y_train.sum()), int((1 - t.y_train).sum())) > 1]
        _PREPARED[base + (cap,)] = (tasks, acts, summary, n_layers, sentences)
        return _PREPARED[base + (cap,)][:4]
    sentences = concepts.load_sentences(source, max_sentences=None, seed=cfg.seed)
    summary = concepts.concept_summary(sentences, tags, cfg.min_examples)
    if cfg.max_sentences is not None and cfg.max_sentences < len(sentences):
        # Subsample after counting: which tags are kept is decided on the whole corpus, as in the paper.
        sentences = concepts.load_sentences(source, max_sentences=cfg.max_sentences, seed=cfg.seed)
    kept = summary.concept[summary.kept].tolist()
    tasks = concepts.build_concept_tasks(sentences, kept, min_examples=1, max_per_class=cap, seed=cfg.seed)
    tasks = [t for t in tasks if min(len(t.test), int(t.y_train.sum()), int((1 - t.y_train).sum())) > 1]
    if not tasks:
        raise ValueError(f"no concept of {tags} has >= {cfg.min_examples} examples in {source}")
    sentences, tasks = concepts.compact(sentences, tasks)
    enc = load_encoder(encoder, device=cfg.device)
    sites = [f"blocks.{L}.{cfg.site}" for L in range(enc.n_layers)]
    if cfg.site == "hook_resid_post":
        sites = ["blocks.0.hook_resid_pre"] + sites
    acts = enc.word_activations([list(s.words) for s in sentences], sites, batch_size=cfg.batch_size)
    _PREPARED[base + (cap,)] = (tasks, {k: v.numpy() for k, v in acts.items()}, summary, enc.n_layers, sentences)
    return _PREPARED[base + (cap,)][:4]


def study_encoder(cfg, encoder: str | None = None, source: str | None = None, progress: bool = True,
                  definitions: str | None = None, all_layers: bool = False,
                  tags=None, max_per_class: int | None | str = "cfg") -> tuple[StudyResult, pd.DataFrame]:
    """The whole pipeline for one encoder on one tagged corpus, from a notebook 05 ``Config``.

    Loads the corpus, builds the concept tasks (tags below ``cfg.min_examples`` dropped), computes
    word vectors (mean of subtokens) at ``blocks.{L}.{cfg.site}`` and runs :func:`run_study` with
    the definition set ``definitions`` (default ``cfg.definitions[0]``). Layers: ``cfg.layers``
    (default first/middle/last block, keyed by block index); ``all_layers``: the embedding output
    and every block, keyed by the paper's numbering (0 = embeddings, k = output of block k - 1;
    Tables 7-14). ``tags``: default ``cfg.tags`` for POS sources, ``concepts.CHUNK_TAGS`` for
    ``conll2000_chunk``. ``max_per_class``: default ``cfg.max_per_class`` (the notebook passes
    ``cfg.extra_max_per_class`` for chunking and the all-layer study). Returns (result, concept
    summary with counts and kept flags).
    """
    from kit.neuronvote import concepts as concepts

    encoder = encoder or cfg.encoder
    source = source or cfg.source
    if tags is None:
        tags = list(concepts.CHUNK_TAGS) if source == "conll2000_chunk" else cfg.tags
    tasks, acts, summary, n_layers = encoder_data(cfg, encoder, source, tags, max_per_class)
    if all_layers:
        if cfg.site != "hook_resid_post":
            raise ValueError(f"all_layers needs site='hook_resid_post' (the embedding output has no {cfg.site})")
        sites = {0: "blocks.0.hook_resid_pre"} | {L + 1: f"blocks.{L}.hook_resid_post" for L in range(n_layers)}
    else:
        layers = cfg.layers if cfg.layers is not None else first_middle_last(n_layers)
        bad = [L for L in layers if not 0 <= L < n_layers]
        if bad:
            raise ValueError(f"layers {bad} out of range for {encoder} ({n_layers} layers: 0..{n_layers - 1})")
        sites = {L: f"blocks.{L}.{cfg.site}" for L in layers}
    vectors = {L: acts[site] for L, site in sites.items()}
    name = encoder if source == cfg.source else f"{encoder} ({source})"
    result = run_study(tasks, vectors, model=name, site="all layers (0 = embeddings)" if all_layers
                       else f"blocks.{{L}}.{cfg.site}", methods=cfg.methods, voters=cfg.voters,
                       s_values=cfg.s_values, accuracy_s=cfg.accuracy_s, pairwise_s=cfg.pairwise_s,
                       seed=cfg.seed, progress=progress, **_rank_kwargs(cfg, definitions))
    return result, summary


def study_decoder(cfg, progress: bool = True) -> tuple[StudyResult, pd.DataFrame]:
    """The pipeline for the zoo decoder ``cfg.decoder_model`` on the tiny world's word roles
    (``kit.neuronvote.concepts.world_role_sentences``), at ``blocks.{L}.{cfg.decoder_site}``."""
    from kit.models.encoders import decoder_word_activations
    from kit.models.load import load_model
    from kit.neuronvote import concepts as concepts

    sentences = concepts.load_sentences("world-roles", seed=cfg.seed, world_n_per_task=cfg.decoder_n_per_task)
    summary = concepts.concept_summary(sentences, None, cfg.decoder_min_examples)
    kept = summary.concept[summary.kept].tolist()
    tasks = concepts.build_concept_tasks(sentences, kept, min_examples=1, max_per_class=cfg.max_per_class,
                                         seed=cfg.seed)
    sentences, tasks = concepts.compact(sentences, tasks)
    model = load_model(cfg.decoder_model, device=cfg.device, world=cfg.world)
    n_layers = model.cfg.n_layers
    layers = cfg.decoder_layers if cfg.decoder_layers is not None else first_middle_last(n_layers)
    bad = [L for L in layers if not 0 <= L < n_layers]
    if bad:
        raise ValueError(f"decoder_layers {bad} out of range for {cfg.decoder_model} ({n_layers} layers)")
    sites = {L: f"blocks.{L}.{cfg.decoder_site}" for L in layers}
    acts = decoder_word_activations(model, [list(s.words) for s in sentences], list(sites.values()),
                                    batch_size=cfg.batch_size)
    vectors = {L: acts[site].numpy() for L, site in sites.items()}
    d = min(v.shape[1] for v in vectors.values())
    # Small decoders may have fewer neurons than the largest s; an s >= d would make every top-s
    # set the whole layer (overlap 1), so such s are left out.
    clip = lambda xs: [s for s in xs if s < d] or [max(1, d // 4)]  # noqa: E731
    result = run_study(tasks, vectors, model=cfg.decoder_model, site=f"blocks.{{L}}.{cfg.decoder_site}",
                       methods=cfg.methods, voters=cfg.voters, s_values=clip(cfg.s_values),
                       accuracy_s=clip(cfg.accuracy_s), pairwise_s=clip(cfg.pairwise_s), seed=cfg.seed,
                       progress=progress, **_rank_kwargs(cfg))
    return result, summary


def score_intervals(result: StudyResult, n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> pd.DataFrame:
    """Bootstrap intervals over concepts of every AvgOverlap / NeuronVote number: per position
    (and ``all``), method and metric, the mean over concepts of each concept's mean over s (and
    layers for ``all``), with the ``level`` percentile interval of ``n_boot`` concept resamples."""
    rng = np.random.default_rng(seed)
    df = result.scores
    rows = []
    per = {pos: g.groupby(["method", "metric", "concept"]).score.mean() for pos, g in df.groupby("position")}
    per["all"] = df.groupby(["method", "metric", "concept"]).score.mean()
    for pos, series in per.items():
        for (m, metric), vals in series.groupby(level=[0, 1]):
            v = vals.to_numpy()
            boot = v[rng.integers(0, len(v), size=(n_boot, len(v)))].mean(1)
            lo, hi = np.quantile(boot, [(1 - level) / 2, (1 + level) / 2])
            rows.append((pos, nv.DISPLAY.get(m, m), metric, float(v.mean()), float(lo), float(hi), len(v)))
    return pd.DataFrame(rows, columns=["position", "method", "metric", "mean", "lo", "hi", "n_concepts"])


def consensus_subsets(result: StudyResult, a: str = "probeless", b: str = "lca") -> pd.DataFrame:
    """Tables 15-17 analogue: NeuronVote of ``a`` and ``b`` against the Borda top-s of every
    non-empty subset of the other voters, mean over layers, concepts and s."""
    from itertools import combinations

    others = [v for v in result.voters if v not in (a, b)]
    s_values = sorted(result.scores.s.unique().tolist())
    rows = []
    for k in range(1, len(others) + 1):
        for subset in combinations(others, k):
            got = {m: [] for m in (a, b)}
            for rankings in result.rankings.values():
                for s in s_values:
                    best = nv.borda_top(rankings, s, voters=list(subset))
                    for m in (a, b):
                        got[m].append(nv.overlap(rankings[m][:s], best))
            rows.append((k, ", ".join(nv.DISPLAY[v] for v in subset), np.mean(got[a]), np.mean(got[b])))
    return pd.DataFrame(rows, columns=["n_consensus_methods", "consensus_methods", nv.DISPLAY[a], nv.DISPLAY[b]]).round(3)


def lobby_effect(result: StudyResult, lobby: str = "lasso", copies: Sequence[int] = (0, 1, 2, 4)) -> pd.DataFrame:
    """The paper's "lobby" limitation, measured: NeuronVote of every method when ``k`` identical
    clones of ``lobby`` join the voters (a bloc of methods with near-identical rankings). The
    non-voters (MeanSelect, IoU-AP, Random: "a new method" in the paper's words) are scored against
    the enlarged consensus too. Rows k, columns methods; mean over layers, concepts and s."""
    s_values = sorted(result.scores.s.unique().tolist())
    rows = {}
    for k in copies:
        clones = [f"{lobby}#{i}" for i in range(k)]
        voters = list(result.voters) + clones
        vals: dict[str, list[float]] = {}
        for rankings in result.rankings.values():
            pool = dict(rankings) | {c: rankings[lobby] for c in clones}
            for s in s_values:
                scores = nv.neuron_vote(pool, s, voters=voters)
                for m in rankings:
                    vals.setdefault(m, []).append(scores[m])
        rows[k] = {nv.DISPLAY.get(m, m): float(np.mean(v)) for m, v in vals.items()}
    out = pd.DataFrame(rows).T
    out.index.name = f"clones of {nv.DISPLAY[lobby]}"
    return out.round(3)
