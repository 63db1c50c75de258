"""A small synthetic NeuronVote study (two planted concept neurons, three layers) shared by the
tests of kit.neuronvote.study, .tables and .plots."""

from __future__ import annotations

import numpy as np
import pytest

from kit.neuronvote import study as nvs
from kit.neuronvote.concepts import TaggedSentence, build_concept_tasks


@pytest.fixture(scope="module")
def study():
    rng = np.random.default_rng(0)
    tags = rng.choice(["A", "B", "O"], size=1200, p=[0.3, 0.3, 0.4])
    sents = [
        TaggedSentence(tuple(f"w{i + j}" for j in range(10)), tuple(tags[i : i + 10]))
        for i in range(0, 1200, 10)
    ]
    tasks = build_concept_tasks(sents, ["A", "B"], min_examples=200, max_per_class=150, seed=0)
    vectors = {}
    for layer in (0, 1, 2):
        v = rng.normal(size=(1200, 40))
        v[:, 3] += 2.5 * (tags == "A")  # the planted A neuron
        v[:, 11] += 2.5 * (tags == "B")  # the planted B neuron
        vectors[layer] = v
    return nvs.run_study(
        tasks,
        vectors,
        model="synthetic",
        site="blocks.{L}.hook_resid_post",
        s_values=(5, 10),
        accuracy_s=(5,),
        pairwise_s=(5, 10),
        progress=False,
        gaussian_max_neurons=10,
        iou_percentile=50,
    )
