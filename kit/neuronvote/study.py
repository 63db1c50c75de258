"""Notebook 05's experiments (seed 004): every neuron-ranking method on every concept at a few
layers of a model, AvgOverlap and NeuronVote over them, classifier accuracy at a few budgets, their
seed-stability and shuffled-label null; bootstrap intervals of the scores, consensus subsets and
the lobby effect of duplicated voters.

A study is a set of (concept, layer) units (:mod:`kit.neuronvote.units`). :func:`plan_study` checks
its arguments and lays the units out; :func:`run_plans` computes the units of one or more plans,
either here (``jobs=None``) or as jobs of :mod:`kit.core.jobs` on any engine (the same numbers),
and assembles each plan's :class:`StudyResult`. The settings the notebook runs (MiniLM on POS,
chunking, every layer, a decoder) are built in :mod:`kit.neuronvote.settings`; tables beside the
paper's are in :mod:`kit.neuronvote.tables`, the figures in :mod:`kit.neuronvote.plots`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence, cast

import numpy as np
import pandas as pd

from kit.core.jobs import Job, run_jobs
from kit.core.progress import progress_bar
from kit.neuronvote import methods as nv
from kit.neuronvote import units as nv_units
from kit.neuronvote.concepts import ConceptTask
from kit.neuronvote.units import ACCURACY_COLUMNS, SCORE_COLUMNS, UnitResult, UnitSettings

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
    shuffled_scores: pd.DataFrame | None = None
    """``scores`` of the voters and MeanSelect when every one of them ranks the concept's labels
    shuffled among its training words (column ``shuffle``: 1..K, K copies per unit): the
    shuffled-label null. ``None`` when no shuffles were run."""

    @property
    def s_label(self) -> str:
        s = sorted(self.pairwise_s)
        return f"top {s[0]}-{s[-1]}" if len(s) > 1 else (f"top {s[0]}" if s else "")

    def with_scores(self, scores: pd.DataFrame) -> StudyResult:
        """A copy whose ``scores`` are replaced (e.g. by one reseed's), for a rerun of the
        claims."""
        from dataclasses import replace

        return replace(self, scores=scores)


@dataclass
class StudyPlan:
    """One study laid out as (concept, layer) units, before anything is computed."""

    model: str
    site: str
    settings: UnitSettings
    units: list[tuple[int, str, ConceptTask]]
    """(layer, position, task) in the order of the result's rows: layers ascending, tasks as
    given."""
    vectors: Mapping[int, np.ndarray]
    n_neurons: int
    n_tasks: int

    def arrays(
        self, layer: int, task: ConceptTask
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        arr = task.arrays(self.vectors[layer])
        return arr["x_train"], arr["y_train"], arr["x_test"], arr["y_test"]

    def compute_here(self, progress: bool = True) -> list[UnitResult]:
        """Every unit in this process, one after another (no cache, no job layer)."""
        from threadpoolctl import threadpool_limits

        out = []
        # One BLAS thread: the problems are small, and threads spinning on a shared CPU made the
        # scikit-learn fits ~10x slower here.
        with threadpool_limits(limits=1):
            units = self.units
            if progress:
                units = progress_bar(units, desc=f"{self.model} rank+score", unit="concept")
            for L, pos, task in units:
                out.append(
                    nv_units.compute_unit(
                        *self.arrays(L, task), task.concept, L, pos, self.settings
                    )
                )
        return out

    def jobs(self, code: str | None = None) -> list[list[Job]]:
        """Stage the layers' vectors and the tasks in the cache; the jobs of each unit, in order."""
        code = code or nv_units.code_digest()
        keys = {
            L: nv_units.stage_array(np.asarray(self.vectors[L])) for L in {u[0] for u in self.units}
        }
        out = []
        for L, pos, task in self.units:
            table = nv_units.task_table(task.train, task.y_train, task.test, task.y_test)
            out.append(
                nv_units.unit_jobs(
                    keys[L], nv_units.stage_array(table), task.concept, L, pos, self.settings, code
                )
            )
        return out

    def collect(self, units: Sequence[UnitResult]) -> StudyResult:
        """The :class:`StudyResult` of computed units (in :attr:`units` order)."""
        st = self.settings
        score_rows, acc_rows, reseed_rows, shuffled_rows = [], [], [], []
        pair_sum: dict[str, pd.DataFrame] = {}
        rankings = {}
        for u in units:
            score_rows += u.scores
            acc_rows += u.accuracy
            reseed_rows += u.reseed_scores
            shuffled_rows += u.shuffled_scores
            rankings[(u.layer, u.concept)] = {
                m: np.asarray(r, dtype=np.int64) for m, r in u.rankings.items()
            }
            names = list(u.rankings)
            pw = pd.DataFrame(u.pairwise, index=names, columns=names)
            pair_sum[u.position] = pw if u.position not in pair_sum else pair_sum[u.position] + pw
        scores = pd.DataFrame(score_rows, columns=SCORE_COLUMNS)
        accuracy = pd.DataFrame(acc_rows, columns=ACCURACY_COLUMNS)
        reseed_scores = None
        if st.reseeds:
            reseed_scores = pd.concat(
                [
                    scores.assign(seed=st.seed),
                    pd.DataFrame(reseed_rows, columns=SCORE_COLUMNS + ["seed"]),
                ],
                ignore_index=True,
            )
        shuffled = (
            pd.DataFrame(shuffled_rows, columns=SCORE_COLUMNS + ["shuffle"])
            if st.shuffles
            else None
        )
        return StudyResult(
            model=self.model,
            site=self.site,
            scores=scores,
            accuracy=accuracy,
            pairwise={pos: m / max(self.n_tasks, 1) for pos, m in pair_sum.items()},
            n_neurons=self.n_neurons,
            pairwise_s=tuple(st.pairwise_s),
            definitions=st.rank_kwargs.get("definitions", "paper_text"),
            rankings=rankings,
            voters=tuple(st.voters),
            reseed_scores=reseed_scores,
            shuffled_scores=shuffled,
        )


def plan_study(
    tasks: Sequence[ConceptTask],
    vectors: Mapping[int, np.ndarray],
    model: str,
    site: str,
    methods: Sequence[str] = tuple(nv.METHODS),
    voters: Sequence[str] = nv.PAPER_METHODS,
    s_values: Sequence[int] = (10, 30, 50),
    accuracy_s: Sequence[int] = (30, 50, 70, 100),
    pairwise_s: Sequence[int] = (10, 20, 30, 40, 50),
    seed: int = 0,
    random_draws: int = 20,
    reseeds: int = 0,
    shuffles: int = 0,
    **rank_kwargs: Any,
) -> StudyPlan:
    """Check a study's arguments and lay out its units (see :func:`run_study`)."""
    unknown = [m for m in list(methods) + list(voters) if m not in nv.RANKING_METHODS]
    if unknown:
        raise ValueError(f"unknown methods {unknown}; allowed: {', '.join(nv.RANKING_METHODS)}")
    missing = [v for v in voters if v not in methods]
    if missing:
        raise ValueError(f"voters {missing} are not among the methods run ({list(methods)})")
    d = min(np.asarray(v).shape[1] for v in vectors.values())
    too_big = [s for s in list(s_values) + list(accuracy_s) + list(pairwise_s) if s > d]
    if too_big:
        raise ValueError(f"s values {too_big} exceed the number of neurons per layer ({d})")
    for name, value in (
        ("random_draws", random_draws),
        ("reseeds", reseeds),
        ("shuffles", shuffles),
    ):
        if value < (1 if name == "random_draws" else 0):
            raise ValueError(f"{name} must be >= {1 if name == 'random_draws' else 0}, got {value}")
    names = position_names(sorted(vectors))
    settings = UnitSettings(
        methods=tuple(methods),
        voters=tuple(voters),
        s_values=tuple(int(s) for s in s_values),
        accuracy_s=tuple(int(s) for s in accuracy_s),
        pairwise_s=tuple(int(s) for s in pairwise_s),
        seed=int(seed),
        random_draws=int(random_draws),
        reseeds=int(reseeds),
        shuffles=int(shuffles),
        rank_kwargs=dict(rank_kwargs),
    )
    units = [(L, names[L], t) for L in sorted(vectors) for t in tasks]
    return StudyPlan(
        model=model,
        site=site,
        settings=settings,
        units=units,
        vectors=vectors,
        n_neurons=d,
        n_tasks=len(tasks),
    )


def run_plans(
    plans: Sequence[StudyPlan],
    jobs: Mapping[str, Any] | None = None,
    progress: bool = True,
    desc: str = "NeuronVote units",
) -> list[StudyResult]:
    """Compute every unit of ``plans`` and return one :class:`StudyResult` per plan.

    ``jobs``: ``None`` computes here, unit after unit; otherwise the keyword arguments of
    :func:`kit.core.jobs.run_jobs` (``engine``, ``max_workers``, ``ray_address``: a notebook passes
    ``engine_options(cfg)``), and all plans' units run as one sweep of jobs whose results are read
    back from the cache (a unit computed before, with the same code, is not computed again).
    """
    if jobs is None:
        return [p.collect(p.compute_here(progress)) for p in plans]
    code = nv_units.code_digest()
    per_plan = [p.jobs(code) for p in plans]
    # Shuffles are the longest jobs: submitted first, they do not end the sweep on one core.
    flat = [j for unit in (u for jobs_ in per_plan for u in jobs_) for j in unit]
    ordered = sorted(flat, key=lambda j: not j.fn.endswith(":shuffle_unit_job"))
    run_jobs(ordered, desc=desc, **dict(jobs))
    return [
        p.collect([nv_units.merge_units([nv_units.read_unit(j) for j in unit]) for unit in jobs_])
        for p, jobs_ in zip(plans, per_plan)
    ]


def run_study(
    tasks: Sequence[ConceptTask],
    vectors: Mapping[int, np.ndarray],
    model: str,
    site: str,
    methods: Sequence[str] = tuple(nv.METHODS),
    voters: Sequence[str] = nv.PAPER_METHODS,
    s_values: Sequence[int] = (10, 30, 50),
    accuracy_s: Sequence[int] = (30, 50, 70, 100),
    pairwise_s: Sequence[int] = (10, 20, 30, 40, 50),
    seed: int = 0,
    progress: bool = True,
    random_draws: int = 20,
    reseeds: int = 0,
    shuffles: int = 0,
    jobs: Mapping[str, Any] | None = None,
    **rank_kwargs: Any,
) -> StudyResult:
    """Rank, score and evaluate every method on every concept task and layer.

    ``vectors``: layer -> Float[ndarray, "n_flat_words d"] word activations (rows = the tasks'
    flat word indices). Rankings use the train split only; classifier accuracy trains on train
    and reports test. ``voters`` form the consensus (methods outside it, e.g. Random or
    MeanSelect, are scored against it but do not vote). ``rank_kwargs`` go to
    :func:`kit.neuronvote.methods.rank_neurons` (iou_percentile, lambda1, lambda2,
    gaussian_max_neurons, probe_standardize, definitions). Every method gets its own tie-break
    stream per concept and layer (:func:`kit.neuronvote.methods.rank_all`); Random's AvgOverlap /
    NeuronVote are the mean over ``random_draws`` independent permutations (its classifier accuracy
    uses the first one). ``reseeds``: rerank with that many further study seeds (every method but
    the seedless Gaussian) and score again: ``StudyResult.reseed_scores``, the seed-stability of
    every number. ``shuffles``: rank that many copies of each concept's training labels shuffled
    among its words with the voters and MeanSelect: ``StudyResult.shuffled_scores``, the
    shuffled-label null. ``jobs``: see :func:`run_plans`.
    """
    plan = plan_study(
        tasks,
        vectors,
        model,
        site,
        methods,
        voters,
        s_values,
        accuracy_s,
        pairwise_s,
        seed,
        random_draws,
        reseeds,
        shuffles,
        **rank_kwargs,
    )
    return run_plans([plan], jobs, progress, desc=f"{model} rank+score")[0]


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


def shuffled_table(result: StudyResult) -> pd.DataFrame:
    """Per method and metric: the mean score on the concepts' labels and on the shuffled copies
    (mean over concepts, layers, s and copies), and their difference. Empty without shuffles."""
    sh = result.shuffled_scores
    cols = ["method", "metric", "labels", "shuffled", "difference"]
    if sh is None or sh.empty:
        return pd.DataFrame(columns=cols)
    real = result.scores.groupby(["method", "metric"]).score.mean()
    null = sh.groupby(["method", "metric"]).score.mean()
    out = pd.DataFrame({"labels": real.reindex(null.index), "shuffled": null})
    out["difference"] = out["labels"] - out["shuffled"]
    out = out.reset_index()
    out["method"] = out["method"].map(lambda m: nv.DISPLAY.get(m, m))
    return out[cols].round(4)


def score_intervals(
    result: StudyResult, n_boot: int = 1000, seed: int = 0, level: float = 0.95
) -> pd.DataFrame:
    """Bootstrap intervals over concepts of every AvgOverlap / NeuronVote number: per position
    (and ``all``), method and metric, the mean over concepts of each concept's mean over s (and
    layers for ``all``), with the ``level`` percentile interval of ``n_boot`` concept resamples
    (``scipy.stats.bootstrap``, one seeded Generator drawing every number's resamples in turn)."""
    from scipy.stats import bootstrap

    rng = np.random.default_rng(seed)
    df = result.scores
    rows = []
    per = {
        pos: g.groupby(["method", "metric", "concept"]).score.mean()
        for pos, g in df.groupby("position")
    }
    per["all"] = df.groupby(["method", "metric", "concept"]).score.mean()
    for pos, series in per.items():
        for (m, metric), vals in cast(Any, series.groupby(level=[0, 1])):  # (method, metric) keys
            v = vals.to_numpy()
            if len(v) > 1:
                res = bootstrap(
                    (v,),
                    np.mean,
                    n_resamples=n_boot,
                    vectorized=True,
                    confidence_level=level,
                    method="percentile",
                    rng=rng,
                )
                lo, hi = res.confidence_interval
            else:  # one concept: no spread (scipy refuses a sample of one); the draw keeps rng's
                # stream where the hand loop this replaced left it
                rng.integers(0, 1, size=(n_boot, 1))
                lo = hi = v[0]
            rows.append(
                (pos, nv.DISPLAY.get(m, m), metric, float(v.mean()), float(lo), float(hi), len(v))
            )
    return pd.DataFrame(
        rows, columns=["position", "method", "metric", "mean", "lo", "hi", "n_concepts"]
    )


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
            rows.append(
                (k, ", ".join(nv.DISPLAY[v] for v in subset), np.mean(got[a]), np.mean(got[b]))
            )
    return pd.DataFrame(
        rows, columns=["n_consensus_methods", "consensus_methods", nv.DISPLAY[a], nv.DISPLAY[b]]
    ).round(3)


def lobby_effect(
    result: StudyResult, lobby: str = "lasso", copies: Sequence[int] = (0, 1, 2, 4)
) -> pd.DataFrame:
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
