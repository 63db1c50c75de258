"""Answer extraction and per-benchmark scoring of free-text model responses.

``score(benchmark, item, response) -> bool`` is the one entry point; the extractors are exported
because other notebooks parse published responses with them (``model_responses/`` in the data
directory). Each extractor's docstring states its rule; the rules are deliberately simple and
deterministic, so a reported accuracy can be reproduced by reading them.

Here: the dispatch (:func:`score`, :func:`parse_failed`, :func:`score_all`), multiple-choice letters
(:func:`extract_choice_letter`), BBH and short answers. Math answers (final numbers, MATH-style
LaTeX) are read by :mod:`kit.data.math_answers`; code answers run in a subprocess in
:mod:`kit.data.code_answers`.
"""

from __future__ import annotations

import re
from typing import cast

from kit.data.benchmarks import task_families
from kit.data.code_answers import CODE_BENCHMARKS, code_program, extract_code, run_program
from kit.data.items import Item
from kit.data.math_answers import (
    check_math_answer,
    extract_boxed,
    extract_final_number,
    has_math_verify,
    numbers_equal,
    same_math_answer,
    to_number,
)

__all__ = [
    "score",
    "extract_choice_letter",
    "score_all",
    "extract_bbh_answer",
    "bbh_match",
    "NUMERIC_BENCHMARKS",
    "CHOICE_BENCHMARKS",
    "parse_failed",
]

NUMERIC_BENCHMARKS = ("gsm8k", "svamp", "mawps", "asdiv")
"""Benchmarks scored by :func:`extract_final_number` + :func:`numbers_equal`."""
CHOICE_BENCHMARKS = ("arc_challenge", "mmlu", "bbq", "crows_pairs", "socialiqa", "winogrande")
"""Benchmarks scored by :func:`extract_choice_letter` against ``item.target``."""

LETTERS = "ABCDEFGHIJ"


# --- multiple choice -------------------------------------------------------------------------


def _letter_class(n_choices: int, numeric: bool = False) -> str:
    if not 2 <= n_choices <= 9:
        raise ValueError(f"n_choices={n_choices} is out of range; allowed values: 2..9")
    return f"[1-{n_choices}]" if numeric else f"[A-{LETTERS[n_choices - 1]}]"


# "The answer is:\n\nA food chain..." -- the article "A" (or the pronoun "I") starting a sentence,
# not an option letter: a lowercase word follows that is not a usual continuation of a letter.
_ARTICLE_NEXT = re.compile(
    r"[ \t]+(?!(?:because|since|as|is|was|which|for|and|or|with|in|of)\b)[a-z]"
)


def extract_choice_letter(response: str, n_choices: int = 4, numeric: bool = False) -> str | None:
    """The choice letter (``"A"``...) a multiple-choice response commits to, or None.

    Only capital letters among the first ``n_choices`` count. Rule, first tier that matches wins:

    1. **explicit statements**, the last one in the response: ``\\boxed{B}``, "answer is (B)",
       "answer is: **B**", "Answer: B", "correct option is B", "option B is correct",
       "the answer would be B" (a final answer after reconsidering beats an earlier one);
    2. **a lone letter**: the whole response is one letter, optionally wrapped as ``(B)``,
       ``B.``, ``B)``, ``**B**`` or followed by ``.``/``:`` and the option text on the same line
       (e.g. "B. buildings will be made safer");
    3. **a colon then an option line**, the last one: "... would be:\\n\\nC. Planetary days"
       (how instruction-tuned models state a choice);
    4. **bolded options** (``**B. plant diversity**``, ``**B**``), if all name the same letter;
    5. **option-marker lines** (a line starting ``B.``, ``B)``, ``(B)``, ``- B.``), if all
       name the same letter. A walk through every option commits to none: tiers 4-5 then
       return nothing rather than guess.

    The rule never guesses from a letter merely mentioned in prose ("Option A is wrong").
    ``numeric=True`` is for items whose options were shown labelled ``1``..``n`` (22 ARC test
    questions): the same rule then reads digits, and the digit k is returned as the k-th letter.
    """
    if not response:
        return None
    if numeric:
        got = _extract_choice(response, _letter_class(n_choices, numeric=True))
        return LETTERS[int(got) - 1] if got is not None else None
    return _extract_choice(response, _letter_class(n_choices))


