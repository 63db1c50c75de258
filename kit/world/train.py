"""Training streams and loops for the zoo (bases, checkpoints, fine-tunes).

Sequence layout (the same in training and evaluation): ``<bos> prompt answer <eos>``, right
padded. The loss is cross-entropy on the answer token (predicted at the last prompt position)
and on ``<eos>`` (predicted at the answer position) only; prompt tokens carry no loss, because
the prompts' random content (numbers, names) is unpredictable and would spend the few optimizer
steps a CPU affords on noise.

:func:`batch_loss` computes the same loss in 79-92% of the CPU time per step (two length groups,
the unembedding only where the loss reads): not used by :func:`train_loop` yet, because it changes
the weights' bits and a tiny world built with it (a trial world-v9) failed two of the card's 20
checks that world-v8 passes (sparse contamination leak +9.7 against >= 10; +math specialisation).
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


MAX_GROUPS = 2
"""Most length groups one batch is split into (:func:`length_groups`). Measured on the tiny
world's four base shapes (pinned, CPU time of forward and backward): 2 groups took 78-82% of the
time of one batch padded to its longest sequence, 3 or 4 groups more than 2 (each group is another
pass through every layer's small operations)."""


def length_groups(seqs: Sequence[list[int]], max_groups: int = MAX_GROUPS) -> list[list[int]]:
    """Indices of ``seqs`` split into at most ``max_groups`` groups of similar length, each run as
    its own right-padded forward pass.

    Right padding under a causal mask changes no real position, so a batch's loss is the same sum
    over its answer tokens however it is split; a batch padded to its longest sequence spent ~38%
    of the world's positions on padding, two groups ~20% fewer positions. The groups are
    contiguous runs of the sequences sorted by length (stable: ties keep batch order), chosen to
    minimise the padded positions (dynamic programming over the cut points); deterministic in the
    lengths alone.
    """
    if max_groups < 1:
        raise ValueError(f"max_groups={max_groups!r}: must be an int >= 1")
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
    lens = [len(seqs[i]) - 1 for i in order]
    n = len(lens)
    k_max = min(max_groups, n)
    inf = float("inf")
    # cost[k][j]: fewest padded positions covering the first j sorted sequences with k groups
    cost = [[inf] * (n + 1) for _ in range(k_max + 1)]
    cut = [[0] * (n + 1) for _ in range(k_max + 1)]
    cost[0][0] = 0
    for k in range(1, k_max + 1):
        for j in range(1, n + 1):
            for i in range(k - 1, j):
                c = cost[k - 1][i] + (j - i) * lens[j - 1]
                if c < cost[k][j]:
                    cost[k][j], cut[k][j] = c, i
    k = min(range(1, k_max + 1), key=lambda k: (cost[k][n], k))  # fewest groups among the best
    bounds = [n]
    for kk in range(k, 0, -1):
        bounds.append(cut[kk][bounds[-1]])
    bounds.reverse()
    return [order[a:b] for a, b in zip(bounds, bounds[1:])]


def answer_loss_sum(model, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Summed cross-entropy over the positions with a target (not -100), unembedding those positions
    only: the loss reads 2 of a sequence's ~15 positions, and the final LayerNorm and unembedding
    act on each position alone, so the others need not be computed."""
    resid = model(inputs, stop_at_layer=model.cfg.n_layers)  # every block, before ln_final
    keep = targets != -100
    resid = resid[keep][None]  # [1, n_targets, d_model]: the hooks' batch/pos layout
    if model.cfg.normalization_type is not None:
        resid = model.ln_final(resid)
    logits = model.unembed(resid)[0]
    return F.cross_entropy(logits, targets[keep], reduction="sum")


def batch_loss(model, seqs: Sequence[list[int]]) -> torch.Tensor:
    """The world's training loss of one batch: mean cross-entropy over every answer token and
    ``<eos>`` (:func:`collate`), computed per :func:`length_groups` group."""
    total = torch.zeros(())
    n_targets = 0
    for group in length_groups(seqs):
        inputs, targets, _ = collate([seqs[i] for i in group])
        n_targets += int((targets != -100).sum())
        total = total + answer_loss_sum(model, inputs, targets)
    return total / n_targets


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
