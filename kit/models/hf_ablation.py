"""Zeroing MLP neurons of a Hugging Face causal LM inside the block, as zeroing TransformerLens's
``blocks.{layer}.mlp.hook_post`` does: the input of each layer's MLP output projection
(:func:`mlp_inputs`), zeroed by a forward pre-hook for as long as :func:`ablated` is entered.
:func:`kit.models.generate.generate_responses` generates with neurons ablated through it."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Sequence


def mlp_inputs(model, layer: int):
    """The MLP output projection of ``layer`` in a Hugging Face causal LM: its input is what
    TransformerLens calls ``blocks.{layer}.mlp.hook_post`` (act(gate) * up, or act(fc))."""
    blocks = model.transformer.h if hasattr(model, "transformer") else model.get_decoder().layers
    mlp = blocks[layer].mlp
    for name in ("down_proj", "c_proj", "fc_out", "dense_4h_to_h"):
        if hasattr(mlp, name):
            return getattr(mlp, name)
    raise ValueError(f"{type(model).__name__}: no MLP output projection found in layer {layer}")


@contextmanager
def ablated(model, neurons: Sequence[tuple[int, int]]) -> Iterator[None]:
    """Zero the (layer, neuron) MLP neurons of a Hugging Face causal LM inside the block, as
    zeroing TransformerLens's ``blocks.{layer}.mlp.hook_post`` does (the input of the output
    projection)."""
    import torch

    by_layer: dict[int, list[int]] = {}
    for layer, neuron in neurons:
        by_layer.setdefault(int(layer), []).append(int(neuron))
    handles = []
    try:
        for layer, idx in sorted(by_layer.items()):
            proj = mlp_inputs(model, layer)
            index = torch.tensor(sorted(idx), device=proj.weight.device)

            def zero(module, args, index=index):
                x = args[0].clone()
                x[..., index] = 0.0
                return (x, *args[1:])

            handles.append(proj.register_forward_pre_hook(zero))
        yield
    finally:
        for h in handles:
            h.remove()
