"""Per-item correctness of real models, parsed from the published greedy responses.

The data directory's ``model_responses/`` holds responses published with the MUI paper's code:

=============================  ======================  =============================================
set name                       file                    benchmark, prompt
=============================  ======================  =============================================
``arc/llama3.1-8b-instruct``   arc_llama3.1-8b-...     ARC-Challenge test, zero-shot, options A-D
``arc/qwen2.5-7b-instruct``    arc_qwen2.5-7b-...      ARC-Challenge test, zero-shot, options A-D
``gsm8k/gemma2-9b-base``       gsm8k_gemma2-9b-base    GSM8K test, one-shot ("Question: ...
                                                       Answer:")
=============================  ======================  =============================================

Parse rule (the score m_b(i) of Competency Gaps eq. 4 is 1 if correct, else 0):

- **ARC** (multiple choice): the committed letter is :func:`kit.data.scorers.extract_choice_letter`
  with ``n_choices`` = the item's number of options and ``numeric=True`` for the 22 items whose
  options are labelled ``1``..``n`` (the reference label is mapped to its letter the same way).
  If that finds no letter, a fallback for responses that box the option *text* instead of its
  letter ("The final answer is: $\\boxed{78}$"): the content of the last ``\\boxed{}``
  (:func:`kit.data.math_answers.extract_boxed`), lower-cased and stripped, selects the option whose
  text equals it or starts with it followed by a non-alphanumeric character, if exactly one does.
  Correct iff the letter equals the reference; a response committing to no letter counts as
  incorrect.
- **GSM8K** (base model, one-shot): a base model may run on into a new few-shot turn, so the
  response is first cut at the first line starting with ``Question:``; the prediction is
  :func:`kit.data.math_answers.extract_final_number` of what remains (``####``, then "answer is",
  then the last number), compared with :func:`kit.data.math_answers.numbers_equal` to the number
  after ``####`` in the reference solution. No number counts as incorrect.

Texts for concept activations are the prompt the model saw (without the one-shot example) and
its response.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kit.core.paths import data_dir
from kit.data.math_answers import extract_boxed, extract_final_number, numbers_equal
from kit.data.scorers import extract_choice_letter

RESPONSE_SETS: dict[str, tuple[str, str]] = {
    "arc/llama3.1-8b-instruct": ("arc_llama3.1-8b-instruct.jsonl", "arc_challenge"),
    "arc/qwen2.5-7b-instruct": ("arc_qwen2.5-7b-instruct.jsonl", "arc_challenge"),
    "gsm8k/gemma2-9b-base": ("gsm8k_gemma2-9b-base.jsonl", "gsm8k"),
}
"""Response-set name -> (file in ``model_responses/``, benchmark)."""

LETTERS = "ABCDEFGHIJ"
_NEXT_TURN = re.compile(r"^\s*Question\s*:", re.MULTILINE)
_HASH_ANSWER = re.compile(r"####\s*(.+?)\s*$", re.DOTALL)


@dataclass
class ResponseSet:
    """One model's published responses to one benchmark, with the parsed correctness."""

    name: str
    benchmark: str
    ids: list[str]
    prompts: list[str]
    """What the model was asked (for GSM8K the question only, not the one-shot example)."""
    responses: list[str]
    references: list[str]
    """The reference answer: a letter for ARC, the number after ``####`` for GSM8K."""
    predictions: list[str | None]
    """The parsed answer (None where the response commits to none)."""
    correct: np.ndarray
    """bool per item."""

    @property
    def accuracy(self) -> float:
        return float(self.correct.mean())

    @property
    def parse_rate(self) -> float:
        """Fraction of responses from which an answer could be extracted."""
        return float(np.mean([p is not None for p in self.predictions]))

    @property
    def scores(self) -> np.ndarray:
        """m_b(i) in {0, 1} as floats (CG eq. 4)."""
        return self.correct.astype(float)

    def texts(self, include_response: bool = True) -> list[str]:
        """Per item, the prompt (and, by default, the response after a blank line)."""
        if not include_response:
            return list(self.prompts)
        return [f"{p.rstrip()}\n\n{r.strip()}" for p, r in zip(self.prompts, self.responses)]


