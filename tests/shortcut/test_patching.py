"""kit.shortcut.patching: dynamic neuron patching during generation (seed 001, section 3.3)."""

from __future__ import annotations

import copy

import pytest
import torch

from kit.models.load import random_model
from kit.shortcut import patching as pt

SHAPES = ["tiny-gelu", "tiny-gated"]


def _prompts(n=4, pos=7, seed=0):
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(4, 97, (n, pos), generator=g)
    lengths = torch.tensor([pos, 3, 5, 6][:n])
    tokens = tokens * pt.mask_from_lengths(lengths, pos)  # right padding with id 0
    return tokens, lengths


def _naive_greedy(model, prompt: torch.Tensor, n: int) -> torch.Tensor:
    """Reference: recompute the whole unpadded sequence every step, no cache."""
    seq = prompt[None]
    for _ in range(n):
        seq = torch.cat([seq, model(seq)[:, -1].argmax(-1)[:, None]], 1)
    return seq[0, len(prompt) :]


def _new(out, lengths, n):
    return torch.stack([out[i, length : length + n] for i, length in enumerate(lengths.tolist())])


@pytest.mark.parametrize("shape", SHAPES)
def test_plain_generation_equals_naive_greedy_per_row(shape):
    model = random_model(shape, seed=1)
    tokens, lengths = _prompts()
    out = pt.generate(model, tokens, 6, lengths=lengths)
    assert out.shape == (4, 7 + 6)
    for i, prompt_len in enumerate(lengths.tolist()):
        want = _naive_greedy(model, tokens[i, :prompt_len], 6)
        assert torch.equal(out[i, prompt_len : prompt_len + 6], want), (
            f"row {i} (length {prompt_len}) differs from unpadded greedy decoding: padding or the "
            "KV cache changes the computation (did right padding get re-aligned to the left?)"
        )
        assert (out[i, prompt_len + 6 :] == 0).all(), (
            "right-padded output must be prompt, new tokens, then pads"
        )


@pytest.mark.parametrize("shape", SHAPES)
def test_identity_patching_is_exactly_plain_greedy(shape):
    model = random_model(shape, seed=1)
    tokens, lengths = _prompts()
    plain = pt.generate(model, tokens, 6, lengths=lengths)
    neurons = [(0, 1), (1, 5), (1, 63), (0, 40)]
    assert torch.equal(
        pt.patched_generate(model, model, tokens, neurons, 6, lengths=lengths), plain
    )
    assert torch.equal(
        pt.patched_generate(model, random_model(shape, seed=9), tokens, [], 6, lengths=lengths),
        plain,
    )
    # A separate copy computes bit-identical values: patching them in must change nothing.
    twin = copy.deepcopy(model)
    got = pt.patched_generate(model, twin, tokens, neurons, 6, lengths=lengths)
    assert torch.equal(got, plain), (
        "patching with an identical model changed the output: the hook "
        "writes values from the wrong rows/positions or the two KV caches are out of step"
    )


@pytest.mark.parametrize("shape", SHAPES)
def test_left_and_right_padding_give_the_same_continuations(shape):
    model, other = random_model(shape, seed=1), random_model(shape, seed=2)
    tokens, lengths = _prompts()
    mask = pt.mask_from_lengths(lengths, tokens.shape[1])
    left_tok, left_mask = pt._right_to_left(tokens, lengths), pt._right_to_left(mask, lengths)
    neurons = [(0, i) for i in range(0, 64, 3)]
    right = pt.patched_generate(model, other, tokens, neurons, 5, attention_mask=mask)
    left = pt.patched_generate(model, other, left_tok, neurons, 5, attention_mask=left_mask)
    assert torch.equal(_new(right, lengths, 5), left[:, -5:])
    assert torch.equal(left[:, :7], left_tok), (
        "left-padded output must start with the left-padded prompt"
    )


@pytest.mark.parametrize("shape", SHAPES)
def test_dynamic_patching_matches_recomputation_with_static_patch(shape):
    """The KV-cache loop must equal: at each step, run the patching model on the whole current
    sequence and the patched model on it with those neurons overwritten at every position."""
    model, base = random_model(shape, seed=1), random_model(shape, seed=2)
    neurons = [(0, i) for i in range(16)] + [(1, i) for i in range(8, 40)]
    tokens, lengths = _prompts()
    out = pt.patched_generate(model, base, tokens, neurons, 5, lengths=lengths)
    plain = pt.generate(model, tokens, 5, lengths=lengths)
    assert not torch.equal(out, plain), (
        "patching 48 neurons with another model's values changed nothing"
    )
    for i, prompt_len in enumerate(lengths.tolist()):
        seq = tokens[i, :prompt_len][None]
        for _ in range(5):
            _, cache = base.run_with_cache(seq, names_filter=lambda n: n.endswith("mlp.hook_post"))
            hooks = []
            for L in (0, 1):
                idx = [n for (lay, n) in neurons if lay == L]

                def hook(act, hook, L=L, idx=idx):
                    act[..., idx] = cache[pt.hook_name(L)][..., idx]
                    return act

                hooks.append((pt.hook_name(L), hook))
            nxt = model.run_with_hooks(seq, fwd_hooks=hooks)[:, -1].argmax(-1)
            seq = torch.cat([seq, nxt[:, None]], 1)
        assert torch.equal(out[i, prompt_len : prompt_len + 5], seq[0, prompt_len:]), (
            f"row {i}: dynamic patching != recomputation"
        )


