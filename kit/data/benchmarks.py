"""Real benchmarks as one item schema (:class:`kit.data.items.Item`), read in place or from the hub.

``load_benchmark(name, split="test", source="local", limit=None)`` for

========================  ===============================  ==========================================
name                      splits                           target
========================  ===============================  ==========================================
``gsm8k``                 train, test                      ``answer``: the number after ``####``
``arc_challenge``         train, dev, test                 ``choices`` + ``label`` (3-5 options)
``mmlu``, ``mmlu/<s>``    test, dev                        ``choices`` + ``label`` (4 options)
``bbh/<task>``            test                             ``answer``: the target text, e.g. ``(A)``
``humaneval``             test                             code; tests in ``metadata``
``mbpp``                  full, test, train, validation,   code; asserts in ``metadata``
                          prompt
``math500``               test                             ``answer``: MATH final answer (LaTeX)
``svamp``                 test                             ``answer``: a number
``mawps``                 test                             ``answer``: a number
``asdiv``                 test                             ``answer``: a number (units stripped) or text
``bbq``, ``bbq/<cat>``    test                             ``choices`` + ``label`` (3 options; 6 of 11 categories)
``crows_pairs``           test                             ``choices`` = (stereotyping, less stereotyping)
                                                           sentence, ``label`` 0 = the stereotyping one
``agieval``,              test                             ``choices`` + ``label`` (4-5 options); the cloze
``agieval/<subset>``                                       subset ``math``: ``answer`` (LaTeX)
``logicbench``,           test                             BQA: ``answer`` yes/no (one item per question);
``logicbench/bqa|mcqa``                                    MCQA: ``choices`` + ``label`` (4 options)
``tiny/<task>``           the tiny world's splits          whatever the task's items carry
========================  ===============================  ==========================================

Hub only (``source="hf"``, network; the paper's other benchmarks, not in the data directory):

========================  ===============================  ==========================================
``natural_questions``     train, validation                ``answer``: the first short answer (NQ-open);
                                                           all of them in ``metadata["answers"]``
``socialiqa``             train, validation                ``choices`` + ``label`` (3 options)
``winogrande``            train, validation                ``choices`` + ``label`` (the 2 fillers of ``_``)
``lmsys_arena``           train                            one item per single-turn battle of
                                                           ``metadata["model_a"]`` vs ``model_b``; no
                                                           target: :func:`arena_scores` gives a model's
                                                           win (1) / loss (0) per item
``vectara_hallucination`` train                            one item per source document of Vectara's
                                                           hallucination leaderboard (its summarisation
                                                           prompt); no target: judged by a factual-
                                                           consistency model (HHEM), not by a rule
========================  ===============================  ==========================================

``source="local"`` reads the files in :func:`kit.core.paths.data_dir` (checksum-verified once per
process; never copied). ``source="hf"`` asks :func:`kit.models.hub.hf_dataset` (the one hub boundary)
for the Hugging Face dataset named in :data:`HF_SOURCES` and converts its rows to the same items.
Hub caveats: ``svamp`` (ChilleD/SVAMP) ``test`` is its 300-item split, not the 1,000 local items;
``asdiv`` maps to EleutherAI/asdiv's only split, ``validation`` (2,305 problems, unfiltered);
``mawps`` (MU-NLPC/Calc-mawps) is a differently prepared MAWPS whose field names
(``question``, ``result_float``) we took from its dataset card without running it.

Prompts: the question text; multiple-choice prompts append the options as ``A. text`` lines (the
layout of the published responses in ``model_responses/``); mbpp appends its test asserts, as in
the MBPP paper. Templates (few-shot, "Answer:") are the caller's business.
"""

from __future__ import annotations

import csv
import gzip
import json
import re
from pathlib import Path
from typing import Any, Callable, Iterable

from kit.data.items import Item

__all__ = [
    "load_benchmark", "BENCHMARKS", "SPLITS", "BBH_TASKS", "MMLU_SUBJECTS", "HF_SOURCES",
    "bbh_cot_prompt", "benchmark_files", "format_choices", "HUB_ONLY", "arena_scores",
]

LETTERS = "ABCDEFGHIJ"

BBH_TASKS: tuple[str, ...] = (
    "boolean_expressions", "causal_judgement", "date_understanding", "disambiguation_qa",
    "dyck_languages", "formal_fallacies", "geometric_shapes", "hyperbaton",
    "logical_deduction_five_objects", "logical_deduction_seven_objects",
    "logical_deduction_three_objects", "movie_recommendation", "multistep_arithmetic_two",
    "navigate", "object_counting", "penguins_in_a_table", "reasoning_about_colored_objects",
    "ruin_names", "salient_translation_error_detection", "snarks", "sports_understanding",
    "temporal_sequences", "tracking_shuffled_objects_five_objects",
    "tracking_shuffled_objects_seven_objects", "tracking_shuffled_objects_three_objects",
    "web_of_lies", "word_sorting",
)
"""The 27 BIG-Bench Hard tasks (``bbh/<task>``)."""

