"""Modules that fill the generic registries from above, imported on the first lookup.

The generic layers keep registries of names (model-name forms and SAE-name forms in
:mod:`kit.models.sources`, benchmark task families in :mod:`kit.data.benchmarks`, word-level
prompt tokenisers in :mod:`kit.models.rows`) but never import what registers into them: the tiny
world registers its own names (``zoo/``, ``zoo-sae/``, ``tiny/<task>``) when its module is imported.
The package root (``kit/__init__.py``, which wires the layers together) names those modules here;
a registry calls :func:`ensure` before answering, so a lookup sees every form without the registry
knowing who provides them::

    provide("kit.world.sources")   # in kit/__init__.py
    ensure()                        # in a registry's lookup: imports them once
"""

from __future__ import annotations

import importlib

_MODULES: list[str] = []
_loaded: set[str] = set()


def provide(*modules: str) -> None:
    """Add ``modules`` (dotted names) to what :func:`ensure` imports."""
    for m in modules:
        if m not in _MODULES:
            _MODULES.append(m)


def modules() -> tuple[str, ...]:
    """The provider modules named so far, in order."""
    return tuple(_MODULES)


def ensure() -> None:
    """Import every provider module not imported yet (once each; a failed import is retried by the
    next lookup). A provider's own imports may look a name up: it is marked before it runs."""
    for m in list(_MODULES):
        if m in _loaded:
            continue
        _loaded.add(m)
        try:
            importlib.import_module(m)
        except BaseException:
            _loaded.discard(m)
            raise
