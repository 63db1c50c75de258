"""Per (neuron set, prompt) results of patched runs, cached by content: a rerun of notebook 03 on
real models asks the cache instead of the models.

Notebook 03 asks the same question many times: Ori and TE of every Table 2 row, the causal scores
of every group, the located set beside its random sets. On a real model every answer is a forward of
a 100-token prompt; in the tiny world it costs nothing. So greedy answers to free-text benchmark
items (``TaskData.items``) are kept per (model, donor, neuron set, prompt) in a
:class:`kit.models.cache.ItemCache`, whose key holds:

- the patched model's and the donor's identity by content
  (:func:`kit.models.identity.model_identity`: their files' hashes), their dtypes, and what is
  cached (``what``) with its settings;
- the patching code (:func:`kit.models.identity.code_identity` of this package's patching module and
  the TransformerLens adapter): a changed patch never reads the numbers of the old one.

A record's id is a digest of its neuron set (sorted: a set, not a list) and of the prompt's token
ids (with the target's, where the value depends on it), so a record answers exactly the question it
was made for, whichever item list it came with. A model known only by a name (a hub id, a
tiny-world ``extra/`` fine-tune) is never cached: its name could mean other weights tomorrow; one
loaded from a directory (a real model, a saved random twin) is known by its files. Sampled answers
are not cached either: a seeded sample depends on its batch.

Every record carries the digest of its value (:class:`kit.models.cache.ItemCache`), and every value
read is checked against what was asked (:func:`responses_check`, :func:`first_token_check`: token
ids of this vocabulary, at most the asked length, a log-probability <= 0): a changed or impossible
record is warned about, naming the file, and recomputed.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Callable, Sequence

import torch

from kit.core.cached import Check
from kit.models.cache import ItemCache
from kit.models.identity import cache_identity, code_identity
from kit.shortcut.items import TaskData, generation_kwargs
from kit.shortcut.patching import Neuron

Compute = Callable[[list[int], list[int]], list[list[Any]]]
"""``compute(set indices, prompt indices)`` -> values, ``[set][prompt]`` in the order given."""

CODE = ("kit.shortcut.patching", "kit.models.tl")
"""The modules whose source is part of every key (what decides a patched answer)."""


def _token_ids(value: Any, d_vocab: int) -> str | None:
    if not isinstance(value, list) or not all(type(t) is int for t in value):
        return "not a list of token ids"
    if value and not (0 <= min(value) and max(value) < d_vocab):
        return f"token id outside [0, {d_vocab}) (this model's vocabulary)"
    return None


def responses_check(d_vocab: int, n_new: int) -> Check:
    """The check of a cached patched response: at most ``n_new`` token ids in ``[0, d_vocab)``
    (fewer when every row stopped early)."""

    def check(value: Any) -> str | None:
        why = _token_ids(value, d_vocab)
        if why is None and len(value) > n_new:
            return f"{len(value)} tokens, asked for {n_new}"
        return why

    return check


def first_token_check(d_vocab: int) -> Check:
    """The check of a cached first-token value: ``[log-probability <= 0, token id in [0,
    d_vocab)]``."""

    def check(value: Any) -> str | None:
        if not (isinstance(value, list) and len(value) == 2 and isinstance(value[0], float)):
            return "not [log-probability, token id]"
        if not value[0] <= 0.0:
            return f"log-probability {value[0]} > 0"
        return _token_ids([value[1]], d_vocab)

    return check


def content_identity(model) -> str | None:
    """:func:`kit.models.identity.cache_identity` of ``model``; ``"none"`` for no model."""
    return "none" if model is None else cache_identity(model)


def set_digest(neurons: Sequence[Neuron]) -> str:
    """A 16-hex digest of a neuron set (order and repeats do not matter)."""
    canon = sorted({(int(L), int(i)) for L, i in neurons})
    return hashlib.sha256(json.dumps(canon).encode()).hexdigest()[:16]


def prompt_digests(data: TaskData, with_target: bool = False) -> list[str]:
    """Per prompt a 16-hex digest of its token ids (and its target's, ``with_target``)."""
    out = []
    for p, n in enumerate(data.lengths.tolist()):
        key: list[Any] = [data.tokens[p, :n].tolist()]
        if with_target:
            key.append(list(map(int, data.targets[p])))
        out.append(hashlib.sha256(json.dumps(key).encode()).hexdigest()[:16])
    return out


def subset(data: TaskData, idx: Sequence[int]) -> TaskData:
    """The prompts ``idx`` of ``data`` (same decoding; clusters dropped: a subset is for asking,
    not for intervals)."""
    ix = torch.as_tensor(list(idx), dtype=torch.long)
    items = [data.items[i] for i in idx] if data.items is not None else None
    return TaskData(
        tokens=data.tokens[ix],
        lengths=data.lengths[ix],
        targets=[data.targets[i] for i in idx],
        n=len(idx),
        items=items,
        decoding=data.decoding,
    )


def item_cache(
    model, base, data: TaskData, what: str, settings: dict[str, Any]
) -> ItemCache | None:
    """The cache of ``what`` for (``model`` patched from ``base``) on ``data``'s benchmark, or
    None when the answers must be computed: a model known by name only, sampled decoding, or
    prompts without benchmark items (the tiny world's token path, which costs nothing)."""
    if data.items is None or generation_kwargs(data):
        return None
    ident, donor = content_identity(model), content_identity(base)
    if ident is None or donor is None:
        return None
    key = {
        **settings,
        "donor": donor,
        "dtype": str(model.cfg.dtype),
        "donor_dtype": str(base.cfg.dtype) if base is not None else None,
        "code": code_identity(CODE, f"torch {torch.__version__}"),
    }
    name = str(getattr(model, "kit_name", "model"))
    return ItemCache(name, f"patched-{what}", key, identity=ident)


def per_set_and_prompt(
    cache: ItemCache | None,
    data: TaskData,
    sets: Sequence[Sequence[Neuron]],
    compute: Compute,
    with_target: bool = False,
    sets_per_call: int | None = None,
    check: Check | None = None,
) -> list[list[Any]]:
    """``[set][prompt]`` values: the cached ones read, the others computed by ``compute`` (the sets
    that miss any prompt, ``sets_per_call`` at a time, on the prompts any of them misses) and
    recorded after each call, so a killed run keeps what it finished. Without a cache,
    ``compute`` runs once on everything. ``check``: which cached values are usable
    (:meth:`kit.models.cache.ItemCache.load`)."""
    all_sets, all_prompts = list(range(len(sets))), list(range(data.n))
    if cache is None:
        return compute(all_sets, all_prompts)
    sd = [set_digest(s) for s in sets]
    pd_ = prompt_digests(data, with_target)
    ids = [[f"{sd[g]}/{pd_[p]}" for p in all_prompts] for g in all_sets]
    done = cache.load(check=check)
    todo_sets = [g for g in all_sets if any(i not in done for i in ids[g])]
    todo_prompts = sorted({p for g in todo_sets for p in all_prompts if ids[g][p] not in done})
    step = max(1, sets_per_call or len(todo_sets) or 1)
    for start in range(0, len(todo_sets), step):
        call = todo_sets[start : start + step]
        values = compute(call, todo_prompts)
        new = {ids[g][p]: v for g, row in zip(call, values) for p, v in zip(todo_prompts, row)}
        cache.add(new)
        done.update(new)
    return [[done[i] for i in row] for row in ids]
