"""Answer extraction and scoring on hand-written responses (kit/scorers.py)."""

from __future__ import annotations

import pytest

from kit.data import scorers
from kit.data.items import Item
from kit.data.scorers import (
    bbh_match,
    code_program,
    extract_boxed,
    extract_choice_letter,
    extract_code,
    extract_final_number,
    normalize_math_answer,
    numbers_equal,
    run_program,
    score,
    score_all,
)

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


# --- extract_choice_letter --------------------------------------------------------------------


@pytest.mark.parametrize(
    "response, expected",
    [
        ("The answer is (B).", "B"),
        ("The answer is B", "B"),
        ("Answer: C", "C"),
        ("answer: **D**", "D"),
        ("The final answer is: $\\boxed{C}$", "C"),
        ("B", "B"),
        ("(B)", "B"),
        ("B.", "B"),
        ("**A**", "A"),
        (" C ", "C"),
        ("B. buildings will be made safer", "B"),
        ("The correct option is A, because ...", "A"),
        ("Option D is correct.", "D"),
        ("The answer is B because the others are wrong.", "B"),
        ("The answer is A because the others are wrong.", "A"),
        ("The answer is A is what I would say.", "A"),
        # reconsidering: the last explicit statement wins
        ("The answer is A. Wait, no: the answer is C.", "C"),
        # instruction-tuned style: a colon then the option line
        (
            "The most likely effect would be:\n\nC. Planetary days will become shorter.\n\nThis "
            "is because ...",
            "C",
        ),
        # a bolded option stated once
        ("The most likely decline is in **B. plant diversity**. Here is why...", "B"),
    ],
)
def test_extract_choice_letter(response, expected):
    assert extract_choice_letter(response) == expected, f"{response!r} should parse to {expected}"


@pytest.mark.parametrize(
    "response",
    [
        "",
        "I am not sure.",
        "The answer is a dog.",  # lowercase article, not option A
        # capital article A, not option A
        "The correct answer is:\n\nA food chain is a sequence ...",
        "Option A is wrong because...",  # a mention, not a commitment
        "Let's check each:\nA. wrong\nB. wrong\nC. maybe\nD. wrong",  # walk through every option
        "- **A. Waterproof fur**: no\n- **B. Teeth**: yes",  # bolded walk-through
        "The answer is E",  # out of range for 4 choices
    ],
)
def test_extract_choice_letter_no_commitment(response):
    assert extract_choice_letter(response) is None, (
        f"{response!r} commits to no option; the parser must not guess from prose"
    )


def test_extract_choice_letter_n_choices():
    assert extract_choice_letter("The answer is E", n_choices=5) == "E"
    assert extract_choice_letter("The answer is E", n_choices=4) is None
    with pytest.raises(ValueError, match="n_choices"):
        extract_choice_letter("A", n_choices=1)


def test_extract_choice_letter_numeric_labels():
    # 22 ARC questions show options as 1-4; the digit k maps to the k-th letter
    assert extract_choice_letter("So, the correct answer is:\n\n2. 47", numeric=True) == "B"
    assert extract_choice_letter("The final answer is: $\\boxed{4}$", numeric=True) == "D"
    assert extract_choice_letter("The final answer is: $\\boxed{4}$") is None


def test_explicit_statement_beats_walkthrough():
    text = (
        "The correct answer is A. A southward dip in the jet stream.\n\n"
        "- **B. A northward movement**: no\n- **C. Coriolis low**: no\n- **D. Coriolis high**: no"
    )
    assert extract_choice_letter(text) == "A", (
        "an explicit 'answer is A' must beat bolded option discussion"
    )


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
        monkeypatch.setattr(scorers, "_math_verify", lambda: None)
    return request.param


def test_score_math500(math_checker):
    assert scorers.math_checker().startswith(math_checker)
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
    light = scorers.check_math_answer(response, reference, checker="normaliser")
    assert not light.correct and light.checker == "normaliser", (
        "the normaliser now gets it: pick another case"
    )
    verdict = scorers.check_math_answer(response, reference)
    assert verdict.correct and verdict.checker.startswith("math-verify ")
    assert score("math500", Item(id="m/v", prompt="?", answer=reference), response)
    assert not scorers.check_math_answer("\\boxed{4}", reference).correct


def test_math_checker_is_recorded_and_falls_back_when_math_verify_is_missing(monkeypatch):
    pytest.importorskip("math_verify", reason="math-verify is the optional extra kit[math]")
    from importlib.metadata import version

    assert scorers.math_checker() == f"math-verify {version('math-verify')}"
    # a reference math-verify cannot parse: the normaliser decides, and the verdict says so
    odd = scorers.check_math_answer("\\boxed{\\text{Monday}}", "\\text{Monday}")
    assert odd.correct and odd.checker in (
        scorers.math_checker(),
        "normaliser (math-verify could not parse the reference)",
    )
    # in a thread (no signal-based timeout there) it still decides
    import threading

    out = []
    thread = threading.Thread(
        target=lambda: out.append(scorers.check_math_answer("\\boxed{\\sqrt{12}}", "2\\sqrt{3}"))
    )
    thread.start()
    thread.join()
    assert out[0].correct
    monkeypatch.setattr(scorers, "_math_verify", lambda: None)
    assert scorers.math_checker() == "normaliser (math-verify not installed)"
    assert scorers.check_math_answer("\\boxed{0.5}", "\\frac{1}{2}") == scorers.MathVerdict(
        True, "normaliser", "0.5"
    )
    with pytest.raises(ImportError, match="kit\\[math\\]"):
        scorers.check_math_answer("\\boxed{1}", "1", checker="math-verify")
    with pytest.raises(ValueError, match="allowed values: auto, math-verify, normaliser"):
        scorers.check_math_answer("1", "1", checker="sympy")