def _extract_choice(response: str, L: str) -> str | None:
    text = response.replace("\\text{", "{").replace("\\textbf{", "{")
    # Tier 1: explicit statements, last occurrence.
    explicit = [
        rf"\\boxed\{{\s*\(?({L})\)?\s*\}}",
        rf"answer\s+(?:is|would\s+be|will\s+be)\s*[:：]?\s*(?:option\s+|choice\s+)?[\*\$\(\[\{{\s]*({L})\b",
        rf"\banswer\s*[:：]\s*(?:option\s+|choice\s+)?[\*\$\(\[\{{\s]*({L})\b",
        rf"(?:option|choice)\s+is\s*[:：]?\s*[\*\(\[\s]*({L})\b",
        rf"(?:option|choice)\s+\(?({L})\)?\s+is\s+(?:the\s+)?(?:correct|right|best)",
        rf"\(?({L})\)?\s+is\s+the\s+(?:correct|right|best)\s+(?:answer|option|choice)",
    ]
    best: tuple[int, str] | None = None
    for pattern in explicit:
        for m in re.finditer(pattern, text, flags=re.IGNORECASE):
            letter = m.group(1)
            if letter.upper() != letter:  # "answer is a ..." -- an article, not option A
                continue
            if letter in "AI" and _ARTICLE_NEXT.match(text, m.end(1)):
                continue
            if best is None or m.start(1) > best[0]:
                best = (m.start(1), letter)
    if best is not None:
        return best[1]
    # Tier 2: the whole response is a letter (maybe with its option text on the same line).
    stripped = text.strip().strip("*").strip()
    m = re.fullmatch(rf"[\(\[]?({L})[\)\]]?(?:\s*[\.:\)]\s*[^\n]*)?", stripped)
    if m and (len(stripped) == 1 or not stripped[1:2].isalpha()):
        return m.group(1)
    # Tier 3: "... would be:" / "... is:" followed by an option line, last occurrence.
    colon = list(
        re.finditer(rf"(?:\bis|\bbe)\s*[:：]\s*\n\s*(?:\*\*)?\(?({L})(?:\)|\.|:|\*\*)", text)
    )
    if colon:
        return colon[-1].group(1)
    # Tiers 4-5: bolded options ("**B. plant diversity**"), then option-marker lines, each only
    # when every such mark names the same letter (a walk through every option commits to none).
    bold = re.compile(rf"\*\*\s*(?:[Oo]ption\s+|[Cc]hoice\s+)?\(?({L})(?:\)|\.|:|\*\*)")
    marker = re.compile(rf"^\s*(?:[-*]\s+)?(?:\*\*)?\(?({L})(?:\)|\.|:)(?:\*\*)?\s", re.MULTILINE)
    for pattern in (bold, marker):
        marked = {m.group(1) for m in pattern.finditer(text + "\n")}
        if len(marked) == 1:
            return marked.pop()
    return None


# --- BBH ------------------------------------------------------------------------------------


def extract_bbh_answer(response: str) -> str:
    """The answer part of a BBH response: the text after the last "answer is" if any
    (the CoT prompts end every exemplar with "So the answer is X."), else the whole response;
    stripped of whitespace, ``**`` and one trailing period."""
    text = response or ""
    m = list(re.finditer(r"answer\s+is\s*[:：]?", text, flags=re.IGNORECASE))
    if m:
        text = text[m[-1].end() :]
        text = text.strip().split("\n")[0]
    text = text.strip().strip("*").strip()
    if text.endswith(".") and not text.endswith(".."):
        text = text[:-1].rstrip()
    return text


