"""One unit of a NeuronVote study: one concept at one layer (seed 004, section 4.1 "Procedure").

A unit ranks the layer's neurons with every method on the concept's training words, scores each
method against the voters' consensus for every top-s size (AvgOverlap eq. 8, NeuronVote eq. 9),
trains the top-s classifiers (section 3.1), and on request repeats the ranking

- under further study seeds (``reseeds``: new tie-breaks, probe initialisations, Random draws), and
- on the concept's labels shuffled among its own training words (``shuffles``): the
  shuffled-label null. The voters (and MeanSelect) rank each shuffled copy and are scored against
  each other exactly as on the real labels; what they still agree on then comes from the layer's
  geometry (neuron scales, correlations), not from the concept. Random, whose overlap is the
  chance IoU ~ s / (2d - s), is no such control: any method that reads activations beats it.

Everything a unit returns is a function of its arguments and seeds, so it is the same wherever it
runs: :func:`compute_unit` in this process, or the jobs :func:`rank_unit_job` and
:func:`shuffle_unit_job` in any worker of :mod:`kit.core.jobs`, which read their inputs from the
cache by content hash (:func:`stage_array`) and write their :class:`UnitResult` there
(content-addressed by their arguments and the source of the ranking code, so a code change never
returns an old ranking).
"""

from __future__ import annotations

import hashlib
import json
import warnings
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from kit.core.cached import MISSING, DamagedCacheWarning, has_keys, read_json, write_json
from kit.core.jobs import Job
from kit.core.jobs.spec import canonical_json
from kit.core.paths import atomic_path, cache_dir
from kit.neuronvote import methods as nv

SCORE_COLUMNS = ["layer", "position", "concept", "s", "method", "metric", "score"]
ACCURACY_COLUMNS = ["layer", "position", "concept", "s", "method", "accuracy"]
SHUFFLED_EXTRA = ("meanselect",)
"""Methods ranked on the shuffled labels besides the voters (the paper's case-study method)."""
_CODE_MODULES = ("methods", "corpus_scores", "probes", "gaussian", "consensus", "units")


