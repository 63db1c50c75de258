"""Final numbers and MATH-style answers read from hand-written responses (kit.data.math_answers),
with math-verify (when installed) and with the normaliser fallback."""

from __future__ import annotations

import pytest

from kit.data import math_answers
from kit.data.items import Item
from kit.data.math_answers import (
    extract_boxed,
    extract_final_number,
    normalize_math_answer,
    numbers_equal,
)
from kit.data.scorers import score

# --- extract_final_number ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "response, expected",
    [
        ("She has 3 apples and buys 4.\n#### 7", "7"),
        ("#### 1,234", "1234"),
        ("Step: 5 + 5 = 10. #### 10\nExtra text 99", "10"),  # #### beats a later number
        ("I think 12 then 13. The answer is 14.", "14"),
        ("The answer is: $18. Later we note 3 eggs.", "18"),  # "answer is" beats last number
        ("The answer is **-4**", "-4"),
        ("So she makes 9 \\times 2 = 18 dollars.", "18"),  # last number fallback
        ("It costs $1,000,000 in total.", "1000000"),
        ("The price is 2.50 per egg.", "2.50"),
        ("A total of .5 litres", ".5"),
        ("The temperature fell to -7 degrees", "-7"),
        ("He read pages 10-12", "12"),  # a range, not -12
        ("16-3-4 = 9", "9"),
        ("Half is 5/2 cups", "5/2"),
        ("on 3/4/2020 we met", "2020"),  # a date is no fraction
        ("no numbers here", None),
        ("", None),
    ],
)
def test_extract_final_number(response, expected):
    assert extract_final_number(response) == expected, (
        f"{response!r}: expected {expected!r}; check the #### > 'answer is' > last-number order "
        "and comma removal"
    )


def test_extract_final_number_sentence_period_not_decimal():
    assert extract_final_number("The total is 42.") == "42", (
        "a sentence-final period is not a decimal point"
    )


@pytest.mark.parametrize(
    "a, b, equal",
    [
        ("2.50", "2.5", True),
        ("1,000", "1000", True),
        ("$18", "18", True),
        ("0.5", "1/2", True),
        ("7", "8", False),
        (None, "7", False),
        ("7", None, False),
        ("-3", "3", False),
        ("abc", "abc", True),
        ("50%", "50", True),
    ],
)
def test_numbers_equal(a, b, equal):
    assert numbers_equal(a, b) is equal


# --- MATH ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "response, expected",
    [
        ("so \\boxed{\\frac{1}{2}}.", "\\frac{1}{2}"),
        ("first \\boxed{3} then \\boxed{4}", "4"),
        ("\\boxed{\\left( 3, \\frac{\\pi}{2} \\right)}", "\\left( 3, \\frac{\\pi}{2} \\right)"),
        ("\\fbox{x^{2}}", "x^{2}"),
        ("\\boxed 5", "5"),
        ("no box", None),
        ("\\boxed{unclosed {", None),
    ],
)
def test_extract_boxed(response, expected):
    assert extract_boxed(response) == expected, "nested braces must be balanced, the last box wins"


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("\\left( 3, \\frac{\\pi}{2} \\right)", "(3,\\frac{\\pi}{2})"),
        ("\\dfrac{1}{2}", "\\frac{1}{2}"),
        ("\\tfrac{1}{2}", "\\frac{1}{2}"),
        ("\\frac12", "\\frac{1}{2}"),
        ("\\frac{\\pi}2", "\\frac{\\pi}{2}"),
        ("2\\sqrt3", "2\\sqrt{3}"),
        ("18.0", "18"),
        ("18.00", "18"),
        ("18.5", "18.5"),
        ("x = 5", "5"),
        ("\\text{(C)}", "(C)"),
        ("{5}", "5"),
        ("90^\\circ", "90"),
        ("$5$", "5"),
        (None, ""),
    ],
)
def test_normalize_math_answer(raw, expected):
    assert normalize_math_answer(raw) == expected


@pytest.fixture(params=["math-verify", "normaliser"])
def math_checker(request, monkeypatch):
    """Each MATH test runs with math-verify (when installed) and with the normaliser fallback."""
    if request.param == "math-verify":
        pytest.importorskip("math_verify", reason="math-verify is the optional extra kit[math]")
    else:
        monkeypatch.setattr(math_answers, "_math_verify", lambda: None)
    return request.param


