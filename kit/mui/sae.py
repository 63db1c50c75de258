"""SAE-feature MUI (seed 000, Eq. 6/9, A.3): key features per token instead of key neurons, and
notebook 01's SAE section (SAE MUI beside neuron MUI per SAE and task).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import torch
from jaxtyping import Bool, Int
from torch import Tensor

from kit.core.checks import require_finite
from kit.models import tl
from kit.mui import metric as mui
from kit.mui.key_neurons import _topk_mask
from kit.mui.metric import MUIResult, _score_positions, budgeted, mui_of_mask
from kit.mui.scores import _check_tokens

SAE_REFERENCE_WIDTH = 131072
"""Width (128K) at which the paper keeps the top 50 SAE features per layer and token (A.3)."""


def sae_top(d_sae: int, top: int = 50, reference_width: int = SAE_REFERENCE_WIDTH) -> int:
    """Features kept per layer and token: ``top`` at the paper's 128K width, scaled by width."""
    return max(1, round(top * d_sae / reference_width))


def sae_utilization(
    model,
    sae_by_layer: Mapping[str, Any],
    tokens: Int[Tensor, "batch seq"],
    response_mask: Bool[Tensor, "batch seq"],
    top: int = 50,
    reference_width: int | None = SAE_REFERENCE_WIDTH,
    batch_size: int = 16,
    max_batch_tokens: int | None = None,
) -> MUIResult:
    """SAE-based MUI (Eqs. 6, 9): per layer and response position, the top features of the SAE
    on that hook (``top`` at 128K width scaled to the SAE width; ``reference_width=None`` keeps
    ``top`` as is), positive activations only; denominator = number of SAEs x d_sae.

    ``sae_by_layer`` maps TransformerLens hook names (``blocks.{L}.hook_resid_post``) to sae_lens
    SAEs of equal width. Position alignment is the neuron one: the position predicting a
    response token is read. ``max_batch_tokens``: token-budget batches (see :func:`utilization`).
    """
    if not sae_by_layer:
        raise ValueError("sae_by_layer is empty: pass {hook_name: SAE}")
    if max_batch_tokens is not None:
        return budgeted(
            sae_utilization,
            model,
            tokens,
            response_mask,
            max_batch_tokens,
            sae_by_layer=sae_by_layer,
            top=top,
            reference_width=reference_width,
        )
    tokens = _check_tokens(tokens)
    pos_mask = _score_positions(response_mask.cpu(), tokens.cpu())
    hooks = list(sae_by_layer)
    widths = {int(sae.cfg.d_sae) for sae in sae_by_layer.values()}
    if len(widths) != 1:
        raise ValueError(
            f"SAEs must share one width for a common denominator, got widths {sorted(widths)}"
        )
    d_sae = widths.pop()
    kk = top if reference_width is None else sae_top(d_sae, top, reference_width)
    if not 1 <= kk <= d_sae:
        raise ValueError(f"top={top} gives {kk} features per token, must be in [1, {d_sae}]")
    union = torch.zeros(len(hooks), d_sae, dtype=torch.bool)
    tokens = tokens.to(model.cfg.device)
    for start in range(0, tokens.shape[0], batch_size):
        rows = slice(start, min(tokens.shape[0], start + batch_size))
        with torch.no_grad():
            _, cache = tl.run_with_cache(model, tokens[rows], list(sae_by_layer))
            m = pos_mask[rows]
            for j, h in enumerate(hooks):
                feats = (
                    sae_by_layer[h]
                    .encode(cache[h][:, :-1].to(next(sae_by_layer[h].parameters()).device))
                    .float()
                    .cpu()
                )
                picked = require_finite(f"SAE features at {h}", feats[m])  # [tokens, d_sae]
                if picked.shape[0] == 0:
                    continue
                key = _topk_mask(picked, kk) & (picked > 0)
                union[j] |= key.any(dim=0)
    return MUIResult(mui=mui_of_mask(union), mask=union, n_samples=int(tokens.shape[0]))


