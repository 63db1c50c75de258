"""Tests of kit.mui.trajectories: direction labelling of steps and pairs, the published tables, the
corollary checks, the regression-testing report and the tiny-world plumbing (no built world)."""

from __future__ import annotations

import random

import matplotlib
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")

import kit.mui.trajectories as tr  # noqa: E402
from kit.configs.training_trajectories import Config  # noqa: E402
from kit.core.params import ParamsError, load_params  # noqa: E402


@pytest.fixture(autouse=True)
def _seed():
    random.seed(0)
    np.random.seed(0)


def points(rows):
    """(series, order, label, perf, mui) tuples -> the points frame step_directions reads."""
    return pd.DataFrame(rows, columns=["task", "order", "model", "perf", "mui"])


# --- labelling --------------------------------------------------------------------------------


def test_label_directions_quadrants():
    got = tr.label_directions([5, 5, -5, -5], [-1, 1, 1, -1])
    assert got == ["evolving", "accumulating", "coarsening", "collapsing"], (
        "quadrants are (Δperf, ΔMUI): evolving (+,-), accumulating (+,+), coarsening (-,+), collapsing (-,-)"
    )


def test_label_directions_tolerance_needs_both_coordinates():
    # perf change within its tolerance -> flat even though MUI moved a lot
    assert tr.label_directions([1.5], [3.0], tol_perf=2.0) == ["flat"]
    # MUI change within its tolerance -> flat even though performance moved a lot
    assert tr.label_directions([20.0], [-0.04], tol_mui=0.05) == ["flat"]
    # both beyond their tolerance -> a direction
    assert tr.label_directions([2.5], [-0.06], tol_perf=2.0, tol_mui=0.05) == ["evolving"]
    # with zero tolerance a tiny change is still a direction (the paper's reading of the tables)
    assert tr.label_directions([-0.6], [-0.1]) == ["collapsing"]


def test_label_directions_nan_is_flat_and_bad_input_fails():
    assert tr.label_directions([float("nan"), 1.0], [1.0, None]) == ["flat", "flat"]
    with pytest.raises(ValueError, match="tolerances"):
        tr.label_directions([1.0], [1.0], tol_perf=-1)
    with pytest.raises(ValueError, match="d_perf has 2 values but d_mui has 1"):
        tr.label_directions([1.0, 2.0], [1.0])


def test_step_directions_sorts_by_order_and_computes_deltas():
    # given out of order on purpose: the steps must follow `order`, not the row order
    p = points([
        ("a", 300, "c3", 50.0, 4.0),
        ("a", 100, "c1", 10.0, 5.0),
        ("a", 200, "c2", 30.0, 6.0),
        ("b", 100, "c1", 40.0, 2.0),
        ("b", 200, "c2", 35.0, 1.0),
    ])
    st = tr.step_directions(p, series="task")
    a = st[st["task"] == "a"].reset_index(drop=True)
    assert list(a["from"]) == ["c1", "c2"] and list(a["to"]) == ["c2", "c3"], "steps must follow the order column"
    assert list(a["d_perf"]) == [20.0, 20.0] and list(a["d_mui"]) == [1.0, -2.0]
    assert list(a["direction"]) == ["accumulating", "evolving"]
    assert list(a["step"]) == [1, 2] and list(a["n_steps"]) == [2, 2]
    b = st[st["task"] == "b"].iloc[0]
    assert b["direction"] == "collapsing" and b["d_perf"] == -5.0 and b["d_mui"] == -1.0


def test_step_directions_string_steps_are_not_sorted_lexically():
    # "step-1000" < "step-200" as strings: ordering must use the numeric order column
    p = points([("a", 1000, "step-1000", 30.0, 2.0), ("a", 200, "step-200", 10.0, 1.0)])
    st = tr.step_directions(p)
    assert st.iloc[0]["from"] == "step-200" and st.iloc[0]["direction"] == "accumulating"


def test_step_directions_rejects_duplicates_and_missing_columns():
    p = points([("a", 1, "x", 1.0, 1.0), ("a", 1, "y", 2.0, 2.0)])
    with pytest.raises(ValueError, match="several rows"):
        tr.step_directions(p)
    with pytest.raises(ValueError, match="lacks column"):
        tr.step_directions(p.drop(columns="mui"))


