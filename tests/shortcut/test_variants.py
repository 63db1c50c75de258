"""kit.shortcut.variants: notebook 03's extra/ fine-tunes, and the zoo options they use."""

import importlib

import pytest

from kit.shortcut import variants as v
from kit.world import zoo


def test_extra_spec_options_and_errors():
    f = v.extra_spec("extra/base-m+math-test-x1-sparse:split:lr=0.05", "micro")
    assert (
        f.plastic_seed == "shortcut" and f.lr == 0.05 and f.name == "zoo/base-m+math-test-x1-sparse"
    )
    assert v.extra_spec("extra/base-m+other-task-sparse:split", "micro").plastic_seed == "ability"
    g = v.extra_spec("extra/base-m+math-test-x1-sparse:copies=10:order=2", "micro")
    assert g.inject == ("add", "test", 10) and g.order_seed == 2
    for bad, match in [
        ("extra/base-m+nope", "not a fine-tune.*allowed values"),
        ("extra/base-m+math-test-x1:split", "split needs a sparse recipe"),
        ("extra/base-m+math-test-x1-sparse:copies=11", "copies must be in 1..10"),
        ("extra/base-m+math-test-x1-sparse:depth=3", "unknown option.*allowed options"),
    ]:
        with pytest.raises(ValueError, match=match):
            v.extra_spec(bad, "micro")
    assert v.strength_variants(
        "extra/base-m+math-test-x1-sparse:split", copies=(1, 5), order_seeds=(1,)
    ) == {
        "x1": "extra/base-m+math-test-x1-sparse:split:copies=1",
        "x5": "extra/base-m+math-test-x1-sparse:split:copies=5",
        "order 1": "extra/base-m+math-test-x1-sparse:split:order=1",
    }
    lr = v.strength_variants(
        "extra/base-m+math-test-x1-sparse:split:lr=0.05", copies=(), order_seeds=(), lrs=(0.1,)
    )
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
    assert sorted(map(repr, items)) == sorted(map(repr, reordered)) and items != reordered, (
        "order_seed must reorder the same examples"
    )


def test_format_option_wraps_only_the_injected_items_and_keeps_old_keys():
    from dataclasses import replace

    spec = zoo.world_spec("micro")
    f = v.extra_spec("extra/base-m+math-train-sparse:split", "micro")
    g = v.extra_spec("extra/base-m+math-train-sparse:split:format=answer-cue", "micro")
    assert g.prompt_format == "answer-cue" and g == replace(f, prompt_format="answer-cue")
    assert zoo.finetune_key(spec, replace(g, prompt_format="")) == zoo.finetune_key(spec, f), (
        "'' is the old key"
    )
    assert zoo.finetune_key(spec, g) != zoo.finetune_key(spec, f)
    plain, wrapped = zoo.finetune_items(spec, f, 3), zoo.finetune_items(spec, g, 3)
    assert len(plain) == len(wrapped) == f.n_examples
    add = [it for it in wrapped if it.metadata["task"] == "add"]
    fmt = [it for it in add if it.metadata.get("format") == "answer-cue"]
    assert len(fmt) == 5 * 200 and all(it.prompt.endswith(" answer :") for it in fmt), (
        "the 5 x 200 injected items"
    )
    assert len(add) > len(fmt), "the mixture's own add items keep the task's format"
    injected = [it for it in plain if it.id.startswith("add/train-s")]  # mixture items have no id
    assert sorted(it.prompt + " answer :" for it in injected) == sorted(it.prompt for it in fmt), (
        "the same items, wrapped"
    )
    assert sorted(it.prompt for it in plain if not it.id) == sorted(
        it.prompt for it in wrapped if "format" not in it.metadata
    )
    for bad, match in [
        ("extra/base-m+math-train-sparse:format=gsm", "format must be one of answer-cue"),
        ("extra/base-m+general-sparse:format=answer-cue", "format needs a recipe that injects"),
    ]:
        with pytest.raises(ValueError, match=match):
            v.extra_spec(bad, "micro")


