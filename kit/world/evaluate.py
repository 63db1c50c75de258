"""Batched prompts, exact-match scoring and greedy responses for world models.

Padding convention: RIGHT padding. ``prompt_tokens`` returns ``<bos> prompt`` ids padded with
``<pad>`` (id 0) on the right, plus each row's length. Because attention is causal and position
embeddings count from the left, the logits at ``lengths - 1`` are exactly those of the unpadded
prompt: no attention mask is needed for next-token scoring. Generation of more than one token
runs per group of equal-length prompts (no padding at all inside a group).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Sequence

import numpy as np
import torch

from kit.data.items import Item
from kit.world.tokenizer import BOS_ID, EOS_ID, pad_right


def _vocab_of(model) -> dict[str, int]:
    if getattr(model, "tokenizer", None) is None:
        raise ValueError("model.tokenizer is None: load world models with kit.world.load_member")
    return model.tokenizer.get_vocab()


def _ids(words: str, vocab: dict[str, int], what: str) -> list[int]:
    try:
        return [vocab[w] for w in words.split()]
    except KeyError:
        unknown = sorted({w for w in words.split() if w not in vocab})
        raise ValueError(f"{what} has words outside the model's vocabulary: {unknown}") from None


def prompt_tokens(model, items: Sequence[Item]) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded ``<bos> prompt`` ids.

    Returns (tokens Int[Tensor, "batch pos"], lengths Int[Tensor, "batch"]); row i's last
    prompt token sits at ``tokens[i, lengths[i] - 1]``; padding is ``<pad>`` (id 0).
    """
    vocab = _vocab_of(model)
    seqs = [[BOS_ID, *_ids(it.prompt, vocab, f"item {it.id} prompt")] for it in items]
    tokens, lengths = pad_right(seqs)
    return tokens.to(model.cfg.device), lengths.to(model.cfg.device)


def target_ids(model, items: Sequence[Item]) -> torch.Tensor:
    """Int[Tensor, "batch"]: the single-token id of each item's target (answer or letter)."""
    vocab = _vocab_of(model)
    out = []
    for it in items:
        ids = _ids(it.target, vocab, f"item {it.id} target")
        if len(ids) != 1:
            raise ValueError(f"item {it.id}: target {it.target!r} is not a single token")
        out.append(ids[0])
    return torch.tensor(out, dtype=torch.long)


@torch.inference_mode()
def last_logits(model, items: Sequence[Item], batch_size: int = 64) -> torch.Tensor:
    """Float[Tensor, "batch d_vocab"]: logits at each prompt's last position (fp32)."""
    chunks = []
    for start in range(0, len(items), batch_size):
        tokens, lengths = prompt_tokens(model, items[start : start + batch_size])
        logits = model(tokens, return_type="logits")
        chunks.append(logits[torch.arange(len(lengths)), lengths - 1].float().cpu())
    return torch.cat(chunks) if chunks else torch.zeros(0, model.cfg.d_vocab)


def _n_target_tokens(items: Sequence[Item]) -> list[int]:
    return [len(it.target.split()) for it in items]


@torch.inference_mode()
def answer_logits(model, items: Sequence[Item], batch_size: int = 64) -> list[torch.Tensor]:
    """Teacher-forced logits at each answer position: one Float[Tensor, "n_answer d_vocab"] per
    item (row j predicts answer token j from ``<bos> prompt answer[:j]``), fp32, right padded."""
    vocab = _vocab_of(model)
    out: list[torch.Tensor] = []
    for start in range(0, len(items), batch_size):
        chunk = items[start : start + batch_size]
        seqs, spans = [], []
        for it in chunk:
            p = [BOS_ID, *_ids(it.prompt, vocab, f"item {it.id} prompt")]
            a = _ids(it.target, vocab, f"item {it.id} target")
            seqs.append(p + a[:-1])
            spans.append((len(p) - 1, len(a)))
        tokens, _ = pad_right(seqs)
        logits = model(tokens.to(model.cfg.device), return_type="logits").float().cpu()
        out += [logits[i, s : s + n] for i, (s, n) in enumerate(spans)]
    return out