def test_pair_directions_and_counts():
    pairs = pd.DataFrame({
        "model": ["ft"] * 4, "task": list("wxyz"), "domain": ["in-domain", "ood", "ood", "ood"],
        "perf": [60.0, 40.0, 10.0, 50.2], "mui": [3.0, 5.0, 1.0, 2.0],
        "base_perf": [50.0, 45.0, 20.0, 50.0], "base_mui": [2.0, 4.0, 2.0, 1.0],
    })
    out = tr.pair_directions(pairs, tol_perf=0.5)
    assert list(out["d_perf"].round(6)) == [10.0, -5.0, -10.0, 0.2]
    assert list(out["direction"]) == ["accumulating", "coarsening", "collapsing", "flat"]
    counts = tr.direction_counts(out, by="domain").set_index("domain")
    assert counts.loc["ood", "coarsening"] == 1 and counts.loc["ood", "evolving"] == 0
    assert counts.loc["ood", "total"] == 3 and counts.loc["in-domain", "accumulating"] == 1
    assert tr.counts_dict(out) == {"evolving": 0, "accumulating": 1, "coarsening": 1, "collapsing": 1,
                                   "flat": 1, "total": 4}
    overall = tr.direction_counts(out)
    assert list(overall.columns) == [*tr.DIRECTIONS, "total"] and int(overall["total"].iloc[0]) == 4


# --- published tables -------------------------------------------------------------------------


def test_published_checkpoints_match_table3_and_paper_profile():
    ck = tr.published_checkpoints()
    assert len(ck) == 8
    assert ck.iloc[0]["hf_name"] == "allenai/OLMo-2-1124-7B@stage1-step122000-tokens512B"
    assert pd.isna(ck.iloc[-1]["revision"]) and ck.iloc[-1]["hf_name"] == "allenai/OLMo-2-1124-7B", (
        "the 4T checkpoint is the final OLMo-2-1124-7B (no stage1 revision)")
    paper = load_params("02_training_trajectories", "paper")
    assert paper.checkpoints == list(ck["hf_name"]), "params paper profile must list Table 3's revisions in order"


def test_published_olmo_schema_and_hand_checked_steps():
    o = tr.published_olmo()
    assert len(o) == 56 and o["model"].nunique() == 8 and o["task"].nunique() == 7
    st = tr.step_directions(o, series="task", label="model")
    gsm_last = st[(st["task"] == "GSM8K") & (st["to"] == "OLMo-2-7B-4T")].iloc[0]
    # Table 8: GSM8K 16.8/5.4 at 3.5T -> 68.2/4.4 at 4T
    assert gsm_last["d_perf"] == pytest.approx(51.4) and gsm_last["d_mui"] == pytest.approx(-1.0)
    assert gsm_last["direction"] == "evolving"
    # 0.5T -> 1T on MMLU: 42.5/17.9 -> 45.2/22.4
    mmlu_first = st[(st["task"] == "MMLU") & (st["step"] == 1)].iloc[0]
    assert mmlu_first["direction"] == "accumulating" and mmlu_first["from"] == "OLMo-2-7B-0.5T"
    # BBH 3.5T -> 4T: 38.5/8.2 -> 46.5/8.2, MUI unchanged: flat, not a direction
    bbh_last = st[(st["task"] == "BBH") & (st["step"] == 7)].iloc[0]
    assert bbh_last["direction"] == "flat"


def test_published_specialised_pairs_and_domains():
    sp = tr.pair_directions(tr.published_specialised())
    assert len(sp) == 21, "3 specialised models x 7 benchmarks (base rows are not pairs)"
    row = sp[(sp["model"] == "CodeLlama-7B-Instruct") & (sp["task"] == "MBPP")].iloc[0]
    assert row["domain"] == "in-domain" and row["base"] == "Llama-2-7B-Chat"
    assert (row["base_perf"], row["base_mui"], row["perf"], row["mui"]) == (24.8, 1.4, 44.7, 2.9)
    assert row["direction"] == "accumulating"
    gsm = sp[(sp["model"] == "CodeLlama-7B-Instruct") & (sp["task"] == "GSM8K")].iloc[0]
    assert gsm["domain"] == "ood" and gsm["direction"] == "coarsening"
    qm = sp[(sp["model"] == "Qwen2.5-Math-7B-Instruct") & (sp["task"] == "GSM8K")].iloc[0]
    # the paper calls this accumulating, but Table 9 prints the same MUI (1.9) for both models
    assert qm["domain"] == "in-domain" and qm["direction"] == "flat"
    assert set(sp.loc[sp["model"] == "Qwen2.5-Math-7B-Instruct"].query("domain == 'in-domain'")["task"]) == {"GSM8K", "MATH"}