@dataclass(frozen=True)
class UnitSettings:
    """What every unit of one study shares (the study's arguments, JSON-plain)."""

    methods: tuple[str, ...]
    voters: tuple[str, ...]
    s_values: tuple[int, ...]
    accuracy_s: tuple[int, ...]
    pairwise_s: tuple[int, ...]
    seed: int = 0
    random_draws: int = 20
    reseeds: int = 0
    shuffles: int = 0
    rank_kwargs: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments of :func:`kit.neuronvote.methods.rank_neurons` (definitions,
    lambdas...)."""

    def as_json(self) -> dict[str, Any]:
        return json.loads(canonical_json(asdict(self), "unit settings"))

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> UnitSettings:
        kwargs: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in d.items()}
        return cls(**kwargs)

    @property
    def shuffled_methods(self) -> list[str]:
        return [m for m in self.methods if m in self.voters or m in SHUFFLED_EXTRA]


@dataclass
class UnitResult:
    """What one (concept, layer) unit gives. Rows are lists in the column order of the study's long
    tables (:data:`SCORE_COLUMNS`, :data:`ACCURACY_COLUMNS`)."""

    layer: int
    position: str
    concept: str
    rankings: dict[str, list[int]] = field(default_factory=dict)
    """method -> full ranking under the study's own seed (best first); empty for a shuffle-only
    unit."""
    scores: list[list] = field(default_factory=list)
    accuracy: list[list] = field(default_factory=list)
    pairwise: list[list[float]] = field(default_factory=list)
    """methods x methods overlap (eq. 7) averaged over ``pairwise_s``, in ``rankings`` order."""
    reseed_scores: list[list] = field(default_factory=list)
    """Score rows under the further study seeds, with the seed appended."""
    shuffled_scores: list[list] = field(default_factory=list)
    """Score rows of the shuffled-label copies, with the shuffle index (1..K) appended."""

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> UnitResult:
        return cls(**d)


def _consensus_rows(rankings, voters, s_values, draws, L, pos, concept, extra=()) -> list[list]:
    """AvgOverlap and NeuronVote rows of every method for every s; Random = mean over its draws."""
    rows = []
    for s in s_values:
        for metric, fn in (("AvgOverlap", nv.avg_overlap), ("NeuronVote", nv.neuron_vote)):
            values = fn(rankings, s, voters=voters)
            if draws:  # Random = mean over independent draws (the voters' consensus is unchanged)
                values["random"] = float(
                    np.mean([values["random"]] + _draw_scores(metric, rankings, voters, s, draws))
                )
            rows += [
                [L, pos, concept, int(s), m, metric, float(v), *extra] for m, v in values.items()
            ]
    return rows


def _draw_scores(metric: str, rankings, voters, s: int, draws) -> list[float]:
    """Random's AvgOverlap or NeuronVote for each further draw, against the voters' top-s sets.

    The same numbers as scoring ``{voters, "random": draw}`` with :func:`nv.avg_overlap` /
    :func:`nv.neuron_vote` and keeping Random's: when Random is no voter, the voters' top-s sets and
    their Borda consensus do not depend on the draw, so they are formed once, not once per draw and
    per method."""
    pool = {v: rankings[v] for v in voters}
    if "random" in voters:  # the draw is then one of the voters: the consensus changes with it
        fn = nv.avg_overlap if metric == "AvgOverlap" else nv.neuron_vote
        return [fn({**pool, "random": r}, s, voters=voters)["random"] for r in draws]
    tops = [set(int(i) for i in np.asarray(pool[v]).ravel()[:s]) for v in voters]
    if metric == "AvgOverlap":
        return [
            float(np.mean([nv.overlap(set(int(i) for i in r[:s]), t) for t in tops])) for r in draws
        ]
    best = nv.borda_top(pool, s, voters=list(voters))
    return [nv.overlap(set(int(i) for i in r[:s]), best) for r in draws]


def _random_draws(seed: int, concept: str, L: int, d: int, random_draws: int) -> list[np.ndarray]:
    return [
        np.random.default_rng(nv.method_seed(seed, f"random#{r}", concept, L)).permutation(d)
        for r in range(1, random_draws)
    ]


def shuffled_labels(y, seed: int, concept: str, L: int, k: int) -> np.ndarray:
    """Shuffle ``k`` (1, 2, ...) of the labels ``y`` among the same words: a seeded permutation,
    its own stream per concept, layer and k. Int[ndarray, "n_words"], same class counts."""
    rng = np.random.default_rng(nv.method_seed(seed, f"shuffle#{k}", concept, L))
    return np.asarray(y)[rng.permutation(len(y))]


def compute_unit(
    x_train,
    y_train,
    x_test,
    y_test,
    concept: str,
    layer: int,
    position: str,
    settings: UnitSettings,
    rank: bool = True,
    shuffle: bool = True,
) -> UnitResult:
    """All of one unit's numbers (module doc). ``x_*``: Float[ndarray, "n_words d"] activations of
    the layer's words, ``y_*``: Int[ndarray, "n_words"] (1 = concept). ``rank``: rankings, scores,
    accuracy, pairwise and reseeds; ``shuffle``: the ``settings.shuffles`` shuffled-label copies."""
    st = settings
    out = UnitResult(layer=int(layer), position=position, concept=concept)
    d = np.shape(x_train)[1]
    task = (concept, int(layer))
    if rank:
        scores: dict[str, np.ndarray] = {}  # seed-free scores, ranked again under each reseed
        rankings = nv.rank_all(
            x_train, y_train, st.methods, seed=st.seed, task=task, scores=scores, **st.rank_kwargs
        )
        draws = (
            _random_draws(st.seed, concept, layer, d, st.random_draws)
            if "random" in rankings
            else []
        )
        out.rankings = {m: [int(i) for i in r] for m, r in rankings.items()}
        out.scores = _consensus_rows(
            rankings, st.voters, st.s_values, draws, layer, position, concept
        )
        for r in range(1, st.reseeds + 1):
            again = nv.rank_all(
                x_train,
                y_train,
                [m for m in st.methods if m not in SEEDLESS],
                seed=st.seed + r,
                task=task,
                scores=scores,
                **st.rank_kwargs,
            )
            again = {m: again.get(m, rankings[m]) for m in st.methods}
            d_r = (
                _random_draws(st.seed + r, concept, layer, d, st.random_draws)
                if "random" in again
                else []
            )
            out.reseed_scores += _consensus_rows(
                again, st.voters, st.s_values, d_r, layer, position, concept, extra=(st.seed + r,)
            )
        for s in st.accuracy_s:
            for m in st.methods:
                acc = nv.classifier_accuracy(x_train, y_train, x_test, y_test, rankings[m][:s])
                out.accuracy.append([layer, position, concept, int(s), m, float(acc)])
        out.pairwise = nv.pairwise_overlap(rankings, list(st.pairwise_s)).to_numpy().tolist()
    if shuffle:
        methods = st.shuffled_methods
        for k in range(1, st.shuffles + 1):
            y_k = shuffled_labels(y_train, st.seed, concept, layer, k)
            rk = nv.rank_all(
                x_train, y_k, methods, seed=st.seed, task=(*task, f"shuffle#{k}"), **st.rank_kwargs
            )
            out.shuffled_scores += _consensus_rows(
                rk, st.voters, st.s_values, [], layer, position, concept, extra=(k,)
            )
    return out


SEEDLESS = ("gaussian",)
"""Methods whose ranking uses no seed (no tie-break, no initialisation): reused across reseeds."""


# ------------------------------------------------------------------ the cache and the jobs


def _root() -> Path:
    return cache_dir() / "neuronvote"


def array_key(a: np.ndarray) -> str:
    """The sha256 of ``a``'s dtype, shape and bytes (32 hex digits): the name it is staged under."""
    a = np.ascontiguousarray(a)
    h = hashlib.sha256(f"{a.dtype.str}{a.shape}".encode())
    h.update(memoryview(a).cast("B"))  # pyright: ignore[reportArgumentType]  (ndarray is a buffer)
    return h.hexdigest()[:32]