def test_groups_in_batch_rows_equal_serial_patching():
    model, base = random_model("tiny-gelu", seed=1), random_model("tiny-gelu", seed=2)
    tokens, lengths = _prompts()
    groups = [[(L, i) for i in range(s, s + 16)] for L in (0, 1) for s in range(0, 64, 16)] + [[]]
    together = pt.group_patched_generate(
        model, base, tokens, groups, 4, lengths=lengths, max_rows=12
    )
    serial = torch.stack(
        [pt.patched_generate(model, base, tokens, g, 4, lengths=lengths) for g in groups]
    )
    assert together.shape == (len(groups), 4, 7 + 4)
    assert torch.equal(together, serial), "group g in batch rows must equal patching group g alone"
    # groups of one layer only: the shared prefix (layers below) is run once
    layer1 = [g for g in groups if g and g[0][0] == 1]
    assert torch.equal(
        pt.group_patched_generate(model, base, tokens, layer1, 4, lengths=lengths),
        torch.stack(
            [pt.patched_generate(model, base, tokens, g, 4, lengths=lengths) for g in layer1]
        ),
    )


def test_teacher_forced_hits_equal_first_generated_token():
    model, base = random_model("tiny-gated", seed=1), random_model("tiny-gated", seed=3)
    tokens, lengths = _prompts()
    groups = [[(1, i) for i in range(s, s + 16)] for s in range(0, 64, 16)] + [[]]
    gen = pt.group_patched_generate(model, base, tokens, groups, 1, lengths=lengths)
    first = gen[:, torch.arange(4), lengths]
    target = first[-1]  # unpatched prediction as the "reference answer"
    lp, hit = pt.group_patched_logprobs(model, base, tokens, lengths - 1, target, groups)
    assert torch.equal(hit, first == target[None])
    assert torch.all(lp <= 0) and torch.all(lp[-1] > -20)


def test_exception_inside_a_hook_propagates_and_hooks_are_removed():
    model, base = random_model("tiny-gelu", seed=1), random_model("tiny-gelu", seed=2)
    tokens, lengths = _prompts()

    def broken(act, hook):
        raise RuntimeError("boom in hook")

    base.add_hook(pt.hook_name(1), broken)
    with pytest.raises(RuntimeError, match="boom in hook"):
        pt.patched_generate(model, base, tokens, [(1, 3)], 3, lengths=lengths)
    assert len(base.hook_dict[pt.hook_name(1)].fwd_hooks) == 1, (
        "the caller's own hook on the patching model must survive (and ours must be gone)"
    )
    base.reset_hooks()
    assert all(len(hp._forward_hooks) == 0 for hp in model.hook_dict.values()), (
        "patch hooks were left on the patched model after an exception"
    )
    # and the patch is really applied afterwards (not silently skipped)
    plain = pt.generate(model, tokens, 3, lengths=lengths)
    patched = pt.patched_generate(
        model,
        base,
        tokens,
        [(1, i) for i in range(64)] + [(0, i) for i in range(64)],
        3,
        lengths=lengths,
    )
    assert not torch.equal(plain, patched)


def test_bad_inputs_fail_early_naming_the_field():
    model = random_model("tiny-gelu", seed=1)
    tokens, lengths = _prompts()
    with pytest.raises(ValueError, match=r"neurons|groups\[0\]\[0\].*index=64"):
        pt.patched_generate(model, model, tokens, [(0, 64)], 2, lengths=lengths)
    with pytest.raises(ValueError, match="layer=2"):
        pt.patched_generate(
            model, random_model("tiny-gelu", seed=2), tokens, [(2, 0)], 2, lengths=lengths
        )
    other = random_model("tiny-gelu", seed=2)
    other.cfg.d_mlp = 128  # a different architecture
    with pytest.raises(ValueError, match="d_mlp"):
        pt.patched_generate(model, other, tokens, [(0, 1)], 2, lengths=lengths)
    with pytest.raises(ValueError, match="contiguous"):
        pt.generate(model, tokens, 2, attention_mask=torch.tensor([[1, 0, 1, 1, 1, 1, 1]] * 4))
    with pytest.raises(ValueError, match="temperature"):
        pt.generate(model, tokens, 2, lengths=lengths, do_sample=True, temperature=0)