def test_published_contamination_pairs():
    co = tr.pair_directions(tr.published_contamination())
    assert len(co) == 42 and set(co["target"]) == {"math", "code"}
    q = co[(co["model"] == "Qwen2.5-Math-Leakage") & (co["task"] == "MMLU")].iloc[0]
    assert q["domain"] == "ood" and q["direction"] == "collapsing"  # 71.3/14.5 -> 44.7/11.1
    garbled = co[(co["model"] == "Llama3.1-Code-Leakage") & (co["task"] == "MATH")].iloc[0]
    assert (garbled["perf"], garbled["mui"]) == (40.2, 4.5), "the garbled '40.2/ 4.5' cell is read as 40.2 / 4.5"
    assert set(co[co["domain"] == "in-domain"]["task"]) == {"GSM8K", "MATH", "HumanEval", "MBPP"}


# --- corollary checks -------------------------------------------------------------------------


def test_corollary_checks_verdicts():
    pre = pd.DataFrame({"step": [1, 2, 3, 1, 2, 3], "n_steps": [3] * 6,
                        "direction": ["accumulating", "accumulating", "evolving", "coarsening", "accumulating", "flat"]})
    spec = pd.DataFrame({"domain": ["in-domain", "ood", "ood"],
                         "direction": ["accumulating", "coarsening", "collapsing"]})
    cont = pd.DataFrame({"domain": ["in-domain", "ood", "ood", "ood"], "task": ["t", "u", "v", "v"],
                         "direction": ["evolving", "collapsing", "collapsing", "coarsening"]})
    chk = tr.corollary_checks(pre, spec, cont, late_steps=1, ood_tasks=["u"]).set_index(["setting", "subset"])
    early = chk.loc[("pre-training", "early steps")]
    assert early["n"] == 4 and early["n_expected"] == 3 and early["verdict"] == "agrees"
    late = chk.loc[("pre-training", "late steps")]
    assert late["n"] == 2 and late["modal"] == "evolving/flat" and late["verdict"] == "tied", (
        "a tie for the most frequent direction must be reported as tied, not as agreement")
    assert chk.loc[("specialisation", "ood"), "verdict"] == "tied"
    assert chk.loc[("contamination", "in-domain"), "verdict"] == "disagrees"
    assert chk.loc[("contamination", "ood"), "share_expected"] == pytest.approx(2 / 3)
    assert chk.loc[("contamination", "ood (u)"), "n"] == 1
    empty = tr.corollary_checks(specialised=spec.iloc[:0].assign(domain=[]))
    assert empty.empty


def test_corollary_findings_name_numbers_and_differences():
    a = tr.corollary_checks(specialised=pd.DataFrame({"domain": ["in-domain"], "direction": ["accumulating"]}))
    b = tr.corollary_checks(specialised=pd.DataFrame({"domain": ["in-domain", "in-domain"],
                                                      "direction": ["coarsening", "coarsening"]}))
    text = "\n".join(tr.corollary_findings({"paper tables": a, "tiny world": b}))
    assert "1/1 (100%)" in text and "0/2 (0%)" in text
    assert "AGREES" in text and "DISAGREES" in text
    assert "same verdict on 0 of 1 claims" in text and "paper tables: agrees" in text
    with pytest.raises(ValueError, match="reference"):
        tr.corollary_findings({"x": a}, reference="y")


# --- regression report ------------------------------------------------------------------------


