"""App. E's LLM analysis with a scripted LLM: the paper's prompts go out, offered ids come back."""

from __future__ import annotations

import pytest

from kit.cg import llm as L

CONCEPTS = {3: "toxic language", 17: "multiplication of fractions", 40: "French cuisine"}


def scripted(answer):
    asked = []

    def llm(prompt):
        asked.append(prompt)
        return answer

    return llm, asked


def test_relevance_filter_sends_e1_and_keeps_only_offered_ids():
    llm, asked = scripted(
        'Sure:\n```json\n[{"id": 17, "description": "multiplication of fractions"}, '
        '{"id": 3, "description": "toxic language"}, {"id": 999, "description": "made up"}]\n```'
    )
    sel = L.relevant_concepts(CONCEPTS, llm)
    assert sel.ids == [17, 3] and sel.unknown == [999]
    (prompt,) = asked
    assert prompt.startswith("Below is a list of concepts in a large language model.")
    assert "*critical* to the evaluation of large language models" in prompt
    assert "\n(3) toxic language\n(17) multiplication of fractions\n(40) French cuisine" in prompt
    assert prompt.endswith("[] if none is relevant.")


def test_per_benchmark_prompt_and_plain_list_answers():
    llm, asked = scripted("(17) multiplication of fractions\n- 40: French cuisine\nnothing else")
    sel = L.relevant_concepts(
        CONCEPTS, llm, benchmark="GSM8K", definition="grade-school math word problems"
    )
    assert sel.ids == [17, 40]
    assert "*absolutely critical* for the evaluation of the GSM8K benchmark" in asked[0]
    assert "BENCHMARK DEFINITION: grade-school math word problems" in asked[0]
    assert L.relevant_concepts(CONCEPTS, scripted("[]")[0]).ids == []
    with pytest.raises(ValueError, match="benchmark and definition go together"):
        L.relevant_concepts(CONCEPTS, llm, benchmark="GSM8K")
    with pytest.raises(ValueError, match="concepts is empty"):
        L.relevant_concepts({}, llm)


def test_matching_caps_each_category_and_drops_unknown_ids():
    llm, asked = scripted('{"toxicity": [3, 5], "math": [17, 40, 3], "geography": []}')
    matched, sel = L.match_categories(
        CONCEPTS, ["toxicity", "math", "cooking"], llm, "garak", limit=2
    )
    assert matched == {"toxicity": [3], "math": [17, 40], "cooking": []}
    assert sel.unknown == [5] and sel.ids == [3, 17, 40]
    assert (
        "only the top 2 most representative" in asked[0]
        and "(2) garak CONCEPTS: \n- toxicity" in asked[0]
    )
    with pytest.raises(ValueError, match="not a JSON object"):
        L.match_categories(CONCEPTS, ["math"], scripted("no idea")[0], "garak")