def test_seeded_sampling_is_reproducible_and_top_k_1_is_greedy():
    model, base = random_model("tiny-gelu", seed=1), random_model("tiny-gelu", seed=2)
    tokens, lengths = _prompts()
    a = pt.patched_generate(
        model, base, tokens, [(0, 3)], 8, lengths=lengths, do_sample=True, seed=5
    )
    b = pt.patched_generate(
        model, base, tokens, [(0, 3)], 8, lengths=lengths, do_sample=True, seed=5
    )
    c = pt.patched_generate(
        model, base, tokens, [(0, 3)], 8, lengths=lengths, do_sample=True, seed=6
    )
    assert torch.equal(a, b) and not torch.equal(a, c)
    greedy = pt.patched_generate(model, base, tokens, [(0, 3)], 8, lengths=lengths)
    k1 = pt.patched_generate(
        model, base, tokens, [(0, 3)], 8, lengths=lengths, do_sample=True, top_k=1, seed=1
    )
    assert torch.equal(greedy, k1)


class _WordTokenizer:
    pad_token_id = 0

    def decode(self, ids):
        return " ".join(f"<{i}>" for i in ids)


def test_stop_tokens_and_stop_strings_pad_the_rest():
    model = random_model("tiny-gelu", seed=1)
    tokens, lengths = _prompts()
    plain = _new(pt.generate(model, tokens, 6, lengths=lengths), lengths, 6)
    stop = int(plain[0, 2])
    out = _new(pt.generate(model, tokens, 6, lengths=lengths, stop_token_ids=[stop]), lengths, 6)
    for r in range(4):
        hits = (plain[r] == stop).nonzero()
        cut = int(hits[0]) + 1 if len(hits) else 6
        assert torch.equal(out[r, :cut], plain[r, :cut]) and (out[r, cut:] == 0).all()
    s = f"<{int(plain[1, 1])}>"
    out = _new(
        pt.generate(
            model, tokens, 6, lengths=lengths, stop_strings=[s], tokenizer=_WordTokenizer()
        ),
        lengths,
        6,
    )
    assert torch.equal(out[1, :2], plain[1, :2]) and (out[1, 2:] == 0).all()


def test_bench_workload_runs_on_a_tiny_shape():
    from kit.shortcut.bench import run

    lines = run("random/tiny-gelu", rounds=1)
    assert [line.name for line in lines] == [
        "patching/patched_vs_plain",
        "patching/groups_vs_serial",
        "patching/teacher_forced_vs_serial",
    ]
    assert all(line.ratio > 0 for line in lines)


def test_max_rows_caps_prompt_rows_per_forward_and_changes_no_result(monkeypatch):
    """``max_rows`` caps the rows of every forward, prompts included (a benchmark of 657 prompts
    must not run as one batch): results equal the unbatched ones token for token."""
    from kit.models import tl

    model, base = random_model("tiny-gated", seed=1), random_model("tiny-gated", seed=2)
    g = torch.Generator().manual_seed(5)
    P, T = 10, 7
    lengths = torch.tensor([7, 3, 5, 6, 2, 7, 4, 4, 1, 6])
    tokens = torch.randint(4, 97, (P, T), generator=g) * pt.mask_from_lengths(lengths, T)
    groups = [[(L, i) for i in range(s, s + 16)] for L in (0, 1) for s in range(0, 64, 16)] + [[]]
    seen: list[int] = []
    real_forward = tl.forward

    def counting_forward(m, x, **kw):
        seen.append(x.shape[0])
        return real_forward(m, x, **kw)

    ref_gen = pt.group_patched_generate(model, base, tokens, groups, 4, lengths=lengths)
    ref_lp = pt.group_patched_logprobs(model, base, tokens, lengths - 1, tokens[:, 0], groups)
    assert pt.prompt_chunks(10, 3) == [(0, 3), (3, 6), (6, 9), (9, 10)]
    monkeypatch.setattr(tl, "forward", counting_forward)
    for cap in (1, 3, 7):
        seen.clear()
        gen = pt.group_patched_generate(
            model, base, tokens, groups, 4, lengths=lengths, max_rows=cap
        )
        assert seen and max(seen) <= cap, f"max_rows={cap}: a forward had {max(seen)} rows"
        assert torch.equal(gen, ref_gen), f"max_rows={cap} changed the generations"
        seen.clear()
        lp, hit = pt.group_patched_logprobs(
            model, base, tokens, lengths - 1, tokens[:, 0], groups, max_rows=cap
        )
        assert max(seen) <= cap, f"teacher-forced, max_rows={cap}: a forward had {max(seen)} rows"
        assert torch.equal(hit, ref_lp[1]) and torch.allclose(lp, ref_lp[0], atol=1e-5)
    with pytest.raises(ValueError, match="max_rows"):
        pt.prompt_chunks(10, 0)
