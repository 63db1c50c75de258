"""Models and SAEs behind one interface.

- ``sources``: the registry of model-name forms (``source_of(name)``; ``python -m kit models``);
- ``load``: :func:`load_model` (through the form of the name) / :func:`load_sae`;
- ``hub``: every call that would reach the network (mocked in tests);
- ``encoders``: BERT-family encoders for NeuronVote and Competency Gaps;
- ``twins``: tiny random twins of real architectures as Hugging Face directories (offline tests),
  built from the specs in ``twin_specs``;
- ``architectures``: which HF causal LMs convert, how (config fields, RoPE), and what works on each;
- ``gguf``: GGUF files dequantised once into Hugging Face directories; ``real``: the ``real/``
  models;
- ``checks``: loading errors named with the damaged file and the likely cause;
- ``recipes``, ``finetune``, ``leak``: the real fine-tunes (a contaminated SmolLM2 and its
  controls), their training and cache, and their measured leak (injected vs fresh accuracy);
- ``tl``: the ONLY module that touches TransformerLens internals (hook points, hook contexts, the
  block loop, KV caches, the final norm + unembedding). Everything else goes through it.
"""

from kit.core.lazy import lazy_submodules
from kit.models.load import (
    ENCODERS,
    RANDOM_SHAPES,
    UnknownModelError,
    load_model,
    load_sae,
    random_model,
)

__getattr__, __dir__ = lazy_submodules(
    __name__,
    [
        "architectures",
        "checks",
        "encoders",
        "finetune",
        "gguf",
        "hub",
        "leak",
        "load",
        "real",
        "recipes",
        "sources",
        "tl",
        "twin_specs",
        "twins",
    ],
    globals(),
)
__all__ = [
    "ENCODERS",
    "RANDOM_SHAPES",
    "UnknownModelError",
    "load_model",
    "load_sae",
    "random_model",
]
