"""Answer extraction and per-benchmark scoring of free-text model responses.

``score(benchmark, item, response) -> bool`` is the one entry point; the extractors are exported
because other notebooks parse published responses with them (``model_responses/`` in the data
directory). Each extractor's docstring states its rule; the rules are deliberately simple and
deterministic, so a reported accuracy can be reproduced by reading them.

Code benchmarks (humaneval, mbpp) run the response and the benchmark's tests in a separate
Python subprocess with a wall-clock timeout and resource limits, never in this process.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import cast

from kit.data.items import Item

__all__ = [
    "score",
    "extract_final_number",
    "extract_choice_letter",
    "extract_boxed",
    "score_all",
    "normalize_math_answer",
    "numbers_equal",
    "extract_bbh_answer",
    "bbh_match",
    "extract_code",
    "code_program",
    "run_program",
    "NUMERIC_BENCHMARKS",
    "CHOICE_BENCHMARKS",
    "check_math_answer",
    "math_checker",
    "MathVerdict",
    "MATH_CHECKERS",
    "parse_failed",
]

NUMERIC_BENCHMARKS = ("gsm8k", "svamp", "mawps", "asdiv")
"""Benchmarks scored by :func:`extract_final_number` + :func:`numbers_equal`."""
CHOICE_BENCHMARKS = ("arc_challenge", "mmlu", "bbq", "crows_pairs", "socialiqa", "winogrande")
"""Benchmarks scored by :func:`extract_choice_letter` against ``item.target``."""
CODE_BENCHMARKS = ("humaneval", "mbpp")

LETTERS = "ABCDEFGHIJ"

# A number as people and models write it: optional sign, digits with optional thousands commas,
# optional decimal part; a simple fraction "5/2" (not a date "3/4/2020"); a bare decimal ".5".
# A minus sign counts only when it does not follow a word character ("10-12" is a range, not -12).
_SIGN = r"(?:(?<![\w.])-)?"
_NUMBER = (
    rf"(?<![\d/]){_SIGN}\d+/\d+(?![\d/])|{_SIGN}(?:\d{{1,3}}(?:,\d{{3}})+|\d+)(?:\.\d+)?"
    rf"|{_SIGN}\.\d+"
)
_NUMBER_RE = re.compile(_NUMBER)
_HASH_RE = re.compile(r"####\s*\$?\s*(" + _NUMBER + ")")
_ANSWER_IS_RE = re.compile(
    r"answer\s+is\s*[:：]?\s*(?:\*\*)?\s*\$?\\?\$?\s*(" + _NUMBER + ")", re.IGNORECASE
)


def _clean_number(text: str) -> str:
    """``"1,234.50"`` -> ``"1234.50"``; a trailing ``.`` (sentence end) never reaches here."""
    return text.replace(",", "")


def extract_final_number(response: str) -> str | None:
    """The final numeric answer of a math word-problem response (GSM8K, SVAMP, MAWPS, ASDiv).

    Rule, first match wins:

    1. the number after the last ``####`` (GSM8K's reference format);
    2. the number after the last "answer is" (case-insensitive; an optional ``:``, ``**``, ``$``
       may sit between), e.g. "The answer is $18." -> ``"18"``;
    3. otherwise the last number anywhere in the response.

    A number is ``-?digits`` with optional thousands commas and decimals, a bare ``.5``, or a
    simple fraction ``5/2``. Thousands commas are removed (``"1,000"`` -> ``"1000"``); sign,
    decimals and fractions are kept as written (``"-3"``, ``"2.50"``); compare with
    :func:`numbers_equal`, which treats ``2.50`` and ``2.5`` as equal. Returns None when the
    response holds no number.
    """
    if not response:
        return None
    for pattern in (_HASH_RE, _ANSWER_IS_RE):
        hits = pattern.findall(response)
        if hits:
            return _clean_number(hits[-1])
    hits = _NUMBER_RE.findall(response)
    return _clean_number(hits[-1]) if hits else None


def numbers_equal(a: str | float | None, b: str | float | None, rel_tol: float = 1e-6) -> bool:
    """Numeric equality of two answers given as text (commas, ``$``, ``%`` and spaces ignored).

    ``"2.50" == "2.5"``, ``"1,000" == "1000"``, ``"0.5" == "1/2"``. Falls back to exact string
    comparison when either side is not a number. None never equals anything.
    """
    if a is None or b is None:
        return False
    fa, fb = _to_float(a), _to_float(b)
    if fa is None or fb is None:
        return str(a).strip() == str(b).strip()
    return abs(fa - fb) <= rel_tol * max(1.0, abs(fa), abs(fb))


def _to_float(x: str | float) -> float | None:
    if isinstance(x, (int, float)):
        return float(x)
    text = str(x).strip().replace(",", "").replace("$", "").replace("%", "").replace(" ", "")
    text = text.rstrip(".")
    try:
        return float(text)
    except ValueError:
        pass
    try:
        return float(Fraction(text))
    except (ValueError, ZeroDivisionError):
        return None


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


# --- MATH -----------------------------------------------------------------------------------


def extract_boxed(response: str) -> str | None:
    """Content of the last ``\\boxed{...}`` (or ``\\fbox{...}``), nested braces respected.

    ``"so \\boxed{\\frac{1}{2}}."`` -> ``"\\frac{1}{2}"``. Also accepts ``\\boxed 5`` (no braces,
    one token). Returns None when there is no box or its braces never close.
    """
    if not response:
        return None
    idx = max(response.rfind("\\boxed"), response.rfind("\\fbox"))
    if idx < 0:
        return None
    rest = response[idx:]
    brace = rest.find("{")
    head = rest[: brace if brace >= 0 else len(rest)]
    if brace < 0 or head.strip() not in ("\\boxed", "\\fbox"):
        m = re.match(r"\\boxed\s+([^\s$]+)", rest)
        return m.group(1) if m else None
    depth = 0
    for i in range(brace, len(rest)):
        if rest[i] == "{":
            depth += 1
        elif rest[i] == "}":
            depth -= 1
            if depth == 0:
                return rest[brace + 1 : i]
    return None


def normalize_math_answer(answer: str | None) -> str:
    """A light normaliser for MATH answers; LIGHTER than the official MATH/PRM800K one.

    Removes spaces, ``\\left``/``\\right``, ``\\!``, ``\\,``, ``$``, ``\\text{...}`` wrappers
    (keeps the content), a leading ``x=``-style variable, ``^\\circ``/``^{\\circ}``, surrounding
    braces; maps ``\\dfrac``/``\\tfrac`` -> ``\\frac`` and the shorthands ``\\frac12`` ->
    ``\\frac{1}{2}``, ``\\sqrt2`` -> ``\\sqrt{2}``; drops a trailing ``.0``/``.00`` and a
    trailing ``.``. (:func:`score` also compares plain numbers and ``\\frac{a}{b}`` by value, so
    ``0.5`` equals ``\\frac{1}{2}``.) It does NOT handle units, ``\\text{}`` words beyond
    unwrapping, ``a^{b}`` vs ``a^b``, or set/interval order, which the official normaliser
    partly does, so our MATH accuracy is a slight underestimate.
    """
    if answer is None:
        return ""
    s = str(answer).strip()
    s = re.sub(r"\\text\{([^{}]*)\}", r"\1", s)
    s = re.sub(r"\\mbox\{([^{}]*)\}", r"\1", s)
    for old, new in (
        ("\\left", ""),
        ("\\right", ""),
        ("\\dfrac", "\\frac"),
        ("\\tfrac", "\\frac"),
        ("\\!", ""),
        ("\\,", ""),
        ("\\;", ""),
        ("$", ""),
        ("^\\circ", ""),
        ("^{\\circ}", ""),
        ("\\%", ""),
        ("%", ""),
    ):
        s = s.replace(old, new)
    s = re.sub(r"\s+", "", s)
    s = re.sub(r"\\frac(\d)(\d)", r"\\frac{\1}{\2}", s)
    s = re.sub(r"\\frac\{([^{}]*)\}(\d)", r"\\frac{\1}{\2}", s)
    s = re.sub(r"\\sqrt(\d)", r"\\sqrt{\1}", s)
    s = re.sub(r"^[a-zA-Z]\s*=", "", s)
    s = s.rstrip(".")
    while s.startswith("{") and s.endswith("}") and _balanced(s[1:-1]):
        s = s[1:-1]
    s = re.sub(r"^(-?\d+)\.0+$", r"\1", s)
    return s


MATH_CHECKERS = ("auto", "math-verify", "normaliser")
"""``auto``: math-verify when it is installed (``pip install 'kit[math]'``), else the normaliser."""
MATH_VERIFY_TIMEOUT = 5
"""Seconds math-verify may spend parsing or comparing one answer (its signal-based timeout works in
the main thread only; elsewhere it runs without one)."""


@dataclass(frozen=True)
class MathVerdict:
    """Whether a response's final answer equals a MATH-style reference, and who decided."""

    correct: bool
    checker: str
    """``math-verify <version>``, or ``normaliser`` (:func:`normalize_math_answer`), with why when
    math-verify was wanted but did not decide."""
    answer: str | None
    """The answer read from the response (math-verify: its parsed expression; else the boxed text or
    final number)."""


