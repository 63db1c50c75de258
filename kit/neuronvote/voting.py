"""NeuronVote in one call (seed 004): a layer's neurons ranked for a concept by every method,
and each method scored by its agreement with the others.

- :func:`concept_arrays`: the word activations ``x`` of a model at one site and the concept
  labels ``y`` (1 = the word carries ``tag``), from tagged sentences;
- :func:`vote`: :func:`kit.neuronvote.methods.rank_all` (any names of
  :data:`kit.neuronvote.methods.RANKING_METHODS`), then NeuronVote (eq. 9) and AvgOverlap (eq. 8)
  of each method's top-``s`` set, as a :class:`Vote`.

The notebook's study (:mod:`kit.neuronvote.study`) runs the same methods over train/dev/test
splits, several layers and concepts, with random baselines and classifier accuracies; these two
functions are the method on one (x, y).

NeuronVote by hand (:func:`kit.neuronvote.consensus.neuron_vote`, leave-one-out Borda):

>>> from kit.neuronvote.consensus import neuron_vote
>>> r = {"a": [0, 1, 2, 3], "b": [0, 1, 3, 2], "c": [2, 3, 0, 1]}
>>> neuron_vote(r, s=2)       # b and c's Borda top-2 is {0, 2}: a shares one of its two
{'a': 0.3333333333333333, 'b': 0.3333333333333333, 'c': 0.0}
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kit.neuronvote.consensus import avg_overlap, neuron_vote
from kit.neuronvote.methods import PAPER_METHODS, rank_all


@dataclass
class Vote:
    """Rankings of one (x, y) by several methods and their consensus scores."""

    s: int
    """Size of the top sets compared."""
    rankings: dict[str, np.ndarray]
    """method -> Int[ndarray, "n_neurons"], most salient first."""
    neuron_vote: dict[str, float]
    """method -> NeuronVote (eq. 9): IoU of its top-s with the Borda top-s of the other voters."""
    avg_overlap: dict[str, float]
    """method -> AvgOverlap (eq. 8): mean IoU of its top-s with each other voter's."""

    def best(self) -> str:
        """The method with the highest NeuronVote (ties: the first in ``rankings``' order)."""
        return max(self.neuron_vote, key=lambda m: self.neuron_vote[m])

    def top(self, method: str) -> list[int]:
        """``method``'s top-``s`` neurons, best first."""
        return [int(i) for i in self.rankings[method][: self.s]]


def vote(
    x,
    y,
    methods: Sequence[str] = PAPER_METHODS,
    s: int = 10,
    voters: Sequence[str] | None = None,
    seed: int = 0,
    **rank_kwargs: Any,
) -> Vote:
    """Rank the neurons of ``x`` (Float[ndarray, "n_words n_neurons"]) for the labels ``y``
    (Int[ndarray, "n_words"], 1 = concept) by each of ``methods`` (each with its own tie-break
    seed from ``seed``, :func:`kit.neuronvote.methods.rank_all`; ``rank_kwargs``: the methods'
    hyper-parameters, :class:`kit.neuronvote.methods.RankingOptions`), and score every method's
    top ``s`` against the ``voters`` (default: all ``methods``; leave-one-out).

    >>> import numpy as np
    >>> from kit.neuronvote import vote
    >>> rng = np.random.default_rng(0)
    >>> y = np.repeat([1, 0], 40)
    >>> x = rng.normal(size=(80, 12)); x[:, 3] += 3 * y; x[:, 7] += 2 * y   # two concept neurons
    >>> v = vote(x, y, methods=["probeless", "meanselect", "ridge", "random"], s=2,
    ...          voters=["probeless", "meanselect", "ridge"])
    >>> sorted(v.top("probeless")), v.neuron_vote["probeless"]
    ([3, 7], 1.0)
    >>> v.neuron_vote["random"] < 1.0
    True
    """
    rankings: dict[str, Any] = rank_all(x, y, list(methods), seed=seed, **rank_kwargs)
    return Vote(s, rankings, neuron_vote(rankings, s, voters), avg_overlap(rankings, s, voters))


def concept_arrays(
    model, sentences: Sequence[Any], tag: str, site: str, batch_size: int = 32
) -> tuple[np.ndarray, np.ndarray]:
    """``(x, y)`` for :func:`vote`: each word's activation at ``site`` (a TransformerLens hook
    name such as ``blocks.1.mlp.hook_post``; a word = the mean of its tokens,
    :func:`kit.models.encoders.decoder_word_activations`) and 1 where the word's tag is ``tag``.
    ``sentences``: :class:`kit.neuronvote.concepts.TaggedSentence` (e.g.
    :func:`kit.neuronvote.concepts.world_role_sentences` for tiny-world models). Every word
    counts (the study's balanced train/dev/test tasks:
    :func:`kit.neuronvote.concepts.build_concept_tasks`).
    """
    from kit.models.encoders import decoder_word_activations
    from kit.neuronvote.concepts import flat_tags

    tags = flat_tags(sentences)
    if tag not in set(tags.tolist()):
        raise ValueError(f"tag={tag!r} tags no word; allowed: {', '.join(sorted(set(tags)))}")
    x = decoder_word_activations(model, [list(s.words) for s in sentences], site, batch_size)
    return x.float().cpu().numpy(), (tags == tag).astype(int)
