"""Notebook 02's claims (kit.mui.direction_claims): hand-computed cases, and for each claim kind a
null-equivalent input that must come out inconclusive and a decided one."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from kit.core.claims import check_consistent, decided
from kit.core.stats import wilson_interval
from kit.mui import direction_claims as dc
from kit.mui import trajectories as tr
from kit.mui.claims import REQUIRED_IDS

# --- building blocks, by hand -----------------------------------------------------------------


def test_conditional_share_reads_only_changes_with_the_predicted_performance_sign():
    changes = pd.DataFrame(
        {
            "direction": [
                "accumulating",
                "evolving",
                "accumulating",
                "coarsening",
                "collapsing",
                "flat",
            ],
            "task": ["a", "a", "b", "b", "c", "c"],
        }
    )
    # accumulating predicts perf up: the perf-up changes are 2 accumulating + 1 evolving
    s = dc.conditional_share(changes, "accumulating", "task")
    assert (s["k"], s["m"], s["clusters"], s["n_changes"]) == (2, 3, 2, 6)
    assert s["share"] == pytest.approx(2 / 3)
    # coarsening predicts perf down: 1 coarsening + 1 collapsing
    s = dc.conditional_share(changes, "coarsening", "task")
    assert (s["k"], s["m"], s["clusters"]) == (1, 2, 2)


def test_clustered_wilson_uses_the_number_of_clusters_as_the_sample_size():
    lo, hi = dc.clustered_wilson(0.75, 8)
    assert (lo, hi) == pytest.approx(wilson_interval(6, 8)[1:])
    # the same share over 2 clusters is much wider
    lo2, hi2 = dc.clustered_wilson(0.75, 2)
    assert lo2 < lo and hi2 >= hi


def test_label_permutation_null_is_exact_by_hand():
    # units 1, 0 (treated) vs 0 (control): arrangements of 2 treated among 3 values
    obs, null, exact = dc.label_permutation_null([1.0, 0.0], [0.0])
    assert exact and obs == pytest.approx(0.5)
    # {1,0}|0 -> 0.5, {1,0}|0 (the other 0) -> 0.5, {0,0}|1 -> -1
    assert sorted(null.tolist()) == pytest.approx([-1.0, 0.5, 0.5])
    lo, hi = dc.order_band(np.array([-1.0, 0.5, 0.5]))
    assert (lo, hi) == (-1.0, 0.5)


def test_order_band_cannot_be_beaten_with_too_few_arrangements():
    # 4 vs 3 models: 35 arrangements, the most extreme has p = 1/35 > 0.025
    obs, null, exact = dc.label_permutation_null([1, 1, 1, 1], [0, 0, 0])
    assert exact and null.size == math.comb(7, 4) and obs == null.max()
    assert dc.order_band(null)[1] == obs, "the band's top is the maximum: nothing lies beyond it"


# --- the claims: a null-equivalent input and a decided one per kind ----------------------------


def _pairs(rates: dict[str, float], n_tasks: int = 8, domain: str = "ood") -> pd.DataFrame:
    rows = []
    for model, rate in rates.items():
        k = int(round(rate * n_tasks))
        for i in range(n_tasks):
            rows.append(
                {
                    "model": model,
                    "task": f"t{i}",
                    "domain": domain,
                    "direction": "collapsing" if i < k else "coarsening",
                }
            )
    return pd.DataFrame(rows)


def _series(directions: list[str], n_tasks: int, n_steps: int) -> pd.DataFrame:
    """Pre-training steps: every task's trajectory has ``n_steps`` steps, labelled from the list
    (cycled)."""
    rows = []
    for t in range(n_tasks):
        for s in range(1, n_steps + 1):
            rows.append(
                {
                    "task": f"t{t}",
                    "step": s,
                    "n_steps": n_steps,
                    "direction": directions[(t * n_steps + s - 1) % len(directions)],
                }
            )
    return pd.DataFrame(rows)


def _tables(
    pre: pd.DataFrame,
    spec: pd.DataFrame,
    cont: pd.DataFrame,
    ctrl: pd.DataFrame,
    source: str = "tiny world (test split)",
) -> dc.DirectionTables:
    return dc.DirectionTables(
        source,
        pre,
        spec,
        cont,
        ctrl,
        late_steps=1,
        rests_on={"pre-training": "one run", "contamination": "fine-tunes"},
    )


EMPTY = pd.DataFrame(columns=["model", "task", "domain", "direction"])


@pytest.mark.parametrize("kind", ["reproduction", "re-analysis"])
def test_direction_claim_null_equivalent_is_inconclusive_and_a_clear_one_decided(kind):
    q = dc.QUESTIONS[0]  # early accumulating
    # null-equivalent: perf rises at every step (the setting fixes it) and MUI's sign is a coin:
    # half accumulating, half evolving. Against 0.5 unconditioned on the sign it would pass nothing
    # either, but a "share of all changes that are accumulating" against 1/4 would have passed.
    coin = _tables(
        _series(["accumulating", "evolving"], n_tasks=12, n_steps=5), EMPTY, EMPTY, EMPTY
    )
    c = dc.direction_claim(coin, q, "", kind)
    check_consistent(c)
    assert c.verdict == "inconclusive" and c.ours == pytest.approx(0.5) and c.kind == kind
    assert c.extra["p_value"] > 0.05 and c.rests_on == "one run"
    yes = _tables(_series(["accumulating"], n_tasks=12, n_steps=5), EMPTY, EMPTY, EMPTY)
    c = dc.direction_claim(yes, q, "", kind)
    assert c.verdict == "supported" and c.ci_low > 0.5 and c.extra["clusters"] == 12
    no = _tables(_series(["evolving"], n_tasks=12, n_steps=5), EMPTY, EMPTY, EMPTY)
    assert dc.direction_claim(no, q, "", kind).verdict == "contradicted"
    # one cluster: even a perfect share decides nothing, and the design says so before the data
    one = _tables(_series(["accumulating"], n_tasks=1, n_steps=40), EMPTY, EMPTY, EMPTY)
    c = dc.direction_claim(one, q, "", kind)
    assert c.verdict == "cannot be decided here" and "even 1 of 1" in c.why
    check_consistent(c)
    # three clusters all the predicted way: Wilson's lower bound 0.439 is under 1/2 (the 02
    # in-domain contamination case); four: 0.510, so it can be decided
    three = _tables(_series(["accumulating"], n_tasks=3, n_steps=5), EMPTY, EMPTY, EMPTY)
    c = dc.direction_claim(three, q, "", kind)
    assert c.verdict == "cannot be decided here" and "0.439" in c.why
    four = _tables(_series(["accumulating"], n_tasks=4, n_steps=5), EMPTY, EMPTY, EMPTY)
    assert dc.direction_claim(four, q, "", kind).verdict == "supported"
    # whatever the data: three clusters going the wrong way cannot be decided either
    wrong = _tables(_series(["evolving"], n_tasks=3, n_steps=5), EMPTY, EMPTY, EMPTY)
    assert dc.direction_claim(wrong, q, "", kind).verdict == "cannot be decided here"


def test_direction_claim_not_testable_without_changes_of_the_predicted_sign():
    falling = _tables(
        _series(["coarsening", "collapsing"], n_tasks=4, n_steps=3), EMPTY, EMPTY, EMPTY
    )
    c = dc.direction_claim(falling, dc.QUESTIONS[0], "", "reproduction")
    assert c.verdict == "not testable here" and "performance rose" in c.why
    # a setting with no models at all says so (the real profile has no training checkpoints)
    nothing = _tables(EMPTY, EMPTY, EMPTY, EMPTY)
    c = dc.direction_claim(nothing, dc.QUESTIONS[0], "", "reproduction")
    assert c.verdict == "not testable here" and "no training checkpoints" in c.why


def test_one_specialised_fine_tune_cannot_be_decided_whatever_its_changes():
    """The real profile's one specialised fine-tune (+arc-train): the design (one unit) decides
    nothing, whether or not its changes go the way performance predicts."""
    in_domain = dc.QUESTIONS[2]
    assert in_domain.setting == "specialisation" and in_domain.subset == "in-domain"
    for direction in ("accumulating", "collapsing"):  # perf rose / perf fell in domain
        spec = pd.DataFrame(
            [
                {
                    "model": "real/s+arc-train",
                    "task": "arc_challenge",
                    "domain": "in-domain",
                    "direction": direction,
                },
                {
                    "model": "real/s+arc-train",
                    "task": "mmlu",
                    "domain": "ood",
                    "direction": "evolving",
                },
            ]
        )
        c = dc.direction_claim(_tables(EMPTY, spec, EMPTY, EMPTY), in_domain, "", "reproduction")
        check_consistent(c)
        assert c.verdict == "cannot be decided here", (direction, c.why)
        assert "too few fine-tunes" in c.why and "1 of 1" in c.why


@pytest.mark.parametrize("kind", ["reproduction", "re-analysis"])
def test_contamination_ood_against_controls_null_equivalent_and_decided(kind):
    same = dc.contamination_ood_claim(
        _pairs({f"c{i}": 0.375 for i in range(5)}),
        _pairs({f"u{i}": 0.375 for i in range(5)}),
        "w",
        "",
        kind,
        "x",
    )
    check_consistent(same)
    assert same.verdict == "inconclusive" and same.ours == pytest.approx(0.0) and same.kind == kind
    apart = dc.contamination_ood_claim(
        _pairs({f"c{i}": 0.875 for i in range(5)}),
        _pairs({f"u{i}": 0.125 for i in range(5)}),
        "w",
        "",
        kind,
        "x",
    )
    check_consistent(apart)
    assert apart.verdict == "supported" and apart.ours == pytest.approx(0.75)
    assert apart.extra["exact"] and apart.extra["p_value"] == pytest.approx(1 / math.comb(10, 5))
    # 4 contaminated vs 3 controls, perfectly apart: 35 arrangements cannot reach 2.5%
    few = dc.contamination_ood_claim(
        _pairs({f"c{i}": 1.0 for i in range(4)}),
        _pairs({f"u{i}": 0.0 for i in range(3)}),
        "w",
        "",
        kind,
        "x",
    )
    assert few.verdict == "cannot be decided here" and few.extra["p_value"] == pytest.approx(1 / 35)
    assert "35 label arrangements" in few.why
    # the real profile's 3 contaminated against 2 clean fine-tunes: p >= 1/10, whatever happens
    real = dc.contamination_ood_claim(
        _pairs({f"c{i}": 1.0 for i in range(3)}),
        _pairs({f"u{i}": 0.0 for i in range(2)}),
        "w",
        "",
        kind,
        "x",
    )
    assert real.verdict == "cannot be decided here" and "0.1 > 0.025" in real.why
    check_consistent(real)
    # changes of one model are not independent units: 32 changes of 4 models are 4 units
    assert len(few.extra["contaminated_rates"]) == 4
    none = dc.contamination_ood_claim(_pairs({"c0": 1.0}), EMPTY, "w", "", kind, "x")
    assert none.verdict == "not testable here"


def _leak_measurements(ft_test: float, ft_fresh: float, n: int = 200) -> pd.DataFrame:
    rows = [("base", "test", 40.0), ("base", "fresh", 40.0)]
    for i in range(3):
        rows += [(f"ft{i}", "test", ft_test), (f"ft{i}", "fresh", ft_fresh)]
    return pd.DataFrame(
        [{"model": m, "task": "add", "split": s, "perf": p, "n": n} for m, s, p in rows]
    )


def test_leak_set_up_check_null_equivalent_and_decided():
    fts = {f"ft{i}": "base" for i in range(3)}
    flat = dc.leak_claim(_leak_measurements(50.0, 50.0), fts, ["add"], "world")
    check_consistent(flat)
    assert (
        flat.kind == "set-up check"
        and flat.verdict == "inconclusive"
        and flat.ours == pytest.approx(0.0)
    )
    leak = dc.leak_claim(_leak_measurements(80.0, 45.0), fts, ["add"], "world")
    assert leak.verdict == "supported" and leak.ours == pytest.approx(35.0)

    # by hand: mean over 3 fine-tunes of (t_i - f_i) - (t_b - f_b); each fine-tune's accuracies
    # weigh 1/3, the base's 1 (it is subtracted once per fine-tune, divided by 3); 8 shares, each
    # with 2/8 extra successes in 4/8 extra trials (Price-Bonett)
    def adj(k):
        return (k + 0.25) / 200.5

    centre = 100 * ((adj(160) - adj(90)) - (adj(80) - adj(80)))
    var = 3 * (1 / 3) ** 2 * sum(adj(k) * (1 - adj(k)) for k in (160, 90)) / 200.5
    var += 2 * adj(80) * (1 - adj(80)) / 200.5
    assert leak.ci_high == pytest.approx(centre + 1.959964 * 100 * math.sqrt(var))
    assert leak.ci_low == pytest.approx(centre - 1.959964 * 100 * math.sqrt(var))
    no_fresh = dc.leak_claim(
        _leak_measurements(80.0, 45.0).query("split == 'test'"), fts, ["add"], "w"
    )
    assert no_fresh.verdict == "not testable here"


# --- the whole study ----------------------------------------------------------------------------


def _study(reseed: bool = True) -> tr.TrajectoryStudy:
    s = tr.Settings(
        checkpoints=["zoo/b@step-1", "zoo/b"],
        specialised={"zoo/m+math": "zoo/m"},
        specialised_targets={"zoo/m+math": "math"},
        contaminated={"zoo/m+math-test-x5": "zoo/m"},
        controls={"zoo/m+general": "zoo/m"},
        contaminated_tasks=["add"],
        tasks=["add", "code"],
    )
    groups = {"add": "math", "code": "code"}
    table = {
        "zoo/b@step-1": {"add": (10, 2.0), "code": (20, 3.0)},
        "zoo/b": {"add": (30, 3.0), "code": (25, 3.5)},
        "zoo/m": {"add": (40, 2.0), "code": (50, 3.0)},
        "zoo/m+math": {"add": (60, 3.0), "code": (30, 4.0)},
        "zoo/m+math-test-x5": {"add": (90, 2.5), "code": (40, 2.0)},
        "zoo/m+general": {"add": (41, 2.2), "code": (52, 3.1)},
    }
    meas = pd.DataFrame(
        [
            {
                "model": m,
                "task": t,
                "group": groups[t],
                "split": sp,
                "n": 100,
                "perf": p
                - (30 if sp == "fresh" and m == "zoo/m+math-test-x5" and t == "add" else 0),
                "mui": u,
            }
            for m, d in table.items()
            for t, (p, u) in d.items()
            for sp in ("test", "fresh")
        ]
    )
    from kit.mui import directions, published_trajectories

    study = tr.TrajectoryStudy(
        olmo_steps=directions.step_directions(
            published_trajectories.published_olmo(), series="task"
        ),
        published_specialised=directions.pair_directions(
            published_trajectories.published_specialised()
        ),
        published_contamination=directions.pair_directions(
            published_trajectories.published_contamination()
        ),
        settings=s,
        measurements=meas,
        directions=tr.analyse(meas, s, tol_perf=1.0),
    )
    study.rests_on = tr.rests_on(s, study.source)
    if reseed:
        study.reseeds[1] = (meas, tr.analyse(meas, s, tol_perf=1.0))
    return study


def test_study_claims_kinds_ids_and_stability():
    claims = {c.id: c for c in dc.study_claims(_study(), "test", late_steps=1)}
    assert set(REQUIRED_IDS["02_training_trajectories"]) <= set(claims)
    assert set(REQUIRED_IDS["02_training_trajectories"]) == set(dc.REQUIRED_IDS)
    for c in claims.values():
        check_consistent(c)
        if c.id.startswith("paper."):
            assert c.kind == "re-analysis" and "Table" in c.rests_on and c.stability == ""
        elif c.id.startswith("setup."):
            assert c.kind == "set-up check"
        else:
            assert (
                c.kind == "reproduction"
                and c.rests_on
                and c.stability.startswith("stable under item draws")
            )
    # the leak of 30 points on 100 items a side is decided; the paper's late evolving changes
    # (9 of 10 over 6 benchmarks) are not, once the sign of the performance change is given
    assert claims["setup.leak_on_test_split"].verdict == "supported"
    assert claims["paper.corollary1.late_evolving"].verdict == "inconclusive"
    assert "checkpoints of one training run" in claims["corollary1.early_accumulating"].rests_on
    assert all(
        c.ci_low is not None or c.null_low is not None for c in claims.values() if decided(c)
    )


def test_study_claims_without_reseeds_leave_stability_unmarked():
    claims = dc.study_claims(_study(reseed=False), "test", late_steps=1)
    assert all(c.stability == "" for c in claims)


def test_rests_on_names_the_models():
    s = _study().settings
    r = tr.rests_on(s, "tiny world")
    assert "zoo/m+math-test-x5" in r["contamination"] and "zoo/m+general" in r["contamination"]
    assert "2 checkpoints of one training run (zoo/b)" in r["pre-training"]


def test_real_model_scope_counts_what_three_and_two_fine_tunes_can_decide():
    assert dc.smallest_p(3, 2) == pytest.approx(0.1)
    lines = dc.real_model_scope(["c1", "c2", "c3"], ["u1", "u2"])
    assert "10 label arrangements, smallest one-sided p 0.1, so it cannot be decided" in lines[3]
    assert "Wilson lower bound of 0.439" in lines[2] and "cannot be supported" in lines[2]
    many = dc.real_model_scope([f"c{i}" for i in range(8)], [f"u{i}" for i in range(8)])
    assert "cannot be decided" not in many[3] and "could be decided" in many[2]
