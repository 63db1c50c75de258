"""The paper's LLM analysis of CG results (App. E), with the LLM as a plug-in.

The paper sifts concept lists with an LLM (Gemini 2.5 Pro / Flash): which missing concepts are
*relevant* (E.1 across the suite, E.2 for one benchmark), and which concepts match another
framework's categories (E.3, the clustering of App. A). Here the LLM is any callable
``llm(prompt: str) -> str`` (an API client, a local model's ``generate``, a person at a prompt):
kit builds the paper's prompts, appends the JSON answer format the paper says it used ("we usually
appended an instruction for the model to return its responses in a JSON or list format"), and
parses the answer, keeping only concept ids that were offered (ids the LLM made up are dropped and
counted). Nothing here calls a network; no LLM ships with kit.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence, cast

LLM = Callable[[str], str]

E1 = (
    "Below is a list of concepts in a large language model. Each concept has an ID and a "
    "description. Are any of these concepts *critical* to the evaluation of large language models? "
    "Such concepts generally span topics of safety (toxic language, harm, bias, etc.), performance "
    "(reasoning ability, math, coding, etc.), and metacognition (ability to reject responses, "
    "reasoning about instructions, etc.). Choose from the list of concepts below. List all such "
    "relevant concepts. Do not summarize or group; list all concepts verbatim as they appear below "
    "if they are relevant. LLM CONCEPTS: {concepts}"
)
"""App. E.1, missing concepts across the suite (``{concepts}``: one ``(id) description`` per
line)."""

E2 = (
    "Below is a list of concepts in a large language model. Each concept has an ID and a "
    "description. Are any of these concepts *absolutely critical* for the evaluation of the "
    "{benchmark} benchmark, as defined below? Choose from the list of concepts below. List all "
    "such relevant concepts. Do not summarize or group; list all concepts verbatim as they appear "
    "below if they are relevant. BENCHMARK DEFINITION: {definition} LLM CONCEPTS: {concepts}"
)
"""App. E.2, missing concepts of one benchmark."""

E3 = (
    "Below, there is (1) a list of Competency Gaps concepts and (2) a list of {framework} "
    "categories. For each category from {framework}, determine whether there are any corresponding "
    "Competency Gaps concepts. If no relevant concepts exist, leave this blank. If there are "
    "multiple such concepts, include only the top {limit} most representative ones. Do not include "
    "more than {limit} concepts per category. (1) COMPETENCY GAPS CONCEPTS: {concepts} (2) "
    "{framework} CONCEPTS: {categories}"
)
"""App. E.3, matching concepts to another framework's categories."""

LIST_FORMAT = (
    '\n\nAnswer with JSON only: a list of the relevant concepts as objects {"id": <ID>, '
    '"description": "<description>"}, repeating each ID and description verbatim; [] if none is '
    "relevant."
)
MATCH_FORMAT = (
    "\n\nAnswer with JSON only: an object mapping each category, verbatim, to a list of concept "
    "IDs (at most {limit}; [] if none)."
)


def concept_lines(concepts: Mapping[int, str]) -> str:
    """``(id) description`` lines, the layout the paper's prompts list concepts in."""
    if not concepts:
        raise ValueError("concepts is empty: nothing to ask the LLM about")
    return "\n" + "\n".join(f"({int(i)}) {str(d).strip()}" for i, d in concepts.items())


def _json_part(answer: str):
    """The first JSON value in ``answer`` (code fences and surrounding prose allowed), else None."""
    text = re.sub(r"```(?:json)?", "", answer)
    for start, ch in enumerate(text):
        if ch in "[{":
            try:
                return json.JSONDecoder().raw_decode(text[start:])[0]
            except json.JSONDecodeError:
                continue
    return None


def parse_ids(answer: str) -> list[int]:
    """Concept ids in an LLM answer: a JSON list of ``{"id": ...}`` objects or of numbers, else
    every ``(123)`` / ``123:`` / ``- 123`` at the start of a line. Order kept, duplicates
    dropped."""
    found: list[int] = []
    value = _json_part(answer)
    if isinstance(value, dict):
        value = value.get("concepts", value.get("ids"))
    if isinstance(value, list):
        for v in value:
            x = v.get("id") if isinstance(v, dict) else v
            try:
                found.append(int(cast(Any, x)))  # None raises TypeError, caught below
            except (TypeError, ValueError):
                continue
    else:
        found = [
            int(m)
            for m in re.findall(r"^\s*(?:[-*]\s*)?\(?(\d+)\)?[:.)\s]", answer, flags=re.MULTILINE)
        ]
    return list(dict.fromkeys(found))


@dataclass
class Selection:
    """What an LLM picked: ``ids`` (offered ones, in its order), ``unknown`` (ids it made up), the
    prompt and answer."""

    ids: list[int]
    unknown: list[int] = field(default_factory=list)
    prompt: str = ""
    answer: str = ""


def relevant_concepts(
    concepts: Mapping[int, str],
    llm: LLM,
    benchmark: str | None = None,
    definition: str | None = None,
) -> Selection:
    """The concepts ``llm`` deems relevant: App. E.1 (no ``benchmark``) or E.2 (``benchmark`` and
    its ``definition``), typically over the missing or under-represented concepts of a CG run."""
    if (benchmark is None) != (definition is None):
        raise ValueError(
            "benchmark and definition go together: both (App. E.2) or neither (App. E.1)"
        )
    lines = concept_lines(concepts)
    prompt = (
        E1.format(concepts=lines)
        if benchmark is None
        else E2.format(benchmark=benchmark, definition=definition, concepts=lines)
    ) + LIST_FORMAT
    answer = llm(prompt)
    ids = parse_ids(answer)
    offered = {int(i) for i in concepts}
    return Selection(
        [i for i in ids if i in offered], [i for i in ids if i not in offered], prompt, answer
    )


def match_categories(
    concepts: Mapping[int, str], categories: Sequence[str], llm: LLM, framework: str, limit: int = 5
) -> tuple[dict[str, list[int]], Selection]:
    """App. E.3: per category of ``framework``, at most ``limit`` concept ids (offered ones only;
    a category the LLM left out maps to ``[]``)."""
    if limit < 1:
        raise ValueError(f"limit={limit}: must be >= 1")
    if not categories:
        raise ValueError("categories is empty")
    prompt = E3.format(
        framework=framework,
        limit=limit,
        concepts=concept_lines(concepts),
        categories="\n" + "\n".join(f"- {c}" for c in categories),
    ) + MATCH_FORMAT.format(limit=limit)
    answer = llm(prompt)
    value = _json_part(answer)
    if not isinstance(value, dict):
        raise ValueError(
            f"the LLM's answer is not a JSON object of category -> ids: {answer[:200]!r}"
        )
    offered = {int(i) for i in concepts}
    out: dict[str, list[int]] = {}
    unknown: list[int] = []
    for c in categories:
        ids = parse_ids(json.dumps(value.get(c, [])))
        out[c] = [i for i in ids if i in offered][:limit]
        unknown += [i for i in ids if i not in offered]
    return out, Selection(sorted({i for v in out.values() for i in v}), unknown, prompt, answer)