def _series():
    rows = [
        # checkpoint, task, perf, mui
        ("A", "t1", 10.0, 5.0), ("A", "t2", 20.0, 5.0),
        ("B", "t1", 20.0, 4.0), ("B", "t2", 30.0, 6.0),      # evolving, accumulating -> continue
        ("C", "t1", 30.0, 5.0), ("C", "t2", 25.0, 7.0),      # accumulating, coarsening -> rebalance
        ("D", "t1", 20.0, 4.0), ("D", "t2", 30.0, 8.0),      # collapsing, accumulating -> halt
        ("E", "t1", 19.5, 3.95), ("E", "t2", 30.4, 8.02),    # noise only
    ]
    return pd.DataFrame(rows, columns=["checkpoint", "task", "perf", "mui"])


def test_regression_report_takeaways():
    rep = tr.regression_report(_series(), tol_perf=1.0, tol_mui=0.1)
    assert list(rep["from"]) == ["A", "B", "C", "D"], "checkpoints keep their order of first appearance"
    assert list(rep["takeaway"]) == ["continue", "rebalance", "halt", "continue"]
    assert rep.iloc[1]["flagged"] == "t2:coarsening" and rep.iloc[2]["flagged"] == "t1:collapsing"
    assert rep.iloc[3]["flat"] == 2 and rep.iloc[3]["reason"] == "no change beyond tolerance"
    assert "rebalance" in rep.iloc[1]["reason"] and "halt" in rep.iloc[2]["reason"]


def test_regression_report_tolerance_silences_noise():
    # without tolerance the noisy last step reads as collapsing on t1 -> a false "halt"
    rep0 = tr.regression_report(_series())
    assert rep0.iloc[3]["takeaway"] == "halt" and rep0.iloc[3]["collapsing"] == 1
    rep = tr.regression_report(_series(), tol_perf=1.0, tol_mui=0.1)
    assert rep.iloc[3]["takeaway"] == "continue"


def test_regression_report_order_and_detail():
    s = _series()
    s["order"] = s["checkpoint"].map({"A": 5, "B": 4, "C": 3, "D": 2, "E": 1})
    rep = tr.regression_report(s, order="order")
    assert list(rep["from"]) == ["E", "D", "C", "B"]
    det = tr.regression_report(_series(), detail=True)
    assert len(det) == 8 and set(det.columns) >= {"task", "direction", "takeaway"}
    with pytest.raises(ValueError, match="lacks column"):
        tr.regression_report(_series().drop(columns="task"))
    with pytest.raises(ValueError, match=r"tasks lack checkpoints \{'t2': \['C'\]\}"):
        tr.regression_report(_series().drop(index=5))


# --- tiny-world plumbing (no world needed) ----------------------------------------------------


MEMBERS = ["zoo/base-s", "zoo/base-m", "zoo/base-l", "zoo/base-l@step-1000", "zoo/base-l@step-200",
           "zoo/base-l@step-600", "zoo/base-s@step-10", "zoo/base-m+math", "zoo/base-m+code",
           "zoo/base-m+math-test-x1", "zoo/base-m+math-test-x5", "zoo/base-m+math-test-syn-x5",
           "zoo/base-m+math-train", "zoo/base-m+other-task", "zoo/base-m+general"]


def test_checkpoint_series_numeric_order_and_final():
    assert tr.checkpoint_series(MEMBERS) == ["zoo/base-l@step-200", "zoo/base-l@step-600",
                                             "zoo/base-l@step-1000", "zoo/base-l"]
    assert tr.checkpoint_series(MEMBERS, base="zoo/base-s") == ["zoo/base-s@step-10", "zoo/base-s"]
    # the last checkpoint is the final model (1000 = the base's steps): do not add a zero step
    assert tr.checkpoint_series(MEMBERS, final_step=1000)[-1] == "zoo/base-l@step-1000"
    assert tr.checkpoint_series(MEMBERS, final_step=1200)[-1] == "zoo/base-l"
    tie = MEMBERS + ["zoo/base-xl", "zoo/base-xl@step-100", "zoo/base-xl@step-300", "zoo/base-xl@step-500"]
    assert tr.checkpoint_series(tie)[0] == "zoo/base-l@step-200", "ties: the base listed first"
    with pytest.raises(ValueError, match="no '<base>@step-<N>'"):
        tr.checkpoint_series(["zoo/base-s"])
    with pytest.raises(ValueError, match="bases with checkpoints"):
        tr.checkpoint_series(MEMBERS, base="zoo/base-m")


