"""require_finite: NaN and inf stop a computation with a message naming the field and the place."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from kit.core.checks import NonFiniteError, require_finite


@pytest.mark.parametrize(
    "x", [1.0, [1, 2, 3], np.zeros((2, 3)), torch.ones(2, 3), torch.tensor(-1e30)]
)
def test_finite_values_pass_through_unchanged(x):
    assert require_finite("x", x) is x


@pytest.mark.parametrize(
    "x, fragment",
    [
        (math.nan, "x: 1 of 1 values are not finite (first: nan)"),
        ([1.0, math.inf, math.nan], "x: 2 of 3 values are not finite (first: inf at index (1,))"),
        (
            np.array([[0.0, 1.0], [2.0, -np.inf]]),
            "x: 1 of 4 values are not finite (first: -inf at index (1, 1))",
        ),
        (
            torch.tensor([[0.0, 1.0], [float("nan"), 2.0]]),
            "x: 1 of 4 values are not finite (first: nan at index (1, 0))",
        ),
    ],
)
def test_non_finite_values_name_field_count_and_first_place(x, fragment):
    with pytest.raises(NonFiniteError) as e:
        require_finite("x", x)
    assert fragment in str(e.value)
    assert isinstance(e.value, ValueError), "callers that catch ValueError keep working"