def _math_verify():
    try:  # lazy: an optional dependency, and it imports sympy
        import math_verify
    except ImportError:
        return None
    return math_verify


def math_checker() -> str:
    """The checker :func:`score` uses for MATH-style answers in this environment: ``math-verify
    <version>`` when it is installed, else ``normaliser`` (record it beside an accuracy)."""
    mv = _math_verify()
    if mv is None:
        return "normaliser (math-verify not installed)"
    from importlib.metadata import version

    return f"math-verify {version('math-verify')}"


def check_math_answer(response: str, target: str, checker: str = "auto") -> MathVerdict:
    """Is the final answer of ``response`` (the last ``\\boxed{}``, else the final number) equal to
    the MATH-style reference ``target`` (LaTeX without ``$``)?

    ``checker``: ``math-verify`` (Hugging Face's Math-Verify: both sides parsed to sympy and
    compared symbolically and numerically, so ``\\sqrt{12}`` equals ``2\\sqrt{3}``, ``\\{2,1\\}``
    equals ``\\{1, 2\\}``, ``(x+1)^2`` equals ``x^2+2x+1``), ``normaliser``
    (:func:`normalize_math_answer` then string or numeric equality: lighter, it underestimates
    accuracy), or ``auto`` (math-verify when installed, else the normaliser). A reference
    math-verify cannot parse falls back to the normaliser, and the verdict's ``checker`` says so.
    """
    if checker not in MATH_CHECKERS:
        raise ValueError(f"checker={checker!r}; allowed values: {', '.join(MATH_CHECKERS)}")
    mv = _math_verify() if checker != "normaliser" else None
    if checker == "math-verify" and mv is None:
        raise ImportError(
            "checker='math-verify' needs the math-verify package: pip install 'kit[math]'"
        )
    note = ""
    if mv is not None:
        # math-verify's parsing_timeout says int; None (no timeout, where no signal can be set)
        # works
        on_main = threading.current_thread() is threading.main_thread()
        seconds = cast(int, MATH_VERIFY_TIMEOUT if on_main else None)
        gold = mv.parse(f"${target}$", parsing_timeout=seconds)
        if gold:
            pred = mv.parse(response or "", parsing_timeout=seconds)
            ok = bool(pred) and bool(mv.verify(gold, pred, timeout_seconds=seconds))
            return MathVerdict(ok, math_checker(), str(pred[-1]) if pred else None)
        note = " (math-verify could not parse the reference)"
    got = extract_boxed(response)
    if got is None:
        got = extract_final_number(response)
    if got is None:
        return MathVerdict(False, "normaliser" + note, None)
    a, b = normalize_math_answer(got), normalize_math_answer(target)
    va, vb = _math_value(a), _math_value(b)
    same = a == b or (
        va is not None and vb is not None and abs(va - vb) <= 1e-6 * max(1.0, abs(vb))
    )
    return MathVerdict(same, "normaliser" + note, got)


