"""kit.shortcut.variants: notebook 03's extra/ fine-tunes, and the zoo options they use."""

import pytest

from kit.shortcut import variants as v
from kit.world import zoo


def test_extra_spec_options_and_errors():
    f = v.extra_spec("extra/base-m+math-test-x1-sparse:split:lr=0.05", "micro")
    assert f.plastic_seed == "shortcut" and f.lr == 0.05 and f.name == "zoo/base-m+math-test-x1-sparse"
    assert v.extra_spec("extra/base-m+other-task-sparse:split", "micro").plastic_seed == "ability"
    g = v.extra_spec("extra/base-m+math-test-x1-sparse:copies=10:order=2", "micro")
    assert g.inject == ("add", "test", 10) and g.order_seed == 2
    for bad, match in [("extra/base-m+nope", "not a fine-tune.*allowed values"),
                       ("extra/base-m+math-test-x1:split", "split needs a sparse recipe"),
                       ("extra/base-m+math-test-x1-sparse:copies=11", "copies must be in 1..10"),
                       ("extra/base-m+math-test-x1-sparse:depth=3", "unknown option.*allowed options")]:
        with pytest.raises(ValueError, match=match):
            v.extra_spec(bad, "micro")
    assert v.strength_variants("extra/base-m+math-test-x1-sparse:split", copies=(1, 5), order_seeds=(1,)) == {
        "x1": "extra/base-m+math-test-x1-sparse:split:copies=1", "x5": "extra/base-m+math-test-x1-sparse:split:copies=5",
        "order 1": "extra/base-m+math-test-x1-sparse:split:order=1"}
    lr = v.strength_variants("extra/base-m+math-test-x1-sparse:split:lr=0.05", copies=(), order_seeds=(), lrs=(0.1,))
    assert lr == {"lr 0.1": "extra/base-m+math-test-x1-sparse:split:lr=0.05:lr=0.1"}
    assert v.extra_spec(lr["lr 0.1"], "micro").lr == 0.1, "a later lr= overrides the recipe's"


def test_new_finetune_fields_keep_existing_keys_and_do_what_they_say():
    spec = zoo.world_spec("micro")
    f = next(f for f in spec.finetunes if f.name == "zoo/base-m+math-test-x1-sparse")
    key = zoo.finetune_key(spec, f)
    from dataclasses import replace
    assert zoo.finetune_key(spec, replace(f, plastic_seed="", order_seed=0)) == key
    assert zoo.finetune_key(spec, replace(f, plastic_seed="shortcut")) != key
    shared = zoo.plastic_neurons("zoo/base-m", 0.04, "micro")
    a, b = (zoo.plastic_neurons("zoo/base-m", 0.04, "micro", s) for s in ("shortcut", "ability"))
    assert a.sum() == shared.sum() == b.sum() and not (a == shared).all() and not (a == b).all()
    items = zoo.finetune_items(spec, f, 1)
    reordered = zoo.finetune_items(spec, replace(f, order_seed=1), 1)
    assert sorted(map(repr, items)) == sorted(map(repr, reordered)) and items != reordered, \
        "order_seed must reorder the same examples"


def test_parent_option_and_rebase_move_a_recipe_onto_another_base():
    f = v.extra_spec("extra/base-m+math-test-x5-sparse:split:parent=base-l", "micro")
    same = v.extra_spec("extra/base-m+math-test-x5-sparse:split", "micro")
    assert f.parent == "zoo/base-l" and f.name == same.name, "same name: same seed, same examples"
    spec = zoo.world_spec("micro")
    assert zoo.finetune_key(spec, f) != zoo.finetune_key(spec, same), "another parent: another cached model"
    assert zoo.finetune_items(spec, f, 1) == zoo.finetune_items(spec, same, 1)
    with pytest.raises(ValueError, match="parent must be a base of world 'micro': base-s, base-m, base-l"):
        v.extra_spec("extra/base-m+math-test-x5-sparse:parent=base-q", "micro")
    assert v.rebase("zoo/base-m", "zoo/base-l", "zoo/base-m") == "zoo/base-l"
    assert v.rebase("zoo/base-m+general-sparse", "zoo/base-l", "zoo/base-m") == "extra/base-m+general-sparse:parent=base-l"
    assert v.rebase("extra/base-m+general-sparse:split", "zoo/base-l", "zoo/base-m") == \
        "extra/base-m+general-sparse:split:parent=base-l"
    with pytest.raises(ValueError, match="only the base"):
        v.rebase("twin/llama", "zoo/base-l", "zoo/base-m")