MMLU_SUBJECTS: tuple[str, ...] = (
    "abstract_algebra", "anatomy", "astronomy", "business_ethics", "clinical_knowledge",
    "college_biology", "college_chemistry", "college_computer_science", "college_mathematics",
    "college_medicine", "college_physics", "computer_security", "conceptual_physics",
    "econometrics", "electrical_engineering", "elementary_mathematics", "formal_logic",
    "global_facts", "high_school_biology", "high_school_chemistry",
    "high_school_computer_science", "high_school_european_history", "high_school_geography",
    "high_school_government_and_politics", "high_school_macroeconomics",
    "high_school_mathematics", "high_school_microeconomics", "high_school_physics",
    "high_school_psychology", "high_school_statistics", "high_school_us_history",
    "high_school_world_history", "human_aging", "human_sexuality", "international_law",
    "jurisprudence", "logical_fallacies", "machine_learning", "management", "marketing",
    "medical_genetics", "miscellaneous", "moral_disputes", "moral_scenarios", "nutrition",
    "philosophy", "prehistory", "professional_accounting", "professional_law",
    "professional_medicine", "professional_psychology", "public_relations", "security_studies",
    "sociology", "us_foreign_policy", "virology", "world_religions",
)
"""The 57 MMLU subjects (``mmlu/<subject>``)."""

BBQ_CATEGORIES: tuple[str, ...] = (
    "Age", "Disability_status", "Nationality", "Physical_appearance", "Religion", "Sexual_orientation",
)
"""BBQ categories in the data directory (Gender_identity, Race_ethnicity, Race_x_SES, Race_x_gender and
SES are absent from the snapshot: use ``source="hf"`` for them)."""

AGIEVAL_SUBSETS: tuple[str, ...] = (
    "aqua-rat", "logiqa-en", "lsat-ar", "lsat-lr", "lsat-rc", "math", "sat-en", "sat-en-without-passage", "sat-math",
)
"""AGIEval's English subsets (v1); ``math`` is cloze (free-form answers), the rest multiple choice."""

LOGICBENCH_FORMATS: tuple[str, ...] = ("bqa", "mcqa")
"""LogicBench(Eval): yes/no questions (BQA) and 4-way multiple choice (MCQA)."""

SPLITS: dict[str, tuple[str, ...]] = {
    "gsm8k": ("train", "test"),
    "arc_challenge": ("train", "dev", "test"),
    "mmlu": ("test", "dev"),
    "bbh": ("test",),
    "humaneval": ("test",),
    "mbpp": ("full", "test", "train", "validation", "prompt"),
    "math500": ("test",),
    "svamp": ("test",),
    "mawps": ("test",),
    "asdiv": ("test",),
    "bbq": ("test",),
    "crows_pairs": ("test",),
    "agieval": ("test",),
    "logicbench": ("test",),
    "natural_questions": ("train", "validation"),
    "socialiqa": ("train", "validation"),
    "winogrande": ("train", "validation"),
    "lmsys_arena": ("train",),
    "vectara_hallucination": ("train",),
}
"""Allowed splits per benchmark family (``tiny/<task>`` splits come from the world)."""

BENCHMARKS: tuple[str, ...] = tuple(SPLITS)
"""Benchmark families; ``mmlu`` also as ``mmlu/<subject>``, ``bbh`` only as ``bbh/<task>``."""

MBPP_RANGES: dict[str, tuple[int, int]] = {
    "prompt": (1, 10), "test": (11, 510), "validation": (511, 600), "train": (601, 974), "full": (1, 974),
}
"""The standard MBPP task-id ranges (inclusive), as in the google-research release."""

