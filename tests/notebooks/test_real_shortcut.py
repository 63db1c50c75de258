"""Notebook 03 on the ``realsmoke`` profile: SmolLM2 and two one-step stand-in fine-tunes
(kit.models.recipes.SMOKE, built on first use) through the runner. It tests the real path (build,
load by name, the leaked items asked as trained, locate, TE, claims with the not-testable causes of
the tables this scale cannot build), not the leak."""

from __future__ import annotations

import pytest

# the first test of a profile runs all its selected notebooks (fixture notebook_run): more than
# the default per-test timeout on a loaded machine
pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]


@pytest.mark.notebook_run("realsmoke", "03")
def test_notebook_03_runs_on_real_finetunes(notebook_run):
    run = notebook_run("realsmoke", "03")
    assert run.status == "ok", f"03 failed on realsmoke ({run.dir}):\n{run.error[-3000:]}"
    r = run.results()
    assert r["n_layers"] == 30 and r["d_mlp"] == 1536 and r["n_patched"] == 654
    assert [row["variant"] for row in r["table2"]] == ["Vanilla", "+4x test", "+other data"]
    claims = {c["id"]: c for c in r["claims"]}
    assert "te.leak[+4x test]" in claims and claims["te.leak[+4x test]"]["kind"] == "set-up check"
    for cid in ("cheaters.table12", "te_full.contaminated_drop"):
        assert claims[cid]["verdict"] == "not testable here", cid
    # a second real base fits this machine, not the budget
    assert claims["second_base.table6"]["verdict"] == "cannot be decided here"
    assert "full fine-tunes" in claims["te_full.contaminated_drop"]["why"]
