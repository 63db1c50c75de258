"""report.md and report.html from a run directory's results.json files."""

from __future__ import annotations

import json

from kit.core import claims as C
from kit.core.report import collect, write_report


def _fake_run(tmp_path):
    run = tmp_path / "20260101-000000"
    (run / "03_shortcut_neurons" / "figures").mkdir(parents=True)
    (run / "03_shortcut_neurons" / "figures" / "fig3_sparsity_curve.png").write_bytes(
        b"\x89PNG fake"
    )
    (run / "05_neuronvote").mkdir()
    (run / "05_neuronvote" / "results.json").write_text(json.dumps({"n": 1}))  # no claims recorded
    rows = [
        C.claim(
            "001",
            "Table 2",
            "te",
            "TE lowers a | contaminated model",
            -3.0,
            ci=(-5.0, -1.0),
            null=0.0,
            direction="less",
            figure="fig3_sparsity_curve",
            notebook="03_shortcut_neurons",
        ).row(),
        C.claim(
            "001",
            "Fig. 4",
            "agree",
            "TE agrees <better>",
            0.1,
            ci=(-0.2, 0.4),
            null=0.0,
            notebook="03_shortcut_neurons",
        ).row(),
    ]
    (run / "03_shortcut_neurons" / "results.json").write_text(json.dumps({"claims": rows}))
    (run / "run.json").write_text(
        json.dumps(
            {
                "profile": "smoke",
                "notebooks": [
                    {"notebook": "03_shortcut_neurons", "status": "ok"},
                    {"notebook": "04_competency_gaps", "status": "failed"},
                ],
            }
        )
    )
    return run


def test_report_has_one_table_per_paper_and_names_gaps(tmp_path):
    run = _fake_run(tmp_path)
    claims, silent = collect(run)
    assert [c["id"] for c in claims] == ["te", "agree"] and silent == ["05_neuronvote"]
    md, page = write_report(run)
    text = md.read_text()
    assert "## Shortcut neurons" in text and "Competency Gaps" not in text.split("## ")[-1]
    assert "1 supported, 1 inconclusive" in text
    assert "[-5, -1]" in text and "**supported**" in text
    assert "TE lowers a \\| contaminated model" in text, (
        "a pipe in a statement must not break the table"
    )
    assert "(03_shortcut_neurons/figures/fig3_sparsity_curve.png)" in text, (
        "claims link their figure"
    )
    assert "Failed notebooks" in text and "04_competency_gaps" in text
    assert "05_neuronvote" in text, "a notebook without claims is named"
    body = page.read_text()
    assert body.startswith("<!doctype html>") and "data:image/png;base64," in body, (
        "figures are embedded"
    )
    assert "&lt;better&gt;" in body and "http" not in body, (
        "escaped, and nothing loaded from the network"
    )
    assert "class='supported'" in body and "class='inconclusive'" in body


def test_report_for_a_run_without_claims(tmp_path):
    run = tmp_path / "r"
    (run / "00_quickstart").mkdir(parents=True)
    md, page = write_report(run)
    assert "0 claims" in md.read_text() and "00_quickstart" in md.read_text()


def test_headline_counts_reproduction_claims_only(tmp_path):
    from kit.core.report import headline

    claims = [
        C.claim("000", "s", "a", "a", 1.0, ci=(0.5, 1.5), null=0.0).row(),
        C.claim("000", "s", "b", "b", 1.0, ci=(0.5, 1.5), null=0.0, kind="re-analysis").row(),
        C.claim("001", "s", "c", "c", 1.0, ci=(0.5, 1.5), null=0.0, kind="set-up check").row(),
        C.claim("003", "s", "d", "d", 1.0, ci=(0.5, 1.5), null=0.0, kind="audit").row(),
    ]
    line = headline(claims)
    assert line.startswith("1 reproduction claims: 1 supported.")
    assert "1 re-analysis, 1 set-up check, 1 audit" in line


def test_headline_keeps_undecidable_claims_out_of_the_counts_and_reads_the_paper():
    from kit.core.report import headline

    claims = [
        C.claim("000", "s", "a", "a", 1.0, ci=(0.5, 1.5), null=0.0).row(),
        C.claim(
            "000", "s", "b", "b", 1.0, ci=(0.5, 1.5), null=0.0, undecidable="3 against 2 units"
        ).row(),
        C.claim(
            "001",
            "s",
            "c",
            "c",
            0.2,
            ci=(-0.6, 1.1),
            null=0.0,
            direction="less",
            paper_effect=(-49.8, -7.1),
        ).row(),
    ]
    line = headline(claims)
    assert line.startswith("2 reproduction claims: 1 supported, 1 inconclusive.")
    assert "1 reproduction claims that cannot be decided here" in line
    assert "Against the paper's published effect: 1 not replicated." in line


