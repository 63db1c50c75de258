"""Concept activations for Competency Gaps (paper eq. 1): the sparse per-item activations of the
concept space's SAEs, the MiniLM SAEs (:mod:`kit.models.minilm_sae`, whose names, builds, labels
and training text are re-exported here) and the tiny world's zoo SAEs.
"""

from __future__ import annotations

import hashlib
import io
import json
from typing import Any, Mapping, Sequence

import numpy as np
import scipy.sparse as sp
import torch
from jaxtyping import Float
from torch import Tensor

from kit.cg.metrics import CSR, SparseRows, segment_pool
from kit.core.cached import MISSING, read_bytes_cached, write_bytes_cached
from kit.core.paths import cache_dir
from kit.core.progress import progress_bar
from kit.models import tl
from kit.models.minilm_sae import (  # noqa: F401 (re-exported: CG reads its concept space here)
    BUILD_VERSION,
    MinilmSAESpec,
    build_minilm_sae,
    corpus_paragraphs,
    load_minilm_sae,
    minilm_sae_contexts,
    minilm_sae_labels,
    minilm_sae_meta,
    minilm_sae_training_texts,
    sae_dir,
    training_texts,
)

# ----------------------------------------------------------------------------- item activations


def encode_items(
    token_acts: Sequence[Float[Tensor, "n_tokens d_in"]],
    saes: Mapping[str, Any],
    chunk_tokens: int = 2048,
) -> dict[str, Float[Tensor, "n_items d_sae"]]:
    """Eq. 1 for a batch of items: each SAE encodes the items' tokens (in chunks of
    ``chunk_tokens``) and each concept is averaged over the item's tokens.

    ``token_acts``: per item, its token activations (>= 1 token each). Returns per SAE a dense
    (n_items, d_sae) tensor for this batch only; :func:`item_concepts` sparsifies it.
    """
    lengths = [len(a) for a in token_acts]
    flat = torch.cat(list(token_acts))
    out = {}
    for name, sae in saes.items():
        d_sae = sae.cfg.d_sae
        sums = torch.zeros(len(lengths), d_sae)
        owner = torch.repeat_interleave(torch.arange(len(lengths)), torch.tensor(lengths))
        with torch.inference_mode():
            for s in range(0, len(flat), chunk_tokens):
                feats = sae.encode(flat[s : s + chunk_tokens].to(sae.W_enc.device)).float().cpu()
                sums.index_add_(0, owner[s : s + chunk_tokens], feats)
        out[name] = sums / torch.tensor(lengths, dtype=torch.float32)[:, None]
    return out


def _texts_key(texts: Sequence[str], extra: dict) -> str:
    h = hashlib.sha256(json.dumps(extra, sort_keys=True).encode())
    for t in texts:
        h.update(hashlib.sha256(t.encode()).digest())
    return h.hexdigest()[:20]


