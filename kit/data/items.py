"""One item schema for every benchmark, real or synthetic."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Item:
    """One benchmark item.

    Exactly one of (``answer``) or (``choices`` + ``label``) describes the target.
    """

    id: str
    """Stable identifier, unique within its benchmark split (e.g. ``gsm8k/test/17``)."""
    prompt: str
    """The text shown to the model (question; for multiple choice it includes the lettered
    options)."""
    answer: str | None = None
    """Reference answer for free-form items (the final number for math, the target for BBH)."""
    choices: tuple[str, ...] | None = None
    """Option texts for multiple-choice items, in order."""
    label: int | None = None
    """Index into ``choices`` of the correct option."""
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    """Anything else the source carries (subject, level, tests for code, the full solution...)."""

    @property
    def target(self) -> str:
        """The reference as text: ``answer``, or the correct choice's letter for multiple choice."""
        if self.answer is not None:
            return self.answer
        if self.choices is not None and self.label is not None:
            return "ABCDEFGHIJ"[self.label]
        raise ValueError(f"item {self.id} has neither an answer nor choices+label")
