"""The item sets of notebook 03 (seed 001) tokenised for one model: a tiny-world task or a real
benchmark (:func:`study_items`, over :func:`kit.subjects.task_items`), the trustworthy reference
items (:func:`reference_items`), their right-padded prompts and targets (:class:`TaskData`) and the
notebook's decoding. Real models' free-text responses are scored by :func:`kit.data.scorers.score`
(the benchmark read from each item's id: :func:`kit.subjects.benchmark_of`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch
from jaxtyping import Int
from torch import Tensor

from kit.models.finetune_examples import asked
from kit.subjects import is_world_task, subject_of

if TYPE_CHECKING:
    from kit.models.generate import GenerationSettings


@dataclass
class TaskData:
    """Right-padded prompts of one benchmark split, tokenised for one model family."""

    tokens: Int[Tensor, "batch pos"]
    lengths: Int[Tensor, "batch"]  # noqa: F821 (jaxtyping shape name)
    targets: list[list[int]]
    n: int
    items: list | None = None
    """Set for free-text benchmarks (real models): responses are decoded and scored as text
    (:func:`kit.data.scorers.score`) instead of comparing the first target ids."""
    decoding: "GenerationSettings | None" = None
    """How answers to these prompts are generated (:func:`generation_kwargs`): sampling settings and
    whether the chat template wrapped the prompts (``chat`` resolved to True/False); None = greedy,
    raw prompts (tiny-world models)."""
    clusters: np.ndarray | None = None
    """Content label per item when some items share a content (:func:`content_clusters`), so a
    bootstrap resamples contents, not renderings; None: every item its own content."""


def content_clusters(items) -> np.ndarray | None:
    """Per item its content (a tiny-world item's ``metadata["content"]``, else its id) when two or
    more items share one; None when every item is its own content (items are then the units)."""
    labels = [
        str(getattr(it, "metadata", {}).get("content", getattr(it, "id", i)))
        for i, it in enumerate(items)
    ]
    return np.asarray(labels) if len(set(labels)) < len(labels) else None


def is_world(model) -> bool:
    """Whether ``model`` is asked the tiny world's way (one-token answers, argmax first token): its
    subject (:func:`kit.subjects.subject_of`) is a :class:`kit.world.WorldSubject`, decided by
    the vocabulary it speaks, not by its name. A model that is neither a world model nor loaded from
    a Hugging Face directory (a test's bare model) is asked as free text through its tokenizer."""
    from kit.world import WorldSubject  # lazy: the world package loads its vocabulary

    try:
        return isinstance(subject_of(model), WorldSubject)
    except ValueError:
        return False


def decoding_settings(cfg) -> "GenerationSettings":
    """Notebook 03's decoding from its config (``decoding``, ``temperature``, ``top_k``,
    ``generation_seed``, ``chat``, ``max_new_tokens``;
    :class:`kit.models.generate.GenerationSettings`)."""
    from kit.models.generate import GenerationSettings

    if cfg.decoding not in ("greedy", "sample"):
        raise ValueError(f"decoding={cfg.decoding!r}; allowed values: greedy, sample")
    seed = cfg.seed if cfg.generation_seed is None else cfg.generation_seed
    return GenerationSettings(
        max_new_tokens=cfg.max_new_tokens,
        do_sample=cfg.decoding == "sample",
        temperature=cfg.temperature,
        top_k=cfg.top_k,
        seed=seed,
        chat=cfg.chat,
    )


def generation_kwargs(data: "TaskData") -> dict:
    """``group_patched_generate`` keyword arguments of ``data.decoding`` (greedy when None)."""
    d = data.decoding
    if d is None or not d.do_sample:
        return {}
    return dict(
        do_sample=True,
        temperature=d.temperature,
        top_k=d.top_k or None,
        top_p=None if d.top_p >= 1 else d.top_p,
        seed=d.seed,
    )


def study_items(task: str, split: str, n: int, seed: int = 0) -> list:
    """Items of notebook 03's item sets: :func:`kit.subjects.task_items`, with a tiny-world
    ``fresh`` split giving one item per content (correlated re-renderings of a content are not
    independent evidence for Ref's bootstrap). Real benchmarks have no ``fresh`` split: see
    :func:`reference_items`."""
    from kit.subjects import task_items

    if split.startswith("fresh") and not is_world_task(task):
        raise ValueError(
            f"{task} has no 'fresh' split: its never-seen reference items must come from another "
            "benchmark or split (reference_items, ref_task / ref_split)"
        )
    try:
        return task_items(task, split, n, seed, one_per_content=split.startswith("fresh"))
    except ValueError as e:
        if "distinct" in str(e):  # name the fields that ask for that many
            raise ValueError(f"{e} (n_ref, n_format, or the transfer tasks' n_eval)") from None
        raise


def reference_items(
    task: str, n: int, ref_task: str | None = None, ref_split: str = "test", seed: int = 0
):
    """The items whose accuracy is Ref, the trustworthy reference score (seed 001, section 4.4).

    Ref must be measured on items no variant saw, or it is inflated exactly as Ori is:
    ``ref_task=None`` takes a tiny-world task's ``fresh`` split (items no fine-tune trained on); a
    real benchmark needs ``ref_task`` (+ ``ref_split``), another benchmark or split (the paper: a
    fresh set of OpenMathInstruct-2 questions; offline, e.g. ``mawps``). ``ref_task == task`` on
    the ``test`` split is refused: those are the evaluated, contaminated items.
    """
    if ref_task is None:
        if is_world_task(task):
            return study_items(task, "fresh", n, seed)
        raise ValueError(
            f"ref_task is required for the real benchmark task={task!r}: Ref is the accuracy on "
            "items no variant saw (the paper: OpenMathInstruct-2), never the test items; set "
            "ref_task to another benchmark (e.g. mawps, svamp, asdiv for GSM8K) or ref_split to a "
            "split no variant trained on"
        )
    if ref_task == task and ref_split == "test":
        raise ValueError(
            f"ref_task={ref_task!r} with ref_split='test' is the evaluated test set: Ref would "
            "equal Ori. Choose another benchmark or a split no variant trained on"
        )
    return study_items(ref_task, ref_split, n, seed)


def side_task_items(cfg, task: str) -> list:
    """Items of a side task (Table 3), asked like the test items: the benchmark's first
    ``cfg.n_side`` test items (:func:`study_items`), with the real fine-tunes' prompt when
    ``cfg.items_of`` names one (:func:`asked`)."""
    items = study_items(task, "test", cfg.n_side, seed=cfg.seed)
    if getattr(cfg, "items_of", None):
        from kit.models.recipes import recipe

        return asked(items, recipe(cfg.items_of).prompt_style)
    return items


def task_data(
    model, items, max_new_tokens: int = 0, decoding: "GenerationSettings | None" = None
) -> TaskData:
    """Tokenise ``items`` for ``model``: world models (:func:`is_world`) through
    ``kit.world.prompt_tokens`` (one-token answers), other models through their tokenizer (answer
    ids without BOS, right padding).

    ``decoding`` (:func:`decoding_settings`) travels with the data to every generation on it; its
    ``chat`` wraps each prompt in the tokenizer's chat template (None: when the tokenizer has one).
    ``decoding=None``: greedy on the raw prompts. World models accept only greedy decoding without
    chat.

    A prompt longer than the context minus ``max_new_tokens`` (the room its answer needs) keeps its
    first token (BOS) and its last tokens, with a warning: the question sits at a prompt's end."""
    if not items:
        raise ValueError("no items: the benchmark split is empty")
    if is_world(model):
        from kit.world import (  # lazy: the world package loads its vocabulary
            prompt_tokens,
            target_ids,
        )

        if decoding is not None and (decoding.do_sample or decoding.chat):
            raise ValueError(
                "decoding: tiny-world models are scored by the world's evaluation (argmax first "
                "token, raw prompts); allowed on them: decoding='greedy' with chat None or False"
            )
        tokens, lengths = prompt_tokens(model, items)
        return TaskData(
            tokens,
            lengths,
            [[int(t)] for t in target_ids(model, items)],
            len(items),
            clusters=content_clusters(items),
        )
    tok = model.tokenizer
    chat = False
    if decoding is not None:
        from dataclasses import replace as _replace

        from kit.models.generate import encode, prompt_text, use_chat

        chat = use_chat(tok, decoding.chat)
        decoding = _replace(decoding, chat=chat)
    if chat:  # the template writes BOS itself when it has one (encode adds no second one)
        assert decoding is not None  # chat is only set from a decoding
        seqs = [
            encode(tok, prompt_text(tok, it.prompt, True, decoding.system_prompt)) for it in items
        ]
    else:
        seqs = [model.to_tokens(it.prompt, prepend_bos=True)[0].tolist() for it in items]
    limit = model.cfg.n_ctx - max_new_tokens
    if limit < 2:
        raise ValueError(
            f"max_new_tokens={max_new_tokens} leaves no room for a prompt in the context of "
            f"{model.cfg.n_ctx} tokens; allowed: max_new_tokens <= {model.cfg.n_ctx - 2}"
        )
    long = [i for i, q in enumerate(seqs) if len(q) > limit]
    if long:
        import warnings

        warnings.warn(
            f"{len(long)} of {len(seqs)} prompts are longer than the context ({model.cfg.n_ctx}) "
            f"minus max_new_tokens ({max_new_tokens}): truncated to their first and last "
            f"{limit - 1} tokens",
            stacklevel=2,
        )
        seqs = [q[:1] + q[len(q) - limit + 1 :] if i in long else q for i, q in enumerate(seqs)]
    lengths = torch.tensor([len(s) for s in seqs])
    tokens = torch.full((len(seqs), int(lengths.max())), tok.pad_token_id or 0, dtype=torch.long)
    for i, s in enumerate(seqs):
        tokens[i, : len(s)] = torch.tensor(s)
    # a raw prompt's answer follows a space; a chat turn's starts the assistant's message itself
    targets = [
        tok.encode(("" if chat else " ") + it.target, add_special_tokens=False) for it in items
    ]
    return TaskData(
        tokens,
        lengths,
        targets,
        len(items),
        items=list(items),
        decoding=decoding,
        clusters=content_clusters(items),
    )
