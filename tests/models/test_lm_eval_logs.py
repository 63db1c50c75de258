"""lm-evaluation-harness --log_samples files written by the harness itself (its ``hf`` model on the
llama twin, offline, four local tasks: one of each output type) read back by
kit.models.lm_eval_samples: a generation task under its filters, a multiple-choice task as the
option lm-eval's acc chose, and the two log-likelihood task types refused by name.

The committed files under tests/fixtures/lm_eval/twin/ are what :func:`write_twin_logs` writes
(regenerate: ``python tests/models/test_lm_eval_logs.py``); the reading tests need no lm-eval, the
last test checks that this lm-eval still writes them."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest
import yaml

from kit.models.lm_eval_samples import (
    OUTPUT_TYPES,
    lm_eval_records,
    output_type,
    read_lm_eval_samples,
)

TWIN_LOGS = Path(__file__).parents[1] / "fixtures" / "lm_eval" / "twin"
DATE_ID = "2025-07-01T12-00-00.000000"
"""Set by the CLI's save_results_aggregated; fixed here so the names stay the same."""


def log_path(task: str, folder: Path = TWIN_LOGS) -> Path:
    return folder / f"samples_{task}_{DATE_ID}.jsonl"


PROBLEMS = [
    ("A baker fills 6 trays with 8 rolls each and sells 20. How many rolls are left?", "28"),
    ("Tom reads 12 pages a day for 5 days. How many pages does he read?", "60"),
    ("A garden has 4 rows of 15 tulips. How many tulips are there?", "60"),
]
"""Made-up grade-school problems (no benchmark text is copied)."""

QUESTIONS = [
    ("Which planet is known as the red planet?", ["Mercury", "Venus", "Mars"], 2),
    ("What do bees make?", ["milk", "honey", "silk"], 1),
    ("How many legs has a spider?", ["six", "eight", "ten"], 1),
    ("Which of these has water flowing in it?", ["table", "green", "river"], 2),
]
"""Made-up multiple-choice questions: (question, options, index of the right one)."""

SENTENCES = ["the cat sat on the mat", "she opened the door and walked in"]

GSM8K_FILTERS = yaml.safe_load(
    (Path(__file__).parents[1] / "fixtures" / "lm_eval" / "gsm8k_filter_list.yaml").read_text()
)
"""lm-evaluation-harness 0.4's gsm8k.yaml filter_list."""


def write_tasks(folder: Path) -> dict[str, dict]:
    """Four harness task YAMLs over local jsonl files (``dataset_path: json``: no hub), one per
    output type, shaped like gsm8k, arc_easy, lambada_openai and wikitext."""
    folder.mkdir(parents=True, exist_ok=True)

    def data(name: str, rows: list[dict]) -> dict:
        path = folder / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        return {"dataset_path": "json", "dataset_kwargs": {"data_files": {"test": str(path)}}}

    tasks = {
        "gsm8k_local": {
            **data("gsm8k_local", [{"question": q, "answer": f"#### {a}"} for q, a in PROBLEMS]),
            "output_type": "generate_until",
            "doc_to_text": "Question: {{question}}\nAnswer:",
            "doc_to_target": "{{answer}}",
            "metric_list": [
                {
                    "metric": "exact_match",
                    "aggregation": "mean",
                    "higher_is_better": True,
                    "ignore_case": True,
                    "regexes_to_ignore": [",", "\\$", "(?s).*#### ", "\\.$"],
                }
            ],
            "generation_kwargs": {"until": ["Question:"], "do_sample": False, "max_gen_toks": 8},
            "filter_list": GSM8K_FILTERS,
        },
        "arc_local": {
            **data(
                "arc_local",
                [{"question": q, "choices": c, "answer": a} for q, c, a in QUESTIONS],
            ),
            "output_type": "multiple_choice",
            "doc_to_text": "Question: {{question}}\nAnswer:",
            "doc_to_choice": "{{choices}}",
            "doc_to_target": "{{answer}}",
            "metric_list": [
                {"metric": "acc", "aggregation": "mean", "higher_is_better": True},
                {"metric": "acc_norm", "aggregation": "mean", "higher_is_better": True},
            ],
        },
        "lambada_local": {
            **data("lambada_local", [{"text": s} for s in SENTENCES]),
            "output_type": "loglikelihood",
            "doc_to_text": "{{text.split(' ')[:-1]|join(' ')}}",
            "doc_to_target": "{{' '+text.split(' ')[-1]}}",
            "target_delimiter": "",
            "metric_list": [
                {"metric": "perplexity", "aggregation": "perplexity", "higher_is_better": False},
                {"metric": "acc", "aggregation": "mean", "higher_is_better": True},
            ],
        },
        "wikitext_local": {
            **data("wikitext_local", [{"page": s} for s in SENTENCES]),
            "output_type": "loglikelihood_rolling",
            "doc_to_text": "",
            "doc_to_target": "{{page}}",
            "metric_list": [{"metric": "word_perplexity"}, {"metric": "byte_perplexity"}],
        },
    }
    for name, task in tasks.items():
        task = {"task": name, "test_split": "test", **task, "metadata": {"version": 1.0}}
        (folder / f"{name}.yaml").write_text(yaml.safe_dump(task, sort_keys=False))
    return tasks


