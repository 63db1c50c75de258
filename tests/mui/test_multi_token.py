"""Tests of kit.mui.multi_token: k across widths, the section on the micro world, the
checkpoint series and the law across models or checkpoints."""

from __future__ import annotations

import pandas as pd
import pytest


def test_width_k_table_gives_base_xl_k_2():
    from kit.mui.multi_token import width_k_table

    t = width_k_table(["zoo/base-s", "zoo/base-l", "zoo/base-xl", "twin/llama"], "micro").set_index(
        "model"
    )
    assert list(t.index) == ["zoo/base-s", "zoo/base-l", "zoo/base-xl"], "hub models are left out"
    assert t.loc["zoo/base-xl", "k"] == 2 and t.loc["zoo/base-xl", "d_mlp"] == 1536
    assert (t.drop("zoo/base-xl").k == 1).all()
    # one response token: n_layers * k key neurons of n_layers * d_mlp
    assert abs(t.loc["zoo/base-xl", "one_token_sample_mui"] - 100 * 2 / 1536) < 1e-12
    assert width_k_table(["zoo/base-xl"], "micro", k=5).k.tolist() == [5]


def test_multi_token_section_on_micro(micro_world):
    from types import SimpleNamespace

    from kit.mui.multi_token import multi_token_section

    cfg = SimpleNamespace(
        world=micro_world, multi_token_n_items=8, seed=0, law_form="mui_vs_log_perf"
    )
    with pytest.raises(ValueError, match="allowed values: sort-list, add-steps"):
        multi_token_section(["zoo/base-xl"], ["add"], "add", cfg)
    sec = multi_token_section(["zoo/base-s", "zoo/base-xl"], ["sort-list", "add-steps"], "add", cfg)
    s = sec.data["samples"]
    assert sec.record["multi_token"]["focus"] == "zoo/base-xl"
    one = s[(s.model == "zoo/base-xl") & (s.task == "add")]
    assert one.mui.nunique() == 1 and abs(one.mui.iloc[0] - 100 * 2 / 1536) < 1e-9, (
        "one token: k / d_mlp"
    )
    multi = s[(s.model == "zoo/base-xl") & (s.task == "sort-list")]
    assert (
        multi.mui <= 100 * 2 * multi.response_tokens / 1536 + 1e-9
    ).all()  # at most k per token and layer
    assert multi.mui.nunique() > 1, "multi-token responses: per-sample MUI varies"
    # only base-xl answers them: the law is taken across its checkpoints (step 100, 300 and the
    # final model)
    law = sec.data["law"]
    assert law["over"] == "checkpoints" and law["model"] == "zoo/base-xl" and law["n_models"] == 3
    assert (law["slope"] is None) == ("not_testable" in law) and "micro world" in law["where"]


def test_checkpoint_series_orders_steps_and_drops_the_final_step():
    from kit.mui import trajectories
    from kit.mui.checkpoints import checkpoint_series, has_checkpoints

    members = [
        "zoo/base-s",
        "zoo/base-xl",
        "zoo/base-xl@step-500",
        "zoo/base-xl@step-100",
        "zoo/base-xl@step-300",
        "zoo/base-l@step-80",
    ]
    # the last entry holds the final weights; [:-1] are the earlier checkpoints (what section 8
    # fits)
    assert checkpoint_series(members, "zoo/base-xl", final_step=500)[:-1] == [
        "zoo/base-xl@step-100",
        "zoo/base-xl@step-300",
    ]
    # 500 not final
    assert checkpoint_series(members, "zoo/base-xl")[-2:] == [
        "zoo/base-xl@step-500",
        "zoo/base-xl",
    ]
    assert has_checkpoints(members, "zoo/base-xl") and not has_checkpoints(members, "zoo/base-s")
    assert trajectories.checkpoint_series is checkpoint_series, "one definition"


def test_multi_token_law_across_models_or_checkpoints():
    import math

    from kit.mui.multi_token import multi_token_law

    # MUI = -2 ln P + 10 exactly: slope -2 on both families
    def cells(models, perfs):
        return pd.DataFrame(
            [
                {"model": m, "task": t, "performance": p, "mui": -2 * math.log(p) + 10}
                for m, p in zip(models, perfs)
                for t in ("sort-list", "add-steps")
            ]
        )

    three = cells(["a", "b", "c"], [5.0, 20.0, 60.0])
    law, note = multi_token_law(three, "mui_vs_log_perf")
    assert abs(law["slope"] + 2) < 1e-9 and law["n"] == 6 and "over" not in law
    one = pd.concat([cells(["xl"], [40.0]), cells(["s", "m"], [1.0, 1.0]).assign(performance=0.0)])
    law, note = multi_token_law(one, "mui_vs_log_perf")
    assert (
        law["slope"] is None
        and "only 1 model(s)" in law["not_testable"]
        and "none has checkpoints" in law["not_testable"]
    )
    series = cells(["xl@step-10", "xl@step-20", "xl"], [2.0, 10.0, 40.0])
    law, note = multi_token_law(one, "mui_vs_log_perf", series)
    assert abs(law["slope"] + 2) < 1e-9 and law["n"] == 6 and law["over"] == "checkpoints"
    assert (
        law["model"] == "xl"
        and law["n_models"] == 3
        and set(law["per_task"]) == {"sort-list", "add-steps"}
    )
    assert "slope -2.00" in law["per_task"]["sort-list"] and "not independent models" in note
    # one checkpoint answers: no fit
    flat = series.assign(performance=[0.0, 0.0, 0.0, 0.0, 40.0, 40.0])
    law, _ = multi_token_law(one, "mui_vs_log_perf", flat)
    assert law["slope"] is None and "too few distinct" in law["not_testable"]
