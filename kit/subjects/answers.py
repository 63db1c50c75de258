"""A model's answers to items, scored, with what an accuracy needs beside it: its interval, the
chance level, the parse failures and the truncated responses.

:class:`Answers` is what every :class:`kit.subjects.Subject` returns from ``answer`` (and notebook
00 from a responses file); ``summary()`` is the dict a notebook records in ``results.json``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from kit.core.stats import wilson_interval

SCORINGS = ("generate", "loglik-letter", "loglik-text")
"""How an answer is read: ``generate`` (a greedy response, scored by the benchmark's rule),
``loglik-letter`` / ``loglik-text`` (multiple choice only: the option whose letter / text is most
likely after the prompt, :mod:`kit.subjects.loglik`)."""


@dataclass
class Answers:
    """Responses to ``items`` and their correctness, with parse failures and truncations per item.

    A **parse failure** is a response the scoring rule reads no answer from (no letter, no number:
    :func:`kit.data.scorers.parse_failed`; scored wrong). A **truncated** response hit the token
    budget (``max_new_tokens``) before its end token, so its answer may be missing. Both are None
    where unknown (responses read from a file that does not say)."""

    task: str
    """World task (``add``) or benchmark (``arc_challenge``, ``mmlu/anatomy``, ``tiny/add``)."""
    items: list
    """Objects with ``id``, ``prompt`` (as the model saw it, instruction included) and
    ``target``."""
    responses: list[str]
    correct: np.ndarray
    """Bool[ndarray, "item"]."""
    parse_failed: np.ndarray | None = None
    """Bool[ndarray, "item"], or None when unknown."""
    truncated: np.ndarray | None = None
    """Bool[ndarray, "item"], or None when unknown."""
    chance: float | None = None
    """Accuracy of a uniform guess (mean 1/options for multiple choice, the world task's chance),
    None for free-form answers."""
    source: str = "generated"
    """``generated (<settings>)``, ``lm-eval <file> (<metric>)`` or ``published <set>``."""
    chat: bool | None = None
    """How prompts were shown: None = the chat template when the tokenizer has one, False = as
    written."""
    scoring: str = "generate"
    """One of :data:`SCORINGS`."""
    prompt_style: str | None = None
    """``instructed`` / ``plain`` (:data:`kit.data.prompts.PROMPT_STYLES`); None for world tasks and
    files."""
    max_new_tokens: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    """Anything else worth recording (per-option log-likelihoods...)."""

    def __post_init__(self):
        self.correct = np.asarray(self.correct, dtype=bool)
        n = len(self.items)
        for name in ("responses", "correct", "parse_failed", "truncated"):
            value = getattr(self, name)
            if value is not None and len(value) != n:
                raise ValueError(f"Answers.{name} has {len(value)} entries for {n} items")
        if self.parse_failed is not None:
            self.parse_failed = np.asarray(self.parse_failed, dtype=bool)
        if self.truncated is not None:
            self.truncated = np.asarray(self.truncated, dtype=bool)
        if self.scoring not in SCORINGS:
            raise ValueError(
                f"scoring={self.scoring!r} is not allowed; allowed: {', '.join(SCORINGS)}"
            )

    @property
    def n(self) -> int:
        return len(self.items)

    @property
    def n_correct(self) -> int:
        return int(self.correct.sum())

    @property
    def accuracy(self) -> float:
        """Share of correct items (a fraction in [0, 1]; NaN for no items)."""
        return float(np.mean(self.correct)) if self.n else float("nan")

    @property
    def interval(self) -> tuple[float, float]:
        """Wilson 95% interval of the accuracy (``kit.core.stats.wilson_interval``)."""
        _, lo, hi = wilson_interval(self.n_correct, self.n)
        return lo, hi

    @property
    def n_parse_failed(self) -> int | None:
        return None if self.parse_failed is None else int(self.parse_failed.sum())

    @property
    def n_truncated(self) -> int | None:
        return None if self.truncated is None else int(self.truncated.sum())

    def summary(self) -> dict[str, Any]:
        """The numbers a notebook records (JSON-ready): accuracy, its interval, chance, counts."""
        lo, hi = self.interval
        return {
            "task": self.task,
            "n": self.n,
            "n_correct": self.n_correct,
            "accuracy": self.accuracy,
            "accuracy_ci95": [lo, hi],
            "chance": self.chance,
            "parse_failures": self.n_parse_failed,
            "truncated": self.n_truncated,
            "scoring": self.scoring,
            "prompt_style": self.prompt_style,
            "max_new_tokens": self.max_new_tokens,
            "responses": self.source,
        }

    def table_fields(self) -> dict[str, Any]:
        """The columns a per-model table carries beside accuracy: its Wilson interval in %
        (``perf_low``, ``perf_high``), ``chance``, ``parse_failures``, ``truncated``."""
        lo, hi = self.interval
        return {
            "perf_low": 100 * lo,
            "perf_high": 100 * hi,
            "chance": self.chance,
            "parse_failures": self.n_parse_failed,
            "truncated": self.n_truncated,
        }

    def describe(self) -> str:
        """One line: ``accuracy 0.240 [0.143, 0.374] (chance 0.250), 12/50 correct, parse failures
        3/50, truncated 0/50``."""
        lo, hi = self.interval
        text = f"accuracy {self.accuracy:.3f} [{lo:.3f}, {hi:.3f}]"
        text += (
            f" (chance {self.chance:.3f})"
            if self.chance is not None
            else " (no chance level: free-form)"
        )
        text += f", {self.n_correct}/{self.n} correct"
        for name, count in (
            ("parse failures", self.n_parse_failed),
            ("truncated", self.n_truncated),
        ):
            text += f", {name} " + (f"{count}/{self.n}" if count is not None else "unknown")
        return text

    def subset(self, index: Sequence[int]) -> "Answers":
        """The answers of the items at ``index`` (same settings)."""
        idx = list(index)

        def pick(a):
            return None if a is None else a[idx]

        return Answers(
            self.task,
            [self.items[i] for i in idx],
            [self.responses[i] for i in idx],
            self.correct[idx],
            pick(self.parse_failed),
            pick(self.truncated),
            self.chance,
            self.source,
            self.chat,
            self.scoring,
            self.prompt_style,
            self.max_new_tokens,
            dict(self.extra),
        )


def chance_of(items: Sequence[Any]) -> float | None:
    """Accuracy of a uniform guess over each item's options (mean of 1/number of options) when every
    item is multiple choice, else None (free-form answers have no meaningful chance level)."""
    if items and all(getattr(it, "choices", None) for it in items):
        return float(np.mean([1.0 / len(it.choices) for it in items]))
    return None
