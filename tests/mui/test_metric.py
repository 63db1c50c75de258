"""Tests of kit.mui.metric: the MUI denominator, streaming (against kit.mui.key_neurons' dense
masks) and token-budget batches, the public code's key neurons and the items' tokens."""

from __future__ import annotations

import pytest
import torch

import kit.mui.key_neurons as kn
import kit.mui.metric as mui
from kit.models.load import random_model
from kit.mui import sae as mui_sae
from kit.mui import scores as mui_scores


def test_bad_inputs_name_the_field():
    model = random_model("tiny-gelu")
    with pytest.raises(ValueError, match="score="):
        mui_scores.neuron_scores(model, torch.zeros(1, 4, dtype=torch.long), score="attribution")
    with pytest.raises(ValueError, match="seq >= 2"):
        mui_scores.neuron_scores(model, torch.zeros(1, 1, dtype=torch.long))
    with pytest.raises(ValueError, match="threshold="):
        kn.key_neuron_mask(torch.zeros(1, 1, 1, 4), threshold="top")


def test_mui_denominator_is_layers_times_width():
    mask = torch.zeros(2, 4, dtype=torch.bool)
    mask[0, :2] = True
    mask[1, 3] = True
    assert mui.mui_of_mask(mask) == pytest.approx(100 * 3 / 8)


@pytest.mark.parametrize("threshold", kn.THRESHOLDS)
@pytest.mark.parametrize("score", ["score", "activate", "score_sum", "activate_sum"])
def test_streaming_utilization_equals_dense_masks(threshold, score):
    model = random_model("tiny-gated")
    tokens = torch.randint(0, 97, (5, 8))
    resp = torch.zeros_like(tokens, dtype=torch.bool)
    resp[:, 5:] = True
    resp[3, 4] = True
    res = mui.utilization(
        model,
        tokens,
        resp,
        score=score,
        threshold=threshold,
        batch_size=2,
        k=2 if threshold != "topscore" else None,
    )
    dense = mui_scores.neuron_scores(model, tokens, score.split("_")[0])
    pos = resp[:, 1:]
    if score.endswith("_sum"):
        dense, pos = kn.response_scores(dense, pos), None
    want = kn.key_neuron_mask(
        dense, threshold, k=2 if threshold != "topscore" else None, response_mask=pos
    )
    assert torch.equal(res.mask, want), (
        f"streamed {threshold}/{score} mask differs from the dense one"
    )


@pytest.mark.parametrize(
    "kwargs", [dict(score=s) for s in mui_scores.SCORES] + [dict(variant="public_code", k=2)]
)
def test_every_mui_variant_is_padding_invariant(kwargs):
    model = random_model("tiny-gated")
    short = torch.randint(1, 97, (1, 5))
    batch = torch.cat(
        [torch.cat([short, torch.zeros(1, 4, dtype=torch.long)], 1), torch.randint(1, 97, (1, 9))]
    )
    m_short = torch.tensor([[False, False, False, True, True]])
    m_batch = torch.zeros(2, 9, dtype=torch.bool)
    m_batch[0, :5] = m_short[0]
    m_batch[1, 4:] = True
    alone = mui.utilization(model, short, m_short, per_sample=True, **kwargs)
    together = mui.utilization(model, batch, m_batch, per_sample=True, **kwargs)
    assert torch.equal(alone.sample_masks[0], together.sample_masks[0]), (
        f"{kwargs}: key neurons depend on padding"
    )


def _ragged_batch(n: int = 7, width: int = 12, seed: int = 0):
    """Right-padded rows of different lengths, a response at the end of each (one row without
    any)."""
    g = torch.Generator().manual_seed(seed)
    tokens = torch.zeros(n, width, dtype=torch.long)
    mask = torch.zeros(n, width, dtype=torch.bool)
    for i in range(n):
        length = int(torch.randint(3, width + 1, (1,), generator=g))
        tokens[i, :length] = torch.randint(1, 97, (length,), generator=g)
        if i != 2:  # row 2: prompt only
            mask[i, length - 1 - int(torch.randint(0, 2, (1,), generator=g)) : length] = True
    return tokens, mask


def test_token_budget_chunks_cover_every_row_once_within_the_budget():
    tokens, mask = _ragged_batch()
    seen = []
    for idx, chunk, cmask in mui.token_budget_chunks(tokens, mask, max_batch_tokens=20):
        seen += idx.tolist()
        assert chunk.shape == cmask.shape
        assert len(idx) == 1 or chunk.numel() <= 20, (
            "a batch of several rows stays within the budget"
        )
        assert torch.equal(chunk, tokens[idx, : chunk.shape[1]]) and torch.equal(
            cmask, mask[idx, : chunk.shape[1]]
        )
        assert not mask[idx, chunk.shape[1] :].any(), "no response token is cut off"
    assert sorted(seen) == list(range(len(tokens)))


@pytest.mark.parametrize(
    "kwargs",
    [dict(score=s) for s in mui_scores.SCORES]
    + [dict(threshold="global_topk"), dict(variant="public_code", k=2)],
)
def test_token_budget_gives_the_same_key_neurons_as_row_batches(kwargs):
    model = random_model("tiny-gated")
    tokens, mask = _ragged_batch()
    rows = mui.utilization(model, tokens, mask, per_sample=True, batch_size=3, **kwargs)
    budget = mui.utilization(model, tokens, mask, per_sample=True, max_batch_tokens=20, **kwargs)
    assert torch.equal(rows.sample_masks, budget.sample_masks), (
        f"{kwargs}: per-sample key neurons differ"
    )
    assert (
        torch.equal(rows.mask, budget.mask)
        and rows.mui == budget.mui
        and rows.per_sample == budget.per_sample
    )
    assert not budget.sample_masks[2].any(), "the prompt-only row has no key neuron"


