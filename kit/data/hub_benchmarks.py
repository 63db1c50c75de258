"""Benchmarks read from the Hugging Face hub (``load_benchmark(..., source="hf")``): which dataset,
at which commit, streamed row by row so that ``limit`` stops the download.

- :data:`HF_SOURCES`: the hub ``(path, config)`` of each family;
- :data:`HF_REVISIONS`: the commit each family is pinned to (``None``: not pinned yet, see there);
- :func:`hub_items`: the items of one (family, split), read with ``datasets.load_dataset(...,
  revision=..., streaming=True)``: rows arrive one at a time and reading stops once ``limit`` items
  exist (the converters of :mod:`kit.data.benchmark_items` are prefix-consistent), so a 10-item
  load of a 100k-row dataset reads 10 rows, not the whole split.

The commit actually read is recorded in every item's ``metadata["hf_revision"]``.
"""

from __future__ import annotations

import re
import warnings
from typing import Callable, Iterator, cast

from kit.data.items import Item

HF_SOURCES: dict[str, tuple[str, str | None]] = {
    "gsm8k": ("openai/gsm8k", "main"),
    "arc_challenge": ("allenai/ai2_arc", "ARC-Challenge"),
    "mmlu": ("cais/mmlu", "all"),  # the subject replaces "all" for mmlu/<subject>
    "bbh": ("lukaemon/bbh", None),  # the task is the config name
    "humaneval": ("openai/openai_humaneval", None),
    "mbpp": ("google-research-datasets/mbpp", "full"),
    "math500": ("HuggingFaceH4/MATH-500", None),
    "svamp": ("ChilleD/SVAMP", None),
    "mawps": ("MU-NLPC/Calc-mawps", None),
    "asdiv": ("EleutherAI/asdiv", None),
    "natural_questions": ("google-research-datasets/nq_open", "nq_open"),
    "socialiqa": ("allenai/social_i_qa", None),
    "winogrande": ("allenai/winogrande", "winogrande_xl"),
    "lmsys_arena": ("lmsys/chatbot_arena_conversations", None),
    "vectara_hallucination": ("vectara/leaderboard_results", None),
}
"""Hugging Face ``(path, config)`` per benchmark for ``source="hf"``."""

HF_REVISIONS: dict[str, str | None] = {family: None for family in HF_SOURCES}
"""The hub commit (40 hex digits) each family is read at; ``load_benchmark(revision=...)``
overrides.

Every entry is ``None`` today, deliberately: no machine this project was built on reaches the hub,
so no commit could be checked, and a commit copied from elsewhere unchecked could name data that
is not the benchmark. A load with ``None`` resolves the dataset's ``main`` to its commit first
(one ``huggingface_hub`` metadata call), reads exactly that commit, records it in every item's
``metadata["hf_revision"]`` and warns once with the value to put here; from then on the table
pins it. A revision that is a branch or tag name is resolved the same way."""

HF_SPLIT: dict[tuple[str, str], str] = {
    ("arc_challenge", "dev"): "validation",
    ("asdiv", "test"): "validation",  # EleutherAI/asdiv ships one split, "validation"
}
"""Our split name -> the hub's, where they differ."""

MBPP_HUB_SPLITS = ("prompt", "test", "validation", "train")
"""mbpp ``full`` = these hub splits; in this order their task ids ascend (1-10, 11-510, 511-600,
601-974)."""

_SHA = re.compile(r"[0-9a-f]{40}")
_WARNED: set[tuple[str, str]] = set()
_ONE_ROW_ONE_ITEM = {
    "gsm8k",
    "arc_challenge",
    "mmlu",
    "bbh",
    "humaneval",
    "mbpp",
    "math500",
    "svamp",
    "mawps",
    "asdiv",
    "natural_questions",
    "socialiqa",
}
"""Families whose converter makes exactly one item per row (the others drop or merge rows)."""


def resolve_revision(path: str, revision: str | None) -> str:
    """The commit ``revision`` (None: ``main``; a branch or tag) of hub dataset ``path`` is at now.

    A full commit hash is returned as given (no network); otherwise one metadata call
    (``huggingface_hub.HfApi().dataset_info``)."""
    if revision is not None and _SHA.fullmatch(revision):
        return revision
    from huggingface_hub import HfApi  # lazy: only source="hf" needs it

    return cast(str, HfApi().dataset_info(path, revision=revision).sha)  # set by dataset_info


