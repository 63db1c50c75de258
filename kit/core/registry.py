"""Tables of a method's named variants: one place where a variant is defined, described and allowed.

A paper method that users choose by name (MUI's contribution scores and thresholds, NeuronVote's
ranking methods, the measurement audits) keeps one :class:`Registry`: ``name -> Variant(function,
description)``. Everything else derives from it: the function that dispatches by name looks the
name up, the error for an unknown name lists the table, and a typed config's field accepts exactly
the table's names (:func:`one_of`, checked when the config is validated, so an entry registered
later is allowed too).

>>> from kit.core.registry import Registry
>>> colours = Registry("a colour")
>>> @colours.register("red", "the colour of a stop sign")
... def red():
...     return (255, 0, 0)
>>> colours["red"].fn(), list(colours)
((255, 0, 0), ['red'])
>>> colours.check("blue", "colour")
Traceback (most recent call last):
ValueError: colour='blue' is not a colour; allowed values: red
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import AfterValidator


@dataclass(frozen=True)
class Variant:
    """One named variant of a method."""

    name: str
    fn: Callable[..., Any]
    """What computes it (its signature is the table's: see the registry's docstring)."""
    description: str
    """One line for tables and error messages: what it computes and which equation."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Facts about it that the dispatching code reads (e.g. a threshold's ``per_layer``)."""


class Registry(Mapping[str, Variant]):
    """An ordered table ``name -> Variant``; iterating gives the names in registration order."""

    def __init__(self, what: str):
        self.what = what
        """What one variant is, in words with its article ("a contribution score"): error
        messages say "x is not <what>"."""
        self._table: dict[str, Variant] = {}

    def add(self, name: str, fn: Callable[..., Any], description: str, **extra: Any) -> Variant:
        """Register ``fn`` under ``name``; a name already in the table is an error."""
        if name in self._table:
            raise ValueError(f"{name!r} is already registered ({self.what})")
        variant = Variant(name, fn, description, extra)
        self._table[name] = variant
        return variant

    def register(self, name: str, description: str, **extra: Any):
        """Decorator form of :meth:`add` (returns the function unchanged)."""

        def deco(fn):
            self.add(name, fn, description, **extra)
            return fn

        return deco

    def remove(self, name: str) -> Variant:
        """Take ``name`` out again (tests that register a variant clean up with it)."""
        return self._table.pop(name)

    def check(self, name: Any, field: str) -> None:
        """Raise ``ValueError`` naming ``field`` and the allowed values unless ``name`` is in the
        table."""
        if name not in self._table:
            raise ValueError(
                f"{field}={name!r} is not {self.what}; allowed values: {', '.join(self._table)}"
            )

    def names(self, **where: Any) -> tuple[str, ...]:
        """The names, in order; ``where``: only those whose ``extra`` has these values."""
        return tuple(
            n
            for n, v in self._table.items()
            if all(v.extra.get(key) == val for key, val in where.items())
        )

    def describe(self) -> str:
        """The table as text, one ``name: description`` line per variant."""
        return "\n".join(f"{n}: {v.description}" for n, v in self._table.items())

    def __getitem__(self, name: str) -> Variant:
        return self._table[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._table)

    def __len__(self) -> int:
        return len(self._table)

    def __repr__(self) -> str:
        return f"Registry({self.what!r}: {', '.join(self._table)})"


def one_of(table: Callable[[], Registry]) -> AfterValidator:
    """A pydantic validator for ``Annotated[str, one_of(lambda: TABLE)]``: the value must be a
    name of the table as it is when the config is validated (``table`` is called then, so the
    config module need not import the method's module, and a variant registered later is
    allowed)."""

    def check(value: str) -> str:
        reg = table()
        if value not in reg:
            raise ValueError(f"{value!r} is not {reg.what}; allowed values: {', '.join(reg)}")
        return value

    return AfterValidator(check)