def test_score_math500(math_checker):
    assert math_answers.math_checker().startswith(math_checker)
    item = Item(id="m/1", prompt="?", answer="\\frac{1}{2}")
    assert score("math500", item, "Thus the answer is $\\boxed{\\dfrac{1}{2}}$.")
    assert not score("math500", item, "Thus $\\boxed{\\frac{1}{3}}$.")
    assert score("math500", Item(id="m/2", prompt="?", answer="18"), "\\boxed{18.0}")
    # no box: final number
    assert score("math500", Item(id="m/3", prompt="?", answer="18"), "we get 18")
    assert not score("math500", Item(id="m/4", prompt="?", answer="18"), "no idea")
    half = Item(id="m/5", prompt="?", answer="\\frac{1}{2}")
    assert score("math500", half, "\\boxed{0.5}") and score("math500", half, "\\boxed{\\frac12}")
    assert score("math500", Item(id="m/6", prompt="?", answer="-\\frac{3}{4}"), "\\boxed{-0.75}")
    assert not score("math500", half, "\\boxed{\\frac{1}{3}}"), "1/3 must not equal 1/2 by value"
    assert score("math500", Item(id="m/7", prompt="?", answer="10,\\!000"), "\\boxed{10000}")
    assert not score("math500", Item(id="m/8", prompt="?", answer="1, 2"), "\\boxed{12}"), (
        "a list of answers '1, 2' must not compare by value as twelve"
    )


MATH_VERIFY_ONLY = [  # (reference, response): equal answers the light normaliser misses
    ("\\{1, 2\\}", "\\boxed{\\{2,1\\}}"),  # a set in another order
    ("2\\sqrt{3}", "\\boxed{\\sqrt{12}}"),  # the same surd, simplified differently
    ("x^2+2x+1", "so $\\boxed{(x+1)^2}$"),  # the same polynomial
    ("\\frac{\\sqrt{3}}{2}", "\\boxed{\\frac{1}{2}\\sqrt{3}}"),
    ("a^{2}", "\\boxed{a^2}"),  # braces the normaliser keeps
    ("3", "\\boxed{3\\text{ cm}}"),  # a unit
    ("1,2", "\\boxed{2,1}"),  # a list of solutions in another order
]


@pytest.mark.parametrize("reference, response", MATH_VERIFY_ONLY)
def test_math_verify_decides_where_the_normaliser_fails(reference, response):
    pytest.importorskip("math_verify", reason="math-verify is the optional extra kit[math]")
    light = math_answers.check_math_answer(response, reference, checker="normaliser")
    assert not light.correct and light.checker == "normaliser", (
        "the normaliser now gets it: pick another case"
    )
    verdict = math_answers.check_math_answer(response, reference)
    assert verdict.correct and verdict.checker.startswith("math-verify ")
    assert score("math500", Item(id="m/v", prompt="?", answer=reference), response)
    assert not math_answers.check_math_answer("\\boxed{4}", reference).correct


def test_math_checker_is_recorded_and_falls_back_when_math_verify_is_missing(monkeypatch):
    pytest.importorskip("math_verify", reason="math-verify is the optional extra kit[math]")
    from importlib.metadata import version

    assert math_answers.math_checker() == f"math-verify {version('math-verify')}"
    # a reference math-verify cannot parse: the normaliser decides, and the verdict says so
    odd = math_answers.check_math_answer("\\boxed{\\text{Monday}}", "\\text{Monday}")
    assert odd.correct and odd.checker in (
        math_answers.math_checker(),
        "normaliser (math-verify could not parse the reference)",
    )
    # in a thread (no signal-based timeout there) it still decides
    import threading

    out = []
    thread = threading.Thread(
        target=lambda: out.append(
            math_answers.check_math_answer("\\boxed{\\sqrt{12}}", "2\\sqrt{3}")
        )
    )
    thread.start()
    thread.join()
    assert out[0].correct
    monkeypatch.setattr(math_answers, "_math_verify", lambda: None)
    assert math_answers.math_checker() == "normaliser (math-verify not installed)"
    assert math_answers.check_math_answer(
        "\\boxed{0.5}", "\\frac{1}{2}"
    ) == math_answers.MathVerdict(True, "normaliser", "0.5")
    with pytest.raises(ImportError, match="kit\\[math\\]"):
        math_answers.check_math_answer("\\boxed{1}", "1", checker="math-verify")
    with pytest.raises(ValueError, match="allowed values: auto, math-verify, normaliser"):
        math_answers.check_math_answer("1", "1", checker="sympy")


def test_same_math_answer_by_hand():
    from kit.data.math_answers import same_math_answer, to_number

    assert same_math_answer("\\frac{1}{2}", "0.5") and same_math_answer(" 3 ", "3")
    assert same_math_answer("1/4", "0.25") and not same_math_answer("2", "3")
    assert not same_math_answer(None, "3") and not same_math_answer("1,2", "12")
    assert to_number("$1,234.5") == 1234.5 and to_number("3/4") == 0.75 and to_number("x") is None