def evaluate(model, items: Sequence[Item], batch_size: int = 64) -> np.ndarray:
    """Bool[ndarray, "batch"]: exact match of the greedy answer with each item's target.

    One-token targets: the greedy next token at the last prompt position. Multi-token targets
    (:data:`kit.world.tasks.EXTRA_TASKS`): every answer token is the argmax given the prompt and
    the answer's previous tokens (teacher forcing), which holds exactly when greedy generation of
    ``len(answer)`` tokens reproduces the answer."""
    if len(items) == 0:
        return np.zeros(0, dtype=bool)
    if batch_size < 1:
        raise ValueError(f"batch_size={batch_size} must be >= 1")
    was_training = model.training
    model.eval()
    lens = _n_target_tokens(items)
    if all(n == 1 for n in lens):
        pred = last_logits(model, items, batch_size).argmax(-1)
        model.train(was_training)
        return (pred == target_ids(model, items)).numpy()
    vocab = _vocab_of(model)
    out = np.zeros(len(items), dtype=bool)
    for it_i, (it, lg) in enumerate(zip(items, answer_logits(model, items, batch_size))):
        want = torch.tensor(_ids(it.target, vocab, f"item {it.id} target"))
        out[it_i] = bool((lg.argmax(-1) == want).all())
    model.train(was_training)
    return out


def token_accuracy(model, items: Sequence[Item], batch_size: int = 64) -> np.ndarray:
    """Float[ndarray, "batch"]: share of each item's answer tokens that are the teacher-forced
    argmax (partial credit for multi-token answers; equals :func:`evaluate` for one token)."""
    if batch_size < 1:
        raise ValueError(f"batch_size={batch_size} must be >= 1")
    vocab = _vocab_of(model)
    was_training = model.training
    model.eval()
    out = np.array(
        [
            float(
                (lg.argmax(-1) == torch.tensor(_ids(it.target, vocab, f"item {it.id} target")))
                .float()
                .mean()
            )
            for it, lg in zip(items, answer_logits(model, items, batch_size))
        ]
    )
    model.train(was_training)
    return out


@torch.inference_mode()
def respond(model, items: Sequence[Item], max_new_tokens: int = 1) -> list[str]:
    """Greedy responses (decoded words joined by spaces, stopping at ``<eos>``), one per item."""
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens={max_new_tokens} must be >= 1")
    model.eval()
    vocab = _vocab_of(model)
    by_len: dict[int, list[int]] = defaultdict(list)
    seqs = [[BOS_ID, *_ids(it.prompt, vocab, f"item {it.id} prompt")] for it in items]
    for i, s in enumerate(seqs):
        by_len[len(s)].append(i)
    out: list[str] = [""] * len(items)
    for idx in by_len.values():
        for start in range(0, len(idx), 64):
            rows = idx[start : start + 64]
            toks = torch.tensor([seqs[i] for i in rows], device=model.cfg.device)
            done = torch.zeros(len(rows), dtype=torch.bool, device=toks.device)
            new: list[torch.Tensor] = []
            for _ in range(max_new_tokens):
                nxt = model(toks, return_type="logits")[:, -1].argmax(-1)
                nxt = torch.where(done, torch.full_like(nxt, EOS_ID), nxt)
                new.append(nxt)
                done |= nxt == EOS_ID
                if bool(done.all()):
                    break
                toks = torch.cat([toks, nxt[:, None]], dim=1)
            gen = torch.stack(new, 1).cpu().tolist()
            for r, ids in zip(rows, gen):
                words = []
                for t in ids:
                    if t == EOS_ID:
                        break
                    words.append(model.tokenizer.convert_ids_to_tokens(t))
                out[r] = " ".join(words)
    return out
