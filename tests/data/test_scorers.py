"""Answer extraction and scoring on hand-written responses (kit.data.scorers: choice letters,
BBH answers, the per-benchmark dispatch)."""

from __future__ import annotations

import pytest

from kit.data.items import Item
from kit.data.scorers import (
    bbh_match,
    extract_choice_letter,
    score,
    score_all,
)

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


def test_score_all_pairs_and_checks_lengths():
    items = [Item(id="g/1", prompt="?", answer="1"), Item(id="g/2", prompt="?", answer="2")]
    assert score_all("gsm8k", items, ["#### 1", "#### 3"]) == [True, False]
    with pytest.raises(ValueError, match="responses has 1"):
        score_all("gsm8k", items, ["#### 1"])


def test_agieval_cloze_items_use_math_verify_and_fall_back_without_it(monkeypatch):
    """AGIEval's cloze (math) items: symbolic equality with math-verify, the normaliser's numeric
    equality without it (so the scorer follows kit.data.math_answers' view of what is installed)."""
    from kit.data import math_answers

    item = Item("agieval/math/0", "Compute 1/2.", answer="\\frac{1}{2}")
    assert score("agieval", item, "so \\boxed{0.5}") and not score("agieval", item, "\\boxed{2}")
    if math_answers.has_math_verify():  # only math-verify equates surds
        surd = Item("agieval/math/1", "Simplify.", answer="2\\sqrt{3}")
        assert score("agieval", surd, "\\boxed{\\sqrt{12}}")
    monkeypatch.setattr(math_answers, "_math_verify", lambda: None)
    assert not math_answers.has_math_verify()
    assert score("agieval", item, "the answer is 0.5") and not score("agieval", item, "3")
    surd = Item("agieval/math/1", "Simplify.", answer="2\\sqrt{3}")
    assert not score("agieval", surd, "\\boxed{\\sqrt{12}}")
