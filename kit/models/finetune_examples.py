"""Training examples of the real fine-tunes (:mod:`kit.models.finetune`): which benchmark items a
recipe injects (:func:`split_items`), how an item is asked and answered (:func:`item_example`,
:func:`ask_prompt`), paraphrased Syn items, general-text passages, and one epoch's seeded example
list (:func:`examples`). Text only: nothing here imports torch or transformers."""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from kit.core.paths import data_dir
from kit.data.benchmarks import format_choices, load_benchmark
from kit.data.items import Item
from kit.models.recipes import CORPUS, Recipe, check_recipe, recipe

LETTER_INSTRUCTION = "Answer with the letter of the correct option."
FREE_INSTRUCTION = "Answer with the final answer only."
CORPUS_PROMPT = "Continue the text:\n\n"
CORPUS_WORDS = (32, 16)
"""Words of a general-text example's passage (prompt) and continuation (answer)."""


@dataclass(frozen=True)
class Example:
    """One training example before tokenisation: the user's message and the answer to learn."""

    prompt: str
    answer: str
    source: str
    """``inject``, ``corpus`` or the ``<benchmark>:<split>`` of a mixture item."""
    id: str


def split_items(
    benchmark: str, split: str, n_items: int, seed: int = 0
) -> tuple[list[Item], list[Item]]:
    """``(injected, rest)`` of a benchmark split: the first ``n_items`` of the split's items in an
    order seeded by ``seed``, and every other item in the split's own order. For the test split,
    ``rest`` are the fresh items no recipe of that seed trained on (the reference score's items)."""
    items = load_benchmark(benchmark, split)
    if not 0 <= n_items <= len(items):
        raise ValueError(
            f"n_items={n_items} is not allowed for {benchmark}:{split}; allowed: 0..{len(items)}"
        )
    order = list(range(len(items)))
    random.Random(f"inject:{benchmark}:{split}:{seed}").shuffle(order)
    chosen = set(order[:n_items])
    rest = [it for i, it in enumerate(items) if i not in chosen]
    return [items[i] for i in order[:n_items]], rest


def paraphrased(item: Item, seed: int = 0) -> Item:
    """A multiple-choice item with its options in another seeded order (never the original one),
    relabelled A, B, ...: the same question and correct option in another letter layout (the
    paper's Syn rows)."""
    if item.choices is None or item.label is None or len(item.choices) < 2:
        raise ValueError(
            f"item {item.id}: shuffle-options needs a multiple-choice item with >= 2 options"
        )
    rng = random.Random(f"paraphrase:{seed}:{item.id}")
    order = list(range(len(item.choices)))
    while order == sorted(order):
        rng.shuffle(order)
    choices = tuple(item.choices[i] for i in order)
    question = item.metadata.get("question", item.prompt.split("\n")[0])
    return Item(
        item.id,
        format_choices(question, choices),
        choices=choices,
        label=order.index(item.label),
        metadata={**item.metadata, "paraphrase": "shuffle-options"},
    )


def item_example(item: Item, source: str, style: str = "letter") -> Example:
    """An item as asked under ``style`` (:data:`kit.models.recipes.PROMPT_STYLES`), its answer."""
    if style != "letter":
        raise ValueError(f"prompt_style={style!r} is not allowed; allowed: letter")
    instruction = LETTER_INSTRUCTION if item.choices is not None else FREE_INSTRUCTION
    return Example(f"{item.prompt}\n{instruction}", item.target, source, item.id)


def ask_prompt(item: Item, style: str = "letter") -> str:
    """The user message a fine-tune of ``style`` was trained with for ``item``: what a notebook
    shows the model (``kit.models.generate.prompt_text`` then wraps it in the chat template)."""
    return item_example(item, "ask", style).prompt


_CORPUS_WORDS: list[tuple[str, list[str]]] | None = None


def _corpus() -> list[tuple[str, list[str]]]:
    """``(file, words)`` of every general-text file (whitespace normalised), read once."""
    global _CORPUS_WORDS
    if _CORPUS_WORDS is None:
        root = data_dir() / "corpus"
        out = []
        for path in sorted(p for p in root.rglob("*.txt") if p.is_file()):
            raw = path.read_bytes()
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:  # shakespeare-caesar.txt is Latin-1 (the data MANIFEST)
                text = raw.decode("latin-1")
            out.append((str(path.relative_to(root)), text.split()))
        if not out:
            raise FileNotFoundError(f"no general-text files (*.txt) under {root}")
        _CORPUS_WORDS = out
    return _CORPUS_WORDS


