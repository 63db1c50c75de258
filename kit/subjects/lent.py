"""Methods a paper package lends every subject (``subject.mui(answers)``), kept apart from
:mod:`kit.subjects.subject` so that the subjects' implementations (``hf``, ``world``), which the
factory in ``subject`` imports, need not import it back."""

from __future__ import annotations

from typing import Any, Callable

from kit.subjects.answers import Answers

_LENT: dict[str, Callable[..., Any]] = {}
"""Methods a paper package lends every subject, by name (:func:`lend`)."""


def lend(name: str, fn: Callable[..., Any]) -> None:
    """Let ``subject.<name>(*args)`` call ``fn(subject, *args)``: a paper package offers its
    method in the subjects' spelling (``kit.mui`` lends ``mui`` and ``key_neurons``: the notebooks
    write ``subject.mui(answers)``), while this generic package never imports it."""
    _LENT[name] = fn


class LentMethods:
    """``mui`` and ``key_neurons`` of a subject: the same calls as ``kit.mui.mui(subject, answers,
    ...)`` and ``kit.mui.per_item_key_neurons(subject, answers, ...)``, lent by :mod:`kit.mui`
    when it is imported (:func:`lend`)."""

    def _lent(self, name: str) -> Callable[..., Any]:
        if name not in _LENT:
            raise RuntimeError(
                f"subject.{name} is MUI's (seed 000): import kit.mui first, or call "
                f"kit.mui.{'mui' if name == 'mui' else 'per_item_key_neurons'}(subject, answers)"
            )
        return _LENT[name]

    def mui(self, answers: Answers, *args: Any, **kwargs: Any) -> float:
        """MUI (seed 000 Eq. 5, in %) of ``answers``' responses: :func:`kit.mui.subject_mui`'s
        arguments after ``answers`` (score, threshold, k, frac, batch_size, max_batch_tokens)."""
        return self._lent("mui")(self, answers, *args, **kwargs)

    def key_neurons(self, answers: Answers, *args: Any, **kwargs: Any) -> list[list[int]]:
        """Per item, its MUI key neurons (Eq. 4, flat ``layer * d_mlp + i``):
        :func:`kit.mui.per_item_key_neurons`'s arguments after ``answers``."""
        return self._lent("key_neurons")(self, answers, *args, **kwargs)
