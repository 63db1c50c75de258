"""Notebook 00's helpers on the real-model path: responses from files (with their parse failures),
teacher-forced MUI of a subject batched by a token budget (equal to scoring all items in one batch),
the probe on a twin."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

import kit
from kit.data.responses import load_responses
from kit.mui import metric as kmui
from kit.mui import quickstart as qs
from kit.mui.metric import subject_mui
from kit.subjects import HFSubject, subject_of


@pytest.fixture(scope="module")
def twin():
    return kit.load_model("twin/llama")


def _lm_eval_file(path, metrics=("exact_match",)):
    recs = [
        {
            "doc_id": i,
            "arguments": {"gen_args_0": {"arg_0": f"Question: {i} + 1 =", "arg_1": {}}},
            "resps": [[f" {i + 1 if i != 2 else 7}"]],
            "filtered_resps": [f"{i + 1}" if i != 1 else "[invalid]"],
            "target": str(i + 1),
            **{m: float(i != 2) for m in metrics},
        }
        for i in range(4)
    ]
    path.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    return path


def test_lm_eval_samples_give_items_responses_and_their_own_scores(tmp_path):
    ans = qs.file_answers(
        str(_lm_eval_file(tmp_path / "samples_gsm8k_2025-01-01T00-00-00.jsonl")), n=3
    )
    assert [it.prompt for it in ans.items] == [
        "Question: 0 + 1 =",
        "Question: 1 + 1 =",
        "Question: 2 + 1 =",
    ]
    assert [it.target for it in ans.items] == ["1", "2", "3"] and ans.responses == [
        " 1",
        " 2",
        " 7",
    ]
    assert ans.correct.tolist() == [True, True, False] and ans.accuracy == pytest.approx(2 / 3)
    assert ans.chat is False  # the harness's context is the exact text: no template on top
    assert ans.task == "gsm8k" and "exact_match" in ans.source
    assert ans.parse_failed.tolist() == [False, True, False], (
        "lm-eval's regex filters write [invalid]"
    )
    assert ans.truncated is None and "truncated unknown" in ans.describe()


def test_lm_eval_samples_without_a_known_metric_are_refused(tmp_path):
    with pytest.raises(
        ValueError, match="no per-item metric among exact_match, acc, pass@1 .found: bleu"
    ):
        qs.file_answers(str(_lm_eval_file(tmp_path / "samples_x_1.jsonl", metrics=("bleu",))), n=2)


def test_an_unscored_lm_eval_sample_is_an_error_not_a_wrong_answer(tmp_path):
    """An item with exact_match NaN counted as wrong and the run exited 0."""
    path = _lm_eval_file(tmp_path / "samples_gsm8k_2025-01-01T00-00-00.jsonl")
    lines = path.read_text().splitlines()
    rec = json.loads(lines[1])
    rec["exact_match"] = float("nan")
    path.write_text("\n".join([lines[0], json.dumps(rec), *lines[2:]]) + "\n")
    with pytest.raises(
        ValueError, match="1 sample.s. have a exact_match that is not a finite number .doc_id 1."
    ):
        qs.file_answers(str(path), n=4)
    assert qs.file_answers(str(path), n=1).correct.tolist() == [True], (
        "the items before it still read"
    )


def test_published_response_sets_keep_their_parsed_correctness():
    ans = qs.file_answers("arc/llama3.1-8b-instruct", n=5)
    rs = load_responses("arc/llama3.1-8b-instruct", limit=5)
    assert ans.correct.tolist() == rs.correct.tolist() and ans.responses == rs.responses
    assert [it.target for it in ans.items] == rs.references and ans.task == "arc_challenge"
    assert ans.chat is None  # bare questions: shown through the chat template when there is one
    assert ans.parse_failed.tolist() == [p is None for p in rs.predictions]


def test_bad_response_sources_name_the_allowed_ones(tmp_path):
    with pytest.raises(ValueError, match="arc/llama3.1-8b-instruct.*--log_samples"):
        qs.file_answers(str(tmp_path / "missing.jsonl"), n=2)
    world = type("WorldStandIn", (), {"kind": "world"})()
    with pytest.raises(ValueError, match="needs a real model"):
        qs.items_and_answers(world, "add", 2, responses="arc/llama3.1-8b-instruct")


def test_mui_by_token_budget_equals_one_batch_and_resumes(twin, tmp_path, monkeypatch):
    ans = qs.file_answers("arc/llama3.1-8b-instruct", n=4)
    ans.responses = [r[:60] for r in ans.responses]  # short: the twin's context is 256 tokens
    reference = kmui.utilization_for_items(
        twin, ans.items, ans.responses
    ).mui  # every item in one batch
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path))  # the per-item cache lands here
    subject = subject_of(twin)
    one_by_one = subject_mui(subject, ans, max_batch_tokens=1)
    assert one_by_one == pytest.approx(reference, abs=1e-9)
    cached = list((tmp_path / "items").glob("*.jsonl"))
    assert len(cached) == 1 and len(cached[0].read_text().splitlines()) == 4
    assert subject_mui(subject, ans, max_batch_tokens=10**6) == pytest.approx(reference, abs=1e-9)
    # the rerun read the cache, computed nothing
    assert len(cached[0].read_text().splitlines()) == 4
    assert 0 < reference < 100


def test_probe_reads_the_layer_and_the_answer_probability(twin):
    item = qs.FileItem("x", "Question: 12 + 30 =", " 42")
    subject = HFSubject("twin/llama", twin, chat=False)
    p = qs.probe(subject, item, layer=1)
    assert (
        p.acts.shape == (p.tokens.shape[1], twin.cfg.d_mlp)
        and len(p.str_tokens) == p.tokens.shape[1]
    )
    with torch.no_grad():
        logits = twin(p.tokens)[0, -1].float()
    from kit.models.rows import teacher_forced_rows

    ((ids, n),) = teacher_forced_rows(twin, [item.prompt], [item.target], chat=False)
    assert p.p_answer == pytest.approx(logits.softmax(-1)[ids[n]].item(), rel=1e-5)
    with pytest.raises(ValueError, match=r"layer=2 is out of range; allowed: 0..1"):
        qs.probe(subject, item, layer=2)
    with pytest.raises(ValueError, match=r"top_neurons=999 must be in \[1, 128\]"):
        qs.top_neurons(p.acts, 999)


def test_top_neurons_and_a_files_chat_setting_reaches_the_subject(twin):
    assert np.isclose(qs.top_neurons(torch.tensor([[1.0, -3.0, 2.0]]), 2).tolist(), [1, 2]).all()
    subject = subject_of(twin)
    assert qs.reading_subject(subject, None) is subject
    lm_eval = qs.Answers("gsm8k", [], [], np.zeros(0, bool), chat=False)
    assert qs.reading_subject(subject, lm_eval).chat is False and subject.chat is None


def test_option_scoring_is_refused_before_the_run_where_it_cannot_apply():
    from kit.core.params import ParamsError, load_params

    with pytest.raises(ParamsError, match="needs a multiple-choice benchmark; task='gsm8k'"):
        load_params(
            "00_quickstart", "dryrun", overrides={"scoring": "loglik-letter", "task": "gsm8k"}
        )
    with pytest.raises(ParamsError, match="tiny-world models are scored on their generated answer"):
        load_params("00_quickstart", "tiny", overrides={"scoring": "loglik-text"})
    with pytest.raises(ParamsError, match="tiny-world models are scored on their generated answer"):
        load_params(
            "00_quickstart",
            "tiny",
            overrides={"scoring": "loglik-letter", "model": "extra/base-m+general-sparse"},
        )
    assert (
        load_params("00_quickstart", "dryrun", overrides={"scoring": "loglik-letter"}).scoring
        == "loglik-letter"
    )


def test_compare_asks_every_model_and_benchmark_as_the_walk_through(tmp_path, monkeypatch):
    """One cell per (model, benchmark), each equal to asking that model alone as the notebook does
    (same items, same scored answers, same MUI), and a table row per cell."""
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path))
    cells = qs.compare(["twin/llama"], {"arc_challenge": 3, "gsm8k": 2}, 3, seed=1)
    assert [(c.model, c.answers.task) for c in cells] == [
        ("twin/llama", "arc_challenge"),
        ("twin/llama", "gsm8k"),
    ]
    alone = kit.load_subject("twin/llama")
    items = alone.items("arc_challenge", "test", n=3, seed=1)
    ans = alone.answer("arc_challenge", items, max_new_tokens=3)
    assert [it.id for it in cells[0].answers.items] == [it.id for it in items]
    assert cells[0].answers.responses == ans.responses
    assert (
        cells[0].mui == pytest.approx(subject_mui(alone, ans), abs=1e-9) and 0 < cells[0].mui <= 100
    )
    assert cells[1].answers.max_new_tokens == 2
    table = qs.compare_table(cells)
    assert list(table["benchmark"]) == ["arc_challenge", "gsm8k"] and list(table["n"]) == [3, 3]
    row = cells[0].row()
    assert row["model"] == "twin/llama" and row["mui"] == cells[0].mui and row["n"] == 3


def test_a_half_comparison_is_refused_before_the_run():
    from kit.configs.quickstart import Config

    with pytest.raises(ValueError, match="needs both"):
        Config(compare_models=["twin/llama"])
    with pytest.raises(ValueError, match="listed more than once"):
        Config(compare_models=["twin/llama", "twin/llama"], compare_tasks={"add": 1})
    with pytest.raises(ValueError, match="greater than or equal to 1"):
        Config(compare_models=["twin/llama"], compare_tasks={"add": 0})


TWIN_LOGS = Path(__file__).parents[1] / "fixtures" / "lm_eval" / "twin"
"""--log_samples files lm-evaluation-harness wrote on the llama twin (tests/models/
test_lm_eval_logs.py writes and checks them)."""


def test_a_multiple_choice_log_gives_the_chosen_options_and_their_mui(twin, tmp_path, monkeypatch):
    """The harness writes each option's log-likelihood as a string; they were read as
    the responses (accuracy "with no chance level: free-form", MUI of '-26.24...')."""
    path = next(TWIN_LOGS.glob("samples_arc_local_*.jsonl"))
    raw = [json.loads(line) for line in path.read_text().splitlines()]
    ans = qs.file_answers(str(path), n=4)
    chosen = [max(range(len(r["resps"])), key=lambda i: float(r["resps"][i][0][0])) for r in raw]
    assert ans.responses == [r["arguments"][f"gen_args_{c}"]["arg_1"] for r, c in zip(raw, chosen)]
    assert ans.correct.tolist() == [r["acc"] > 0 for r in raw] == [True, False, False, True]
    assert ans.chance == pytest.approx(1 / 3) and "(chance 0.333)" in ans.describe()
    assert ans.scoring == "loglik-text" and ans.parse_failed.tolist() == [False] * 4
    assert [it.target for it in ans.items] == [" Mars", " honey", " eight", " river"]
    assert ans.extra["chosen"] == ans.responses and len(ans.extra["option_logliks"][0]) == 3
    # MUI is measured over the chosen continuation: the response tokens are exactly its tokens
    subject = qs.reading_subject(subject_of(twin), ans)
    tokens, mask = subject.tokens(ans.items, ans.responses)
    for row, m, it, resp in zip(tokens, mask, ans.items, ans.responses):
        assert twin.tokenizer.decode(row[m]) == resp
        assert twin.tokenizer.decode(row[: int(m.float().argmax())]).endswith(it.prompt)
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path))
    assert 0 < subject_mui(subject, ans) < 100


def test_a_two_filter_log_is_read_under_the_filter_named(tmp_path):
    path = str(next(TWIN_LOGS.glob("samples_gsm8k_local_*.jsonl")))
    with pytest.raises(ValueError, match="2 filters: strict-match, flexible-extract; choose one"):
        qs.file_answers(path, n=3)
    strict = qs.file_answers(path, n=3, filter="strict-match")
    flexible = qs.file_answers(path, n=3, filter="flexible-extract")
    assert strict.responses == flexible.responses and strict.chance is None
    assert strict.n_parse_failed == 3 and flexible.n_parse_failed == 0, (
        "the twin never writes '####': strict-match finds no answer, flexible-extract a number"
    )
    assert "filter strict-match" in strict.source and "filter flexible-extract" in flexible.source
    world = type("WorldStandIn", (), {"kind": "real"})()
    items, ans = qs.items_and_answers(world, "gsm8k", 2, responses=path, filter="strict-match")
    assert len(items) == 2 and ans is not None and "strict-match" in ans.source
    with pytest.raises(
        ValueError, match="published response set arc/llama3.1-8b-instruct has none"
    ):
        qs.file_answers("arc/llama3.1-8b-instruct", n=2, filter="strict-match")


def test_log_likelihood_only_logs_are_refused_by_the_notebook_naming_the_task_type():
    path = str(next(TWIN_LOGS.glob("samples_lambada_local_*.jsonl")))
    with pytest.raises(ValueError, match="an lm-eval loglikelihood task"):
        qs.file_answers(path, n=2)


def test_the_notebooks_filter_needs_a_responses_file():
    from kit.configs.quickstart import Config
    from kit.core.params import ParamsError, load_params

    with pytest.raises(ValueError, match="filter='strict-match' chooses the answers of an lm-eval"):
        Config(filter="strict-match")
    cfg = load_params(
        "00_quickstart", "dryrun", overrides={"responses": "x.jsonl", "filter": "strict-match"}
    )
    assert cfg.filter == "strict-match"
    with pytest.raises(ParamsError, match="responses is null"):
        load_params("00_quickstart", "dryrun", overrides={"filter": "strict-match"})
