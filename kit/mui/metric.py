"""The Model Utilization Index (MUI, seed 000) of a dataset, from key neurons.

- :func:`utilization` / :func:`utilization_for_items` — MUI of a dataset (Eq. 4/5), streamed
  layer by layer so no ``batch x pos x layer x d_mlp`` tensor is ever kept;
  ``variant="public_code"`` computes it as MUI-Eval's code does (:func:`public_code_utilization`).

Beside it: the threshold functions and key-neuron masks (Eqs. 10-12 of A.4) in
:mod:`kit.mui.key_neurons`, SAE-feature MUI in :mod:`kit.mui.sae`, the law fit, PUR (Eq. 7) and
rank agreement (Table 1) in :mod:`kit.mui.law`, the four corollary directions in
:mod:`kit.mui.directions`.

Alignment convention (the public code gets this wrong): position ``p`` of a score tensor is the
residual position whose output predicts ``tokens[:, p + 1]``; a score tensor therefore has
``seq_len - 1`` positions, and a response mask over tokens becomes ``response_mask[:, 1:]``
over score positions.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import torch
from jaxtyping import Bool, Float, Int
from torch import Tensor

from kit.models import tl
from kit.models.cache import Check, ItemCache, map_items
from kit.models.identity import fingerprints, model_identity
from kit.models.rows import (  # noqa: F401 (is_world_model, item_tokens: re-exported, MUI's rows)
    is_world_model,
    item_tokens,
    pad_rows,
    teacher_forced_rows,
    token_budget_batches,
)
from kit.mui.key_neurons import _check_threshold, _k_for, layer_key_mask
from kit.mui.scores import (
    MUI_SCORES,
    _check_ig,
    _check_score,
    _check_tokens,
    _w_out,
    act_fn_site,
    iter_neuron_scores,
)
from kit.subjects.lent import lend


def mui_of_mask(mask: Bool[Tensor, "layer width"]) -> float:
    """MUI in percent: key units / all units (Eq. 4: ``|N_key| / (N * n_layers)`` x 100)."""
    return 100.0 * float(mask.sum()) / mask.numel()


@dataclass
class MUIResult:
    """MUI of a dataset and the key-unit sets behind it."""

    mui: float
    """MUI in percent: |union of key units over samples and response tokens| / (layers*width) x
    100."""
    mask: Bool[Tensor, "layer width"]
    """The union of key units."""
    n_samples: int
    """How many samples (rows) went in."""
    per_sample: list[float] | None = None
    """Each sample's own MUI (percent), if asked for."""
    sample_masks: Bool[Tensor, "sample layer width"] | None = field(default=None, repr=False)
    """Each sample's key units, if asked for (lets growth curves take unions of subsets)."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.mui <= 100.0:
            raise ValueError(f"mui={self.mui} must be a percentage in [0, 100]")


def _score_positions(response_mask: Tensor, tokens: Tensor) -> Bool[Tensor, "batch pos"]:
    if tuple(response_mask.shape) != tuple(tokens.shape):
        raise ValueError(
            f"response_mask shape {tuple(response_mask.shape)} must equal tokens shape "
            f"{tuple(tokens.shape)} (True at response tokens)"
        )
    if bool(response_mask[:, 0].any()):
        raise ValueError(
            "response_mask[:, 0] is True: the first token (BOS/prompt) cannot be a response "
            "token, nothing predicts it"
        )
    return response_mask[:, 1:].bool()


def utilization(
    model,
    tokens: Int[Tensor, "batch seq"],
    response_mask: Bool[Tensor, "batch seq"],
    score: str = "score",
    threshold: str = "topk",
    k: int | None = None,
    frac: float | None = None,
    batch_size: int = 16,
    per_sample: bool = False,
    progress: bool = False,
    variant: str = "paper",
    n_gpus: int = 1,
    ig_output: str = "logit",
    ig_mode: str = "per_token",
    max_batch_tokens: int | None = None,
) -> MUIResult:
    """MUI of a dataset (Eq. 5): key neurons of every response token of every sample, united.

    Inputs: ``tokens`` right-padded prompt+response ``[batch, seq]``; ``response_mask`` over the
    same tokens, ``True`` at response tokens (the positions *predicting* them are scored).
    ``score`` in :data:`SCORES`, ``threshold`` in :data:`THRESHOLDS`. Streams layer by layer:
    per-layer thresholds never see more than one layer; ``global_topk`` keeps each token's
    per-layer top-k candidates (a token's global top-k lies within them) and ranks at the end.
    ``per_sample`` also returns each sample's MUI and mask. ``variant`` (:data:`VARIANTS`):
    ``paper`` (the definitions above) or ``public_code`` (MUI-Eval's choices, see
    :func:`public_code_utilization`; ``score``/``threshold``/``frac`` must stay at their defaults
    there, ``k`` and ``n_gpus`` go to it). ``ig_output``/``ig_mode``: see
    :func:`_integrated_gradients`. ``max_batch_tokens``: batch by a token budget instead of
    ``batch_size`` rows (see :func:`token_budget_chunks`; the same key neurons, since no row's
    scores depend on its batch).
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant={variant!r}; allowed values: {', '.join(VARIANTS)}")
    if max_batch_tokens is not None:
        return budgeted(
            utilization,
            model,
            tokens,
            response_mask,
            max_batch_tokens,
            per_sample=per_sample,
            score=score,
            threshold=threshold,
            k=k,
            frac=frac,
            variant=variant,
            n_gpus=n_gpus,
            ig_output=ig_output,
            ig_mode=ig_mode,
        )
    if variant == "public_code":
        if (score, threshold, frac) != ("score", "topk", None):
            raise ValueError(
                "variant='public_code' reproduces MUI-Eval's score/topk only, got "
                f"score={score!r}, threshold={threshold!r}, frac={frac!r}"
            )
        return public_code_utilization(
            model,
            tokens,
            response_mask,
            k=k,
            n_gpus=n_gpus,
            batch_size=batch_size,
            per_sample=per_sample,
        )
    _check_score(score)
    _check_threshold(threshold)
    _check_ig(ig_output, ig_mode)
    tokens = _check_tokens(tokens)
    pos_mask = _score_positions(response_mask.cpu(), tokens.cpu())
    entry = MUI_SCORES[score].extra  # response-level scores sum a token-level one
    base, level = entry["token_score"], "sum" if entry["response_level"] else ""
    n_layers, d_mlp = model.cfg.n_layers, model.cfg.d_mlp
    union = torch.zeros(n_layers, d_mlp, dtype=torch.bool)
    sample_masks = (
        torch.zeros(tokens.shape[0], n_layers, d_mlp, dtype=torch.bool) if per_sample else None
    )
    kg = _k_for("global_topk", d_mlp, n_layers, k, frac) if threshold == "global_topk" else 0
    cand: dict[int, tuple[Tensor, Tensor]] = {}  # layer -> (values, indices) for global_topk

    device = torch.device(model.cfg.device)
    union = union.to(device)
    pos_mask = pos_mask.to(device)
    pieces = iter_neuron_scores(
        model,
        tokens,
        score=base,
        batch_size=batch_size,
        positions=pos_mask.cpu(),
        ig_output=ig_output,
        ig_mode=ig_mode,
    )
    if progress:
        from kit.core.progress import progress_bar

        pieces = progress_bar(
            pieces, total=n_layers * math.ceil(tokens.shape[0] / batch_size), desc=f"MUI {score}"
        )
    for piece in pieces:
        s = piece.scores.float()  # [rows, pos, d_mlp], on the model's device
        m = pos_mask[piece.rows].to(s.device)
        if level == "sum":
            s = (s * m[..., None]).sum(dim=1, keepdim=True)
            m = m.any(dim=1, keepdim=True)
        if threshold == "global_topk":
            # a token's global top-k lies within its per-layer top-k: keep only those candidates
            top = s.topk(min(kg, d_mlp), dim=-1)
            cand[piece.layer] = (top.values, top.indices)
            if piece.layer < n_layers - 1:
                continue
            # [rows, pos, L, kc]
            vals = torch.stack([cand[L][0].to(s.device) for L in range(n_layers)], dim=2)
            idxs = torch.stack([cand[L][1].to(s.device) for L in range(n_layers)], dim=2)
            kc = vals.shape[-1]
            flat = vals.reshape(*vals.shape[:2], n_layers * kc).topk(kg, dim=-1).indices
            neuron = idxs.reshape(*idxs.shape[:2], n_layers * kc).gather(-1, flat)
            token_masks = torch.zeros(
                *vals.shape[:2], n_layers * d_mlp, dtype=torch.bool, device=s.device
            )
            token_masks.scatter_(-1, (flat // kc) * d_mlp + neuron, True)
            token_masks = token_masks.reshape(*vals.shape[:2], n_layers, d_mlp) & m[..., None, None]
            rows_mask = token_masks.any(dim=1)  # [rows, L, d_mlp]
            union |= rows_mask.any(dim=0).to(union.device)
            if sample_masks is not None:
                sample_masks[piece.rows] |= rows_mask.cpu()
            cand.clear()
            continue
        token_masks = layer_key_mask(s, threshold, k, frac) & m[..., None]  # [rows, pos, d_mlp]
        rows_mask = token_masks.any(dim=1)  # [rows, d_mlp]
        # layers may sit on several devices
        union[piece.layer] |= rows_mask.any(dim=0).to(union.device)
        if sample_masks is not None:
            sample_masks[piece.rows, piece.layer] |= rows_mask.cpu()
    union = union.cpu()
    return MUIResult(
        mui=mui_of_mask(union),
        mask=union,
        n_samples=int(tokens.shape[0]),
        per_sample=[mui_of_mask(sm) for sm in sample_masks] if sample_masks is not None else None,
        sample_masks=sample_masks,
    )


def token_budget_chunks(
    tokens: Int[Tensor, "batch seq"],
    response_mask: Bool[Tensor, "batch seq"],
    max_batch_tokens: int,
) -> Iterator[tuple[Int[Tensor, "rows"], Int[Tensor, "rows width"], Bool[Tensor, "rows width"]]]:  # noqa: F821 (jaxtyping shape name)
    """Rows of right-padded ``tokens`` in length-sorted batches of at most ``max_batch_tokens``
    padded tokens (:func:`kit.models.rows.token_budget_batches`), each batch cut after its
    last response token: attention is causal, so later tokens change no score of a response
    position. Yields (row indices, tokens, response_mask) of each batch."""
    tokens = _check_tokens(tokens)
    response_mask = response_mask.bool().cpu()
    if tuple(response_mask.shape) != tuple(tokens.shape):
        raise ValueError(
            f"response_mask shape {tuple(response_mask.shape)} must equal tokens shape "
            f"{tuple(tokens.shape)}"
        )
    last = torch.where(
        response_mask.any(dim=1),
        response_mask.shape[1] - 1 - response_mask.flip(1).int().argmax(dim=1),
        torch.zeros(len(tokens), dtype=torch.long),
    )
    # a row with no response token needs nothing: 2 (the minimum)
    lengths = [max(2, int(x) + 1) for x in last]
    for batch in token_budget_batches(lengths, max_batch_tokens):
        idx = torch.tensor(batch, dtype=torch.long)
        width = max(lengths[i] for i in batch)
        yield idx, tokens[idx, :width], response_mask[idx, :width]


def budgeted(
    fn,
    model,
    tokens: Int[Tensor, "batch seq"],
    response_mask: Bool[Tensor, "batch seq"],
    max_batch_tokens: int,
    per_sample: bool = False,
    **kwargs: Any,
) -> MUIResult:
    """``fn`` (:func:`utilization`, :func:`sae_utilization`) over :func:`token_budget_chunks`, each
    chunk one batch, the results united (the union of the chunks' unions; per-sample masks put
    back in the rows' order)."""
    union: Tensor | None = None
    sample_masks: Tensor | None = None
    for idx, chunk, mask in token_budget_chunks(tokens, response_mask, max_batch_tokens):
        extra = {"per_sample": True} if per_sample else {}
        res = fn(model, tokens=chunk, response_mask=mask, batch_size=len(idx), **extra, **kwargs)
        union = res.mask.clone() if union is None else union | res.mask
        if per_sample:
            if sample_masks is None:
                sample_masks = torch.zeros(tokens.shape[0], *res.mask.shape, dtype=torch.bool)
            sample_masks[idx] = res.sample_masks
    assert union is not None  # tokens has rows: at least one chunk
    per_row = cast(Tensor, sample_masks)  # set when per_sample
    return MUIResult(
        mui=mui_of_mask(union),
        mask=union,
        n_samples=int(tokens.shape[0]),
        per_sample=[mui_of_mask(sm) for sm in per_row] if per_sample else None,
        sample_masks=sample_masks,
    )


VARIANTS = ("paper", "public_code")
"""``paper``: the definitions of the paper's text (Eq. 3/5, per-token top-k, k = max(1,
round(d_mlp/1000))); ``public_code``: what MUI-Eval's ``get_neuron.py`` + ``depict_neuron.py``
compute (Table 5's absolute values)."""

PUBLIC_CODE_STORED = 2000
"""MUI-Eval stores the top 2000 (position, neuron) entries per response and layer before
thresholding."""


def public_code_k(d_mlp: int) -> int:
    """MUI-Eval's per-layer k: ``int(1/1000 * d_mlp)``, a floor (14 for 14336, 18 for 18944), 0
    below 1000."""
    return int(1 / 1000 * d_mlp)


def public_code_key_neurons(
    scores: Float[Tensor, "pos d_mlp"], k: int, n_gpus: int = 1
) -> Bool[Tensor, "d_mlp"]:  # noqa: F821 (jaxtyping shape name)
    """One response's key neurons in one layer as MUI-Eval selects them.

    ``scores[q, i]``: neuron i's score at the response's q-th token. The code appends every
    position's scores once per visible GPU (``for cuda_index in range(num_cuda_devices)``), flattens
    the ``[positions * n_gpus, d_mlp]`` entries, keeps the top ``PUBLIC_CODE_STORED`` and then the
    first ``k`` of them: key neurons are the distinct neurons among the response's top-k
    (position, neuron) entries, so at most ``k`` per response and layer (fewer when one neuron
    wins at several positions, or with duplicates: about ``ceil(k / n_gpus)``).
    """
    if k < 1:
        raise ValueError(
            f"k={k} must be >= 1 (MUI-Eval's floor gives 0 below d_mlp=1000: pass k explicitly)"
        )
    if n_gpus < 1:
        raise ValueError(f"n_gpus={n_gpus} must be >= 1")
    d = scores.shape[-1]
    flat = scores.repeat(
        n_gpus, 1
    ).flatten()  # [positions * n_gpus * d_mlp], duplicates block by block
    top = flat.topk(min(k, PUBLIC_CODE_STORED, flat.numel())).indices
    mask = torch.zeros(d, dtype=torch.bool, device=scores.device)
    mask[top % d] = True
    return mask


def public_code_utilization(
    model,
    tokens: Int[Tensor, "batch seq"],
    response_mask: Bool[Tensor, "batch seq"],
    k: int | None = None,
    n_gpus: int = 1,
    batch_size: int = 16,
    per_sample: bool = False,
) -> MUIResult:
    """MUI as MUI-Eval's public code computes it (the code behind Table 5's absolute values).

    Its departures from the paper's text, each reproduced here:

    - off by one: the activation at a response token's OWN position q is scored against
      ``tokens[q]`` (the token it reads, not the one it predicts), over the response positions q;
    - the activation is the output of ``mlp.act_fn``: ``act(gate)`` for gated MLPs (Llama, Qwen,
      Gemma), not the ``act(gate) * up`` that enters ``down_proj``; the same for plain MLPs;
    - top-k per whole response (see :func:`public_code_key_neurons`) instead of per token;
    - per-GPU duplicates (``n_gpus``: GPUs visible to the run; 1 = none);
    - ``k = int(d_mlp / 1000)`` (:func:`public_code_k`, a floor) instead of ``max(1, round(.))``;
      ``k=None`` uses it and raises when it is 0 (the public code would find no neuron at all).

    Not reproduced: fp16 arithmetic. ``tokens``/``response_mask`` as for :func:`utilization`:
    kit's rows, or the rows the public code builds (its templates and a BOS even after a
    template's own: :func:`public_code_rows`, ``utilization_for_items(..., prompts=
    "public_code")``).
    """
    tokens = _check_tokens(tokens)
    response_mask = response_mask.bool().cpu()
    if tuple(response_mask.shape) != tuple(tokens.shape):
        raise ValueError(
            f"response_mask shape {tuple(response_mask.shape)} must equal tokens shape "
            f"{tuple(tokens.shape)}"
        )
    cfg = model.cfg
    kk = public_code_k(cfg.d_mlp) if k is None else int(k)
    if kk < 1:
        raise ValueError(
            f"the public code's k = int(d_mlp/1000) = {kk} for d_mlp={cfg.d_mlp}: it selects no "
            "neuron; pass k explicitly (k >= 1)"
        )
    # the output of mlp.act_fn: gated, act(gate) = act_fn(hook_pre); plain, hook_post = act(pre)
    site, act_fn = act_fn_site(model)
    names = [f"blocks.{L}.mlp.{site}" for L in range(cfg.n_layers)]
    union = torch.zeros(cfg.n_layers, cfg.d_mlp, dtype=torch.bool)
    sample_masks = torch.zeros(tokens.shape[0], cfg.n_layers, cfg.d_mlp, dtype=torch.bool)
    W_U = tl.unembed(model)
    for start in range(0, tokens.shape[0], batch_size):
        rows = slice(start, min(tokens.shape[0], start + batch_size))
        chunk = tokens[rows].to(cfg.device)
        with torch.no_grad():
            _, cache = tl.run_with_cache(model, chunk, names)
            for L, name in enumerate(names):
                # [rows, seq, d_mlp]
                acts = act_fn(cache[name])
                W_out = _w_out(model, L)
                for j, m in enumerate(response_mask[rows]):
                    q = torch.nonzero(m).flatten().to(acts.device)
                    if len(q) == 0:
                        continue
                    y = chunk[j, q]  # the token AT q: the off-by-one
                    proj = (W_out @ W_U[:, y].to(W_out.dtype)).float()  # [d_mlp, n_q]
                    s = acts[j, q].float() * proj.T  # [n_q, d_mlp]
                    sample_masks[start + j, L] = public_code_key_neurons(s, kk, n_gpus).cpu()
    union = sample_masks.any(dim=0)
    return MUIResult(
        mui=mui_of_mask(union),
        mask=union,
        n_samples=int(tokens.shape[0]),
        per_sample=[mui_of_mask(sm) for sm in sample_masks] if per_sample else None,
        sample_masks=sample_masks if per_sample else None,
    )


PUBLIC_CODE_TEMPLATES: dict[str, str | None] = {
    "chat": None,
    "plain": "{prompt}",
    "llama3": "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n{prompt}<|eot_id|>"
    "<|start_header_id|>assistant<|end_header_id|>\n\n",
    "mistral": "<s>[INST] {prompt} [/INST]",
    "deepseek-r1": "<｜begin▁of▁sentence｜><｜User｜>{prompt}<｜Assistant｜><think>\n",
}
"""Prompt texts MUI-Eval's ``get_neuron.py`` builds, by model family: ``chat`` (the tokenizer's
chat template with one user turn and the assistant turn opened: its Qwen, Gemma-2, Tulu-3,
Granite... models), ``plain`` (the prompt as it is: its base models), and the literal texts it
writes for Llama-3 instruct models (no system turn: Llama-3.1's own template adds one with its
knowledge-cutoff date), Mistral and the DeepSeek-R1 distillations."""

PROMPTS = ("kit", "public_code")
"""How :func:`utilization_for_items` builds prompt + response rows: ``kit`` (:func:`item_tokens`)
or ``public_code`` (:func:`public_code_rows`)."""


def public_code_rows(
    model, prompts: Sequence[str], responses: Sequence[str], template: str | None = None
) -> list[tuple[list[int], int]]:
    """``(ids, n_prompt)`` per item as MUI-Eval's ``get_neuron.py`` tokenises prompt + response:
    the text is ``prompt`` in ``template`` (:data:`PUBLIC_CODE_TEMPLATES`; None: ``chat`` when the
    tokenizer has a chat template, else ``plain``), tokenised by ``tokenizer(text)`` with the
    tokenizer's default special tokens; the response is what ``tokenizer(text + response)`` holds
    after the prompt's own token count.

    How this differs from kit's rows (:func:`kit.models.rows.teacher_forced_rows`, the default of
    :func:`item_tokens`): kit adds no BOS where the text already starts with it; the public code
    adds it regardless, so a template that writes its BOS (Llama-3's and Gemma-2's chat templates,
    the ``llama3``, ``mistral`` and ``deepseek-r1`` texts) gives rows starting with TWO BOS tokens,
    which shifts every activation of the prompt and response. Templates: no system prompt, and the
    family's literal text where the public code writes one. Rows longer than the model's context
    are an error (kit cuts the prompt's left end with a warning; the public code never cuts).
    """
    if template is None:
        template = "chat" if getattr(model.tokenizer, "chat_template", None) else "plain"
    if template not in PUBLIC_CODE_TEMPLATES:
        raise ValueError(
            f"template={template!r}; allowed values: {', '.join(PUBLIC_CODE_TEMPLATES)}"
        )
    if len(prompts) != len(responses):
        raise ValueError(
            f"prompts ({len(prompts)}) and responses ({len(responses)}) must have the same length"
        )
    tok = model.tokenizer
    fmt = PUBLIC_CODE_TEMPLATES[template]
    n_ctx = int(model.cfg.n_ctx)
    rows = []
    for i, (p, r) in enumerate(zip(prompts, responses)):
        if fmt is None:
            messages = [{"role": "user", "content": p}]
            text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        else:
            text = fmt.replace("{prompt}", p)
        n_prompt = len(tok(text)["input_ids"])  # default special tokens: a BOS even after one
        ids = tok(text + r)["input_ids"]
        if len(ids) > n_ctx:
            raise ValueError(
                f"item {i}: {len(ids)} tokens as the public code builds them exceed the model's "
                f"context ({n_ctx}); shorten the response or use prompts='kit' (which cuts)"
            )
        rows.append((ids, n_prompt))
    return rows


def utilization_for_items(
    model,
    items: Sequence[Any],
    responses: Sequence[str],
    prompts: str = "kit",
    template: str | None = None,
    **kwargs: Any,
) -> MUIResult:
    """:func:`utilization` of prompt+response texts (``kwargs`` go to :func:`utilization`), the
    rows built by kit (``prompts="kit"``, :func:`item_tokens`) or as MUI-Eval's code builds them
    (``prompts="public_code"``, :func:`public_code_rows` in ``template``: its BOS handling and
    templates, e.g. with ``variant="public_code"`` to reproduce the public code as it ran)."""
    if prompts not in PROMPTS:
        raise ValueError(f"prompts={prompts!r}; allowed values: {', '.join(PROMPTS)}")
    if prompts == "kit":
        tokens, mask = item_tokens(model, items, responses)
    else:
        if is_world_model(model):
            raise ValueError(
                "prompts='public_code' needs a Hugging Face tokenizer; a tiny-world model's "
                "prompts are its word tokens (allowed: prompts='kit')"
            )
        rows = public_code_rows(model, [it.prompt for it in items], responses, template)
        pad = model.tokenizer.pad_token_id
        tokens, mask = pad_rows(rows, pad if pad is not None else 0)
    return utilization(model, tokens, mask, **kwargs)


# --- per item, cached: the key neurons of each item, and MUI as their union ---------------------


def mui_key_neurons(
    model,
    prompts: Sequence[str],
    responses: Sequence[str],
    ids: Sequence[Any] | None = None,
    max_batch_tokens: int = 8192,
    chat: bool | None = False,
    cache: ItemCache | None = None,
    progress: bool = False,
    **mui_kwargs: Any,
) -> list[list[int]]:
    """Per item, its key neurons (flat indices ``layer * d_mlp + i``) under
    :func:`utilization`'s ``score`` / ``threshold`` / ``k`` (``mui_kwargs``),
    teacher-forced in token-budget batches and cached per item. A cached record is used only when
    it was made for this item's prompt and response and every id is a neuron of this model."""
    rows = teacher_forced_rows(model, prompts, responses, chat=chat)
    ids = list(range(len(rows))) if ids is None else list(ids)
    if len(set(map(str, ids))) != len(ids):
        raise ValueError("ids must be unique (they key the per-item cache)")
    pad = model.tokenizer.pad_token_id if model.tokenizer.pad_token_id is not None else 0

    def compute(batch: list[int]) -> list[list[int]]:
        tokens, mask = pad_rows([rows[i] for i in batch], pad)
        res = utilization(model, tokens, mask, per_sample=True, batch_size=len(batch), **mui_kwargs)
        assert res.sample_masks is not None  # per_sample=True
        return [torch.nonzero(m.flatten()).flatten().tolist() for m in res.sample_masks]

    return map_items(
        ids,
        compute,
        token_budget_batches([len(r[0]) for r in rows], max_batch_tokens),
        cache=cache,
        progress=progress,
        fingerprints=fingerprints(list(prompts), list(responses)),
        check=neuron_ids_check(model.cfg.n_layers * model.cfg.d_mlp),
    )


def neuron_ids_check(n_neurons: int) -> Check:
    """The check of a per-item key-neuron set: distinct ints in ``[0, n_neurons)``."""

    def check(value) -> str | None:
        if not isinstance(value, list) or not all(type(x) is int for x in value):
            return "not a list of neuron ids"
        if value and not (0 <= min(value) and max(value) < n_neurons):
            return f"neuron id outside [0, {n_neurons}) (n_layers x d_mlp of this model)"
        if len(set(value)) != len(value):
            return "repeated neuron ids"
        return None

    return check


def cached_items_mui(
    model,
    items: Sequence[Any],
    responses: Sequence[str],
    benchmark: str,
    settings: dict,
    max_batch_tokens: int = 8192,
    chat: bool | None = None,
    **mui_kwargs: Any,
) -> float:
    """MUI (%) of ``items`` (objects with ``prompt`` and ``id``) answered by ``responses``: key
    neurons by :func:`mui_key_neurons`, cached per item under (the model's identity: its files'
    content, ``benchmark``, ``settings``), each record bound to its item's prompt and response: the
    caller's settings name everything else that decides the scores."""
    name = getattr(model, "kit_path", None) or getattr(model, "kit_name", "model")
    cache = ItemCache(
        str(name),
        benchmark,
        {**settings, "dtype": str(model.cfg.dtype)},
        identity=model_identity(model),
    )
    keys = mui_key_neurons(
        model,
        [it.prompt for it in items],
        responses,
        ids=[it.id for it in items],
        max_batch_tokens=max_batch_tokens,
        chat=chat,
        cache=cache,
        **mui_kwargs,
    )
    return mui_from_items(model, keys)


def mui_from_items(model, key_neurons: Sequence[Sequence[int]]) -> float:
    """MUI (Eq. 5, in %) of the union of per-item key-neuron sets (flat ids ``layer * d_mlp + i``).

    An id outside the model's ``n_layers x d_mlp`` neurons raises ``ValueError``: a MUI above 100%
    (or from another model's ids) is never returned."""
    n = model.cfg.n_layers * model.cfg.d_mlp
    union = set().union(*map(set, key_neurons)) if key_neurons else set()
    bad = [i for i in union if not (isinstance(i, int) and 0 <= i < n)]
    if bad:
        raise ValueError(
            f"key neurons {sorted(map(str, bad))[:5]} are not neurons of this model "
            f"(flat ids in [0, {n}) = n_layers x d_mlp): they come from another model "
            "or a damaged cache"
        )
    return 100.0 * len(union) / n


# --- of a subject: what notebooks and users call -----------------------------------------------


def _subject_key_neurons(
    subject,
    answers,
    per_item: bool,
    score: str,
    threshold: str,
    k: int | None,
    frac: float | None,
    batch_size: int,
    max_batch_tokens: int | None,
) -> MUIResult | list[list[int]]:
    """What :func:`per_item_key_neurons` and :func:`subject_mui` both compute (their arguments are
    one list): a tiny-world subject's :func:`utilization` of ``<bos> prompt response`` rows in
    ``batch_size`` rows (per sample only when ``per_item``: the masks cost memory), a Hugging Face
    subject's per-item key neurons, cached (:func:`mui_key_neurons`)."""
    items, responses = list(answers.items), list(answers.responses)
    if subject.kind == "world":
        tokens, mask = subject.tokens(items, responses)
        return utilization(
            subject.model,
            tokens,
            mask,
            score=score,
            threshold=threshold,
            k=k,
            frac=frac,
            per_sample=per_item,
            batch_size=batch_size,
        )
    from kit.subjects.hf import responses_digest

    model = subject.model
    settings = {
        "score": score,
        "threshold": threshold,
        "k": k,
        "frac": frac,
        "chat": answers.chat,
        "responses": responses_digest(items, responses),
        "dtype": str(model.cfg.dtype),
    }
    cache = ItemCache(
        str(getattr(model, "kit_path", None) or subject.name),
        answers.task,
        settings,
        identity=model_identity(model),
    )
    return mui_key_neurons(
        model,
        [it.prompt for it in items],
        responses,
        ids=[it.id for it in items],
        max_batch_tokens=max_batch_tokens or 8192,
        chat=answers.chat,
        cache=cache,
        score=score,
        threshold=threshold,
        k=k,
        frac=frac,
    )


def per_item_key_neurons(
    subject,
    answers,
    score: str = "score",
    threshold: str = "topk",
    k: int | None = None,
    frac: float | None = None,
    batch_size: int = 16,
    max_batch_tokens: int | None = None,
) -> list[list[int]]:
    """Per item of ``answers`` (:class:`kit.subjects.Answers`), its key neurons (Eq. 4) as flat
    indices ``layer * d_mlp + i`` of ``subject``'s model (a :class:`kit.subjects.Subject`).

    Tiny-world subjects: teacher-forced over ``<bos> prompt response``
    (:func:`kit.models.rows.item_tokens`) in ``batch_size`` rows, uncached (the models are small).
    Hugging Face subjects: over prompt (shown as ``answers.chat`` says) + response in length-sorted
    batches of at most ``max_batch_tokens`` padded tokens (None: 8192), cached per item under
    (model, task, MUI settings, the digest of every (id, prompt, response)) so a killed run
    resumes (:func:`mui_key_neurons`).
    """
    found = _subject_key_neurons(
        subject, answers, True, score, threshold, k, frac, batch_size, max_batch_tokens
    )
    if isinstance(found, MUIResult):
        assert found.sample_masks is not None  # per_sample=True
        return [torch.nonzero(m.flatten()).flatten().tolist() for m in found.sample_masks]
    return found


def subject_mui(
    subject,
    answers,
    score: str = "score",
    threshold: str = "topk",
    k: int | None = None,
    frac: float | None = None,
    batch_size: int = 16,
    max_batch_tokens: int | None = None,
) -> float:
    """MUI (Eq. 5, in %) of ``answers``' responses by ``subject``'s model: tiny-world subjects in
    one streamed pass (``batch_size`` rows), Hugging Face subjects as the union of the cached
    :func:`per_item_key_neurons` (``max_batch_tokens``, None: 8192)."""
    found = _subject_key_neurons(
        subject, answers, False, score, threshold, k, frac, batch_size, max_batch_tokens
    )
    if isinstance(found, MUIResult):
        return float(found.mui)
    return mui_from_items(subject.model, found)


def mui(
    model_or_subject,
    answers,
    responses: Sequence[str] | None = None,
    score: str = "score",
    threshold: str = "topk",
    k: int | None = None,
    frac: float | None = None,
    batch_size: int = 16,
    max_batch_tokens: int | None = None,
) -> float:
    """MUI (seed 000 Eq. 5, in %) of a model's responses: the share of its MLP neurons that are key
    neurons of at least one response token.

    ``model_or_subject``: a :class:`kit.subjects.Subject` (``kit.load_subject``) or a model
    (``kit.load_model``; wrapped by :func:`kit.subjects.subject_of`). ``answers``: an
    :class:`kit.subjects.Answers` (``subject.answer(...)``), or a list of items with their
    ``responses`` (then uncached: :func:`utilization_for_items`). ``score`` names a contribution
    score of :data:`kit.mui.scores.MUI_SCORES`, ``threshold`` a threshold function of
    :data:`kit.mui.key_neurons.MUI_THRESHOLDS`; ``k`` / ``frac`` their parameter (None: the paper's
    default); ``batch_size`` rows or ``max_batch_tokens`` padded tokens per forward pass.

    >>> import kit, kit.mui
    >>> s = kit.load_subject("zoo/base-m", world="micro")
    >>> items = s.items("add", "test", n=8)
    >>> answers = s.answer("add", items)
    >>> m = kit.mui.mui(s, answers, score="score", threshold="topk")
    >>> 0 < m <= 100
    True
    >>> m == kit.mui.mui(s.model, items, answers.responses)   # items and responses apart
    True
    >>> kit.mui.mui(s, answers, threshold="topscore", frac=0.5) > 0
    True
    """
    from kit.subjects import Answers, Subject, subject_of

    if not isinstance(answers, Answers):
        if responses is None:
            raise ValueError(
                "responses=None: MUI reads the responses the model gave; pass an Answers "
                "(subject.answer(...)) or the items with their responses"
            )
        model = getattr(model_or_subject, "model", model_or_subject)
        return float(
            utilization_for_items(
                model,
                list(answers),
                list(responses),
                score=score,
                threshold=threshold,
                k=k,
                frac=frac,
                batch_size=batch_size,
            ).mui
        )
    if responses is not None:
        raise ValueError("responses: give them inside the Answers, not beside it")
    subject = (
        model_or_subject if isinstance(model_or_subject, Subject) else subject_of(model_or_subject)
    )
    return subject_mui(subject, answers, score, threshold, k, frac, batch_size, max_batch_tokens)


# the notebooks' spelling, subject.mui(answers) and subject.key_neurons(answers): lent to subjects
lend("mui", subject_mui)
lend("key_neurons", per_item_key_neurons)
