"""Every call that may reach the Hugging Face hub, in one place, so tests can mock it.

Nothing else in ``kit`` imports ``from_pretrained``-style loaders directly. With no network these
raise the library's own error; ``kit.models.load`` turns that into a message saying what to do.
"""

from __future__ import annotations

from typing import Any


def hooked_transformer(name: str, device: str = "cpu", revision: str | None = None,
                       dtype: str = "float32", **kwargs: Any):
    """``transformer_lens.HookedTransformer.from_pretrained`` for a Hugging Face model id.

    ``revision`` selects a training checkpoint (OLMo ``stage1-step...`` branches); Pythia's
    ``step<N>`` revisions go through transformer_lens's own ``checkpoint_value``.
    """
    from kit.models import tl

    if revision is not None and name.startswith("EleutherAI/pythia") and revision.startswith("step"):
        return tl.hooked_from_pretrained(name, device=device, dtype=dtype, checkpoint_value=int(revision[4:]), **kwargs)
    if revision is not None:
        kwargs["revision"] = revision
    return tl.hooked_from_pretrained(name, device=device, dtype=dtype, **kwargs)


def sae_from_pretrained(release: str, sae_id: str, device: str = "cpu"):
    """``sae_lens.SAE.from_pretrained(release, sae_id)`` (returns the SAE object)."""
    from sae_lens import SAE

    return SAE.from_pretrained(release, sae_id, device=device)


def hf_dataset(path: str, name: str | None = None, split: str = "test"):
    """``datasets.load_dataset`` for users with network access."""
    import datasets

    return datasets.load_dataset(path, name, split=split)


def hf_encoder(name: str, device: str = "cpu"):
    """A Hugging Face encoder (``AutoModel`` + ``AutoTokenizer``) by hub id or local path."""
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(name)
    model = AutoModel.from_pretrained(name).to(device).eval()
    return model, tokenizer
