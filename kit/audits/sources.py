"""Prompt sources of notebook 06: world tasks, the shipped benchmarks (offline) or Hugging Face
datasets (network).

A source is a world task name (``facts``), a shipped benchmark's name (its test prompts from the
data directory, :func:`kit.data.benchmarks.load_benchmark`'s names: ``asdiv``, ``bbh/navigate``; the
``real`` profile's real text, offline; the names every config's task fields accept) or
``hf:<dataset>[@<config>]:<split>:<column>``
(``hf:walledai/AdvBench:train:prompt``). ``<dataset>`` is a hub id (network) or a local directory of
data files (``./...``, ``../...`` or ``/...``; relative to the repository root), which
``datasets.load_dataset`` reads the same way offline: the ``dryrun`` profile's small fixtures
(``tests/fixtures/hf/``) and a user's own prompt sets. Datasets come through
:func:`kit.models.hub.hf_dataset`, the one network boundary; tests mock it with small local
fixtures.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

_HF = re.compile(
    r"^hf:(?P<path>[\w.\-]+(?:/[\w.\-]+)?|\.{0,2}/[\w.\-/]+?)(?:@(?P<name>[\w.\-]+))?:(?P<split>[\w.\-\[\]:%]+?):(?P<column>\w+)$"
)


@dataclass(frozen=True)
class Source:
    kind: str
    """``task``, ``bench`` or ``hf``."""
    name: str
    """World task name, benchmark name, or the dataset path."""
    config: str | None = None
    split: str = "test"
    column: str = ""


def parse_source(spec: str, field: str = "source") -> Source:
    """A world task name, a benchmark name or an ``hf:`` spec; anything else fails naming ``field``
    and the forms allowed."""
    from kit.world.tasks import TASKS

    if spec in TASKS:
        return Source("task", spec)
    if not spec.startswith("hf:"):
        from kit.data.benchmarks import HUB_ONLY, SPLITS, _parse_name

        try:
            family, _ = _parse_name(spec)
        except ValueError:
            family = None
        if (
            family is not None
            and family != "tiny"
            and family not in HUB_ONLY
            and "test" in SPLITS[family]
        ):
            return Source("bench", spec)
    m = _HF.match(spec)
    if spec.startswith("hf:") and m:
        return Source("hf", m["path"], m["name"], m["split"], m["column"])
    raise ValueError(
        f"{field}: {spec!r} is neither a world task ({', '.join(TASKS)}), nor a shipped "
        "benchmark with a test split (asdiv, bbh/<task>, ...) nor "
        "'hf:<dataset>[@<config>]:<split>:<column>' (<dataset>: a hub id or a ./local/dir)"
    )


def is_local(src: Source) -> bool:
    """Whether an ``hf:`` source names a local directory rather than a hub id."""
    return src.kind == "hf" and src.name.startswith(("/", "./", "../"))


def dataset_path(src: Source, field: str = "source") -> str:
    """The hub id, or the local directory resolved against the repository root (which must
    exist)."""
    if not is_local(src):
        return src.name
    from pathlib import Path

    from kit.core.paths import REPO_ROOT

    path = Path(src.name) if src.name.startswith("/") else (REPO_ROOT / src.name).resolve()
    if not path.is_dir():
        raise ValueError(
            f"{field}: local dataset directory {src.name!r} not found (looked at {path})"
        )
    return str(path)


def source_prompts(
    spec: str, n: int, max_chars: int = 400, seed: int = 0, field: str = "source"
) -> list[str]:
    """``n`` prompts of a source: the world task's test items, or the first ``n`` non-empty texts
    of the dataset column, each cut to ``max_chars`` characters (at a word boundary)."""
    src = parse_source(spec, field)
    if src.kind == "task":
        from kit.world.tasks import get_task

        return [it.prompt for it in get_task(src.name).items("test", n)]
    if src.kind == "bench":
        from kit.data.benchmarks import load_benchmark

        return [
            _cut(" ".join(it.prompt.split()), max_chars)
            for it in load_benchmark(src.name, "test", limit=n)
        ]
    from kit.models.hub import hf_dataset

    ds = hf_dataset(dataset_path(src, field), src.config, split=src.split)
    if src.column not in ds.column_names:
        raise ValueError(
            f"{field}: {spec!r} has no column {src.column!r}; allowed values: "
            f"{', '.join(ds.column_names)}"
        )
    out = []
    for text in ds[src.column]:
        text = " ".join(str(text or "").split())
        if text:
            out.append(_cut(text, max_chars))
        if len(out) == n:
            break
    if len(out) < 2:
        raise ValueError(f"{field}: {spec!r} gave {len(out)} non-empty texts; need >= 2")
    return out


def _cut(text: str, max_chars: int) -> str:
    """``text`` cut to at most ``max_chars`` characters, at a word boundary."""
    return text if len(text) <= max_chars else text[:max_chars].rsplit(" ", 1)[0]


def regroup_names(items, groups: dict[str, list[str]], model, seed: int = 0):
    """IOI items with their two names replaced by two distinct names of one category each
    (round-robin over categories), ``name_group`` = the category. Names that are not single tokens
    of ``model`` are dropped first. Returns ``(items, dropped)`` with ``dropped[group]`` the
    names removed."""
    import numpy as np

    from kit.audits.circuits import name_token

    def single(name: str) -> bool:
        try:
            name_token(model, name)
            return True
        except ValueError:
            return False

    kept = {g: [x for x in names if single(x)] for g, names in groups.items()}
    dropped = {g: [x for x in groups[g] if x not in kept[g]] for g in groups}
    short = {g: len(v) for g, v in kept.items() if len(v) < 2}
    if short:
        raise ValueError(
            f"dif_name_groups: fewer than 2 single-token names left in {short} (dropped {dropped})"
        )
    rng = np.random.default_rng(seed)
    names = sorted(kept)
    out = []
    for i, it in enumerate(items):
        g = names[i % len(names)]
        io, s = (kept[g][j] for j in rng.choice(len(kept[g]), 2, replace=False))
        old_io, old_s = it.metadata["io"], it.metadata["s"]
        words = [io if w == old_io else s if w == old_s else w for w in it.prompt.split(" ")]
        out.append(
            replace(
                it,
                prompt=" ".join(words),
                answer=io,
                metadata={**it.metadata, "io": io, "s": s, "name_group": g},
            )
        )
    return out, dropped


def single_token_names(tokenizer, names: list[str]) -> list[str]:
    """The ``names`` that are one token of ``tokenizer`` (`` Name`` for BPE vocabularies, ``name``
    for word-level ones, never the unknown token), read from the tokenizer alone: what
    :func:`kit.audits.circuits.name_token` accepts, checked before any weights load."""
    unk = getattr(tokenizer, "unk_token_id", None)

    def single(name: str) -> bool:
        for text in (" " + name, name):
            ids = tokenizer(text, add_special_tokens=False)["input_ids"]
            if len(ids) == 1 and (unk is None or ids[0] != unk):
                return True
        return False

    return [n for n in names if single(n)]


def offline_tokenizer(model: str):
    """The tokenizer of ``model`` without its weights: the world's for ``zoo/`` members, a twin's or
    a local directory's, a hub id's when already cached; None when none is readable offline."""
    from kit.models.sources import form_of

    if form_of(model).world_member:
        from kit.world.tokenizer import build_tokenizer

        return build_tokenizer()
    from kit.audits.cost import config_dir  # one resolution of names to local directories

    path = config_dir(model)
    if path is None:
        return None
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(path, local_files_only=True)
    except (OSError, ValueError):
        return None