def test_finetune_pairs_kinds():
    assert tr.finetune_pairs(MEMBERS, "specialised") == {"zoo/base-m+math": "zoo/base-m", "zoo/base-m+code": "zoo/base-m"}
    assert set(tr.finetune_pairs(MEMBERS, "contaminated")) == {
        "zoo/base-m+math-test-x1", "zoo/base-m+math-test-x5", "zoo/base-m+math-test-syn-x5"}
    assert set(tr.finetune_pairs(MEMBERS, "control")) == {
        "zoo/base-m+math-train", "zoo/base-m+other-task", "zoo/base-m+general"}
    with pytest.raises(ValueError, match="allowed values"):
        tr.finetune_pairs(MEMBERS, "leaked")


def _settings():
    return tr.Settings(
        checkpoints=["zoo/base-l@step-200", "zoo/base-l"],
        specialised={"zoo/base-m+math": "zoo/base-m"}, specialised_targets={"zoo/base-m+math": "math"},
        contaminated={"zoo/base-m+math-test-x5": "zoo/base-m"}, controls={},
        contaminated_tasks=["add"], tasks=["add", "add2", "code"],
    )


def _measurements():
    groups = {"add": "math", "add2": "math", "code": "code"}
    table = {  # model -> task -> (perf, mui) on the test split
        "zoo/base-l@step-200": {"add": (10, 2.0), "add2": (5, 2.0), "code": (20, 3.0)},
        "zoo/base-l": {"add": (30, 3.0), "add2": (15, 1.0), "code": (20.5, 2.0)},
        "zoo/base-m": {"add": (40, 2.0), "add2": (30, 2.0), "code": (50, 3.0)},
        "zoo/base-m+math": {"add": (60, 3.0), "add2": (45, 2.5), "code": (30, 4.0)},
        "zoo/base-m+math-test-x5": {"add": (90, 2.5), "add2": (20, 1.0), "code": (40, 2.0)},
    }
    return pd.DataFrame([{"model": m, "task": t, "group": groups[t], "split": "test", "n": 10, "perf": p, "mui": u}
                         for m, d in table.items() for t, (p, u) in d.items()])


def test_analyse_settings_from_measurements():
    s = _settings()
    assert s.models() == ["zoo/base-l@step-200", "zoo/base-l", "zoo/base-m", "zoo/base-m+math",
                          "zoo/base-m+math-test-x5"]
    out = tr.analyse(_measurements(), s, tol_perf=1.0, tol_mui=0.0)
    pre = out["pretraining"].set_index("task")
    assert pre.loc["add", "direction"] == "accumulating" and pre.loc["add2", "direction"] == "evolving"
    assert pre.loc["code", "direction"] == "flat", "a 0.5-point change is below tol_perf=1"
    spec = out["specialised"].set_index("task")
    assert spec.loc["add", "domain"] == "in-domain" and spec.loc["code", "domain"] == "ood"
    assert spec.loc["add", "direction"] == "accumulating" and spec.loc["code", "direction"] == "coarsening"
    cont = out["contaminated"].set_index("task")
    assert list(cont["domain"]) == ["in-domain", "in-group", "ood"]
    assert cont.loc["add", "direction"] == "accumulating" and cont.loc["add2", "direction"] == "collapsing"
    assert out["controls"].empty and "direction" in out["controls"].columns


def test_tiny_pairs_requires_measured_bases():
    with pytest.raises(ValueError, match="were not measured"):
        tr.tiny_pairs(_measurements(), {"zoo/base-m+code": "zoo/base-x"}, tr.specialised_domain())


def test_resolve_settings_explicit_config_needs_no_world():
    cfg = Config(checkpoints=["a@step-1", "a"], specialised={"b+code": "b"}, contaminated={}, controls={},
                 contaminated_tasks=["gsm8k"], tasks=["gsm8k", "mbpp"])
    s = tr.resolve_settings(cfg)
    assert s.specialised_targets == {"b+code": "code"} and s.contaminated == {}
    bad = Config(checkpoints=[], specialised={}, contaminated={}, controls={}, contaminated_tasks=["gsm8k"], tasks=["mbpp"])
    assert tr.resolve_settings(bad).tasks == ["mbpp", "gsm8k"], "the leaked task must always be measured"


