"""The world subject (``kit.world.subject``) on the micro world: items, the scoring rule against
``kit.world.evaluate`` (one-token and multi-token answers), ablation, parse failures and
truncation, and MUI as the union of per-item key neurons."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kit import world as kworld
from kit.data.items import Item
from kit.mui.metric import per_item_key_neurons, subject_mui
from kit.subjects import load_subject, task_group, task_items
from kit.world import WorldSubject, world_correct


@pytest.fixture(scope="module")
def base_m(micro_world):
    return load_subject("zoo/base-m", world=micro_world)


def test_items_groups_and_chance_of_world_tasks(base_m):
    items = base_m.items("add", "test", n=5)
    assert items == kworld.get_task("add").items("test", n=5) and items[2:] == base_m.items(
        "add", "test", n=3, skip=2
    )
    assert base_m.group("add") == "math" == task_group("gsm8k") and task_group("bbq/Age") == "bbq"
    assert base_m.chance("facts-mc", items) == kworld.get_task("facts-mc").chance
    fresh = task_items("add", "fresh", 30, seed=2, one_per_content=True)
    assert len({it.metadata["content"] for it in fresh}) == 30
    with pytest.raises(ValueError, match="reads only the world's vocabulary"):
        base_m.items("gsm8k")
    with pytest.raises(ValueError, match="no fresh split"):
        task_items("gsm8k", "fresh", 3)


@pytest.mark.parametrize("task", ["add", "facts-mc", "boolean", "sort-list", "add-steps"])
def test_scoring_the_response_agrees_with_the_worlds_evaluate(base_m, task):
    items = base_m.items(task, "test", n=64)
    n_words = max(len(it.target.split()) for it in items)
    ans = base_m.answer(task, items, max_new_tokens=n_words)
    expected = np.asarray(kworld.evaluate(base_m.model, items), dtype=bool)
    assert ans.correct.tolist() == expected.tolist()
    assert ans.n_truncated == 0 and ans.accuracy == pytest.approx(expected.mean())


def test_scoring_rule_by_hand():
    items = [Item("a", "p", answer="3"), Item("b", "p", answer="x y"), Item("c", "p", answer="x y")]
    assert world_correct(items, ["3 <junk>", "x y z", "x"]).tolist() == [True, True, False]


def test_truncation_and_parse_failures(base_m):
    items = base_m.items("sort-list", "test", n=4)
    short = base_m.answer("sort-list", items, max_new_tokens=1)
    assert short.n_truncated == 4 and not short.correct.any(), (
        "a multi-token answer cannot fit in one token"
    )
    fake = base_m.score("add", [Item("a", "p", answer="3")], [""], max_new_tokens=1)
    assert fake.parse_failed.tolist() == [True] and fake.truncated.tolist() == [False]
    with pytest.raises(ValueError, match="allowed: generate"):
        base_m.answer("add", items, scoring="loglik-letter")


def test_ablation_changes_answers_and_leaves_no_hook(base_m):
    items = base_m.items("add", "test", n=32)
    before = base_m.answer("add", items)
    everything = [
        (layer, i)
        for layer in range(base_m.model.cfg.n_layers)
        for i in range(base_m.model.cfg.d_mlp)
    ]
    ablated = base_m.answer("add", items, ablate=everything)
    assert ablated.responses != before.responses
    assert base_m.answer("add", items).responses == before.responses, "hooks removed afterwards"


def test_mui_is_the_union_of_per_item_key_neurons(base_m):
    items = base_m.items("code", "test", n=12)
    ans = base_m.answer("code", items)
    keys = per_item_key_neurons(base_m, ans)
    union = set().union(*map(set, keys))
    d = base_m.model.cfg.n_layers * base_m.model.cfg.d_mlp
    assert subject_mui(base_m, ans) == pytest.approx(100 * len(union) / d)
    assert isinstance(base_m, WorldSubject) and base_m.kind == "world"
    # the notebooks' spelling, lent by kit.mui: the same calls
    assert base_m.mui(ans, "score", "topk") == subject_mui(base_m, ans)
    assert base_m.key_neurons(ans) == keys


def test_ablation_hooks_zero_exactly_the_chosen_neurons():
    from kit.models.load import random_model
    from kit.subjects import ablation_hooks

    model = random_model("tiny-gelu")
    tokens = torch.randint(0, 97, (2, 5))
    seen = {}

    def look(act, hook):
        seen[hook.name] = act.clone()

    hooks = ablation_hooks([(0, 3), (1, 5), (1, 7)])
    with model.hooks(
        fwd_hooks=hooks + [("blocks.0.mlp.hook_post", look), ("blocks.1.mlp.hook_post", look)]
    ):
        model(tokens)
    _, clean = model.run_with_cache(tokens)
    assert (seen["blocks.0.mlp.hook_post"][..., 3] == 0).all()
    assert (seen["blocks.1.mlp.hook_post"][..., [5, 7]] == 0).all()
    keep = [i for i in range(64) if i != 3]
    assert torch.allclose(
        seen["blocks.0.mlp.hook_post"][..., keep], clean["blocks.0.mlp.hook_post"][..., keep]
    ), "other neurons of the ablated layer must be untouched"
