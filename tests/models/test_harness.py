"""kit.models.harness: lm-evaluation-harness run on a twin, offline, on a local gsm8k-shaped task
(gsm8k's prompt, filters and metric; made-up problems in a local jsonl), and its --log_samples file
read back by kit.models.lm_eval_samples.read_lm_eval_samples."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

lm_eval = pytest.importorskip(
    "lm_eval", reason="lm-evaluation-harness is the optional extra kit[lm-eval]"
)

import kit  # noqa: E402
from kit.models import harness, lm_eval_samples  # noqa: E402

PROBLEMS = [
    (
        "A baker fills 6 trays with 8 rolls each and sells 20 rolls. How many rolls are left?",
        "6 trays hold 6 * 8 = <<6*8=48>>48 rolls.\nAfter selling, 48 - 20 = <<48-20=28>>28 rolls "
        "are left.\n#### 28",
    ),
    (
        "Tom reads 12 pages a day for 5 days, then 30 pages on the sixth day. How many pages did "
        "he read?",
        "In 5 days he reads 12 * 5 = <<12*5=60>>60 pages.\nWith the sixth day, 60 + 30 = "
        "<<60+30=90>>90 pages.\n#### 90",
    ),
    (
        "A garden has 4 rows of 15 tulips. A rabbit eats a third of them. How many tulips remain?",
        "There are 4 * 15 = <<4*15=60>>60 tulips.\nThe rabbit eats 60 / 3 = <<60/3=20>>20, so 60 - "
        "20 = <<60-20=40>>40 remain.\n#### 40",
    ),
]
"""Made-up grade-school problems in GSM8K's format (no benchmark text is copied)."""

GSM8K_FILTERS = yaml.safe_load(
    (Path(__file__).parents[1] / "fixtures" / "lm_eval" / "gsm8k_filter_list.yaml").read_text()
)
"""lm-evaluation-harness 0.4's gsm8k.yaml filter_list, verbatim in meaning."""


def write_task(folder: Path, name: str, problems) -> Path:
    """A harness task folder: gsm8k.yaml's prompt, generation stop words, exact_match settings and
    two filters, on the local jsonl ``problems`` (``dataset_path: json``: no hub), 8 new tokens."""
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / f"{name}.jsonl"
    data.write_text("".join(json.dumps({"question": q, "answer": a}) + "\n" for q, a in problems))
    task = {
        "task": name,
        "dataset_path": "json",
        "dataset_kwargs": {"data_files": {"test": str(data)}},
        "output_type": "generate_until",
        "test_split": "test",
        "doc_to_text": "Question: {{question}}\nAnswer:",
        "doc_to_target": "{{answer}}",
        "metric_list": [
            {
                "metric": "exact_match",
                "aggregation": "mean",
                "higher_is_better": True,
                "ignore_case": True,
                "ignore_punctuation": False,
                "regexes_to_ignore": [",", "\\$", "(?s).*#### ", "\\.$"],
            }
        ],
        "generation_kwargs": {
            "until": ["Question:", "</s>", "<|im_end|>"],
            "do_sample": False,
            "temperature": 0.0,
            "max_gen_toks": 8,
        },
        "repeats": 1,
        "num_fewshot": 0,
        "filter_list": GSM8K_FILTERS,
        "metadata": {"version": 3.0},
    }
    (folder / f"{name}.yaml").write_text(yaml.safe_dump(task, sort_keys=False))
    return folder


def write_log_samples(samples: list[dict], task: str, folder: Path) -> Path:
    """The harness's own --log_samples writer (EvaluationTracker.save_results_samples), as the CLI
    calls it after simple_evaluate."""
    from lm_eval.loggers import EvaluationTracker

    tracker = EvaluationTracker(output_path=str(folder / "results.json"))
    tracker.date_id = "2025-06-01T12-00-00.000000"  # set by save_results_aggregated in a CLI run
    tracker.save_results_samples(task, copy.deepcopy(samples))
    return folder / f"samples_{task}_{tracker.date_id}.jsonl"


SCRIPTED = [
    "6 * 8 = 48 rolls, and 48 - 20 = 28 rolls are left.\n#### 28",
    "12 * 5 = 60 pages, plus 30 on the sixth day: the answer is 90.",
    "60 tulips, a third is 20, so 40 remain.\n#### 45",
]
"""Responses for :data:`PROBLEMS`: right under both filters, right only under flexible-extract (no
'####'), wrong under both."""

FIXTURE = (
    Path(__file__).parents[1]
    / "fixtures"
    / "lm_eval"
    / "samples_gsm8k_2025-06-01T12-00-00.000000.jsonl"
)


def scripted_log(folder: Path) -> Path:
    """The --log_samples file lm-evaluation-harness writes for a local task named ``gsm8k`` (gsm8k's
    prompt, filters and metric on :data:`PROBLEMS`) answered with :data:`SCRIPTED`: the harness
    applies its own filters and metric and writes with its own writer."""
    from lm_eval.api.model import LM

    class Scripted(LM):
        def generate_until(self, requests, disable_tqdm: bool = False):
            return [
                SCRIPTED[[f"Question: {q}\nAnswer:" for q, _ in PROBLEMS].index(r.args[0])]
                for r in requests
            ]

        def loglikelihood(self, requests, disable_tqdm: bool = False):
            raise NotImplementedError

        def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
            raise NotImplementedError

    tasks = write_task(folder / "tasks", "gsm8k", PROBLEMS)
    out = lm_eval.simple_evaluate(
        model=Scripted(),
        tasks=["gsm8k"],
        log_samples=True,
        bootstrap_iters=0,
        task_manager=harness._task_manager(tasks, include_defaults=False),
    )
    return write_log_samples(out["samples"]["gsm8k"], "gsm8k", folder)


