"""Concept datasets for neuron ranking: one binary task per tag (NeuronVote paper, section 4.1).

Sources (real, offline, in ``kit.data_dir()``; see its MANIFEST.md):

- ``ud_ewt``: UD English EWT dev + test (CoNLL-U), PTB-style XPOS tags (column 5);
- ``conll2000``: CoNLL-2000 train + test, PTB POS tags (column 2; the paper's chunking data);
- ``conll2000_chunk``: the same sentences with their chunk tags (column 3, IOB: ``B-NP``...),
  the paper's Chunking task (Table 6; its 10 concepts are ``CHUNK_TAGS``);
- ``world-roles``: the tiny world's own task prompts, each word tagged with its role (number,
  name, noun, variable, operator, bracket, boolean, logic word, punctuation, function word). The
  zoo decoders have a ~250-word vocabulary, so English POS text would be mostly ``<unk>``; these
  roles are the POS analogue that their vocabulary covers. "and"/"or"/"not" are ``LOGIC`` inside
  boolean expressions and ``FUNC`` elsewhere, so at least one concept depends on context.

A concept task for tag t (``build_concept_tasks``): the positive words are the words tagged t,
the negatives an equal number of words drawn at random from all other words; tags with fewer
than ``min_examples`` (200 in the paper) positives are dropped; each task is shuffled and split
70/15/15 into train/dev/test, all seeded. Words are addressed by their position in the
corpus flattened sentence by sentence (``flat index``), so one activation matrix serves all tags.
"""

from __future__ import annotations

import random
import unicodedata
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Sequence

import numpy as np
import pandas as pd

POS_SOURCES: dict[str, tuple[str, ...]] = {
    "ud_ewt": ("ud_ewt/en_ewt-ud-dev.conllu", "ud_ewt/en_ewt-ud-test.conllu"),
    "conll2000": ("conll2000/train.txt", "conll2000/test.txt"),
    "conll2000_chunk": ("conll2000/train.txt", "conll2000/test.txt"),
}
SOURCES = ("ud_ewt", "conll2000", "conll2000_chunk", "world-roles")
PAPER_POS_TAGS = (
    "VBG",
    "VBZ",
    "NNPS",
    "DT",
    "TO",
    "CD",
    "JJ",
    "PRP",
    "MD",
    "RB",
    "VBP",
    "VB",
    "NNS",
    "VBN",
    "POS",
    "IN",
    "NN",
    "CC",
    "NNP",
    "VBD",
)
"""The 20 POS concepts of the paper (appendix 7.2)."""
CHUNK_TAGS = (
    "B-ADJP",
    "B-ADVP",
    "B-NP",
    "B-PP",
    "B-VP",
    "I-ADJP",
    "I-ADVP",
    "I-NP",
    "I-PP",
    "I-VP",
)
"""The 10 chunking concepts of the paper (appendix 7.2)."""
WORLD_ROLES = (
    "NUM",
    "NAME",
    "NOUN",
    "ENTITY",
    "VAR",
    "OP",
    "BRACKET",
    "BOOL",
    "LOGIC",
    "PUNCT",
    "FUNC",
)


@dataclass(frozen=True)
class TaggedSentence:
    """A sentence as its words and one tag per word."""

    words: tuple[str, ...]
    tags: tuple[str, ...]

    def __post_init__(self):
        if len(self.words) != len(self.tags):
            raise ValueError(
                f"{len(self.words)} words but {len(self.tags)} tags: {self.words[:5]}..."
            )


@dataclass
class ConceptTask:
    """Binary task "is this word tagged ``concept``?"; indices are flat word positions."""

    concept: str
    train: np.ndarray
    dev: np.ndarray
    test: np.ndarray
    y_train: np.ndarray
    y_dev: np.ndarray
    y_test: np.ndarray
    n_available: int
    """Words carrying the tag in the corpus, before any subsampling."""

    @property
    def words(self) -> np.ndarray:
        """All flat word indices the task uses (train, dev, test)."""
        return np.concatenate([self.train, self.dev, self.test])

    def arrays(self, vectors) -> dict[str, np.ndarray]:
        """``x_train, y_train, x_dev, y_dev, x_test, y_test`` from word vectors
        ``Float[ndarray, "n_flat_words d"]`` (rows = flat word indices)."""
        v = np.asarray(vectors)
        return {
            "x_train": v[self.train],
            "y_train": self.y_train,
            "x_dev": v[self.dev],
            "y_dev": self.y_dev,
            "x_test": v[self.test],
            "y_test": self.y_test,
        }


# ------------------------------------------------------------------ readers


def read_conllu(path: str | Path, column: Literal["xpos", "upos"] = "xpos") -> list[TaggedSentence]:
    """Sentences of a CoNLL-U file with their XPOS (column 5) or UPOS (column 4) tags.

    Multiword-token ranges (``1-2``) and empty nodes (``1.1``) are skipped: the syntactic words
    are what carries the tags.
    """
    col = {"xpos": 4, "upos": 3}.get(column)
    if col is None:
        raise ValueError(f"column={column!r}; allowed: xpos, upos")

    def word_tag(line: str) -> tuple[str, str] | None:
        if line.startswith("#"):
            return None
        fields = line.split("\t")
        if len(fields) != 10:
            raise ValueError(
                f"{path}: malformed CoNLL-U line (expected 10 tab-separated fields): {line[:80]!r}"
            )
        return (fields[1], fields[col]) if fields[0].isdigit() else None

    return _sentences(path, word_tag)


