"""Data: the item schema (``items``), benchmark loaders (``benchmarks``; records to items in
``benchmark_items``, the hub's datasets in ``hub_benchmarks``), answer scorers (``scorers``; math
answers read by ``math_answers``, code answers run by ``code_answers``), published model responses
(``responses``) and the papers' tables as CSV (``paper_tables``)."""

from kit.core.lazy import lazy_submodules
from kit.data.items import Item

__getattr__, __dir__ = lazy_submodules(
    __name__,
    [
        "benchmark_items",
        "benchmarks",
        "code_answers",
        "hub_benchmarks",
        "items",
        "math_answers",
        "paper_tables",
        "responses",
        "scorers",
    ],
    globals(),
)
__all__ = ["Item"]