def test_the_committed_gsm8k_fixture_is_what_lm_eval_writes(tmp_path):
    """tests/fixtures/lm_eval's two-filter gsm8k log (read by tests/models/test_lm_eval_samples.py,
    also where lm-eval is not installed) is byte for byte what this lm-evaluation-harness writes."""
    written = scripted_log(tmp_path).read_text()
    assert written == FIXTURE.read_text(), (
        f"lm-eval {lm_eval.__version__} writes --log_samples differently from the committed "
        "fixture: regenerate it with scripted_log() and check read_lm_eval_samples still reads it"
    )


@pytest.fixture(scope="module")
def twin():
    return kit.load_model("twin/llama")


@pytest.fixture(scope="module")
def first_run(twin, tmp_path_factory):
    folder = write_task(tmp_path_factory.mktemp("tasks"), "gsm8k_local", PROBLEMS)
    return folder, harness.run_lm_eval(
        twin, "gsm8k_local", include_path=folder, filter="flexible-extract", include_defaults=False
    )


def test_the_harness_answers_and_scores_with_its_own_prompt_and_filter(first_run):
    _, run = first_run
    assert run.n == 3 and run.filter == "flexible-extract" and run.metric == "exact_match"
    assert run.prompts == [f"Question: {q}\nAnswer:" for q, _ in PROBLEMS], (
        "the task's template, no chat template"
    )
    assert all(isinstance(r, str) and r for r in run.responses)
    assert run.targets == [a for _, a in PROBLEMS]
    assert run.accuracy == pytest.approx(run.correct.mean()), (
        "the harness's aggregate is the mean of its items"
    )
    assert set(run.results) >= {"exact_match,strict-match", "exact_match,flexible-extract"}
    assert run.version == lm_eval.__version__


def test_the_accuracy_is_the_harness_s_and_follows_the_filter(twin, first_run, tmp_path):
    """Targets rewritten to the twin's own flexible-extract answers for documents 0 and 2: the
    harness then scores those two right under flexible-extract and none under strict-match (no
    '####' in a random twin's 8 tokens), and kit reports exactly that."""
    _, run = first_run
    answers = [f"#### {run.filtered[0]}", PROBLEMS[1][1], f"#### {run.filtered[2]}"]
    folder = write_task(
        tmp_path / "tasks", "gsm8k_own", [(q, a) for (q, _), a in zip(PROBLEMS, answers)]
    )
    flexible = harness.run_lm_eval(
        twin, "gsm8k_own", include_path=folder, filter="flexible-extract", include_defaults=False
    )
    assert flexible.responses == run.responses, "greedy: the same generations"
    assert flexible.correct.tolist() == [True, False, True] and flexible.accuracy == pytest.approx(
        2 / 3
    )
    strict = harness.run_lm_eval(
        twin, "gsm8k_own", include_path=folder, filter="strict-match", include_defaults=False
    )
    assert not strict.correct.any() and strict.accuracy == 0.0


def test_its_log_samples_file_reads_back_one_record_per_document(twin, first_run, tmp_path):
    folder, run = first_run
    out = lm_eval.simple_evaluate(
        model=harness._hflm(twin),
        tasks=["gsm8k_local"],
        log_samples=True,
        task_manager=harness._task_manager(folder, include_defaults=False),
        bootstrap_iters=0,
    )
    path = write_log_samples(out["samples"]["gsm8k_local"], "gsm8k_local", tmp_path)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert (
        len(lines) == 6
        and [r["filter"] for r in lines] == ["strict-match"] * 3 + ["flexible-extract"] * 3
    )
    with pytest.raises(
        ValueError, match="2 filters: strict-match, flexible-extract; choose one with filter="
    ):
        lm_eval_samples.read_lm_eval_samples(path)
    records = lm_eval_samples.read_lm_eval_samples(path, filter="flexible-extract")
    assert [r["doc_id"] for r in records] == [0, 1, 2]
    assert [r["prompt"] for r in records] == run.prompts and [
        r["response"] for r in records
    ] == run.responses
    assert [r["filtered"] for r in records] == [str(x) for x in run.filtered]
    assert (
        np.array([r["metrics"]["exact_match"] > 0 for r in records]).tolist()
        == run.correct.tolist()
    )


def test_bad_task_filter_and_metric_name_the_allowed_ones(twin, first_run):
    folder, _ = first_run
    local = dict(include_path=folder, include_defaults=False)
    with pytest.raises(ValueError, match="filters: strict-match, flexible-extract"):
        harness.run_lm_eval(twin, "gsm8k_local", **local)
    with pytest.raises(
        ValueError, match="filter='none' is not a filter.*strict-match, flexible-extract"
    ):
        harness.run_lm_eval(twin, "gsm8k_local", filter="none", **local)
    with pytest.raises(ValueError, match="not an lm-evaluation-harness task.*similar: gsm8k_local"):
        harness.run_lm_eval(twin, "gsm8k_nope_xyz", **local)
    with pytest.raises(ValueError, match="metric='acc'.*allowed values: exact_match"):
        harness.run_lm_eval(twin, "gsm8k_local", filter="strict-match", metric="acc", **local)
    with pytest.raises(ValueError, match="Hugging Face directory"):
        harness.run_lm_eval(object(), "gsm8k_local", filter="strict-match", **local)