HF_SOURCES: dict[str, tuple[str, str | None]] = {
    "gsm8k": ("openai/gsm8k", "main"),
    "arc_challenge": ("allenai/ai2_arc", "ARC-Challenge"),
    "mmlu": ("cais/mmlu", "all"),  # the subject replaces "all" for mmlu/<subject>
    "bbh": ("lukaemon/bbh", None),  # the task is the config name
    "humaneval": ("openai/openai_humaneval", None),
    "mbpp": ("google-research-datasets/mbpp", "full"),
    "math500": ("HuggingFaceH4/MATH-500", None),
    "svamp": ("ChilleD/SVAMP", None),
    "mawps": ("MU-NLPC/Calc-mawps", None),
    "asdiv": ("EleutherAI/asdiv", None),
    "natural_questions": ("google-research-datasets/nq_open", "nq_open"),
    "socialiqa": ("allenai/social_i_qa", None),
    "winogrande": ("allenai/winogrande", "winogrande_xl"),
    "lmsys_arena": ("lmsys/chatbot_arena_conversations", None),
    "vectara_hallucination": ("vectara/leaderboard_results", None),
}
"""Hugging Face ``(path, config)`` per benchmark for ``source="hf"``."""

HUB_ONLY: tuple[str, ...] = ("natural_questions", "socialiqa", "winogrande", "lmsys_arena", "vectara_hallucination")
"""Families with no local copy (the data directory's MANIFEST lists them as not available offline)."""

# Our split name -> the hub's split name, where they differ.
_HF_SPLIT = {
    ("arc_challenge", "dev"): "validation",
    ("asdiv", "test"): "validation",  # EleutherAI/asdiv ships one split, "validation"
}

# Families read from local files whose sub-benchmark is optional (``bbq`` = all categories...).
_SUBSETS: dict[str, tuple[str, ...]] = {"bbq": BBQ_CATEGORIES, "agieval": AGIEVAL_SUBSETS, "logicbench": LOGICBENCH_FORMATS}


# --- names ----------------------------------------------------------------------------------