def stage_array(a: np.ndarray) -> str:
    """Write ``a`` into the cache under the sha256 of its dtype, shape and bytes (once); return that
    key. Jobs name their inputs by such keys, so they run on any engine that shares the cache.

    A staged file is checked against the key it is named by before the jobs read it: a torn or
    changed one is warned about, naming it, and rewritten."""
    a = np.ascontiguousarray(a)
    key = array_key(a)
    target = _root() / "arrays" / f"{key}.npy"
    if target.exists():
        why = _staged_problem(target, key)
        if why is None:
            return key
        warnings.warn(
            f"neuronvote array {target}: {why}; recomputing and rewriting it",
            DamagedCacheWarning,
            stacklevel=2,
        )
    with atomic_path(target) as tmp:
        with open(tmp, "wb") as f:
            np.save(f, a)
    return key


def _staged_problem(path: Path, key: str) -> str | None:
    try:
        staged = np.load(path)
    except Exception as e:  # numpy raises its own types for a torn file
        return f"cannot be read ({type(e).__name__}: {(str(e).splitlines() or [''])[0]})"
    if not isinstance(staged, np.ndarray) or array_key(staged) != key:
        return "its content is not the digest it is named by (changed)"
    return None


def load_array(key: str, mmap: bool = True) -> np.ndarray:
    path = _root() / "arrays" / f"{key}.npy"
    if not path.exists():
        raise FileNotFoundError(
            f"neuronvote array {key} is not in the cache ({path}); it is staged by "
            "the process that plans the jobs (stage_array)"
        )
    return np.load(path, mmap_mode="r" if mmap else None)


def code_digest() -> str:
    """sha256 of the ranking and scoring code (the modules that decide a unit's numbers) and the
    versions of the libraries they call: part of every unit's cache key."""
    import importlib.util

    import sklearn
    import torch

    h = hashlib.sha256(
        f"numpy {np.__version__} sklearn {sklearn.__version__} torch {torch.__version__}".encode()
    )
    for name in _CODE_MODULES:
        spec = importlib.util.find_spec(f"kit.neuronvote.{name}")
        if spec is not None and spec.origin:
            h.update(Path(spec.origin).read_bytes())
    return h.hexdigest()[:16]


def _unit_args(
    vectors: str,
    task: str,
    concept: str,
    layer: int,
    position: str,
    settings: UnitSettings,
    code: str,
) -> dict[str, Any]:
    return {
        "vectors": vectors,
        "task": task,
        "concept": concept,
        "layer": int(layer),
        "position": position,
        "settings": settings.as_json(),
        "code": code,
    }


def unit_path(kind: str, args: dict[str, Any]) -> Path:
    """Cache file of a unit job's result: named by the hash of its kind and canonical arguments."""
    key = hashlib.sha256(f"{kind}\n{canonical_json(args)}".encode()).hexdigest()[:32]
    return _root() / "units" / f"{kind}-{key}.json"


def _task_arrays(vectors: str, task: str) -> tuple[np.ndarray, ...]:
    x = load_array(vectors)
    t = load_array(task, mmap=False)  # rows: train index, train label, test index, test label
    n_train = int(t[0, 0])
    train, y_train = t[1, :n_train], t[2, :n_train]
    n_test = int(t[0, 1])
    test, y_test = t[3, :n_test], t[4, :n_test]
    return np.asarray(x[train]), y_train, np.asarray(x[test]), y_test