def test_measure_tabulates_perf_and_mui(monkeypatch):
    """measure() with the world and MUI boundaries faked: checks the tidy table it builds."""
    import kit.models.load
    import kit.mui.metric
    import kit.world as kworld
    from kit.data.items import Item

    class FakeTask:
        group = "math"

        def items(self, split, n, seed):
            return [Item(f"{split}/{i}", "p", answer="1") for i in range(n)]

    class Res:
        def __init__(self, mui):
            self.mui = mui

    monkeypatch.setattr(kit.models.load, "load_model", lambda name, device="cpu", world=None: name)
    monkeypatch.setattr(kworld, "get_task", lambda t: FakeTask(), raising=False)
    def respond(m, its, max_new_tokens=1):  # right answer ("1") on the first 3 (zoo/a) or 1 (zoo/b) items
        k = 3 if m.endswith("a") else 1
        return ["1 x"] * k + ["10"] * (len(its) - k)

    monkeypatch.setattr(kworld, "respond", respond, raising=False)
    monkeypatch.setattr(kit.mui.metric, "utilization_for_items",
                        lambda m, its, resp, **kw: Res(2.5 if kw["score"] == "score" else -1.0))
    df = tr.measure(["zoo/a", "zoo/b"], ["add"], splits=["test", "fresh"], n_items=4)
    assert list(df.columns) == ["model", "task", "group", "split", "n", "perf", "mui"]
    assert len(df) == 4 and set(df["split"]) == {"test", "fresh"}
    # exact match on the first word: "1 x" counts, "10" does not
    assert list(df[df["model"] == "zoo/a"]["perf"]) == [75.0, 75.0] and list(df[df["model"] == "zoo/b"]["perf"]) == [25.0, 25.0]
    assert (df["mui"] == 2.5).all() and (df["group"] == "math").all()
    with pytest.raises(ValueError, match="allowed values"):
        tr.measure(["zoo/a"], ["add"], splits=["dev"])


# --- config and figures -----------------------------------------------------------------------


@pytest.mark.parametrize("profile", ["tiny", "smoke", "paper", "paper-pythia", "dryrun"])
def test_every_profile_validates(profile):
    cfg = load_params("02_training_trajectories", profile)
    assert cfg.tol_perf >= 0 and cfg.n_items >= 4
    if profile == "smoke":
        assert cfg.world == "micro"


def test_config_rejects_bad_tolerance_with_field_name():
    with pytest.raises(ParamsError, match="tol_mui"):
        load_params("02_training_trajectories", "tiny", overrides={"tol_mui": -0.1})
    with pytest.raises(ParamsError, match="splits"):
        load_params("02_training_trajectories", "tiny", overrides={"splits": ["dev"]})


def test_plots_draw_one_arrow_per_change_in_direction_colours():
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_hex

    o = tr.published_olmo()
    st = tr.step_directions(o[o["task"].isin(["MATH", "BBH"])], series="task", label="model")
    fig = tr.plot_trajectories(o[o["task"].isin(["MATH", "BBH"])], st, series="task", label="model")
    arrows = [a for ax in fig.axes for a in ax.texts if getattr(a, "arrow_patch", None) is not None]
    assert len(arrows) == len(st) == 14
    colours = sorted(to_hex(a.arrow_patch.get_edgecolor()) for a in arrows)
    assert colours == sorted(tr.DIRECTION_COLORS[d] for d in st["direction"])
    plt.close(fig)
    sp = tr.pair_directions(tr.published_specialised())
    fig = tr.plot_pairs(sp)
    assert sum(1 for ax in fig.axes for a in ax.texts if getattr(a, "arrow_patch", None) is not None) == len(sp)
    plt.close(fig)
    fig = tr.plot_direction_counts({"x": tr.counts_dict(sp), "y": tr.counts_dict(st)})
    assert len(fig.axes) == 1 and len(fig.axes[0].patches) == 2 * len(tr.DIRECTIONS), "one bar per setting and direction"
    plt.close(fig)