def _math_value(s: str) -> float | None:
    """The value of a normalised answer that is a plain number, ``a/b`` or ``\\frac{a}{b}``."""
    m = re.fullmatch(r"(-?)\\frac\{(-?[\d.]+)\}\{(-?[\d.]+)\}", s)
    if m:
        try:
            value = float(m.group(2)) / float(m.group(3))
        except (ValueError, ZeroDivisionError):
            return None
        return -value if m.group(1) else value
    # thousands commas only: "1,2" is a list of two answers, not twelve
    plain = r"-?(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d*\.?\d+(?:/\d+)?)"
    return _to_float(s) if re.fullmatch(plain, s) else None


def _balanced(s: str) -> bool:
    depth = 0
    for ch in s:
        depth += (ch == "{") - (ch == "}")
        if depth < 0:
            return False
    return depth == 0


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


# --- code -----------------------------------------------------------------------------------


def extract_code(response: str) -> str:
    """The program in a response: the first fenced code block (```python ... ```) if any,
    else the response unchanged."""
    m = re.search(r"```(?:python|py|Python)?[ \t]*\n(.*?)```", response or "", flags=re.DOTALL)
    return m.group(1) if m else (response or "")


def code_program(benchmark: str, item: Item, response: str) -> str:
    """The complete test program for a code item: solution followed by the item's tests.

    humaneval: ``prompt + completion`` (the HumanEval convention: the response continues the
    function body); if the response defines ``def <entry_point>(`` itself, it is appended after
    the prompt instead (a docstring-only function is valid Python and is then redefined).
    Then the item's ``test`` and ``check(<entry_point>)``.
    mbpp: the response code, ``test_setup_code``, then every assert in ``test_list``.
    """
    code = extract_code(response)
    meta = item.metadata
    if benchmark == "humaneval":
        entry = meta["entry_point"]
        if re.search(rf"^\s*def\s+{re.escape(entry)}\s*\(", code, flags=re.MULTILINE):
            solution = item.prompt + "\n    pass\n\n" + code
        else:
            solution = item.prompt + code
        return f"{solution}\n\n{meta['test']}\n\ncheck({entry})\n"
    if benchmark == "mbpp":
        tests = "\n".join(meta["test_list"])
        return f"{code}\n\n{meta.get('test_setup_code', '')}\n{tests}\n"
    raise ValueError(
        f"benchmark={benchmark!r} is not a code benchmark; allowed values: "
        f"{', '.join(CODE_BENCHMARKS)}"
    )


