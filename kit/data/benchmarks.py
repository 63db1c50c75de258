"""Real benchmarks as one item schema (:class:`kit.data.items.Item`), read in place or from the hub.

``load_benchmark(name, split="test", source="local", limit=None)`` for

========================  ===============================  =========================================
name                      splits                           target
========================  ===============================  =========================================
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
``asdiv``                 test                             ``answer``: a number (units stripped) or
                                                           text
``bbq``, ``bbq/<cat>``    test                             ``choices`` + ``label`` (3 options; 6 of
                                                           11 categories)
``crows_pairs``           test                             ``choices`` = (stereotyping, less
                                                           stereotyping) sentence, ``label`` 0 = the
                                                           stereotyping one
``agieval``,              test                             ``choices`` + ``label`` (4-5 options);
                                                           the cloze
``agieval/<subset>``                                       subset ``math``: ``answer`` (LaTeX)
``logicbench``,           test                             BQA: ``answer`` yes/no (one item per
                                                           question);
``logicbench/bqa|mcqa``                                    MCQA: ``choices`` + ``label`` (4 options)
``tiny/<task>``           the tiny world's splits          whatever the task's items carry
========================  ===============================  =========================================

Hub only (``source="hf"``, network; the paper's other benchmarks, not in the data directory):

========================  ===============================  =========================================
``natural_questions``     train, validation                ``answer``: the first short answer
                                                           (NQ-open); all of them in
                                                           ``metadata["answers"]``
``socialiqa``             train, validation                ``choices`` + ``label`` (3 options)
``winogrande``            train, validation                ``choices`` + ``label`` (the 2 fillers of
                                                           ``_``)
``lmsys_arena``           train                            one item per single-turn battle of
                                                           ``metadata["model_a"]`` vs ``model_b``;
                                                           no target: :func:`arena_scores` gives a
                                                           model's win (1) / loss (0) per item
``vectara_hallucination`` train                            one item per source document of Vectara's
                                                           hallucination leaderboard (its
                                                           summarisation prompt); no target: judged
                                                           by a factual- consistency model (HHEM),
                                                           not by a rule
========================  ===============================  =========================================

``source="local"`` reads the files in :func:`kit.core.paths.data_dir` (checksum-verified once per
process; never copied). ``source="hf"`` streams the Hugging Face dataset named in :data:`HF_SOURCES`
at the commit pinned in :data:`HF_REVISIONS` (or ``revision=``) and converts its rows to the same
items, reading only until ``limit`` items exist (:mod:`kit.data.hub_benchmarks`). Hub caveats:
``svamp`` (ChilleD/SVAMP) ``test`` is its 300-item split, not the 1,000 local items; ``asdiv`` maps
to EleutherAI/asdiv's only split, ``validation`` (2,305 problems, unfiltered); ``mawps``
(MU-NLPC/Calc-mawps) is a differently prepared MAWPS whose field names (``question``,
``result_float``) we took from its dataset card without running it.

Prompts (:mod:`kit.data.benchmark_items`): the question text; multiple-choice prompts append the
options as ``A. text`` lines (the layout of the published responses in ``model_responses/``); mbpp
appends its test asserts, as in the MBPP paper. Templates (few-shot, "Answer:") are the caller's
business.
"""

from __future__ import annotations

import csv
import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from kit.core import providers
from kit.data.benchmark_items import CONVERT, LETTERS, VECTARA_PROMPT, arena_scores, format_choices
from kit.data.hub_benchmarks import HF_REVISIONS, HF_SOURCES, hub_items, revision_of
from kit.data.items import Item

__all__ = [
    "load_benchmark",
    "BENCHMARKS",
    "SPLITS",
    "BBH_TASKS",
    "MMLU_SUBJECTS",
    "HF_SOURCES",
    "bbh_cot_prompt",
    "benchmark_files",
    "format_choices",
    "HUB_ONLY",
    "arena_scores",
    "HF_REVISIONS",
    "VECTARA_PROMPT",
    "revision_of",
    "LETTERS",
]