def read_conll2000(
    path: str | Path, column: Literal["pos", "chunk"] = "pos"
) -> list[TaggedSentence]:
    """Sentences of a CoNLL-2000 file (``word POS chunk`` per line, blank line between
    sentences)."""
    col = {"pos": 1, "chunk": 2}.get(column)
    if col is None:
        raise ValueError(f"column={column!r}; allowed: pos, chunk")

    def word_tag(line: str) -> tuple[str, str]:
        fields = line.split()
        if len(fields) != 3:
            raise ValueError(
                f"{path}: malformed CoNLL-2000 line (expected 'word POS chunk'): {line[:80]!r}"
            )
        return fields[0], fields[col]

    return _sentences(path, word_tag)


def _sentences(path: str | Path, word_tag) -> list[TaggedSentence]:
    """Group a CoNLL-style file into sentences (blank line between them); ``word_tag(line)``
    returns (word, tag) or None for a line that carries no word."""
    sentences, words, tags = [], [], []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            if words:
                sentences.append(TaggedSentence(tuple(words), tuple(tags)))
            words, tags = [], []
            continue
        pair = word_tag(line)
        if pair is not None:
            words.append(pair[0])
            tags.append(pair[1])
    if words:
        sentences.append(TaggedSentence(tuple(words), tuple(tags)))
    return sentences


def _printable(word: str) -> bool:
    # Words made only of control/format/space characters have no subtokens in BERT tokenizers.
    return any(unicodedata.category(ch)[0] not in ("C", "Z") for ch in word)


def load_sentences(
    source: str = "ud_ewt",
    max_sentences: int | None = None,
    max_words: int = 100,
    seed: int = 0,
    world_n_per_task: int = 60,
) -> list[TaggedSentence]:
    """Tagged sentences of ``source`` (``ud_ewt``, ``conll2000``, ``conll2000_chunk`` or
    ``world-roles``).

    Sentences longer than ``max_words`` or holding a word with no printable character are left
    out (they would be truncated or untokenisable); ``max_sentences`` keeps a seeded random
    sample of the rest, in corpus order.
    """
    if source not in SOURCES:
        raise ValueError(f"source={source!r}; allowed: {', '.join(SOURCES)}")
    if source == "world-roles":
        sentences = world_role_sentences(n_per_task=world_n_per_task, seed=seed)
    else:
        from kit.core.paths import data_dir

        root = data_dir()
        sentences = []
        for rel in POS_SOURCES[source]:
            if rel.endswith(".conllu"):
                sentences += read_conllu(root / rel)
            else:
                sentences += read_conll2000(
                    root / rel, "chunk" if source == "conll2000_chunk" else "pos"
                )
    sentences = [
        s for s in sentences if len(s.words) <= max_words and all(_printable(w) for w in s.words)
    ]
    if max_sentences is not None and max_sentences < len(sentences):
        keep = sorted(random.Random(seed).sample(range(len(sentences)), max_sentences))
        sentences = [sentences[i] for i in keep]
    return sentences


# ------------------------------------------------------------------ the tiny world's roles


def world_role(word: str, task_group: str = "") -> str:
    """Role of a tiny-world word (see the module docstring); ``task_group`` is the task's group,
    which decides whether and/or/not are logic operators (reasoning) or function words."""
    from kit.world import vocabulary as wv

    if word.isdigit():
        return "NUM"
    if word in wv.AGENTS or word in wv.IOI_FREQUENT or word in wv.IOI_RARE:
        return "NAME"
    if word in wv.ENTITIES:
        return "ENTITY"
    nouns = set(
        wv.OBJECTS + wv.FRUITS + wv.ANIMALS + wv.IOI_PLACES + wv.IOI_THINGS + list(wv.RELATIONS)
    )
    nouns |= {v for vals in wv.RELATIONS.values() for v in vals}
    if word in nouns:
        return "NOUN"
    if word in ("x", "y", "z", "n", "m", "k"):
        return "VAR"
    if word in ("+", "-", "*", "=", ">", "max", "print", "if", "else"):
        return "OP"
    if word in wv.BRACKETS or word in wv.BRACKETS.values():
        return "BRACKET"
    if word in ("true", "false"):
        return "BOOL"
    if word in ("and", "or", "not"):
        return "LOGIC" if task_group == "reasoning" else "FUNC"
    if word in (".", ",", "?", ":", ";"):
        return "PUNCT"
    return "FUNC"


