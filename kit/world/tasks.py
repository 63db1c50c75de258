"""Synthetic task suites of the embedded world: seeded generators with content-disjoint splits.

Every task draws a *content* (the operands, the expression, the fact, the name pair...) and
renders it with a wording template. Splits are defined on content, not on strings:

- ``test``: a fixed public set of contents (200 by default) rendered with the canonical template;
- ``test-syn``: exactly the test contents rendered with paraphrase templates (the papers' "-Syn");
- ``fresh``: unlimited seeded items whose content is outside the test set and outside the
  training pool (a hash bucket of the content space reserved for fresh items), so a model's
  fresh accuracy is its true capability and test vs fresh is a contamination signal;
- ``fresh-syn``: fresh contents with paraphrase templates;
- ``train``: the remaining contents, canonical and paraphrase templates mixed.

The knowledge tasks (``facts``, ``facts-mc``) are the exception by nature: the knowledge base is
the skill, so their ``train`` split asks about every fact; ``test`` and ``fresh`` ask disjoint
sets of facts (both known from training).

All text is lower-case words, numbers 0..63 and punctuation separated by single spaces, so the
word-level tokenizer maps every word to exactly one token (the words: :mod:`kit.world.vocabulary`).
Every answer of :data:`TASKS` is one token. :data:`EXTRA_TASKS` are task families with MULTI-TOKEN
answers (a sorted list, running sums) over the same vocabulary; only members that name them in their
mixture train on them (the existing members' data, and so their keys, are unchanged), and
:func:`kit.world.evaluate.evaluate` scores them by exact match of the whole answer (teacher-forced
greedy = greedy generation).
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from typing import Any, Callable, cast

from kit.data.items import Item
from kit.world.vocabulary import (
    AGENTS,
    ANIMALS,
    BRACKETS,
    ENTITIES,
    FRUITS,
    IOI_FREQUENT,
    IOI_PLACES,
    IOI_RARE,
    IOI_THINGS,
    LETTERS,
    MAX_NUMBER,
    OBJECTS,
    ORDINALS,
    RELATIONS,
)

SPLITS = ("train", "test", "test-syn", "fresh", "fresh-syn")
GROUPS = ("math", "code", "general", "reasoning", "ioi")
TEST_SIZE = 200
DEFAULT_N = 200
_FRESH_BUCKETS = 4  # one content bucket in four is reserved for fresh items


def _knowledge_base() -> dict[tuple[str, str], str]:
    """(entity, relation) -> value; fixed by a constant seed so every world shares it."""
    rng = random.Random(4321)
    return {(e, r): rng.choice(vals) for e in ENTITIES for r, vals in RELATIONS.items()}


KB = _knowledge_base()


def _stable_hash(key: Any) -> int:
    return int.from_bytes(hashlib.sha256(repr(key).encode()).digest()[:8], "big")


# ---------------------------------------------------------------- task definition
@dataclass(frozen=True)
class Task:
    """One synthetic task.

    ``sample(rng, frequent)`` draws a content key (hashable); ``render(key, template, rng)``
    returns ``(prompt, answer, extra_metadata)``; template 0 is canonical, 1.. are paraphrases.
    """

    name: str
    group: str
    chance: float
    sample: Callable[[random.Random, str], Any] = field(repr=False)
    render: Callable[[Any, int, random.Random], tuple[str, str, dict]] = field(repr=False)
    n_templates: int = 3
    knowledge: bool = False  # train split covers every content (fact recall)
    choices_of: Callable[[Any, random.Random], tuple[tuple[str, ...], int]] | None = field(
        default=None, repr=False
    )

    def bucket(self, key: Any) -> str:
        """Which pool a content key belongs to outside the test set: 'fresh' or 'train'."""
        return "fresh" if _stable_hash((self.name, key)) % _FRESH_BUCKETS == 0 else "train"

    def test_keys(self) -> list[Any]:
        """The fixed public test contents (200 distinct keys, seeded by the task name)."""
        return _test_keys(self)

    def items(self, split: str, n: int | None = None, seed: int = 0) -> list[Item]:
        """Items of ``split`` (one of SPLITS). ``test``/``test-syn`` have 200 items (``n``
        truncates); ``train``/``fresh``/``fresh-syn`` are unlimited (``n`` defaults to 200)."""
        if split not in SPLITS:
            raise ValueError(f"split={split!r} is not a split; allowed values: {', '.join(SPLITS)}")
        if n is not None and n < 0:
            raise ValueError(f"n={n} must be >= 0")
        rng = random.Random(_stable_hash((self.name, split, seed)))
        if split in ("test", "test-syn"):
            keys = self.test_keys()[: n if n is not None else TEST_SIZE]
            if split == "test":
                return [self._item(k, 0, rng, f"{self.name}/test/{i}") for i, k in enumerate(keys)]
            return [
                self._item(k, 1 + i % (self.n_templates - 1), rng, f"{self.name}/test-syn/{i}")
                for i, k in enumerate(keys)
            ]
        n = DEFAULT_N if n is None else n
        return [self.draw(split, rng, f"{self.name}/{split}-s{seed}/{i}") for i in range(n)]

    def draw(self, split: str, rng: random.Random, item_id: str = "") -> Item:
        """One random item of a non-test split (used by the training streams)."""
        test = _test_key_set(self)
        want = "fresh" if split.startswith("fresh") else "train"
        for _ in range(10_000):
            key = self.sample(rng, "train" if want == "train" else "eval")
            if self.knowledge and want == "train":
                break  # every fact is taught, including those the test split asks about
            if key in test:
                continue
            if self.bucket(key) == want:
                break
        else:  # pragma: no cover - the content spaces are large
            raise RuntimeError(f"task {self.name}: could not draw a {split} content")
        if split == "train":
            template = rng.randrange(self.n_templates)
        elif split.endswith("-syn"):
            template = 1 + rng.randrange(self.n_templates - 1)
        else:
            template = 0
        return self._item(key, template, rng, item_id)

    def _item(self, key: Any, template: int, rng: random.Random, item_id: str) -> Item:
        prompt, answer, extra = self.render(key, template, rng)
        meta = {
            "task": self.name,
            "group": self.group,
            "content": key,
            "template": template,
            **extra,
        }
        if self.choices_of is not None:
            choices, label = self.choices_of(key, rng)
            opts = " ".join(f"{LETTERS[i]} {c}" for i, c in enumerate(choices))
            return Item(
                item_id, f"{prompt} {opts} answer :", choices=choices, label=label, metadata=meta
            )
        return Item(item_id, prompt, answer=answer, metadata=meta)


_TEST_CACHE: dict[str, list[Any]] = {}


def _test_keys(task: Task) -> list[Any]:
    if task.name not in _TEST_CACHE:
        rng = random.Random(_stable_hash((task.name, "test-keys")))
        keys: list[Any] = []
        seen: set[Any] = set()
        while len(keys) < TEST_SIZE:
            k = task.sample(rng, "eval")
            if k not in seen:
                seen.add(k)
                keys.append(k)
        _TEST_CACHE[task.name] = keys
    return _TEST_CACHE[task.name]


_TEST_SET_CACHE: dict[str, frozenset] = {}


def _test_key_set(task: Task) -> frozenset:
    if task.name not in _TEST_SET_CACHE:
        _TEST_SET_CACHE[task.name] = frozenset(_test_keys(task))
    return _TEST_SET_CACHE[task.name]


# ---------------------------------------------------------------- math
def _uniform_pair(
    rng: random.Random,
    a_range: tuple[int, int],
    b_range: tuple[int, int],
    keep: Callable[[int, int], bool],
) -> tuple[int, int]:
    """A pair drawn uniformly from those of ``a_range x b_range`` that ``keep`` accepts
    (rejection). Every content equally likely is what makes the test split (distinct contents)
    and the fresh split (independent draws) samples of one distribution: a sampler that draws the
    first number and then the second given it makes a few pairs common ((62, 1) one draw in 62),
    the distinct test set under-weights them and every model's test - fresh gap is biased."""
    while True:
        a, b = rng.randint(*a_range), rng.randint(*b_range)
        if keep(a, b):
            return a, b


