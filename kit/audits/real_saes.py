"""SAEs trained on a real model's own activations, for notebook 06's ``real`` profiles.

The ``paper`` profile audits GPT-2 small through its public SAEs; a real model of this project
(``real/smollm2-135m-instruct``, :mod:`kit.models.real`) has none, and an audit of random SAEs says
nothing about SAEs. So the SAEs are trained here, on the model's residual stream at one hook, with
the project's one SAE recipe (:func:`kit.models.sae_train.train_sae`, sae_lens's ``SAETrainer``;
the recipe M09 and the world's and MiniLM's SAEs use), over real text: the corpus paragraphs and
benchmark prompts of :func:`kit.cg.saes.training_texts` (Gutenberg, Shakespeare and the prompts of
ten benchmarks, interleaved).

Names (:func:`kit.audits.suite.load_saes` dispatches ``real-sae/...`` here)::

    real-sae/<real model>/blocks.<L>.hook_resid_post/<arch>-<width>[-k<k>]-t<train tokens>

e.g. ``real-sae/smollm2-135m-instruct/blocks.19.hook_resid_post/topk-2304-k32-t60000``; ``arch`` is
``topk`` (``k`` active features, 32 by default) or ``standard`` (ReLU + L1, :data:`STANDARD_L1`).
The name fixes every training choice; the cache key adds the model's content identity
(:func:`kit.models.identity.model_identity`, the dequantised GGUF's files) and
:data:`BUILD_VERSION`, so ``cache_dir()/audits/real-sae/<key>/`` is built once (atomically: a
killed build leaves nothing half-written) and reused by every later run.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TypeGuard

import torch

from kit.core.cached import file_digests, file_sizes, is_built_dir
from kit.core.paths import atomic_dir, cache_dir
from kit.models.sae_train import SAE_FILES

BUILD_VERSION = 1
"""Bump when the recipe changes: older builds are then not reused."""
NAME_RE = re.compile(
    r"^real-sae/(?P<model>[\w.\-]+)/(?P<hook>blocks\.(?P<layer>\d+)\.hook_resid_post)/"
    r"(?P<arch>topk|standard)-(?P<width>\d+)(?:-k(?P<k>\d+))?-t(?P<tokens>\d+)$"
)
DEFAULT_K = 32
STANDARD_L1 = 5.0
"""L1 coefficient of the ``standard`` SAEs (activations scaled to mean norm sqrt(d_in), as sae_lens
does): sparse enough that L0 stays within a few dozen features, the TopK SAEs' k."""
BATCH = 256
EPOCHS = 2
"""Passes over the training tokens (2: each token seen twice; more only slows the first run)."""
MAX_CHARS = 400
"""Training texts are cut to this many characters (~100 tokens), so padding stays small."""


