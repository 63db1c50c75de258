"""Notebook 06 on the ``realsmoke`` profile: the measurement audits on a real pretrained LLM
(SmolLM2-135M-Instruct, installed offline by ``make setup``) with tiny SAEs trained on its own
activations, benchmark text as prompts and an IOI circuit found by patching its heads, its edges
scored by attribution for MIB."""

from __future__ import annotations

import json

import pytest

# the first test of a profile runs all its selected notebooks (fixture notebook_run): more than
# the default per-test timeout on a loaded machine
pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]


@pytest.mark.notebook_run("realsmoke", "06")
def test_notebook_06_audits_a_real_llm(notebook_run):
    nb = notebook_run("realsmoke", "06")
    assert nb.status == "ok", f"06 failed on realsmoke ({nb.dir}):\n{nb.error[-3000:]}"
    run = nb.dir
    r = json.loads((run / "results.json").read_text())
    assert r["circuit_model"] == "real/smollm2-135m-instruct"
    assert len(r["circuit_heads"]) == 1 and r["circuit_heads"][0].startswith("12."), "circuit_layers: [12]"
    assert r["audits"]["M14"]["value"] is None, "M14 not run, and says why"
    assert r["cpr"] is not None, "MIB runs: SmolLM2's 35,776 edges scored by attribution within edge_budget_s"
    audits = json.loads((run / "audits.json").read_text())
    saes = {s for a in audits for s in a["inputs"]["sae"]}
    assert saes and all(s.startswith("real-sae/smollm2-135m-instruct/") for s in saes)
    claims = {c["id"]: c for c in r["claims"]}
    assert claims["M14.vs_null"]["verdict"] == "not testable here" and "harmful" in claims["M14.vs_null"]["why"]
    mib = claims["MIB.vs_null"]
    assert mib["verdict"] != "not testable here" and "edges scored by attribution" in mib["statement"]