# --- BBH ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "target, response, ok",
    [
        ("(A)", "(A)", True),
        ("(A)", "A", True),
        ("(A)", "  (A) ", True),
        ("(A)", "Let's think. So the answer is (A).", True),
        ("(A)", "So the answer is A.", True),
        ("(A)", "(B)", False),
        ("(A)", "AB", False),
        ("True", "True", True),
        ("True", "true", False),
        ("True", "So the answer is True.", True),
        ("valid", "invalid", False),
        ("24", "So the answer is 24.", True),
        ("] ) }", "So the answer is ] ) }.", True),
    ],
)
def test_bbh_match(target, response, ok):
    assert bbh_match(target, response) is ok


# --- dispatch -----------------------------------------------------------------------------------


def test_score_numeric_and_choice():
    item = Item(id="g/1", prompt="?", answer="18")
    assert score("gsm8k", item, "9 * 2 = 18\n#### 18")
    assert score("svamp", item, "The answer is 18.0")
    assert not score("gsm8k", item, "#### 17")
    mc = Item(id="a/1", prompt="?", choices=("x", "y", "z", "w"), label=2)
    assert score("arc_challenge", mc, "The answer is C")
    assert score("mmlu/anatomy", mc, "Answer: C")
    assert not score("mmlu", mc, "Answer: B")
    five = Item(id="a/2", prompt="?", choices=("a", "b", "c", "d", "e"), label=4)
    assert score("arc_challenge", five, "The answer is E"), "5-choice items must accept E"


def test_score_unknown_benchmark():
    with pytest.raises(ValueError, match="benchmark="):
        score("nope", Item(id="x", prompt="?", answer="1"), "1")


# --- code execution -----------------------------------------------------------------------------

HE_ITEM = Item(
    id="humaneval/test/HumanEval/0",
    prompt='def add(a, b):\n    """Add two numbers."""\n',
    answer="    return a + b\n",
    metadata={
        "entry_point": "add",
        "test": "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert "
        "candidate(-1, 1) == 0\n",
    },
)


def test_extract_code_fence():
    assert extract_code("Here:\n```python\nx = 1\n```\ntrailing") == "x = 1\n"
    assert extract_code("x = 2") == "x = 2"


def test_code_program_humaneval_full_function():
    prog = code_program("humaneval", HE_ITEM, "```python\ndef add(a, b):\n    return a + b\n```")
    assert "check(add)" in prog and prog.count("def add") == 2
    compile(prog, "<prog>", "exec")  # the docstring-only prompt plus a redefinition is valid Python


def test_run_program_isolation():
    assert run_program("print('ok')")
    assert not run_program("raise SystemExit(1)")
    assert not run_program("while True: pass", timeout=1.0), (
        "an infinite loop must be killed by the timeout"
    )
    assert not run_program("x = bytearray(512 << 20)", timeout=5.0, memory_mb=256), (
        "the address-space limit must stop a 512 MiB allocation under memory_mb=256"
    )
    assert run_program("x = bytearray(16 << 20)", timeout=5.0, memory_mb=256), (
        "a small allocation must still work"
    )


def test_score_code_simple():
    assert score("humaneval", HE_ITEM, "    return a + b\n")
    assert not score("humaneval", HE_ITEM, "    return a - b\n")
    assert score("humaneval", HE_ITEM, "def add(a, b):\n    return b + a\n")
    mbpp = Item(
        id="mbpp/test/1",
        prompt="Write add.",
        answer="def add(a, b):\r\n  return a + b",
        metadata={"test_list": ["assert add(1, 2) == 3"], "test_setup_code": ""},
    )
    assert score("mbpp", mbpp, "def add(a, b):\n    return a + b")
    assert not score("mbpp", mbpp, "def add(a, b):\n    return 0")
    assert not score("mbpp", mbpp, "this is not python"), (
        "a syntax error must fail, not crash the scorer"
    )


def test_score_all_pairs_and_checks_lengths():
    items = [Item(id="g/1", prompt="?", answer="1"), Item(id="g/2", prompt="?", answer="2")]
    assert score_all("gsm8k", items, ["#### 1", "#### 3"]) == [True, False]
    with pytest.raises(ValueError, match="responses has 1"):
        score_all("gsm8k", items, ["#### 1"])
