"""Option log-likelihood scoring of multiple-choice items (lm-evaluation-harness's
``multiple_choice`` output type), for Hugging Face models loaded by ``kit.load_model``.

Each option is a continuation of one context; the answer is the option whose continuation tokens
have the highest summed log-probability (lm-eval's ``acc``; no length normalisation). Two forms:

- ``loglik-text``: lm-eval's ``arc_challenge`` format, context "Question: <question>\\nAnswer:",
  continuations " <option text>" (the question without its options, ``item.metadata["question"]``),
  with no chat template unless the subject asks for one (``chat=True``). Without it the
  log-likelihoods are those of lm-eval's ``hf`` model (:func:`lm_eval_logliks`; a test checks
  1e-4 on SmolLM2 and a twin). With ``chat=True`` it is the chat-template variant: the same
  context shown as the user's turn of the tokenizer's chat template (SmolLM2's writes its default
  system prompt), the assistant's turn opened, then the option: not lm-eval's default format;
- ``loglik-letter``: the context is the prompt as generation shows it (chat template when the
  tokenizer has one) followed by the instruction's answer prefix ("The best answer is", lm-eval
  llama3's ``gen_prefix``), or by "\\nAnswer:" for a plain prompt (lm-eval's MMLU template); the
  continuations are " A", " B", ...

Tokens are the model's own tokenizer's (``encode``: its special tokens, so a BOS only where that
tokenizer adds one, as lm-eval's ``hf`` model and generation encode). Continuation tokens are
those of ``encode(context + continuation)`` after ``encode(context)``'s, as lm-eval splits them and
as teacher-forced MUI splits prompt and response (:func:`kit.models.rows.teacher_forced_rows`).
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from typing import Any, Sequence

import numpy as np
import torch

from kit.models import tl
from kit.models.generate import encode, prompt_text, use_chat
from kit.models.rows import token_budget_batches

LETTERS = "ABCDEFGHIJ"
PLAIN_ANSWER_CUE = "\nAnswer:"
"""What a plain (uninstructed) prompt is followed by before its letter: lm-eval's MMLU template."""


def letter_contexts(
    items: Sequence[Any], prefixes: Sequence[str | None]
) -> list[tuple[str, list[str]]]:
    """(context suffix, continuations) per item for ``loglik-letter``: the answer prefix (or
    :data:`PLAIN_ANSWER_CUE` when the item has none) and one `` <letter>`` per option."""
    return [
        (
            prefix if prefix is not None else PLAIN_ANSWER_CUE,
            [f" {LETTERS[j]}" for j in range(len(it.choices))],
        )
        for it, prefix in zip(items, prefixes)
    ]


def text_items(items: Sequence[Any], benchmark: str) -> list:
    """Items whose prompt is lm-eval's ``Question: <question>\\nAnswer:`` (``loglik-text``); the
    question without its options comes from ``metadata["question"]``."""
    out = []
    for it in items:
        question = (getattr(it, "metadata", None) or {}).get("question")
        if question is None:
            raise ValueError(
                f"scoring='loglik-text' needs each item's question apart from its options "
                f"(metadata['question']); {benchmark} item {it.id} has none: "
                "use scoring='loglik-letter'"
            )
        out.append(replace(it, prompt=f"Question: {question.strip()}\nAnswer:"))
    return out


