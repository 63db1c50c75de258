"""The planted-gap analysis on hand-built suites with a known gap."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from kit.cg import planted as P


def test_planted_share_by_hand():
    a = sp.csr_matrix(np.array([[2.0, 0.0, 1.0], [1.0, 0.0, 0.0], [1.0, 0.0, 3.0]]))
    share = P.planted_share({"a": a}, {"a": np.array([True, False, False])})
    # concept 0: 2 of 4; concept 1 never fires; concept 2: 1 of 4
    assert share[0] == 0.5 and np.isnan(share[1]) and share[2] == 0.25


def test_a_planted_gap_is_recovered_and_nothing_else(planted_suite_of):
    s, planted = planted_suite_of(True)
    r = P.planted_gap_analysis(s, "member", "parent", planted, n_perm=400, min_support=5)
    assert r.summary["n_found"] >= 1 and r.table.concept.iloc[0] == 0 and r.table.found.iloc[0]
    assert (
        r.summary["precision"] == 1.0 and r.summary["n_found"] == r.summary["n_found_planted"] > 0
    )
    assert r.summary["p_overlap"] < 0.05
    assert r.summary["p_overlap"] < 0.05
    assert r.summary["max_planted_concept"] == 0 and r.summary["max_planted_share"] == 1.0
    assert r.summary["max_planted_q_member"] < 0.05
    assert r.summary["top_drop_concept"] == 0 and r.summary["top_drop_share"] == 1.0
    assert r.summary["drop_share_spearman"] > 0 and r.summary["drop_share_p"] < 0.05
    acc = r.accuracy
    assert (
        acc.loc["member", "accuracy (planted)"] == 0.0
        and acc.loc["parent", "accuracy (planted)"] > 0.7
    )
    assert acc.loc["member", "planted items"] == 30


def test_no_planted_gap_means_nothing_found(planted_suite_of):
    s, planted = planted_suite_of(False)
    r = P.planted_gap_analysis(s, "member", "parent", planted, n_perm=400, min_support=5)
    assert r.summary["n_found"] == 0 and r.summary["n_found_planted"] == 0
    assert np.isnan(r.summary["drop_share_spearman"]), (
        "same correctness: no drop anywhere, no correlation"
    )


def test_drop_vs_share_by_hand():
    share = np.array([0.9, 0.5, 0.1, 0.0, np.nan])
    tested = np.array([True, True, True, True, False])
    up = P.drop_vs_share(
        share, np.array([0.3, 0.2, 0.1, 0.0, 9.0]), tested, list("abcde"), n_perm=200
    )
    # ranks agree exactly (rho 1); of 4! = 24 orders only the identity reaches 1, so p is about 1/24
    assert (
        up["drop_share_spearman"] == pytest.approx(1.0)
        and up["top_drop_concept"] == 0
        and up["top_drop_label"] == "a"
    )
    assert 0.01 < up["drop_share_p"] < 0.15
    down = P.drop_vs_share(
        share, np.array([0.0, 0.1, 0.2, 0.3, 9.0]), tested, list("abcde"), n_perm=200
    )
    assert down["drop_share_spearman"] == pytest.approx(-1.0) and down["drop_share_p"] == 1.0
    assert down["top_drop_concept"] == 3 and down["top_drop_share"] == 0.0


def test_bad_inputs_name_the_field(planted_suite_of):
    s, planted = planted_suite_of(True)
    with pytest.raises(ValueError, match="model 'other' is not scored"):
        P.planted_gap_analysis(s, "other", "parent", planted)
    with pytest.raises(ValueError, match="planted masks are for"):
        P.planted_gap_analysis(s, "member", "parent", {"dyck": planted["dyck"]})
    with pytest.raises(ValueError, match="share_threshold"):
        P.planted_gap_analysis(s, "member", "parent", planted, share_threshold=0)


def test_permutations_are_raised_until_one_concept_can_pass_bh(planted_suite_of):
    s, planted = planted_suite_of(True)
    r = P.planted_gap_analysis(s, "member", "parent", planted, n_perm=20, min_support=5, alpha=0.05)
    assert r.summary["n_perm"] == 60 / 0.05, (
        "60 testable concepts at alpha 0.05 need 1200 permutations"
    )


def _with_run_fields(r):
    acc = r.accuracy
    return {
        **r.summary,
        "gap": "dyck '}'",
        "n_planted_items": 30,
        "sae": "sae@blocks.1.hook_resid_post",
        "sae_hook": "blocks.1.hook_resid_post",
        "accuracy_planted_member": acc.loc["member", "accuracy (planted)"],
        "accuracy_planted_parent": acc.loc["parent", "accuracy (planted)"],
        "accuracy_other_member": acc.loc["member", "accuracy (other tasks)"],
        "accuracy_other_parent": acc.loc["parent", "accuracy (other tasks)"],
    }


def test_findings_state_numbers_not_verdicts(planted_suite_of):
    """The findings say what was measured; whether the gap is recovered is the claims' to say."""
    from kit.cg.findings import findings

    for fails in (True, False):
        s, planted = planted_suite_of(fails)
        summary = _with_run_fields(
            P.planted_gap_analysis(s, "member", "parent", planted, n_perm=400, min_support=5)
        )
        (line,) = [
            x
            for x in findings({"planted_gap_by_sae": {"last/mean": summary}})
            if x.startswith("Planted gap")
        ]
        assert f"flags {summary['n_found']} concept(s)" in line and "recover" not in line.lower(), (
            line
        )
        assert line.startswith(
            "Planted gap, dictionary 'last', mean pooling (eq. 1, CG as published) (sae@"
        ), line
    assert findings({"planted_gap_error": "ValueError: no member"}) == [
        "Planted-gap check not run: ValueError: no member"
    ]


