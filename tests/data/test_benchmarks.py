"""Benchmark loaders against the shared data (kit/benchmarks.py) and the data-dir checks
(kit/paths.py).

Counts are read from the data directory's MANIFEST.md, so they are not written down twice.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import types
from pathlib import Path

import pytest

import kit
from kit.core.paths import DataError, data_dir, verify_checksums
from kit.data import benchmarks as B
from kit.data.items import Item
from kit.data.scorers import score


@pytest.fixture(scope="module")
def root() -> Path:
    try:
        return data_dir()
    except DataError as err:  # pragma: no cover - the shared data is part of the dev setup
        pytest.skip(f"shared data directory unavailable: {err}")


def _manifest_rows(root: Path, header_first: str) -> dict[str, list[str]]:
    """Rows of the MANIFEST.md table whose header starts with ``| header_first |``."""
    rows: dict[str, list[str]] = {}
    in_table = False
    for line in (root / "MANIFEST.md").read_text().splitlines():
        if line.startswith(f"| {header_first} |"):
            in_table = True
            continue
        if in_table:
            if not line.startswith("|"):
                in_table = False
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if set(cells[0]) <= {"-", " "}:
                continue
            rows[cells[0].strip("`")] = cells
    assert rows, f"no '| {header_first} |' table found in MANIFEST.md; did its layout change?"
    return rows


def _count(cell: str) -> int:
    m = re.match(r"([\d,]+)", cell)
    assert m, f"cannot read an item count from MANIFEST cell {cell!r}"
    return int(m.group(1).replace(",", ""))


def _load_for_file(path: str) -> tuple[str, str] | None:
    """The (name, split) whose local load reads exactly the MANIFEST file ``path``; None if not a
    benchmark file."""
    fixed = {
        "humaneval/HumanEval.jsonl.gz": ("humaneval", "test"),
        "mbpp/mbpp.jsonl": ("mbpp", "full"),
        "svamp/SVAMP.json": ("svamp", "test"),
        "math500/test.jsonl": ("math500", "test"),
        "mawps/test.jsonl": ("mawps", "test"),
        "asdiv/test.jsonl": ("asdiv", "test"),
    }
    if path in fixed:
        return fixed[path]
    if m := re.fullmatch(r"(gsm8k|arc_challenge)/(\w+)\.jsonl", path):
        return m.group(1), m.group(2)
    if m := re.fullmatch(r"mmlu/(test|dev)/(\w+)_(test|dev)\.csv", path):
        return f"mmlu/{m.group(2)}", m.group(1)
    if m := re.fullmatch(r"bbh/(\w+)\.json", path):
        return f"bbh/{m.group(1)}", "test"
    return None


BENCHMARK_DIRS = (
    "gsm8k",
    "arc_challenge",
    "mmlu",
    "bbh",
    "humaneval",
    "mbpp",
    "math500",
    "svamp",
    "mawps",
    "asdiv",
)


# --- counts and schema --------------------------------------------------------------------------


def test_every_benchmark_file_count_matches_manifest(root):
    rows = _manifest_rows(root, "path")
    checked = 0
    for path, cells in rows.items():
        if path.split("/")[0] not in BENCHMARK_DIRS or path.startswith("bbh/cot-prompts/"):
            continue
        target = _load_for_file(path)
        assert target is not None, f"MANIFEST lists benchmark file {path} that no loader reads"
        name, split = target
        assert [str(p) for p in B.benchmark_files(name, split)] == [path]
        expected = _count(cells[-3])
        got = len(kit.load_benchmark(name, split))
        assert got == expected, (
            f"{name}/{split}: {got} items but MANIFEST says {expected} for {path}"
        )
        checked += 1
    # 3 arc + 2 gsm8k + 114 mmlu + 27 bbh + humaneval, mbpp, math500, svamp, mawps, asdiv
    assert checked == 152, (
        f"checked {checked} benchmark files; expected 152 (did MANIFEST gain or lose files?)"
    )


def test_group_totals_match_manifest_summary(root):
    rows = _manifest_rows(root, "group")
    assert len(B.load_benchmark("mmlu", "test")) == _count(rows["mmlu/test/*"][2])
    assert len(B.load_benchmark("mmlu", "dev")) == _count(rows["mmlu/dev/*"][2])
    bbh_total = sum(len(B.load_benchmark(f"bbh/{t}")) for t in B.BBH_TASKS)
    assert bbh_total == _count(rows["bbh/*.json"][2])
    assert _count(rows["bbh/*.json"][1]) == len(B.BBH_TASKS) == 27


def test_static_name_lists_match_data_files(root):
    assert sorted(B.MMLU_SUBJECTS) == sorted(
        p.name[: -len("_test.csv")] for p in (root / "mmlu" / "test").glob("*.csv")
    )
    assert sorted(B.BBH_TASKS) == sorted(p.stem for p in (root / "bbh").glob("*.json"))


def test_mbpp_standard_splits():
    ids = {
        split: [it.metadata["task_id"] for it in B.load_benchmark("mbpp", split)]
        for split in B.MBPP_RANGES
    }
    assert ids["test"][0] == 11 and ids["test"][-1] == 510 and len(ids["test"]) == 500, (
        "mbpp test must be task ids 11-510 (MANIFEST)"
    )
    assert len(ids["full"]) == 974
    parts = ids["prompt"] + ids["test"] + ids["validation"] + ids["train"]
    assert sorted(parts) == ids["full"], "prompt/test/validation/train must partition the 974 tasks"


ALL_LOADS = [
    (name, split)
    for name in (
        "gsm8k",
        "arc_challenge",
        "mmlu",
        "humaneval",
        "mbpp",
        "math500",
        "svamp",
        "mawps",
        "asdiv",
    )
    for split in B.SPLITS[name]
]
ALL_LOADS += [(f"bbh/{t}", "test") for t in B.BBH_TASKS]


@pytest.mark.parametrize("name, split", ALL_LOADS)
def test_item_schema(name, split):
    items = B.load_benchmark(name, split)
    assert items, f"{name}/{split} loaded no items"
    ids = [it.id for it in items]
    assert len(set(ids)) == len(ids), f"{name}/{split}: item ids are not unique"
    for it in items:
        assert isinstance(it, Item) and it.prompt.strip(), f"{it.id}: empty prompt"
        assert it.id.startswith(name.split("/")[0] + "/")
        assert it.target.strip(), f"{it.id}: no target"
        if it.choices is not None:
            assert it.answer is None and 0 <= it.label < len(it.choices)
            assert 3 <= len(it.choices) <= 5
            for k, text in enumerate(it.choices):
                assert f"\n{'ABCDE'[k]}. {text}" in it.prompt, (
                    f"{it.id}: option {k} not shown as a lettered line"
                )


def test_item_contents_spot_checks():
    g = B.load_benchmark("gsm8k", "test", limit=1)[0]
    assert g.answer == "18" and g.metadata["solution"].endswith("#### 18")
    arc = B.load_benchmark("arc_challenge", "test")
    assert arc[0].target == "C" and arc[0].id == "arc_challenge/test/Mercury_7175875"
    numeric = [it for it in arc if it.metadata["numeric_labels"]]
    assert len(numeric) == 22, "MANIFEST: 22 ARC test questions use numeric labels 1-4"
    assert all(it.target in "ABCD" and "\nA. " in it.prompt for it in numeric), (
        "numeric ARC labels must be shown and scored as letters"
    )
    assert (
        sum(len(it.choices) == 3 for it in arc) == 4
        and sum(len(it.choices) == 5 for it in arc) == 3
    )
    mm = B.load_benchmark("mmlu/anatomy", "test", limit=1)[0]
    assert mm.label == 0 and mm.metadata["subject"] == "anatomy", (
        "MMLU answer column is a 0-3 index"
    )
    assert mm.id == "mmlu/anatomy/test/0"
    assert B.load_benchmark("mmlu", "test", limit=1)[0].id == "mmlu/test/abstract_algebra/0"
    bb = B.load_benchmark("bbh/navigate", limit=1)[0]
    assert bb.answer in ("Yes", "No") and bb.metadata["task"] == "navigate"
    assert B.load_benchmark("bbh/date_understanding", limit=1)[0].metadata["multiple_choice"]
    he = B.load_benchmark("humaneval", limit=1)[0]
    assert he.metadata["entry_point"] == "has_close_elements" and "def check" in he.metadata["test"]
    mb = B.load_benchmark("mbpp", "test", limit=1)[0]
    assert "\r" not in mb.answer and mb.metadata["task_id"] == 11 and "assert" in mb.prompt
    m5 = B.load_benchmark("math500", limit=1)[0]
    assert m5.answer == "\\left( 3, \\frac{\\pi}{2} \\right)" and m5.metadata["level"] == 2
    sv = B.load_benchmark("svamp", limit=1)[0]
    assert sv.answer == "51" and sv.prompt.endswith("How much do you have to pay to buy each pack?")
    assert B.load_benchmark("mawps", limit=1)[0].answer == "43"
    asd = B.load_benchmark("asdiv", limit=1)[0]
    assert asd.answer == "9" and asd.metadata["unit"] == "apples", (
        "ASDiv '9 (apples)' -> answer '9'"
    )


def test_limit():
    assert len(B.load_benchmark("gsm8k", limit=5)) == 5
    assert B.load_benchmark("gsm8k", limit=0) == []
    with pytest.raises(ValueError, match="limit"):
        B.load_benchmark("gsm8k", limit=-1)


def test_bbh_cot_prompt():
    text = B.bbh_cot_prompt("navigate")
    assert "canary" not in text.lower() and not text.startswith("-----")
    assert text.startswith("Given a series of navigation instructions")
    with pytest.raises(ValueError, match="task="):
        B.bbh_cot_prompt("nope")


# --- references score as correct -----------------------------------------------------------------


def test_references_score_correct():
    for it in B.load_benchmark("gsm8k", "test", limit=50):
        assert score("gsm8k", it, it.metadata["solution"]), (
            f"{it.id}: the reference solution must score"
        )
    for it in B.load_benchmark("math500", limit=50):
        assert score("math500", it, it.metadata["solution"]), (
            f"{it.id}: boxed reference must match answer"
        )
    for name in ("svamp", "mawps", "asdiv"):
        for it in B.load_benchmark(name, limit=50):
            assert score(name, it, f"The answer is {it.answer}."), f"{it.id}: answer must score"
    for it in B.load_benchmark("mmlu/anatomy", "dev"):
        assert score("mmlu/anatomy", it, f"The answer is ({it.target}).")
    for it in B.load_benchmark("bbh/date_understanding", limit=20):
        assert score("bbh/date_understanding", it, f"So the answer is {it.answer}.")


def test_code_canonical_solutions_pass_and_wrong_fail():
    for it in B.load_benchmark("humaneval", limit=3):
        assert score("humaneval", it, it.metadata["canonical_solution"]), (
            f"{it.id}: canonical solution failed"
        )
        assert not score("humaneval", it, "    return None\n"), f"{it.id}: a wrong solution passed"
    for it in B.load_benchmark("mbpp", "test", limit=3):
        assert score("mbpp", it, it.answer), f"{it.id}: reference code failed its asserts"
        wrong = re.sub(
            r"def (\w+)\((.*?)\):.*",
            r"def \1(\2):\n    return None\n",
            it.answer.split("\n\n")[0],
            flags=re.DOTALL,
        )
        assert not score("mbpp", it, wrong), f"{it.id}: a function returning None passed"


# --- bad names ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, split, match",
    [
        ("nope", "test", r"name='nope'.*allowed values: gsm8k"),
        ("bbh", "test", r"bbh needs a task.*bbh/boolean_expressions"),
        ("bbh/nope", "test", r"bbh has no task 'nope'.*bbh/word_sorting"),
        ("mmlu/nope", "test", r"mmlu has no subject 'nope'.*anatomy"),
        ("gsm8k/extra", "test", r"gsm8k has no sub-benchmarks"),
        ("gsm8k", "dev", r"split='dev'.*allowed values: train, test"),
        ("arc_challenge", "validation", r"split='validation'.*train, dev, test"),
        ("mmlu", "train", r"split='train'.*test, dev"),
        ("tiny", "test", r"tiny/<task>"),
    ],
)
def test_unknown_names(name, split, match):
    with pytest.raises(ValueError, match=match):
        B.load_benchmark(name, split)


def test_unknown_source():
    with pytest.raises(ValueError, match=r"source='s3'.*local, hf"):
        B.load_benchmark("gsm8k", source="s3")


# --- tiny world delegation ------------------------------------------------------------------------


def test_tiny_delegates_to_world():
    tasks = pytest.importorskip("kit.world.tasks")
    name = next(iter(tasks.TASKS))
    got = B.load_benchmark(f"tiny/{name}", "test", limit=3)
    assert got == tasks.get_task(name).items("test", n=3), (
        "tiny/<task> must return the world's own items"
    )
    with pytest.raises(ValueError, match="task="):
        B.load_benchmark("tiny/not_a_task")


# --- Hugging Face source (kit.models.hub.hf_dataset mocked; never the network)
# -----------------------------

HF_ROWS = {
    "openai/gsm8k": [{"question": "2+2?", "answer": "2+2=4\n#### 4"}],
    "allenai/ai2_arc": [
        {
            "id": "q1",
            "question": "Pick",
            "answerKey": "2",
            "choices": {"text": ["a", "b", "c", "d"], "label": ["1", "2", "3", "4"]},
        }
    ],
    "cais/mmlu": [
        {"question": "Q?", "subject": "anatomy", "choices": ["w", "x", "y", "z"], "answer": 3}
    ],
    "lukaemon/bbh": [{"input": "not True", "target": "False"}],
    "openai/openai_humaneval": [
        {
            "task_id": "HumanEval/0",
            "prompt": "def f():\n",
            "canonical_solution": "    return 1\n",
            "test": "def check(c):\n    assert c() == 1\n",
            "entry_point": "f",
        }
    ],
    "google-research-datasets/mbpp": [
        {
            "task_id": 11,
            "text": "Write f.",
            "code": "def f():\r\n  return 1",
            "test_list": ["assert f() == 1"],
            "test_setup_code": "",
            "challenge_test_list": [],
        }
    ],
    "HuggingFaceH4/MATH-500": [
        {
            "problem": "1/2?",
            "solution": "\\boxed{\\frac12}",
            "answer": "\\frac12",
            "subject": "Algebra",
            "level": 1,
            "unique_id": "test/algebra/1.json",
        }
    ],
    "ChilleD/SVAMP": [
        {
            "ID": "chal-1",
            "Body": "He had 3",
            "Question": "How many?",
            "Equation": "3",
            "Answer": 3.0,
            "Type": "Common-Division",
        }
    ],
    "MU-NLPC/Calc-mawps": [{"id": "m1", "question": "1+1?", "result_float": 2.0}],
    "EleutherAI/asdiv": [
        {
            "body": "B.",
            "question": "Q?",
            "solution_type": "Addition",
            "answer": "9 (apples)",
            "formula": "7+2=9",
        }
    ],
    "google-research-datasets/nq_open": [
        {"question": "who wrote hamlet", "answer": ["William Shakespeare", "Shakespeare"]}
    ],
    "allenai/social_i_qa": [
        {
            "context": "Tracy lent Bo a pen.",
            "question": "How would Bo feel?",
            "answerA": "grateful",
            "answerB": "angry",
            "answerC": "bored",
            "label": "1",
        }
    ],
    "allenai/winogrande": [
        {
            "sentence": "The cup did not fit in the bag because _ was too big.",
            "option1": "cup",
            "option2": "bag",
            "answer": "1",
        },
        {"sentence": "A test item _ without a key.", "option1": "x", "option2": "y", "answer": ""},
    ],
    "vectara/leaderboard_results": [
        {"source": "The cat sat on the mat all day.", "summary": "A cat sat.", "model": "m1"},
        {"source": "Rain fell in Paris on Monday.", "summary": "It rained.", "model": "m1"},
        {
            "source": "The cat sat on the mat all day.",
            "summary": "The cat sat on a mat.",
            "model": "m2",
        },
        {"source": "  ", "summary": "", "model": "m2"},
    ],
    "lmsys/chatbot_arena_conversations": [
        {
            "question_id": "q1",
            "model_a": "llama-13b",
            "model_b": "vicuna-13b",
            "winner": "model_b",
            "turn": 1,
            "conversation_a": [
                {"role": "user", "content": "Hi?"},
                {"role": "assistant", "content": "A says hi"},
            ],
            "conversation_b": [
                {"role": "user", "content": "Hi?"},
                {"role": "assistant", "content": "B says hi"},
            ],
        },
        {
            "question_id": "q2",
            "model_a": "vicuna-13b",
            "model_b": "llama-13b",
            "winner": "model_b",
            "turn": 1,
            "conversation_a": [
                {"role": "user", "content": "2+2?"},
                {"role": "assistant", "content": "5"},
            ],
            "conversation_b": [
                {"role": "user", "content": "2+2?"},
                {"role": "assistant", "content": "4"},
            ],
        },
        {
            "question_id": "q3",
            "model_a": "llama-13b",
            "model_b": "alpaca-13b",
            "winner": "tie",
            "turn": 1,
            "conversation_a": [
                {"role": "user", "content": "x"},
                {"role": "assistant", "content": "y"},
            ],
            "conversation_b": [
                {"role": "user", "content": "x"},
                {"role": "assistant", "content": "z"},
            ],
        },
        {
            "question_id": "q4",
            "model_a": "llama-13b",
            "model_b": "alpaca-13b",
            "winner": "model_a",
            "turn": 2,
            "conversation_a": [{"role": "user", "content": "x"}],
            "conversation_b": [{"role": "user", "content": "x"}],
        },
    ],
}


COMMIT = "0123456789abcdef0123456789abcdef01234567"


class FakeHub(list):
    """``datasets.load_dataset`` (and huggingface_hub's commit lookup) stood in: records each call
    as ``(path, config, split)`` in the list, its keyword arguments in ``kwargs``, and how many rows
    were taken from the streams in ``rows_read``."""

    def __init__(self):
        super().__init__()
        self.kwargs: list[dict] = []
        self.rows_read = 0
        self.resolved: list[tuple] = []
        self.rows = HF_ROWS

    def load_dataset(self, path, name=None, split=None, **kwargs):
        self.append((path, name, split))
        self.kwargs.append(kwargs)
        rows = (
            [] if path == "google-research-datasets/mbpp" and split != "test" else self.rows[path]
        )

        def stream():  # an IterableDataset yields rows one at a time
            for r in rows:
                self.rows_read += 1
                yield dict(r)

        return stream()

    def dataset_info(self, path, revision=None):
        self.resolved.append((path, revision))
        return types.SimpleNamespace(sha=COMMIT)


@pytest.fixture
def fake_hub(monkeypatch):
    import datasets
    import huggingface_hub

    from kit.data import hub_benchmarks

    hub = FakeHub()
    # "not pinned" is warned once per (dataset, commit): say it was, for these stand-in commits
    monkeypatch.setattr(
        hub_benchmarks, "_WARNED", {(path, COMMIT) for path, _ in B.HF_SOURCES.values()}
    )
    monkeypatch.setattr(datasets, "load_dataset", hub.load_dataset)
    monkeypatch.setattr(
        huggingface_hub.HfApi,
        "dataset_info",
        lambda self, path, revision=None: hub.dataset_info(path, revision),
    )
    # hf loads must not touch the data dir
    monkeypatch.setenv("KIT_DATA_DIR", "/nonexistent/kit-data")
    return hub


@pytest.mark.parametrize(
    "name, split, hub_call, target",
    [
        ("gsm8k", "test", ("openai/gsm8k", "main", "test"), "4"),
        ("arc_challenge", "dev", ("allenai/ai2_arc", "ARC-Challenge", "validation"), "B"),
        ("mmlu/anatomy", "test", ("cais/mmlu", "anatomy", "test"), "D"),
        ("mmlu", "dev", ("cais/mmlu", "all", "dev"), "D"),
        (
            "bbh/boolean_expressions",
            "test",
            ("lukaemon/bbh", "boolean_expressions", "test"),
            "False",
        ),
        ("humaneval", "test", ("openai/openai_humaneval", None, "test"), "    return 1\n"),
        ("mbpp", "test", ("google-research-datasets/mbpp", "full", "test"), "def f():\n  return 1"),
        ("math500", "test", ("HuggingFaceH4/MATH-500", None, "test"), "\\frac12"),
        ("svamp", "test", ("ChilleD/SVAMP", None, "test"), "3"),
        ("mawps", "test", ("MU-NLPC/Calc-mawps", None, "test"), "2"),
        ("asdiv", "test", ("EleutherAI/asdiv", None, "validation"), "9"),
        (
            "natural_questions",
            "validation",
            ("google-research-datasets/nq_open", "nq_open", "validation"),
            "William Shakespeare",
        ),
        ("socialiqa", "validation", ("allenai/social_i_qa", None, "validation"), "A"),
        ("winogrande", "validation", ("allenai/winogrande", "winogrande_xl", "validation"), "A"),
    ],
)
def test_hf_source_converts_rows(fake_hub, name, split, hub_call, target):
    items = B.load_benchmark(name, split, source="hf")
    assert fake_hub == [hub_call], f"{name}: expected one hub call {hub_call}, got {fake_hub}"
    assert len(items) == 1 and items[0].target == target
    assert items[0].id.startswith(name.split("/")[0] + "/")


def test_hf_mbpp_full_concatenates_splits(fake_hub):
    B.load_benchmark("mbpp", "full", source="hf")
    assert sorted(c[2] for c in fake_hub) == ["prompt", "test", "train", "validation"]


def test_hf_arc_numeric_labels_become_letters(fake_hub):
    item = B.load_benchmark("arc_challenge", "test", source="hf")[0]
    assert item.label == 1 and item.prompt == "Pick\nA. a\nB. b\nC. c\nD. d"
    assert item.metadata["source_labels"] == ["1", "2", "3", "4"]


def test_hf_reads_the_pinned_commit_streaming_and_records_it(fake_hub, monkeypatch):
    from kit.data import hub_benchmarks

    monkeypatch.setattr(hub_benchmarks, "_WARNED", set())  # warned once per process: start afresh
    with pytest.warns(UserWarning, match=rf"openai/gsm8k is not pinned.*{COMMIT}"):
        items = B.load_benchmark("gsm8k", "test", source="hf")
    assert fake_hub.resolved == [("openai/gsm8k", None)], "main resolved to a commit before reading"
    assert fake_hub.kwargs == [{"revision": COMMIT, "streaming": True}]
    assert B.revision_of(items) == COMMIT and items[0].metadata["hf_revision"] == COMMIT
    # a pinned family reads its pin without asking the hub which commit main is
    pin = "f" * 40
    monkeypatch.setitem(B.HF_REVISIONS, "svamp", pin)
    B.load_benchmark("svamp", source="hf")
    assert (
        fake_hub.kwargs[-1] == {"revision": pin, "streaming": True} and len(fake_hub.resolved) == 1
    )
    # revision= overrides the table; a tag is resolved to its commit
    B.load_benchmark("svamp", source="hf", revision="v1.0")
    assert (
        fake_hub.resolved[-1] == ("ChilleD/SVAMP", "v1.0")
        and fake_hub.kwargs[-1]["revision"] == COMMIT
    )
    assert set(B.HF_REVISIONS) == set(B.HF_SOURCES), "every hub family has a revision entry"
    with pytest.raises(ValueError, match="revision=.*source='hf' only"):
        B.load_benchmark("gsm8k", revision="main")


@pytest.mark.parametrize(
    "name, split, rows_per_item",
    [("gsm8k", "test", 1), ("natural_questions", "validation", 1), ("winogrande", "validation", 2)],
)
def test_hf_limit_stops_reading_rows(fake_hub, name, split, rows_per_item):
    """``limit`` is applied while the stream is read: 5 items of a 100,000-row split read 5 rows
    (winogrande: every other row has no key, so rows are read until 5 items exist)."""
    path = B.HF_SOURCES[name][0]
    one = HF_ROWS[path][0]
    fake_hub.rows = {**HF_ROWS, path: [one, *HF_ROWS[path][1:]] * 100_000}
    items = B.load_benchmark(name, split, source="hf", limit=5)
    assert len(items) == 5 and len({it.id for it in items}) == 5
    assert fake_hub.rows_read <= max(5 * rows_per_item, 64), (
        f"read {fake_hub.rows_read} rows for 5 items"
    )


# --- data directory and checksums (kit.core.paths)
# ------------------------------------------------------


def _fake_data_dir(
    tmp_path: Path, root: Path, files: list[str], corrupt: str | None = None
) -> Path:
    lines = []
    for rel in files:
        dst = tmp_path / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / rel, dst)
        digest = hashlib.sha256(dst.read_bytes()).hexdigest()
        if rel == corrupt:
            digest = "0" * 64
        lines.append(f"{digest}  {rel}")
    (tmp_path / "checksums.sha256").write_text("\n".join(lines) + "\n")
    return tmp_path


SMALL = ["svamp/SVAMP.json", "mmlu/dev/anatomy_dev.csv", "bbh/navigate.json"]


def test_fake_data_dir_loads(tmp_path, monkeypatch, root):
    monkeypatch.setenv("KIT_DATA_DIR", str(_fake_data_dir(tmp_path, root, SMALL)))
    assert data_dir() == tmp_path
    assert len(B.load_benchmark("svamp")) == 1000


def test_checksum_mismatch_names_the_file(tmp_path, monkeypatch, root):
    monkeypatch.setenv(
        "KIT_DATA_DIR", str(_fake_data_dir(tmp_path, root, SMALL, corrupt="bbh/navigate.json"))
    )
    with pytest.raises(DataError, match=r"bbh/navigate\.json: checksum mismatch"):
        B.load_benchmark("svamp")


def test_modified_file_fails_checksum(tmp_path, monkeypatch, root):
    _fake_data_dir(tmp_path, root, SMALL)
    with open(tmp_path / "svamp" / "SVAMP.json", "ab") as f:
        f.write(b" ")
    monkeypatch.setenv("KIT_DATA_DIR", str(tmp_path))
    with pytest.raises(DataError, match=r"svamp/SVAMP\.json: checksum mismatch"):
        data_dir()


def test_listed_file_missing(tmp_path, monkeypatch, root):
    _fake_data_dir(tmp_path, root, SMALL)
    (tmp_path / "mmlu" / "dev" / "anatomy_dev.csv").unlink()
    with pytest.raises(DataError, match=r"mmlu/dev/anatomy_dev\.csv: missing"):
        verify_checksums(tmp_path)


def test_checksum_listing_missing(tmp_path, root):
    _fake_data_dir(tmp_path, root, SMALL)
    (tmp_path / "checksums.sha256").unlink()
    with pytest.raises(DataError, match="checksums.sha256 is missing"):
        verify_checksums(tmp_path)


def test_missing_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_DATA_DIR", str(tmp_path / "absent"))
    with pytest.raises(DataError, match=r"absent.*KIT_DATA_DIR.*does not exist"):
        B.load_benchmark("gsm8k")


def test_default_data_dir_is_shared_data_beside_repo(monkeypatch):
    monkeypatch.delenv("KIT_DATA_DIR", raising=False)
    from kit.core.paths import REPO_ROOT

    expected = REPO_ROOT.parent / "shared" / "data"
    if not expected.is_dir():
        pytest.skip("no ../shared/data beside this checkout")
    assert data_dir(verify=False) == expected


# Known kit.core.paths defects (reported to the lead, not fixed here: kit/paths.py is the lead's
# file). strict=True: once fixed, these XPASS and fail, so the marker gets removed.


def test_malformed_checksum_line_is_data_error(tmp_path):
    (tmp_path / "checksums.sha256").write_text("not-a-checksum-line\n")
    with pytest.raises(DataError, match="checksums.sha256"):
        verify_checksums(tmp_path)


def test_empty_checksum_listing_is_data_error(tmp_path):
    (tmp_path / "checksums.sha256").write_text("")
    with pytest.raises(DataError):
        verify_checksums(tmp_path)


# --- the Competency Gaps paper's other benchmarks (BBQ, CrowS-Pairs, AGIEval, LogicBench)
# ------------------


def test_cg_benchmarks_match_manifest_group_counts(root):
    rows = _manifest_rows(root, "group")
    assert len(B.load_benchmark("bbq")) == _count(rows["bbq/*"][2])
    assert len(B.load_benchmark("crows_pairs")) == _count(rows["crows_pairs/*"][2])
    assert len(B.load_benchmark("agieval")) == _count(rows["agieval/*"][2])
    lb = B.load_benchmark("logicbench")
    samples = {it.id.rsplit("/", 1)[0] if it.metadata["format"] == "bqa" else it.id for it in lb}
    assert len(samples) == _count(rows["logicbench/eval/**/*.json"][2]), (
        "one MANIFEST item per LogicBench sample"
    )
    assert len(B.load_benchmark("bbq/Age")) + len(B.load_benchmark("bbq/Religion")) < len(
        B.load_benchmark("bbq")
    )


def test_cg_benchmark_items_have_one_target_and_unique_ids(root):
    for name in ("bbq", "crows_pairs", "agieval", "logicbench"):
        items = B.load_benchmark(name)
        assert len({it.id for it in items}) == len(items), f"{name}: duplicate item ids"
        for it in items[:: max(1, len(items) // 50)]:
            assert (it.answer is None) != (it.choices is None), f"{it.id}: exactly one target kind"
            if it.choices is not None:
                assert 0 <= it.label < len(it.choices) and f"A. {it.choices[0]}" in it.prompt
    math = B.load_benchmark("agieval/math")
    assert all(it.answer is not None for it in math)
    assert {it.answer for it in B.load_benchmark("logicbench/bqa")} == {"yes", "no"}


def test_cg_benchmark_scorers(root):
    bbq = B.load_benchmark("bbq", limit=1)[0]
    assert score("bbq", bbq, f"Answer: {bbq.target}") and not score(
        "bbq", bbq, "Answer: " + "ABC".replace(bbq.target, "")[0]
    )
    bqa = B.load_benchmark("logicbench/bqa", limit=1)[0]
    other = "no" if bqa.answer == "yes" else "yes"
    assert score("logicbench", bqa, f"{bqa.answer.capitalize()}, because ...") and not score(
        "logicbench", bqa, other
    )
    mcqa = B.load_benchmark("logicbench/mcqa", limit=1)[0]
    assert score("logicbench", mcqa, f"The answer is ({mcqa.target}).")
    math = B.load_benchmark("agieval/math", limit=1)[0]
    assert score("agieval", math, f"so \\boxed{{{math.answer}}}") and not score(
        "agieval", math, "\\boxed{42}"
    )


def test_cg_benchmark_bad_names_list_the_subsets():
    with pytest.raises(ValueError, match="bbq/Age"):
        B.load_benchmark("bbq/Gender_identity")
    with pytest.raises(ValueError, match="logicbench/bqa"):
        B.load_benchmark("logicbench/xyz")
    with pytest.raises(ValueError, match="no hub mapping"):
        B.load_benchmark("crows_pairs", source="hf")


def test_hub_only_benchmarks_say_so_offline():
    for name in B.HUB_ONLY:
        with pytest.raises(ValueError, match=rf"{name} is not in the data directory.*source='hf'"):
            B.load_benchmark(name, B.SPLITS[name][0])


def test_hf_hub_only_items_have_the_one_schema_and_scorers(fake_hub):
    nq = B.load_benchmark("natural_questions", "validation", source="hf")[0]
    assert nq.prompt == "who wrote hamlet?" and nq.metadata["answers"] == [
        "William Shakespeare",
        "Shakespeare",
    ]
    assert score("natural_questions", nq, "So the answer is shakespeare.") and not score(
        "natural_questions", nq, "Marlowe"
    )
    siqa = B.load_benchmark("socialiqa", "validation", source="hf")[0]
    assert (
        siqa.prompt == "Tracy lent Bo a pen.\nHow would Bo feel?\nA. grateful\nB. angry\nC. bored"
    ), "hub labels 1-3 -> 0-2"
    assert score("socialiqa", siqa, "The answer is A") and not score("socialiqa", siqa, "(B)")
    wg = B.load_benchmark("winogrande", "validation", source="hf")
    assert len(wg) == 1, (
        "an item without an answer key (the hub's test split) is not scorable and is dropped"
    )
    assert wg[0].choices == ("cup", "bag") and score("winogrande", wg[0], "A")


def test_hf_lmsys_arena_gives_wins_and_losses_of_one_model(fake_hub):
    items = B.load_benchmark("lmsys_arena", "train", source="hf")
    assert [it.id for it in items] == [
        "lmsys_arena/train/q1",
        "lmsys_arena/train/q2",
        "lmsys_arena/train/q3",
    ], "multi-turn battles are skipped"
    kept, scores, responses = B.arena_scores(items, "llama-13b")
    assert [it.id.rsplit("/", 1)[1] for it in kept] == ["q1", "q2"] and scores == [0.0, 1.0], (
        "ties dropped"
    )
    assert responses == ["A says hi", "4"]
    with pytest.raises(ValueError, match="gpt-9"):
        B.arena_scores(items, "gpt-9")


def test_hf_vectara_gives_one_summarisation_item_per_document_and_no_rule_scorer(fake_hub):
    items = B.load_benchmark("vectara_hallucination", "train", source="hf")
    assert fake_hub == [("vectara/leaderboard_results", None, "train")]
    assert [it.id for it in items] == [
        "vectara_hallucination/train/0",
        "vectara_hallucination/train/1",
    ], "one item per distinct non-empty document, in first-seen order"
    assert items[0].metadata["source"] == "The cat sat on the mat all day."
    assert items[0].prompt.startswith("You are a chat bot answering questions using data.")
    assert items[0].prompt.endswith(
        "covering the core pieces of information described.' The cat sat on the mat all day."
    )
    with pytest.raises(ValueError, match="factual-consistency model"):
        score("vectara_hallucination", items[0], "A cat sat.")
