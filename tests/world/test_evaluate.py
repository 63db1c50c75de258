import numpy as np
import pytest
import torch

from kit.world.evaluate import evaluate, last_logits, prompt_tokens, respond, target_ids
from kit.world.tasks import get_task
from kit.world.tokenizer import BOS_ID, PAD_ID
from kit.world.train import Arch, collate, item_sequence, make_model


@pytest.fixture(scope="module")
def model():
    return make_model(Arch(1, 16, 2, 32), seed=0).eval()


@pytest.fixture(scope="module")
def items():
    return get_task("code").items("test", n=12) + get_task("facts").items("test", n=12)


def test_right_padding_gives_the_unpadded_logits(model, items):
    tokens, lengths = prompt_tokens(model, items)
    assert tokens.shape == (len(items), int(lengths.max()))
    assert (tokens[:, 0] == BOS_ID).all()
    assert (tokens[torch.arange(len(items)), lengths - 1] != PAD_ID).all()
    batched = last_logits(model, items, batch_size=len(items))
    for i, it in enumerate(items[:6] + items[-3:]):
        j = items.index(it)
        alone = model(model.to_tokens(it.prompt))[0, -1]
        torch.testing.assert_close(
            batched[j],
            alone.float(),
            atol=1e-4,
            rtol=1e-4,
            msg="padding leaked into the scored position",
        )


def test_evaluate_is_argmax_exact_match(model, items):
    correct = evaluate(model, items, batch_size=5)
    assert correct.dtype == np.bool_ and correct.shape == (len(items),)
    pred = last_logits(model, items).argmax(-1)
    assert (correct == (pred == target_ids(model, items)).numpy()).all()


def test_respond_matches_argmax_and_generates(model, items):
    out = respond(model, items, max_new_tokens=1)
    pred = last_logits(model, items).argmax(-1)
    assert out == [
        model.tokenizer.convert_ids_to_tokens(int(p)) if int(p) != 2 else "" for p in pred
    ]
    longer = respond(model, items[:3], max_new_tokens=3)
    assert all(len(s.split()) <= 3 for s in longer)
    with pytest.raises(ValueError, match="max_new_tokens"):
        respond(model, items, max_new_tokens=0)


def test_training_targets_are_answer_then_eos(items):
    seqs = [item_sequence(it) for it in items[:4]]
    inputs, targets, n = collate(seqs)
    for i, s in enumerate(seqs):
        taken = (targets[i] != -100).nonzero().flatten().tolist()
        assert taken == [len(s) - 3, len(s) - 2]
        assert inputs[i, len(s) - 3] == s[-3], "the answer is predicted from the last prompt token"
