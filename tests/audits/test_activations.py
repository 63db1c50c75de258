import torch

from kit.audits import activations as A


def test_token_activations_match_cache_and_skip_bos(model):
    prompts = ["tom has 3 apples", "ann has 4 coins . how many"]
    ta = A.token_activations(model, prompts, ["blocks.1.hook_resid_post"])
    n_tokens = [len(model.to_tokens(p)[0]) - 1 for p in prompts]  # BOS dropped
    assert ta.n_tokens == sum(n_tokens)
    _, cache = model.run_with_cache(model.to_tokens(prompts[1]))
    rows = ta.prompt_index == 1
    assert torch.allclose(
        ta.acts["blocks.1.hook_resid_post"][rows],
        cache["blocks.1.hook_resid_post"][0, 1:],
        atol=1e-5,
    ), "right padding must not change real tokens' activations"
    assert ta.next_ids[ta.last_token_rows()].eq(-1).all()
    assert ta.next_ids[0] == ta.token_ids[1]


def test_max_cosine():
    a = torch.tensor([[1.0, 0.0], [0.0, 2.0]])
    b = torch.tensor([[0.0, 1.0], [1.0, 1.0]])
    v, i = A.max_cosine(a, b, chunk=1)
    assert i.tolist() == [1, 0]
    assert torch.allclose(v, torch.tensor([2**-0.5, 1.0]))