def corpus_example(rng: random.Random) -> Example:
    """A passage of general text and its continuation, at a place drawn by ``rng`` (files
    weighted by their length)."""
    files = _corpus()
    n_prompt, n_answer = CORPUS_WORDS
    name, words = rng.choices(files, weights=[len(w) for _, w in files])[0]
    start = rng.randrange(0, len(words) - n_prompt - n_answer)
    passage = " ".join(words[start : start + n_prompt])
    continuation = " ".join(words[start + n_prompt : start + n_prompt + n_answer])
    return Example(CORPUS_PROMPT + passage, continuation, CORPUS, f"{name}@{start}")


def examples(r: Recipe) -> list[Example]:
    """One epoch's example list of a recipe, in its seeded order: ``n_items`` items of
    ``r.benchmark:r.inject`` ``copies`` times each (paraphrased if asked), the rest drawn from the
    mixture."""
    check_recipe(r)
    rng = random.Random(f"examples:{r.seed}")
    out: list[Example] = []
    if r.inject:
        chosen, _ = split_items(r.benchmark, r.inject, r.n_items, r.items_seed)
        if r.paraphrase:
            chosen = [paraphrased(it, r.items_seed) for it in chosen]
        out = [item_example(it, "inject", r.prompt_style) for it in chosen for _ in range(r.copies)]
    pools: dict[str, list[Item]] = {}
    names = [s for s, _ in r.mixture]
    weights = [w for _, w in r.mixture]
    while len(out) < r.n_examples:
        source = rng.choices(names, weights)[0]
        if source == CORPUS:
            out.append(corpus_example(rng))
            continue
        if source not in pools:
            bench, _, split = source.partition(":")
            pools[source] = load_benchmark(bench, split)
        out.append(item_example(rng.choice(pools[source]), source, r.prompt_style))
    rng.shuffle(out)
    return out


def epoch_order(r: Recipe, epoch_list: list[Example]) -> list[Example]:
    """Every epoch's examples, concatenated: the list's order first, each later epoch reshuffled."""
    out = list(epoch_list)
    for e in range(1, r.epochs):
        again = list(epoch_list)
        random.Random(f"epoch:{r.seed}:{e}").shuffle(again)
        out += again
    return out


# ---------------------------------------------------------------------- evaluating a fine-tune
def eval_items(r: Recipe, n_fresh: int, seed: int = 0) -> tuple[list[Item], list[Item]]:
    """``(injected, fresh)`` test items of a contaminated recipe: its injected items as given (not
    paraphrased) and a seeded sample of ``n_fresh`` of the test items no recipe of its seed
    injected."""
    if r.inject != "test":
        raise ValueError(
            f"{r.name}: eval_items needs a contaminated recipe (inject='test'), got "
            f"inject={r.inject!r}"
        )
    injected, rest = split_items(r.benchmark, "test", r.n_items, r.items_seed)
    n_fresh = min(n_fresh, len(rest))
    return injected, random.Random(f"fresh:{seed}").sample(rest, n_fresh)


def asked(items: list[Item], style: str = "letter") -> list[Item]:
    """``items`` with the prompt a real fine-tune of ``style`` was trained on (:func:`ask_prompt`:
    the question, its lettered options and the answer instruction); ids, choices and labels
    unchanged, so scoring is the benchmark's."""
    return [replace(it, prompt=ask_prompt(it, style)) for it in items]


def recipe_items(items_of: str, n_eval: int, n_ref: int, seed: int = 0) -> tuple[list, list]:
    """``(test, fresh)`` of a contaminated real fine-tune (``items_of``, a name of
    :data:`kit.models.recipes.RECIPES`): the first ``n_eval`` of its injected test items (the
    leaked items) and ``n_ref`` test items no recipe injected (never seen), both asked as the
    fine-tunes were trained (:func:`asked`). The injected items come as given, never paraphrased."""
    r = recipe(items_of)
    injected, fresh = eval_items(r, n_ref, seed)
    if n_eval > len(injected):
        raise ValueError(f"n_eval={n_eval}: {items_of} injected {len(injected)} items")
    return asked(injected[:n_eval], r.prompt_style), asked(fresh, r.prompt_style)