def write_twin_logs(folder: Path) -> tuple[dict[str, Path], dict[str, list[dict]]]:
    """Run lm-evaluation-harness with its ``hf`` model on the llama twin's directory over the four
    local tasks (``log_samples=True``, CPU, float32) and write each task's samples with the
    harness's own writer (``EvaluationTracker.save_results_samples``, as ``--log_samples`` does).
    Returns the files and ``simple_evaluate``'s in-memory samples."""
    import copy

    import lm_eval
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.tasks import TaskManager

    from kit.models.twins import twin_path

    tasks = write_tasks(folder / "tasks")
    out = lm_eval.simple_evaluate(
        model="hf",
        model_args=f"pretrained={twin_path('llama')},dtype=float32",
        device="cpu",
        batch_size=4,
        tasks=sorted(tasks),
        log_samples=True,
        bootstrap_iters=0,
        random_seed=0,
        numpy_random_seed=0,
        torch_random_seed=0,
        fewshot_random_seed=0,
        task_manager=TaskManager(include_path=str(folder / "tasks"), include_defaults=False),
    )
    assert out is not None
    tracker = EvaluationTracker(output_path=str(folder / "results.json"))
    tracker.date_id = DATE_ID
    paths = {}
    for task in sorted(tasks):
        tracker.save_results_samples(task, copy.deepcopy(out["samples"][task]))
        paths[task] = log_path(task, folder)
    return paths, out["samples"]


def lines(task: str, folder: Path = TWIN_LOGS) -> list[dict]:
    return [json.loads(line) for line in log_path(task, folder).read_text().splitlines()]


def test_a_multiple_choice_log_reads_as_the_option_lm_eval_chose():
    raw = lines("arc_local")
    first = raw[0]["resps"][0][0]
    assert isinstance(first[0], str) and first[1] in ("True", "False"), (
        "the harness writes each option's (log-likelihood, is-greedy) as strings"
    )
    records = read_lm_eval_samples(log_path("arc_local"))
    assert [r["doc_id"] for r in records] == [0, 1, 2, 3]
    for rec, line, (question, options, answer) in zip(records, raw, QUESTIONS):
        lls = [float(r[0][0]) for r in line["resps"]]
        chosen = lls.index(max(lls))
        assert rec["output_type"] == "multiple_choice" and rec["filter"] == "none"
        assert rec["prompt"] == f"Question: {question}\nAnswer:"
        assert rec["choices"] == [f" {o}" for o in options] and rec["loglikelihoods"] == lls
        assert rec["chosen"] == chosen and rec["response"] == f" {options[chosen]}", (
            "the response is the chosen option's continuation, not the log-likelihood's text "
            f"{line['resps'][0][0][0]!r}"
        )
        assert rec["filtered"] == rec["response"] and rec["gold"] == answer
        assert rec["metrics"] == {"acc": line["acc"], "acc_norm": line["acc_norm"]}
        assert (rec["chosen"] == rec["gold"]) == (rec["metrics"]["acc"] > 0), (
            "lm-eval's acc is the argmax of the raw log-likelihoods (acc_norm divides by length)"
        )
    acc = [r["metrics"]["acc"] for r in records]
    assert 0 < sum(acc) < len(acc), "the fixture should hold right and wrong choices"