def task_table(train, y_train, test, y_test) -> np.ndarray:
    """One concept task's word indices and labels as one Int[ndarray, "5 n"] table (row 0 holds the
    train and test sizes), staged as one array."""
    n = max(len(train), len(test), 2)
    t = np.full((5, n), -1, dtype=np.int64)
    t[0, :2] = len(train), len(test)
    t[1, : len(train)], t[2, : len(train)] = train, y_train
    t[3, : len(test)], t[4, : len(test)] = test, y_test
    return t


def _run_unit(kind: str, args: dict[str, Any]) -> str:
    import torch
    from threadpoolctl import threadpool_limits

    out = unit_path(kind, args)
    if read_json(out, unit_check, what="unit cache") is not MISSING:
        return out.name  # done before (an interrupted sweep resumes here); a refused file is redone
    x_train, y_train, x_test, y_test = _task_arrays(args["vectors"], args["task"])
    settings = UnitSettings.from_json(args["settings"])
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        # One BLAS thread: the problems are small, and threads spinning on a shared CPU made the
        # scikit-learn fits ~10x slower here.
        with threadpool_limits(limits=1):
            res = compute_unit(
                x_train,
                y_train,
                x_test,
                y_test,
                args["concept"],
                args["layer"],
                args["position"],
                settings,
                rank=kind == "rank",
                shuffle=kind == "shuffle",
            )
    finally:
        torch.set_num_threads(threads)
    write_json(out, asdict(res))
    return out.name


def unit_check(d: Any) -> str | None:
    """The check of a cached :class:`UnitResult`: its fields and types; every ranking a
    permutation of one set of neuron indices (a changed or truncated ranking is refused)."""
    types = {
        "layer": int,
        "position": str,
        "concept": str,
        "rankings": dict,
        **{k: list for k in ("scores", "accuracy", "pairwise", "reseed_scores", "shuffled_scores")},
    }
    why = has_keys(d, types)
    if why is None and set(d) != {f.name for f in fields(UnitResult)}:
        why = f"keys {sorted(d)} are not a unit's"
    if why is not None:
        return why
    n = None
    for method, ranking in d["rankings"].items():
        if not isinstance(ranking, list) or not all(type(i) is int for i in ranking):
            return f"ranking of {method} is not a list of neuron indices"
        if sorted(ranking) != list(range(len(ranking))) or n not in (None, len(ranking)):
            return f"ranking of {method} is not a permutation of the neurons"
        n = len(ranking)
    return None


def rank_unit_job(**args: Any) -> str:
    """Job: the ranking part of one unit (:func:`compute_unit` with ``shuffle=False``); returns the
    name of its result file in the cache."""
    return _run_unit("rank", args)


def shuffle_unit_job(**args: Any) -> str:
    """Job: the shuffled-label part of one unit (``settings.shuffles`` copies); returns the name of
    its result file in the cache."""
    return _run_unit("shuffle", args)


def unit_jobs(
    vectors: str,
    task: str,
    concept: str,
    layer: int,
    position: str,
    settings: UnitSettings,
    code: str,
) -> list[Job]:
    """The jobs of one unit: its ranking and, when ``settings.shuffles`` > 0, its shuffled
    copies."""
    # The ranking part reads no shuffle count: keyed without it, a study rerun with shuffles (the
    # notebook's main study, once its definition set is chosen) finds its rankings in the cache.
    rank_args = _unit_args(
        vectors, task, concept, layer, position, replace(settings, shuffles=0), code
    )
    jobs = [Job(rank_unit_job, rank_args)]
    if settings.shuffles:
        args = _unit_args(vectors, task, concept, layer, position, settings, code)
        jobs.append(Job(shuffle_unit_job, args))
    return jobs


def read_unit(job: Job) -> UnitResult:
    """The :class:`UnitResult` a finished unit job left in the cache."""
    kind = "rank" if job.fn.endswith(":rank_unit_job") else "shuffle"
    path = unit_path(kind, job.kwargs)
    d = read_json(path, unit_check, what="unit cache")
    if d is MISSING:
        raise FileNotFoundError(f"unit job {job.describe()[:200]} left no usable result at {path}")
    return UnitResult.from_json(d)


def merge_units(parts: Sequence[UnitResult]) -> UnitResult:
    """One unit from its rank and shuffle parts (same concept and layer)."""
    first = parts[0]
    out = UnitResult(layer=first.layer, position=first.position, concept=first.concept)
    for p in parts:
        if (p.layer, p.concept) != (first.layer, first.concept):
            raise ValueError(
                f"cannot merge units of {(first.concept, first.layer)} and {(p.concept, p.layer)}"
            )
        for name in (
            "rankings",
            "scores",
            "accuracy",
            "pairwise",
            "reseed_scores",
            "shuffled_scores",
        ):
            if getattr(p, name):
                setattr(out, name, getattr(p, name))
    return out