def test_hub_answers_are_generated_in_one_batched_call_and_scored(monkeypatch):
    """Real-benchmark path: every item's prompt goes to kit.models.generate.respond at once (batched,
    greedy, cached under the benchmark and the item ids), responses are scored by kit.data.scorers
    (gsm8k: last number)."""
    from kit.data.items import Item
    from kit.models import generate as gen

    calls = []

    def respond(model, prompts, settings, benchmark=None, ids=None, **kw):
        calls.append((list(prompts), settings, benchmark, list(ids)))
        return ["100 8", "100 8"]

    monkeypatch.setattr(gen, "respond", respond)
    items = [Item("q1", "two plus 6 is", answer="8"), Item("q2", "a b c d e", answer="100")]
    correct, responses = tr._answer(False, object(), "gsm8k", items, max_new_tokens=2)
    (prompts, settings, benchmark, ids), = calls
    assert prompts == ["two plus 6 is", "a b c d e"] and ids == ["q1", "q2"] and benchmark == "gsm8k"
    assert settings.max_new_tokens == 2 and settings.do_sample is False, "answers must be greedy"
    assert responses == ["100 8", "100 8"] and list(correct) == [True, False]


def test_contamination_text_reports_leak_and_ood_collapse():
    out = tr.analyse(_measurements(), _settings(), tol_perf=1.0)
    text = tr.contamination_text(out["contaminated"], out["controls"])
    # base-m add 40/2.0 -> x5 90/2.5; OOD is only `code` (50/3.0 -> 40/2.0: collapsing)
    assert "add 40.0->90.0% perf, MUI 2.00->2.50% (accumulating)" in text
    assert "OOD collapsing on 1/1 tasks" in text and "no control fine-tunes measured" in text


def test_float_noise_is_not_a_direction_at_zero_tolerance():
    # 0.1 + 0.2 != 0.3 in floating point: an unchanged MUI must stay flat
    p = points([("a", 1, "x", 10.0, 0.3), ("a", 2, "y", 20.0, 0.1 + 0.2)])
    assert tr.step_directions(p).iloc[0]["direction"] == "flat"
    pairs = pd.DataFrame({"perf": [20.0], "mui": [0.1 + 0.2], "base_perf": [10.0], "base_mui": [0.3]})
    assert tr.pair_directions(pairs).iloc[0]["direction"] == "flat"


def test_notebook_follows_the_parameters_convention():
    import json
    import re as _re

    from kit.core.paths import REPO_ROOT

    nb = json.loads((REPO_ROOT / "notebooks" / "02_training_trajectories.ipynb").read_text())
    code_cells = [c for c in nb["cells"] if c["cell_type"] == "code"]
    for c in code_cells:
        c["source"] = "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
    tagged = [i for i, c in enumerate(code_cells) if "parameters" in c["metadata"].get("tags", [])]
    assert len(tagged) == 1, "exactly one code cell must be tagged 'parameters'"
    assert code_cells[tagged[0]]["source"].startswith('profile = "tiny"'), "the parameters cell starts with the profile"
    assert 'kit.start("02_training_trajectories", profile, out_dir, namespace=globals())' in code_cells[tagged[0] + 1]["source"]
    for c in code_cells[tagged[0] + 1:]:
        assert not _re.search(r"^\s*(profile|out_dir)\s*=", c["source"], _re.M), "a later cell reassigns a parameter"
        assert not c.get("outputs") and c.get("execution_count") is None, "commit the notebook without outputs"


def test_coarse_checkpoints_keep_first_and_last():
    names = [f"c{i}" for i in range(10)]
    assert tr.coarse_checkpoints(names, 3) == ["c0", "c5", "c9"]  # index 4.5 rounds half up
    assert tr.coarse_checkpoints(names, 2) == ["c0", "c9"]
    assert tr.coarse_checkpoints(names[:2], 5) == ["c0", "c1"]
    with pytest.raises(ValueError, match="at least 2"):
        tr.coarse_checkpoints(names, 1)


def test_controls_must_not_collapse():
    ctrl = pd.DataFrame({"domain": ["ood"] * 3, "direction": ["collapsing", "collapsing", "coarsening"]})
    row = tr.corollary_checks(controls=ctrl).iloc[0]
    assert row["setting"] == "uncontaminated controls" and row["expected"] == "not collapsing"
    assert row["n_expected"] == 1 and row["verdict"] == "disagrees", (
        "collapsing among uncontaminated controls contradicts 'collapsing only under contamination'")
    ok = tr.corollary_checks(controls=ctrl.assign(direction=["coarsening", "flat", "coarsening"])).iloc[0]
    assert ok["verdict"] == "agrees" and ok["n_expected"] == 3


