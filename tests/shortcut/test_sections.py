"""Tests of kit.shortcut.sections: Table 4's transfer fine-tunes."""

from __future__ import annotations

import pytest
import torch

from kit.shortcut import sections


def test_transfer_finetune_uses_the_recipe_of_its_row(micro_world):
    """Table 4's models: the named zoo fine-tune's recipe on another task, cached and sparse if it
    is."""
    import kit

    m = sections.transfer_finetune("zoo/base-m+math-test-x5-sparse", "add2", world=micro_world)
    assert m.cfg.model_name == "zoo/base-m+add2-test-x5-sparse"
    base = kit.load_model("zoo/base-m", world=micro_world)
    changed = [
        (L, i)
        for L in range(base.cfg.n_layers)
        for i in range(base.cfg.d_mlp)
        if not torch.equal(m.blocks[L].mlp.W_in[:, i], base.blocks[L].mlp.W_in[:, i])
    ]
    plastic = kit.world.plastic_neurons("zoo/base-m", 0.04, micro_world)
    assert changed and all(plastic[L, i] for L, i in changed)
    # from the cache
    again = sections.transfer_finetune("zoo/base-m+math-test-x5-sparse", "add2", world=micro_world)
    assert all(
        torch.equal(a, b) for a, b in zip(m.state_dict().values(), again.state_dict().values())
    )
    with pytest.raises(ValueError, match="like='zoo/base-m\\+general'.*allowed values"):
        sections.transfer_finetune("zoo/base-m+general", "add2", world=micro_world)