@torch.no_grad()
def option_logliks(
    model,
    prompts: Sequence[str],
    suffixes: Sequence[str],
    options: Sequence[Sequence[str]],
    chat: bool | None = False,
    max_batch_tokens: int = 8192,
    fwd_hooks: Sequence[tuple[str, Any]] = (),
) -> list[np.ndarray]:
    """Summed log-probability of each option's tokens after ``prompt`` + ``suffix``: one
    Float[ndarray, "option"] per item.

    ``chat=False`` (the default) scores the text as it is, as lm-evaluation-harness's ``hf`` model
    does (:func:`lm_eval_logliks`); ``True`` shows ``prompt`` through the tokenizer's chat template
    (the user's turn, the assistant's opened) before ``suffix``; ``None`` does so when the tokenizer
    has a template.

    Rows of every (item, option) pair run teacher-forced in right-padded batches of at most
    ``max_batch_tokens`` padded tokens (causal attention: a row's logits do not see its padding)."""
    if not (len(prompts) == len(suffixes) == len(options)):
        raise ValueError("prompts, suffixes and options must pair up")
    tok = model.tokenizer
    chat = use_chat(tok, chat)
    rows: list[tuple[int, int, list[int], int]] = []  # (item, option, ids, n_context)
    for i, (p, s, opts) in enumerate(zip(prompts, suffixes, options)):
        context = prompt_text(tok, p, chat) + s
        head = encode(tok, context)
        for j, o in enumerate(opts):
            ids = encode(tok, context + o)
            if len(ids) <= len(head) or ids[: len(head)] != head:
                # the option merged into the context's last token: score its ids past the shared
                # prefix
                shared = next(
                    (k for k, (a, b) in enumerate(zip(ids, head)) if a != b),
                    min(len(ids), len(head)),
                )
                rows.append((i, j, ids, max(shared, 1)))
            else:
                rows.append((i, j, ids, len(head)))
    n_ctx = int(model.cfg.n_ctx)
    long = [r for r in rows if len(r[2]) > n_ctx]
    if long:  # as generation does: the context loses its left end (the question sits at its end)
        warnings.warn(
            f"{len(long)} of {len(rows)} context + option rows exceed the model's context "
            f"({n_ctx} tokens): "
            "cut from the left",
            stacklevel=2,
        )
        rows = [
            (i, j, ids[len(ids) - n_ctx :], n - (len(ids) - n_ctx))
            if len(ids) > n_ctx
            else (i, j, ids, n)
            for i, j, ids, n in rows
        ]
        if any(n < 1 for *_, n in rows):
            raise ValueError(f"an option alone is longer than the model's context ({n_ctx} tokens)")
    out = [np.full(len(o), -np.inf) for o in options]
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    for batch in token_budget_batches([len(r[2]) for r in rows], max_batch_tokens):
        width = max(len(rows[b][2]) for b in batch)
        tokens = torch.full((len(batch), width), int(pad), dtype=torch.long)
        for r, b in enumerate(batch):
            tokens[r, : len(rows[b][2])] = torch.tensor(rows[b][2])
        with tl.hooks(model, fwd_hooks):
            logp = (
                model(tokens.to(model.cfg.device), return_type="logits")
                .float()
                .log_softmax(-1)
                .cpu()
            )
        for r, b in enumerate(batch):
            i, j, ids, n = rows[b]
            target = torch.tensor(ids[n:])
            out[i][j] = float(logp[r, n - 1 : len(ids) - 1].gather(-1, target[:, None]).sum())
    return out


def lm_eval_logliks(
    model,
    contexts: Sequence[str],
    continuations: Sequence[Sequence[str]],
    max_batch_tokens: int = 8192,
) -> list[np.ndarray]:
    """lm-evaluation-harness's ``multiple_choice`` log-likelihoods, as its ``hf`` model computes
    them (no chat template, the model's own tokenizer): the summed log-probability of each
    continuation after its context, one Float[ndarray, "option"] per context. ``loglik-text``
    without a chat template is this with ``contexts`` "Question: <question>\\nAnswer:" and
    ``continuations`` " <option text>". As lm-eval does, whitespace ending a context is moved to
    the front of its continuations (a word keeps its leading space)."""
    if len(contexts) != len(continuations):
        raise ValueError("contexts and continuations must pair up")
    stripped = [c.rstrip() for c in contexts]
    moved = [
        [c[len(s) :] + o for o in opts] for c, s, opts in zip(contexts, stripped, continuations)
    ]
    return option_logliks(
        model,
        stripped,
        [""] * len(contexts),
        moved,
        chat=False,
        max_batch_tokens=max_batch_tokens,
    )