def test_planted_gap_suite_reads_both_models_in_the_parents_concept_space(micro_world):
    """The micro world's planted-gap member against its parent: one concept space, both scored,
    the planted items exactly kit.world.planted_gap_items' inside list."""
    from kit.world import GAP_MEMBER, planted_gap_items

    parent, gap = P.planted_gap_member(GAP_MEMBER, micro_world)
    assert (parent, gap) == ("zoo/base-m", "dyck-curly")
    s, planted = P.planted_gap_suite(
        GAP_MEMBER, parent, gap, n_items=12, tasks=["add", "dyck"], world=micro_world
    )
    assert s.sae == "zoo-sae/base-m/topk-512" and set(s.model_scores) == {GAP_MEMBER, parent}
    assert s.model_acts[parent] is s.model_acts[GAP_MEMBER] is s.acts, "one concept space"
    inside, outside = planted_gap_items(gap, 12, 0)
    assert s.acts["dyck"].shape == (12, 512) and int(planted["dyck"].sum()) == len(inside) > 0
    assert s.texts["dyck"] == [it.prompt for it in inside + outside] and not planted["add"].any()
    with pytest.raises(ValueError, match="must include the planted gap's task 'dyck'"):
        P.planted_gap_suite(GAP_MEMBER, parent, gap, n_items=12, tasks=["add"], world=micro_world)


def test_gap_member_resolves_against_the_world():
    from kit.world import GAP_MEMBER

    assert P.planted_gap_members("micro") == {GAP_MEMBER: ("zoo/base-m", "dyck-curly")}
    assert (
        P.resolve_gap_member("auto", "micro")
        == GAP_MEMBER
        == P.resolve_gap_member(GAP_MEMBER, "tiny")
    )
    assert P.resolve_gap_member("", "micro") == ""
    with pytest.raises(
        ValueError,
        match=r"gap_member='zoo/base-m\+math' is not a planted-gap member of world 'micro'; "
        r"allowed values: auto, \"\", zoo/base-m\+gap-dyck-curly",
    ):
        P.resolve_gap_member("zoo/base-m+math", "micro")
    with pytest.raises(ValueError, match="not a planted-gap member of world 'micro'"):
        P.planted_gap_member("zoo/base-m+math", "micro")


