"""The two Competency Gaps suites the notebook analyses, assembled into plain arrays.

1. **Real suite**: real benchmark prompts (``kit.load_benchmark``) for coverage, and real models'
   per-item correctness from the published responses (:mod:`kit.data.responses`) for model
   performance, both read through MiniLM + our SAEs (:mod:`kit.cg.saes`).
2. **Tiny-world suite**: the tiny world's task suites, a zoo model's exact-match correctness and
   the zoo model's own SAE (model and SAE both ours, like the paper's main setting).

Each suite is a :class:`Suite`: per benchmark, a sparse items x concepts matrix of eq. 1's
``s~``, the item texts and their token counts, and per model, per benchmark, the item scores
m_b(i) (with their own activation matrices when the texts include the model's response). The
paper's own setting (the evaluated models' SAEs) is :mod:`kit.cg.model_space`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

import numpy as np
import scipy.sparse as sp

from kit.cg import metrics as cg

if TYPE_CHECKING:
    from kit.data.items import Item

BBH_SUITE_TASKS = (
    "boolean_expressions",
    "date_understanding",
    "logical_deduction_three_objects",
    "navigate",
    "object_counting",
    "web_of_lies",
    "word_sorting",
    "causal_judgement",
)
"""BBH tasks pooled (equal shares) into the single ``bbh`` benchmark of the real suite."""


@dataclass
class Suite:
    """Concept activations of a benchmark suite under one SAE, plus model scores."""

    sae: str
    labels: list[str]
    acts: dict[str, cg.CSR]
    """benchmark -> items x concepts (coverage: prompts only)."""
    texts: dict[str, list[str]]
    model_acts: dict[str, dict[str, cg.CSR]] = field(default_factory=dict)
    """model -> benchmark -> items x concepts of the texts the model's score refers to."""
    model_scores: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    model_texts: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    contexts: list[list[dict]] | None = None
    x_bench_denominator: str = "all"
    """Eq. 3's denominator (:func:`kit.cg.metrics.x_bench`): ``all`` (the equation) or ``active``
    (the text)."""
    model_responses: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    """model -> benchmark -> the model's responses (shown by the explorer; absent for the tiny
    world)."""
    label_source: str = ""
    """Where the concept labels come from (:func:`kit.cg.labels.sae_labels`)."""
    n_tokens: dict[str, np.ndarray] = field(default_factory=dict)
    """benchmark -> tokens per item of ``acts`` (eq. 1's ``|x_i|``); empty where unknown."""
    text_acts: cg.CSR | None = None
    """General text (paragraphs x concepts) read like the benchmarks: the size-controlled null of
    the coverage claim (:func:`kit.cg.size_control.coverage_vs_text`); None where not read."""
    text_tokens: np.ndarray | None = None
    """Tokens per paragraph of ``text_acts``."""
    text_source: str = ""

    @property
    def n_concepts(self) -> int:
        return len(self.labels)

    def x_bench(self):
        """Eq. 3 over this suite, with its chosen denominator."""
        from kit.cg import metrics as cg

        return cg.x_bench(self.acts, self.x_bench_denominator)

    def fires(self) -> np.ndarray:
        """Per concept: active on at least one item this suite read (coverage or any model's
        texts)."""
        mats = [*self.acts.values(), *(a for per in self.model_acts.values() for a in per.values())]
        return np.logical_or.reduce([np.asarray((a > 0).sum(axis=0)).ravel() > 0 for a in mats])

    def dead(self) -> np.ndarray:
        """Dead latents: no activation on the SAE's own training text (label ``(dead)``) *and* none
        on any benchmark text read here. A ``(dead)``-labelled concept that fires on a benchmark is
        alive."""
        return np.array([lab == "(dead)" for lab in self.labels]) & ~self.fires()

    def live(self) -> np.ndarray:
        """Concepts the SAE uses: not :meth:`dead`, or firing on the general text
        (``text_acts``)."""
        live = ~self.dead()
        if self.text_acts is not None:
            live |= np.asarray((self.text_acts > 0).sum(axis=0)).ravel() > 0
        return live


def benchmark_prompts(name: str, n: int, seed: int = 0) -> list[str]:
    """``n`` prompts of a real benchmark (the items of :func:`benchmark_items`)."""
    return [item.prompt for _, item in benchmark_items(name, n, seed)]