BBH_TASKS: tuple[str, ...] = (
    "boolean_expressions",
    "causal_judgement",
    "date_understanding",
    "disambiguation_qa",
    "dyck_languages",
    "formal_fallacies",
    "geometric_shapes",
    "hyperbaton",
    "logical_deduction_five_objects",
    "logical_deduction_seven_objects",
    "logical_deduction_three_objects",
    "movie_recommendation",
    "multistep_arithmetic_two",
    "navigate",
    "object_counting",
    "penguins_in_a_table",
    "reasoning_about_colored_objects",
    "ruin_names",
    "salient_translation_error_detection",
    "snarks",
    "sports_understanding",
    "temporal_sequences",
    "tracking_shuffled_objects_five_objects",
    "tracking_shuffled_objects_seven_objects",
    "tracking_shuffled_objects_three_objects",
    "web_of_lies",
    "word_sorting",
)
"""The 27 BIG-Bench Hard tasks (``bbh/<task>``)."""

MMLU_SUBJECTS: tuple[str, ...] = (
    "abstract_algebra",
    "anatomy",
    "astronomy",
    "business_ethics",
    "clinical_knowledge",
    "college_biology",
    "college_chemistry",
    "college_computer_science",
    "college_mathematics",
    "college_medicine",
    "college_physics",
    "computer_security",
    "conceptual_physics",
    "econometrics",
    "electrical_engineering",
    "elementary_mathematics",
    "formal_logic",
    "global_facts",
    "high_school_biology",
    "high_school_chemistry",
    "high_school_computer_science",
    "high_school_european_history",
    "high_school_geography",
    "high_school_government_and_politics",
    "high_school_macroeconomics",
    "high_school_mathematics",
    "high_school_microeconomics",
    "high_school_physics",
    "high_school_psychology",
    "high_school_statistics",
    "high_school_us_history",
    "high_school_world_history",
    "human_aging",
    "human_sexuality",
    "international_law",
    "jurisprudence",
    "logical_fallacies",
    "machine_learning",
    "management",
    "marketing",
    "medical_genetics",
    "miscellaneous",
    "moral_disputes",
    "moral_scenarios",
    "nutrition",
    "philosophy",
    "prehistory",
    "professional_accounting",
    "professional_law",
    "professional_medicine",
    "professional_psychology",
    "public_relations",
    "security_studies",
    "sociology",
    "us_foreign_policy",
    "virology",
    "world_religions",
)
"""The 57 MMLU subjects (``mmlu/<subject>``)."""

BBQ_CATEGORIES: tuple[str, ...] = (
    "Age",
    "Disability_status",
    "Nationality",
    "Physical_appearance",
    "Religion",
    "Sexual_orientation",
)
"""BBQ categories in the data directory (Gender_identity, Race_ethnicity, Race_x_SES, Race_x_gender
and SES are absent from the snapshot: use ``source="hf"`` for them)."""

AGIEVAL_SUBSETS: tuple[str, ...] = (
    "aqua-rat",
    "logiqa-en",
    "lsat-ar",
    "lsat-lr",
    "lsat-rc",
    "math",
    "sat-en",
    "sat-en-without-passage",
    "sat-math",
)
"""AGIEval's English subsets (v1); ``math`` is cloze (free-form answers), the rest multiple
choice."""

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
    "prompt": (1, 10),
    "test": (11, 510),
    "validation": (511, 600),
    "train": (601, 974),
    "full": (1, 974),
}
"""The standard MBPP task-id ranges (inclusive), as in the google-research release."""

HUB_ONLY: tuple[str, ...] = (
    "natural_questions",
    "socialiqa",
    "winogrande",
    "lmsys_arena",
    "vectara_hallucination",
)
"""Families with no local copy (the data directory's MANIFEST lists them as not available
offline)."""

