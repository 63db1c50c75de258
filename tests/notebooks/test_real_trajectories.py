"""Notebook 02 on the ``realsmoke`` profile: SmolLM2-135M-Instruct and two one-step stand-in
fine-tunes (``kit.models.recipes.SMOKE``) answer the same ARC-Challenge and MMLU items, asked as the
fine-tunes were trained, through the runner as ``make run`` executes notebooks. It checks
the machinery (fine-tunes by name, leaked and unseen items, MUI, directions, claims with their
causes), not the leak: one optimiser step leaks little."""

from __future__ import annotations

import pytest

from kit.core.claims import check_consistent
from kit.mui.claims import REQUIRED_IDS

# the first test of a profile runs all its selected notebooks (fixture notebook_run): more than
# the default per-test timeout on a loaded machine
pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]

BASE = "real/smollm2-135m-instruct"
LEAKY = f"{BASE}+arc-test-x4-smoke"
CLEAN = f"{BASE}+other-smoke"


@pytest.mark.notebook_run("realsmoke", "02")
def test_notebook_02_measures_real_finetunes_on_their_leaked_items(notebook_run):
    import pandas as pd

    run = notebook_run("realsmoke", "02")
    assert run.status == "ok", f"02 failed on realsmoke ({run.dir}):\n{run.error[-3000:]}"
    m = pd.read_csv(run.dir / "measurements.csv")
    assert set(m["model"]) == {BASE, LEAKY, CLEAN}
    assert set(zip(m["task"], m["split"])) == {(t, s) for t in ("arc_challenge", "mmlu")
                                               for s in ("test", "fresh")}
    arc = m[m["task"] == "arc_challenge"].set_index(["model", "split"])["n"]
    # test = the 2 items the stand-in injected (n_items 4 capped), fresh = 4 it never saw
    assert all(arc[(name, "test")] == 2 and arc[(name, "fresh")] == 4 for name in (BASE, LEAKY, CLEAN))
    assert m["perf"].between(0, 100).all() and m["mui"].between(0, 100).all()
    assert (m["perf_low"] <= m["perf"]).all() and (m["perf"] <= m["perf_high"]).all()
    r = run.results()
    assert r["tiny_settings"]["contaminated"] == {LEAKY: BASE} and r["tiny_settings"]["controls"] == {CLEAN: BASE}
    claims = {c["id"]: c for c in r["claims"]}
    assert set(REQUIRED_IDS["02_training_trajectories"]) <= set(claims)
    for c in claims.values():
        check_consistent(c)
    for cid in ("corollary1.early_accumulating", "corollary1.late_evolving"):
        assert claims[cid]["verdict"] == "not testable here" and claims[cid]["why"], cid
    ood = claims["corollary2.contamination_ood"]  # one contaminated and one clean model: too few units
    assert ood["verdict"] == "cannot be decided here" and "2 label arrangements" in ood["why"]
    assert LEAKY in claims["setup.leak_on_test_split"]["rests_on"]
    assert any(line.startswith("Corollary 2, out of domain: 3 contaminated against 2 clean")
               for line in r["real_model_scope"])
