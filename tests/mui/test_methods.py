"""Tests of kit.mui.methods: methods of the B.6 grid that coincide by construction."""

from __future__ import annotations

import pandas as pd
import pytest

from kit.mui import methods


def test_coincident_methods_are_found_by_construction():
    grid = pd.DataFrame(
        {
            "method": ["score/topk", "score/top_pct", "score_sum/topk", "score/topscore@0.2"],
            "d_mlp": 512,
            "max_response_tokens": 1,
            "model": "m",
            "task": "t",
            "mui": 1.0,
        }
    )
    assert methods.coincident_methods(grid) == {
        "score/top_pct": "score/topk",
        "score_sum/topk": "score/topk",
    }
    assert methods.coincident_methods(grid.assign(max_response_tokens=3)) == {
        "score/top_pct": "score/topk"
    }


def test_public_code_section_can_build_the_codes_rows_as_the_code_does(tmp_path, monkeypatch):
    from types import SimpleNamespace

    import kit
    from kit.mui.methods import public_code_section

    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path))
    from kit.mui.quickstart import FileItem

    subject = kit.load_subject("twin/llama")
    # short prompts: the code never cuts a row to the twin's 256-token context
    short = [FileItem(str(i), f"Question: {i} + 2 =\nAnswer:", str(i + 2)) for i in range(2)]
    monkeypatch.setattr(subject, "items", lambda *args, **kwargs: short)
    cfg = SimpleNamespace(n_items=2, seed=0, max_new_tokens=3, batch_size=4, max_batch_tokens=4096)
    kit_rows = public_code_section(subject, "arc_challenge", cfg, k=1)
    own = public_code_section(subject, "arc_challenge", cfg, k=1, prompts="public_code")
    variants = [r["variant"] for r in own.record["public_code_vs_paper"]]
    assert variants[1:] == [
        "public_code, 1 GPU(s), its prompts",
        "public_code, 2 GPU(s), its prompts",
    ]
    assert "tokenised as the code tokenises them" in own.findings[0]
    paper = [r for r in kit_rows.record["public_code_vs_paper"] if r["variant"].startswith("paper")]
    assert paper == own.record["public_code_vs_paper"][:1], "the paper's row keeps kit's rows"
    with pytest.raises(ValueError, match="prompts='hf'; allowed values: kit, public_code"):
        public_code_section(subject, "arc_challenge", cfg, k=1, prompts="hf")
