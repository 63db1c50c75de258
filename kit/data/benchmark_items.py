"""Benchmark records (one dict per row, as the local files or the hub give them) -> items.

One converter per benchmark family, ``(records, id prefix) -> list[Item]``, in :data:`CONVERT`:
prompts are the question text; multiple-choice prompts append the options as ``A. text`` lines
(:func:`format_choices`, the layout of the published responses in ``model_responses/``); mbpp
appends its test asserts, as in the MBPP paper. Every converter is prefix-consistent: the items of
the first k records are the first items of all records, so a reader may stop early (``limit``).
:func:`arena_scores` turns ``lmsys_arena`` battles into one model's wins and losses.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterable

from kit.data.items import Item

LETTERS = "ABCDEFGHIJ"


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
        items.append(
            Item(
                id=f"{prefix}/{i}",
                prompt=r["question"],
                answer=_number_text(final),
                metadata={"solution": solution},
            )
        )
    return items


def _arc(records: list[dict], prefix: str) -> list[Item]:
    items = []
    for r in records:
        q = r["question"]
        labels = [c["label"] for c in q["choices"]]
        texts = tuple(c["text"] for c in q["choices"])
        if r["answerKey"] not in labels:
            raise ValueError(
                f"ARC item {r['id']}: answerKey {r['answerKey']!r} not among labels {labels}"
            )
        # 22 test questions label options 1-4; we always show letters and keep the originals.
        items.append(
            Item(
                id=f"{prefix}/{r['id']}",
                prompt=format_choices(q["stem"], texts),
                choices=texts,
                label=labels.index(r["answerKey"]),
                metadata={
                    "question": q["stem"],
                    "source_labels": labels,
                    "numeric_labels": labels[0].isdigit(),
                },
            )
        )
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
            raise ValueError(
                f"MMLU {subject} row {k}: answer index {label} outside 0..{len(choices) - 1}"
            )
        items.append(
            Item(
                id=f"{pid}/{k}",
                prompt=format_choices(r["question"], choices),
                choices=choices,
                label=label,
                metadata={"subject": subject, "question": r["question"]},
            )
        )
    return items


def _bbh(records: list[dict], prefix: str) -> list[Item]:
    task = prefix.split("/")[1]
    return [
        Item(
            id=f"{prefix}/{i}",
            prompt=r["input"],
            answer=str(r["target"]).strip(),
            metadata={
                "task": task,
                "multiple_choice": bool(re.fullmatch(r"\([A-R]\)", str(r["target"]).strip())),
            },
        )
        for i, r in enumerate(records)
    ]


def _humaneval(records: list[dict], prefix: str) -> list[Item]:
    return [
        Item(
            id=f"{prefix}/{r['task_id']}",
            prompt=r["prompt"],
            answer=r["canonical_solution"],
            metadata={
                "task_id": r["task_id"],
                "entry_point": r["entry_point"],
                "test": r["test"],
                "canonical_solution": r["canonical_solution"],
            },
        )
        for r in records
    ]


def _mbpp(records: list[dict], prefix: str) -> list[Item]:
    items = []
    for r in records:
        tests = list(r["test_list"])
        prompt = f"{r['text']}\nYour code should pass these tests:\n" + "\n".join(tests)
        # The release writes CRLF line ends inside `code`; LF is what a model would produce.
        code = r["code"].replace("\r\n", "\n")
        items.append(
            Item(
                id=f"{prefix}/{r['task_id']}",
                prompt=prompt,
                answer=code,
                metadata={
                    "task_id": int(r["task_id"]),
                    "text": r["text"],
                    "code": code,
                    "test_list": tests,
                    "test_setup_code": r.get("test_setup_code", "") or "",
                    "challenge_test_list": list(r.get("challenge_test_list") or []),
                },
            )
        )
    return items


def _math500(records: list[dict], prefix: str) -> list[Item]:
    return [
        Item(
            id=f"{prefix}/{r['unique_id']}",
            prompt=r["problem"],
            answer=r["answer"],
            metadata={
                "subject": r["subject"],
                "level": r["level"],
                "solution": r["solution"],
                "unique_id": r["unique_id"],
            },
        )
        for r in records
    ]


def _svamp(records: list[dict], prefix: str) -> list[Item]:
    items = []
    for r in records:
        body = r["Body"].strip()
        # Bodies often lack a final period ("... on each pack"); end the sentence before the
        # question so the two do not run together.
        if not body.endswith((".", "?", "!")):
            body += "."
        items.append(
            Item(
                id=f"{prefix}/{r['ID']}",
                prompt=f"{body} {r['Question'].strip()}",
                answer=_number_text(r["Answer"]),
                metadata={"equation": r.get("Equation"), "type": r.get("Type")},
            )
        )
    return items


def _mawps(records: list[dict], prefix: str) -> list[Item]:
    return [
        Item(
            id=f"{prefix}/{r['idx']}",
            prompt=r["input"].strip(),
            answer=_number_text(r["target"]),
            metadata={"type": r.get("type")},
        )
        for r in records
    ]


_ASDIV_UNIT = re.compile(r"^\s*(-?[\d,]*\.?\d+)\s*(?:\((.*)\))?\s*$")


def _asdiv(records: list[dict], prefix: str) -> list[Item]:
    items = []
    for i, r in enumerate(records):
        raw = str(r["answer"])
        m = _ASDIV_UNIT.match(raw)
        # "9 (apples)" -> "9"; answers like "3:4", "Yes", "3:30 p.m." stay text (numeric=False)
        answer = _number_text(m.group(1)) if m else raw.strip()
        items.append(
            Item(
                id=f"{prefix}/{r.get('idx', i)}",
                prompt=f"{r['body'].strip()} {r['question'].strip()}",
                answer=answer,
                metadata={
                    "raw_answer": raw,
                    "unit": (m.group(2) if m else None),
                    "numeric": m is not None,
                    "solution_type": r.get("solution_type"),
                    "formula": r.get("formula"),
                },
            )
        )
    return items


def _bbq(records: list[dict], prefix: str) -> list[Item]:
    items = []
    for r in records:
        choices = (r["ans0"], r["ans1"], r["ans2"])
        question = f"{r['context'].strip()}\n{r['question'].strip()}"
        meta = r.get("additional_metadata") or {}
        items.append(
            Item(
                id=f"{prefix}/{r['category']}/{r['example_id']}",
                prompt=format_choices(question, choices),
                choices=choices,
                label=int(r["label"]),
                metadata={
                    "category": r["category"],
                    "question_polarity": r["question_polarity"],
                    "context_condition": r["context_condition"],
                    "question": question,
                    "stereotyped_groups": meta.get("stereotyped_groups", []),
                },
            )
        )
    return items


def _crows_pairs(records: list[dict], prefix: str) -> list[Item]:
    # CrowS-Pairs is scored by comparing the two sentences' likelihoods (lm-evaluation-harness does
    # so); as one item: the two sentences as options, label 0 = the more stereotyping one
    # (``sent_more``). A model "agrees with the stereotype" on an item when it prefers option 0.
    stem = "Which of these two sentences is more likely?"
    return [
        Item(
            id=f"{prefix}/{r.get('') or i}",
            prompt=format_choices(stem, (r["sent_more"], r["sent_less"])),
            choices=(r["sent_more"], r["sent_less"]),
            label=0,
            metadata={
                "bias_type": r["bias_type"],
                "stereo_antistereo": r["stereo_antistereo"],
                "question": stem,
            },
        )
        for i, r in enumerate(records)
    ]


_AGIEVAL_OPTION = re.compile(r"^\s*\(?([A-J])\)\s*")


def _agieval(records: list[dict], prefix: str) -> list[Item]:
    items, counters = [], {}
    for r in records:
        subset = r["subset"]
        k = counters[subset] = counters.get(subset, -1) + 1
        pid = prefix if prefix.count("/") == 2 else f"{prefix}/{subset}"
        question = "\n".join(
            x.strip() for x in (r.get("passage") or "", r["question"]) if x and x.strip()
        )
        meta = {"subset": subset, "question": question}
        if r.get("options"):
            choices = tuple(_AGIEVAL_OPTION.sub("", o, count=1).strip() for o in r["options"])
            label = r["label"]
            # a few items list several correct letters: keep the first, say so
            if isinstance(label, list):
                meta["all_labels"], label = label, label[0]
            items.append(
                Item(
                    id=f"{pid}/{k}",
                    prompt=format_choices(question, choices),
                    choices=choices,
                    label=LETTERS.index(str(label).strip()),
                    metadata=meta,
                )
            )
        else:
            items.append(
                Item(
                    id=f"{pid}/{k}",
                    prompt=question,
                    answer=str(r.get("answer") or r.get("label")),
                    metadata=meta,
                )
            )
    return items


def _logicbench(records: list[dict], prefix: str) -> list[Item]:
    items = []
    for r in records:
        base = f"{prefix}/{r['format']}/{r['logic']}/{r['axiom']}/{r['id']}"
        meta = {"logic": r["logic"], "axiom": r["axiom"], "format": r["format"]}
        if r["format"] == "bqa":
            for j, qa in enumerate(r["qa_pairs"]):
                question = f"{r['context'].strip()}\n{qa['question'].strip()}"
                items.append(
                    Item(
                        id=f"{base}/{j}",
                        prompt=question,
                        answer=qa["answer"].strip().lower(),
                        metadata={**meta, "question": question},
                    )
                )
        else:
            keys = sorted(r["choices"], key=lambda c: int(c.rsplit("_", 1)[1]))
            choices = tuple(r["choices"][c] for c in keys)
            question = f"{r['context'].strip()}\n{r['question'].strip()}"
            items.append(
                Item(
                    id=base,
                    prompt=format_choices(question, choices),
                    choices=choices,
                    label=keys.index(r["answer"]),
                    metadata={**meta, "question": question},
                )
            )
    return items


def _natural_questions(records: list[dict], prefix: str) -> list[Item]:
    return [
        Item(
            id=f"{prefix}/{i}",
            prompt=r["question"].strip().rstrip("?") + "?",
            answer=str(r["answer"][0]),
            metadata={"answers": [str(a) for a in r["answer"]]},
        )
        for i, r in enumerate(records)
    ]


def _socialiqa(records: list[dict], prefix: str) -> list[Item]:
    items = []
    for i, r in enumerate(records):
        choices = (r["answerA"], r["answerB"], r["answerC"])
        question = f"{r['context'].strip()}\n{r['question'].strip()}"
        # hub labels are "1".."3"
        items.append(
            Item(
                id=f"{prefix}/{i}",
                prompt=format_choices(question, choices),
                choices=choices,
                label=int(r["label"]) - 1,
                metadata={"question": question},
            )
        )
    return items


def _winogrande(records: list[dict], prefix: str) -> list[Item]:
    stem = "Which option fills the blank (_)?"
    return [
        Item(
            id=f"{prefix}/{i}",
            prompt=format_choices(f"{r['sentence'].strip()}\n{stem}", (r["option1"], r["option2"])),
            choices=(r["option1"], r["option2"]),
            label=int(r["answer"]) - 1,
            metadata={"sentence": r["sentence"]},
        )
        for i, r in enumerate(records)
        if str(r.get("answer", "")).strip()
    ]


def _lmsys_arena(records: list[dict], prefix: str) -> list[Item]:
    # Appendix D of the CG paper: the user's turn is the item; scores come from who won
    # (arena_scores). Multi-turn battles are skipped (their later turns depend on each model's own
    # earlier answers).
    items = []
    for r in records:
        conv = r["conversation_a"]
        if r.get("turn", 1) != 1 or not conv or conv[0]["role"] != "user":
            continue
        items.append(
            Item(
                id=f"{prefix}/{r['question_id']}",
                prompt=conv[0]["content"],
                metadata={
                    "model_a": r["model_a"],
                    "model_b": r["model_b"],
                    "winner": r["winner"],
                    "response_a": conv[1]["content"] if len(conv) > 1 else "",
                    "response_b": r["conversation_b"][1]["content"]
                    if len(r["conversation_b"]) > 1
                    else "",
                },
            )
        )
    return items


VECTARA_PROMPT = (
    "You are a chat bot answering questions using data. You must stick to the answers provided "
    "solely by the text in the passage provided. You are asked the question 'Provide a concise "
    "summary of the following passage, covering the core pieces of information described.' "
    "{passage}"
)
"""The prompt of Vectara's hallucination leaderboard (its README, "Prompt Used"); ``{passage}`` is
the source document."""


def _vectara_hallucination(records: list[dict], prefix: str) -> list[Item]:
    # vectara/leaderboard_results holds one row per (source document, model summary): columns
    # ``source``, ``summary``, ``model`` (the leaderboard's README; we could not run it offline).
    # One item per distinct document, in first-seen order; the item id is that order.
    seen: dict[str, int] = {}
    for r in records:
        seen.setdefault(str(r["source"]).strip(), len(seen))
    return [
        Item(
            id=f"{prefix}/{i}", prompt=VECTARA_PROMPT.format(passage=doc), metadata={"source": doc}
        )
        for doc, i in seen.items()
        if doc
    ]


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


CONVERT: dict[str, Callable[[list[dict], str], list[Item]]] = {
    "gsm8k": _gsm8k,
    "arc_challenge": _arc,
    "mmlu": _mmlu,
    "bbh": _bbh,
    "humaneval": _humaneval,
    "mbpp": _mbpp,
    "math500": _math500,
    "svamp": _svamp,
    "mawps": _mawps,
    "asdiv": _asdiv,
    "bbq": _bbq,
    "crows_pairs": _crows_pairs,
    "agieval": _agieval,
    "logicbench": _logicbench,
    "natural_questions": _natural_questions,
    "socialiqa": _socialiqa,
    "winogrande": _winogrande,
    "lmsys_arena": _lmsys_arena,
    "vectara_hallucination": _vectara_hallucination,
}