def test_a_generation_log_reads_under_the_chosen_filter():
    with pytest.raises(
        ValueError, match="2 filters: strict-match, flexible-extract; choose one with filter="
    ):
        read_lm_eval_samples(log_path("gsm8k_local"))
    strict = read_lm_eval_samples(log_path("gsm8k_local"), filter="strict-match")
    flexible = read_lm_eval_samples(log_path("gsm8k_local"), filter="flexible-extract")
    raw = [r for r in lines("gsm8k_local") if r["filter"] == "strict-match"]
    assert [r["doc_id"] for r in strict] == [r["doc_id"] for r in flexible] == [0, 1, 2]
    assert all(r["output_type"] == "generate_until" for r in strict + flexible)
    assert [r["response"] for r in strict] == [r["resps"][0][0] for r in raw]
    assert [r["response"] for r in strict] == [r["response"] for r in flexible]
    assert [r["prompt"] for r in strict] == [f"Question: {q}\nAnswer:" for q, _ in PROBLEMS]
    assert [r["filtered"] for r in strict] == [r["filtered_resps"][0] for r in raw]
    assert "choices" not in strict[0], "choice fields belong to multiple-choice records"


@pytest.mark.parametrize(
    "task, kind", [("lambada_local", "loglikelihood"), ("wikitext_local", "loglikelihood_rolling")]
)
def test_log_likelihood_logs_are_refused_naming_the_task_type(task, kind):
    assert output_type(lines(task)[0]) == kind
    with pytest.raises(
        ValueError,
        match=rf"line 1: a sample of an lm-eval {kind} task .*no answer to read; readable task "
        rf"types: {', '.join(OUTPUT_TYPES)}",
    ):
        read_lm_eval_samples(log_path(task))


def _numbers_close(a, b) -> bool:
    """Equal JSON, except log-likelihoods (strings of floats, or floats) within 1e-4: another
    CPU's float32 arithmetic may round the last digits differently."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_numbers_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_numbers_close(x, y) for x, y in zip(a, b))
    try:
        fa, fb = float(a), float(b)
    except (TypeError, ValueError):
        return a == b
    return math.isclose(fa, fb, rel_tol=1e-4, abs_tol=1e-4) if fa != fb else True


def test_the_committed_twin_logs_are_what_lm_eval_writes(tmp_path):
    """The committed files are what this lm-evaluation-harness writes on the twin (log-likelihoods
    within 1e-4), and simple_evaluate's in-memory samples (tuples of floats) read as the file's
    lines do."""
    pytest.importorskip(
        "lm_eval", reason="lm-evaluation-harness is the optional extra kit[lm-eval]"
    )
    paths, samples = write_twin_logs(tmp_path)
    for task, path in paths.items():
        written, committed = lines(task, tmp_path), lines(task)
        assert len(written) == len(committed) and _numbers_close(written, committed), (
            f"lm-eval writes {task}'s --log_samples differently from tests/fixtures/lm_eval/twin: "
            "regenerate them (python tests/models/test_lm_eval_logs.py) and check the reader"
        )
    for task, filter in (("arc_local", None), ("gsm8k_local", "flexible-extract")):
        memory = lm_eval_records([(f"doc {s['doc_id']}", s) for s in samples[task]], filter, task)
        file = read_lm_eval_samples(paths[task], filter=filter)
        for m, f in zip(memory, file):
            m.pop("target"), f.pop("target")  # an int in memory, its string in the file
        assert memory == file


if __name__ == "__main__":  # regenerate the committed logs
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        written, _ = write_twin_logs(Path(tmp))
        TWIN_LOGS.mkdir(parents=True, exist_ok=True)
        for path in written.values():
            shutil.copy(path, TWIN_LOGS / path.name)
            print(TWIN_LOGS / path.name, file=sys.stderr)
