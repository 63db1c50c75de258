"""The answers of math benchmarks, extracted and compared: the final number of a word-problem
response (GSM8K, SVAMP, MAWPS, ASDiv: :func:`extract_final_number`, :func:`numbers_equal`) and
MATH-style LaTeX answers (:func:`extract_boxed`, :func:`normalize_math_answer`, and
:func:`check_math_answer` with math-verify when it is installed, else the normaliser).

:func:`kit.data.scorers.score` applies these rules per benchmark; each function's docstring states
its rule.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from fractions import Fraction
from typing import cast

__all__ = [
    "extract_final_number",
    "extract_boxed",
    "normalize_math_answer",
    "numbers_equal",
    "check_math_answer",
    "math_checker",
    "has_math_verify",
    "MathVerdict",
    "MATH_CHECKERS",
]

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
    fa, fb = to_number(a), to_number(b)
    if fa is None or fb is None:
        return str(a).strip() == str(b).strip()
    return abs(fa - fb) <= rel_tol * max(1.0, abs(fa), abs(fb))


def to_number(x: str | float) -> float | None:
    """``x`` as a number (commas, ``$``, ``%``, spaces and a final period dropped; ``a/b`` read as
    a fraction), or None when it is not one."""
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
    trailing ``.``. (:func:`~kit.data.scorers.score` also compares plain numbers and
    ``\\frac{a}{b}`` by value, so ``0.5`` equals ``\\frac{1}{2}``.) It does NOT handle units,
    ``\\text{}`` words beyond unwrapping, ``a^{b}`` vs ``a^b``, or set/interval order, which the
    official normaliser partly does, so our MATH accuracy is a slight underestimate.
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


def has_math_verify() -> bool:
    """Is Hugging Face's math-verify installed (the ``auto`` checker's first choice)?"""
    return _math_verify() is not None


def math_checker() -> str:
    """The checker :func:`~kit.data.scorers.score` uses for MATH-style answers in this environment:
    ``math-verify <version>`` when it is installed, else ``normaliser`` (record it beside an
    accuracy)."""
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
    return MathVerdict(same_math_answer(got, target), "normaliser" + note, got)


def same_math_answer(got: str | None, target: str | None) -> bool:
    """Our normaliser's equality of two MATH-style answers: equal after
    :func:`normalize_math_answer`, or both plain numbers / fractions within a relative 1e-6."""
    a, b = normalize_math_answer(got), normalize_math_answer(target)
    va, vb = _math_value(a), _math_value(b)
    return a == b or (
        va is not None and vb is not None and abs(va - vb) <= 1e-6 * max(1.0, abs(vb))
    )


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
    return to_number(s) if re.fullmatch(plain, s) else None


def _balanced(s: str) -> bool:
    depth = 0
    for ch in s:
        depth += (ch == "{") - (ch == "}")
        if depth < 0:
            return False
    return depth == 0