def _parse_name(name: str) -> tuple[str, str | None]:
    """``"mmlu/anatomy"`` -> ``("mmlu", "anatomy")``; unknown names raise ValueError."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"name={name!r} must be a benchmark name; allowed values: {_allowed_names()}")
    family, _, sub = name.partition("/")
    if family == "tiny":
        if not sub:
            raise ValueError("name='tiny' needs a task: 'tiny/<task>' (see kit.world.TASKS)")
        return family, sub
    if family not in SPLITS:
        raise ValueError(f"name={name!r} is not a benchmark; allowed values: {_allowed_names()}")
    if family == "bbh":
        if sub not in BBH_TASKS:
            what = "needs a task" if not sub else f"has no task {sub!r}"
            raise ValueError(f"name={name!r}: bbh {what}; allowed values: "
                             + ", ".join(f"bbh/{t}" for t in BBH_TASKS))
        return family, sub
    if family in _SUBSETS:
        if sub and sub not in _SUBSETS[family]:
            raise ValueError(f"name={name!r}: {family} has no subset {sub!r}; allowed values: "
                             + ", ".join([family] + [f"{family}/{x}" for x in _SUBSETS[family]]))
        return family, sub or None
    if family == "mmlu":
        if sub and sub not in MMLU_SUBJECTS:
            raise ValueError(f"name={name!r}: mmlu has no subject {sub!r}; allowed subjects: "
                             + ", ".join(MMLU_SUBJECTS))
        return family, sub or None
    if sub:
        raise ValueError(f"name={name!r}: {family} has no sub-benchmarks; use name={family!r}")
    return family, None


def _allowed_names() -> str:
    return ", ".join(["gsm8k", "arc_challenge", "mmlu", "mmlu/<subject>", "bbh/<task>", "humaneval",
                      "mbpp", "math500", "svamp", "mawps", "asdiv", "bbq", "bbq/<category>", "crows_pairs",
                      "agieval", "agieval/<subset>", "logicbench", "logicbench/bqa", "logicbench/mcqa",
                      *HUB_ONLY, "tiny/<task>"])


def _check_split(family: str, split: str) -> None:
    if split not in SPLITS[family]:
        raise ValueError(f"split={split!r} is not a split of {family}; allowed values: "
                         + ", ".join(SPLITS[family]))


# --- public entry point ---------------------------------------------------------------------

def load_benchmark(name: str, split: str = "test", source: str = "local",
                   limit: int | None = None) -> list[Item]:
    """Items of benchmark ``name`` (see the module table), in the source's order.

    Args:
        name: ``gsm8k``, ``arc_challenge``, ``mmlu`` (all 57 subjects, alphabetical) or
            ``mmlu/<subject>``, ``bbh/<task>``, ``humaneval``, ``mbpp``, ``math500``, ``svamp``,
            ``mawps``, ``asdiv``, or ``tiny/<task>`` (the tiny world's synthetic tasks).
        split: one of :data:`SPLITS` for the family (tiny tasks: the world's splits).
        source: ``"local"`` (the verified data directory) or ``"hf"`` (Hugging Face, needs network).
        limit: keep the first ``limit`` items (None: all).

    Returns: list of :class:`Item` with ``id`` ``"<name>/<split>/<source id>"``.

    Raises:
        ValueError: unknown name, split, subject/task or source (the message lists allowed values).
        kit.core.paths.DataError: the data directory is missing or fails its checksums.
    """
    if source not in ("local", "hf"):
        raise ValueError(f"source={source!r} is not a source; allowed values: local, hf")
    if limit is not None and (not isinstance(limit, int) or limit < 0):
        raise ValueError(f"limit={limit!r} must be None or an integer >= 0")
    family, sub = _parse_name(name)
    if family == "tiny":
        return _load_tiny(sub, split, limit)
    _check_split(family, split)
    if source == "hf" and family not in HF_SOURCES:
        raise ValueError(f"source='hf': {family} has no hub mapping here (it is read from the data directory); "
                         f"families with one: {', '.join(HF_SOURCES)}")
    if source == "local" and family in HUB_ONLY:
        raise ValueError(f"{family} is not in the data directory (no offline copy); use source='hf' (network)")
    if source == "local":
        records = _LOCAL[family](_data_root(), sub, split)
    else:
        records = _hf_records(family, sub, split)
    items = _CONVERT[family](records, _prefix(family, sub, split))
    if family == "mbpp" and source == "local":
        lo, hi = MBPP_RANGES[split]
        items = [it for it in items if lo <= it.metadata["task_id"] <= hi]
    return items[:limit] if limit is not None else items


def _prefix(family: str, sub: str | None, split: str) -> str:
    return f"{family}/{sub}/{split}" if sub else f"{family}/{split}"


def _data_root() -> Path:
    from kit.core.paths import data_dir

    return data_dir()


def _load_tiny(task: str, split: str, limit: int | None) -> list[Item]:
    # Imported lazily: the world package pulls in torch and its own data.
    try:
        from kit.world import get_task
    except ImportError:  # the package may not re-export it
        from kit.world.tasks import get_task

    return get_task(task).items(split, n=limit)


# --- local files ----------------------------------------------------------------------------

def benchmark_files(name: str, split: str = "test") -> list[Path]:
    """The data files (relative to the data directory) a local load of ``name``/``split`` reads."""
    family, sub = _parse_name(name)
    if family == "tiny":
        raise ValueError("tiny/<task> benchmarks are generated by the world and have no data files")
    _check_split(family, split)
    return [Path(p) for p in _FILES[family](sub, split)]


_FILES: dict[str, Callable[[str | None, str], list[str]]] = {
    "gsm8k": lambda sub, split: [f"gsm8k/{split}.jsonl"],
    "arc_challenge": lambda sub, split: [f"arc_challenge/{split}.jsonl"],
    "mmlu": lambda sub, split: [f"mmlu/{split}/{s}_{split}.csv" for s in ([sub] if sub else MMLU_SUBJECTS)],
    "bbh": lambda sub, split: [f"bbh/{sub}.json"],
    "humaneval": lambda sub, split: ["humaneval/HumanEval.jsonl.gz"],
    "mbpp": lambda sub, split: ["mbpp/mbpp.jsonl"],
    "math500": lambda sub, split: ["math500/test.jsonl"],
    "svamp": lambda sub, split: ["svamp/SVAMP.json"],
    "mawps": lambda sub, split: ["mawps/test.jsonl"],
    "asdiv": lambda sub, split: ["asdiv/test.jsonl"],
    "bbq": lambda sub, split: [f"bbq/{c}.jsonl" for c in ([sub] if sub else BBQ_CATEGORIES)],
    "crows_pairs": lambda sub, split: ["crows_pairs/crows_pairs_anonymized.csv"],
    "agieval": lambda sub, split: [f"agieval/{a}.jsonl" for a in ([sub] if sub else AGIEVAL_SUBSETS)],
    "logicbench": lambda sub, split: _logicbench_files(sub),
}


def _logicbench_files(sub: str | None) -> list[str]:
    from kit.core.paths import data_dir

    root = data_dir()
    out = []
    for fmt in ([sub] if sub else LOGICBENCH_FORMATS):
        out += sorted(str(p.relative_to(root)) for p in (root / "logicbench" / "eval" / fmt.upper()).rglob("*.json"))
    if not out:
        raise FileNotFoundError(f"no LogicBench files under {root / 'logicbench' / 'eval'}")
    return out


def _read_jsonl(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", newline="") as f:
        return [json.loads(line) for line in f if line.strip()]


def _read_local(family: str) -> Callable[[Path, str | None, str], list[dict]]:
    def read(root: Path, sub: str | None, split: str) -> list[dict]:
        records: list[dict] = []
        for rel in _FILES[family](sub, split):
            path = root / rel
            if family == "mmlu":
                subject = path.name[: -len(f"_{split}.csv")]
                with open(path, encoding="utf-8", newline="") as f:
                    for row in csv.DictReader(f):
                        records.append({
                            "question": row["question"], "subject": subject,
                            "choices": [row[f"choice{k}"] for k in range(4)], "answer": int(row["answer"]),
                        })
            elif family == "bbh":
                records.extend(json.loads(path.read_text(encoding="utf-8"))["examples"])
            elif family == "svamp":
                records.extend(json.loads(path.read_text(encoding="utf-8")))
            elif family == "crows_pairs":
                with open(path, encoding="utf-8", newline="") as f:
                    records.extend(csv.DictReader(f))
            elif family == "agieval":
                records.extend({**r, "subset": path.stem} for r in _read_jsonl(path))
            elif family == "logicbench":
                doc = json.loads(path.read_text(encoding="utf-8"))
                fmt = path.relative_to(root / "logicbench" / "eval").parts[0].lower()
                records.extend({**r, "format": fmt, "logic": path.parent.parent.name, "axiom": doc["axiom"]}
                               for r in doc["samples"])
            else:
                records.extend(_read_jsonl(path))
        return records

    return read


_LOCAL = {family: _read_local(family) for family in SPLITS if family not in HUB_ONLY}


# --- Hugging Face ---------------------------------------------------------------------------

def _hf_records(family: str, sub: str | None, split: str) -> list[dict]:
    """Rows of the hub dataset, reshaped to the local record format of ``family``."""
    from kit.models import hub as hub

    path, config = HF_SOURCES[family]
    if family == "mmlu":
        config = sub or "all"
    elif family == "bbh":
        config = sub
    hf_split = _HF_SPLIT.get((family, split), split)
    if family == "mbpp" and split == "full":
        rows = [r for s in ("train", "test", "validation", "prompt") for r in hub.hf_dataset(path, config, s)]
        rows.sort(key=lambda r: int(r["task_id"]))
    else:
        rows = list(hub.hf_dataset(path, config, hf_split))
    rows = [dict(r) for r in rows]
    if family == "arc_challenge":
        # hub: question is the stem, choices is {"text": [...], "label": [...]}
        return [{"id": r["id"], "answerKey": r["answerKey"],
                 "question": {"stem": r["question"],
                              "choices": [{"text": t, "label": lab} for t, lab in
                                          zip(r["choices"]["text"], r["choices"]["label"])]}}
                for r in rows]
    if family == "mmlu":
        return [{"question": r["question"], "subject": r.get("subject") or sub or "",
                 "choices": list(r["choices"]), "answer": int(r["answer"])} for r in rows]
    if family == "mawps":
        # MU-NLPC/Calc-mawps: question + result_float (best effort: field names per its card)
        return [{"input": r.get("input", r.get("question")),
                 "target": r.get("target", r.get("result_float", r.get("result"))),
                 "type": r.get("type", ""), "idx": r.get("idx", r.get("id", i))} for i, r in enumerate(rows)]
    return rows


# --- records -> items -----------------------------------------------------------------------

def format_choices(question: str, choices: Iterable[str]) -> str:
    """``question`` followed by one ``"A. text"`` line per option (no trailing newline)."""
    lines = [question.strip()] + [f"{LETTERS[i]}. {c}" for i, c in enumerate(choices)]
    return "\n".join(lines)


def _number_text(x: Any) -> str:
    """``51.0`` -> ``"51"``, ``1.84`` -> ``"1.84"``, ``"1,234"`` -> ``"1234"``."""
    if isinstance(x, str):
        x = x.replace(",", "").strip()
        try:
            value = float(x)
        except ValueError:
            return x
    else:
        value = float(x)
    if value == int(value):
        return str(int(value))
    return repr(value)


def _gsm8k(records: list[dict], prefix: str) -> list[Item]:
    items = []
    for i, r in enumerate(records):
        solution = r["answer"]
        final = solution.rsplit("####", 1)[-1].strip()
        items.append(Item(id=f"{prefix}/{i}", prompt=r["question"], answer=_number_text(final),
                          metadata={"solution": solution}))
    return items


def _arc(records: list[dict], prefix: str) -> list[Item]:
    items = []
    for r in records:
        q = r["question"]
        labels = [c["label"] for c in q["choices"]]
        texts = tuple(c["text"] for c in q["choices"])
        if r["answerKey"] not in labels:
            raise ValueError(f"ARC item {r['id']}: answerKey {r['answerKey']!r} not among labels {labels}")
        # 22 test questions label options 1-4; we always show letters and keep the originals.
        items.append(Item(id=f"{prefix}/{r['id']}", prompt=format_choices(q["stem"], texts), choices=texts,
                          label=labels.index(r["answerKey"]),
                          metadata={"question": q["stem"], "source_labels": labels,
                                    "numeric_labels": labels[0].isdigit()}))
    return items


def _mmlu(records: list[dict], prefix: str) -> list[Item]:
    items = []
    counters: dict[str, int] = {}
    for r in records:
        subject = r["subject"]
        k = counters[subject] = counters.get(subject, -1) + 1
        pid = prefix if prefix.count("/") == 2 else f"{prefix}/{subject}"
        choices = tuple(r["choices"])
        label = int(r["answer"])
        if not 0 <= label < len(choices):
            raise ValueError(f"MMLU {subject} row {k}: answer index {label} outside 0..{len(choices) - 1}")
        items.append(Item(id=f"{pid}/{k}", prompt=format_choices(r["question"], choices), choices=choices,
                          label=label, metadata={"subject": subject, "question": r["question"]}))
    return items


def _bbh(records: list[dict], prefix: str) -> list[Item]:
    task = prefix.split("/")[1]
    return [Item(id=f"{prefix}/{i}", prompt=r["input"], answer=str(r["target"]).strip(),
                 metadata={"task": task, "multiple_choice": bool(re.fullmatch(r"\([A-R]\)", str(r["target"]).strip()))})
            for i, r in enumerate(records)]


def _humaneval(records: list[dict], prefix: str) -> list[Item]:
    return [Item(id=f"{prefix}/{r['task_id']}", prompt=r["prompt"], answer=r["canonical_solution"],
                 metadata={"task_id": r["task_id"], "entry_point": r["entry_point"], "test": r["test"],
                           "canonical_solution": r["canonical_solution"]})
            for r in records]


def _mbpp(records: list[dict], prefix: str) -> list[Item]:
    items = []
    for r in records:
        tests = list(r["test_list"])
        prompt = f"{r['text']}\nYour code should pass these tests:\n" + "\n".join(tests)
        # The release writes CRLF line ends inside `code`; LF is what a model would produce.
        code = r["code"].replace("\r\n", "\n")
        items.append(Item(id=f"{prefix}/{r['task_id']}", prompt=prompt, answer=code,
                          metadata={"task_id": int(r["task_id"]), "text": r["text"], "code": code,
                                    "test_list": tests, "test_setup_code": r.get("test_setup_code", "") or "",
                                    "challenge_test_list": list(r.get("challenge_test_list") or [])}))
    return items


def _math500(records: list[dict], prefix: str) -> list[Item]:
    return [Item(id=f"{prefix}/{r['unique_id']}", prompt=r["problem"], answer=r["answer"],
                 metadata={"subject": r["subject"], "level": r["level"], "solution": r["solution"],
                           "unique_id": r["unique_id"]})
            for r in records]


def _svamp(records: list[dict], prefix: str) -> list[Item]:
    items = []
    for r in records:
        body = r["Body"].strip()
        # Bodies often lack a final period ("... on each pack"); end the sentence before the
        # question so the two do not run together.
        if not body.endswith((".", "?", "!")):
            body += "."
        items.append(Item(id=f"{prefix}/{r['ID']}", prompt=f"{body} {r['Question'].strip()}",
                          answer=_number_text(r["Answer"]),
                          metadata={"equation": r.get("Equation"), "type": r.get("Type")}))
    return items


def _mawps(records: list[dict], prefix: str) -> list[Item]:
    return [Item(id=f"{prefix}/{r['idx']}", prompt=r["input"].strip(), answer=_number_text(r["target"]),
                 metadata={"type": r.get("type")})
            for r in records]


_ASDIV_UNIT = re.compile(r"^\s*(-?[\d,]*\.?\d+)\s*(?:\((.*)\))?\s*$")


def _asdiv(records: list[dict], prefix: str) -> list[Item]:
    items = []
    for i, r in enumerate(records):
        raw = str(r["answer"])
        m = _ASDIV_UNIT.match(raw)
        # "9 (apples)" -> "9"; answers like "3:4", "Yes", "3:30 p.m." stay text (numeric=False)
        answer = _number_text(m.group(1)) if m else raw.strip()
        items.append(Item(id=f"{prefix}/{r.get('idx', i)}",
                          prompt=f"{r['body'].strip()} {r['question'].strip()}", answer=answer,
                          metadata={"raw_answer": raw, "unit": (m.group(2) if m else None),
                                    "numeric": m is not None, "solution_type": r.get("solution_type"),
                                    "formula": r.get("formula")}))
    return items


def _bbq(records: list[dict], prefix: str) -> list[Item]:
    items = []
    for r in records:
        choices = (r["ans0"], r["ans1"], r["ans2"])
        question = f"{r['context'].strip()}\n{r['question'].strip()}"
        meta = r.get("additional_metadata") or {}
        items.append(Item(id=f"{prefix}/{r['category']}/{r['example_id']}", prompt=format_choices(question, choices),
                          choices=choices, label=int(r["label"]),
                          metadata={"category": r["category"], "question_polarity": r["question_polarity"],
                                    "context_condition": r["context_condition"], "question": question,
                                    "stereotyped_groups": meta.get("stereotyped_groups", [])}))
    return items


def _crows_pairs(records: list[dict], prefix: str) -> list[Item]:
    # CrowS-Pairs is scored by comparing the two sentences' likelihoods (lm-evaluation-harness does so);
    # as one item: the two sentences as options, label 0 = the more stereotyping one (``sent_more``).
    # A model "agrees with the stereotype" on an item when it prefers option 0.
    stem = "Which of these two sentences is more likely?"
    return [Item(id=f"{prefix}/{r.get('') or i}", prompt=format_choices(stem, (r["sent_more"], r["sent_less"])),
                 choices=(r["sent_more"], r["sent_less"]), label=0,
                 metadata={"bias_type": r["bias_type"], "stereo_antistereo": r["stereo_antistereo"], "question": stem})
            for i, r in enumerate(records)]


_AGIEVAL_OPTION = re.compile(r"^\s*\(?([A-J])\)\s*")


def _agieval(records: list[dict], prefix: str) -> list[Item]:
    items, counters = [], {}
    for r in records:
        subset = r["subset"]
        k = counters[subset] = counters.get(subset, -1) + 1
        pid = prefix if prefix.count("/") == 2 else f"{prefix}/{subset}"
        question = "\n".join(x.strip() for x in (r.get("passage") or "", r["question"]) if x and x.strip())
        meta = {"subset": subset, "question": question}
        if r.get("options"):
            choices = tuple(_AGIEVAL_OPTION.sub("", o, count=1).strip() for o in r["options"])
            label = r["label"]
            if isinstance(label, list):  # a few items list several correct letters: keep the first, say so
                meta["all_labels"], label = label, label[0]
            items.append(Item(id=f"{pid}/{k}", prompt=format_choices(question, choices), choices=choices,
                              label=LETTERS.index(str(label).strip()), metadata=meta))
        else:
            items.append(Item(id=f"{pid}/{k}", prompt=question, answer=str(r.get("answer") or r.get("label")), metadata=meta))
    return items


def _logicbench(records: list[dict], prefix: str) -> list[Item]:
    items = []
    for r in records:
        base = f"{prefix}/{r['format']}/{r['logic']}/{r['axiom']}/{r['id']}"
        meta = {"logic": r["logic"], "axiom": r["axiom"], "format": r["format"]}
        if r["format"] == "bqa":
            for j, qa in enumerate(r["qa_pairs"]):
                question = f"{r['context'].strip()}\n{qa['question'].strip()}"
                items.append(Item(id=f"{base}/{j}", prompt=question, answer=qa["answer"].strip().lower(),
                                  metadata={**meta, "question": question}))
        else:
            keys = sorted(r["choices"], key=lambda c: int(c.rsplit("_", 1)[1]))
            choices = tuple(r["choices"][c] for c in keys)
            question = f"{r['context'].strip()}\n{r['question'].strip()}"
            items.append(Item(id=base, prompt=format_choices(question, choices), choices=choices,
                              label=keys.index(r["answer"]), metadata={**meta, "question": question}))
    return items


def _natural_questions(records: list[dict], prefix: str) -> list[Item]:
    return [Item(id=f"{prefix}/{i}", prompt=r["question"].strip().rstrip("?") + "?", answer=str(r["answer"][0]),
                 metadata={"answers": [str(a) for a in r["answer"]]}) for i, r in enumerate(records)]


def _socialiqa(records: list[dict], prefix: str) -> list[Item]:
    items = []
    for i, r in enumerate(records):
        choices = (r["answerA"], r["answerB"], r["answerC"])
        question = f"{r['context'].strip()}\n{r['question'].strip()}"
        items.append(Item(id=f"{prefix}/{i}", prompt=format_choices(question, choices), choices=choices,
                          label=int(r["label"]) - 1, metadata={"question": question}))  # hub labels are "1".."3"
    return items


def _winogrande(records: list[dict], prefix: str) -> list[Item]:
    stem = "Which option fills the blank (_)?"
    return [Item(id=f"{prefix}/{i}", prompt=format_choices(f"{r['sentence'].strip()}\n{stem}", (r["option1"], r["option2"])),
                 choices=(r["option1"], r["option2"]), label=int(r["answer"]) - 1,
                 metadata={"sentence": r["sentence"]}) for i, r in enumerate(records) if str(r.get("answer", "")).strip()]


def _lmsys_arena(records: list[dict], prefix: str) -> list[Item]:
    # Appendix D of the CG paper: the user's turn is the item; scores come from who won (arena_scores).
    # Multi-turn battles are skipped (their later turns depend on each model's own earlier answers).
    items = []
    for r in records:
        conv = r["conversation_a"]
        if r.get("turn", 1) != 1 or not conv or conv[0]["role"] != "user":
            continue
        items.append(Item(id=f"{prefix}/{r['question_id']}", prompt=conv[0]["content"],
                          metadata={"model_a": r["model_a"], "model_b": r["model_b"], "winner": r["winner"],
                                    "response_a": conv[1]["content"] if len(conv) > 1 else "",
                                    "response_b": r["conversation_b"][1]["content"] if len(r["conversation_b"]) > 1 else ""}))
    return items


VECTARA_PROMPT = ("You are a chat bot answering questions using data. You must stick to the answers provided solely by "
                  "the text in the passage provided. You are asked the question 'Provide a concise summary of the "
                  "following passage, covering the core pieces of information described.' {passage}")
"""The prompt of Vectara's hallucination leaderboard (its README, "Prompt Used"); ``{passage}`` is the source document."""


def _vectara_hallucination(records: list[dict], prefix: str) -> list[Item]:
    # vectara/leaderboard_results holds one row per (source document, model summary): columns ``source``,
    # ``summary``, ``model`` (the leaderboard's README; we could not run it offline). One item per distinct
    # document, in first-seen order; the item id is that order.
    seen: dict[str, int] = {}
    for r in records:
        seen.setdefault(str(r["source"]).strip(), len(seen))
    return [Item(id=f"{prefix}/{i}", prompt=VECTARA_PROMPT.format(passage=doc), metadata={"source": doc})
            for doc, i in seen.items() if doc]


def arena_scores(items: list[Item], model: str) -> tuple[list[Item], list[float], list[str]]:
    """The ``lmsys_arena`` battles of ``model`` that it won or lost (ties dropped): (items, m_b(i) =
    1 for a win / 0 for a loss, the model's response), as in the CG paper's Appendix D."""
    kept, scores, responses = [], [], []
    for it in items:
        m = it.metadata
        if model not in (m["model_a"], m["model_b"]) or m["winner"] not in ("model_a", "model_b"):
            continue
        side = "model_a" if m["model_a"] == model else "model_b"
        kept.append(it)
        scores.append(1.0 if m["winner"] == side else 0.0)
        responses.append(m["response_a" if side == "model_a" else "response_b"])
    if not kept:
        raise ValueError(f"model={model!r} won or lost no battle among these {len(items)} items")
    return kept, scores, responses


_CONVERT: dict[str, Callable[[list[dict], str], list[Item]]] = {
    "gsm8k": _gsm8k, "arc_challenge": _arc, "mmlu": _mmlu, "bbh": _bbh, "humaneval": _humaneval,
    "mbpp": _mbpp, "math500": _math500, "svamp": _svamp, "mawps": _mawps, "asdiv": _asdiv,
    "bbq": _bbq, "crows_pairs": _crows_pairs, "agieval": _agieval, "logicbench": _logicbench,
    "natural_questions": _natural_questions, "socialiqa": _socialiqa, "winogrande": _winogrande,
    "lmsys_arena": _lmsys_arena,
    "vectara_hallucination": _vectara_hallucination,
}


def bbh_cot_prompt(task: str) -> str:
    """The 3-shot chain-of-thought prompt of BBH ``task`` (canary line and ``-----`` removed)."""
    if task not in BBH_TASKS:
        raise ValueError(f"task={task!r} is not a BBH task; allowed values: {', '.join(BBH_TASKS)}")
    text = (_data_root() / "bbh" / "cot-prompts" / f"{task}.txt").read_text(encoding="utf-8")
    lines = text.split("\n")
    if len(lines) >= 2 and lines[1].strip() == "-----":
        lines = lines[2:]
    return "\n".join(lines)