# Families read from local files whose sub-benchmark is optional (``bbq`` = all categories...).
_SUBSETS: dict[str, tuple[str, ...]] = {
    "bbq": BBQ_CATEGORIES,
    "agieval": AGIEVAL_SUBSETS,
    "logicbench": LOGICBENCH_FORMATS,
}


# --- names ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskFamily:
    """A family of generated tasks, registered by what generates them (the tiny world registers
    ``tiny``): this module, the scorers and the subjects never import it. Its tasks are benchmarks
    named ``<family>/<task>`` (``tiny/add``, :func:`load_benchmark`), and a subject asks for them by
    their bare name (``add``: :func:`kit.subjects.items.task_items`)."""

    family: str
    """The name's first part (``tiny``)."""
    form: str
    """The name as a reader writes it (``tiny/<task>``)."""
    load: Callable[[str, str, int | None, int], list[Item]]
    """``load(task, split, n, seed)``: the task's items (its splits are its own; ``seed`` draws
    the items of a sampled split)."""
    tasks: Callable[[], Sequence[str]]
    """The task names (``add``, ``facts-mc``...); no benchmark family is named like one."""
    group: Callable[[str], str]
    """A task's capability group (``math``, ``code``, ``reasoning``, ``general``)."""
    chance: Callable[[str], float]
    """A task's accuracy of a random guess."""
    score: Callable[[Item, str], bool]
    """Whether a free-text response answers an item (:func:`kit.data.scorers.score`)."""
    parse_failed: Callable[[Item, str], bool]
    """Whether :attr:`score`'s rule reads no answer from a response
    (:func:`kit.data.scorers.parse_failed`)."""
    hint: str
    """Where the tasks are listed, for an error message (``see kit.world.TASKS``)."""
    maker: str
    """What generates them, for an error message (``the world``)."""
    owner: str = ""


_TASK_FAMILIES: dict[str, TaskFamily] = {}


def register_tasks(family: TaskFamily) -> TaskFamily:
    """Add a family of generated tasks (a module re-imported registers it again)."""
    if family.family in SPLITS:
        raise ValueError(f"task family {family.family!r} is a benchmark family already")
    _TASK_FAMILIES[family.family] = family
    return family


def task_families() -> dict[str, TaskFamily]:
    """The registered families of generated tasks, by family name."""
    providers.ensure()
    return dict(_TASK_FAMILIES)


def _parse_name(name: str) -> tuple[str, str | None]:
    """``"mmlu/anatomy"`` -> ``("mmlu", "anatomy")``; unknown names raise ValueError."""
    if not isinstance(name, str) or not name:
        raise ValueError(
            f"name={name!r} must be a benchmark name; allowed values: {_allowed_names()}"
        )
    family, _, sub = name.partition("/")
    tasks = task_families().get(family) if family not in SPLITS else None
    if tasks is not None:
        if not sub:
            raise ValueError(f"name={family!r} needs a task: {tasks.form!r} ({tasks.hint})")
        return family, sub
    if family not in SPLITS:
        raise ValueError(f"name={name!r} is not a benchmark; allowed values: {_allowed_names()}")
    if family == "bbh":
        if sub not in BBH_TASKS:
            what = "needs a task" if not sub else f"has no task {sub!r}"
            raise ValueError(
                f"name={name!r}: bbh {what}; allowed values: "
                + ", ".join(f"bbh/{t}" for t in BBH_TASKS)
            )
        return family, sub
    if family in _SUBSETS:
        if sub and sub not in _SUBSETS[family]:
            raise ValueError(
                f"name={name!r}: {family} has no subset {sub!r}; allowed values: "
                + ", ".join([family] + [f"{family}/{x}" for x in _SUBSETS[family]])
            )
        return family, sub or None
    if family == "mmlu":
        if sub and sub not in MMLU_SUBJECTS:
            raise ValueError(
                f"name={name!r}: mmlu has no subject {sub!r}; allowed subjects: "
                + ", ".join(MMLU_SUBJECTS)
            )
        return family, sub or None
    if sub:
        raise ValueError(f"name={name!r}: {family} has no sub-benchmarks; use name={family!r}")
    return family, None


