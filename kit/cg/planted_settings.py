"""The planted-gap check across concept dictionaries and poolings (notebook 04 section 8b).

Each ``gap_sae_hooks`` entry names a concept dictionary (:data:`GAP_SAE_SITES`: the world's SAE at
its own site, the same recipe at the parent's last residual stream, or an explicit hook) and each
``gap_pooling`` value how an item's tokens are pooled; every (dictionary, pooling) pair is one
:func:`kit.cg.planted.planted_gap_run`, keyed by :func:`pair_key`. Here: the sites resolved for the
parent, the section's runs (or why one is skipped), the setting closest to the paper's
(:func:`primary_setting`), the notebook's ``results`` entries and the runs side by side.
"""

from __future__ import annotations

import re
from typing import Sequence, cast

import pandas as pd

from kit.cg.planted import (
    PlantedGapResult,
    _world_sae_hook,
    planted_gap_member,
    planted_gap_run,
    resolve_gap_member,
)

GAP_SAE_SITES = ("world", "last")
"""Symbolic entries of ``gap_sae_hooks``: ``world`` = the world's SAE at its own site; ``last`` =
the same recipe at the parent's last residual stream, ``blocks.{n_layers - 1}.hook_resid_post``."""
HOOK_PATTERN = r"blocks\.\d+\.([a-z0-9_]+\.)?hook_[a-z0-9_]+"
"""What an explicit ``gap_sae_hooks`` entry must look like (a TransformerLens block hook)."""


def _n_layers(model: str, world: str | None) -> int:
    """Layers of a zoo member, from the world's spec (a fine-tune has its root base's shape)."""
    from kit.world import zoo as kz

    spec = kz.world_spec(world)
    if model.split("@")[0] not in {m.name for m in (*spec.bases, *spec.finetunes)}:
        raise ValueError(f"{model!r} is not a member of world {spec.name!r}")
    return kz._arch_of(spec, model).n_layers


def gap_sae_sites(
    hooks: Sequence[str], parent: str, world: str | None = None, sae_name: str = "auto"
) -> list[tuple[str, str, str]]:
    """``gap_sae_hooks`` resolved for ``parent``: per entry ``(entry, hook, skip)``, ``hook`` the
    site read and ``skip`` ``""`` or why the entry is not run (its site equals an earlier entry's,
    e.g. ``last`` where the parent has one layer and the world's SAE reads ``blocks.0``).
    ``"world"`` resolves to ``hook=""`` run-wise (the world's own SAE); see :data:`GAP_SAE_SITES`.
    Raises ``ValueError`` naming ``gap_sae_hooks`` for a layer the parent does not have."""
    n_layers = _n_layers(parent, world)
    world_hook = _world_sae_hook(sae_name, parent, world)
    out, seen = [], {}
    for entry in hooks:
        hook = {"world": world_hook, "last": f"blocks.{n_layers - 1}.hook_resid_post"}.get(
            entry, entry
        )
        m = re.fullmatch(HOOK_PATTERN, hook)
        if m is None or int(hook.split(".")[1]) >= n_layers:
            raise ValueError(
                f"gap_sae_hooks entry {entry!r}: {parent} has {n_layers} layer(s); allowed values: "
                f"{', '.join(GAP_SAE_SITES)} or blocks.L.hook_... with L in 0..{n_layers - 1}"
            )
        skip = (
            f"same site as {seen[hook]!r} ({hook}): {parent} has {n_layers} layer(s)"
            if hook in seen
            else ""
        )
        seen.setdefault(hook, entry)
        out.append((entry, hook, skip))
    return out


def pair_key(entry: str, pooling: str) -> str:
    """The key of one (dictionary, pooling) run of section 8b: ``"<gap_sae_hooks
    entry>/<pooling>"``."""
    return f"{entry}/{pooling}"