def test_strict_only_under_contamination_check_on_table9():
    # Item 8: sec. 3.3 says collapsing is only observed under contamination; Table 9's specialised models are
    # uncontaminated, and 4 of their 15 OOD changes collapse (read from the table, at zero tolerance).
    spec = tr.pair_directions(tr.published_specialised())
    row = tr.corollary_checks(uncontaminated=spec).iloc[0]
    assert (row["expected"], row["n"], row["n"] - row["n_expected"]) == ("no collapsing", 15, 4)
    assert row["verdict"] == "disagrees", "one collapsing change without contamination contradicts the strict claim"
    clean = spec.assign(direction="coarsening")
    assert tr.corollary_checks(uncontaminated=clean).iloc[0]["verdict"] == "agrees"


def test_dryrun_profile_is_the_paper_profile_on_revision_twins():
    paper, dry = load_params("02_training_trajectories", "paper"), load_params("02_training_trajectories", "dryrun")
    # the same OLMo-2 revisions, in order, on the OLMo-2 twin
    assert [c.split("@")[1] if "@" in c else None for c in dry.checkpoints] == \
        [c.split("@")[1] if "@" in c else None for c in paper.checkpoints]
    assert all(c.startswith("twin/olmo2") for c in dry.checkpoints)
    assert len(dry.specialised) == len(paper.specialised) and set(dry.specialised_targets) == set(dry.specialised)
    assert sorted(dry.specialised_targets.values()) == sorted(paper.specialised_targets.values())
    assert all(m.startswith("twin/") for m in tr.resolve_settings(dry).models())
    assert (dry.tasks, dry.splits, dry.contaminated_tasks) == (paper.tasks, paper.splits, paper.contaminated_tasks)
    assert tr.source_label(dry.checkpoints) == "measured" and tr.source_label(["zoo/base-s"]) == "tiny world"


def test_measure_real_models_one_at_a_time_with_teacher_forced_mui(monkeypatch, tmp_path):
    """Revision twins through the real-model path: each model is freed (and its HF generation copy
    released) before the next loads; MUI equals kit.mui.metric on the same responses in one batch."""
    import gc
    import weakref

    import kit
    import kit.models.load
    from kit import load_benchmark
    from kit.models import generate as gen
    from kit.models import twins
    from kit.mui import metric as kmui

    names = ["twin/olmo2@step1", "twin/olmo2@step2"]
    for n in names:  # built in the shared cache before the per-item caches move to tmp_path
        twins.twin_path("olmo2", revision=n.split("@")[1])
    monkeypatch.setattr(twins, "twins_root", lambda root=twins.twins_root(): root)
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path))
    real_load, alive, held_at_load = kit.models.load.load_model, [], []

    def load(name, **kw):
        gc.collect()
        alive.append(sum(r() is not None for r in alive_refs))
        held_at_load.append(len(gen._HELD))
        model = real_load(name, **kw)
        alive_refs.append(weakref.ref(model))
        return model

    alive_refs: list = []
    monkeypatch.setattr(kit.models.load, "load_model", load)
    df = tr.measure(names, ["gsm8k"], splits=["test"], n_items=4, max_new_tokens=4, max_batch_tokens=64)
    assert alive == [0, 0] and held_at_load == [0, 0], "a previous model was still in memory"
    assert list(df["model"]) == names and (df["n"] == 4).all()
    items = load_benchmark("gsm8k", "test", limit=4)
    for name, mui in zip(names, df["mui"]):
        model = real_load(name)
        responses = gen.respond(model, [it.prompt for it in items], gen.GenerationSettings(max_new_tokens=4))
        assert mui == pytest.approx(kmui.utilization_for_items(model, items, responses).mui, abs=1e-9)
    assert df["mui"].iloc[0] != df["mui"].iloc[1], "two revisions are two different models"
    assert len(list((tmp_path / "items").glob("*.jsonl"))) == 4  # responses and key neurons, per model
