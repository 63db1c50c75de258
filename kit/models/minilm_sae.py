"""The MiniLM SAEs: TopK SAEs trained with sae_lens on the offline encoder all-MiniLM-L6-v2, with
concept labels from their top-activating contexts. Competency Gaps reads its concept space from them
(:mod:`kit.cg.saes`), the audits their training text.

The CG paper (its section 4.2.3) shows another model's SAE can serve as the concept space; offline,
ours is a TopK SAE on all-MiniLM-L6-v2's residual stream (``blocks.{L}.hook_resid_post``),
trained with the shared sae_lens recipe (:mod:`kit.models.sae_train`) fed by our own activation
iterator over the shipped corpus (``corpus/``: Gutenberg + tiny Shakespeare) and real benchmark
text.

Names (``kit.load_sae`` dispatches ``minilm-sae/...`` here)::

    minilm-sae/L<layer>/topk-<width>[-k<k>][-t<train tokens>]

e.g. ``minilm-sae/L4/topk-6144`` (k=32, 100k training tokens) or ``minilm-sae/L4/topk-256-k8-t8000``
(a very small one for the test suite). The name fixes everything that goes into the SAE, so the
cache key is the name plus :data:`BUILD_VERSION`: ``cache_dir()/cg/minilm-sae/<key>/`` holds
``cfg.json`` + ``sae_weights.safetensors`` (a genuine sae_lens SAE, loaded with
``SAE.load_from_disk``), ``labels.json`` and ``meta.json``. A build writes into a temporary
directory and renames it into place (``atomic_dir``), so readers never see a half-built SAE.

Concept labels come from top-activating contexts: for every concept the ``n_top`` strongest
token activations over the labelling texts, each with a few tokens of context; the label is the
most frequent activating words (e.g. ``"photosynthesis / plants / sunlight"``;
:func:`kit.models.sae_train.label_from_contexts`).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
from jaxtyping import Float
from torch import Tensor
from tqdm.auto import tqdm

from kit.core.cached import file_digests, file_sizes, is_built_dir
from kit.core.paths import atomic_dir, cache_dir, data_dir
from kit.models.sae_train import SAE_FILES, label_from_contexts, top_activations, train_sae

BUILD_VERSION = 7
"""Bump when the training recipe changes: old caches are then not reused. 5: trained in the runner's
pinned kernels (kit/core/pinned.py), so the same bits on every machine of one numerical platform.
7: with OpenBLAS matrix products and exact square roots (kit.core.kernels)."""

NAME_RE = re.compile(r"^minilm-sae/L(\d+)/topk-(\d+)(?:-k(\d+))?(?:-t(\d+))?$")
DEFAULT_K = 32
DEFAULT_TRAIN_TOKENS = 100_000
TRAIN_BENCHMARKS = (
    "gsm8k",
    "math500",
    "arc_challenge",
    "mmlu",
    "bbh/date_understanding",
    "bbh/logical_deduction_three_objects",
    "bbh/navigate",
    "mbpp",
    "humaneval",
    "svamp",
)
"""Benchmarks whose prompts join the corpus as SAE training text (half of the tokens)."""


@dataclass(frozen=True)
class MinilmSAESpec:
    """Everything that determines a MiniLM SAE (parsed from / rendered to its name)."""

    layer: int
    width: int
    k: int = DEFAULT_K
    train_tokens: int = DEFAULT_TRAIN_TOKENS
    seed: int = 0

    @classmethod
    def from_name(cls, name: str) -> "MinilmSAESpec":
        m = NAME_RE.match(name) if isinstance(name, str) else None
        if m is None:
            raise ValueError(
                f"MiniLM SAE name {name!r} must look like 'minilm-sae/L<layer>/topk-<width>"
                "[-k<k>][-t<train tokens>]', e.g. 'minilm-sae/L4/topk-6144'"
            )
        layer, width = int(m.group(1)), int(m.group(2))
        k = int(m.group(3)) if m.group(3) else DEFAULT_K
        tokens = int(m.group(4)) if m.group(4) else DEFAULT_TRAIN_TOKENS
        if not 0 <= layer <= 5:
            raise ValueError(f"{name}: layer={layer}; MiniLM-L6 has layers 0..5")
        if not 1 <= k < width:
            raise ValueError(f"{name}: k={k} must be in 1..width-1 (width={width})")
        if tokens < 1000:
            raise ValueError(f"{name}: train tokens t={tokens} must be >= 1000")
        return cls(layer, width, k, tokens)

    @property
    def name(self) -> str:
        s = f"minilm-sae/L{self.layer}/topk-{self.width}"
        if self.k != DEFAULT_K or self.train_tokens != DEFAULT_TRAIN_TOKENS:
            s += f"-k{self.k}"
        if self.train_tokens != DEFAULT_TRAIN_TOKENS:
            s += f"-t{self.train_tokens}"
        return s

    @property
    def site(self) -> str:
        return f"blocks.{self.layer}.hook_resid_post"

    def cache_key(self) -> str:
        blob = json.dumps(
            {**asdict(self), "v": BUILD_VERSION, "benchmarks": TRAIN_BENCHMARKS}, sort_keys=True
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def sae_dir(name: str) -> Path:
    spec = MinilmSAESpec.from_name(name)
    return cache_dir() / "cg" / "minilm-sae" / spec.cache_key()


# ----------------------------------------------------------------------------- training text


def corpus_paragraphs(min_chars: int = 120, max_chars: int = 600) -> list[str]:
    """Paragraphs of the shipped corpus (Gutenberg selection + tiny Shakespeare),
    whitespace-joined."""
    root = data_dir() / "corpus"
    files = sorted((root / "gutenberg").glob("*.txt")) + [root / "tinyshakespeare.txt"]
    out = []
    for f in files:
        raw = f.read_bytes()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:  # shakespeare-caesar.txt (and a few others) are Latin-1
            text = raw.decode("latin-1")
        for para in re.split(r"\r?\n\s*\r?\n", text):
            para = " ".join(para.split())
            while len(para) >= min_chars:
                out.append(para[:max_chars])
                para = para[max_chars:]
    return out


def benchmark_texts(names: Sequence[str] = TRAIN_BENCHMARKS) -> list[str]:
    """Prompts of real benchmarks (test splits, as loaded by ``kit.load_benchmark``)."""
    from kit.data.benchmarks import load_benchmark

    return [it.prompt for name in names for it in load_benchmark(name, "test")]


def training_texts(seed: int = 0) -> list[str]:
    """Corpus paragraphs and benchmark prompts interleaved (about half of each), shuffled."""
    rng = random.Random(seed)
    corpus, bench = corpus_paragraphs(), benchmark_texts()
    rng.shuffle(corpus)
    rng.shuffle(bench)
    out = [t for pair in zip(corpus, bench) for t in pair]
    return out


_ACTS_MEMO: dict[tuple, tuple[Tensor, Tensor]] = {}


def collect_activations(
    encoder,
    texts: Sequence[str],
    site: str,
    n_tokens: int,
    batch_size: int = 32,
    max_length: int = 128,
) -> tuple[Float[Tensor, "n_tokens d_model"], Tensor]:
    """The first ``n_tokens`` token activations at ``site`` over ``texts`` (stored as fp16), and
    for each its (text index, token position) as an ``Int[Tensor, "n_tokens 2"]``.

    Memoised in-process by (encoder, site, n_tokens, texts), so the two widths of one build share
    one encoder pass.
    """
    memo_key = (encoder.name, site, n_tokens, max_length, len(texts), hash(tuple(texts[:64])))
    if memo_key in _ACTS_MEMO:
        return _ACTS_MEMO[memo_key]
    out = _collect(encoder, texts, site, n_tokens, batch_size, max_length)
    _ACTS_MEMO.clear()  # keep at most one set alive
    _ACTS_MEMO[memo_key] = out
    return out


def _collect(encoder, texts, site, n_tokens, batch_size, max_length) -> tuple[Tensor, Tensor]:
    chunks, refs, have = [], [], 0
    with tqdm(total=n_tokens, desc=f"MiniLM activations ({site})", leave=False) as bar:
        for start in range(0, len(texts), batch_size * 4):
            acts = encoder.token_activations(
                list(texts[start : start + batch_size * 4]),
                site,
                batch_size=batch_size,
                max_length=max_length,
            )
            block = torch.cat([a for a in acts if len(a)])
            chunks.append(block.half())
            refs.append(
                torch.tensor(
                    [(start + i, p) for i, a in enumerate(acts) for p in range(len(a))],
                    dtype=torch.int32,
                )
            )
            have += len(block)
            bar.update(len(block))
            if have >= n_tokens:
                break
    out = torch.cat(chunks)[:n_tokens]
    if len(out) < n_tokens:
        raise ValueError(
            f"only {len(out)} tokens of text available at {site}, {n_tokens} requested"
        )
    return out, torch.cat(refs)[:n_tokens]


# ----------------------------------------------------------------------------- labels


def _merge_wordpieces(tokens: list[str], pos: int) -> str:
    """The whole word around subtoken ``pos`` ('##' continuation pieces joined)."""
    lo = pos
    while lo > 0 and tokens[lo].startswith("##"):
        lo -= 1
    hi = pos + 1
    while hi < len(tokens) and tokens[hi].startswith("##"):
        hi += 1
    return tokens[lo] + "".join(t[2:] for t in tokens[lo + 1 : hi])


def _context(tokens: list[str], pos: int, width: int) -> str:
    lo = max(0, pos - width)
    while lo < pos and tokens[lo].startswith("##"):  # do not start the window mid-word
        lo += 1
    left = " ".join(tokens[lo:pos]).replace(" ##", "")
    right = " ".join(tokens[pos + 1 : pos + 1 + width]).replace(" ##", "")
    return f"{left} [{tokens[pos]}] {right}".strip()


def contexts_from_acts(
    sae,
    acts: Float[Tensor, "n d_in"],
    refs: Tensor,
    tokens: Sequence[list[str]],
    n_top: int = 8,
    context: int = 4,
    chunk: int = 4096,
) -> list[list[dict]]:
    """Per concept, its ``n_top`` strongest activations over stored token activations ``acts``
    (``refs[j]`` = (text index, position) of row j; ``tokens[t]`` = text t's subtokens):
    ``[{"value", "word", "context"}]`` by decreasing value, empty for a dead concept.

    A running top-k (:func:`kit.models.sae_train.top_activations`) keeps memory at d_sae x n_top.
    """
    d_sae = sae.cfg.d_sae
    best_val, best_row = top_activations(sae, acts, n_top, chunk)
    out: list[list[dict]] = []
    for c in range(d_sae):
        rows = []
        for v, j in zip(best_val[c].tolist(), best_row[c].tolist()):
            if v <= 0 or j < 0:
                continue
            t, p = refs[j].tolist()
            toks = tokens[t]
            rows.append(
                {
                    "value": round(float(v), 4),
                    "word": _merge_wordpieces(toks, p),
                    "context": _context(toks, p, context),
                }
            )
        out.append(rows)
    return out


# ----------------------------------------------------------------------------- build / load


def build_minilm_sae(name: str, device: str = "cpu", encoder=None) -> Path:
    """Train the SAE ``name`` (see the module docstring) and its labels; returns its cache dir.

    Cached: returns at once if already built. ``encoder`` reuses a loaded MiniLM.
    """
    spec = MinilmSAESpec.from_name(name)
    target = sae_dir(name)
    # n_label_texts: what minilm_sae_training_texts reads back from meta.json
    if is_built_dir(target, SAE_FILES, what="MiniLM SAE", keys=("name", "n_label_texts")):
        return target
    from kit.models.encoders import load_encoder

    encoder = encoder or load_encoder("minilm", device=device)
    texts = training_texts(spec.seed)
    acts, refs = collect_activations(encoder, texts, spec.site, spec.train_tokens)
    # small batches on purpose: at equal compute on 1e5 MiniLM tokens, batch 256 left 15% of a
    # 6144-wide dictionary dead (FVU 0.17) where batch 1024 left 54% dead (FVU 0.21)
    batch = min(256, len(acts))
    # small builds still take 40 steps
    trained = train_sae(
        acts,
        spec.width,
        max(40 * batch, int(len(acts) * 1.5)),
        architecture="topk",
        k=spec.k,
        batch_size=batch,
        seed=spec.seed,
        device=device,
    )
    # explained variance on the training tokens, for the meta file (a sanity check, not a claim)
    with torch.inference_mode():
        x = acts[:4096].float().to(device)
        recon = trained.decode(trained.encode(x))
        fvu = float(((x - recon) ** 2).sum() / ((x - x.mean(0)) ** 2).sum())
    with atomic_dir(target) as tmp:
        trained.save_inference_model(tmp)
        from sae_lens import SAE

        sae = SAE.load_from_disk(tmp, device=device)
        n_label = int(refs[-1, 0]) + 1  # labels come from the training tokens themselves
        tokens = encoder.tokens(list(texts[:n_label]), max_length=128)
        contexts = contexts_from_acts(sae, acts, refs, tokens)
        labels = [label_from_contexts(c) for c in contexts]
        (tmp / "labels.json").write_text(json.dumps({"labels": labels, "contexts": contexts}))
        meta = {
            "name": spec.name,
            **asdict(spec),
            "site": spec.site,
            "encoder": "sentence-transformers/all-MiniLM-L6-v2",
            "fvu_train": fvu,
            "n_label_texts": n_label,
            "build_version": BUILD_VERSION,
            "dead_fraction": float(np.mean([not c for c in contexts])),
            "files": file_sizes(tmp),  # what a reader checks the directory against
            "sha256": file_digests(tmp),  # and the bytes of each file
        }
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2))
    return target


def load_minilm_sae(name: str, device: str = "cpu"):
    """The sae_lens SAE ``name`` (``minilm-sae/...``), built on first use. ``kit.load_sae`` calls
    this."""
    from sae_lens import SAE

    path = build_minilm_sae(name, device=device)
    sae = SAE.load_from_disk(path, device=device)
    sae.eval()
    return sae


def minilm_sae_meta(name: str) -> dict:
    return json.loads((build_minilm_sae(name) / "meta.json").read_text())


def minilm_sae_training_texts(name: str) -> list[str]:
    """The texts whose tokens trained SAE ``name`` (the first ``n_label_texts`` of
    :func:`training_texts`): what a held-out sample must avoid."""
    spec = MinilmSAESpec.from_name(name)
    return training_texts(spec.seed)[: int(minilm_sae_meta(name)["n_label_texts"])]


def minilm_sae_labels(name: str) -> list[str]:
    """One label per concept of ``name`` (``(dead)`` for concepts that never fired)."""
    return json.loads((build_minilm_sae(name) / "labels.json").read_text())["labels"]


def minilm_sae_contexts(name: str) -> list[list[dict]]:
    """Per concept, its top-activating contexts ``[{"value", "word", "context"}]``."""
    return json.loads((build_minilm_sae(name) / "labels.json").read_text())["contexts"]
