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
        "output_type": "generate_until",
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
            "output_type": "generate_until",
        }
    ]
    with pytest.raises(ValueError, match="carry no filter field"):
        read_lm_eval_samples(path, filter="strict-match")


def _choice_line(resps, target="1", **extra) -> dict:
    """A multiple-choice line as lm-eval 0.4.13 writes it: each option's (log-likelihood,
    is-greedy) as strings."""
    options = [" Paris", " Rome", " Madrid"][: len(resps)]
    return {
        "doc_id": 1,
        "target": target,
        "arguments": {
            f"gen_args_{i}": {"arg_0": "Question: capital of Italy?\nAnswer:", "arg_1": o}
            for i, o in enumerate(options)
        },
        "resps": [[list(r)] for r in resps],
        "filtered_resps": [list(r) for r in resps],
        "filter": "none",
        "metrics": ["acc", "acc_norm"],
        "acc": 1.0,
        "acc_norm": 1.0,
        **extra,
    }


def test_a_multiple_choice_line_reads_as_the_chosen_option_not_as_a_number(tmp_path):
    path = tmp_path / "samples_arc_x.jsonl"
    resps = [("-26.241397857666016", "False"), ("-3.5", "True"), ("-9.0", "False")]
    path.write_text(json.dumps(_choice_line(resps)) + "\n")
    (rec,) = read_lm_eval_samples(path)
    assert rec["response"] == " Rome", (
        f"got {rec['response']!r}: the response of a multiple-choice sample is the continuation of "
        "the option of largest log-likelihood, not the text of a log-likelihood"
    )
    assert rec["output_type"] == "multiple_choice" and rec["prompt"].endswith("Answer:")
    assert rec["choices"] == [" Paris", " Rome", " Madrid"] and rec["filtered"] == " Rome"
    assert rec["loglikelihoods"] == [-26.241397857666016, -3.5, -9.0]
    assert rec["chosen"] == 1 and rec["gold"] == 1 and rec["metrics"]["acc"] == 1.0
    # ties go to the first option (np.argmax); a target may name the option's text
    tie = _choice_line([("-2.0", "False"), ("-2.0", "False")], target="Rome")
    path.write_text(json.dumps(tie) + "\n")
    (rec,) = read_lm_eval_samples(path)
    assert rec["chosen"] == 0 and rec["gold"] == 1
    # a response without a log-likelihood is named, not read as 0
    path.write_text(json.dumps(_choice_line([("oops", "False"), ("-1", "True")])) + "\n")
    with pytest.raises(ValueError, match="line 1: option 0's response .*holds no log-likelihood"):
        read_lm_eval_samples(path)


def test_log_likelihood_lines_are_refused_naming_their_task_type(tmp_path):
    path = tmp_path / "samples_lambada_x.jsonl"
    one = {
        "doc_id": 1,
        "arguments": {"gen_args_0": {"arg_0": "the cat sat on the", "arg_1": " mat"}},
        "resps": [[["-1.2", "True"]]],
        "filtered_resps": [["-1.2", "True"]],
        "filter": "none",
        "metrics": ["perplexity", "acc"],
        "acc": 1,
    }
    path.write_text(json.dumps(one) + "\n")
    with pytest.raises(
        ValueError, match="line 1: a sample of an lm-eval loglikelihood task .*no answer to read"
    ):
        read_lm_eval_samples(path)
    rolling = {
        "doc_id": 0,
        "arguments": {"gen_args_0": {"arg_0": "the cat sat on the mat"}},
        "resps": [["-82.7"]],
        "filter": "none",
    }
    path.write_text(json.dumps(rolling) + "\n")
    with pytest.raises(ValueError, match="an lm-eval loglikelihood_rolling task"):
        read_lm_eval_samples(path)
    path.write_text(json.dumps({"doc_id": 0, "resps": [["x"]]}) + "\n")
    with pytest.raises(ValueError, match="line 1: not an lm-eval sample of a readable task type"):
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