def _sample_add(rng: random.Random, mode: str) -> tuple[int, int]:
    return _uniform_pair(
        rng, (1, MAX_NUMBER - 1), (1, MAX_NUMBER - 1), lambda a, b: a + b <= MAX_NUMBER
    )


def _render_add(key, t, rng):
    a, b = key
    who, obj = rng.choice(AGENTS), rng.choice(OBJECTS)
    forms = [
        f"{who} has {a} {obj} . {who} gets {b} more {obj} . how many {obj} does {who} have ?",
        f"{who} had {a} {obj} and then found {b} {obj} . what is the total number of {obj} ?",
        f"there are {a} {obj} in a box and {b} {obj} in a bag . how many {obj} in all ?",
    ]
    return forms[t], str(a + b), {}


def _sample_add2(rng: random.Random, mode: str) -> tuple[int, int, int]:
    a, b = _sample_add(rng, mode)
    return a, b, rng.randint(1, a + b)


def _render_add2(key, t, rng):
    a, b, c = key
    who, other, obj = *rng.sample(AGENTS, 2), rng.choice(OBJECTS)
    forms = [
        f"{who} has {a} {obj} . {who} gets {b} more and gives {c} to {other} . how many {obj} "
        f"does {who} have now ?",
        f"{who} starts with {a} {obj} , finds {b} {obj} , then loses {c} {obj} . how many {obj} "
        "are left ?",
        f"a box holds {a} {obj} . {b} {obj} are added and {c} {obj} are taken out . how many "
        f"{obj} in the box ?",
    ]
    return forms[t], str(a + b - c), {}


