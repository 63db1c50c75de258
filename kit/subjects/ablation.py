"""Zero-ablation of MLP neurons in a ``HookedTransformer``: the hooks every subject's ``respond``
(``ablate=...``) and option log-likelihoods run under."""

from __future__ import annotations

from typing import Any, Sequence

import torch

Neuron = tuple[int, int]
"""(layer, index) of an MLP neuron at ``blocks.{layer}.mlp.hook_post``."""


def ablation_hooks(neurons: Sequence[Neuron]) -> list[tuple[str, Any]]:
    """Zero-ablation hooks on ``blocks.{L}.mlp.hook_post`` for the given (layer, neuron) pairs (the
    input of the MLP's output projection, as :func:`kit.models.hf_ablation.ablated` zeroes in a
    Hugging Face model)."""
    by_layer: dict[int, list[int]] = {}
    for layer, i in neurons:
        by_layer.setdefault(int(layer), []).append(int(i))
    hooks = []
    for layer, idx in sorted(by_layer.items()):
        index = torch.tensor(sorted(idx))

        def zero(act, hook, index=index):
            act[..., index.to(act.device)] = 0.0
            return act

        hooks.append((f"blocks.{layer}.mlp.hook_post", zero))
    return hooks
