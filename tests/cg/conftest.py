"""Hand-built Competency-Gaps suites shared by the tests of kit.cg (as fixtures returning
builders)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from kit.cg.suite import Suite


def model_gap_suite(tied: bool, n: int = 200, d: int = 20, seed: int = 0):
    """``(acts, scores)`` of two benchmarks; concept c is active on items c, c+d, ... (plus a weak
    second concept per item). With ``tied`` the model fails exactly the items of concepts 0-4 (real
    gaps); otherwise random items at the same rate."""
    rng = np.random.default_rng(seed)
    acts, scores = {}, {}
    for b in ("b1", "b2"):
        rows = np.arange(n)
        dense = np.zeros((n, d))
        dense[rows, rows % d] = 1.0
        dense[rows, (rows * 7 + 3) % d] += 0.1
        acts[b] = sp.csr_matrix(dense)
        fail = (rows % d) < 5 if tied else rng.random(n) < 0.25
        scores[b] = (~fail).astype(float)
    return acts, scores


def planted_gap_suite(member_fails_planted: bool, seed: int = 0):
    """A parent and a member scored on the same items; concept 0 fires on the 30 planted items only.
    With ``member_fails_planted`` the member answers every planted item wrong."""
    rng = np.random.default_rng(seed)
    n, d = 120, 60
    planted = {"dyck": np.arange(n) < 30, "add": np.zeros(n, bool)}
    acts, parent, member = {}, {}, {}
    for b, mask in planted.items():
        dense = rng.exponential(size=(n, d)) * (rng.random((n, d)) < 0.3)
        dense[:, 0] = np.where(mask, 1.0 + rng.random(n), 0.0)  # concept 0: the planted items only
        acts[b] = sp.csr_matrix(dense)
        parent[b] = (rng.random(n) < 0.9).astype(float)
        member[b] = parent[b].copy()
        if member_fails_planted:
            member[b][mask] = 0.0
    labels = [f"c{i}" for i in range(d)]
    s = Suite(
        "sae",
        labels,
        acts,
        {b: [""] * n for b in acts},
        {"member": acts, "parent": acts},
        {"member": member, "parent": parent},
    )
    return s, planted


@pytest.fixture
def model_suite_of():
    """:func:`model_gap_suite`, the builder."""
    return model_gap_suite


@pytest.fixture
def planted_suite_of():
    """:func:`planted_gap_suite`, the builder."""
    return planted_gap_suite