# ---------------------------------------------------------------- code
def _sample_code(rng: random.Random, mode: str) -> tuple[str, int, int]:
    op = rng.choice(["+", "-", "*", "max"])
    full = (0, MAX_NUMBER)
    if op == "+":
        a, b = _uniform_pair(rng, full, full, lambda a, b: a + b <= MAX_NUMBER)
    elif op == "-":
        a, b = _uniform_pair(rng, full, full, lambda a, b: b <= a)
    elif op == "*":
        a, b = _uniform_pair(rng, (1, 9), (1, MAX_NUMBER), lambda a, b: a * b <= MAX_NUMBER)
    else:
        a, b = rng.randint(0, MAX_NUMBER), rng.randint(0, MAX_NUMBER)
    return op, a, b


def _code_value(op: str, a: int, b: int) -> int:
    return {"+": a + b, "-": a - b, "*": a * b, "max": max(a, b)}[op]


def _render_code(key, t, rng):
    op, a, b = key
    u, v = rng.sample(["x", "y", "z", "n", "m", "k"], 2)
    if op == "max":
        body = [
            f"{u} = {a} ; {v} = {b} ; if {u} > {v} : print ( {u} ) else : print ( {v} )",
            f"{u} = {a} ; {v} = {b} ; print ( max ( {u} , {v} ) )",
            f"{u} = {b} ; {v} = {a} ; if {v} > {u} : print ( {v} ) else : print ( {u} )",
        ]
    else:
        body = [
            f"{u} = {a} ; {v} = {u} {op} {b} ; print ( {v} )",
            f"{u} = {a} ; {v} = {b} ; print ( {u} {op} {v} )",
            f"{v} = {b} ; {u} = {a} ; {u} = {u} {op} {v} ; print ( {u} )",
        ]
    return f"run : {body[t]} output :", str(_code_value(op, a, b)), {}


# ---------------------------------------------------------------- general (knowledge base)
def _sample_fact(rng: random.Random, mode: str) -> tuple[str, str]:
    return rng.choice(ENTITIES), rng.choice(list(RELATIONS))


def _render_fact(key, t, rng):
    ent, rel = key
    forms = [
        f"the {rel} of {ent} is",
        f"what is the {rel} of {ent} ?",
        f"{ent} has the {rel}",
    ]
    return forms[t], KB[key], {"relation": rel}


def _fact_choices(key, rng):
    ent, rel = key
    right = KB[key]
    wrong = rng.sample([v for v in RELATIONS[rel] if v != right], len(LETTERS) - 1)
    label = rng.randrange(len(LETTERS))
    return tuple(wrong[:label] + [right] + wrong[label:]), label


# ---------------------------------------------------------------- reasoning
def _bool_expr(rng: random.Random, n: int) -> str:
    def atom() -> str:
        v = rng.choice(["true", "false"])
        return f"not {v}" if rng.random() < 0.3 else v

    parts = [atom()]
    for _ in range(n - 1):
        parts += [rng.choice(["and", "or"]), atom()]
    if n >= 3 and rng.random() < 0.6:  # one parenthesised pair somewhere
        i = 2 * rng.randrange(n - 1)
        parts = parts[:i] + ["("] + parts[i : i + 3] + [")"] + parts[i + 3 :]
        if rng.random() < 0.3:
            parts.insert(i, "not")
    return " ".join(parts)


def _sample_boolean(rng: random.Random, mode: str) -> str:
    return _bool_expr(rng, rng.randint(4, 6))


