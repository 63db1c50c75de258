"""What notebook 03 does with ``extra/`` names (fine-tunes of the tiny world that are not zoo
members): move a row onto another base (:func:`rebase`), the strength rows
(:func:`strength_variants`) and the neurons a fine-tune changed (:func:`changed_between`).

The ``extra/`` grammar itself (options, parsing, loading) is the world's:
:mod:`kit.world.sources` (re-exported here). Example:
``extra/base-m+math-test-x1-sparse:split:lr=0.05``.
"""

from __future__ import annotations

import torch

from kit.models.sources import find
from kit.world.sources import (  # noqa: F401 (the extra/ grammar lives with the world's names)
    AFTER,
    OPTIONS,
    PLASTIC_SETS,
    PREFIX,
    extra_spec,
    is_extra,
    load_extra,
    with_options,
)


def rebase(name: str, parent: str, old_base: str) -> str:
    """Model ``name`` of a notebook 03 row moved onto another base ``parent`` (``zoo/<base>``): the
    old base itself becomes ``parent``; a sparse zoo fine-tune or an ``extra/`` name gets
    ``:parent=<base>`` (same recipe and examples). Anything else fails naming what is allowed."""
    if name == old_base:
        return parent
    base = find(parent)
    short = base.rest(parent) if base is not None and base.world_member else None
    if short is None:
        raise ValueError(f"parent={parent!r} must be a zoo base (zoo/<name>)")
    if is_extra(name):
        own, sep, after = name.partition(AFTER)  # a chain moves as a whole
        return with_options(own, f"parent={short}") + (
            sep + with_options(after, f"parent={short}") if sep else ""
        )
    form = find(name)
    if form is not None and form.world_member:
        return f"{PREFIX}{form.rest(name)}:parent={short}"
    raise ValueError(
        f"{name!r}: only the base {old_base!r}, zoo/... fine-tunes and extra/... names can be "
        "rebased"
    )


def changed_between(model, parent) -> set[tuple[int, int]]:
    """(layer, index) MLP neurons whose ``W_in`` column, ``b_in`` or ``W_out`` row differ between
    two models of one shape: what a fine-tune changed (the world's ground truth)."""
    from kit.models import tl

    out = set()
    for (L, wi_a, bi_a, wo_a), (_, wi_b, bi_b, wo_b) in zip(
        tl.mlp_neuron_params(model), tl.mlp_neuron_params(parent)
    ):
        mask = (wi_a != wi_b).any(0) | (bi_a != bi_b) | (wo_a != wo_b).any(1)
        out |= {(L, int(i)) for i in torch.nonzero(mask).flatten().tolist()}
    return out


def strength_variants(
    name: str, copies=(1, 2, 5, 10), order_seeds=(1, 2), lrs=()
) -> dict[str, str]:
    """Fig. 5 / Table 8 and Table 11 rows from a contaminated fine-tune ``name`` (``zoo/...-sparse``
    or ``extra/...``): its recipe with each occurrence count, with each learning rate (Table 8's
    other axis), and with its examples reordered. Labels -> ``extra/`` names (later options override
    earlier ones)."""
    form = find(name)
    short = form.rest(name) if form is not None and form.tiny_world else None
    if short is None:
        raise ValueError(
            f"{name!r}: strength variants need a tiny-world fine-tune (zoo/... or extra/...)"
        )
    out = {f"x{c}": with_options(PREFIX + short, f"copies={c}") for c in copies}
    out.update({f"lr {lr:g}": with_options(PREFIX + short, f"lr={lr:g}") for lr in lrs})
    out.update({f"order {s}": with_options(PREFIX + short, f"order={s}") for s in order_seeds})
    return out