def bbh_match(target: str, response: str) -> bool:
    """BBH exact match after stripping; a multiple-choice target ``"(A)"`` also accepts ``"A"``."""
    got = extract_bbh_answer(response)
    target = target.strip()
    if got == target:
        return True
    m = re.fullmatch(r"\(([A-R])\)", target)
    if m:
        return re.fullmatch(rf"\(?{m.group(1)}\)?", got) is not None
    return False


# --- dispatch -------------------------------------------------------------------------------


def normalize_short_answer(text: str | None) -> str:
    """SQuAD/NQ-open normalisation: lower case, no punctuation, no articles (a, an, the), single
    spaces."""
    text = re.sub(r"[^\w\s]", " ", (text or "").lower())
    return " ".join(w for w in text.split() if w not in ("a", "an", "the"))


def score(benchmark: str, item: Item, response: str, timeout: float = 10.0) -> bool:
    """Whether ``response`` answers ``item`` of ``benchmark`` correctly.

    - gsm8k, svamp, mawps, asdiv: :func:`extract_final_number` vs ``item.answer``, numerically
      (a non-numeric ASDiv answer: the text after the last "answer is", or the whole response,
      case-insensitively equal to it);
    - arc_challenge, mmlu, ``mmlu/<subject>``: :func:`extract_choice_letter` vs ``item.target``;
    - ``bbh/<task>``: :func:`bbh_match`;
    - math500: :func:`check_math_answer` (math-verify when installed, else :func:`extract_boxed`, or
      the final number, vs ``item.answer`` through :func:`normalize_math_answer`, or numerically
      equal); :func:`math_checker` names the one in use;
    - humaneval, mbpp: the program of :func:`code_program` run by :func:`run_program`;
    - bbq, crows_pairs, and the multiple-choice items of agieval and logicbench: the choice letter;
      agieval's cloze subset (math) as math500 (without math-verify, the text after "answer is"
      also counts as the answer); logicbench BQA: the first yes/no in the response;
    - socialiqa, winogrande: the choice letter; natural_questions: the final answer line
      (:func:`extract_bbh_answer`) equal to any reference after :func:`normalize_short_answer`;
    - ``lmsys_arena`` has no scorer: a battle is won or lost
      (:func:`kit.data.benchmarks.arena_scores`);
    - ``vectara_hallucination`` has no rule: a summary is judged by a factual-consistency model
      (Vectara's HHEM); the error says so;
    - a generated task (``tiny/<task>``): its family's own rule
      (:attr:`kit.data.benchmarks.TaskFamily.score`; the tiny world's: multiple-choice items by
      letter, others by exact match after stripping).
    """
    base = benchmark.split("/", 1)[0]
    response = response or ""
    if base in NUMERIC_BENCHMARKS:
        if to_number(item.answer or "") is None:
            # ASDiv has ~150 non-numeric answers ("Yes", "3:4", "Bryan"): case-insensitive match
            return extract_bbh_answer(response).lower().rstrip(".") == str(
                item.answer
            ).strip().lower().rstrip(".")
        return numbers_equal(extract_final_number(response), item.answer)
    if base in CHOICE_BENCHMARKS:
        n = len(item.choices) if item.choices else 4
        return extract_choice_letter(response, n_choices=max(n, 2)) == item.target
    if base == "bbh":
        return bbh_match(item.target, response)
    if base == "math500":
        return check_math_answer(response, cast(str, item.answer)).correct  # math items have one
    if base in CODE_BENCHMARKS:
        return run_program(code_program(base, item, response), timeout=timeout)
    if base in ("agieval", "logicbench") and item.choices is not None:
        return extract_choice_letter(response, n_choices=max(len(item.choices), 2)) == item.target
    # the cloze subset (math): MATH-style answers
    if base == "agieval" and has_math_verify():
        return check_math_answer(response, cast(str, item.answer)).correct  # math items have one
    if base == "agieval":
        got = (
            extract_boxed(response)
            or extract_final_number(response)
            or extract_bbh_answer(response)
        )
        return same_math_answer(got, item.answer)
    if base == "logicbench":  # BQA: the first yes/no word of the response
        m = re.search(r"\b(yes|no)\b", response.lower())
        return m is not None and m.group(1) == item.answer
    if base == "natural_questions":  # NQ-open: normalised exact match against any short answer
        got = normalize_short_answer(extract_bbh_answer(response))
        return any(
            got == normalize_short_answer(a) for a in item.metadata.get("answers", [item.answer])
        )
    tasks = task_families().get(base)
    if tasks is not None:
        return tasks.score(item, response)
    if base == "vectara_hallucination":
        raise ValueError(
            "benchmark='vectara_hallucination' has no rule-based scorer: a summary is judged by a "
            "factual-consistency model (Vectara's HHEM, vectara/hallucination_evaluation_model; "
            "consistent = 1 when its score >= 0.5); pass those per-item scores instead"
        )
    allowed = (
        NUMERIC_BENCHMARKS
        + CHOICE_BENCHMARKS
        + ("bbh/<task>", "math500")
        + CODE_BENCHMARKS
        + ("agieval", "logicbench", "natural_questions")
        + tuple(t.form for t in task_families().values())
    )
    raise ValueError(f"benchmark={benchmark!r} has no scorer; allowed values: {', '.join(allowed)}")


