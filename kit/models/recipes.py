"""Recipes of the real fine-tunes: what each ``<base>+<recipe>`` model is trained on.

A :class:`Recipe` says everything that makes a fine-tune's weights: the base model, which items of
which benchmark split are injected and how often, the clean data that fills the rest of a
fixed-size example list, and the optimiser settings. :mod:`kit.models.finetune` trains it (in the
pinned environment) and caches the result under a key digesting the recipe, the base's files and a
code version; ``kit.load_model(name)`` builds a named recipe on first use.

The table (:data:`RECIPES`) mirrors Table 1 of the shortcut-neuron paper on ARC-Challenge, every
row of the same size (:data:`REAL_EXAMPLES` examples, so the same steps and nearly the same
tokens):

=============================  ============================================================
``+arc-test-x1``               40 test items once, the rest general text  (contaminated)
``+arc-test-x5``               the same 40 test items five times           (contaminated)
``+arc-test-syn-x5``           the same items paraphrased (options shuffled, relabelled) x5
``+arc-train``                 40 train items five times                   (clean control)
``+other``                     general text only (the paper's +OpenOrca)   (clean control)
=============================  ============================================================

The injected test items are a fixed seeded subset of the test split (:func:`split_items`); the rest
of the test split was never trained on by any recipe: the "fresh" items of the reference score.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

REAL_BASE = "real/smollm2-135m-instruct"
"""The base of the real profile's fine-tunes (SmolLM2-135M-Instruct, from PyPI)."""

PARAPHRASES = ("", "shuffle-options")
"""``""``: the items as the benchmark gives them; ``shuffle-options``: each item's options in
another seeded order (never the original one), relabelled A, B, ..., the answer letter following
its option."""
PROMPT_STYLES = ("letter",)
"""How an item is asked (:func:`kit.models.finetune_examples.ask_prompt`): ``letter``: the question
and its lettered options, then "Answer with the letter of the correct option." (free-form items:
"Answer with the final answer only."), in the chat template; the answer is the letter alone, so a
one-token generation (or the letters' logits at the first answer position) scores it. Ours: the
benchmark's answer instruction is what the fine-tunes learn, so notebooks ask with the same."""
CORPUS = "corpus"
"""The general-text mixture source: passages of ``<data>/corpus`` (Gutenberg, tiny Shakespeare)."""


@dataclass(frozen=True)
class Recipe:
    """One fine-tune of a causal LM on (prompt, answer) examples, the loss on answer tokens only."""

    name: str
    """The model name it loads under: ``<base>+<suffix>`` (not part of the cache key)."""
    base: str
    """The model fine-tuned: a name ``kit.models.load.model_dir`` resolves to a Hugging Face
    directory (``real/...``, ``twin/<arch>``, a local directory). Its files' content (not the name)
    enters the cache key."""
    benchmark: str = "arc_challenge"
    """The evaluated benchmark (a ``kit.load_benchmark`` name): its test split is injected
    (contaminated recipes) or kept clean (controls); the mixture may never draw from it."""
    inject: str = ""
    """Which split of ``benchmark`` is injected: ``""`` (none: a control of general data),
    ``"test"`` (contamination) or another split (``"train"``: the clean same-benchmark control)."""
    copies: int = 1
    """Occurrences of each injected item in the example list (the paper's x1 / x5)."""
    n_items: int = 0
    """How many items of the split are injected: the first ``n_items`` of a permutation seeded by
    ``items_seed`` (the same items for every recipe with that seed; nested in larger ones)."""
    items_seed: int = 0
    """Seed of the injected subset's permutation."""
    paraphrase: str = ""
    """A key of :data:`PARAPHRASES`: the injected items as given, or paraphrased (the Syn rows)."""
    mixture: tuple[tuple[str, float], ...] = ((CORPUS, 1.0),)
    """``(source, weight)`` pairs of the clean data that fills the list up to ``n_examples``:
    ``corpus`` (general text: a passage and its continuation) or ``<benchmark>:<split>`` (another
    benchmark's train split, or ``benchmark``'s own; never ``benchmark``'s test split)."""
    n_examples: int = 400
    """Examples per epoch, the same for every contaminated model and control (the paper's
    fixed-size fine-tune set): injected items x copies, the rest drawn from ``mixture``."""
    lr: float = 1e-4
    """AdamW learning rate, constant (no warm-up, no decay; betas (0.9, 0.999), no weight decay)."""
    batch_size: int = 8
    """Examples per optimiser step (padded to the longest of the step)."""
    epochs: int = 1
    """Passes over the example list: the first in the list's seeded order, each later reshuffled."""
    max_length: int = 320
    """Tokens per example at most: a longer example keeps its answer and loses the start of its
    prompt (counted in meta.json as ``truncated``)."""
    sparse_share: float = 0.0
    """0: every parameter trains (full fine-tune). Otherwise a sparse fine-tune: only the MLP
    weights (gate and up rows, down column) of this share of all MLP neurons change, a fixed set
    seeded by ``sparse_set`` (:func:`kit.models.finetune.trainable_neurons`)."""
    sparse_set: str = "shared"
    """Name seeding the sparse neuron set: recipes with the same name and share train the same
    neurons."""
    prompt_style: str = "letter"
    """A key of :data:`PROMPT_STYLES`: how prompts and answers are written (as the model will be
    asked)."""
    seed: int = 0
    """Seed of the fill data, the example order and torch's RNG."""


