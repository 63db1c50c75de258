"""Tests of kit.mui.responses: ablation hooks zero exactly the chosen neurons."""

from __future__ import annotations

import torch

from kit.models.load import random_model
from kit.mui import responses as mui_responses


def test_ablation_hooks_zero_exactly_the_chosen_neurons():
    model = random_model("tiny-gelu")
    tokens = torch.randint(0, 97, (2, 5))
    seen = {}

    def look(act, hook):
        seen[hook.name] = act.clone()

    hooks = mui_responses.ablation_hooks([(0, 3), (1, 5), (1, 7)])
    with model.hooks(fwd_hooks=hooks + [("blocks.0.mlp.hook_post", look), ("blocks.1.mlp.hook_post", look)]):
        model(tokens)
    _, clean = model.run_with_cache(tokens)
    assert (seen["blocks.0.mlp.hook_post"][..., 3] == 0).all()
    assert (seen["blocks.1.mlp.hook_post"][..., [5, 7]] == 0).all()
    keep = [i for i in range(64) if i != 3]
    assert torch.allclose(seen["blocks.0.mlp.hook_post"][..., keep], clean["blocks.0.mlp.hook_post"][..., keep]), (
        "other neurons of the ablated layer must be untouched"
    )
