"""The Hugging Face subject on twins: instructed items, generation cached apart per prompt style,
scores, parse failures, truncation against the generated token ids, option log-likelihoods against
transformers, and MUI equal to the one-batch path."""

from __future__ import annotations

import pytest
import torch

from kit.data.items import Item
from kit.data.prompts import instructed
from kit.data.scorers import score
from kit.models import generate as gen
from kit.mui import metric as kmui
from kit.mui.metric import per_item_key_neurons, subject_mui
from kit.subjects import HFSubject, load_subject, subject_of

MC = [
    Item(
        f"mc{i}",
        f"Which number is {i}?\nA. {i}\nB. {i + 1}\nC. {i + 2}",
        choices=(str(i), str(i + 1), str(i + 2)),
        label=0,
        metadata={"question": f"Which number is {i}?"},
    )
    for i in range(3)
]


@pytest.fixture(scope="module")
def llama():
    return load_subject("twin/llama")


@pytest.fixture
def own_cache(llama, tmp_path, monkeypatch):
    """Response and key-neuron caches in ``tmp_path`` (after the twin is found in the usual
    cache)."""
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_items_are_instructed_or_plain_and_world_tasks_refused(llama):
    inst = llama.items("arc_challenge", n=2)
    plain = HFSubject("twin/llama", llama.model, prompt_style="plain").items("arc_challenge", n=2)
    assert (
        inst[0].prompt.startswith("Given the following question")
        and plain[0].prompt == inst[0].metadata["plain_prompt"]
    )
    assert [it.id for it in inst] == [it.id for it in plain]
    with pytest.raises(ValueError, match="tiny-world task.*tiny/add"):
        llama.items("add")
    with pytest.raises(ValueError, match="allowed: instructed, plain"):
        load_subject("twin/llama", prompt_style="fancy")


def test_answers_score_parse_and_truncation_by_the_generated_ids(llama, own_cache):
    items = llama.items("gsm8k", n=4)
    ans = llama.answer("gsm8k", items, max_new_tokens=6)
    assert ans.responses == gen.respond(
        llama.model, [it.prompt for it in items], gen.GenerationSettings(max_new_tokens=6)
    )
    assert ans.correct.tolist() == [score("gsm8k", it, r) for it, r in zip(items, ans.responses)]
    assert ans.prompt_style == "instructed" and ans.chance is None and ans.max_new_tokens == 6
    # truncated = the generation hit the budget without an end token: check against the ids
    # themselves
    model, tok = gen.hf_model(llama.model.kit_path)
    for it, flag in zip(items, ans.truncated):
        ids = torch.tensor([gen.encode(tok, gen.prompt_text(tok, it.prompt, True))])
        out = model.generate(ids, max_new_tokens=6, do_sample=False, pad_token_id=tok.pad_token_id)[
            0, ids.shape[1] :
        ]
        hit_budget = len(out) == 6 and tok.eos_token_id not in out.tolist()
        assert bool(flag) == hit_budget
    fake = llama.score("gsm8k", items[:2], ["The final answer is 5", "no idea"], max_new_tokens=50)
    assert fake.parse_failed.tolist() == [False, True] and fake.truncated.tolist() == [False, False]


def test_instructed_and_plain_responses_are_cached_apart(llama, own_cache):
    plain = HFSubject("twin/llama", llama.model, prompt_style="plain")
    a = plain.answer("gsm8k", plain.items("gsm8k", n=2), max_new_tokens=3)
    b = llama.answer("gsm8k", llama.items("gsm8k", n=2), max_new_tokens=3)
    keys = sorted(p.name for p in (own_cache / "items").glob("*.jsonl"))
    assert len(keys) == 2, "one response cache per prompt style"
    assert a.prompt_style == "plain" and b.prompt_style == "instructed"


def _reference_loglik(path, text_context, option):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path).eval()
    head = gen.encode(tok, text_context)
    ids = gen.encode(tok, text_context + option)
    with torch.no_grad():
        logp = model(torch.tensor([ids])).logits[0].float().log_softmax(-1)
    return float(sum(logp[p - 1, ids[p]] for p in range(len(head), len(ids))))