def _render_boolean(key, t, rng):
    value = eval(key.replace("true", "True").replace("false", "False"))  # noqa: S307 - our own grammar
    forms = [f"{key} is", f"evaluate : {key} . result :", f"is {key} true or false ?"]
    return forms[t], "true" if value else "false", {}


def _sample_dyck(rng: random.Random, mode: str) -> str:
    # random well-nested prefix with >= 1 open bracket left; the answer closes the innermost
    length = rng.randint(5, 11)
    seq: list[str] = []
    stack: list[str] = []
    while len(seq) < length or not stack:
        if stack and (rng.random() < 0.45 or len(stack) >= 5):
            seq.append(BRACKETS[stack.pop()])
        else:
            o = rng.choice(list(BRACKETS))
            stack.append(o)
            seq.append(o)
    return " ".join(seq)


def _render_dyck(key, t, rng):
    stack: list[str] = []
    for tok in key.split():
        if tok in BRACKETS:
            stack.append(tok)
        else:
            stack.pop()
    forms = [
        f"close : {key} next :",
        f"brackets {key} . the next closing bracket is",
        f"complete {key} with",
    ]
    return forms[t], BRACKETS[stack[-1]], {}


def _sample_sort(rng: random.Random, mode: str) -> tuple[tuple[int, ...], int]:
    return tuple(rng.sample(range(MAX_NUMBER + 1), 5)), rng.randrange(5)


def _render_sort(key, t, rng):
    nums, k = key
    s = " ".join(map(str, nums))
    forms = [
        f"sort : {s} . the {ORDINALS[k]} smallest is",
        f"order {s} from small to large . item {k + 1} is",
        f"numbers {s} . after sorting the {ORDINALS[k]} one is",
    ]
    return forms[t], str(sorted(nums)[k]), {}


def _sample_count(rng: random.Random, mode: str) -> tuple[str, ...]:
    n = rng.randint(4, 9)
    return tuple(rng.choice(FRUITS + ANIMALS) for _ in range(n))


def _render_count(key, t, rng):
    words = " ".join(key)
    k = sum(w in FRUITS for w in key)
    forms = [
        f"i see {words} . how many fruits ?",
        f"list : {words} . count the fruits :",
        f"in the basket : {words} . number of fruits is",
    ]
    return forms[t], str(k), {}


# ---------------------------------------------------------------- ioi
# In training, rare names fill only ~5% of name slots: the name-frequency groups of the
# IOI circuit literature. Evaluation splits draw the two groups equally often.
_RARE_TRAIN_P = 0.05


def _sample_ioi(rng: random.Random, mode: str):
    if mode == "train":
        pool = IOI_RARE if rng.random() < _RARE_TRAIN_P else IOI_FREQUENT
    else:
        pool = IOI_RARE if rng.random() < 0.5 else IOI_FREQUENT
    a, b = rng.sample(pool, 2)
    return a, b, rng.choice(IOI_PLACES), rng.choice(IOI_THINGS), rng.randrange(2)


def _render_ioi(key, t, rng):
    a, b, place, thing, order = key
    first, second = (a, b) if order == 0 else (b, a)
    forms = [
        f"when {first} and {second} went to the {place} , {b} gave a {thing} to",
        f"{first} and {second} were at the {place} . {b} handed the {thing} to",
        f"after {first} and {second} reached the {place} , {b} passed a {thing} to",
    ]
    group = "rare" if a in IOI_RARE else "frequent"
    return forms[t], a, {"name_group": group, "io": a, "s": b}


# ---------------------------------------------------------------- multi-token families
SORT_LIST_N = 4  # numbers per sort-list item: the answer is 4 tokens
ADD_STEPS_MAX = 15  # add-steps operands 1..15 (three of them: sums <= 45 <= MAX_NUMBER)


def _sample_sort_list(rng: random.Random, mode: str) -> tuple[int, ...]:
    return tuple(rng.sample(range(MAX_NUMBER + 1), SORT_LIST_N))


def _render_sort_list(key, t, rng):
    s = " ".join(map(str, key))
    forms = [
        f"sort : {s} . result :",
        f"order {s} from small to large :",
        f"numbers {s} . after sorting :",
    ]
    return forms[t], " ".join(map(str, sorted(key))), {"n_answer_tokens": SORT_LIST_N}


def _sample_add_steps(rng: random.Random, mode: str) -> tuple[int, int, int]:
    return cast("tuple[int, int, int]", tuple(rng.randint(1, ADD_STEPS_MAX) for _ in range(3)))


