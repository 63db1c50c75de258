"""A tiny-world model under evaluation: zoo members (``zoo/...``) and notebook 03's own fine-tunes
(``extra/...``), on the world's tasks. :mod:`kit.world.sources` registers it with
:func:`kit.subjects.subject.register_subject` for every model that speaks the world's vocabulary:
``kit.load_subject("zoo/base-m")`` is one, and the generic subjects never import the world.

Responses are the world's greedy generation (``kit.world.respond``: word-level tokens, stopping at
``<eos>``); a response is scored by :func:`world_correct` (its first words equal the answer);
teacher-forced internals run over ``<bos> prompt response`` (:meth:`WorldSubject.tokens`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from kit.models import tl
from kit.subjects.ablation import Neuron, ablation_hooks
from kit.subjects.answers import Answers
from kit.subjects.items import is_world_task, task_chance, task_group, task_items
from kit.subjects.lent import LentMethods
from kit.world.tasks import ALL_TASKS


def world_correct(items: Sequence[Any], responses: Sequence[str]) -> np.ndarray:
    """Bool[ndarray, "item"]: the response's first ``len(answer words)`` words equal the answer's.

    The world scores what the model generated, as real benchmarks do. For one-token answers (every
    task of :data:`kit.world.TASKS`) this is exact match of the greedy next token, i.e. what
    ``kit.world.evaluate`` computes from the logits; for multi-token answers
    (:data:`kit.world.EXTRA_TASKS`) it holds exactly when greedy generation reproduces the answer,
    which ``evaluate`` checks teacher-forced (tests/world/test_subject.py compares the two)."""
    if len(items) != len(responses):
        raise ValueError(f"responses ({len(responses)}) and items ({len(items)}) must pair up")
    out = np.zeros(len(items), dtype=bool)
    for i, (it, r) in enumerate(zip(items, responses)):
        want = it.target.split()
        out[i] = r.split()[: len(want)] == want
    return out


@dataclass
class WorldSubject(LentMethods):
    """A tiny-world model and the world's ways of asking it (see the module docstring)."""

    name: str
    model: Any
    """The ``HookedTransformer`` (world tokenizer attached)."""
    world: str | None = None
    kind: str = "world"

    def items(
        self,
        task: str,
        split: str = "test",
        n: int | None = None,
        seed: int = 0,
        skip: int = 0,
        one_per_content: bool = False,
    ) -> list:
        """Items of a world task (:func:`kit.subjects.items.task_items`); real benchmarks are
        refused: a world model reads only the world's vocabulary."""
        self.check_task(task)
        return task_items(task, split, n, seed, skip, one_per_content)

    def check_task(self, task: str) -> None:
        if not is_world_task(task):
            raise ValueError(
                f"task={task!r} is not a tiny-world task, and {self.name} reads only the world's "
                f"vocabulary; allowed: {', '.join(ALL_TASKS)}"
            )

    def fresh_items(self, task: str, n: int, seed: int = 0) -> list | None:
        """``n`` items of the task's ``fresh`` split: seeded draws that no training stream holds
        (the world can promise never-seen items)."""
        return self.items(task, "fresh", n, seed)

    def token_budget(self, max_batch_tokens: int | None) -> int | None:
        """None: world models are small, their teacher-forced passes run in ``batch_size`` rows."""
        return None

    def group(self, task: str) -> str:
        return task_group(task)

    def chance(self, task: str, items: Sequence[Any]) -> float | None:
        return task_chance(task, items)

    def respond(
        self,
        task: str,
        items: Sequence[Any],
        max_new_tokens: int = 1,
        ablate: Sequence[Neuron] = (),
    ) -> list[str]:
        """Greedy responses (``kit.world.respond``) with the MLP neurons ``ablate`` zeroed."""
        from kit.world.evaluate import respond

        with tl.hooks(self.model, ablation_hooks(ablate)):
            return list(respond(self.model, list(items), max_new_tokens=max_new_tokens))

    def score(
        self, task: str, items: Sequence[Any], responses: Sequence[str], max_new_tokens: int = 1
    ) -> Answers:
        """:func:`world_correct`. A response is truncated when ``max_new_tokens`` is shorter than
        the answer (the answer cannot fit); a parse failure is a response that ended with ``<eos>``
        before the answer could: shorter than ``min(answer words, max_new_tokens)``."""
        items, responses = list(items), list(responses)
        n_words = np.array([len(it.target.split()) for it in items], dtype=int)
        n_said = np.array([len(r.split()) for r in responses], dtype=int)
        return Answers(
            task,
            items,
            responses,
            world_correct(items, responses),
            parse_failed=n_said < np.minimum(n_words, max_new_tokens),
            truncated=n_words > max_new_tokens,
            chance=self.chance(task, items),
            source="generated (world, greedy)",
            chat=False,
            max_new_tokens=max_new_tokens,
        )

    def answer(
        self,
        task: str,
        items: Sequence[Any],
        max_new_tokens: int = 1,
        ablate: Sequence[Neuron] = (),
        scoring: str = "generate",
    ) -> Answers:
        """:meth:`respond`, then :meth:`score`. World answers are generated
        (``scoring="generate"``)."""
        if scoring != "generate":
            raise ValueError(
                f"scoring={scoring!r}: tiny-world models are scored on their generated answer; "
                "allowed: generate"
            )
        return self.score(
            task, items, self.respond(task, items, max_new_tokens, ablate), max_new_tokens
        )

    def tokens(self, items: Sequence[Any], responses: Sequence[str]):
        """Right-padded ``<bos> prompt response`` tokens and the response mask
        (:func:`kit.models.rows.item_tokens`)."""
        from kit.models.rows import item_tokens

        return item_tokens(self.model, items, responses)
