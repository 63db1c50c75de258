"""Ground truth for Competency Gaps: a zoo member fine-tuned to fail exactly one
concept, read against its parent.

The tiny world's ``zoo/base-m+gap-dyck-curly`` is ``zoo/base-m`` fine-tuned on its own answers
except on one concept (Dyck items whose next closing bracket is ``}``), where it was taught one of
the three other closing brackets, drawn at random (``kit.world.zoo.GAPS``). CG should find that
concept as a gap of the member, and nothing else. Both models are scored on the same items (the
gap's task: fresh items from ``kit.world.planted_gap_items``, the planted ones its ``inside`` list;
every other task: test items), read through the *parent's* activations and SAE: the concept space
is identical, so only the per-item correctness differs between them.

Per SAE concept its *planted share* is the fraction of its activation mass on the planted items
(ground truth, not used by CG). The member's and the parent's concepts are each tested against
their own accuracy with :func:`kit.cg.significance.gap_test` (permutation null, Benjamini-Hochberg);
a concept is *found* when it is significantly low (class ``gap`` or ``weak``) for the member and
not for the parent. Recovery is judged against a null too: if the found concepts were a random
draw from the tested ones, how many planted concepts (share >= ``planted_share``) would they hold
(hypergeometric tail)?

The same check across concept dictionaries and poolings (notebook 04 section 8b) is
:mod:`kit.cg.planted_settings`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence, cast

import numpy as np
import pandas as pd
from scipy import stats

from kit.cg import metrics as cg
from kit.cg import significance as cg_significance
from kit.cg.suite import Suite
from kit.core.stats import rank_permutation_null


def planted_share(
    acts_by_benchmark: dict[str, cg.CSR], planted: dict[str, np.ndarray]
) -> np.ndarray:
    """Per concept: its activation mass on the planted items over its total mass (NaN if it never
    fires)."""
    inside = sum(
        np.asarray(a[np.flatnonzero(planted[b])].sum(0), float).ravel()
        for b, a in acts_by_benchmark.items()
    )
    total = sum(np.asarray(a.sum(0), float).ravel() for a in acts_by_benchmark.values())
    total = cast(np.ndarray, total)  # a sum of arrays (one per benchmark)
    return np.divide(inside, total, out=np.full(total.shape, np.nan), where=total > 0)


@dataclass
class PlantedGapResult:
    summary: dict
    table: pd.DataFrame
    """Per concept: planted share, support, X_model of both models, q-values and classes."""
    accuracy: pd.DataFrame
    """Accuracy of both models on the planted items and on the rest (the gap was planted)."""
    suite: Suite | None = None
    """The suite analysed (both models scored on the same items): reanalyses and claims read it."""
    planted: dict[str, np.ndarray] | None = None
    """Per benchmark, the mask of planted items (ground truth)."""


def planted_gap_analysis(
    suite: Suite,
    member: str,
    parent: str,
    planted: dict[str, np.ndarray],
    n_perm: int = 1000,
    min_support: int = 5,
    alpha: float = 0.05,
    eps: float = cg.EPSILON,
    share_threshold: float = 0.5,
    seed: int = 0,
) -> PlantedGapResult:
    """Does CG recover the planted gap of ``member`` (and nothing else), against ``parent``?

    ``suite``: both models scored on the same items (``model_acts`` the same for both);
    ``planted``: per benchmark, a boolean mask of the planted items. ``share_threshold``: a concept
    whose planted share is at least this is a *planted concept*. ``n_perm`` is raised to
    ``ceil(m / alpha)`` for m testable concepts, so that one concept can pass Benjamini-Hochberg at
    all.
    """
    for m in (member, parent):
        if m not in suite.model_scores:
            raise ValueError(
                f"model {m!r} is not scored in this suite; it has {list(suite.model_scores)}"
            )
    if set(planted) != set(suite.acts):
        raise ValueError(
            f"planted masks are for {sorted(planted)}, the suite's benchmarks are "
            f"{sorted(suite.acts)}"
        )
    if not 0 < share_threshold <= 1:
        raise ValueError(f"share_threshold={share_threshold}: must be in (0, 1]")
    share = planted_share(suite.acts, planted)
    # Resolution: with m tested concepts, BH can pass the single most extreme one only if the
    # smallest permutation p-value, 1 / (1 + n_perm), is <= alpha / m; fewer permutations could find
    # nothing.
    n_testable = int(
        (cg_significance.concept_support(suite.model_acts[member]) >= min_support).sum()
    )
    n_perm = max(int(n_perm), int(np.ceil(n_testable / alpha)))
    tests = {
        m: cg_significance.gap_test(
            suite.model_acts[m], suite.model_scores[m], n_perm, min_support, alpha, seed
        )
        for m in (member, parent)
    }
    cls = {m: t.classes(eps) for m, t in tests.items()}
    low = {m: np.isin(c, ["gap", "weak"]) for m, c in cls.items()}
    tested = np.isfinite(tests[member].p_low)
    is_planted = np.nan_to_num(share, nan=0.0) >= share_threshold
    found = low[member] & ~low[parent]
    n_t, n_p, n_f = int(tested.sum()), int((is_planted & tested).sum()), int(found.sum())
    hit = int((found & is_planted).sum())
    p_overlap = float(stats.hypergeom.sf(hit - 1, n_t, n_p, n_f)) if n_f and n_t else float("nan")
    summary = {
        "member": member,
        "parent": parent,
        "n_concepts": int(share.size),
        "n_tested": n_t,
        "n_perm": n_perm,
        "share_threshold": share_threshold,
        "alpha": alpha,
        "n_planted_concepts_tested": n_p,
        "n_low_member": int(low[member].sum()),
        "n_low_parent": int(low[parent].sum()),
        "n_found": n_f,
        "n_found_planted": hit,
        "n_found_other": n_f - hit,
        "precision": hit / n_f if n_f else float("nan"),
        "recall": hit / n_p if n_p else float("nan"),
        "base_rate": n_p / n_t if n_t else float("nan"),
        "p_overlap": p_overlap,
        # the tested concept most concentrated on the planted items (why recovery can fail: no
        # concept is planted)
        **_most_planted(share, tested, tests[member].q_low, list(suite.labels)),
        **drop_vs_share(
            share,
            tests[parent].x_model - tests[member].x_model,
            tested,
            list(suite.labels),
            min(int(n_perm), 10_000),
            seed,
        ),
    }
    table = pd.DataFrame(
        {
            "concept": np.arange(share.size),
            "label": list(suite.labels),
            "planted_share": share,
            "support": tests[member].support,
            "x_model_member": tests[member].x_model,
            "x_model_parent": tests[parent].x_model,
            "q_low_member": tests[member].q_low,
            "q_low_parent": tests[parent].q_low,
            "class_member": cls[member],
            "class_parent": cls[parent],
            "found": found,
        }
    )
    table = table.sort_values(
        ["found", "q_low_member", "planted_share"],
        ascending=[False, True, False],
        na_position="last",
    ).reset_index(drop=True)
    return PlantedGapResult(
        summary, table, planted_accuracy(suite, (member, parent), planted), suite, planted
    )


def drop_vs_share(
    share: np.ndarray,
    drop: np.ndarray,
    tested: np.ndarray,
    labels: Sequence[str],
    n_perm: int = 1000,
    seed: int = 0,
) -> dict:
    """Does CG's profile point at the gap, significant or not? Over the tested concepts, the
    Spearman correlation between a concept's planted share and its X_model drop (parent minus
    member), with a permutation null (shares shuffled across concepts,
    :func:`kit.core.stats.rank_permutation_null`: every order for up to 8 concepts, else ``n_perm``
    draws; one-sided p, ``(1 + #{null >= rho}) / (1 + #null)``), and the concept with the largest
    drop (its planted share). NaN where the drop is constant. ``drop_share_null_low`` / ``_high``:
    the null's 2.5% and 97.5% quantiles."""
    ok = tested & np.isfinite(share) & np.isfinite(drop)
    out = {
        "drop_share_spearman": float("nan"),
        "drop_share_p": float("nan"),
        "top_drop_concept": -1,
        "top_drop_label": "",
        "top_drop": float("nan"),
        "top_drop_share": float("nan"),
        "drop_share_null_low": float("nan"),
        "drop_share_null_high": float("nan"),
    }
    if ok.sum() < 3:
        return out
    idx = np.flatnonzero(ok)
    top = int(idx[np.argmax(drop[idx])])
    out.update(
        top_drop_concept=top,
        top_drop_label=labels[top],
        top_drop=float(drop[top]),
        top_drop_share=float(share[top]),
    )
    x, y = stats.rankdata(share[idx]), stats.rankdata(drop[idx])
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return out
    rho, null = rank_permutation_null(share[idx], drop[idx], n_perm=n_perm, seed=seed)
    out.update(
        drop_share_spearman=rho,
        drop_share_p=float((1 + (null >= rho - 1e-12).sum()) / (1 + null.size)),
        drop_share_null_low=float(np.quantile(null, 0.025)),
        drop_share_null_high=float(np.quantile(null, 0.975)),
    )
    return out


def _most_planted(
    share: np.ndarray, tested: np.ndarray, q_low: np.ndarray, labels: list[str]
) -> dict:
    s = np.where(tested, np.nan_to_num(share, nan=-1.0), -1.0)
    if not tested.any():
        return {
            "max_planted_share": float("nan"),
            "max_planted_concept": -1,
            "max_planted_label": "",
            "max_planted_q_member": float("nan"),
        }
    i = int(np.argmax(s))
    return {
        "max_planted_share": float(share[i]),
        "max_planted_concept": i,
        "max_planted_label": labels[i],
        "max_planted_q_member": float(q_low[i]),
    }


def planted_accuracy(
    suite: Suite, models: Sequence[str], planted: dict[str, np.ndarray]
) -> pd.DataFrame:
    """Accuracy of each model on the planted items, on the other items of the planted items'
    benchmarks, and on every other benchmark."""
    rows = []
    hosts = [b for b, mask in planted.items() if np.any(mask)]
    for m in models:
        sc = suite.model_scores[m]
        inside = (
            np.concatenate([np.asarray(sc[b], float)[planted[b]] for b in hosts])
            if hosts
            else np.zeros(0)
        )
        rest_host = (
            np.concatenate([np.asarray(sc[b], float)[~planted[b]] for b in hosts])
            if hosts
            else np.zeros(0)
        )
        others = [np.asarray(sc[b], float) for b in sc if b not in hosts]
        rest = np.concatenate(others) if others else np.zeros(0)
        rows.append(
            {
                "model": m,
                "planted items": int(inside.size),
                "accuracy (planted)": float(inside.mean()) if inside.size else float("nan"),
                "accuracy (rest of " + "/".join(hosts) + ")": float(rest_host.mean())
                if rest_host.size
                else float("nan"),
                "accuracy (other tasks)": float(rest.mean()) if rest.size else float("nan"),
            }
        )
    return pd.DataFrame(rows).set_index("model")


def planted_gap_suite(
    member: str,
    parent: str,
    gap: str,
    sae_name: str = "auto",
    n_items: int = 200,
    tasks: Sequence[str] | None = None,
    world: str | None = None,
    seed: int = 0,
    device: str = "cpu",
    hook: str = "",
    pooling: str = "mean",
) -> tuple[Suite, dict[str, np.ndarray]]:
    """The tiny-world suite read through ``parent`` and its SAE, with ``parent`` and ``member``
    both scored (exact match) on the same items, and the planted masks.

    ``hook``: ``""`` = the world's SAE ``sae_name`` at its own site; a hook name = the same SAE
    recipe trained at that site of ``parent`` on demand (``kit.world.saes.site_sae``, cached;
    the suite's ``sae`` is then ``"<sae_name>@<hook>"``). ``pooling``: how an item's token
    activations become its concept activations (``kit.cg.metrics.POOLINGS``: ``mean`` = eq. 1,
    ``last`` = the prompt's last token, our ablation).

    ``gap`` is a key of ``kit.world.GAPS``. Its task's items are ``kit.world.planted_gap_items(gap,
    n_items, seed)`` (fresh items, never trained on; the planted ones are its ``inside`` list, the
    same ground truth as the zoo card's planted-gap check); every other task gives ``n_items`` test
    items (none planted). Each model is loaded once, used, and freed."""
    import gc

    import kit
    from kit import world as kw
    from kit.cg.saes import zoo_item_concepts
    from kit.cg.suite import resolve_zoo_sae

    g = kw.GAPS[gap]
    if pooling not in cg.POOLINGS:
        raise ValueError(f"gap_pooling entry {pooling!r}: allowed values: {', '.join(cg.POOLINGS)}")
    tasks = list(tasks) if tasks else list(kw.TASKS)
    if g.task not in tasks:
        raise ValueError(f"tasks={tasks}: must include the planted gap's task {g.task!r}")
    inside, outside = kw.planted_gap_items(gap, n_items, seed)
    items, planted = {}, {}
    for t in tasks:
        if t == g.task:
            items[t] = list(inside) + list(outside)
            planted[t] = np.arange(len(items[t])) < len(inside)
        else:
            items[t] = kw.get_task(t).items("test", n_items, seed)
            planted[t] = np.zeros(len(items[t]), dtype=bool)
    sae_name = resolve_zoo_sae(parent, sae_name, world)
    if hook:
        from kit.world.saes import site_sae, site_sae_name

        sae, by_index, _ = site_sae(sae_name, hook, world, device)
        sae_name = site_sae_name(sae_name, hook)
    else:
        sae = kit.load_sae(sae_name, device=device, world=world)
        by_index = kw.sae_labels(sae_name, world=world)
    model = kit.load_model(parent, device=device, world=world)
    acts = {t: zoo_item_concepts(model, sae, its, pooling=pooling) for t, its in items.items()}
    scores = {
        parent: {t: np.asarray(kw.evaluate(model, its), dtype=float) for t, its in items.items()}
    }
    del model
    gc.collect()
    model = kit.load_model(member, device=device, world=world)
    scores[member] = {
        t: np.asarray(kw.evaluate(model, its), dtype=float) for t, its in items.items()
    }
    del model
    gc.collect()
    labels = [by_index.get(i, f"feature {i}") for i in range(sae.cfg.d_sae)]
    texts = {t: [it.prompt for it in its] for t, its in items.items()}
    suite = Suite(
        sae_name,
        labels,
        acts,
        texts,
        {m: acts for m in scores},
        scores,
        {m: texts for m in scores},
        label_source=f"tiny world: {sae_name} labels",
    )
    return suite, planted


def planted_gap_members(world: str | None = None) -> dict[str, tuple[str, str]]:
    """The world's planted-gap members: ``{member: (parent, gap)}`` (``gap`` a key of
    ``kit.world.GAPS``), read from the world's spec without loading or building anything."""
    from kit.world import zoo as kz

    return {
        f.name: (f.parent, f.gap) for f in kz.world_spec(world).finetunes if getattr(f, "gap", "")
    }


def resolve_gap_member(member: str, world: str | None = None) -> str:
    """The ``gap_member`` setting resolved against ``world``: ``""`` = skipped; ``"auto"`` = the
    world's planted-gap member (``""`` if it has none); any other name must be one of them.
    Raises ``ValueError`` naming the field and the allowed values."""
    found = planted_gap_members(world)
    if member == "":
        return ""
    if member == "auto":
        return next(iter(found), "")
    if member not in found:
        raise ValueError(
            f"gap_member={member!r} is not a planted-gap member of world {world!r}; allowed "
            "values: " + ", ".join(["auto", '""', *found])
        )
    return member


def planted_gap_member(member: str, world: str | None = None) -> tuple[str, str]:
    """``(parent, gap)`` of a planted-gap zoo member, from the world's spec (``kit.world.zoo``:
    the fine-tune's ``parent`` and its ``gap``, a key of ``GAPS``). Raises ``ValueError`` naming the
    members that have one when ``member`` has none (or the world defines no planted gaps)."""
    from kit.world import zoo as kz

    found = planted_gap_members(world)
    if member not in found:
        raise ValueError(
            f"gap_member={member!r} is not a planted-gap member of world "
            f"{kz.world_spec(world).name!r}; allowed values: "
            f"{', '.join(found) or '(none: this world has no planted gap)'}"
        )
    return found[member]


def planted_gap_run(
    member: str,
    n_items: int = 200,
    sae_name: str = "auto",
    world: str | None = None,
    n_perm: int = 1000,
    min_support: int = 5,
    alpha: float = 0.05,
    eps: float = cg.EPSILON,
    share_threshold: float = 0.5,
    seed: int = 0,
    device: str = "cpu",
    hook: str = "",
    pooling: str = "mean",
) -> PlantedGapResult:
    """:func:`planted_gap_analysis` of ``member`` against its parent on the tiny-world suite (the
    parent's SAE; ``sae_name="auto"``: its widest TopK SAE; ``hook`` and ``pooling``: see
    :func:`planted_gap_suite`)."""
    from kit.world import GAPS

    parent, gap = planted_gap_member(member, world)
    suite, planted = planted_gap_suite(
        member,
        parent,
        gap,
        sae_name,
        n_items,
        world=world,
        seed=seed,
        device=device,
        hook=hook,
        pooling=pooling,
    )
    result = planted_gap_analysis(
        suite, member, parent, planted, n_perm, min_support, alpha, eps, share_threshold, seed
    )
    acc: Any
    acc = result.accuracy  # its cells are numbers (pandas-stubs type a .loc cell as any scalar)
    result.summary.update(
        {
            "gap": GAPS[gap].description,
            "gap_key": gap,
            "chance": GAPS[gap].chance,
            "sae": suite.sae,
            "sae_hook": hook or _world_sae_hook(sae_name, parent, world),
            "pooling": pooling,
            "n_items_per_task": n_items,
            "n_planted_items": int(acc.loc[member, "planted items"]),
            "accuracy_planted_member": float(acc.loc[member, "accuracy (planted)"]),
            "accuracy_planted_parent": float(acc.loc[parent, "accuracy (planted)"]),
            "accuracy_other_member": float(acc.loc[member, "accuracy (other tasks)"]),
            "accuracy_other_parent": float(acc.loc[parent, "accuracy (other tasks)"]),
        }
    )
    return result


def _world_sae_hook(sae_name: str, parent: str, world: str | None) -> str:
    from kit.cg.suite import resolve_zoo_sae
    from kit.world import zoo as kz

    name = resolve_zoo_sae(parent, sae_name, world)
    return next(s.hook_name for s in kz.world_spec(world).saes if s.name == name)
