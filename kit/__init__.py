"""kit: helpers for the interp-eval notebooks.

The flat public API::

    from kit import (load_model, load_sae, load_benchmark, load_subject, start, save_figure,
                     record_results)

and one package per paper, imported on first use:

- ``kit.mui``         seed 000: MUI, the Utility Law, training trajectories (notebooks 01, 02)
- ``kit.shortcut``    seed 001: dynamic patching, shortcut neurons, trustworthy evaluation (03)
- ``kit.cg``          seed 002: Competency Gaps (04)
- ``kit.neuronvote``  seed 004: neuron-ranking methods, AvgOverlap, NeuronVote (05)
- ``kit.audits``      seed 003: measurement-theory audits (06)

beside ``kit.core`` (params, notebook start/record, figures, runner, paths, bench harness),
``kit.models`` (loading; ``kit.models.tl`` is the one TransformerLens adapter), ``kit.subjects``
(a model under evaluation: items, answers, scores, internals, for world and real models alike),
``kit.data`` (items, benchmarks, scorers, published responses, paper tables) and ``kit.world`` (the
tiny world).
"""

from __future__ import annotations

import warnings
from typing import Any

# We chose HookedTransformer deliberately (pinned transformer-lens<4) for the tiny world; every
# TransformerLens internal sits behind kit.models.tl so the move to TransformerBridge is one file.
warnings.filterwarnings(
    "ignore", message="HookedTransformer is deprecated", category=DeprecationWarning
)

# the notebooks' configs register with kit.core.params (the core imports no other kit package)
from kit import configs  # noqa: E402, F401
from kit.core.figures import (
    heatmap,
    new_figure,
    panel_figure,
    record_results,
    save_figure,
    use_paper_style,
)
from kit.core.findings import Section, findings_text, publish
from kit.core.lazy import lazy_submodules
from kit.core.notebook import NotebookRun, start
from kit.core.params import ParamsError, load_params
from kit.core.paths import DataError, cache_dir, data_dir
from kit.core.providers import provide
from kit.data.items import Item
from kit.models.load import load_model, load_sae

# The tiny world registers its names (zoo/, extra/, zoo-sae/, tiny/<task>, its prompt tokens) with
# the generic registries, which never import it: imported on their first lookup.
provide("kit.world.sources")

__version__ = "0.1.0"


def load_benchmark(name: str, split: str = "test", **kwargs: Any) -> list[Item]:
    """Items of a benchmark (real: ``gsm8k``, ``mmlu``, ``bbh/<task>``...; synthetic:
    ``tiny/<task>``)."""
    from kit.data.benchmarks import load_benchmark as _load

    return _load(name, split=split, **kwargs)


def load_subject(name: str, device: str = "cpu", world: str | None = None, **kwargs: Any):
    """A model under evaluation (``kit.subjects.Subject``): items, answers with their scores,
    MUI."""
    from kit.subjects import load_subject as _load

    return _load(name, device=device, world=world, **kwargs)


__getattr__, __dir__ = lazy_submodules(
    __name__,
    [
        "audits",
        "cg",
        "configs",
        "core",
        "data",
        "models",
        "mui",
        "neuronvote",
        "shortcut",
        "subjects",
        "world",
    ],
    globals(),
)

__all__ = [
    "Item",
    "NotebookRun",
    "ParamsError",
    "DataError",
    "load_model",
    "load_sae",
    "load_benchmark",
    "load_subject",
    "load_params",
    "start",
    "save_figure",
    "new_figure",
    "panel_figure",
    "heatmap",
    "record_results",
    "use_paper_style",
    "data_dir",
    "cache_dir",
    "Section",
    "publish",
    "findings_text",
]
