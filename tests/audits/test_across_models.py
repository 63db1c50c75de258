"""Notebook 06's second model: the SAE audits rerun on another model with its own SAEs
(``second_model``), and each verdict set beside the audited model's (kit.audits.across_models)."""

from __future__ import annotations

import pytest

import kit
from kit.audits import across_models, suite
from kit.audits.across_models import compare_verdicts
from kit.core.params import ParamsError

TWIN_QWEN = {
    "model": "twin/qwen2",
    "sae_arch_a": "twin-sae/qwen2/blocks.1.hook_resid_post",
    "sae_arch_b": "twin-sae/qwen2/blocks.0.hook_resid_post",
    "sae_small": "twin-sae/qwen2/blocks.0.hook_resid_post",
    "sae_large": "twin-sae/qwen2/blocks.1.hook_resid_post",
    "hook": "blocks.1.hook_resid_post",
    "n_prompts_per_task": 6,
}


def test_verdicts_side_by_side_on_a_hand_built_pair():
    first = {
        "M07.vs_null": "pass",
        "M08.vs_null": "fail",
        "M10.vs_null": "inconclusive",
        "M11.vs_null": "fail",
        "MIB.vs_null": "pass",  # the first model's only (the circuit family): not compared
    }
    second = {
        "M07.vs_null": "pass",  # agree, decided on both
        "M08.vs_null": "pass",  # disagree, decided on both
        "M10.vs_null": "inconclusive",  # agree, decided on neither
        "M11.vs_null": "fail",  # agree, decided on both
        "M12.vs_null": "not testable here",
    }
    first["M12.vs_null"] = "inconclusive"  # disagree, decided on neither
    cm = compare_verdicts(first, second, ("a/one", "b/two"))
    assert [p.id for p in cm.pairs] == list(second), "the second model's audits, in its order"
    assert (cm.n, cm.n_agree, cm.n_decided_both, cm.n_decided_agree) == (5, 3, 3, 2)
    assert cm.line() == (
        "verdicts that agree across models: 3 of 5 (2 of the 3 decided, pass or fail, on both)"
    )
    t = cm.table()
    assert list(t.columns) == ["claim", "a/one", "b/two", "agree"]
    assert list(t["agree"]) == [True, False, True, True, False]
    assert t.loc[1, "a/one"] == "fail" and t.loc[1, "b/two"] == "pass"
    rec = cm.record()
    assert rec["n_agree"] == 3 and rec["pairs"][1] == {
        "id": "M08.vs_null",
        "first": "fail",
        "second": "pass",
    }


def test_compare_verdicts_refuses_unmatched_claims_and_one_model_twice():
    with pytest.raises(ValueError, match="M09.vs_null.*no counterpart"):
        compare_verdicts({"M07.vs_null": "pass"}, {"M09.vs_null": "pass"}, ("a", "b"))
    with pytest.raises(ValueError, match="models.*twice"):
        compare_verdicts({"M07.vs_null": "pass"}, {"M07.vs_null": "pass"}, ("a", "a"))


def test_claim_ids_of_the_second_model_name_it():
    assert across_models.model_prefix("real/qwen2.5-coder-0.5b-instruct") == (
        "qwen2.5-coder-0.5b-instruct/"
    )
    assert across_models.second_model_claims(None) == []


def test_one_model_by_default_and_the_real_profile_names_qwen_with_its_own_saes():
    for p in ("tiny", "smoke", "realsmoke", "dryrun", "paper"):
        cfg = kit.load_params("06_measurement_audits", p)
        assert cfg.second_model is None and cfg.second_config() is None, p
    real = kit.load_params("06_measurement_audits", "real")
    second = real.second_config()
    assert second is not None and second.model == "real/qwen2.5-coder-0.5b-instruct"
    roles = (second.sae_arch_a, second.sae_arch_b, second.sae_small, second.sae_large)
    assert all(n.startswith("real-sae/qwen2.5-coder-0.5b-instruct/blocks.15.") for n in roles)
    assert {n.split("/")[-1].split("-")[1] for n in roles} == {"1792", "3584"}, "2x, 4x d_model"
    assert second.n_prompts_per_task < real.n_prompts_per_task and second.second_model is None
    assert (second.sae_tasks, second.n_null_seeds) == (real.sae_tasks, real.n_null_seeds)