def test_a_notebook_that_measures_without_claims_shows_its_numbers(tmp_path):
    """Notebook 00's report said "0 claims" and nothing else: its accuracy, interval and MUI (and
    each comparison cell's) are a table of their own."""
    run = tmp_path / "20260101-000000"
    (run / "00_quickstart").mkdir(parents=True)
    answers = {"task": "add", "n": 200, "n_correct": 10, "accuracy": 0.05, "chance": 0.015625}
    answers |= {"accuracy_ci95": [0.0274, 0.0896], "parse_failures": 0, "truncated": 3}
    record = {"model": "zoo/base-s", **answers, "mui": 4.6875, "n_eval": 200}
    record["comparison"] = [
        {"model": "real/smollm2", **answers, "task": "arc_challenge", "chance": None, "mui": 12.5}
    ]
    (run / "00_quickstart" / "results.json").write_text(json.dumps(record))
    (run / "run.json").write_text(json.dumps({"profile": "tiny", "notebooks": []}))
    md, page = write_report(run)
    text = md.read_text()
    assert (
        "| 00_quickstart | zoo/base-s | add | 200 | 0.050 | [0.027, 0.090] | 0.016 | 0 | 3 | 4.69 |"
        in text
    )
    other = "| 00_quickstart | real/smollm2 | arc_challenge | 200 | 0.050 | [0.027, 0.090] |  |"
    assert other + " 0 | 3 | 12.50 |" in text
    body = page.read_text()
    assert (
        "<td>4.69</td>" in body and "<td>[0.027, 0.090]</td>" in body and "<td>12.50</td>" in body
    )
    assert "Measurements" not in write_report(_fake_run(tmp_path / "other"))[0].read_text(), (
        "no table when no notebook measured"
    )


def _rep(cid: str, rests_on: str, ci=(0.5, 1.5), **kw) -> dict:
    return C.claim("000", "s", cid, cid, 1.0, ci=ci, null=0.0, rests_on=rests_on, **kw).row()


def test_basis_reads_what_a_claim_rests_on():
    assert C.basis(_rep("a", "real/smollm2-135m-instruct and real/gemma-3-270m")) == C.REAL_LLM
    # a real model's outputs over a MiniLM concept space rest on the real model
    assert C.basis(_rep("b", "real/qwen2.5-coder-0.5b-instruct; minilm-sae/L4")) == C.REAL_LLM
    assert C.basis(_rep("c", "all-MiniLM-L6-v2 (a pretrained encoder)")) == "MiniLM"
    # a real model's published responses name it but were not run here
    assert (
        C.basis(_rep("d", "llama3.1-8b-instruct: published greedy responses"))
        == "published responses"
    )
    assert C.basis(_rep("e", "tiny world: zoo/base-m+math")) == "tiny world"
    assert C.basis(_rep("f", "the paper's Table 5", kind="re-analysis")) == "paper's tables"
    # nothing named: the profile says what ran
    assert C.basis(_rep("g", "its own responses"), "tiny") == "tiny world"
    assert C.basis(_rep("g", "its own responses"), "dryrun") == "random twin"
    assert C.basis(_rep("g", "its own responses"), "real") == "unstated"


def test_real_headline_counts_only_claims_on_a_real_llm_and_names_the_shared_ones():
    from kit.core.report import headline

    claims = [
        _rep("law", "real/smollm2-135m-instruct, real/gemma-3-270m, real/qwen2.5-coder-0.5b"),
        _rep("pair", "real/qwen2.5-coder-0.5b-instruct vs -1.5b", ci=(-1.5, -0.5)),
        _rep("nv", "all-MiniLM-L6-v2, layers 0, 2, 5"),
        _rep("nv2", "all-MiniLM-L6-v2, layers 0, 2, 5", ci=(-0.5, 1.5)),
        _rep("cg", "llama3.1-8b-instruct: published greedy responses"),
        _rep("gap", "tiny world: zoo/base-m+gap-dyck-curly"),
        _rep("meta", "the paper's Table 5", kind="re-analysis"),
    ]
    real = headline(claims, "real")
    assert real.startswith(
        "2 reproduction claims resting on a real LLM run here: 1 supported, 1 contradicted."
    ), real
    assert (
        "Counted in the profile they share (not here): 1 resting on published responses, "
        "2 resting on MiniLM, 1 resting on tiny world." in real
    ), real
    assert "1 re-analysis" in real
    # the tiny profile counts every reproduction it ran, once
    tiny = headline(claims[2:], "tiny")
    assert tiny.startswith("4 reproduction claims: 3 supported, 1 inconclusive."), tiny
    assert "Counted in the profile" not in tiny


def test_real_report_shows_each_claims_basis(tmp_path):
    run = tmp_path / "r"
    (run / "01_utility_law").mkdir(parents=True)
    rows = [_rep("law", "real/smollm2-135m-instruct"), _rep("nv", "all-MiniLM-L6-v2")]
    (run / "01_utility_law" / "results.json").write_text(json.dumps({"claims": rows}))
    (run / "run.json").write_text(json.dumps({"profile": "real", "notebooks": []}))
    md, _ = write_report(run)
    text = md.read_text()
    assert "| basis |" in text and "| real LLM |" in text and "| MiniLM |" in text
    assert "1 reproduction claims resting on a real LLM run here: 1 supported." in text


def test_each_row_names_its_resampled_unit(tmp_path):
    run = tmp_path / "r"
    (run / "01_utility_law").mkdir(parents=True)
    rows = [
        C.claim(
            "000",
            "§3.2",
            "law",
            "MUI falls with performance",
            -4.0,
            ci=(-6.0, -2.0),
            null=0.0,
            direction="less",
            interval_how="bootstrap over 7 models (all points of a model together)",
            unit="models",
        ).row(),
        C.claim(
            "000", "§3.2", "count", "a count", 3.0, null=0.0, interval_how="deterministic count"
        ).row(),
    ]
    (run / "01_utility_law" / "results.json").write_text(json.dumps({"claims": rows}))
    md, page = write_report(run)
    lines = md.read_text().splitlines()
    head = next(line for line in lines if line.startswith("| notebook"))
    row = next(line for line in lines if "MUI falls with performance" in line)
    col = [h.strip() for h in head.split("|")].index("resampled unit")
    assert row.split("|")[col].strip() == "models"
    assert "<th>resampled unit</th>" in page.read_text() and "<td>models</td>" in page.read_text()