@pytest.mark.parametrize("scoring", ["loglik-letter", "loglik-text"])
def test_option_logliks_equal_transformers(llama, own_cache, scoring):
    # short: the twin's context is 256 tokens
    items = [instructed("arc_challenge", it) for it in MC]
    ans = llama.answer("arc_challenge", items, scoring=scoring, max_batch_tokens=64)
    tok = llama.model.tokenizer
    for it, shown, lls in zip(items, ans.items, ans.extra["option_logliks"]):
        for j, ll in enumerate(lls):
            if scoring == "loglik-letter":
                context = gen.prompt_text(tok, it.prompt, True) + "The best answer is"
                option = f" {'ABCDE'[j]}"
            else:
                # lm-eval's format: no chat template (HFSubject.chat=None means none here)
                context = f"Question: {it.metadata['question'].strip()}\nAnswer:"
                option = f" {it.choices[j]}"
                assert shown.prompt.startswith("Question: ")
            assert ll == pytest.approx(
                _reference_loglik(llama.model.kit_path, context, option), abs=2e-3
            )
    chosen = [max(range(len(ll)), key=ll.__getitem__) for ll in ans.extra["option_logliks"]]
    assert ans.correct.tolist() == [c == it.label for c, it in zip(chosen, items)]
    assert (
        ans.n_parse_failed == 0
        and ans.scoring == scoring
        and ans.chance == pytest.approx(ans.chance)
    )
    with pytest.raises(ValueError, match="needs multiple-choice items"):
        llama.answer("gsm8k", llama.items("gsm8k", n=1), scoring=scoring)
    if scoring == "loglik-letter":  # a long instructed ARC prompt is cut as generation cuts it
        with pytest.warns(UserWarning, match="cut from the left"):
            assert (
                llama.answer("arc_challenge", llama.items("arc_challenge", n=1), scoring=scoring).n
                == 1
            )


def test_mui_equals_the_one_batch_path_and_reruns_read_the_cache(llama, own_cache, monkeypatch):
    items = [
        Item("a", "Question: 12 + 30 =", answer="42"),
        Item("b", "Sort the words: pear apple", answer="apple pear"),
        Item("c", "True and not", answer="False"),
    ]
    ans = llama.score(
        "tiny/add", items, [" 42. The answer is 42.", " apple pear", ""], max_new_tokens=8
    )
    one_batch = kmui.utilization_for_items(llama.model, ans.items, ans.responses).mui
    assert subject_mui(llama, ans, max_batch_tokens=1) == pytest.approx(one_batch, abs=1e-9)
    monkeypatch.setattr(
        kmui, "utilization", lambda *a, **k: (_ for _ in ()).throw(AssertionError("recomputed"))
    )
    assert subject_mui(llama, ans) == pytest.approx(one_batch, abs=1e-9)
    keys = per_item_key_neurons(llama, ans)
    assert len(keys) == 3 and keys[2] == [], "an empty response has no key neuron"


def test_a_model_without_a_hugging_face_directory_is_no_subject():
    import kit

    with pytest.raises(ValueError, match="cannot generate"):
        subject_of(kit.load_model("random/tiny-gelu"))


def test_generation_is_one_batched_greedy_call_keyed_by_benchmark_and_ids(monkeypatch, llama):
    """Every item's prompt goes to kit.models.generate.respond at once (batched, greedy, cached
    under the benchmark, its prompt style and the item ids); responses are scored by
    kit.data.scorers (gsm8k: the last number)."""
    calls = []

    def respond(model, prompts, settings, benchmark=None, ids=None, **kw):
        calls.append((list(prompts), settings, benchmark, list(ids)))
        return ["100 8", "100 8"]

    monkeypatch.setattr(gen, "respond", respond)
    plain = HFSubject("twin/llama", llama.model, prompt_style="plain")
    items = [Item("q1", "two plus 6 is", answer="8"), Item("q2", "a b c d e", answer="100")]
    ans = plain.answer("gsm8k", items, max_new_tokens=2)
    ((prompts, settings, benchmark, ids),) = calls
    assert (
        prompts == ["two plus 6 is", "a b c d e"] and ids == ["q1", "q2"] and benchmark == "gsm8k"
    )
    assert settings.max_new_tokens == 2 and settings.do_sample is False, "answers must be greedy"
    assert ans.responses == ["100 8", "100 8"] and ans.correct.tolist() == [True, False]
