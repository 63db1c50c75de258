"""Every call that may reach the Hugging Face hub, in one place, so tests can mock it.

Nothing else in ``kit`` imports ``from_pretrained``-style loaders directly. A model already in the
Hugging Face cache loads without network (``HF_HUB_OFFLINE`` set, or the hub unreachable); one
that is not fails at once with :class:`HubError`, saying what to do.
"""

from __future__ import annotations

import difflib
import fnmatch
import importlib
import os
import re
from pathlib import Path

# What a causal LM or encoder needs from a repository: configs, safetensors weights, tokenizer files
# (tokenizer.json, sentencepiece .model, vocab.txt / merges.txt) and a chat template.
# Older checkpoints (Vicuna v1.3) ship only pytorch_model*.bin: those are fetched when no
# safetensors exist.
MODEL_FILES = ["*.json", "*.model", "*.txt", "*.jinja", "*.tiktoken"]
WEIGHTS = (["*.safetensors"], ["pytorch_model*.bin"])
LIST_TIMEOUT = 10.0
"""Seconds the one listing request may take before the hub counts as unreachable."""


class HubError(OSError):
    """The hub could not give a model's files; the message names the repository, why, and what to
    do."""


def offline() -> bool:
    """``HF_HUB_OFFLINE`` is set (read now, not when huggingface_hub was imported)."""
    from huggingface_hub import constants

    env = os.environ.get("HF_HUB_OFFLINE", "").strip().lower()
    return env in ("1", "true", "yes", "on") or (not env and bool(constants.HF_HUB_OFFLINE))