def real_suite(
    sae_names: Sequence[str],
    benchmarks: Sequence[str],
    n_items: int,
    response_sets: Sequence[str],
    n_response_items: int,
    include_responses: bool = False,
    max_length: int = 256,
    seed: int = 0,
    device: str = "cpu",
    encoder=None,
    labeller=None,
    answers=None,
    n_text_items: int = 0,
) -> dict[str, Suite]:
    """One :class:`Suite` per SAE over the real benchmarks, with published and/or generated
    responses.

    Labels: ``labeller`` (a :class:`kit.cg.labels.Labeller`; default the top-context words with
    stop-words and punctuation filtered) over each SAE's stored top-activating contexts.

    The encoder runs once per text; every SAE encodes its activations (cached on disk).
    Response sets: the first ``n_response_items`` items of each file; their texts are prompt +
    response when ``include_responses`` (the paper does so for LMSYS-Chat only). A benchmark with a
    response set is covered through that set's prompts (the first set's items; every set of one
    benchmark must list the same items), so coverage and performance read the same items.
    ``answers``: ``{model: {benchmark: ModelAnswers}}`` of models that answered rows of the coverage
    samples themselves (:func:`kit.cg.answers.run_answers`); their concepts are those rows' (the
    prompt only). ``n_text_items``: held-out corpus paragraphs read as general text
    (``Suite.text_acts``, the coverage claim's size-controlled null); 0 = none.
    """
    from kit.cg import saes as cg_saes
    from kit.cg.labels import TopContextLabeller
    from kit.cg.size_control import general_text
    from kit.data import responses as cg_responses
    from kit.models.encoders import load_encoder

    encoder = encoder or load_encoder("minilm", device=device)
    for name in sae_names:
        cg_saes.build_minilm_sae(name, device=device, encoder=encoder)
    sets = {n: cg_responses.load_responses(n, limit=n_response_items) for n in response_sets}
    scored = {}
    for n, rs in sets.items():
        first = scored.setdefault(rs.benchmark, rs)
        if first.ids != rs.ids:
            raise ValueError(
                f"response sets {first.name} and {n} do not list the same {rs.benchmark} items in "
                "the same order; coverage and performance must read the same items"
            )
    if answers and include_responses:
        raise ValueError(
            "include_responses reads prompt + response; generated answers are read by prompt "
            "only here"
        )
    texts = {
        b: scored[b].texts(include_response=False)
        if b in scored
        else benchmark_prompts(b, n_items, seed)
        for b in benchmarks
    }
    labeller = labeller or TopContextLabeller()
    contexts = {n: cg_saes.minilm_sae_contexts(n) for n in sae_names}
    suites = {
        n: Suite(
            n,
            labeller(contexts[n]),
            {},
            texts,
            contexts=contexts[n],
            label_source=f"local: {labeller.name} (MiniLM SAE training text)",
        )
        for n in sae_names
    }
    for b, t in texts.items():
        acts, lengths = cg_saes.item_concepts(
            encoder, sae_names, t, max_length=max_length, device=device, desc=f"concepts: {b}"
        )
        for n in sae_names:
            suites[n].acts[b] = acts[n]
            suites[n].n_tokens[b] = np.asarray(lengths)
    for rs_name, rs in sets.items():
        model = rs_name.split("/", 1)[1]
        rs_texts = rs.texts(include_response=include_responses)
        acts, _ = cg_saes.item_concepts(
            encoder,
            sae_names,
            rs_texts,
            max_length=max_length,
            device=device,
            desc=f"concepts: {rs_name}",
        )
        for n in sae_names:
            suites[n].model_acts.setdefault(model, {})[rs.benchmark] = acts[n]
            suites[n].model_scores.setdefault(model, {})[rs.benchmark] = rs.scores
            suites[n].model_texts.setdefault(model, {})[rs.benchmark] = rs_texts
            suites[n].model_responses.setdefault(model, {})[rs.benchmark] = list(rs.responses)
    for model, per in (answers or {}).items():
        for b, a in per.items():
            if b not in texts:
                raise ValueError(
                    f"answers of {model} on {b!r}: not a benchmark of this suite ({list(texts)})"
                )
            for n in sae_names:
                suites[n].model_acts.setdefault(model, {})[b] = suites[n].acts[b][a.positions]
                suites[n].model_scores.setdefault(model, {})[b] = a.correct.astype(float)
                suites[n].model_texts.setdefault(model, {})[b] = [texts[b][i] for i in a.positions]
                suites[n].model_responses.setdefault(model, {})[b] = list(a.responses)
    if n_text_items:
        exclude = [t for n in sae_names for t in cg_saes.minilm_sae_training_texts(n)]
        general = general_text(n_text_items, exclude, seed)
        acts, lengths = cg_saes.item_concepts(
            encoder,
            sae_names,
            general,
            max_length=max_length,
            device=device,
            desc="concepts: general text",
        )
        for n in sae_names:
            suites[n].text_acts, suites[n].text_tokens = acts[n], np.asarray(lengths)
            suites[
                n
            ].text_source = (
                f"{n_text_items} held-out corpus paragraphs (Gutenberg, tiny Shakespeare)"
            )
    return suites


