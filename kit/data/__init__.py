"""Data: the item schema (``items``), benchmark loaders (``benchmarks``), answer scorers
(``scorers``), published model responses (``responses``) and the papers' tables as CSV
(``paper_tables``)."""

from kit.core.lazy import lazy_submodules
from kit.data.items import Item

__getattr__, __dir__ = lazy_submodules(__name__, ["benchmarks", "items", "paper_tables", "responses", "scorers"], globals())
__all__ = ["Item"]