def world_role_sentences(
    tasks: Sequence[str] | None = None, n_per_task: int = 60, split: str = "train", seed: int = 0
) -> list[TaggedSentence]:
    """Prompts of the tiny world's tasks (``n_per_task`` each, seeded) with role tags per word.

    Needs only the task generators (``kit.world.tasks``), not a built world.
    """
    from kit.world import tasks as wt

    names = list(wt.TASKS) if tasks is None else list(tasks)
    out = []
    for name in names:
        task = wt.get_task(name)
        for item in task.items(split, n_per_task, seed):
            words = tuple(item.prompt.split())
            out.append(TaggedSentence(words, tuple(world_role(w, task.group) for w in words)))
    return out


# ------------------------------------------------------------------ concept tasks


def flat_tags(sentences: Sequence[TaggedSentence]) -> np.ndarray:
    """Tags of all words, sentences concatenated in order: the flat word index space."""
    return np.array([t for s in sentences for t in s.tags], dtype=object)


def concept_summary(
    sentences: Sequence[TaggedSentence], tags: Sequence[str] | None = None, min_examples: int = 200
) -> pd.DataFrame:
    """Per tag: number of words carrying it and whether it meets ``min_examples``."""
    counts = Counter(flat_tags(sentences).tolist())
    wanted = sorted(counts) if tags is None else list(tags)
    return pd.DataFrame(
        {
            "concept": wanted,
            "n_examples": [counts.get(t, 0) for t in wanted],
            "kept": [counts.get(t, 0) >= min_examples for t in wanted],
        }
    )


def build_concept_tasks(
    sentences: Sequence[TaggedSentence],
    tags: Sequence[str] | None = None,
    min_examples: int = 200,
    max_per_class: int | None = None,
    split: tuple[float, float, float] = (0.7, 0.15, 0.15),
    seed: int = 0,
) -> list[ConceptTask]:
    """One balanced binary task per tag with at least ``min_examples`` words (see module doc).

    ``tags``: which tags to consider (default: every tag present); ``max_per_class``: subsample
    the positives (and so the negatives) to at most this many, seeded, to bound the runtime.
    Tasks come back in the order of ``tags`` (or sorted), dropped tags omitted.
    """
    if len(split) != 3 or min(split) < 0 or abs(sum(split) - 1.0) > 1e-9:
        raise ValueError(f"split must be three non-negative fractions summing to 1, got {split}")
    if min_examples < 1:
        raise ValueError(f"min_examples must be >= 1, got {min_examples}")
    all_tags = flat_tags(sentences)
    wanted = sorted(set(all_tags.tolist())) if tags is None else list(tags)
    tasks = []
    for i, tag in enumerate(wanted):
        pos = np.flatnonzero(all_tags == tag)
        if len(pos) < min_examples:
            continue
        rng = np.random.default_rng([seed, i])
        neg_pool = np.flatnonzero(all_tags != tag)
        n = len(pos) if max_per_class is None else min(len(pos), max_per_class)
        if len(neg_pool) < n:
            raise ValueError(
                f"tag {tag!r}: {n} positives but only {len(neg_pool)} other words for negatives"
            )
        pos = rng.choice(pos, n, replace=False)
        neg = rng.choice(neg_pool, n, replace=False)
        idx = np.concatenate([pos, neg])
        lab = np.concatenate([np.ones(n, dtype=np.int64), np.zeros(n, dtype=np.int64)])
        order = rng.permutation(2 * n)
        idx, lab = idx[order], lab[order]
        n_train = int(round(split[0] * 2 * n))
        n_dev = int(round(split[1] * 2 * n))
        tasks.append(
            ConceptTask(
                concept=tag,
                train=idx[:n_train],
                dev=idx[n_train : n_train + n_dev],
                test=idx[n_train + n_dev :],
                y_train=lab[:n_train],
                y_dev=lab[n_train : n_train + n_dev],
                y_test=lab[n_train + n_dev :],
                n_available=int((all_tags == tag).sum()),
            )
        )
    return tasks


def compact(
    sentences: Sequence[TaggedSentence], tasks: Sequence[ConceptTask]
) -> tuple[list[TaggedSentence], list[ConceptTask]]:
    """Keep only the sentences that hold a word some task uses; re-index the tasks to match.

    Saves encoder forward passes when tasks are subsampled. Returns (sentences, tasks).
    """
    starts = np.cumsum([0] + [len(s.words) for s in sentences])
    used = (
        np.unique(np.concatenate([t.words for t in tasks]))
        if tasks
        else np.array([], dtype=np.int64)
    )
    sent_of = np.searchsorted(starts, used, side="right") - 1
    keep = np.unique(sent_of)
    new_start = np.zeros(len(sentences), dtype=np.int64)
    pos = 0
    for k in keep:
        new_start[k] = pos
        pos += len(sentences[k].words)

    def remap(idx: np.ndarray) -> np.ndarray:
        s = np.searchsorted(starts, idx, side="right") - 1
        return new_start[s] + (idx - starts[s])

    new_tasks = [
        ConceptTask(
            t.concept,
            remap(t.train),
            remap(t.dev),
            remap(t.test),
            t.y_train,
            t.y_dev,
            t.y_test,
            t.n_available,
        )
        for t in tasks
    ]
    return [sentences[k] for k in keep], new_tasks
