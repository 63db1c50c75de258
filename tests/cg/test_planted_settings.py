"""The planted-gap check across concept dictionaries and poolings (notebook 04 section 8b): sites,
skipped settings, the primary setting and the side-by-side table."""

from __future__ import annotations

import pandas as pd
import pytest

from kit.cg import planted as P
from kit.cg import planted_settings as PS


def test_section_is_skipped_with_its_reason_when_set_empty():
    from kit.configs.competency_gaps import Config

    sections = PS.planted_gap_section(Config(world="micro", gap_member=""))
    assert list(sections) == ["world/mean", "world/last", "last/mean", "last/last"], (
        "every (dictionary, pooling)"
    )
    assert all(r is None and "set to skip" in why for r, why in sections.values())
    res = PS.planted_gap_results(sections)
    assert "planted_gap" not in res and "set to skip" in res["planted_gap_error"]
    assert res["planted_gap_by_sae"]["last/mean"] == {"skipped": "gap_member='': set to skip"}
    one = PS.planted_gap_section(
        Config(world="micro", gap_member="", gap_sae_hooks=["last"], gap_pooling=["last"])
    )
    assert list(one) == ["last/last"]


def test_gap_sae_sites_resolve_world_and_last_layer():
    # tiny base-m: 2 layers, the world SAE reads layer 0; micro base-m: 1 layer, so `last` is the
    # world's site
    assert PS.gap_sae_sites(["world", "last"], "zoo/base-m", "tiny") == [
        ("world", "blocks.0.hook_resid_post", ""),
        ("last", "blocks.1.hook_resid_post", ""),
    ]
    assert PS.gap_sae_sites(["world", "last"], "zoo/base-m", "micro") == [
        ("world", "blocks.0.hook_resid_post", ""),
        (
            "last",
            "blocks.0.hook_resid_post",
            "same site as 'world' (blocks.0.hook_resid_post): zoo/base-m has 1 layer(s)",
        ),
    ]
    # an explicit hook is kept; a fine-tune has its base's layers
    assert PS.gap_sae_sites(["blocks.1.hook_mlp_out"], "zoo/base-m", "tiny") == [
        ("blocks.1.hook_mlp_out", "blocks.1.hook_mlp_out", "")
    ]
    assert (
        PS._n_layers("zoo/base-m+gap-dyck-curly", "tiny") == 2
        and PS._n_layers("zoo/base-l@step-300", "tiny") == 2
    )
    with pytest.raises(
        ValueError, match=r"gap_sae_hooks entry 'blocks.2.hook_resid_post': zoo/base-m has 2 layer"
    ):
        PS.gap_sae_sites(["blocks.2.hook_resid_post"], "zoo/base-m", "tiny")


def test_config_validates_gap_sae_hooks():
    from kit.configs.competency_gaps import Config
    from kit.core.params import ParamsError, load_params

    assert Config(world="micro").gap_sae_hooks == ["world", "last"]
    assert Config(world="micro", gap_sae_hooks=["blocks.1.attn.hook_z"]).gap_sae_hooks == [
        "blocks.1.attn.hook_z"
    ]
    with pytest.raises(
        ValueError, match=r"\['deep'\] not allowed; allowed values: world, last or a hook name"
    ):
        Config(world="micro", gap_sae_hooks=["world", "deep"])
    with pytest.raises(ValueError, match="each entry once"):
        Config(world="micro", gap_sae_hooks=["last", "last"])
    with pytest.raises(ValueError, match="gap_sae_hooks"):
        Config(world="micro", gap_sae_hooks=[])
    with pytest.raises(ParamsError, match="gap_sae_hooks"):
        load_params("04_competency_gaps", "smoke", {"gap_sae_hooks": ["resid"]})


def test_config_validates_gap_pooling():
    from kit.configs.competency_gaps import Config
    from kit.core.params import ParamsError, load_params

    assert Config(world="micro").gap_pooling == ["mean", "last"]
    with pytest.raises(ValueError, match=r"\['max'\] not allowed; allowed values: mean, last"):
        Config(world="micro", gap_pooling=["mean", "max"])
    with pytest.raises(ValueError, match="each entry once"):
        Config(world="micro", gap_pooling=["last", "last"])
    with pytest.raises(ValueError, match="gap_pooling"):
        Config(world="micro", gap_pooling=[])
    with pytest.raises(ParamsError, match="gap_pooling"):
        load_params("04_competency_gaps", "smoke", {"gap_pooling": ["sum"]})


def test_dictionaries_side_by_side(planted_suite_of):
    s, planted = planted_suite_of(True)
    r = P.planted_gap_analysis(s, "member", "parent", planted, n_perm=400, min_support=5)
    r.summary.update(sae="sae", sae_hook="blocks.1.hook_resid_post")
    sections = {"world": (None, "same site"), "last": (r, "")}
    t = PS.compare_dictionaries(sections)
    assert list(t.columns) == ["world", "last"] and list(t.index) == [*PS.COMPARE_FIELDS, "skipped"]
    assert t.loc["skipped", "world"] == "same site" and pd.isna(t.loc["n_found", "world"])
    assert t.loc["precision", "last"] == 1.0 and t.loc["skipped", "last"] == ""
    res = PS.planted_gap_results(sections)
    assert res["planted_gap"] is r.summary and res["planted_gap_by_sae"]["world"] == {
        "skipped": "same site"
    }
    assert res["planted_gap_primary"] == "last"


def test_primary_setting_is_mean_pooling_on_the_deepest_dictionary(planted_suite_of):
    s, planted = planted_suite_of(True)
    runs = {}
    for key, hook, pooling in (
        ("world/mean", "blocks.0.hook_resid_post", "mean"),
        ("world/last", "blocks.0.hook_resid_post", "last"),
        ("last/mean", "blocks.1.hook_resid_post", "mean"),
        ("last/last", "blocks.1.hook_resid_post", "last"),
    ):
        r = P.planted_gap_analysis(s, "member", "parent", planted, n_perm=100, min_support=5)
        r.summary.update(sae_hook=hook, pooling=pooling)
        runs[key] = (r, "")
    assert PS.primary_setting(runs) == "last/mean"
    runs["last/mean"] = (None, "skipped")
    assert PS.primary_setting(runs) == "world/mean"
    assert PS.primary_setting({"a": (None, "why")}) is None