def arc_prediction(
    response: str, labels: list[str], options: list[str] | None = None
) -> str | None:
    """The letter an ARC response commits to (see the module docstring), or None.

    ``labels``: the option labels as shown (``A..D`` or ``1..4``); ``options``: their texts, for
    the boxed-option-text fallback (skipped when None).
    """
    numeric = all(lab.isdigit() for lab in labels)
    letter = extract_choice_letter(response, n_choices=len(labels), numeric=numeric)
    if letter is not None or not options:
        return letter
    return boxed_option(response, options)


def boxed_option(response: str, options: list[str]) -> str | None:
    """The letter of the one option whose text the last ``\\boxed{}`` names, else None."""
    boxed = extract_boxed(response)
    if boxed is None:
        return None
    b = boxed.strip().strip("$").strip().lower()
    if not b:
        return None
    hits = [
        k
        for k, opt in enumerate(options)
        if (o := opt.strip().lower()) == b or (o.startswith(b) and not o[len(b)].isalnum())
    ]
    return LETTERS[hits[0]] if len(hits) == 1 else None


def arc_reference(answer: str, labels: list[str]) -> str:
    """The reference as a letter: ``"3"`` among labels ``1..4`` is ``"C"``."""
    if answer not in labels:
        raise ValueError(f"reference {answer!r} is not among the option labels {labels}")
    return LETTERS[labels.index(answer)]


def cut_next_turn(response: str) -> str:
    """The response up to the first line starting ``Question:`` (a base model's next few-shot
    turn)."""
    m = _NEXT_TURN.search(response)
    return response[: m.start()] if m else response


def gsm8k_reference(solution: str) -> str:
    """The number after ``####`` in a GSM8K solution (thousands commas removed)."""
    m = _HASH_ANSWER.search(solution)
    if not m:
        raise ValueError(f"GSM8K reference has no '#### <number>' line: {solution[-80:]!r}")
    return m.group(1).replace(",", "").strip()


def gsm8k_prediction(response: str) -> str | None:
    """The final number of a GSM8K response after cutting any run-on next turn, or None."""
    return extract_final_number(cut_next_turn(response))


def response_file(name: str) -> Path:
    if name not in RESPONSE_SETS:
        raise ValueError(
            f"unknown response set {name!r}; allowed values: {', '.join(RESPONSE_SETS)}"
        )
    return data_dir() / "model_responses" / RESPONSE_SETS[name][0]


def load_responses(name: str, limit: int | None = None) -> ResponseSet:
    """Read a published response set and parse per-item correctness (rule: module docstring).

    ``limit`` keeps the first ``limit`` items (file order), for quick runs.
    """
    path = response_file(name)
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if limit is not None:
        if limit < 1:
            raise ValueError(f"limit={limit}: must be >= 1 or None")
        records = records[:limit]
    benchmark = RESPONSE_SETS[name][1]
    ids, prompts, responses, refs, preds = [], [], [], [], []
    for k, r in enumerate(records):
        response = r.get("response") or ""
        if benchmark == "arc_challenge":
            labels = list(r["label"])
            ids.append(str(r["id"]))
            prompts.append(r["question_input"].rstrip())
            refs.append(arc_reference(str(r["answer"]), labels))
            preds.append(arc_prediction(response, labels, [str(r.get(lab, "")) for lab in labels]))
        else:
            ids.append(f"gsm8k/test/{k}")
            prompts.append(r["question"])
            refs.append(gsm8k_reference(r["answer"]))
            preds.append(gsm8k_prediction(response))
        responses.append(response)
    if benchmark == "arc_challenge":
        correct = np.array([p is not None and p == ref for p, ref in zip(preds, refs)], dtype=bool)
    else:
        correct = np.array([numbers_equal(p, ref) for p, ref in zip(preds, refs)], dtype=bool)
    return ResponseSet(name, benchmark, ids, prompts, responses, refs, preds, correct)