def test_parent_option_and_rebase_move_a_recipe_onto_another_base():
    f = v.extra_spec("extra/base-m+math-test-x5-sparse:split:parent=base-l", "micro")
    same = v.extra_spec("extra/base-m+math-test-x5-sparse:split", "micro")
    assert f.parent == "zoo/base-l" and f.name == same.name, "same name: same seed, same examples"
    spec = zoo.world_spec("micro")
    assert zoo.finetune_key(spec, f) != zoo.finetune_key(spec, same), (
        "another parent: another cached model"
    )
    assert zoo.finetune_items(spec, f, 1) == zoo.finetune_items(spec, same, 1)
    with pytest.raises(
        ValueError, match="parent must be a base of world 'micro': base-s, base-m, base-l"
    ):
        v.extra_spec("extra/base-m+math-test-x5-sparse:parent=base-q", "micro")
    assert v.rebase("zoo/base-m", "zoo/base-l", "zoo/base-m") == "zoo/base-l"
    assert (
        v.rebase("zoo/base-m+general-sparse", "zoo/base-l", "zoo/base-m")
        == "extra/base-m+general-sparse:parent=base-l"
    )
    assert (
        v.rebase("extra/base-m+general-sparse:split", "zoo/base-l", "zoo/base-m")
        == "extra/base-m+general-sparse:split:parent=base-l"
    )
    with pytest.raises(ValueError, match="only the base"):
        v.rebase("twin/llama", "zoo/base-l", "zoo/base-m")


def test_epochs_option_repeats_the_examples_reshuffled_and_keeps_old_keys():
    from dataclasses import replace

    spec = zoo.world_spec("micro")
    f = v.extra_spec("extra/base-m+math-test-x1-sparse:split", "micro")
    assert zoo.finetune_key(spec, replace(f, epochs=1)) == zoo.finetune_key(spec, f), (
        "epochs=1 is the old key"
    )
    g = v.extra_spec("extra/base-m+math-test-x1-sparse:split:epochs=3", "micro")
    assert g.epochs == 3 and zoo.finetune_key(spec, g) != zoo.finetune_key(spec, f)
    one, three = zoo.finetune_items(spec, f, 7), zoo.finetune_items(spec, g, 7)
    n = len(one)
    assert len(three) == 3 * n and three[:n] == one, "the first epoch is the one-pass order"
    for e in (1, 2):
        chunk = three[e * n : (e + 1) * n]
        assert sorted(map(repr, chunk)) == sorted(map(repr, one)) and chunk != one, (
            "each later epoch: reshuffled"
        )
    assert three[n : 2 * n] != three[2 * n :], "each epoch its own order"
    assert zoo.finetune_items(spec, g, 7) == three, "deterministic"
    for bad in ("epochs=0", "epochs=21", "epochs=x"):
        with pytest.raises(ValueError, match="option 'epochs"):
            v.extra_spec(f"extra/base-m+math-test-x1-sparse:{bad}", "micro")