def _allowed_names() -> str:
    return ", ".join(
        [
            "gsm8k",
            "arc_challenge",
            "mmlu",
            "mmlu/<subject>",
            "bbh/<task>",
            "humaneval",
            "mbpp",
            "math500",
            "svamp",
            "mawps",
            "asdiv",
            "bbq",
            "bbq/<category>",
            "crows_pairs",
            "agieval",
            "agieval/<subset>",
            "logicbench",
            "logicbench/bqa",
            "logicbench/mcqa",
            *HUB_ONLY,
            *_task_forms(),
        ]
    )


def _task_forms() -> list[str]:
    try:
        return [t.form for t in task_families().values()]
    except ImportError:  # an error message lists what it can
        return [t.form for t in _TASK_FAMILIES.values()]


def _check_split(family: str, split: str) -> None:
    if split not in SPLITS[family]:
        raise ValueError(
            f"split={split!r} is not a split of {family}; allowed values: "
            + ", ".join(SPLITS[family])
        )


# --- public entry point ---------------------------------------------------------------------


def load_benchmark(
    name: str,
    split: str = "test",
    source: str = "local",
    limit: int | None = None,
    revision: str | None = None,
) -> list[Item]:
    """Items of benchmark ``name`` (see the module table), in the source's order.

    Args:
        name: ``gsm8k``, ``arc_challenge``, ``mmlu`` (all 57 subjects, alphabetical) or
            ``mmlu/<subject>``, ``bbh/<task>``, ``humaneval``, ``mbpp``, ``math500``, ``svamp``,
            ``mawps``, ``asdiv``, or ``tiny/<task>`` (the tiny world's synthetic tasks).
        split: one of :data:`SPLITS` for the family (tiny tasks: the world's splits).
        source: ``"local"`` (the verified data directory) or ``"hf"`` (Hugging Face, needs network).
        limit: keep the first ``limit`` items (None: all); from the hub, rows are read only until
            ``limit`` items exist (streaming), never the whole split.
        revision: ``source="hf"`` only: the hub commit, branch or tag (None: the family's pin in
            :data:`HF_REVISIONS`, else ``main`` resolved to a commit); recorded in each item's
            ``metadata["hf_revision"]``.

    Returns: list of :class:`Item` with ``id`` ``"<name>/<split>/<source id>"``.

    Raises:
        ValueError: unknown name, split, subject/task or source (the message lists allowed values).
        kit.core.paths.DataError: the data directory is missing or fails its checksums.
    """
    if source not in ("local", "hf"):
        raise ValueError(f"source={source!r} is not a source; allowed values: local, hf")
    if limit is not None and (not isinstance(limit, int) or limit < 0):
        raise ValueError(f"limit={limit!r} must be None or an integer >= 0")
    if revision is not None and (
        source != "hf" or not isinstance(revision, str) or not revision.strip()
    ):
        raise ValueError(
            f"revision={revision!r}: a hub commit, branch or tag, with source='hf' only "
            f"(source={source!r})"
        )
    family, sub = _parse_name(name)
    if family in _TASK_FAMILIES:
        assert sub is not None  # _parse_name requires "<family>/<task>"
        return _TASK_FAMILIES[family].load(sub, split, limit, 0)
    _check_split(family, split)
    if source == "hf" and family not in HF_SOURCES:
        raise ValueError(
            f"source='hf': {family} has no hub mapping here (it is read from the data directory); "
            f"families with one: {', '.join(HF_SOURCES)}"
        )
    if source == "local" and family in HUB_ONLY:
        raise ValueError(
            f"{family} is not in the data directory (no offline copy); use source='hf' (network)"
        )
    if source == "hf":
        return hub_items(
            family, sub, split, _prefix(family, sub, split), limit, revision, CONVERT[family]
        )
    items = CONVERT[family](_LOCAL[family](_data_root(), sub, split), _prefix(family, sub, split))
    if family == "mbpp":
        lo, hi = MBPP_RANGES[split]
        items = [it for it in items if lo <= it.metadata["task_id"] <= hi]
    return items[:limit] if limit is not None else items