def _stream(path: str, config: str | None, split: str, revision: str) -> Iterator[dict]:
    import datasets  # lazy: seconds to import, and only source="hf" needs it

    yield from datasets.load_dataset(path, config, split=split, revision=revision, streaming=True)


def _reshape(family: str, sub: str | None, row: dict, index: int) -> dict:
    """One hub row in the local record format of ``family`` (what the converters read)."""
    r = dict(row)
    # hub: question is the stem, choices is {"text": [...], "label": [...]}
    if family == "arc_challenge":
        return {
            "id": r["id"],
            "answerKey": r["answerKey"],
            "question": {
                "stem": r["question"],
                "choices": [
                    {"text": t, "label": lab}
                    for t, lab in zip(r["choices"]["text"], r["choices"]["label"])
                ],
            },
        }
    if family == "mmlu":
        return {
            "question": r["question"],
            "subject": r.get("subject") or sub or "",
            "choices": list(r["choices"]),
            "answer": int(r["answer"]),
        }
    if family == "mawps":  # MU-NLPC/Calc-mawps: question + result_float (field names per its card)
        return {
            "input": r.get("input", r.get("question")),
            "target": r.get("target", r.get("result_float", r.get("result"))),
            "type": r.get("type", ""),
            "idx": r.get("idx", r.get("id", index)),
        }
    return r


def hub_rows(family: str, sub: str | None, split: str, revision: str) -> Iterator[dict]:
    """Rows of ``family``'s hub dataset at commit ``revision``, reshaped, one at a time."""
    path, config = HF_SOURCES[family]
    if family == "mmlu":
        config = sub or "all"
    elif family == "bbh":
        config = sub
    splits = (
        MBPP_HUB_SPLITS
        if (family, split) == ("mbpp", "full")
        else (HF_SPLIT.get((family, split), split),)
    )
    index = 0
    for hub_split in splits:
        for row in _stream(path, config, hub_split, revision):
            yield _reshape(family, sub, row, index)
            index += 1


def hub_items(
    family: str,
    sub: str | None,
    split: str,
    prefix: str,
    limit: int | None,
    revision: str | None,
    convert: Callable[[list[dict], str], list[Item]],
) -> list[Item]:
    """Items of ``family``/``split`` from the hub at ``revision`` (None: :data:`HF_REVISIONS`, else
    ``main`` resolved to its commit), reading rows only until ``limit`` items exist.

    One-row-one-item families stop after ``limit`` rows; the others (winogrande drops unkeyed rows,
    lmsys_arena multi-turn battles, vectara merges a document's rows) convert the rows read so far
    each time their count doubles, and stop once that gives ``limit`` items."""
    path, _ = HF_SOURCES[family]
    wanted = HF_REVISIONS.get(family) if revision is None else revision
    commit = resolve_revision(path, wanted)
    if wanted is None and (path, commit) not in _WARNED:
        _WARNED.add((path, commit))
        warnings.warn(
            f"{path} is not pinned (kit.data.hub_benchmarks.HF_REVISIONS[{family!r}] is None): "
            f"read main at commit {commit}; pin it with revision={commit!r} or in that table",
            stacklevel=3,
        )
    rows: list[dict] = []
    check_at = max(limit or 0, 64)
    for row in hub_rows(family, sub, split, commit):
        rows.append(row)
        if limit is None:
            continue
        if family in _ONE_ROW_ONE_ITEM and len(rows) >= limit:
            break
        if family not in _ONE_ROW_ONE_ITEM and len(rows) >= check_at:
            if len(convert(rows, prefix)) >= limit:
                break
            check_at *= 2
    if (family, split) == ("mbpp", "full"):  # as the local file: ascending task ids
        rows.sort(key=lambda r: int(r["task_id"]))
    items = convert(rows, prefix)
    items = items if limit is None else items[:limit]
    for it in items:
        it.metadata["hf_revision"] = commit
    return items


def revision_of(items: list[Item]) -> str | None:
    """The hub commit a ``source="hf"`` load read (None for local items)."""
    found = {it.metadata.get("hf_revision") for it in items}
    if len(found) > 1:
        raise ValueError(f"items come from several hub commits: {sorted(map(str, found))}")
    return found.pop() if found else None
