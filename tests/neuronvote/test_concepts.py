"""kit.neuronvote.concepts: readers, balanced seeded concept tasks, the 200-example rule,
compaction."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from kit.neuronvote import concepts as c

CONLLU = """# sent_id = 1
# text = The dog barks.
1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_
2\tdog\tdog\tNOUN\tNN\t_\t3\tnsubj\t_\t_
3-4\tbarks.\t_\t_\t_\t_\t_\t_\t_\t_
3\tbarks\tbark\tVERB\tVBZ\t_\t0\troot\t_\t_
4\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\t_
4.1\tghost\t_\t_\t_\t_\t_\t_\t_\t_

# sent_id = 2
1\tHi\thi\tINTJ\tUH\t_\t0\troot\t_\t_
"""

CONLL2000 = """Confidence NN B-NP
in IN B-PP
the DT B-NP

pound NN I-NP
"""


def test_read_conllu_skips_ranges_and_empty_nodes(tmp_path):
    p = tmp_path / "x.conllu"
    p.write_text(CONLLU)
    sents = c.read_conllu(p)
    assert len(sents) == 2
    assert sents[0].words == ("The", "dog", "barks", ".")
    assert sents[0].tags == ("DT", "NN", "VBZ", "."), (
        "XPOS is column 5; multiword ranges / empty nodes skipped"
    )
    assert c.read_conllu(p, "upos")[0].tags == ("DET", "NOUN", "VERB", "PUNCT")
    with pytest.raises(ValueError, match="allowed"):
        c.read_conllu(p, "lemma")


def test_read_conll2000(tmp_path):
    p = tmp_path / "x.txt"
    p.write_text(CONLL2000)
    sents = c.read_conll2000(p)
    assert [s.words for s in sents] == [("Confidence", "in", "the"), ("pound",)]
    assert sents[0].tags == ("NN", "IN", "DT")
    assert c.read_conll2000(p, "chunk")[0].tags == ("B-NP", "B-PP", "B-NP")


def corpus(
    n_a: int = 300, n_b: int = 120, n_other: int = 600, seed: int = 0
) -> list[c.TaggedSentence]:
    rng = np.random.default_rng(seed)
    tags = ["A"] * n_a + ["B"] * n_b + ["O"] * n_other
    rng.shuffle(tags)
    out = []
    for i in range(0, len(tags), 10):
        chunk = tags[i : i + 10]
        out.append(c.TaggedSentence(tuple(f"w{i + j}" for j in range(len(chunk))), tuple(chunk)))
    return out


def test_tasks_balanced_split_and_min_examples():
    sents = corpus()
    tasks = c.build_concept_tasks(sents, ["A", "B"], min_examples=200, seed=0)
    assert [t.concept for t in tasks] == ["A"], "tag B has 120 < 200 examples and must be dropped"
    t = tasks[0]
    flat = c.flat_tags(sents)
    y = np.concatenate([t.y_train, t.y_dev, t.y_test])
    assert y.sum() == 300 and len(y) == 600, "negatives must equal positives in number"
    assert (flat[t.words][y == 1] == "A").all() and (flat[t.words][y == 0] != "A").all()
    assert (len(t.train), len(t.dev), len(t.test)) == (420, 90, 90), "split must be 70/15/15"
    assert len(set(t.words.tolist())) == 600, "a word must not appear twice or in two splits"
    assert t.n_available == 300


def test_tasks_seeded_and_subsampled():
    sents = corpus()
    a = c.build_concept_tasks(sents, ["A"], seed=1, max_per_class=50)[0]
    b = c.build_concept_tasks(sents, ["A"], seed=1, max_per_class=50)[0]
    other = c.build_concept_tasks(sents, ["A"], seed=2, max_per_class=50)[0]
    assert np.array_equal(a.train, b.train) and not np.array_equal(a.train, other.train)
    assert a.y_train.sum() + a.y_dev.sum() + a.y_test.sum() == 50 and a.n_available == 300


def test_task_arrays_use_flat_indices():
    sents = corpus()
    t = c.build_concept_tasks(sents, ["A"], seed=0, max_per_class=20)[0]
    vectors = np.arange(sum(len(s.words) for s in sents))[:, None] * np.ones((1, 3))
    arr = t.arrays(vectors)
    np.testing.assert_array_equal(arr["x_train"][:, 0], t.train)
    assert arr["x_test"].shape == (len(t.test), 3)


def test_bad_split_rejected():
    with pytest.raises(ValueError, match="split"):
        c.build_concept_tasks(corpus(), ["A"], split=(0.8, 0.15, 0.15))


def test_compact_keeps_only_used_sentences_and_remaps():
    sents = corpus()
    tasks = c.build_concept_tasks(sents, ["A"], seed=0, max_per_class=15)
    small, moved = c.compact(sents, tasks)
    assert len(small) < len(sents)
    old_words = np.array([w for s in sents for w in s.words])
    new_words = np.array([w for s in small for w in s.words])
    np.testing.assert_array_equal(
        old_words[tasks[0].words],
        new_words[moved[0].words],
        err_msg="remapped indices must point at the same words",
    )
    np.testing.assert_array_equal(tasks[0].y_train, moved[0].y_train)


def test_concept_summary_counts():
    s = c.concept_summary(corpus(), ["A", "B", "Z"], min_examples=200)
    assert s.set_index("concept").n_examples.to_dict() == {"A": 300, "B": 120, "Z": 0}
    assert s.kept.tolist() == [True, False, False]


def test_world_roles_cover_every_prompt_word():
    sents = c.world_role_sentences(n_per_task=5, seed=0)
    tags = Counter(t for s in sents for t in s.tags)
    assert set(tags) <= set(c.WORLD_ROLES)
    assert {"NUM", "NAME", "PUNCT", "FUNC", "BOOL"} <= set(tags)
    assert c.world_role("17") == "NUM" and c.world_role("tom") == "NAME"
    assert c.world_role("and", "reasoning") == "LOGIC" and c.world_role("and", "math") == "FUNC", (
        "and/or/not are logic operators only inside boolean expressions"
    )


def test_load_sentences_ud_ewt_has_paper_tags():
    sents = c.load_sentences("ud_ewt")
    summary = c.concept_summary(sents, c.PAPER_POS_TAGS).set_index("concept")
    assert len(sents) > 4000
    assert summary.loc["NN", "n_examples"] > 5000 and summary.loc["DT", "kept"]
    with pytest.raises(ValueError, match="allowed"):
        c.load_sentences("ptb")


def test_load_sentences_conll2000_chunk_reads_chunk_tags():
    pos, chunk = c.load_sentences("conll2000"), c.load_sentences("conll2000_chunk")
    assert [s.words for s in pos[:50]] == [s.words for s in chunk[:50]], (
        "same sentences, other column"
    )
    summary = c.concept_summary(chunk, c.CHUNK_TAGS).set_index("concept")
    assert summary.kept.all(), (
        "all 10 of the paper's chunk concepts have >= 200 examples in CoNLL-2000"
    )
    assert summary.loc["B-NP", "n_examples"] > 60000 and "NN" not in set(c.flat_tags(chunk[:200]))
