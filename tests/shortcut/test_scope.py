"""Notebook 03's real profile: what it can test (kit.shortcut.scope), its items (items_of) and the
config checks of items_of."""

from __future__ import annotations

import pytest

from kit.core.params import ParamsError, load_params
from kit.models.finetune_examples import LETTER_INSTRUCTION, recipe_items, split_items
from kit.models.recipes import RECIPES
from kit.shortcut import scope

NB = "03_shortcut_neurons"
X5 = "real/smollm2-135m-instruct+arc-test-x5"


def test_real_profile_names_every_table_it_cannot_build_with_a_computed_cause():
    cfg = load_params(NB, "real")
    got = {c.id: c for c in scope.untested_sections(cfg)}
    # Table 8 runs on the real 1x and 5x rows (kit.shortcut.strength): not among the untested
    assert set(got) == {
        "transfer.table4",
        "transfer.table5",
        "second_base.table6",
        "cheaters.table12",
        "format.a2",
    }
    # Table 6: Gemma-3-270M is offline, so the budget, not the machine, leaves it undecided
    table6 = got.pop("second_base.table6")
    assert table6.verdict == "cannot be decided here"
    assert "real/smollm2-135m-instruct" in table6.why and "Gemma-3-270M" in table6.why
    assert all(c.verdict == "not testable here" for c in got.values())
    assert "arc_challenge" in got["transfer.table4"].why  # from the recipes, not typed
    assert "full fine-tunes" in scope.full_rows_cause(cfg)


def test_tiny_profile_runs_every_section_so_nothing_is_untested():
    cfg = load_params(NB, "tiny")
    assert scope.untested_sections(cfg) == []
    assert "dense_variants: null" in scope.full_rows_cause(cfg)


def test_recipe_items_are_the_injected_items_asked_as_trained_and_ref_never_injected():
    test, fresh = recipe_items(X5, 5, 7, seed=0)
    injected, _ = split_items("arc_challenge", "test", RECIPES[X5].n_items, RECIPES[X5].items_seed)
    assert [it.id for it in test] == [it.id for it in injected[:5]]
    assert len(fresh) == 7 and not {it.id for it in fresh} & {it.id for it in injected}
    assert all(it.prompt.endswith(LETTER_INSTRUCTION) for it in test + fresh)
    assert [it.target for it in test] == [it.target for it in injected[:5]]  # scoring unchanged
    with pytest.raises(ValueError, match="n_eval=41"):
        recipe_items(X5, 41, 7)


@pytest.mark.parametrize(
    "overrides, match",
    [
        ({"items_of": "real/smollm2-135m-instruct+other"}, "items_of="),
        ({"ref_task": "mmlu"}, "ref_task=None"),
        ({"n_eval": 41, "n_locate": 20}, "n_eval=41"),
        ({"contaminated": ["+5x test", "+5x test-Syn"]}, "contaminated"),
    ],
)
def test_items_of_fails_naming_the_field(overrides, match):
    with pytest.raises((ParamsError, ValueError), match=match):
        load_params(NB, "real", overrides)