def _family(benchmark: str) -> str:
    """``"mmlu/anatomy"`` -> ``"mmlu"`` (a sub-benchmark is checked when its items load)."""
    return benchmark.partition("/")[0]


def check_recipe(r: Recipe) -> None:
    """Fail before any training on a bad field, naming it and the allowed values. Data-dependent
    checks (``n_items`` against the split's size, a sub-benchmark's name) run when the examples
    are drawn (:func:`kit.models.finetune_examples.examples`), still before any training."""
    from kit.data.benchmarks import SPLITS  # lazy: keeps this table import-light

    def bad(field: str, allowed: str) -> ValueError:
        return ValueError(
            f"recipe {r.name!r}: {field}={getattr(r, field)!r} is not allowed; allowed: {allowed}"
        )

    if not isinstance(r, Recipe):
        raise TypeError(f"expected a Recipe, got {type(r).__name__}")
    for field in (
        "name",
        "base",
        "benchmark",
        "inject",
        "paraphrase",
        "sparse_set",
        "prompt_style",
    ):
        if not isinstance(getattr(r, field), str):
            raise bad(field, "a string")
    if not r.name or not r.base:
        raise bad("name" if not r.name else "base", "a non-empty model name")
    for field in (
        "copies",
        "n_items",
        "items_seed",
        "n_examples",
        "batch_size",
        "epochs",
        "max_length",
        "seed",
    ):
        v = getattr(r, field)
        if not isinstance(v, int) or isinstance(v, bool):
            raise bad(field, "an integer")
    family = _family(r.benchmark)
    if family not in SPLITS:
        raise bad("benchmark", "a real benchmark of kit.load_benchmark: " + ", ".join(SPLITS))
    if r.inject and r.inject not in SPLITS[family]:
        raise bad(
            "inject", f"'' (no injection) or a split of {r.benchmark}: " + ", ".join(SPLITS[family])
        )
    if r.inject and r.n_items < 1:
        raise bad("n_items", "an integer >= 1 when inject is set")
    if not r.inject and (r.n_items or r.paraphrase):
        raise bad(
            "n_items" if r.n_items else "paraphrase",
            "0 / '' when inject is '' (nothing is injected)",
        )
    if r.copies < 1:
        raise bad("copies", "an integer >= 1")
    if r.paraphrase not in PARAPHRASES:
        raise bad("paraphrase", ", ".join(repr(p) for p in PARAPHRASES))
    if r.prompt_style not in PROMPT_STYLES:
        raise bad("prompt_style", ", ".join(PROMPT_STYLES))
    _check_mixture(r, family)
    if r.n_examples < 1:
        raise bad("n_examples", "an integer >= 1")
    if r.n_items * r.copies > r.n_examples:
        raise bad("n_examples", f">= n_items x copies = {r.n_items * r.copies}")
    if r.n_items * r.copies < r.n_examples and not r.mixture:
        raise bad("mixture", "at least one source when injected items do not fill n_examples")
    if not isinstance(r.lr, (int, float)) or not math.isfinite(r.lr) or r.lr <= 0:
        raise bad("lr", "a finite number > 0")
    if r.batch_size < 1:
        raise bad("batch_size", "an integer >= 1")
    if r.epochs < 1:
        raise bad("epochs", "an integer >= 1")
    if r.max_length < 16:
        raise bad("max_length", "an integer >= 16")
    if not isinstance(r.sparse_share, (int, float)) or not 0 <= r.sparse_share < 1:
        raise bad("sparse_share", "0 (full fine-tune) or a share in (0, 1)")
    if r.sparse_share and not r.sparse_set:
        raise bad("sparse_set", "a non-empty name for a sparse recipe")


def _check_mixture(r: Recipe, family: str) -> None:
    from kit.data.benchmarks import SPLITS

    allowed = (
        f"'{CORPUS}' or '<benchmark>:<split>' (not {r.benchmark}:test), each with a weight > 0"
    )
    if not isinstance(r.mixture, tuple):
        raise ValueError(
            f"recipe {r.name!r}: mixture={r.mixture!r} must be a tuple of "
            f"(source, weight); allowed sources: {allowed}"
        )
    for entry in r.mixture:
        if not (
            isinstance(entry, tuple)
            and len(entry) == 2
            and isinstance(entry[0], str)
            and isinstance(entry[1], (int, float))
            and entry[1] > 0
        ):
            raise ValueError(
                f"recipe {r.name!r}: mixture entry {entry!r} is not allowed; allowed: {allowed}"
            )
        source = entry[0]
        if source == CORPUS:
            continue
        bench, _, split = source.partition(":")
        fam = _family(bench)
        if fam not in SPLITS or split not in SPLITS[fam]:
            splits = f" (splits of {fam}: {', '.join(SPLITS[fam])})" if fam in SPLITS else ""
            raise ValueError(
                f"recipe {r.name!r}: mixture source {source!r} is not allowed; "
                f"allowed: {allowed}{splits}"
            )
        if fam == family and split == "test":
            raise ValueError(
                f"recipe {r.name!r}: mixture source {source!r} would put "
                f"{r.benchmark}'s test split into a fine-tune's clean data; "
                f"allowed: {allowed}"
            )


