"""Lazy submodules for package ``__init__``s: ``import kit`` stays cheap, tab completion finds
everything."""

from __future__ import annotations

import importlib
from typing import Any, Callable, Iterable


def lazy_submodules(
    package: str, submodules: Iterable[str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``submodules`` import on first attribute access
    (``namespace`` is the package's ``globals()``, where each is kept once imported)."""
    targets = {name: f"{package}.{name}" for name in submodules}

    def __getattr__(name: str) -> Any:
        if name in targets:
            module = importlib.import_module(targets[name])
            namespace[name] = module
            return module
        raise AttributeError(
            f"module {package!r} has no attribute {name!r}; submodules: "
            f"{', '.join(sorted(targets))}"
        )

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(targets))

    return __getattr__, __dir__
