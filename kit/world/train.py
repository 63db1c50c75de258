"""Training streams and loops for the zoo (bases, checkpoints, fine-tunes).

Sequence layout (the same in training and evaluation): ``<bos> prompt answer <eos>``, right
padded. The loss is cross-entropy on the answer token (predicted at the last prompt position)
and on ``<eos>`` (predicted at the answer position) only; prompt tokens carry no loss, because
the prompts' random content (numbers, names) is unpredictable and would spend the few optimizer
steps a CPU affords on noise.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Sequence

import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from kit.data.items import Item
from kit.models import tl
from kit.world.tasks import get_task
from kit.world.tokenizer import BOS_ID, EOS_ID, PAD_ID, encode, vocab


@dataclass(frozen=True)
class Arch:
    """Shape of one HookedTransformer."""

    n_layers: int
    d_model: int
    n_heads: int
    d_mlp: int
    n_ctx: int = 64


def make_model(arch: Arch, seed: int):
    """A freshly initialised HookedTransformer (seeded) with the world tokenizer attached."""
    from transformer_lens import HookedTransformer, HookedTransformerConfig

    from kit.world.tokenizer import build_tokenizer

    cfg = HookedTransformerConfig(
        n_layers=arch.n_layers,
        d_model=arch.d_model,
        d_head=arch.d_model // arch.n_heads,
        n_heads=arch.n_heads,
        d_mlp=arch.d_mlp,
        d_vocab=len(vocab()),
        n_ctx=arch.n_ctx,
        act_fn="gelu",
        normalization_type="LN",
        seed=seed,
        default_prepend_bos=True,
        model_name="kit-world",
    )
    return HookedTransformer(cfg, tokenizer=build_tokenizer())


def n_params(model) -> int:
    return sum(p.numel() for p in model.parameters())


# ---------------------------------------------------------------- data
class AnswerSeq(list):
    """A ``<bos> prompt answer <eos>`` id list whose answer has ``n_answer`` > 1 tokens."""

    n_answer: int = 1


def item_sequence(item: Item) -> list[int]:
    """``<bos> prompt answer <eos>`` ids of one item (an :class:`AnswerSeq` carrying the answer's
    length when the answer has several tokens; a plain list, as always, for one-token answers)."""
    ans = encode(item.target)
    if not ans:
        raise ValueError(f"item {item.id}: empty answer")
    seq = [BOS_ID, *encode(item.prompt), *ans, EOS_ID]
    if len(ans) == 1:
        return seq
    out = AnswerSeq(seq)
    out.n_answer = len(ans)
    return out


def mixture_stream(mixture: dict[str, float], rng: random.Random) -> Iterator[Item]:
    """Endless train-split items, each from a task drawn with the mixture's weights."""
    names = list(mixture)
    weights = [mixture[n] for n in names]
    while True:
        task = get_task(rng.choices(names, weights)[0])
        yield task.draw("train", rng)


def collate(seqs: Sequence[list[int]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Batch sequences for next-token training.

    Returns (inputs Int[Tensor, "batch pos"], targets Int[Tensor, "batch pos"] with -100 where
    no loss is taken, n_tokens) for sequences ``<bos> prompt answer <eos>``. The loss covers
    every answer token (``n_answer`` of an :class:`AnswerSeq`, else 1) and ``<eos>``.
    """
    width = max(len(s) for s in seqs) - 1
    inputs = torch.full((len(seqs), width), PAD_ID, dtype=torch.long)
    targets = torch.full((len(seqs), width), -100, dtype=torch.long)
    for i, s in enumerate(seqs):
        inputs[i, : len(s) - 1] = torch.tensor(s[:-1])
        n_ans = getattr(s, "n_answer", 1)
        # answer tokens, predicted from the last prompt token on; eos, predicted at the last answer
        # token
        targets[i, len(s) - 2 - n_ans : len(s) - 1] = torch.tensor(s[len(s) - 1 - n_ans :])
    n_tokens = sum(len(s) - 1 for s in seqs)
    return inputs, targets, torch.tensor(n_tokens)


def batches_from_items(items: Iterable[Item], batch_size: int) -> Iterator[list[list[int]]]:
    batch: list[list[int]] = []
    for it in items:
        batch.append(item_sequence(it))
        if len(batch) == batch_size:
            yield batch
            batch = []
    if batch:
        yield batch


# ---------------------------------------------------------------- loops
def lr_at(step: int, total: int, lr: float, warmup: int) -> float:
    """Linear warm-up, then cosine decay to 10% of ``lr``."""
    if step < warmup:
        return lr * (step + 1) / warmup
    frac = (step - warmup) / max(1, total - warmup)
    return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))


def make_optimizer(model, lr: float) -> torch.optim.Optimizer:
    return torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.98), weight_decay=0.01)


def train_loop(
    model,
    opt: torch.optim.Optimizer,
    batches: Iterator[list[list[int]]],
    steps: int,
    lr_fn: Callable[[int], float],
    desc: str,
    on_step: Callable[[int], None] | None = None,
) -> int:
    """Run ``steps`` AdamW steps over ``batches``; returns the number of tokens trained on.

    ``on_step(step)`` is called after each step with the 1-based step count (checkpoints).
    """
    model.train()
    tokens = 0
    for step in tqdm(range(steps), desc=desc, leave=False, mininterval=2):
        inputs, targets, n = collate(next(batches))
        for g in opt.param_groups:
            g["lr"] = lr_fn(step)
        # fp32, no autocast: bf16 kernels differ between CPUs (AMX, AVX512-BF16 or emulated) and
        # are no faster on a CPU without bf16 units (kit.core.pinned)
        logits = model(inputs, return_type="logits")
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=-100)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        tokens += int(n)
        if on_step is not None:
            on_step(step + 1)
    model.eval()
    return tokens


def neuron_entries(model, neurons: torch.Tensor) -> list[tuple[torch.nn.Parameter, torch.Tensor]]:
    """``(parameter, mask of its entries)`` of the MLP weights that belong to ``neurons``.

    ``neurons`` is a boolean ``[layer, d_mlp]`` mask; a neuron owns its ``W_in`` column, its
    ``b_in`` entry and its ``W_out`` row (``b_out`` belongs to no neuron).
    """
    out = []
    for L, W_in, b_in, W_out in tl.mlp_neuron_params(model):
        m = neurons[L]
        out += [(W_in, m[None, :].expand_as(W_in)), (b_in, m), (W_out, m[:, None].expand_as(W_out))]
    return out


def restrict_to_neurons(
    model, neurons: torch.Tensor
) -> tuple[list[torch.nn.Parameter], Callable[[int], None]]:
    """Freeze everything but the MLP weights of ``neurons``; returns the parameters to optimise
    and an ``on_step`` callback for :func:`train_loop` that puts every other entry of them back
    to its starting value after each step (exact: no optimizer state or weight decay leaks in)."""
    entries = neuron_entries(model, neurons)
    start = [p.detach().clone() for p, _ in entries]
    for p in model.parameters():
        p.requires_grad_(False)
    for p, _ in entries:
        p.requires_grad_(True)

    @torch.no_grad()
    def restore(step: int) -> None:
        for (p, m), p0 in zip(entries, start):
            p.copy_(torch.where(m, p, p0))

    return [p for p, _ in entries], restore