def prompt_only_acts(
    sae_names: Sequence[str],
    response_set: str,
    n_items: int,
    max_length: int = 256,
    device: str = "cpu",
    encoder=None,
) -> dict[str, cg.CSR]:
    """Activations of a response set's prompts only (same for every model answering them)."""
    from kit.cg import saes as cg_saes
    from kit.data import responses as cg_responses
    from kit.models.encoders import load_encoder

    encoder = encoder or load_encoder("minilm", device=device)
    rs = cg_responses.load_responses(response_set, limit=n_items)
    acts, _ = cg_saes.item_concepts(
        encoder,
        sae_names,
        rs.texts(include_response=False),
        max_length=max_length,
        device=device,
        desc="concepts: prompts only",
    )
    return acts


def zoo_suite(
    model_name: str,
    sae_name: str,
    n_items: int,
    tasks: Sequence[str] | None = None,
    split: str = "test",
    world: str | None = None,
    seed: int = 0,
    device: str = "cpu",
) -> Suite:
    """The tiny-world suite: ``n_items`` items of each task, the zoo model's exact-match
    correctness as m_b(i), concepts from the model's own SAE over the prompt tokens."""
    import kit
    from kit import world as kw
    from kit.cg.saes import zoo_item_concepts

    model = kit.load_model(model_name, device=device, world=world)
    sae_name = resolve_zoo_sae(model_name, sae_name, world)
    sae = kit.load_sae(sae_name, device=device, world=world)
    tasks = list(tasks) if tasks else list(kw.TASKS)
    acts, texts, scores = {}, {}, {}
    for t in tasks:
        items = kw.get_task(t).items(split, n_items, seed)
        acts[t] = zoo_item_concepts(model, sae, items)
        texts[t] = [it.prompt for it in items]
        scores[t] = np.asarray(kw.evaluate(model, items), dtype=float)
    by_index = kw.sae_labels(sae_name, world=world)  # {feature: label}
    labels = [by_index.get(i, f"feature {i}") for i in range(sae.cfg.d_sae)]
    return Suite(
        sae_name, labels, acts, texts, {model_name: acts}, {model_name: scores}, {model_name: texts}
    )


def resolve_zoo_sae(model_name: str, sae_name: str, world: str | None = None) -> str:
    """``sae_name``, or for ``"auto"`` the widest TopK SAE of ``model_name`` in the world."""
    from kit import world as kw

    names = kw.saes(world)
    if sae_name != "auto":
        if sae_name not in names:
            raise ValueError(
                f"zoo_sae={sae_name!r} is not an SAE of world {world!r}; allowed values: auto, "
                f"{', '.join(names)}"
            )
        return sae_name
    from kit.models.sources import form_of

    form = form_of(model_name)
    member = form.rest(model_name) if form.world_member else model_name
    prefix = f"zoo-sae/{member}/topk-"
    mine = [n for n in names if n.startswith(prefix)]
    if not mine:
        raise ValueError(
            f"no TopK SAE of {model_name} in world {world!r}; SAEs: {', '.join(names)}"
        )
    return max(mine, key=lambda n: int(n.rsplit("-", 1)[1]))


def best_match(
    acts_a: dict[str, cg.CSR], acts_b: dict[str, cg.CSR], concepts: Sequence[int]
) -> list[tuple[int, float]]:
    """For each concept of SAE A, the concept of SAE B whose activation profile over the same
    items is most similar (cosine over all items of all benchmarks), with that cosine.

    How the paper's Table 3 pairs concepts of two SAEs, made computable: its pairs were chosen by
    reading labels; ours by co-activation on the same datapoints.
    """
    a = sp.vstack([acts_a[b] for b in acts_a]).tocsc()
    bm = sp.vstack([acts_b[b] for b in acts_a]).tocsc()
    bnorm = np.sqrt(np.asarray(bm.multiply(bm).sum(0)).ravel())
    out = []
    for c in concepts:
        col = a[:, int(c)]
        na = float(np.sqrt(col.multiply(col).sum()))
        if na == 0:
            out.append((-1, float("nan")))
            continue
        sims = np.asarray((col.T @ bm).todense()).ravel() / (
            na * np.where(bnorm > 0, bnorm, np.inf)
        )
        j = int(np.argmax(sims))
        out.append((j, float(sims[j])))
    return out


