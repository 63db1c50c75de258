"""Items of a task or a benchmark, its capability group and its chance level: one definition for
every notebook.

A name is a generated task (``add``, ``facts-mc``, ``sort-list``: a task of a family registered
with :func:`kit.data.benchmarks.register_tasks`, here the tiny world's :data:`kit.world.TASKS` and
:data:`kit.world.EXTRA_TASKS`) or a real benchmark (``kit.load_benchmark`` names: ``gsm8k``,
``arc_challenge``, ``mmlu/anatomy``, ``bbh/navigate``, ``tiny/add``...). The two name spaces are
disjoint, so the name alone decides where the items come from. This module never imports what
generates the tasks: their family answers for them (items, group, chance).
"""

from __future__ import annotations

from typing import Any, Sequence

from kit.data.benchmarks import TaskFamily, task_families
from kit.data.items import Item
from kit.subjects.answers import chance_of

BENCHMARK_GROUPS: dict[str, str] = {
    "gsm8k": "math",
    "math500": "math",
    "svamp": "math",
    "mawps": "math",
    "asdiv": "math",
    "humaneval": "code",
    "mbpp": "code",
    "arc_challenge": "reasoning",
    "bbh": "reasoning",
    "mmlu": "general",
}
"""Capability group of the real benchmarks (``bbh/<task>`` -> ``bbh``), as the world's tasks have
(``math``, ``code``, ``reasoning``, ``general``): the paper's in-domain / OOD labels and the law's
per-group fits read it. Other benchmarks are a group of their own (their family name)."""

FRESH_DRAWS = 20
"""Seeded draws per requested item when collecting one item per content (``one_per_content``)."""


def task_family(task: str) -> TaskFamily | None:
    """The registered family whose generated tasks include ``task`` (the tiny world's for ``add``),
    or None for a ``kit.load_benchmark`` name."""
    for family in task_families().values():
        if task in family.tasks():
            return family
    return None


def is_world_task(task: str) -> bool:
    """Whether ``task`` names a generated task, a tiny-world task (:func:`task_family`; else it
    is a ``kit.load_benchmark`` name)."""
    return task_family(task) is not None


def task_items(
    task: str,
    split: str = "test",
    n: int | None = None,
    seed: int = 0,
    skip: int = 0,
    one_per_content: bool = False,
) -> list[Item]:
    """Items ``skip .. skip + n`` of ``task``'s ``split``.

    World tasks: their family's items (``kit.world.get_task(task).items(split, n, seed)``:
    ``test`` has 200 items; ``train``/``fresh`` are seeded draws). ``one_per_content`` (``fresh``
    splits): the first ``n`` distinct contents of the seeded draws, one item each: a fresh split
    re-renders a content with other names and objects, and such items are correlated (notebook
    03's Ref; measured on ``add``: an item bootstrap's SE of a fresh accuracy was 1.4-1.7x too
    small otherwise). Real benchmarks:
    the first items of the split (``kit.load_benchmark``; no ``fresh`` split: their never-seen
    items must come from another benchmark or split; ``skip`` keeps two sets disjoint).
    """
    if n is not None and n < 0:
        raise ValueError(f"n={n} must be >= 0")
    if skip < 0:
        raise ValueError(f"skip={skip} must be >= 0")
    family = task_family(task)
    if family is not None:
        if one_per_content:
            return _one_per_content(family, task, split, n if n is not None else 200, seed)[skip:]
        return family.load(task, split, None if n is None else n + skip, seed)[skip:]
    if split.startswith("fresh"):
        raise ValueError(
            f"split={split!r}: the real benchmark {task!r} has no fresh split (its never-seen "
            "items must come from another benchmark or split); allowed here: test, or the "
            "benchmark's own splits"
        )
    from kit.data.benchmarks import load_benchmark

    items = load_benchmark(task, split=split, limit=None if n is None else n + skip)[skip:]
    if not items:
        raise ValueError(
            f"task={task!r}: its {split} split has no items"
            + (f" after skip={skip}" if skip else "")
        )
    return items


def _one_per_content(family: TaskFamily, task: str, split: str, n: int, seed: int) -> list[Item]:
    first: dict = {}
    for it in family.load(task, split, FRESH_DRAWS * n, seed):
        first.setdefault(it.metadata["content"], it)
    if len(first) < n:
        raise ValueError(
            f"n={n}: task {task!r} has {len(first)} distinct {split} contents in "
            f"{FRESH_DRAWS * n} draws; "
            f"ask for at most {len(first)}"
        )
    return list(first.values())[:n]


def task_group(task: str) -> str:
    """Capability group of a world task (its family's ``group``: ``kit.world.get_task(task).group``)
    or of a real benchmark (:data:`BENCHMARK_GROUPS`, else its family name: ``bbq/Age`` ->
    ``bbq``)."""
    family = task_family(task)
    if family is not None:
        return family.group(task)
    family = task.split("/", 1)[0]
    return BENCHMARK_GROUPS.get(family, family)


def benchmark_of(item: Any) -> str:
    """The benchmark (family) an item belongs to, read from its id: ``kit.load_benchmark`` ids start
    with their family (``gsm8k/test/17`` -> ``gsm8k``, ``mmlu/test/anatomy/3`` -> ``mmlu``); a world
    task's ids start with the task (``add/test/0`` -> ``tiny/add``, the task as a benchmark of its
    family)."""
    first = str(item.id).split("/", 1)[0]
    family = task_family(first)
    return f"{family.family}/{first}" if family is not None else first


def task_chance(task: str, items: Sequence[Any]) -> float | None:
    """Accuracy of a random guess: the world task's ``chance`` (one answer token among its answer
    vocabulary); for real multiple-choice items the mean of 1/number of options; None for free-form
    benchmarks (no meaningful chance level)."""
    family = task_family(task)
    if family is not None:
        return family.chance(task)
    return chance_of(items)