def _limit_resources(memory_bytes: int, cpu_seconds: int) -> None:
    import resource

    os.setsid()
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (10 << 20, 10 << 20))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run_program(program: str, timeout: float = 10.0, memory_mb: int = 1024) -> bool:
    """Run ``program`` in a fresh ``python -I`` subprocess in a temporary directory.

    True iff it exits 0 within ``timeout`` seconds (wall clock). The child gets its own session
    (killed as a group on timeout), an address-space limit of ``memory_mb``, a CPU-time limit,
    a 10 MiB file-size limit and an empty environment apart from ``PATH``. This isolates
    accidents (infinite loops, memory blow-ups, stray files), not a determined attacker.
    """
    with tempfile.TemporaryDirectory(prefix="kit-code-") as tmp:
        path = Path(tmp) / "program.py"
        path.write_text(program)
        proc = subprocess.Popen(
            [sys.executable, "-I", str(path)],
            cwd=tmp,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONHASHSEED": "0"},
            preexec_fn=lambda: _limit_resources(memory_mb << 20, int(timeout) + 1),
        )
        try:
            return proc.wait(timeout=timeout) == 0
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
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
    - ``tiny/<task>``: multiple-choice items by letter, others by exact match after stripping.
    """
    base = benchmark.split("/", 1)[0]
    response = response or ""
    if base in NUMERIC_BENCHMARKS:
        if _to_float(item.answer or "") is None:
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
    if base == "agieval" and _math_verify() is not None:
        return check_math_answer(response, cast(str, item.answer)).correct  # math items have one
    if base == "agieval":
        got = (
            extract_boxed(response)
            or extract_final_number(response)
            or extract_bbh_answer(response)
        )
        a, b = normalize_math_answer(got), normalize_math_answer(item.answer)
        va, vb = _math_value(a), _math_value(b)
        return a == b or (
            va is not None and vb is not None and abs(va - vb) <= 1e-6 * max(1.0, abs(vb))
        )
    if base == "logicbench":  # BQA: the first yes/no word of the response
        m = re.search(r"\b(yes|no)\b", response.lower())
        return m is not None and m.group(1) == item.answer
    if base == "natural_questions":  # NQ-open: normalised exact match against any short answer
        got = normalize_short_answer(extract_bbh_answer(response))
        return any(
            got == normalize_short_answer(a) for a in item.metadata.get("answers", [item.answer])
        )
    if base == "tiny":
        if item.choices is not None:
            return (
                extract_choice_letter(response, n_choices=max(len(item.choices), 2)) == item.target
            )
        return response.strip() == item.target.strip()
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
        + ("agieval", "logicbench", "natural_questions", "tiny/<task>")
    )
    raise ValueError(f"benchmark={benchmark!r} has no scorer; allowed values: {', '.join(allowed)}")


def parse_failed(benchmark: str, item: Item, response: str) -> bool:
    """Whether :func:`score`'s rule reads no answer at all from ``response`` (it then scores it
    wrong).

    Per benchmark, the extractor :func:`score` applies finds nothing: no number (gsm8k, svamp,
    mawps, asdiv; a non-numeric ASDiv answer: no text), no choice letter (multiple choice), no
    ``\\boxed{}`` and no number (math500; agieval's cloze items: nor an answer line), no yes/no
    (logicbench BQA), no code (humaneval, mbpp: an empty program), an empty answer line (bbh,
    natural_questions), and for ``tiny/<task>`` no letter / an empty response. A parsed but wrong
    answer is not a parse failure."""
    base = benchmark.split("/", 1)[0]
    response = response or ""
    if base in NUMERIC_BENCHMARKS:
        if _to_float(item.answer or "") is None:
            return not extract_bbh_answer(response)
        return extract_final_number(response) is None
    if base in CHOICE_BENCHMARKS:
        n = len(item.choices) if item.choices else 4
        return extract_choice_letter(response, n_choices=max(n, 2)) is None
    if base in ("agieval", "logicbench", "tiny") and item.choices is not None:
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
    if base == "tiny":
        return not response.strip()
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
