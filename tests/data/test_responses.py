"""The parse rule of kit.data.responses on hand-written responses, and sanity on the real files."""

from __future__ import annotations

import numpy as np
import pytest

from kit.core.paths import DataError
from kit.data import responses as cr

ABCD = ["A", "B", "C", "D"]
OPTS = ["Planetary density will decrease.", "78°F", "Planetary days will become shorter.", "7"]


@pytest.mark.parametrize(
    "response, expected",
    [
        ("C", "C"),
        ("The answer is (B).", "B"),
        ("The most likely effect would be:\n\nC. Planetary days will become shorter.", "C"),
        ("Option A is wrong. Option B is wrong.\n\nThe final answer is: $\\boxed{D}$", "D"),
        ("I am not sure.", None),
    ],
)
def test_arc_prediction_letters(response, expected):
    assert cr.arc_prediction(response, ABCD) == expected


def test_arc_prediction_boxed_option_text_fallback():
    assert (
        cr.arc_prediction("so it is warm.\n\nThe final answer is: $\\boxed{78}$", ABCD, OPTS) == "B"
    ), "a boxed option text ('78' for '78°F') should select that option"
    # '7' is the whole text of option D and a prefix of '78°F' only when followed by a digit: D only
    assert cr.arc_prediction("The final answer is: $\\boxed{7}$", ABCD, OPTS) == "D"
    assert cr.arc_prediction("The final answer is: $\\boxed{13}$", ABCD, OPTS) is None, (
        "a boxed value matching no option must count as no answer"
    )


def test_arc_numeric_labels_map_to_letters():
    labels = ["1", "2", "3", "4"]
    assert cr.arc_reference("3", labels) == "C"
    assert cr.arc_prediction("The answer is 3.", labels) == "C"
    with pytest.raises(ValueError, match="not among"):
        cr.arc_reference("E", labels)


@pytest.mark.parametrize(
    "response, expected",
    [
        ("\n\nAnswer: 16 - 3 - 4 = 9 eggs. 9 * 2 = 18 dollars.", "18"),
        (
            "\n\nAnswer: So the answer is $1,000.\n\nQuestion: Tom has 3 apples. Answer: 3 + 4 = 7",
            "1000",
        ),
        ("\n\nAnswer: she earns \\$10.", "10"),
        ("no idea", None),
    ],
)
def test_gsm8k_prediction_cuts_next_turn(response, expected):
    assert cr.gsm8k_prediction(response) == expected, (
        "a base model's run-on 'Question:' turn must be cut before taking the final number"
    )


def test_gsm8k_reference():
    assert cr.gsm8k_reference("She makes 9 * 2 = $18.\n#### 1,018") == "1018"
    with pytest.raises(ValueError, match="####"):
        cr.gsm8k_reference("no marker")


def test_unknown_response_set_names_allowed_values():
    with pytest.raises(ValueError, match="allowed values"):
        cr.load_responses("arc/gpt-5")


def _load_or_skip(name, **kw):
    try:
        return cr.load_responses(name, **kw)
    except DataError as e:  # the shared data directory is not mounted
        pytest.skip(f"data directory unavailable: {e}")


@pytest.mark.parametrize(
    "name, n, lo, hi",
    [
        ("arc/llama3.1-8b-instruct", 1172, 0.75, 0.92),
        ("arc/qwen2.5-7b-instruct", 1172, 0.80, 0.95),
        ("gsm8k/gemma2-9b-base", 1319, 0.55, 0.75),
    ],
)
def test_real_files_counts_and_plausible_accuracy(name, n, lo, hi):
    s = _load_or_skip(name)
    assert len(s.ids) == len(s.prompts) == len(s.responses) == len(s.correct) == n
    assert lo <= s.accuracy <= hi, (
        f"{name}: accuracy {s.accuracy:.3f} outside the plausible [{lo}, {hi}]; parse rule broken?"
    )
    assert s.parse_rate > 0.95, f"{name}: only {s.parse_rate:.1%} of responses parsed"
    assert set(np.unique(s.scores)) <= {0.0, 1.0}


def test_real_file_first_arc_item_is_correct_and_texts_include_response():
    s = _load_or_skip("arc/qwen2.5-7b-instruct", limit=3)
    assert len(s.ids) == 3 and s.references[0] == "C" and s.predictions[0] == "C" and s.correct[0]
    text = s.texts()[0]
    assert text.startswith(s.prompts[0]) and s.responses[0].strip()[:20] in text
    assert s.texts(include_response=False)[0] == s.prompts[0]
