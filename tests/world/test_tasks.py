import random

import pytest

from kit.world.tasks import GROUPS, KB, SPLITS, TASKS, TEST_SIZE, get_task


def _keys(items):
    return {it.metadata["content"] for it in items}


@pytest.mark.parametrize("name", list(TASKS))
def test_splits_are_seeded_and_fixed(name):
    t = get_task(name)
    assert [i.prompt for i in t.items("fresh", n=30, seed=1)] == [
        i.prompt for i in t.items("fresh", n=30, seed=1)
    ]
    assert [i.prompt for i in t.items("fresh", n=30, seed=1)] != [
        i.prompt for i in t.items("fresh", n=30, seed=2)
    ]
    test = t.items("test")
    assert len(test) == TEST_SIZE and len(_keys(test)) == TEST_SIZE
    assert [i.prompt for i in test] == [i.prompt for i in get_task(name).items("test")]
    assert len({i.id for i in test}) == TEST_SIZE


@pytest.mark.parametrize("name", list(TASKS))
def test_fresh_is_disjoint_from_test_in_content(name):
    t = get_task(name)
    test = _keys(t.items("test"))
    fresh = _keys(t.items("fresh", n=500, seed=3)) | _keys(t.items("fresh-syn", n=200, seed=4))
    assert not fresh & test, "fresh items reuse test contents (operands/facts), not only strings"
    train = _keys(t.items("train", n=500, seed=5))
    if t.knowledge:  # the knowledge base is the skill: training asks about every fact
        assert train & test
    else:
        assert not train & test, "training items would leak the test contents"
        assert not train & fresh, "fresh contents must be unseen in training"


@pytest.mark.parametrize("name", list(TASKS))
def test_syn_is_a_paraphrase_of_exactly_the_test_content(name):
    t = get_task(name)
    test, syn = t.items("test"), t.items("test-syn")
    assert [i.metadata["content"] for i in test] == [i.metadata["content"] for i in syn]
    assert [i.target for i in test] == [i.target for i in syn] or t.choices_of is not None
    assert sum(a.prompt != b.prompt for a, b in zip(test, syn)) == len(test)
    assert all(i.metadata["template"] > 0 for i in syn)


def test_answers_are_correct():
    for it in get_task("add").items("fresh", n=50):
        a, b = it.metadata["content"]
        assert it.answer == str(a + b) and f" {a} " in it.prompt and f" {b} " in it.prompt
    for it in get_task("add2").items("test", n=50):
        a, b, c = it.metadata["content"]
        assert it.answer == str(a + b - c)
    for it in get_task("boolean").items("fresh", n=50):
        expr = it.metadata["content"].replace("true", "True").replace("false", "False")
        assert it.answer == str(eval(expr)).lower()
    for it in get_task("sort").items("fresh", n=50):
        nums, k = it.metadata["content"]
        assert it.answer == str(sorted(nums)[k])
    for it in get_task("count").items("fresh", n=50):
        assert it.answer == str(
            sum(
                w in ("apple", "pear", "plum", "grape", "lemon", "mango")
                for w in it.metadata["content"]
            )
        )
    for it in get_task("facts").items("test", n=50):
        assert it.answer == KB[it.metadata["content"]]
    for it in get_task("facts-mc").items("test", n=50):
        assert it.choices[it.label] == KB[it.metadata["content"]] and it.target in "ABCD"
    for it in get_task("dyck").items("fresh", n=50):
        seq = it.metadata["content"].split() + [it.answer]
        depth = 0
        for tok in seq:
            depth += 1 if tok in "([{<" else -1
            assert depth >= 0
    for it in get_task("ioi").items("test", n=50):
        assert it.answer == it.metadata["io"] != it.metadata["s"]
        assert it.prompt.endswith("to") and it.prompt.count(it.metadata["s"]) == 2


def test_ioi_name_groups_balanced_in_eval_and_rare_in_training():
    t = get_task("ioi")
    groups = [i.metadata["name_group"] for i in t.items("test")]
    assert 0.35 < groups.count("rare") / len(groups) < 0.65
    train = [i.metadata["name_group"] for i in t.items("train", n=1000)]
    assert train.count("rare") / len(train) < 0.15


def test_task_metadata():
    assert {t.group for t in TASKS.values()} == set(GROUPS)
    for t in TASKS.values():
        assert 0 < t.chance < 1
    assert len(KB) >= 1000, "the knowledge base must be large enough not to saturate"


def test_bad_input_names_the_field():
    with pytest.raises(ValueError, match="split='dev'.*train"):
        get_task("add").items("dev")
    with pytest.raises(ValueError, match="task='gsm'.*add"):
        get_task("gsm")
    assert set(SPLITS) >= {"train", "test", "test-syn", "fresh"}


def test_formatted_wraps_prompts_in_a_benchmark_format_and_keeps_answers():
    from kit.world.tasks import FORMATS, formatted
    from kit.world.vocabulary import all_words

    items = get_task("add").items("test", n=3)
    out = formatted(items, "answer-cue")
    assert [o.prompt for o in out] == [it.prompt + " answer :" for it in items]
    assert [o.answer for o in out] == [it.answer for it in items] and out[0].id == items[
        0
    ].id + "@answer-cue"
    assert (
        out[0].metadata["format"] == "answer-cue"
        and out[0].metadata["content"] == items[0].metadata["content"]
    )
    assert "format" not in items[0].metadata, "the input items are not changed"
    vocab = set(all_words())
    for prefix, suffix in FORMATS.values():  # one token per word, as every world prompt
        assert set((prefix + suffix).split()) <= vocab
    with pytest.raises(ValueError, match="format='gsm'.*allowed values: answer-cue"):
        formatted(items, "gsm")
    with pytest.raises(ValueError, match="multiple choice"):
        formatted(get_task("facts-mc").items("test", n=1), "answer-cue")


def test_uniform_pair_draws_every_accepted_pair_equally_often():
    # a, b in 1..3 with a + b <= 4: six pairs, 1000 draws each expected (SD ~29)
    from collections import Counter

    from kit.world.tasks import _uniform_pair

    rng = random.Random(0)
    counts = Counter(
        _uniform_pair(rng, (1, 3), (1, 3), lambda a, b: a + b <= 4) for _ in range(6000)
    )
    assert set(counts) == {(1, 1), (1, 2), (1, 3), (2, 1), (2, 2), (3, 1)}
    assert all(850 <= c <= 1150 for c in counts.values()), counts


@pytest.mark.parametrize("name", ["add", "add2", "code"])
def test_arithmetic_operand_pairs_are_equally_likely(name):
    # the distinct test split and independent fresh draws are samples of one distribution only
    # when no content is far likelier than another: the old add sampler (a, then b given a)
    # drew (62, 1) once in 62 draws, ~30x the mean pair (code: within each operator)
    from collections import Counter, defaultdict

    rng = random.Random(1)
    task = get_task(name)
    groups: dict = defaultdict(Counter)
    for _ in range(40_000):
        key = task.sample(rng, "train")
        op, pair = (key[0], key[1:]) if name == "code" else ("", key[:2])
        groups[op][pair] += 1
    for op, pairs in groups.items():
        mean = sum(pairs.values()) / len(pairs)
        # a Poisson count's maximum over thousands of pairs stays within ~5 SD of its mean
        assert max(pairs.values()) <= mean + 6 * mean**0.5 + 3, (op, pairs.most_common(3), mean)
