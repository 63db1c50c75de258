"""kit.world.train's batch loss: length groups (hand-computed cut) and the loss read at the answer
positions only, equal to the padded batch's mean cross-entropy."""

import pytest
import torch
import torch.nn.functional as F

from kit.world.tasks import get_task
from kit.world.train import (
    Arch,
    answer_loss_sum,
    batch_loss,
    collate,
    item_sequence,
    length_groups,
    make_model,
)


def _seqs(lengths: list[int]) -> list[list[int]]:
    return [[1] * n for n in lengths]


def test_length_groups_hand_computed_cut():
    # lengths (positions = len - 1): 3, 9, 3, 3, 9, 3. One group: 6 x 8 = 48 positions; cut
    # after the four short ones: 4 x 2 + 2 x 8 = 24, the fewest with two groups
    seqs = _seqs([3, 9, 3, 3, 9, 3])
    assert length_groups(seqs, max_groups=1) == [[0, 2, 3, 5, 1, 4]]  # sorted, ties in order
    assert length_groups(seqs, max_groups=2) == [[0, 2, 3, 5], [1, 4]]


def test_length_groups_cover_each_sequence_once_and_prefer_fewer_groups():
    seqs = _seqs([5, 5, 5, 5])  # no padding to save: one group, not more
    assert length_groups(seqs, max_groups=3) == [[0, 1, 2, 3]]
    seqs = _seqs([4, 12, 7, 4, 30, 7, 12, 5])
    groups = length_groups(seqs, max_groups=2)
    assert len(groups) == 2 and sorted(sum(groups, [])) == list(range(8))
    assert max(len(seqs[i]) for i in groups[0]) <= min(len(seqs[i]) for i in groups[1])
    with pytest.raises(ValueError, match="max_groups"):
        length_groups(seqs, max_groups=0)


def test_batch_loss_equals_the_padded_mean_cross_entropy():
    model = make_model(Arch(1, 16, 2, 32), seed=0)
    items = get_task("code").items("test", n=5) + get_task("facts").items("test", n=5)
    seqs = [item_sequence(it) for it in items]
    assert len({len(s) for s in seqs}) > 1, "the case needs sequences of different lengths"
    inputs, targets, _ = collate(seqs)
    logits = model(inputs, return_type="logits")
    want = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=-100)
    torch.testing.assert_close(batch_loss(model, seqs), want, atol=1e-5, rtol=1e-5)
    n_targets = int((targets != -100).sum())
    torch.testing.assert_close(
        answer_loss_sum(model, inputs, targets) / n_targets, want, atol=1e-5, rtol=1e-5
    )