def parse_failed(benchmark: str, item: Item, response: str) -> bool:
    """Whether :func:`score`'s rule reads no answer at all from ``response`` (it then scores it
    wrong).

    Per benchmark, the extractor :func:`score` applies finds nothing: no number (gsm8k, svamp,
    mawps, asdiv; a non-numeric ASDiv answer: no text), no choice letter (multiple choice), no
    ``\\boxed{}`` and no number (math500; agieval's cloze items: nor an answer line), no yes/no
    (logicbench BQA), no code (humaneval, mbpp: an empty program), an empty answer line (bbh,
    natural_questions), and for a generated task (``tiny/<task>``) its family's rule
    (:attr:`kit.data.benchmarks.TaskFamily.parse_failed`; the tiny world's: no letter / an empty
    response). A parsed but wrong answer is not a parse failure."""
    base = benchmark.split("/", 1)[0]
    response = response or ""
    if base in NUMERIC_BENCHMARKS:
        if to_number(item.answer or "") is None:
            return not extract_bbh_answer(response)
        return extract_final_number(response) is None
    if base in CHOICE_BENCHMARKS:
        n = len(item.choices) if item.choices else 4
        return extract_choice_letter(response, n_choices=max(n, 2)) is None
    if base in ("agieval", "logicbench") and item.choices is not None:
        return extract_choice_letter(response, n_choices=max(len(item.choices), 2)) is None
    if base in ("bbh", "natural_questions"):
        return not extract_bbh_answer(response)
    if base == "math500":
        return extract_boxed(response) is None and extract_final_number(response) is None
    if base == "agieval":
        return not (
            extract_boxed(response)
            or extract_final_number(response)
            or extract_bbh_answer(response)
        )
    if base == "logicbench":
        return re.search(r"\b(yes|no)\b", response.lower()) is None
    if base in CODE_BENCHMARKS:
        return not extract_code(response).strip()
    tasks = task_families().get(base)
    if tasks is not None:
        return tasks.parse_failed(item, response)
    score(benchmark, item, response)  # raises, naming the benchmarks that have a rule
    raise ValueError(f"benchmark={benchmark!r} has no parse rule")


def score_all(
    benchmark: str, items: list[Item], responses: list[str], timeout: float = 10.0
) -> list[bool]:
    """:func:`score` for each (item, response) pair, in order; lengths must match."""
    if len(items) != len(responses):
        raise ValueError(
            f"responses has {len(responses)} entries but items has {len(items)}; they must pair up"
        )
    return [score(benchmark, it, r, timeout=timeout) for it, r in zip(items, responses)]
