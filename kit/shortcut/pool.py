"""Notebook 03's models, held one at a time.

The paper's Table 2 has nine 7B models; holding them all needs ~226 GiB in fp32. A
:class:`ModelPool` keeps the base model M0 (the donor of every patch) and at most ONE other model
in memory: asking for a model loads it and first releases the one held before, so the donor and
its recipient are the only pair ever resident. The comparative score (eq. 3) compares two
fine-tunes; :func:`kit.shortcut.scores.comparative_scores_of_models` reads them one after the
other (see there), so it needs no third model either.

A released model is emptied in place (its tensors move to the ``meta`` device): a stale reference
fails loudly on use instead of silently keeping gigabytes alive. Code that takes models from a
pool takes them *lazily* (:class:`Lazy`, resolved with :func:`resolve` at the point of use).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator, Mapping

import torch


def release(model) -> None:
    """Free ``model``'s weights now, whoever still references it (its tensors become ``meta``)."""
    torch.nn.Module.to_empty(model, device="meta")
    model.kit_released = True
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


class Lazy:
    """A model of a pool, loaded when called (``resolve``): ``pool.lazy(label)``."""

    def __init__(self, pool: "ModelPool", label: str) -> None:
        self.pool, self.label = pool, label

    def __call__(self):
        return self.pool[self.label]

    def __repr__(self) -> str:
        return f"Lazy({self.label!r} = {self.pool.names[self.label]!r})"


def resolve(model):
    """The model itself, loading it first when it is a :class:`Lazy` handle."""
    return model() if isinstance(model, Lazy) else model


class ModelPool(Mapping):
    """Label -> model, loaded on access; at most one model besides ``base`` is held.

    ``names``: label -> model name; ``load``: name -> model; ``base``: the donor model, always held
    (a label whose name is ``base_name`` returns it). ``hold_all=True`` keeps every loaded model
    (small worlds, where reloading costs more than memory). ``share``: another pool whose held model
    counts here too (one model held across both: a section's own pool cannot add a third).
    """

    def __init__(
        self,
        names: Mapping[str, str],
        load: Callable[[str], object],
        base=None,
        base_name: str | None = None,
        hold_all: bool = False,
        share: "ModelPool | None" = None,
    ) -> None:
        self.names, self.load, self.base, self.base_name, self.hold_all = (
            dict(names),
            load,
            base,
            base_name,
            hold_all,
        )
        self._held: dict[str, object] = share._held if share is not None else {}
        self.loads: list[str] = share.loads if share is not None else []
        """Every name loaded, in order (what tests and the notebook's log read); shared with
        ``share``."""

    def __getitem__(self, label: str):
        if label not in self.names:
            raise KeyError(
                f"{label!r} is not a model of this pool; allowed: {', '.join(self.names)}"
            )
        name = self.names[label]
        if self.base is not None and name == self.base_name:
            return self.base
        if name in self._held:
            return self._held[name]
        if not self.hold_all:
            self.release_all()
        model = self.load(name)
        self.loads.append(name)
        self._held[name] = model
        return model

    def release_all(self) -> None:
        """Release every held model except ``base``."""
        for held in list(self._held):
            release(self._held.pop(held))

    def lazy(self, label: str) -> Lazy:
        if label not in self.names:
            raise KeyError(
                f"{label!r} is not a model of this pool; allowed: {', '.join(self.names)}"
            )
        return Lazy(self, label)

    def resident(self) -> list[str]:
        """Names of the models held now (``base`` included)."""
        return ([self.base_name or "base"] if self.base is not None else []) + list(self._held)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)