def model_x(suite: Suite, model: str) -> np.ndarray:
    """X_model (eq. 5) of one model over the benchmarks it was scored on."""
    return cg.x_model(suite.model_acts[model], suite.model_scores[model])


def two_model_comparison(cfg, suite: Suite, sae_names: Sequence[str], main_sae: str):
    """Two models' concept profiles on the same ARC items, concepts read from the prompts only.

    Returns (name A, name B, prompt acts, scores A, scores B) or None when the config has no two
    models on ARC. Published responses: the first two ``arc/`` response sets (same items, same
    order, checked); generated: the first two models' scores on the ARC items they answered.
    """
    if cfg.concept_space == "minilm" and cfg.responses == "published":
        from kit.data import responses as cg_responses

        arc_sets = [n for n in cfg.response_sets if n.startswith("arc/")]
        if len(arc_sets) < 2:
            return None
        ra = cg_responses.load_responses(arc_sets[0], limit=cfg.n_response_items)
        rb = cg_responses.load_responses(arc_sets[1], limit=cfg.n_response_items)
        if ra.ids != rb.ids:
            raise ValueError(
                f"{arc_sets[0]} and {arc_sets[1]} do not list the same ARC items in the same order"
            )
        acts = prompt_only_acts(
            sae_names, arc_sets[0], cfg.n_response_items, cfg.max_length, cfg.device
        )[main_sae]
        return arc_sets[0], arc_sets[1], acts, ra.scores, rb.scores
    models = [m for m in suite.model_scores if "arc_challenge" in suite.model_scores[m]]
    if len(models) < 2 or "arc_challenge" not in suite.acts:
        return None
    a, b = models[:2]
    acts = suite.model_acts[a]["arc_challenge"]
    if (
        acts.shape != suite.model_acts[b]["arc_challenge"].shape
        or (acts != suite.model_acts[b]["arc_challenge"]).nnz
    ):
        raise ValueError(
            f"{a} and {b} did not answer the same ARC items; the comparison needs the same items"
        )
    return (
        a,
        b,
        acts,
        suite.model_scores[a]["arc_challenge"],
        suite.model_scores[b]["arc_challenge"],
    )


# ----------------------------------------------------------------------------- the paper's setting


UNSCORED = ("lmsys_arena", "vectara_hallucination")
"""Benchmarks with no rule-based scorer (a battle's winner, a factual-consistency judge): in the
paper's setting they count for coverage (X_bench) only; X_model averages over the scored
benchmarks."""


def benchmark_split(name: str) -> tuple[str, str]:
    """``(split, source)`` the suite reads of benchmark ``name``: the local test split, or for the
    hub-only benchmarks (:data:`kit.data.benchmarks.HUB_ONLY`, network) their validation split
    (their test answers are not public), else their only one."""
    from kit.data.benchmarks import HUB_ONLY, SPLITS

    family = name.split("/", 1)[0]
    if family in HUB_ONLY:
        return ("validation" if "validation" in SPLITS[family] else SPLITS[family][0]), "hf"
    return "test", "local"


def benchmark_items(name: str, n: int, seed: int = 0) -> list[tuple[str, Item]]:
    """(scoring name, Item) pairs: ``n`` seeded items of :func:`benchmark_split` (``bbh`` pools
    :data:`BBH_SUITE_TASKS`)."""
    from kit.data.benchmarks import load_benchmark

    rng = random.Random(f"{seed}/{name}")
    if name == "bbh":
        per = max(1, n // len(BBH_SUITE_TASKS))
        out = []
        for task in BBH_SUITE_TASKS:
            items = load_benchmark(f"bbh/{task}", "test")
            out += [(f"bbh/{task}", it) for it in rng.sample(items, min(per, len(items)))]
        return out[:n]
    split, source = benchmark_split(name)
    items = load_benchmark(name, split, source=source)
    return [(name, it) for it in rng.sample(items, min(n, len(items)))]