def planted_gap_section(cfg) -> dict[str, tuple[PlantedGapResult | None, str]]:
    """Notebook 04 section 8b: per ``cfg.gap_sae_hooks`` entry (the concept dictionary) and per
    ``cfg.gap_pooling`` value (``mean`` = eq. 1, ``last`` = our ablation), keyed by
    :func:`pair_key`: ``(result, "")`` or ``(None, reason)`` when it cannot run (no planted-gap
    member in the profile's world, the world / member not built, or the same site as an earlier
    entry). An entry whose site is the world SAE's reads that SAE; any other trains the same recipe
    there on demand."""
    pairs = [(e, p) for e in cfg.gap_sae_hooks for p in cfg.gap_pooling]
    member = resolve_gap_member(cfg.gap_member, cfg.world)
    if not member:
        reason = f"gap_member={cfg.gap_member!r}: " + (
            "set to skip"
            if cfg.gap_member == ""
            else f"world {cfg.world!r} has no planted-gap member"
        )
        return {pair_key(e, p): (None, reason) for e, p in pairs}
    parent, _ = planted_gap_member(member, cfg.world)
    out = {}
    sites = {
        entry: (hook, skip)
        for entry, hook, skip in gap_sae_sites(cfg.gap_sae_hooks, parent, cfg.world)
    }
    world_hook = _world_sae_hook("auto", parent, cfg.world)
    for entry, pooling in pairs:
        hook, skip = sites[entry]
        if skip:
            out[pair_key(entry, pooling)] = (None, skip)
            continue
        try:
            out[pair_key(entry, pooling)] = (
                planted_gap_run(
                    member,
                    cfg.gap_n_items,
                    "auto",
                    cfg.world,
                    cfg.gap_n_perm,
                    cfg.min_support,
                    cfg.alpha,
                    cfg.eps,
                    cfg.gap_share,
                    cfg.seed,
                    cfg.device,
                    hook="" if hook == world_hook else hook,
                    pooling=pooling,
                ),
                "",
            )
        except FileNotFoundError as e:  # the world or the member is not built in the cache
            out[pair_key(entry, pooling)] = (None, f"{type(e).__name__}: {e}")
    return out


def primary_setting(planted: dict[str, tuple[PlantedGapResult | None, str]]) -> str | None:
    """The setting of section 8b closest to the paper's (eq. 1's mean pooling; among the
    dictionaries that ran, the one read deepest in the model; the first listed on a tie); None when
    none ran."""
    ran = [k for k, (r, _) in planted.items() if r is not None]
    if not ran:
        return None

    def rank(k: str) -> tuple:
        s = cast(PlantedGapResult, planted[k][0]).summary  # k ran
        layer = re.match(r"blocks\.(\d+)\.", s.get("sae_hook", ""))
        return (
            s.get("pooling", "mean") == "mean",
            int(layer.group(1)) if layer else -1,
            -ran.index(k),
        )

    return max(ran, key=rank)


def planted_gap_results(sections: dict[str, tuple[PlantedGapResult | None, str]]) -> dict:
    """The notebook's ``results`` entries of :func:`planted_gap_section`: ``planted_gap`` (the
    summary of :func:`primary_setting`'s run) with ``planted_gap_primary`` (its key),
    ``planted_gap_by_sae`` (every :func:`pair_key`: its summary, or ``{"skipped": why}``), or
    ``planted_gap_error`` when none ran."""
    by = {e: (r.summary if r is not None else {"skipped": why}) for e, (r, why) in sections.items()}
    main = primary_setting(sections)
    if main is None:
        return {
            "planted_gap_error": "; ".join(f"{e}: {why}" for e, (_, why) in sections.items()),
            "planted_gap_by_sae": by,
        }
    return {"planted_gap": by[main], "planted_gap_primary": main, "planted_gap_by_sae": by}


COMPARE_FIELDS = (
    "sae",
    "sae_hook",
    "pooling",
    "n_tested",
    "n_planted_concepts_tested",
    "n_found",
    "n_found_planted",
    "n_found_other",
    "precision",
    "recall",
    "p_overlap",
    "max_planted_share",
    "max_planted_label",
    "max_planted_q_member",
    "drop_share_spearman",
    "drop_share_p",
    "top_drop_label",
    "top_drop_share",
)


def compare_dictionaries(sections: dict[str, tuple[PlantedGapResult | None, str]]) -> pd.DataFrame:
    """The (dictionary, pooling) runs side by side: one column per :func:`planted_gap_section` key,
    one row per :data:`COMPARE_FIELDS` (numbers only: the verdicts are the claims',
    :func:`kit.cg.claims.planted_claims`), and ``skipped`` (why an entry did not run, else
    empty)."""
    cols = {}
    for entry, (r, why) in sections.items():
        cols[entry] = {
            **{f: None if r is None else r.summary.get(f) for f in COMPARE_FIELDS},
            "skipped": why if r is None else "",
        }
    return pd.DataFrame(cols, index=[*COMPARE_FIELDS, "skipped"])
