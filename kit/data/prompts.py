"""Answer-format instructions for real benchmarks: what an instruct model is told about the form of
its answer, and where each instruction comes from.

``kit.load_benchmark`` gives the bare question (multiple choice: the question and ``A. text`` option
lines), as the MUI paper's code shows it to instruction-tuned models (MUI-Eval's
``get_performance_arc.py``: zero-shot, no answer format). Small instruct models then answer in prose
or repeat the options, and a rule-based scorer reads no answer from such a response (a parse
failure, counted as wrong). :func:`instructed` wraps an item's prompt in its benchmark's
answer-format instruction, so that the response ends with a statement the scorer reads
(:mod:`kit.data.scorers`: "The best answer is B" and "The final answer is 18" both match its
"answer is" rules).

Sources (:data:`INSTRUCTIONS`, field ``source``):

- ``lm-eval llama3``: lm-evaluation-harness's ``lm_eval/tasks/llama3/instruct`` task templates
  (Meta's Llama-3 evaluation prompts): ``arc_challenge_llama.yaml``,
  ``mmlu/_continuation_template_yaml``, ``gsm8k/gsm8k.yaml`` and ``math/_math_llama_template_yaml``,
  word for word, except that the option count and letters follow the item (ARC has 3-5 options; the
  template says "four ... A, B, C and D");
- ``lm-eval``: other lm-evaluation-harness templates (``humaneval_instruct.yaml``,
  ``mbpp_instruct.yaml``), their ``doc_to_text``; we add one closing sentence (we do not prefill
  their ``gen_prefix``);
- ``ours``: benchmarks neither covers, written in the same form and named as ours.

Prompt styles (:data:`PROMPT_STYLES`): ``instructed`` (the default of the notebooks' real-model
paths) and ``plain`` (the bare question, as the papers' code). Tiny-world items (``tiny/<task>`` and
the world's own tasks) have a fixed format the world's models were trained on: never instructed.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import Any, Sequence

from kit.data.items import Item

__all__ = [
    "Instruction",
    "INSTRUCTIONS",
    "PROMPT_STYLES",
    "instruction_for",
    "instructed",
    "instructed_items",
    "prompt_key",
    "choice_words",
]

PROMPT_STYLES = ("instructed", "plain")
"""``instructed``: the benchmark's answer-format instruction around the question; ``plain``: the
bare question."""

LETTERS = "ABCDEFGHIJ"
_NUMBER_WORDS = {
    2: "two",
    3: "three",
    4: "four",
    5: "five",
    6: "six",
    7: "seven",
    8: "eight",
    9: "nine",
    10: "ten",
}


@dataclass(frozen=True)
class Instruction:
    """An answer-format instruction: ``head`` + the item's prompt + ``tail``.

    ``head`` and ``tail`` may name ``{n}`` (the option count in words), ``{letters_and}`` ("A, B, C
    and D") and ``{letters_or}`` ("A, B, C or D"), filled per item from its choices."""

    head: str
    tail: str
    source: str
    """Where the text comes from: ``lm-eval llama3 <file>``, ``lm-eval <file>`` or ``ours``."""
    answer_prefix: str | None = None
    """The words an answer starts with under this instruction (lm-eval's ``gen_prefix``): the
    context that option log-likelihood scoring continues (:mod:`kit.subjects.loglik`)."""


_MC_HEAD = (
    "Given the following question and {n} candidate answers ({letters_and}), "
    "choose the best answer.\n"
)
_MC_TAIL = (
    '\nYour response should end with "The best answer is [the_answer_letter]" where the '
    "[the_answer_letter] is one of {letters_or}."
)
_MC_OURS = Instruction(
    _MC_HEAD,
    _MC_TAIL,
    "ours (lm-eval llama3 multiple-choice template applied to this benchmark)",
    "The best answer is",
)
_NUMERIC = Instruction(
    "Given the following problem, reason and give a final answer to the problem.\nProblem: ",
    '\nYour response should end with "The final answer is [answer]" where [answer] is the response '
    "to the problem.",
    "lm-eval llama3 instruct/gsm8k/gsm8k.yaml",
    "The final answer is",
)
_MATH = Instruction(
    "Solve the following math problem step by step. The last line of your response should be of "
    'the form "The final answer is $ANSWER$" where $ANSWER$ is the answer to the problem.\n'
    "Problem: ",
    "\n",
    "lm-eval llama3 instruct/math/_math_llama_template_yaml",
    "The final answer is",
)

INSTRUCTIONS: dict[str, Instruction] = {
    "arc_challenge": Instruction(
        _MC_HEAD + "Question: ",
        _MC_TAIL,
        "lm-eval llama3 instruct/arc_challenge/arc_challenge_llama.yaml (option count per item)",
        "The best answer is",
    ),
    "mmlu": Instruction(
        _MC_HEAD,
        _MC_TAIL,
        "lm-eval llama3 instruct/mmlu/_continuation_template_yaml",
        "The best answer is",
    ),
    "gsm8k": _NUMERIC,
    "svamp": replace(_NUMERIC, source="ours (lm-eval llama3 gsm8k template applied to SVAMP)"),
    "mawps": replace(_NUMERIC, source="ours (lm-eval llama3 gsm8k template applied to MAWPS)"),
    "asdiv": replace(_NUMERIC, source="ours (lm-eval llama3 gsm8k template applied to ASDiv)"),
    "math500": _MATH,
    "bbh": Instruction(
        "",
        '\nThink step by step, then end your response with "So the answer is [answer]." where '
        "[answer] is the answer in the form the question asks for.",
        "ours (the last line of BBH's chain-of-thought exemplars, 'So the answer is ...')",
        "So the answer is",
    ),
    "humaneval": Instruction(
        "Write a solution to the following problem and make sure that it passes the tests:\n```",
        "```\nWrite the complete function in one ```python code block.",
        "lm-eval humaneval/humaneval_instruct.yaml doc_to_text; the closing sentence is ours",
    ),
    "mbpp": Instruction(
        "You are an expert Python programmer, and here is your task:\n",
        "\nWrite the code in one ```python code block.",
        "lm-eval mbpp/mbpp_instruct.yaml doc_to_text; the closing sentence is ours",
    ),
    "bbq": _MC_OURS,
    "crows_pairs": _MC_OURS,
    "socialiqa": _MC_OURS,
    "winogrande": _MC_OURS,
    "agieval": _MC_OURS,  # its cloze subset (math) takes _MATH: instruction_for
    "logicbench": _MC_OURS,  # its yes/no subset (bqa) takes _YES_NO: instruction_for
    "natural_questions": Instruction(
        "Answer the following question with a short phrase.\nQuestion: ",
        '\nYour response should end with "The answer is [answer]".',
        "ours",
        "The answer is",
    ),
}
"""Per benchmark family (``mmlu/<subject>`` -> ``mmlu``): the instruction and its source. Families
absent here (``tiny``, ``lmsys_arena``, ``vectara_hallucination``) keep their prompts: the world's
fixed format, and prompts that already are the task."""

_YES_NO = Instruction("", '\nAnswer "yes" or "no" first, then explain if you wish.', "ours", None)


def _family(benchmark: str) -> str:
    return benchmark.split("/", 1)[0]


def instruction_for(benchmark: str, item: Item) -> Instruction | None:
    """The instruction for ``item`` of ``benchmark``, or None when the benchmark keeps its prompt.
    Mixed benchmarks choose per item: AGIEval's cloze items take the MATH instruction, LogicBench's
    yes/no items (``answer`` yes/no) the yes/no one; their multiple-choice items the multiple-choice
    one."""
    family = _family(benchmark)
    if family not in INSTRUCTIONS:
        return None
    if family in ("agieval", "logicbench") and item.choices is None:
        return (
            replace(
                _MATH, source="ours (lm-eval llama3 MATH template applied to AGIEval's cloze items)"
            )
            if family == "agieval"
            else _YES_NO
        )
    return INSTRUCTIONS[family]


def choice_words(n: int) -> dict[str, str]:
    """``{n}``, ``{letters_and}``, ``{letters_or}`` for ``n`` options: 4 -> four, "A, B, C and D",
    "A, B, C or D"."""
    if not 2 <= n <= len(LETTERS):
        raise ValueError(f"{n} options: allowed 2..{len(LETTERS)}")
    letters = list(LETTERS[:n])
    head = ", ".join(letters[:-1])
    return {
        "n": _NUMBER_WORDS[n],
        "letters_and": f"{head} and {letters[-1]}",
        "letters_or": f"{head} or {letters[-1]}",
    }


def instructed(benchmark: str, item: Item) -> Item:
    """``item`` with its prompt wrapped in the benchmark's answer-format instruction (the same id,
    target and metadata; ``metadata["plain_prompt"]`` keeps the bare prompt). Items of benchmarks
    without an instruction come back unchanged."""
    ins = instruction_for(benchmark, item)
    if ins is None:
        return item
    fill = choice_words(len(item.choices)) if item.choices else {}
    head, tail = ins.head.format(**fill), ins.tail.format(**fill)
    return replace(
        item,
        prompt=f"{head}{item.prompt}{tail}",
        metadata={**item.metadata, "plain_prompt": item.prompt, "instruction_source": ins.source},
    )


def instructed_items(benchmark: str, items: Sequence[Any], style: str) -> list:
    """``items`` as shown under ``style`` (:data:`PROMPT_STYLES`): instructed, or unchanged
    (``plain``)."""
    if style not in PROMPT_STYLES:
        raise ValueError(
            f"prompt style {style!r} is not allowed; allowed: {', '.join(PROMPT_STYLES)}"
        )
    if style == "plain":
        return list(items)
    return [instructed(benchmark, it) for it in items]


def prompt_key(benchmark: str, style: str) -> str:
    """The name responses to ``benchmark`` under ``style`` are cached under: the benchmark itself
    for ``plain`` (caches written before instructions existed stay valid), else the benchmark plus a
    digest of its instruction texts (an edited instruction never reads another's responses)."""
    if style not in PROMPT_STYLES:
        raise ValueError(
            f"prompt style {style!r} is not allowed; allowed: {', '.join(PROMPT_STYLES)}"
        )
    family = _family(benchmark)
    if style == "plain" or family not in INSTRUCTIONS:
        return benchmark
    texts = [INSTRUCTIONS[family].head, INSTRUCTIONS[family].tail, _MATH.head, _YES_NO.tail]
    return f"{benchmark}+instructed-{hashlib.sha256(repr(texts).encode()).hexdigest()[:8]}"
