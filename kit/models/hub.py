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


NEURONPEDIA_EXPORTS = "https://neuronpedia-datasets.s3.us-east-1.amazonaws.com/v1"
"""Neuronpedia's public bulk exports (docs.neuronpedia.org, "Exports"): ``<model>/<source>/explanations/
batch-<i>.jsonl.gz``, one JSON object per line. (The older ``/api/explanation/export`` endpoint is retired.)"""


def _read_url(url: str, timeout: float) -> bytes | None:
    """The body of ``url``; None on HTTP 404 (past the last batch). Offline: ``OSError`` (``URLError``)."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.read()
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return None
        raise


def neuronpedia_explanations(neuronpedia_id: str, timeout: float = 120.0, max_batches: int = 1000) -> dict[int, str]:
    """Published explanations of one Neuronpedia SAE (``<modelId>/<sourceId>``, e.g.
    ``gemma-2-2b/20-gemmascope-res-16k``: sae_lens's ``neuronpedia_id``), as ``{feature index:
    description}``: the first non-empty description of a feature when it has several. Reads the
    export batches ``batch-0``, ``batch-1``, ... until one is absent (404). Offline it raises ``OSError``;
    an SAE with no exported explanation raises ``FileNotFoundError`` (an ``OSError`` too)."""
    import gzip
    import json

    model_id, _, source_id = neuronpedia_id.partition("/")
    if not model_id or not source_id or "/" in source_id:
        raise ValueError(f"neuronpedia_id={neuronpedia_id!r} must look like '<modelId>/<sourceId>'")
    out: dict[int, str] = {}
    for i in range(max_batches):
        raw = _read_url(f"{NEURONPEDIA_EXPORTS}/{model_id}/{source_id}/explanations/batch-{i}.jsonl.gz", timeout)
        if raw is None:
            break
        for line in gzip.decompress(raw).decode("utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                text = str(row.get("description") or "").strip()
                if text:
                    out.setdefault(int(row["index"]), text)
    if not out:
        raise FileNotFoundError(f"Neuronpedia has no exported explanations under {NEURONPEDIA_EXPORTS}/{model_id}/"
                                f"{source_id}/explanations/")
    return out