@dataclass(frozen=True)
class RealSAESpec:
    """Everything that determines one real-model SAE (parsed from / rendered to its name)."""

    model: str
    layer: int
    architecture: str
    width: int
    k: int
    train_tokens: int
    seed: int = 0

    @classmethod
    def from_name(cls, name: str) -> "RealSAESpec":
        m = NAME_RE.match(name) if isinstance(name, str) else None
        if m is None:
            raise ValueError(
                f"SAE name {name!r} must look like 'real-sae/<model>/blocks.<L>.hook_resid_post/"
                "<topk|standard>-<width>[-k<k>]-t<train tokens>', e.g. 'real-sae/"
                "smollm2-135m-instruct/blocks.19.hook_resid_post/topk-2304-k32-t60000'"
            )
        width, tokens = int(m["width"]), int(m["tokens"])
        if m["k"] and m["arch"] != "topk":
            raise ValueError(f"{name}: -k<k> applies to topk SAEs only")
        k = int(m["k"]) if m["k"] else min(DEFAULT_K, max(1, width // 4))
        if not 1 <= k < width:
            raise ValueError(f"{name}: k={k} must be in 1..width-1 (width={width})")
        if width < 8:
            raise ValueError(f"{name}: width={width} must be >= 8")
        if tokens < 256:
            raise ValueError(f"{name}: train tokens t={tokens} must be >= 256")
        return cls(m["model"], int(m["layer"]), m["arch"], width, k, tokens)

    @property
    def model_name(self) -> str:
        return f"real/{self.model}"

    @property
    def hook(self) -> str:
        return f"blocks.{self.layer}.hook_resid_post"

    @property
    def total_samples(self) -> int:
        """Samples drawn in training: :data:`EPOCHS` passes, at least 40 full batches."""
        return max(EPOCHS * self.train_tokens, 40 * min(BATCH, self.train_tokens))

    def cache_key(self, identity: str) -> str:
        blob = json.dumps(
            {
                **asdict(self),
                "identity": identity,
                "v": BUILD_VERSION,
                "l1": STANDARD_L1,
                "batch": BATCH,
                "epochs": EPOCHS,
                "max_chars": MAX_CHARS,
            },
            sort_keys=True,
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def is_real_sae(name: str | None) -> TypeGuard[str]:
    return isinstance(name, str) and name.startswith("real-sae/")


def sae_dir(spec: RealSAESpec, identity: str) -> Path:
    return cache_dir() / "audits" / "real-sae" / spec.cache_key(identity)


_ACTS: dict[tuple, torch.Tensor] = {}


def training_activations(model, spec: RealSAESpec) -> torch.Tensor:
    """The first ``spec.train_tokens`` token activations at ``spec.hook`` over the training texts
    (BOS dropped; the forward stops after layer ``spec.layer``). Returns ``Float[Tensor, "n d"]``.
    Memoised in-process (the largest set per model, hook and seed), so the SAEs of one profile
    share one pass: the first n tokens are the same texts whatever n is."""
    from kit.cg.saes import training_texts
    from kit.models.identity import model_identity

    from .activations import token_activations

    key = (model_identity(model), spec.hook, spec.seed)
    have_acts = _ACTS.get(key)
    if have_acts is not None and len(have_acts) >= spec.train_tokens:
        return have_acts[: spec.train_tokens]
    texts = [t[:MAX_CHARS] for t in training_texts(spec.seed)]
    chunks, have, i = [], 0, 0
    while have < spec.train_tokens and i < len(texts):
        # ~100 tokens a text: blocks of at most 64 texts keep memory small and waste few tokens
        n = max(1, min(64, (spec.train_tokens - have) // 80 + 1))
        block = texts[i : i + n]
        i += len(block)
        a = token_activations(model, block, [spec.hook], batch_size=16).acts[spec.hook]
        chunks.append(a)
        have += len(a)
    acts = torch.cat(chunks)[: spec.train_tokens]
    _ACTS.clear()
    _ACTS[key] = acts
    if len(acts) < spec.train_tokens:
        raise ValueError(
            f"only {len(acts)} training tokens available, {spec.train_tokens} requested"
        )
    return acts


def build_real_sae(name: str, model, device: str = "cpu") -> Path:
    """Train SAE ``name`` on ``model`` (the real model it names, loaded) unless already built;
    returns its directory (``cfg.json``, ``sae_weights.safetensors``, ``meta.json``)."""
    from kit.models.identity import model_identity

    spec = RealSAESpec.from_name(name)
    if getattr(model, "kit_name", spec.model_name) != spec.model_name:
        raise ValueError(f"{name} is an SAE of {spec.model_name}, not of {model.kit_name}")
    target = sae_dir(spec, model_identity(model))
    if is_built_dir(target, SAE_FILES, what="real-model SAE"):
        return target
    from sae_lens import SAE

    from kit.models.sae_train import train_sae

    acts = training_activations(model, spec)
    n_val = min(len(acts) // 10, 4096)
    val, train = acts[:n_val], acts[n_val:]
    trained = train_sae(
        train,
        spec.width,
        spec.total_samples,
        architecture=spec.architecture,
        k=spec.k,
        l1=STANDARD_L1,
        batch_size=min(BATCH, len(train)),
        seed=spec.seed,
        device=device,
        metadata=dict(hook_name=spec.hook, model_name=spec.model_name, prepend_bos=True),
    )
    with atomic_dir(target) as tmp:
        trained.save_inference_model(tmp)
        sae = SAE.load_from_disk(tmp, device=device)
        meta = {
            "name": name,
            **asdict(spec),
            "hook": spec.hook,
            "n_train_tokens": len(train),
            "total_samples": spec.total_samples,
            "build_version": BUILD_VERSION,
            **sae_stats(sae, val.to(device)),
            "files": file_sizes(tmp),  # what a reader checks the directory against
            "sha256": file_digests(tmp),  # and the bytes of each file
        }
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
    return target


@torch.inference_mode()
def sae_stats(sae, x: torch.Tensor) -> dict[str, float]:
    """Explained variance ``1 - sum |x - x_hat|^2 / sum |x - mean x|^2``, mean L0 and the fraction
    of features never active, on held-out activations ``x`` (``Float[Tensor, "n d_in"]``)."""
    f = sae.encode(x)
    x_hat = sae.decode(f)
    ev = 1 - float((x - x_hat).pow(2).sum() / (x - x.mean(0)).pow(2).sum())
    active = f > 0
    return {
        "explained_variance": round(ev, 6),
        "l0": round(float(active.sum(-1).float().mean()), 4),
        "dead_fraction": round(float((~active.any(0)).float().mean()), 6),
        "n_val_tokens": int(len(x)),
    }


def load_real_sae(name: str, model, device: str = "cpu"):
    """The sae_lens SAE ``name`` (``real-sae/...``) of the loaded ``model``, built on first use."""
    from sae_lens import SAE

    sae = SAE.load_from_disk(str(build_real_sae(name, model, device)), device=device)
    sae.eval()
    return sae


def real_sae_meta(name: str, model) -> dict:
    """What :func:`build_real_sae` recorded (training tokens, explained variance, L0, dead
    fraction)."""
    return json.loads((build_real_sae(name, model) / "meta.json").read_text())
