"""kit.subjects.loglik against lm-evaluation-harness itself: ``loglik-text`` (chat off by default)
and :func:`lm_eval_logliks` give the log-likelihoods of lm-eval's ``hf`` model on ARC-Challenge
items (its ``Question: ...\\nAnswer:`` context, `` <option>`` continuations), within 1e-4 and with
the same choices, on a twin and on real SmolLM2; ``chat=True`` is the chat-template variant."""

from __future__ import annotations

import numpy as np
import pytest

lm_eval = pytest.importorskip(
    "lm_eval", reason="lm-evaluation-harness is the optional extra kit[lm-eval]"
)

import kit  # noqa: E402
from kit.models import generate as gen  # noqa: E402
from kit.subjects import HFSubject  # noqa: E402
from kit.subjects.loglik import lm_eval_logliks, option_logliks  # noqa: E402

TOLERANCE = 1e-4


def _lm_eval(path: str, contexts: list[str], options: list[list[str]]) -> list[np.ndarray]:
    """lm-eval's ``hf`` model (its own loading and tokenisation of the directory ``path``) asked
    for every (context, option) log-likelihood, as its ``multiple_choice`` tasks ask."""
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    lm = HFLM(pretrained=path, dtype="float32", batch_size=16, device="cpu")
    requests = [
        Instance(request_type="loglikelihood", doc={}, arguments=(c, o), idx=j)
        for c, opts in zip(contexts, options)
        for j, o in enumerate(opts)
    ]
    values = iter(ll for ll, _ in lm.loglikelihood(requests, disable_tqdm=True))
    return [np.array([next(values) for _ in opts]) for opts in options]


def _check_parity(subject: HFSubject, n: int) -> float:
    items = subject.items("arc_challenge", n=n)
    answers = subject.answer("arc_challenge", items, scoring="loglik-text")
    assert answers.chat is False, "loglik-text must not use the chat template unless asked"
    contexts = [it.prompt for it in answers.items]
    assert all(c.startswith("Question: ") and c.endswith("\nAnswer:") for c in contexts)
    options = [[f" {c}" for c in it.choices] for it in items]
    theirs = _lm_eval(subject.model.kit_path, contexts, options)
    ours = [np.array(ll) for ll in answers.extra["option_logliks"]]
    worst = max(float(np.abs(a - b).max()) for a, b in zip(ours, theirs))
    print(f"\n{subject.name}: {n} ARC items, max |loglik - lm-eval's| = {worst:.2e}")
    assert worst < TOLERANCE, (
        f"loglik-text differs from lm-eval's hf model by {worst:.3g} nats: another tokenisation "
        "(a BOS the model's tokenizer does not add, a chat template)?"
    )
    assert [int(a.argmax()) for a in ours] == [int(b.argmax()) for b in theirs]
    return worst


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_twin_loglik_text_equals_lm_eval(arch):
    # GPT-2's tokenizer adds no BOS, the Llama twin's adds one; both have a chat template
    model = kit.load_model(f"twin/{arch}")
    subject = HFSubject(f"twin/{arch}", model)
    _check_parity(subject, n=6)
    items = subject.items("arc_challenge", n=2)
    contexts = [f"Question: {it.metadata['question'].strip()}\nAnswer:" for it in items]
    options = [[f" {c}" for c in it.choices] for it in items]
    direct = lm_eval_logliks(model, contexts, options)
    # lm-eval moves a context's trailing space into the continuation
    moved = lm_eval_logliks(
        model, [c + " " for c in contexts], [[o[1:] for o in opts] for opts in options]
    )
    for a, b in zip(direct, moved):
        np.testing.assert_allclose(a, b, atol=1e-5)
    # the chat-template variant is another context: other numbers, chosen explicitly
    chat = HFSubject(f"twin/{arch}", model, chat=True).answer(
        "arc_challenge", items, scoring="loglik-text"
    )
    assert chat.chat is True
    templated = option_logliks(
        model,
        [gen.prompt_text(model.tokenizer, c, True) for c in contexts],
        [""] * len(contexts),
        options,
    )
    for a, b, c in zip(chat.extra["option_logliks"], templated, direct):
        np.testing.assert_allclose(a, b, atol=1e-5)
        assert not np.allclose(a, c, atol=1e-3)


def test_smollm2_loglik_text_equals_lm_eval():
    model = kit.load_model("real/smollm2-135m-instruct")
    _check_parity(HFSubject("real/smollm2-135m-instruct", model), n=4)