def _network_errors() -> tuple[type[BaseException], ...]:
    """What "the hub cannot be reached" looks like: huggingface_hub's HTTP client's connect and
    timeout errors (httpx2 in huggingface_hub 2.x, httpx before) and the OS's own."""
    # OfflineModeIsEnabled is one
    errors: list[type[BaseException]] = [
        ConnectionError,
        TimeoutError,
    ]
    for name in ("httpx2", "httpx"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        errors += [module.ConnectError, module.TimeoutException]
    return tuple(errors)


def repo_files(repo_id: str, revision: str | None = None) -> list[str]:
    """The files of a model repository: ONE request (``HfApi.model_info``), no retries, a
    ``LIST_TIMEOUT`` limit, so an unreachable hub is known in seconds (``list_repo_files`` retries
    five times with back-off: 30-40 s with no network)."""
    from huggingface_hub import HfApi

    info = HfApi().model_info(repo_id, revision=revision, timeout=LIST_TIMEOUT)
    return [s.rfilename for s in (info.siblings or [])]


MODEL_FIELD = re.compile(r"(\w+_)?(model|models|encoder|encoders)")
"""Config fields that name models (``model``, ``compare_models``, ``extra_encoders``...): the ones
:func:`hub_id_problems` checks."""
NOT_HUB = ("zoo/", "zoo-sae/", "random/", "twin/", "real/", "hf:")
"""Name prefixes ``kit.load_model`` resolves without the hub."""


def hub_id_problems(cfg) -> list[str]:
    """Pre-flight check (:mod:`kit.core.preflight`): every hub id (``org/name[@revision]``) in a
    config's model fields can be loaded: it is in the Hugging Face cache, or the hub answers that
    it exists (one request each, :func:`repo_files`). Offline (``HF_HUB_OFFLINE`` or an unreachable
    hub) an id not in the cache, and a misspelled one, are refused naming the field, before any
    kernel starts. Local paths, recipes and world names are not hub ids."""
    from huggingface_hub.errors import (
        GatedRepoError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    from kit.models.recipes import is_recipe_name
    from kit.models.sources import looks_local

    out = []
    for field in type(cfg).model_fields:
        if not MODEL_FIELD.fullmatch(field):
            continue
        value = getattr(cfg, field)
        names = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        for name in names:
            base, _, revision = str(name).partition("@")
            if "/" not in base:
                # hub ids are "org/name"; the few without an org are TransformerLens's names (gpt2):
                # any other bare name of the hub form (a misspelling) fails in load_model, so here
                problem = bare_name_problem(field, str(name), base)
                out += [problem] if problem else []
                continue
            if (
                base.startswith(NOT_HUB)
                or looks_local(base)
                or Path(base).expanduser().exists()
                or is_recipe_name(name)
            ):
                continue
            try:
                cached_snapshot(base, revision or None)
                continue
            except HubError:
                pass
            where = f"field {field!r}: {name!r}"
            if offline():
                out.append(
                    f"{where} is not in the Hugging Face cache and HF_HUB_OFFLINE is set; "
                    "check the spelling, or download it once with network access"
                )
                continue
            try:
                repo_files(base, revision or None)
            except GatedRepoError:  # it exists; access is the loader's question (a token)
                continue
            except (RepositoryNotFoundError, RevisionNotFoundError) as e:
                out.append(
                    f"{where} is not on the Hugging Face hub ({type(e).__name__}); "
                    "check the spelling"
                )
            except _network_errors() as e:
                out.append(
                    f"{where} is not in the Hugging Face cache and the hub cannot be reached "
                    f"({type(e).__name__}); check the spelling, or download it with network access"
                )
    return out


def bare_name_problem(field: str, name: str, base: str) -> str | None:
    """Why ``name`` (``base`` without its ``@revision``), a model field's value without an org,
    cannot load: a name :mod:`kit.models.sources` reads as a hub id but TransformerLens does not
    know (``gtp2``); None for its own names and for the other forms (``minilm``, recipes)."""
    from kit.models import sources, tl

    form = sources.find(name)
    if form is None or form.rank not in (sources.HUB, sources.HUB_REVISION):
        return None
    known = tl.official_model_names()
    if base in known:
        return None
    close = difflib.get_close_matches(base, known, n=5, cutoff=0.6)
    return (
        f"field {field!r}: {name!r} is not a model name: hub ids are 'org/name', and a name "
        "without an org must be one of TransformerLens's (python -m kit models)"
        + (f"; close: {', '.join(close)}" if close else "")
    )


def weight_patterns(repo_id: str, files: list[str], gguf: str | None = None) -> list[str]:
    """Which weight files to fetch: ``gguf`` (a file name or glob) when asked, else the safetensors,
    else ``pytorch_model*.bin``; a repository of GGUF files only must be asked (``gguf=``)."""
    ggufs = sorted(f for f in files if f.endswith(".gguf"))
    if gguf is not None:
        if not any(fnmatch.fnmatch(f, gguf) for f in files):
            raise HubError(
                f"{repo_id}: no file matches gguf={gguf!r}; its .gguf files: "
                f"{', '.join(ggufs) or 'none'}"
            )
        return [gguf]
    for patterns in WEIGHTS:
        if any(fnmatch.fnmatch(f, patterns[0]) for f in files):
            return patterns
    if ggufs:
        raise HubError(
            f"{repo_id} holds GGUF files only "
            f"({', '.join(ggufs[:6])}{' ...' if len(ggufs) > 6 else ''}): name one, e.g. "
            f"kit.load_model({repo_id!r}, gguf={ggufs[0]!r})"
        )
    return list(WEIGHTS[0])


def snapshot(repo_id: str, revision: str | None = None, gguf: str | None = None) -> str:
    """Download (or reuse from the HF cache) a model repository's files; returns the local
    directory.

    This is the ONLY place a model touches the network: everything after it loads the local
    directory, exactly as for a user's own directory. ``revision`` is a branch, tag or commit
    (OLMo's ``stage1-step...`` branches, Pythia's ``step3000``); ``gguf`` a ``.gguf`` file name or
    glob to fetch instead of the safetensors (the configs and tokenizer files come too).

    Offline (``HF_HUB_OFFLINE`` set, or the hub unreachable: one listing request, see
    :func:`repo_files`), a copy already in the Hugging Face cache is used; without one,
    :class:`HubError` says so at once, naming the cache folder and ``HF_HUB_OFFLINE``.
    """
    from huggingface_hub import snapshot_download

    if offline():
        return cached_snapshot(repo_id, revision, gguf, why="HF_HUB_OFFLINE is set")
    try:
        files = repo_files(repo_id, revision)
    except _network_errors() as e:
        return cached_snapshot(
            repo_id,
            revision,
            gguf,
            why=f"the Hugging Face hub could not be reached ({type(e).__name__}: {e})",
        )
    return snapshot_download(
        repo_id,
        revision=revision,
        allow_patterns=MODEL_FILES + weight_patterns(repo_id, files, gguf),
    )


def cached_snapshot(
    repo_id: str, revision: str | None = None, gguf: str | None = None, why: str = ""
) -> str:
    """The repository's snapshot in the Hugging Face cache, with weights, without any request."""
    from huggingface_hub import constants, snapshot_download

    for weights in [[gguf]] if gguf else WEIGHTS:
        try:
            path = snapshot_download(
                repo_id,
                revision=revision,
                allow_patterns=MODEL_FILES + weights,
                local_files_only=True,
            )
        except (OSError, ValueError):  # LocalEntryNotFoundError (an OSError), incomplete snapshots
            continue
        if any(any(Path(path).glob(w)) for w in weights):
            return path
    name = repo_id + (f"@{revision}" if revision else "")
    raise HubError(
        f"{name}: {why}, and no complete copy is in the Hugging Face cache "
        f"({constants.HF_HUB_CACHE}). "
        "Download it once with network access (kit.load_model fetches it), copy a cache that has "
        "it (HF_HOME / HF_HUB_CACHE), or pass a local directory. Without network, set "
        "HF_HUB_OFFLINE=1 so nothing waits for the network."
    )


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
"""Neuronpedia's public bulk exports (docs.neuronpedia.org, "Exports"):
``<model>/<source>/explanations/ batch-<i>.jsonl.gz``, one JSON object per line. (The older
``/api/explanation/export`` endpoint is retired.)"""


def _read_url(url: str, timeout: float) -> bytes | None:
    """The body of ``url``; None on HTTP 404 (past the last batch). Offline: ``OSError``
    (``URLError``)."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.read()
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return None
        raise


def neuronpedia_explanations(
    neuronpedia_id: str, timeout: float = 120.0, max_batches: int = 1000
) -> dict[int, str]:
    """Published explanations of one Neuronpedia SAE (``<modelId>/<sourceId>``, e.g.
    ``gemma-2-2b/20-gemmascope-res-16k``: sae_lens's ``neuronpedia_id``), as ``{feature index:
    description}``: the first non-empty description of a feature when it has several. Reads the
    export batches ``batch-0``, ``batch-1``, ... until one is absent (404). Offline it raises
    ``OSError``; an SAE with no exported explanation raises ``FileNotFoundError`` (an ``OSError``
    too)."""
    import gzip
    import json

    model_id, _, source_id = neuronpedia_id.partition("/")
    if not model_id or not source_id or "/" in source_id:
        raise ValueError(f"neuronpedia_id={neuronpedia_id!r} must look like '<modelId>/<sourceId>'")
    out: dict[int, str] = {}
    for i in range(max_batches):
        raw = _read_url(
            f"{NEURONPEDIA_EXPORTS}/{model_id}/{source_id}/explanations/batch-{i}.jsonl.gz", timeout
        )
        if raw is None:
            break
        for line in gzip.decompress(raw).decode("utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                text = str(row.get("description") or "").strip()
                if text:
                    out.setdefault(int(row["index"]), text)
    if not out:
        raise FileNotFoundError(
            f"Neuronpedia has no exported explanations under {NEURONPEDIA_EXPORTS}/{model_id}/"
            f"{source_id}/explanations/"
        )
    return out
