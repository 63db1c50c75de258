"""Shared fixtures: every RNG seeded and torch on one thread per test; the micro world built once
per session when asked for."""

from __future__ import annotations

import random

import numpy as np
import pytest


@pytest.fixture(autouse=True)
def _seed_everything():
    import torch

    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)
    # One thread: on a 2-core machine, OpenMP threads spin against each other and the other test
    # processes (kernels), running many times slower; results do not depend on it.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def micro_world():
    """The micro world in the default cache (content-addressed, so built once and then reused).

    Notebook smoke tests run kernels in other processes, which find it through the same cache path.
    """
    import kit.world

    kit.world.build("micro")
    return "micro"
