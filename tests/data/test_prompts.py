"""Answer-format instructions: the lm-eval templates word for word, option counts per item, the
plain style unchanged, cache keys that separate styles, and parse failures by hand."""

from __future__ import annotations

import pytest

from kit.data import prompts as P
from kit.data.items import Item
from kit.data.scorers import parse_failed, score

ARC = Item(
    "arc/test/1",
    "Which is a metal?\nA. wood\nB. iron\nC. glass\nD. salt",
    choices=("wood", "iron", "glass", "salt"),
    label=1,
    metadata={"question": "Which is a metal?"},
)
GSM = Item("gsm8k/test/0", "Tom has 3 apples and buys 2. How many?", answer="5")


def test_arc_instruction_is_lm_eval_llama3_word_for_word():
    got = P.instructed("arc_challenge", ARC).prompt
    assert got == (
        "Given the following question and four candidate answers (A, B, C and D), "
        "choose the best answer.\n"
        "Question: Which is a metal?\nA. wood\nB. iron\nC. glass\nD. salt\n"
        'Your response should end with "The best answer is [the_answer_letter]" where the '
        "[the_answer_letter] is one of A, B, C or D."
    )
    assert "lm-eval llama3" in P.INSTRUCTIONS["arc_challenge"].source


def test_option_count_follows_the_item_and_mmlu_has_no_question_label():
    three = Item("a", "Q?\nA. x\nB. y\nC. z", choices=("x", "y", "z"), label=0)
    got = P.instructed("mmlu/anatomy", three).prompt
    assert got.startswith(
        "Given the following question and three candidate answers (A, B and C), choose the best "
        "answer.\nQ?\nA. x"
    ) and got.endswith("is one of A, B or C.")
    assert P.choice_words(5) == {
        "n": "five",
        "letters_and": "A, B, C, D and E",
        "letters_or": "A, B, C, D or E",
    }


def test_gsm8k_instruction_and_what_stays():
    got = P.instructed("gsm8k", GSM)
    assert got.prompt == (
        "Given the following problem, reason and give a final answer to the problem.\nProblem: "
        'Tom has 3 apples and buys 2. How many?\nYour response should end with "The final answer '
        'is [answer]" where [answer] is the response to the problem.'
    )
    assert (got.id, got.target, got.metadata["plain_prompt"]) == (GSM.id, "5", GSM.prompt)
    tiny = Item("tiny/add/test/0", "alice has 3 ; 4 more ; total", answer="7")
    assert P.instructed("tiny/add", tiny) is tiny, "the world's fixed format is never instructed"
    assert P.instructed_items("gsm8k", [GSM], "plain") == [GSM]
    with pytest.raises(ValueError, match="allowed: instructed, plain"):
        P.instructed_items("gsm8k", [GSM], "chatty")


def test_mixed_benchmarks_choose_per_item():
    yes_no = Item("logicbench/bqa/0", "If p then q. p. Does q hold?", answer="yes")
    assert P.instruction_for("logicbench", yes_no).tail.startswith('\nAnswer "yes" or "no"')
    cloze = Item("agieval/math/0", "Compute 2+2.", answer="4")
    assert "final answer is" in P.instructed("agieval/math", cloze).prompt
    assert P.instruction_for("lmsys_arena", Item("x", "hi")) is None


def test_instructed_responses_are_cached_apart_from_plain_ones():
    assert P.prompt_key("gsm8k", "plain") == "gsm8k"
    key = P.prompt_key("gsm8k", "instructed")
    assert key.startswith("gsm8k+instructed-") and key != P.prompt_key(
        "arc_challenge", "instructed"
    )
    assert P.prompt_key("tiny/add", "instructed") == "tiny/add"


@pytest.mark.parametrize(
    "benchmark,item,response,failed,correct",
    [
        ("arc_challenge", ARC, "The best answer is B", False, True),
        # prose: no letter
        (
            "arc_challenge",
            ARC,
            "Iron is a metal because it conducts.",
            True,
            False,
        ),
        # repeats the options: commits to none
        (
            "arc_challenge",
            ARC,
            "A. wood\nB. iron\nC. glass",
            True,
            False,
        ),
        ("arc_challenge", ARC, "The best answer is A", False, False),  # parsed, wrong
        ("gsm8k", GSM, "3 + 2 = 5. The final answer is 5", False, True),
        ("gsm8k", GSM, "I do not know.", True, False),
        ("bbh/navigate", Item("b", "q", answer="Yes"), "", True, False),
        ("math500", Item("m", "q", answer="\\frac{1}{2}"), "so \\boxed{\\frac12}", False, True),
        ("math500", Item("m", "q", answer="2"), "no idea", True, False),
        ("logicbench/bqa", Item("l", "q", answer="no"), "Yes, it follows.", False, False),
        ("logicbench/bqa", Item("l", "q", answer="no"), "It depends.", True, False),
        (
            "mbpp",
            Item("p", "q", answer="", metadata={"test_list": [], "test_setup_code": ""}),
            "   ",
            True,
            None,
        ),
        ("tiny/add", Item("t", "q", answer="7"), "", True, False),
    ],
)
def test_parse_failures_by_hand(benchmark, item, response, failed, correct):
    assert parse_failed(benchmark, item, response) is failed
    if correct is not None:
        assert score(benchmark, item, response) is correct
    assert not (failed and correct), "a parse failure is never scored correct"


def test_benchmarks_without_a_rule_are_refused():
    with pytest.raises(ValueError, match="no rule-based scorer"):
        parse_failed("vectara_hallucination", Item("v", "q"), "a summary")