def test_config_validates_gap_member_naming_the_allowed_values():
    from kit.configs.competency_gaps import Config
    from kit.core.params import ParamsError, load_params

    assert Config(world="micro").gap_member == "auto"
    with pytest.raises(ValueError, match=r"allowed values: auto, .*zoo/base-m\+gap-dyck-curly"):
        Config(world="micro", gap_member="zoo/base-m")
    for profile in ("tiny", "smoke"):
        cfg = load_params("04_competency_gaps", profile)
        assert P.resolve_gap_member(cfg.gap_member, cfg.world) == "zoo/base-m+gap-dyck-curly", (
            profile
        )
    with pytest.raises(ParamsError, match="gap_member"):
        load_params("04_competency_gaps", "smoke", {"gap_member": "zoo/nope"})


def test_site_sae_is_the_world_recipe_at_another_hook_cached_and_seeded(
    micro_world, tmp_path, monkeypatch
):
    """The micro world's SAE recipe retrained at another site of base-m: a sae_lens SAE reading that
    hook, labels and stats beside it, the same bits when trained again, a bad hook named."""
    import torch

    import kit.core.paths
    from kit.world.saes import site_sae, site_sae_dir

    monkeypatch.setattr(kit.core.paths, "cache_dir", lambda: tmp_path)
    name, hook = "zoo-sae/base-m/topk-512", "blocks.0.hook_mlp_out"
    sae, labels, stats = site_sae(name, hook, micro_world)
    assert sae.cfg.metadata.hook_name == hook == stats["hook_name"] and sae.cfg.d_sae == 512 == len(
        labels
    )
    assert stats["member"] == "zoo/base-m" and 0 < stats["l0"] <= 8
    d = site_sae_dir(name, hook, micro_world)
    assert d.parent == tmp_path / "site-saes" / "micro" and (d / "labels.json").is_file()
    first = {k: v.clone() for k, v in sae.state_dict().items()}
    import shutil

    shutil.rmtree(d)
    again, _, _ = site_sae(name, hook, micro_world)
    assert all(torch.equal(first[k], again.state_dict()[k]) for k in first), (
        "seeded: the same SAE twice"
    )
    with pytest.raises(ValueError, match="gap_sae_hooks 'blocks.3.hook_resid_post' does not exist"):
        site_sae(name, "blocks.3.hook_resid_post", micro_world)


def test_zoo_item_concepts_last_pooling_reads_each_prompts_last_token(micro_world):
    """``pooling="last"`` in a right-padded batch of prompts of different lengths: each row is the
    SAE encoding of the model's activation at that prompt's last token (not a pad, not the mean)."""
    import torch

    import kit
    from kit import world as kw
    from kit.cg.saes import zoo_item_concepts
    from kit.models import tl

    model = kit.load_model("zoo/base-m", world=micro_world)
    sae = kit.load_sae("zoo-sae/base-m/topk-512", world=micro_world)
    items = kw.get_task("dyck").items("test", 6, 0)
    tokens, lengths = kw.prompt_tokens(model, items)
    assert len(set(lengths.tolist())) > 1, "the batch must mix prompt lengths"
    last = zoo_item_concepts(model, sae, items, batch_size=4, pooling="last").toarray()
    mean = zoo_item_concepts(model, sae, items, batch_size=4).toarray()
    hook = sae.cfg.metadata.hook_name
    with torch.inference_mode():
        for i, it in enumerate(items):
            t, n = kw.prompt_tokens(model, [it])
            _, cache = tl.run_with_cache(model, t, [hook])
            want = sae.encode(cache[hook][0, int(n[0]) - 1][None]).float().cpu().numpy()[0]
            assert np.allclose(last[i], want, atol=1e-5), i
    assert not np.allclose(last, mean), "last differs from eq. 1's mean"
    with pytest.raises(ValueError, match="pooling='max': allowed values: mean, last"):
        zoo_item_concepts(model, sae, items, pooling="max")