def sae_grid(
    sae_names: Sequence[str],
    tasks: Sequence[str],
    n_items: int,
    world: str,
    device: str = "cpu",
    top: int = 50,
    reference_width: int | None = SAE_REFERENCE_WIDTH,
    batch_size: int = 32,
    seed: int = 0,
    score: str = "score",
    threshold: str = "topk",
    max_new_tokens: int = 1,
    dtype: str | None = None,
    max_batch_tokens: int | None = None,
    prompt_style: str = "instructed",
) -> pd.DataFrame:
    """SAE-based and neuron-based MUI of each SAE's model on each task (its own greedy responses, as
    a :class:`kit.subjects.Subject` answers; world models in ``batch_size`` rows, Hugging Face
    models in batches of ``max_batch_tokens`` padded tokens).

    The SAE's hook comes from ``sae.cfg.metadata.hook_name``, its model from the name
    (``zoo-sae/<member>/...``) or else ``sae.cfg.metadata.model_name`` (the Hugging Face id of
    Llama Scope / Gemma Scope SAEs, ``twin/<arch>`` for the twins' SAEs). Returns columns sae,
    model, hook, d_sae, task, performance, sae_mui, neuron_mui, features_per_token.
    """
    from kit.models.generate import release
    from kit.models.load import load_sae
    from kit.models.sources import sae_source_of
    from kit.subjects import load_subject

    rows = []
    cache: dict[str, Any] = {}
    for sae_name in sae_names:
        sae = load_sae(sae_name, device=device, world=world)
        form = sae_source_of(sae_name)
        model_name = form.model(sae_name) if form.model else sae.cfg.metadata.model_name
        if model_name not in cache:
            cache.clear()
            release()
            cache[model_name] = load_subject(
                model_name, device=device, world=world, dtype=dtype, prompt_style=prompt_style
            )
        subject = cache[model_name]
        model = subject.model
        hook = sae.cfg.metadata.hook_name
        for task in tasks:
            ans = subject.answer(task, subject.items(task, "test", n_items, seed), max_new_tokens)
            tokens, mask = subject.tokens(ans.items, ans.responses)
            budget: dict[str, Any]
            budget = dict(
                batch_size=batch_size, max_batch_tokens=subject.token_budget(max_batch_tokens)
            )
            s = sae_utilization(
                model, {hook: sae}, tokens, mask, top=top, reference_width=reference_width, **budget
            )
            nres = mui.utilization(model, tokens, mask, score=score, threshold=threshold, **budget)
            rows.append(
                {
                    "sae": sae_name,
                    "model": model_name,
                    "hook": hook,
                    "d_sae": int(sae.cfg.d_sae),
                    "task": task,
                    "performance": 100 * ans.accuracy,
                    "sae_mui": s.mui,
                    "neuron_mui": nres.mui,
                    "features_per_token": top
                    if reference_width is None
                    else sae_top(int(sae.cfg.d_sae), top, reference_width),
                }
            )
    return pd.DataFrame(rows)


def sae_section(sae_names: Sequence[str], tasks: Sequence[str], cfg):
    """§7: SAE-feature MUI beside neuron MUI, per SAE and task."""
    from scipy.stats import spearmanr

    from kit.core.findings import Section

    if not sae_names:
        return Section(findings=["SAE MUI: no SAEs in this world/profile, section skipped."])
    sgrid = sae_grid(
        sae_names,
        tasks,
        cfg.n_items,
        cfg.world,
        cfg.device,
        cfg.sae_top,
        cfg.sae_reference_width,
        cfg.batch_size,
        cfg.seed,
        cfg.score,
        cfg.threshold,
        cfg.max_new_tokens,
        dtype=cfg.dtype,
        max_batch_tokens=cfg.max_batch_tokens,
        prompt_style=cfg.prompt_style,
    )
    rho = {
        s: float(spearmanr(g.sae_mui, g.neuron_mui).statistic)  # pyright: ignore[reportAttributeAccessIssue]  (scipy)
        if g.sae_mui.nunique() > 1 and g.neuron_mui.nunique() > 1
        else None
        for s, g in sgrid.groupby("sae")
    }
    finding = "SAE MUI (one layer): " + "; ".join(
        f"{s} ({g.hook.iloc[0]}, {g.features_per_token.iloc[0]} features/token): mean "
        f"{g.sae_mui.mean():.2f}% vs neuron MUI {g.neuron_mui.mean():.2f}%, Spearman across "
        f"tasks {None if (r := rho[s]) is None else round(r, 2)}"
        for s, g in sgrid.groupby("sae")
    )
    return Section(
        record={"sae_mui": sgrid.to_dict(orient="records"), "sae_vs_neuron_spearman": rho},
        findings=[finding],
        tables={"grid": sgrid},
    )
