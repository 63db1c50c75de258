"""Zero-ablated MLP neurons of a Hugging Face causal LM (kit.models.hf_ablation) against
TransformerLens's hook_post ablation."""

from __future__ import annotations

import pytest
import torch

from kit.models.generate import hf_model
from kit.models.hf_ablation import ablated


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_ablated_hf_forward_equals_transformer_lens_hook_post_ablation(arch):
    """``ablate`` zeroes the input of the HF MLP output projection: the logits must equal
    TransformerLens's with ``blocks.{L}.mlp.hook_post`` zeroed at the same neurons."""
    from kit.models import tl
    from kit.models.load import load_model
    from kit.subjects import ablation_hooks

    hooked = load_model(f"twin/{arch}")
    hf, tok = hf_model(hooked.kit_path)
    ids = torch.tensor([tok("Question: 12 + 30 =")["input_ids"]])
    neurons = [(0, 3), (0, 70), (1, 5)]
    with ablated(hf, neurons), torch.no_grad():
        hf_logits = hf(ids).logits
    with torch.no_grad(), tl.hooks(hooked, ablation_hooks(neurons)):
        tl_logits = hooked(ids)
    with torch.no_grad():
        plain = hooked(ids)
    assert (tl_logits - plain).abs().max() > 1e-3, (
        "the ablation changed nothing: the test would not catch a wrong hook"
    )
    torch.testing.assert_close(hf_logits, tl_logits, atol=1e-4, rtol=1e-4)
