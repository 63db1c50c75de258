"""Every call that may reach the Hugging Face hub, in one place, so tests can mock it.

Nothing else in ``kit`` imports ``from_pretrained``-style loaders directly. With no network these
raise the library's own error; ``kit.models.load`` turns that into a message saying what to do.
"""

from __future__ import annotations


# What a causal LM or encoder needs from a repository: configs, safetensors weights, tokenizer files
# (tokenizer.json, sentencepiece .model, vocab.txt / merges.txt) and a chat template.
# Older checkpoints (Vicuna v1.3) ship only pytorch_model*.bin: those are fetched when no safetensors exist.
MODEL_FILES = ["*.json", "*.model", "*.txt", "*.jinja", "*.tiktoken"]


def snapshot(repo_id: str, revision: str | None = None) -> str:
    """Download (or reuse from the HF cache) a model repository's files; returns the local directory.

    This is the ONLY place a model touches the network: everything after it loads the local
    directory, exactly as for a user's own directory. ``revision`` is a branch, tag or commit
    (OLMo's ``stage1-step...`` branches, Pythia's ``step3000``).
    """
    from huggingface_hub import list_repo_files, snapshot_download

    files = list_repo_files(repo_id, revision=revision)
    weights = ["*.safetensors"] if any(f.endswith(".safetensors") for f in files) else ["pytorch_model*.bin"]
    return snapshot_download(repo_id, revision=revision, allow_patterns=MODEL_FILES + weights)


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