def item_concepts(
    encoder,
    sae_names: Sequence[str],
    texts: Sequence[str],
    batch_size: int = 32,
    max_length: int = 256,
    device: str = "cpu",
    use_cache: bool = True,
    desc: str = "concept activations",
) -> tuple[dict[str, CSR], np.ndarray]:
    """Length-normalised concept activations (eq. 1) of ``texts`` under each MiniLM SAE.

    All SAEs must read the same site; the encoder runs once and every SAE encodes its output.
    Streamed in batches of ``batch_size`` texts: only active concepts are kept (sparse CSR,
    items x concepts), never tokens x d_sae beyond one chunk. Returns ({sae name: csr},
    tokens per text). Cached under ``cache_dir()/cg/acts/`` by (SAE builds, texts, max_length).
    """
    specs = [MinilmSAESpec.from_name(n) for n in sae_names]
    sites = {s.site for s in specs}
    if len(sites) != 1:
        raise ValueError(
            f"sae_names must share one site to share the encoder pass; got {sorted(sites)}"
        )
    site = sites.pop()
    if any(not t or not t.strip() for t in texts):
        raise ValueError(
            "texts must be non-empty strings (an empty text has no tokens to average over)"
        )
    keys = {
        n: _texts_key(texts, {"sae": sae_dir(n).name, "max_length": max_length, "v": BUILD_VERSION})
        for n in sae_names
    }
    paths = {n: cache_dir() / "cg" / "acts" / f"{keys[n]}.npz" for n in sae_names}
    len_path = cache_dir() / "cg" / "acts" / f"{_texts_key(texts, {'len': max_length})}.lengths.npy"
    if use_cache:
        widths = {n: s.width for n, s in zip(sae_names, specs)}
        cached = {
            n: read_bytes_cached(p, _load_csr, _csr_check(len(texts), widths[n]), "concept cache")
            for n, p in paths.items()
        }
        lengths = read_bytes_cached(len_path, _load_npy, _lengths_check(len(texts)), "length cache")
        if lengths is not MISSING and all(v is not MISSING for v in cached.values()):
            return cached, lengths
    saes = {n: load_minilm_sae(n, device=device) for n in sae_names}
    rows = {n: SparseRows(saes[n].cfg.d_sae) for n in sae_names}
    n_tokens = []
    starts = range(0, len(texts), batch_size)
    for start in progress_bar(starts, desc=desc, unit="batch", leave=False):
        acts = encoder.token_activations(
            list(texts[start : start + batch_size]),
            site,
            batch_size=batch_size,
            max_length=max_length,
        )
        n_tokens += [len(a) for a in acts]
        for n, dense in encode_items(acts, saes).items():
            rows[n].add(dense)
    out = {n: r.to_csr() for n, r in rows.items()}
    lengths = np.asarray(n_tokens)
    if use_cache:
        for n, p in paths.items():
            buf = io.BytesIO()
            sp.save_npz(buf, out[n])
            write_bytes_cached(p, buf.getvalue())
        buf = io.BytesIO()
        np.save(buf, lengths)
        write_bytes_cached(len_path, buf.getvalue())
    return out, lengths


def _load_csr(raw: bytes) -> CSR:
    return sp.load_npz(io.BytesIO(raw)).tocsr()


def _load_npy(raw: bytes) -> np.ndarray:
    return np.load(io.BytesIO(raw))


def _csr_check(n_items: int, width: int):
    """The schema of cached concept activations: items x concepts, finite, non-negative."""

    def check(m: Any) -> str | None:
        if tuple(m.shape) != (n_items, width):
            return f"shape {tuple(m.shape)}, expected {(n_items, width)} (items x concepts)"
        if m.nnz and not (np.isfinite(m.data).all() and (m.data >= 0).all()):
            return "a negative or non-finite activation"
        return None

    return check


def _lengths_check(n_items: int):
    """The schema of cached token counts: one non-negative integer per text."""

    def check(a: Any) -> str | None:
        if not isinstance(a, np.ndarray) or a.shape != (n_items,):
            return f"shape {getattr(a, 'shape', None)}, expected ({n_items},)"
        if not np.issubdtype(a.dtype, np.integer) or (a < 0).any():
            return "not non-negative integers"
        return None

    return check


# ----------------------------------------------------------------------------- tiny world suite


def zoo_item_concepts(model, sae, items, batch_size: int = 64, pooling: str = "mean") -> CSR:
    """Eq. 1 for tiny-world items under a zoo model and its own SAE: the SAE reads the model's
    activations at ``sae.cfg.metadata.hook_name`` over each prompt's tokens (``<bos>`` excluded:
    an attention sink, not content), averaged over those tokens (``pooling="mean"``; ``"last"``: the
    prompt's last token only, see :data:`kit.cg.metrics.POOLINGS`). Returns CSR items x d_sae."""
    from kit.world import prompt_tokens

    hook = sae.cfg.metadata.hook_name
    tl.check_hooks(model, [hook], field="SAE hook_name")
    rows = SparseRows(sae.cfg.d_sae)
    with torch.inference_mode():
        for start in range(0, len(items), batch_size):
            chunk = items[start : start + batch_size]
            tokens, lengths = prompt_tokens(model, chunk)
            _, cache = tl.run_with_cache(model, tokens, [hook])
            acts = cache[hook]
            token_acts = [acts[i, 1 : int(lengths[i])] for i in range(len(chunk))]
            lens = [len(a) for a in token_acts]
            feats = sae.encode(torch.cat(token_acts).to(sae.W_enc.device)).float().cpu()
            rows.add(segment_pool(feats, lens, pooling))
    return rows.to_csr()