def _prefix(family: str, sub: str | None, split: str) -> str:
    return f"{family}/{sub}/{split}" if sub else f"{family}/{split}"


def _data_root() -> Path:
    from kit.core.paths import data_dir

    return data_dir()


# --- local files ----------------------------------------------------------------------------


def benchmark_files(name: str, split: str = "test") -> list[Path]:
    """The data files (relative to the data directory) a local load of ``name``/``split`` reads."""
    family, sub = _parse_name(name)
    if family in _TASK_FAMILIES:
        tasks = _TASK_FAMILIES[family]
        raise ValueError(
            f"{tasks.form} benchmarks are generated by {tasks.maker} and have no data files"
        )
    _check_split(family, split)
    return [Path(p) for p in _FILES[family](sub, split)]


_FILES: dict[str, Callable[[str | None, str], list[str]]] = {
    "gsm8k": lambda sub, split: [f"gsm8k/{split}.jsonl"],
    "arc_challenge": lambda sub, split: [f"arc_challenge/{split}.jsonl"],
    "mmlu": lambda sub, split: [
        f"mmlu/{split}/{s}_{split}.csv" for s in ([sub] if sub else MMLU_SUBJECTS)
    ],
    "bbh": lambda sub, split: [f"bbh/{sub}.json"],
    "humaneval": lambda sub, split: ["humaneval/HumanEval.jsonl.gz"],
    "mbpp": lambda sub, split: ["mbpp/mbpp.jsonl"],
    "math500": lambda sub, split: ["math500/test.jsonl"],
    "svamp": lambda sub, split: ["svamp/SVAMP.json"],
    "mawps": lambda sub, split: ["mawps/test.jsonl"],
    "asdiv": lambda sub, split: ["asdiv/test.jsonl"],
    "bbq": lambda sub, split: [f"bbq/{c}.jsonl" for c in ([sub] if sub else BBQ_CATEGORIES)],
    "crows_pairs": lambda sub, split: ["crows_pairs/crows_pairs_anonymized.csv"],
    "agieval": lambda sub, split: [
        f"agieval/{a}.jsonl" for a in ([sub] if sub else AGIEVAL_SUBSETS)
    ],
    "logicbench": lambda sub, split: _logicbench_files(sub),
}


def _logicbench_files(sub: str | None) -> list[str]:
    from kit.core.paths import data_dir

    root = data_dir()
    out = []
    for fmt in [sub] if sub else LOGICBENCH_FORMATS:
        out += sorted(
            str(p.relative_to(root))
            for p in (root / "logicbench" / "eval" / fmt.upper()).rglob("*.json")
        )
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
                        records.append(
                            {
                                "question": row["question"],
                                "subject": subject,
                                "choices": [row[f"choice{k}"] for k in range(4)],
                                "answer": int(row["answer"]),
                            }
                        )
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
                records.extend(
                    {**r, "format": fmt, "logic": path.parent.parent.name, "axiom": doc["axiom"]}
                    for r in doc["samples"]
                )
            else:
                records.extend(_read_jsonl(path))
        return records

    return read


_LOCAL = {family: _read_local(family) for family in SPLITS if family not in HUB_ONLY}


def bbh_cot_prompt(task: str) -> str:
    """The 3-shot chain-of-thought prompt of BBH ``task`` (canary line and ``-----`` removed)."""
    if task not in BBH_TASKS:
        raise ValueError(f"task={task!r} is not a BBH task; allowed values: {', '.join(BBH_TASKS)}")
    text = (_data_root() / "bbh" / "cot-prompts" / f"{task}.txt").read_text(encoding="utf-8")
    lines = text.split("\n")
    if len(lines) >= 2 and lines[1].strip() == "-----":
        lines = lines[2:]
    return "\n".join(lines)
