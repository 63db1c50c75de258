"""One SAE recipe and one concept labeller for every SAE the project trains (zoo SAEs in
``kit.world.saes``, MiniLM SAEs in ``kit.models.minilm_sae``).

- :func:`train_sae`: a sae_lens ``TopKTrainingSAE`` or ``StandardTrainingSAE`` (ReLU + L1)
  trained by ``sae_lens.SAETrainer`` on a tensor of stored activations (our own iterator feeds it,
  so no sae_lens ``ActivationsStore`` or model hooks are involved).
- :func:`top_activations`: per concept, the rows of the ``n_top`` strongest activations (a running
  top-k over chunks: memory d_sae x n_top).
- :func:`label_from_contexts`: a short label from those top-activating contexts.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterator, Sequence

import torch
from jaxtyping import Float, Int
from torch import Tensor

ARCHITECTURES = ("topk", "standard")
SAE_FILES = ("cfg.json", "sae_weights.safetensors")
"""What sae_lens's ``save_inference_model`` writes: an SAE directory without both is not whole."""
DEAD = "(dead)"


def _batches(acts: Tensor, batch_size: int, seed: int) -> Iterator[Tensor]:
    """Endless shuffled epochs of full batches of ``acts`` (as fp32), seeded."""
    g = torch.Generator().manual_seed(seed)
    while True:
        for idx in torch.randperm(len(acts), generator=g).split(batch_size):
            if len(idx) == batch_size:
                yield acts[idx].float()


def train_sae(
    acts: Float[Tensor, "n d_in"],
    width: int,
    total_samples: int,
    *,
    architecture: str = "topk",
    k: int = 32,
    l1: float = 1.0,
    batch_size: int = 256,
    lr: float = 2e-3,
    seed: int = 0,
    device: str = "cpu",
    metadata: dict | None = None,
    sae=None,
):
    """Train an SAE of ``width`` features on ``acts`` with ``sae_lens.SAETrainer``; returns the
    training SAE (``save_inference_model`` writes a genuine sae_lens SAE).

    ``architecture``: ``"topk"`` (``k`` active features) or ``"standard"`` (ReLU, sparsity from an
    L1 penalty ``l1 * sum_i f_i ||W_dec[i]||``). Activations are rescaled to a fixed mean norm
    (sae_lens ``expected_average_only_in``), so ``l1`` and ``lr`` do not depend on the site's
    scale. ``total_samples`` rows are drawn in shuffled epochs of ``batch_size``; cosine learning
    rate to ``lr / 10`` after a 5% warm-up. ``metadata``: sae_lens ``SAEMetadata`` fields
    (``hook_name``, ``model_name``...) saved with the SAE. ``sae``: an existing sae_lens training
    SAE to train further instead of a fresh one (M09's distillation cycles re-initialise some of its
    features in place and retrain it; ``architecture``, ``k``, ``l1`` are then its own).
    """
    from sae_lens import (
        SAETrainer,
        StandardTrainingSAE,
        StandardTrainingSAEConfig,
        TopKTrainingSAE,
        TopKTrainingSAEConfig,
    )
    from sae_lens.config import LoggingConfig, SAETrainerConfig
    from sae_lens.saes.sae import SAEMetadata

    if architecture not in ARCHITECTURES:
        raise ValueError(
            f"architecture={architecture!r}; allowed values: {', '.join(ARCHITECTURES)}"
        )
    torch.manual_seed(seed)
    batch_size = min(batch_size, len(acts))
    common: dict[str, Any]
    common = dict(
        d_in=acts.shape[1],
        d_sae=width,
        device=device,
        normalize_activations="expected_average_only_in",
        metadata=SAEMetadata(**(metadata or {})),
    )
    if sae is not None:
        pass  # trained further as it is (its own config)
    elif architecture == "topk":
        sae = TopKTrainingSAE(TopKTrainingSAEConfig(k=k, **common))
    else:
        sae = StandardTrainingSAE(StandardTrainingSAEConfig(l1_coefficient=l1, **common))
    steps = total_samples // batch_size
    cfg = SAETrainerConfig(
        total_training_samples=total_samples,
        train_batch_size_samples=batch_size,
        lr=lr,
        lr_end=lr / 10,
        lr_scheduler_name="cosineannealing",
        lr_warm_up_steps=max(1, steps // 20),
        device=device,
        n_batches_for_norm_estimate=min(20, max(1, len(acts) // batch_size)),
        dead_feature_window=max(50, steps // 4),
        feature_sampling_window=max(100, steps // 2),
        logger=LoggingConfig(log_to_wandb=False),
    )
    return SAETrainer(cfg, sae, _batches(acts, batch_size, seed)).fit()


@torch.inference_mode()
def top_activations(
    sae, acts: Float[Tensor, "n d_in"], n_top: int, chunk: int = 4096
) -> tuple[Float[Tensor, "d_sae n_top"], Int[Tensor, "d_sae n_top"]]:
    """Per concept of ``sae``, its ``n_top`` strongest activations over the rows of ``acts`` and
    those rows' indices, by decreasing value (value <= 0 or row -1: fewer than ``n_top`` active)."""
    d_sae = sae.cfg.d_sae
    best_val = torch.full((d_sae, n_top), -1.0)
    best_row = torch.full((d_sae, n_top), -1, dtype=torch.long)
    for s in range(0, len(acts), chunk):
        feats = sae.encode(acts[s : s + chunk].float().to(sae.W_enc.device)).float().cpu()
        val, idx = feats.T.topk(min(n_top, feats.shape[0]), dim=1)
        cand_val, cand_row = torch.cat([best_val, val], 1), torch.cat([best_row, idx + s], 1)
        order = cand_val.topk(n_top, dim=1).indices
        best_val, best_row = cand_val.gather(1, order), cand_row.gather(1, order)
    return best_val, best_row


def label_from_contexts(
    contexts: Sequence[dict], n_words: int = 3, group: str | None = None
) -> str:
    """A short label from a concept's top-activating contexts ``[{"value", "word", [group]}]``:
    its ``n_words`` most frequent words (ties: larger summed value, then alphabetical), joined by
    `` / ``; with ``group``, prefixed by the most frequent value of that field (ties alphabetical),
    e.g. ``"add: apples"``. :data:`DEAD` for a concept with no active context."""
    if not contexts:
        return DEAD
    counts = Counter(c["word"].lower() for c in contexts)
    strength: dict[str, float] = {}
    for c in contexts:
        strength[c["word"].lower()] = strength.get(c["word"].lower(), 0) + c["value"]
    words = " / ".join(sorted(counts, key=lambda w: (-counts[w], -strength[w], w))[:n_words])
    if group is None:
        return words
    groups = Counter(c[group] for c in contexts)
    return f"{min(groups, key=lambda g: (-groups[g], g))}: {words}"