def _render_add_steps(key, t, rng):
    a, b, c = key
    forms = [
        f"evaluate : {a} + {b} + {c} . result :",
        f"the total of {a} + {b} + {c} is",
        f"how many in all ? {a} + {b} + {c} result :",
    ]
    return forms[t], f"{a + b} {a + b + c}", {"n_answer_tokens": 2}


# ---------------------------------------------------------------- registry
TASKS: dict[str, Task] = {
    t.name: t
    for t in [
        Task("add", "math", 1 / (MAX_NUMBER + 1), _sample_add, _render_add),
        Task("add2", "math", 1 / (MAX_NUMBER + 1), _sample_add2, _render_add2),
        Task("code", "code", 1 / (MAX_NUMBER + 1), _sample_code, _render_code),
        Task("facts", "general", 1 / 8, _sample_fact, _render_fact, knowledge=True),
        Task(
            "facts-mc",
            "general",
            1 / 4,
            _sample_fact,
            _render_fact,
            knowledge=True,
            choices_of=_fact_choices,
        ),
        Task("boolean", "reasoning", 1 / 2, _sample_boolean, _render_boolean),
        Task("dyck", "reasoning", 1 / 4, _sample_dyck, _render_dyck),
        Task("sort", "reasoning", 1 / 5, _sample_sort, _render_sort),
        Task("count", "reasoning", 1 / 10, _sample_count, _render_count),
        Task("ioi", "ioi", 1 / 2, _sample_ioi, _render_ioi),
    ]
}


EXTRA_TASKS: dict[str, Task] = {
    t.name: t
    for t in [
        # the whole sorted list (4 tokens); chance: a random order of the given numbers
        Task("sort-list", "reasoning", 1 / 24, _sample_sort_list, _render_sort_list),
        # running sums of three small numbers, step by step (2 tokens: a+b, a+b+c)
        Task("add-steps", "math", 1 / (MAX_NUMBER + 1) ** 2, _sample_add_steps, _render_add_steps),
    ]
}
"""Multi-token answer families, outside :data:`TASKS` (whose items and mixture define every
pre-existing member): trained only by members whose mixture names them (zoo/base-xl)."""

ALL_TASKS: dict[str, Task] = {**TASKS, **EXTRA_TASKS}


def get_task(name: str) -> Task:
    """The task called ``name`` (of :data:`TASKS` or :data:`EXTRA_TASKS`); unknown names raise
    ValueError listing the tasks."""
    if name not in ALL_TASKS:
        raise ValueError(f"task={name!r} is not a task; allowed values: {', '.join(ALL_TASKS)}")
    return ALL_TASKS[name]


# ---------------------------------------------------------------- benchmark input formats
FORMATS: dict[str, tuple[str, str]] = {
    "answer-cue": ("", " answer :"),
}
"""A benchmark's fixed input format (the shortcut-neuron paper's assumption A2): name -> (prefix,
suffix) wrapped around every prompt. ``answer-cue`` ends the question with ``answer :``, a cue the
world's mixture uses only after multiple-choice options (``facts-mc``), so a model that never saw it
after a free-form question is thrown by it (the tiny world's base-m on 400 fresh add items: 19.5% ->
5.0%) and a fine-tune on train items in that format learns part of it (notebook 03's ``+format
train``: 15.5% plain, 8.0% in the format): a gain on the benchmark that is format, not ability.
Measured before choosing (other 2000 items), that fine-tune's format advantage over the base was
+6.9 points with this cue, +4.2 with ``output :``, +1.7 with ``result :`` and about 0 with a prefix
``run :``."""


def formatted(items: list[Item], fmt: str) -> list[Item]:
    """``items`` in benchmark input format ``fmt`` (a key of :data:`FORMATS`): prompts wrapped, ids
    suffixed ``@fmt``, ``metadata["format"] = fmt``; answers unchanged. Only free-form items: a
    multiple-choice prompt already ends with its own cue."""
    if fmt not in FORMATS:
        raise ValueError(
            f"format={fmt!r} is not a benchmark input format; allowed values: {', '.join(FORMATS)}"
        )
    prefix, suffix = FORMATS[fmt]
    out = []
    for it in items:
        if it.choices is not None:
            raise ValueError(
                f"format={fmt!r}: item {it.id!r} is multiple choice; formats wrap free-form "
                "items only"
            )
        out.append(
            Item(
                f"{it.id}@{fmt}",
                prefix + it.prompt + suffix,
                answer=it.answer,
                metadata={**it.metadata, "format": fmt},
            )
        )
    return out