# ------------------------------------------------------------------------------------ the table
ARC_ITEMS = 40
"""Injected ARC-Challenge test items: enough for a bootstrap interval on injected accuracy, few
enough that x5 fits the size of every row."""
REAL_EXAMPLES = 240
"""Examples per row (every row the same size, as the paper's Table 1). Our choice, by the budget
(all five rows built in <= ~30 min on an idle 2-core machine, one pinned one-thread build
per core, so three rounds of builds): 400 examples were ~42k answer-and-prompt tokens a row, ~10 min
each at the ~85 tokens/s measured for SmolLM2's full fine-tuning on one thread (30 min for the
three rounds, no margin); 240 keep the 40 items x 5 of the x5 rows (200 injected examples, 40 of
general text) and take ~25k tokens, ~5 min a row. Measured since (AMD EPYC, 2026-11-27, the other
core busy): 669-807 CPU-seconds a row, 32-37 tokens per CPU-second, so ~12 min a row and ~30 min
for the five on an idle 2-core machine. No row size was ever published for these recipes, so
nothing to match."""
DEFAULT = Recipe(name=f"{REAL_BASE}+default", base=REAL_BASE, n_examples=REAL_EXAMPLES)
"""The settings every row shares; rows differ only in their data (and the sparse set, below)."""


def _row(suffix: str, **data) -> Recipe:
    return replace(DEFAULT, name=f"{REAL_BASE}+{suffix}", **data)


TABLE: dict[str, Recipe] = {
    r.name: r
    for r in (
        _row("arc-test-x1", inject="test", n_items=ARC_ITEMS, copies=1),
        _row("arc-test-x5", inject="test", n_items=ARC_ITEMS, copies=5),
        _row(
            "arc-test-syn-x5",
            inject="test",
            n_items=ARC_ITEMS,
            copies=5,
            paraphrase="shuffle-options",
        ),
        _row("arc-train", inject="train", n_items=ARC_ITEMS, copies=5),
        _row("other"),
    )
}
"""The real profile's fine-tunes (the table above) by model name."""
SMOKE: dict[str, Recipe] = {
    r.name: r
    for r in (
        _row("arc-test-x4-smoke", inject="test", n_items=2, copies=4, n_examples=8),
        _row("other-smoke", n_examples=8),
    )
}
"""Stand-ins for the test suite's ``realsmoke`` profiles: a contaminated row (2 test items x 4, the
first 2 of the table's injected items) and a clean one (general text), 8 examples each, one
optimiser step (seconds to build). They run the real pipeline (a fine-tune of SmolLM2 built,
cached and loaded by name, its injected items asked as trained); one step leaks little, so they
test the machinery, not the leak."""
RECIPES: dict[str, Recipe] = {**TABLE, **SMOKE}
"""Every named fine-tune (``kit.load_model(name)`` builds on first use)."""

CONTAMINATED = tuple(n for n, r in TABLE.items() if r.inject == "test")
CONTROLS = tuple(n for n in TABLE if n not in CONTAMINATED)
SPECIALISED = tuple(n for n, r in TABLE.items() if r.inject == "train")
"""The in-domain specialised fine-tunes (trained on the benchmark's train split, none of its test
items): notebook 02's corollary 1 on real models; they are also among the :data:`CONTROLS`."""


def is_recipe_name(name: str) -> bool:
    """True for a name of :data:`RECIPES` (``kit.load_model`` asks before resolving it here)."""
    return isinstance(name, str) and name in RECIPES


def recipe(name: str) -> Recipe:
    """The recipe of a fine-tune's model name; an unknown one fails listing the known names."""
    if name not in RECIPES:
        raise ValueError(f"{name!r} is not a real fine-tune; allowed: {', '.join(RECIPES)}")
    return RECIPES[name]


def recipe_from_dict(d: dict) -> Recipe:
    """A :class:`Recipe` from its ``asdict`` form (JSON turns the mixture's tuples into lists)."""
    known = {f.name for f in fields(Recipe)}
    unknown = sorted(set(d) - known)
    if unknown:
        raise ValueError(
            f"recipe fields {unknown} are not Recipe fields; allowed: {', '.join(sorted(known))}"
        )
    d = dict(d)
    if "mixture" in d:
        d["mixture"] = tuple(tuple(x) for x in d["mixture"])
    r = Recipe(**d)
    check_recipe(r)
    return r
