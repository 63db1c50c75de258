"""kit: helpers for the interp-eval notebooks.

The flat public API::

    from kit import load_model, load_sae, load_benchmark, start, save_figure, record_results

and one module per paper method, imported on first use: ``kit.mui``, ``kit.trajectories``,
``kit.patching``, ``kit.shortcut``, ``kit.cg``, ``kit.neuronvote``, ``kit.audits``; the tiny world is
``kit.world``.
"""

from __future__ import annotations

import importlib
import importlib.util
import warnings
from typing import Any

# We chose HookedTransformer deliberately (pinned transformer-lens<4): the tiny world is native
# HookedTransformers, and TransformerBridge needs a Hugging Face model to boot from.
warnings.filterwarnings("ignore", message="HookedTransformer is deprecated", category=DeprecationWarning)

from .figures import record_results, save_figure, use_paper_style
from .items import Item
from .models import load_model, load_sae
from .notebook import NotebookRun, start
from .params import ParamsError, load_params
from .paths import DataError, cache_dir, data_dir

__version__ = "0.1.0"


def load_benchmark(name: str, split: str = "test", **kwargs: Any) -> list[Item]:
    """Items of a benchmark (real: ``gsm8k``, ``mmlu``, ``bbh/<task>``...; synthetic: ``tiny/<task>``)."""
    from .benchmarks import load_benchmark as _load

    return _load(name, split=split, **kwargs)


def __getattr__(name: str):
    # Submodules (kit.mui, kit.cg, kit.world...) import on first use: `import kit` stays cheap.
    if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'kit' has no attribute {name!r}")


__all__ = [
    "Item", "NotebookRun", "ParamsError", "DataError", "load_model", "load_sae", "load_benchmark",
    "load_params", "start", "save_figure", "record_results", "use_paper_style", "data_dir", "cache_dir",
]