def test_bad_second_model_fails_before_anything_runs_naming_the_field():
    def load(**second):
        return kit.load_params(
            "06_measurement_audits", "dryrun", overrides={"second_model": {**TWIN_QWEN, **second}}
        )

    assert load().second_config().model == "twin/qwen2"
    with pytest.raises(ParamsError, match="second_model.sae_large.*SAE of twin/gpt2.*twin/qwen2"):
        load(sae_large="twin-sae/gpt2/blocks.1.hook_resid_post")
    with pytest.raises(ParamsError, match="second_model.model.*is the audited model"):
        load(
            model="twin/gpt2",
            **{r: "twin-sae/gpt2/blocks.0.hook_resid_post" for r in ("sae_arch_a", "sae_arch_b")},
            sae_small="twin-sae/gpt2/blocks.0.hook_resid_post",
            sae_large="twin-sae/gpt2/blocks.1.hook_resid_post",
        )
    with pytest.raises(ParamsError, match="second_model.*sae_small.*[Ff]ield required"):
        kit.load_params(
            "06_measurement_audits",
            "dryrun",
            overrides={"second_model": {k: v for k, v in TWIN_QWEN.items() if k != "sae_small"}},
        )
    with pytest.raises(ParamsError, match="second_model.*n_prompts_per_task"):
        load(n_prompts_per_task=2)
    with pytest.raises(ParamsError, match="second_model.*not a SAE of world"):
        kit.load_params(
            "06_measurement_audits",
            "smoke",
            overrides={
                "second_model": {
                    **TWIN_QWEN,
                    "model": "zoo/base-xl",
                    "sae_arch_a": "zoo-sae/base-xl/topk-9",
                }
            },
        )


def test_the_second_model_runs_the_same_audits_and_its_verdicts_are_compared():
    """On GPT-2's and Qwen2's random twins (the dryrun profile's path, offline): the SAE audits of
    each model through the one call, the second model's claims prefixed, the verdicts paired."""
    from kit.audits.claims import study_claims

    cfg = kit.load_params(
        "06_measurement_audits",
        "dryrun",
        overrides={"second_model": TWIN_QWEN, "n_prompts_per_task": 6},
    )
    model = kit.load_model(cfg.model, world=cfg.world)
    names, saes = suite.load_saes(cfg, model)
    first = suite.sae_family(model, cfg.model, names, saes, cfg)
    second = suite.second_model_family(cfg)
    assert second is not None and second.model_name == "twin/qwen2"
    assert [r.metric for r in second.all_results] == [r.metric for r in first.all_results]
    assert all(r.inputs.model == "twin/qwen2" for r in second.all_results)
    assert set(second.names.values()) == {
        TWIN_QWEN[r] for r in ("sae_arch_a", "sae_arch_b", "sae_small", "sae_large")
    }
    d_qwen = suite.load_saes(cfg.second_config())[1]["arch_a"].cfg.d_in
    assert second.ctx.hook == TWIN_QWEN["hook"] and second.ctx.acts.shape[1] == d_qwen
    assert second.ctx.labels.count(cfg.sae_tasks[0]) <= TWIN_QWEN["n_prompts_per_task"]
    claims = study_claims(first.all_results, world=cfg.world)
    claims2 = across_models.second_model_claims(second, world=cfg.world)
    assert all(c.id.startswith("qwen2/") and "twin/qwen2" in c.statement for c in claims2)
    assert not {c.id for c in claims} & {c.id for c in claims2}, "one ledger: ids apart"
    cm = across_models.across_models(claims, claims2, (cfg.model, second.model_name))
    assert cm.n == len(claims2) == len(claims)
    expect = sum(
        a.verdict == b.verdict for a, b in zip(claims, claims2, strict=True)
    )  # same order: the same audits
    assert cm.n_agree == expect
