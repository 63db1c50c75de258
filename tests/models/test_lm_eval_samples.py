"""lm-evaluation-harness --log_samples files read back as one record per document under one filter
(kit.models.lm_eval_samples)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kit.models.lm_eval_samples import read_lm_eval_samples

GSM8K_LOG = (
    Path(__file__).parents[1]
    / "fixtures"
    / "lm_eval"
    / "samples_gsm8k_2025-06-01T12-00-00.000000.jsonl"
)
"""What lm-evaluation-harness 0.4.13 writes with --log_samples for gsm8k's prompt, two filters and
metric on three problems (made up) and scripted responses (tests/models/test_harness.py regenerates
it)."""


def test_read_lm_eval_samples_gives_one_record_per_document_under_the_chosen_filter():
    lines = [json.loads(line) for line in GSM8K_LOG.read_text().splitlines()]
    assert len(lines) == 6, "the harness writes each document once per filter"
    with pytest.raises(
        ValueError, match="2 filters: strict-match, flexible-extract; choose one with filter="
    ):
        read_lm_eval_samples(GSM8K_LOG)
    strict = read_lm_eval_samples(GSM8K_LOG, filter="strict-match")
    flexible = read_lm_eval_samples(GSM8K_LOG, filter="flexible-extract")
    assert [r["doc_id"] for r in strict] == [r["doc_id"] for r in flexible] == [0, 1, 2]
    assert strict[0] == {
        "doc_id": 0,
        "filter": "strict-match",
        "prompt": "Question: A baker fills 6 trays with 8 rolls each and sells 20 rolls. How "
        "many rolls are left?\nAnswer:",
        "response": "6 * 8 = 48 rolls, and 48 - 20 = 28 rolls are left.\n#### 28",
        "filtered": "28",
        "target": lines[0]["target"],
        "metrics": {"exact_match": 1.0},
    }
    assert [r["response"] for r in strict] == [r["response"] for r in flexible], (
        "same generations, other extraction"
    )
    assert [r["filtered"] for r in strict] == ["28", "[invalid]", "45"]
    assert [r["filtered"] for r in flexible] == ["28", "90.", "45"]
    assert [r["metrics"]["exact_match"] for r in strict] == [1.0, 0.0, 0.0]
    assert [r["metrics"]["exact_match"] for r in flexible] == [1.0, 1.0, 0.0]
    with pytest.raises(
        ValueError,
        match="filter='none' is not among its filters; allowed values: strict-match, "
        "flexible-extract",
    ):
        read_lm_eval_samples(GSM8K_LOG, filter="none")


def test_read_lm_eval_samples_single_filter_and_older_shapes(tmp_path):
    # One filter (a task without filter_list writes "none"): read without naming it.
    one = [
        line
        for line in GSM8K_LOG.read_text().splitlines()
        if '"filter": "flexible-extract"' in line
    ]
    path = tmp_path / "samples_gsm8k_x.jsonl"
    path.write_text("\n".join(one) + "\n")
    assert [r["filter"] for r in read_lm_eval_samples(path)] == ["flexible-extract"] * 3
    # Before 0.4: no filter field, arguments as a list, numeric fields read as metrics.
    rec = {
        "doc_id": 7,
        "doc": {"question": "q"},
        "target": "72",
        "arguments": [["Question: r\nAnswer:", {"until": ["\n"]}]],
        "resps": [["48 + 24 = 72. #### 72"]],
        "filtered_resps": ["72"],
        "exact_match": 1.0,
    }
    path.write_text(json.dumps(rec) + "\n")
    got = read_lm_eval_samples(path)
    assert got == [
        {
            "doc_id": 7,
            "prompt": "Question: r\nAnswer:",
            "response": "48 + 24 = 72. #### 72",
            "filtered": "72",
            "target": "72",
            "metrics": {"exact_match": 1.0},
            "filter": None,
        }
    ]
    with pytest.raises(ValueError, match="carry no filter field"):
        read_lm_eval_samples(path, filter="strict-match")
    path.write_text(
        json.dumps(
            {
                "doc_id": 1,
                "arguments": {"gen_args_0": {"arg_0": "x", "arg_1": " y"}},
                "resps": [[[-1.2, True]]],
            }
        )
        + "\n"
    )
    with pytest.raises(ValueError, match="line 1: not a generation sample"):
        read_lm_eval_samples(path)


def test_read_lm_eval_samples_names_the_file_and_line_of_a_torn_line_or_a_repeated_document(
    tmp_path,
):
    lines = GSM8K_LOG.read_text().splitlines()
    path = tmp_path / "samples_gsm8k_torn.jsonl"
    # killed while writing
    path.write_text("\n".join(lines[:4]) + "\n" + lines[4][: len(lines[4]) // 2])
    with pytest.raises(ValueError, match=rf"{path}, line 5: not valid JSON .*torn"):
        read_lm_eval_samples(path, filter="flexible-extract")
    path.write_text("\n".join(lines + lines[:1]) + "\n")  # two runs appended to one file
    with pytest.raises(
        ValueError,
        match=r"line 7: doc_id 0 was already read at .*line 1 under filter 'strict-match'",
    ):
        read_lm_eval_samples(path, filter="strict-match")