def test_sae_utilization_token_budget_equals_row_batches():
    from sae_lens import StandardSAE, StandardSAEConfig

    model = random_model("tiny-gelu")
    sae = StandardSAE(StandardSAEConfig(d_in=32, d_sae=16))
    with torch.no_grad():
        sae.W_enc.copy_(torch.randn(32, 16))
    tokens, mask = _ragged_batch()
    saes = {"blocks.1.hook_resid_post": sae}
    rows = mui_sae.sae_utilization(
        model, saes, tokens, mask, top=2, reference_width=None, batch_size=2
    )
    budget = mui_sae.sae_utilization(
        model, saes, tokens, mask, top=2, reference_width=None, max_batch_tokens=16
    )
    assert rows.mask.any() and torch.equal(rows.mask, budget.mask)


def test_public_code_key_neurons_by_hand():
    s = torch.tensor([[1.0, 5.0, 0.0], [4.0, 2.0, 0.0]])
    assert mui.public_code_key_neurons(s, 2).tolist() == [True, True, False], (
        "top-2 entries: 5 (n1), 4 (n0)"
    )
    assert mui.public_code_key_neurons(s, 2, n_gpus=2).tolist() == [False, True, False], (
        "two GPUs duplicate every entry: the top-2 entries are 5 and its copy, one neuron"
    )
    same = torch.tensor([[5.0, 0.0, 0.0], [4.0, 1.0, 0.0]])
    assert mui.public_code_key_neurons(same, 2).tolist() == [True, False, False], (
        "top-k over the whole response: a neuron that wins at two positions fills both slots"
    )
    assert (mui.public_code_k(14336), mui.public_code_k(18944), mui.public_code_k(512)) == (
        14,
        18,
        0,
    )
    assert (kn.default_k(18944), kn.default_k(512)) == (19, 1), (
        "the paper's k rounds and is at least 1"
    )


def test_item_tokens_marks_exactly_the_response_words():
    from kit.data.items import Item
    from kit.world.train import Arch, make_model

    # random weights, the world's tokenizer: no built world needed
    model = make_model(Arch(1, 16, 2, 32), seed=0)
    items = [
        Item("a", "tom has 3 apples . how many apples does tom have ?", answer="3"),
        Item("b", "how many apples ?", answer="4"),
    ]
    tokens, mask = mui.item_tokens(model, items, ["3", ""])
    vocab = model.tokenizer.get_vocab()
    n0 = 1 + len(items[0].prompt.split())
    assert tokens[0, 0] == vocab["<bos>"] and tokens[0, n0] == vocab["3"]
    assert mask[0].nonzero().flatten().tolist() == [n0], (
        "only the response token is a response position"
    )
    assert not mask[1].any(), "an empty response has no response token"
    res = mui.utilization(model, tokens, mask, per_sample=True)
    assert res.per_sample[1] == 0.0 and res.mask.sum() == 1, (
        "one response token, one layer, k=1: one key neuron"
    )


def test_public_code_rows_add_a_bos_after_a_templates_own():
    """The public code tokenises its prompt text with the tokenizer's default special
    tokens, so a template that writes its BOS (here the ``mistral`` text ``<s>[INST] ...``) starts
    with two; kit's rows start with one."""
    from types import SimpleNamespace

    import kit
    from kit.models.rows import teacher_forced_rows

    model = kit.load_model("twin/llama")
    tok, bos = model.tokenizer, model.tokenizer.bos_token_id
    prompt, response = "What is 2 + 2?", " 4, since 2 + 2 = 4"
    ((ids, n),) = mui.public_code_rows(model, [prompt], [response], template="mistral")
    text = f"<s>[INST] {prompt} [/INST]"
    assert ids[:2] == [bos, bos] and ids == tok(text + response)["input_ids"]
    assert n == len(tok(text)["input_ids"]) and tok.decode(ids[n:]) == response
    ((kit_ids, _),) = teacher_forced_rows(model, [text], [response], chat=False)
    assert kit_ids[:2] != [bos, bos], "kit writes no second BOS after the template's own"
    # the twin's chat template writes no BOS: there both build the same rows
    rows = mui.public_code_rows(model, [prompt], [response])
    assert rows == teacher_forced_rows(model, [prompt], [response], chat=None)
    # the public code's pipeline as it ran: its rows and its scoring
    items = [SimpleNamespace(prompt=prompt)]
    public = mui.utilization_for_items(
        model,
        items,
        [response],
        prompts="public_code",
        template="mistral",
        variant="public_code",
        k=1,
        per_sample=True,
    )
    assert public.n_samples == 1 and 0 < public.mui <= 100
    with pytest.raises(ValueError, match="prompts='vllm'; allowed values: kit, public_code"):
        mui.utilization_for_items(model, items, [response], prompts="vllm")
    with pytest.raises(ValueError, match="template='llama2'; allowed values: chat, plain, llama3"):
        mui.public_code_rows(model, [prompt], [response], template="llama2")
    with pytest.raises(ValueError, match="item 0: .* exceed the model's context"):
        mui.public_code_rows(model, [prompt], [response * 200])
