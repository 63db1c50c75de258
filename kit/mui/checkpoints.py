"""Training checkpoints of a world member, by name (``zoo/base-l@step-600``): the one definition of
a checkpoint series, used by notebook 01's multi-token section (:mod:`kit.mui.multi_token`) and
notebook 02's trajectories (:mod:`kit.mui.trajectories`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

STEP_NAME = re.compile(r"^(?P<base>[^@+]+)@step-(?P<step>\d+)$")
"""A checkpoint member's name: ``<base>@step-<N>``."""


def has_checkpoints(members: Sequence[str], base: str) -> bool:
    """True when ``members`` holds at least one ``<base>@step-<N>`` checkpoint of ``base``."""
    return any((hit := STEP_NAME.match(m)) is not None and hit["base"] == base for m in members)


def checkpoint_series(
    members: Sequence[str], base: str | None = None, final_step: int | None = None
) -> list[str]:
    """The checkpoint trajectory of ``base`` (default: the base with the most ``@step-`` members,
    ties to the first listed), in step order, followed by the final ``base`` itself when it is a
    member, unless its last checkpoint already is the final model (``final_step``, the base's total
    steps, equals it): the same weights twice would add a zero step. Either way the last entry holds
    the final weights, and ``[:-1]`` are the earlier checkpoints.

    ``members``: names like ``zoo/base-l@step-300``. Raises if no checkpoint member exists (of
    ``base``, when given).
    """
    by_base: dict[str, list[tuple[int, str]]] = {}
    for m in members:
        hit = STEP_NAME.match(m)
        if hit:
            by_base.setdefault(hit["base"], []).append((int(hit["step"]), m))
    if not by_base:
        raise ValueError(f"no '<base>@step-<N>' checkpoint among the members: {', '.join(members)}")
    # ties: the base listed first (zoo/base-l before zoo/base-xl, which has as many)
    if base is None:
        order = list(by_base)
        base = max(by_base, key=lambda b: (len(by_base[b]), -order.index(b)))
    if base not in by_base:
        raise ValueError(
            f"base={base!r} has no checkpoints; bases with checkpoints: "
            f"{', '.join(sorted(by_base))}"
        )
    steps = sorted(by_base[base])
    names = [m for _, m in steps]
    last_is_final = final_step is not None and steps[-1][0] == final_step
    return names + ([base] if base in members and not last_is_final else [])