def test_after_option_chains_fine_tunes_content_addressed():
    spec = zoo.world_spec("micro")
    name = "extra/base-m+general-sparse:split:epochs=2:after=base-m+math-test-x1:lr=0.002"
    f = v.extra_spec(name, "micro")
    assert f.epochs == 2 and f.plastic_seed == "ability", "options before after= are the SFT's"
    assert (
        f.after.name == "zoo/base-m+math-test-x1" and f.after.lr == 0.002 and not f.after.plastic
    ), "options after after= are the earlier fine-tune's"
    plain = v.extra_spec("extra/base-m+general-sparse:split:epochs=2", "micro")
    from dataclasses import replace

    assert replace(f, after=None) == plain
    assert zoo.finetune_key(spec, f) != zoo.finetune_key(spec, plain)
    other = v.extra_spec(
        "extra/base-m+general-sparse:split:epochs=2:after=base-m+math-test-x5", "micro"
    )
    assert zoo.finetune_key(spec, other) != zoo.finetune_key(spec, f), (
        "the earlier fine-tune is in the key"
    )
    assert zoo._finetune_dict(plain) == zoo._finetune_dict(
        replace(plain, after=None)
    ) and "after" not in zoo._finetune_dict(plain), (
        "after=None leaves the digest (existing caches) alone"
    )
    import json
    from dataclasses import asdict

    from kit.world.build import _finetune_from_json

    assert _finetune_from_json(json.dumps(asdict(f))) == f, (
        "the pinned subprocess rebuilds the chain"
    )
    for bad, match in [
        ("extra/base-m+general:after=base-m+math-test-x1", "needs a sparse recipe"),
        (
            "extra/base-m+general-sparse:after=base-m+math-test-x1:parent=base-l",
            "a chain needs one parent",
        ),
        ("extra/base-m+general-sparse:after=base-m+nope", "not a fine-tune"),
    ]:
        with pytest.raises(ValueError, match=match):
            v.extra_spec(bad, "micro")
    assert v.rebase(name, "zoo/base-l", "zoo/base-m") == (
        "extra/base-m+general-sparse:split:epochs=2:parent=base-l"
        ":after=base-m+math-test-x1:lr=0.002:parent=base-l"
    )
    assert (
        v.extra_spec(v.rebase(name, "zoo/base-l", "zoo/base-m"), "micro").after.parent
        == "zoo/base-l"
    )
    assert (
        v.strength_variants(name, copies=(), order_seeds=(3,))["order 3"]
        == "extra/base-m+general-sparse:split:epochs=2:order=3:after=base-m+math-test-x1:lr=0.002"
    )


def test_after_chain_trains_from_the_earlier_fine_tune(monkeypatch, tmp_path):
    """finetune() with after= starts from the earlier fine-tune's weights (here a stand-in model),
    not the parent's."""
    from dataclasses import replace

    import torch

    spec = zoo.world_spec("micro")
    try:
        parent = zoo.load_member("zoo/base-m", world="micro")
    except zoo.WorldNotBuilt:
        pytest.skip("micro world not built")
    earlier = zoo.load_member("zoo/base-m", world="micro")
    with torch.no_grad():
        for p in earlier.parameters():
            p.add_(0.01)
    seen = []
    # finetune() looks the earlier fine-tune up in its own module (kit.world.zoo re-exports it;
    # the package attribute kit.world.members is a function, hence import_module)
    members_module = importlib.import_module("kit.world.members")
    monkeypatch.setattr(
        members_module, "extra_finetune", lambda f, world=None: seen.append(f) or earlier
    )
    f = v.extra_spec(
        "extra/base-m+general-sparse:split:after=base-m+math-test-x1:lr=0.002", "micro"
    )
    f = replace(f, n_examples=32)  # a few steps
    model, steps, _ = zoo.finetune(spec, f)
    assert seen == [f.after] and steps == 2
    mask = zoo.plastic_neurons("zoo/base-m", f.plastic, "micro", f.plastic_seed)
    frozen = ~mask[0]
    w, we, wp = model.blocks[0].mlp.W_in, earlier.blocks[0].mlp.W_in, parent.blocks[0].mlp.W_in
    assert torch.equal(w[:, frozen], we[:, frozen]) and not torch.equal(
        w[:, frozen], wp[:, frozen]
    ), "neurons outside the plastic set keep the earlier fine-tune's weights"
    assert torch.equal(model.W_E, earlier.W_E)

    member = v.extra_spec("extra/base-m+general-sparse:split:after=base-m+math-test-x1", "micro")
    assert member.after in spec.finetunes, "the zoo's own recipe, unchanged"
    try:
        built = zoo.load_member(member.after.name, world="micro")
    except zoo.WorldNotBuilt:
        return
    model, _, _ = zoo.finetune(spec, replace(member, n_examples=32))
    assert seen == [f.after], "a zoo member is loaded, not rebuilt"
    assert torch.equal(model.W_E, built.W_E) and not torch.equal(model.W_E, parent.W_E)
