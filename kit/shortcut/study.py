"""Notebook 03's study (seed 001): its models and item sets (:class:`Setup`, :func:`setup`), the
located neurons and the chosen rule (:func:`locate_and_choose`), the ground truth the tiny world
knows, and Table 2's numbers in words (:func:`findings`, :func:`a2_findings`). The later sections,
which score other models with these neurons, are :mod:`kit.shortcut.sections`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence, cast

import pandas as pd

from kit.models.finetune_examples import recipe_items
from kit.shortcut.causal_jobs import Remote
from kit.shortcut.items import (
    TaskData,
    decoding_settings,
    is_world,
    reference_items,
    study_items,
    task_data,
)
from kit.shortcut.patching import Neuron
from kit.shortcut.ranking import Located, best_rule, locate, ranking_rules, rule_intervals
from kit.subjects import load_model_any

if TYPE_CHECKING:
    from kit.models.generate import GenerationSettings
    from kit.shortcut.pool import Lazy, ModelPool


def findings(
    summary: dict[str, float],
    n_patched: int,
    total_neurons: int,
    agree_te: dict[str, float] | None = None,
    agree_ori: dict[str, float] | None = None,
    paper: dict[str, float] | None = None,
) -> list[str]:
    """A short plain-text summary of Table 2 / Figure 4 numbers; ``paper`` (from
    :func:`paper_text_numbers`) adds the published values beside ours, labelled as such."""
    paper = paper or {}
    lines = [
        f"Patched {n_patched} of {total_neurons} MLP neurons "
        f"({100 * n_patched / total_neurons:.2f}%"
        + (f"; paper: {paper['percent']}% of LLaMA2-7B)." if "percent" in paper else ").")
    ]
    if "contaminated_mean_abs_te_minus_ref" in summary:
        c_te, c_ori = (
            summary["contaminated_mean_abs_te_minus_ref"],
            summary["contaminated_mean_abs_ori_minus_ref"],
        )
        lines.append(
            f"Contaminated models: mean |Ori-Ref| = {c_ori:.1f} pts, mean |TE-Ref| = {c_te:.1f} "
            f"pts; mean Δacc = {summary['contaminated_mean_delta_acc']:+.1f} pts (point values; "
            "the verdict with its interval: claim te.contaminated_drop)."
        )
    if "uncontaminated_mean_abs_delta_acc" in summary:
        u = summary["uncontaminated_mean_abs_delta_acc"]
        c = summary.get("contaminated_mean_abs_delta_acc", float("nan"))
        ur = summary["uncontaminated_mean_abs_relative_delta_acc"]
        cr = -summary.get("contaminated_mean_relative_delta_acc", float("nan"))
        lines.append(
            f"Uncontaminated models move by {u:.1f} pts on average vs {c:.1f} pts for contaminated "
            f"(mean |Δacc|, point values); relative to Ori, as the paper counts: clean |change| "
            f"{ur:.1f}%, contaminated drop {cr:.1f}%"
            + (
                f" (paper text: {paper['un_change']:g}% and {paper['con_drop']:g}%"
                if "con_drop" in paper
                else ""
            )
            + (
                f"; recomputed from its Table 2: {paper['un_change_table2']:.1f}% (clean rows "
                f"without +GSM8K Train; {paper['un_change_table2_all_clean']:.1f}% with it) and "
                f"{paper['con_drop_table2']:.1f}%"
                if "con_drop_table2" in paper
                else ""
            )
            + (")." if "con_drop" in paper or "con_drop_table2" in paper else ".")
        )
    if "uncontaminated_mean_abs_te_minus_ref" in summary:
        u_te, u_ori = (
            summary["uncontaminated_mean_abs_te_minus_ref"],
            summary["uncontaminated_mean_abs_ori_minus_ref"],
        )
        lines.append(
            f"Clean models: mean |TE-Ref| = {u_te:.1f} vs |Ori-Ref| = {u_ori:.1f} pts (point "
            "values; whether TE moves them toward the fresh-item score: claim te.clean_toward_ref)."
        )
    if agree_te and agree_ori:
        lines.append(
            f"Agreement with Ref: TE rho={agree_te['spearman']:.3f}, RMSE={agree_te['rmse']:.2f}; "
            f"Ori rho={agree_ori['spearman']:.3f}, RMSE={agree_ori['rmse']:.2f}"
            + (f" (paper, simulation: rho={paper['rho']:.3f})." if "rho" in paper else ".")
        )
    return lines


@dataclass
class Setup:
    """The models and item sets notebook 03 works on (``setup(cfg)``)."""

    base: Any
    """The base model M0, the donor of every patch: the one model always held."""
    models: "ModelPool"
    """Table 2's variants by label (``cfg.variants``), loaded on access, one at a time
    (:class:`kit.shortcut.pool.ModelPool`)."""
    model_con: "Lazy"
    model_un: "Lazy"
    """The locating pair as lazy handles (loaded at use: ``kit.shortcut.pool.resolve``)."""
    locate: TaskData
    test: TaskData
    fresh: TaskData
    heldout: TaskData | None = None
    """Test items after the first ``n_locate`` (up to ``n_eval``): the ranking rules are compared on
    them (``combine: held_out``). None when ``n_eval <= n_locate``."""
    load: "Callable[[str], object] | None" = None
    """Name -> model, with the notebook's device, dtype and world
    (:func:`kit.subjects.load_model_any`)."""
    decoding: "GenerationSettings | None" = None
    """The notebook's decoding (:func:`decoding_settings`); None (tiny-world models) = greedy, raw
    prompts. Pass it to :func:`task_data` for every further item set (side tasks, transfer
    tasks)."""

    def pool(
        self, names: dict[str, str], load: "Callable[[str], object] | None" = None
    ) -> "ModelPool":
        """Another set of models sharing this base, held one at a time like ``models``."""
        from kit.shortcut.pool import ModelPool

        load = cast("Callable[[str], object]", load or self.load)  # the setup always gives one
        return ModelPool(
            names, load, base=self.base, base_name=self.models.base_name, share=self.models
        )

    @property
    def n_layers(self) -> int:
        return self.base.cfg.n_layers

    @property
    def d_mlp(self) -> int:
        return self.base.cfg.d_mlp

    @property
    def total_neurons(self) -> int:
        return self.n_layers * self.d_mlp


def changed_by(member: str, world: str | None = None) -> set[Neuron] | None:
    """The MLP neurons a tiny-world fine-tune (zoo or ``extra/``) changed vs its parent; None
    otherwise."""
    from kit.models.sources import form_of
    from kit.shortcut import variants
    from kit.world import changed_neurons, load_member

    form = form_of(member)
    if form.world_member:
        return set(changed_neurons(member, world=world))
    if form.family == "extra":
        return variants.changed_between(
            load_model_any(member, world=world),
            load_member(variants.extra_spec(member, world).parent, world=world),
        )
    return None


def construction(
    names: dict[str, str], world: str | None = None, locate_pair: Sequence[str] = ()
) -> tuple[str, str]:
    """What a set of Table 2 rows (label -> model) rests on, in words, and why TE's transfer to them
    is built in ("" when it is not): tiny-world sparse fine-tunes that train the seeded neuron sets
    of :data:`kit.shortcut.variants.PLASTIC_SETS` (every contaminated row one ``shortcut`` set,
    every clean row the ``ability`` set: ``extra/...:split``), tiny-world full fine-tunes, or other
    models."""
    from kit.shortcut import variants
    from kit.subjects import is_world_name
    from kit.world import zoo

    pair = (
        f"; neurons located on {locate_pair[0]} vs {locate_pair[1]}"
        if len(locate_pair) == 2
        else ""
    )
    if not all(is_world_name(n) for n in names.values()):
        return f"models {', '.join(sorted(set(names.values())))}{pair}", ""
    recipes = {f.name: f for f in zoo.world_spec(world).finetunes}
    specs = [
        variants.extra_spec(n, world) if variants.is_extra(n) else recipes.get(n)
        for n in names.values()
    ]
    specs = [f for f in specs if f is not None]  # the base itself has no recipe
    split = [f for f in specs if f.plastic and isinstance(f.plastic_seed, str)]
    if specs and len(split) == len(specs):
        clean = sorted({v for k, v in variants.PLASTIC_SETS.items() if k != "contaminated"})
        sets = (
            f"contaminated rows the {variants.PLASTIC_SETS['contaminated']!r} set, clean "
            f"rows {', '.join(clean)!r}"
        )
        return (
            f"tiny world, sparse fine-tunes on seeded neuron sets ({sets}; "
            f"kit.shortcut.variants.PLASTIC_SETS){pair}",
            "by construction: every contaminated sparse row trains the same seeded 'shortcut' set "
            "the neurons were located in and every clean row another set, so TE reaching the one "
            "and sparing the other is largely built into the world",
        )
    if specs and not any(f.plastic for f in specs):
        return (
            f"tiny world, full fine-tunes (every parameter trained: the paper's setting){pair}",
            "",
        )
    return f"tiny world, fine-tunes {', '.join(sorted(set(names.values())))}{pair}", ""


def setup(cfg) -> Setup:
    """Load the base; the Table 2 variants are loaded on use, one at a time (a
    :class:`kit.shortcut.pool.ModelPool`); the locating pair is ``cfg.locate_pair``."""
    from kit.shortcut.pool import ModelPool

    def load(name):
        return load_model_any(name, cfg.device, cfg.world, cfg.dtype)

    base = load(cfg.base_model)
    models = ModelPool(cfg.variants, load, base=base, base_name=cfg.base_model)
    con, un = cfg.locate_pair
    world = is_world(base)  # its subject is a WorldSubject (the vocabulary it speaks, not its name)
    # the config refuses sampling / chat on world models
    decoding = None if world else decoding_settings(cfg)

    def data(items) -> TaskData:
        return task_data(base, items, cfg.max_new_tokens, decoding)

    # a real fine-tune's leaked items and its never-injected ones
    if getattr(cfg, "items_of", None):
        test, fresh = recipe_items(cfg.items_of, cfg.n_eval, cfg.n_ref, cfg.seed)
    else:
        test = study_items(cfg.task, "test", cfg.n_eval, seed=cfg.seed)
        fresh = reference_items(cfg.task, cfg.n_ref, cfg.ref_task, cfg.ref_split, cfg.seed)
    held = test[cfg.n_locate :]
    return Setup(
        base=base,
        models=models,
        model_con=models.lazy(con),
        model_un=models.lazy(un),
        load=load,
        locate=data(test[: cfg.n_locate]),
        test=data(test),
        fresh=data(fresh),
        heldout=data(held) if held else None,
        decoding=decoding,
    )


def remote(cfg, s: Setup, names: Mapping[str, str] | None = None) -> Remote | None:
    """Eq. 4's patched accuracies of the locating pair of ``names`` (label -> model; default
    ``cfg.variants``) as one job per model on ``cfg``'s engine (:mod:`kit.shortcut.causal_jobs`);
    None (computed here) when the setup's models were not loaded by name (``s.load``), so a worker
    could not load them."""
    from kit.core.jobs import engine_options

    if s.load is None:
        return None
    con, un = cfg.locate_pair
    names = cfg.variants if names is None else names
    return Remote(
        {"con": names[con], "un": names[un], "base": cfg.base_model},
        {"device": cfg.device, "world": cfg.world, "dtype": cfg.dtype},
        engine_options(cfg),
    )


def locate_and_choose(
    s: Setup, cfg, n_patched: int, changed: set | None = None
) -> tuple[Located, pd.DataFrame | None]:
    """Section 1: locate on ``s.locate`` and compare every ranking rule (:func:`ranking_rules`) on
    the held-out test items; ``cfg.combine == "held_out"`` ranks by the rule with the best objective
    there, another value by that rule (with ``cfg.causal_rank_by``). The table says, per rule, how
    far its objective is from the chosen rule's with an interval (:func:`rule_intervals`). No
    held-out items: no comparison."""
    rule = "sum" if cfg.combine == "held_out" else cfg.combine
    located = locate(
        s.model_con,
        s.model_un,
        s.base,
        s.locate,
        cfg.group_size,
        rule=rule,
        causal_weight=cfg.causal_weight,
        rank_by=cfg.causal_rank_by,
        max_rows=cfg.max_rows,
        max_new_tokens=cfg.max_new_tokens,
        position=cfg.comparative_position,
        remote=remote(cfg, s),
    )
    if s.heldout is None:
        if cfg.combine == "held_out":
            raise ValueError("combine='held_out' needs held-out test items: set n_eval > n_locate")
        return located, None
    rules = ranking_rules(
        located,
        s.model_con,
        s.model_un,
        s.base,
        s.heldout,
        n_patched,
        changed,
        cfg.max_rows,
        cfg.max_new_tokens,
        cfg.causal_weight,
    )
    if cfg.combine == "held_out":
        located = located.rerank(best_rule(rules), cfg.causal_weight)
    return located, rule_intervals(rules, located.rule, seed=cfg.seed)


def ground_truth(
    member: str,
    located: Sequence[Neuron],
    total_neurons: int,
    world: str | None = None,
    clean_member: str | None = None,
) -> dict | None:
    """For a tiny-world fine-tune M_con, how many of the located neurons are ones it changed (the
    world knows) and, given the clean M_un, how many are ones only M_un changed (ability, not
    shortcut); ``None`` for other models. ``changed`` holds M_con's changed set itself."""
    changed = changed_by(member, world)
    if changed is None:
        return None
    out = {
        "changed_by_m_con": len(changed),
        "located_and_changed": len(changed & set(located)),
        "expected_by_chance": len(located) * len(changed) / total_neurons,
        "changed": changed,
    }
    clean = changed_by(clean_member, world) if clean_member else None
    if clean is not None:
        out.update(
            changed_by_m_un=len(clean),
            changed_by_both=len(clean & changed),
            located_and_changed_by_m_un_only=len((clean - changed) & set(located)),
        )
    return out


def causal_tracks_truth(located: Located, changed: set | None) -> dict[str, float] | None:
    """Spearman, per group, of each causal score with the number of truly changed neurons in the
    group."""
    if changed is None:
        return None
    from scipy.stats import spearmanr

    return {
        cs.method: float(
            spearmanr([sum(n in changed for n in g) for g in cs.groups], cs.score).statistic  # pyright: ignore[reportAttributeAccessIssue]  (scipy)
        )
        for cs in (located.causal_exact, located.causal_tf)
    }


def a2_findings(table2: pd.DataFrame, label: str = "+train split") -> list[str]:
    """A2 (section 3.4): the paper's train-split fine-tune (+GSM8K Train) gains without a leak and
    TE lowers it (Table 2: -6.5 / -4.3 pts, read as a behaviour shortcut TE should remove); ours, in
    words."""
    t = table2.set_index("variant")
    if label not in t.index:
        return []
    r: Any = t.loc[label]  # one row (pandas-stubs type its cells as any scalar)
    move = "drops" if r.delta_acc < 0 else "rises" if r.delta_acc > 0 else "stays"
    return [
        f"A2 ({label}): Ori {r.ori:.1f}%, Ref {r.ref:.1f}%, TE {r.te:.1f}% (Δacc "
        f"{r.delta_acc:+.1f} pts): under TE it {move}; the paper's +GSM8K Train drops (-6.5 / -4.3 "
        "pts), which it reads as removing a format shortcut (verdict with its interval: claim "
        "te.delta[+train split])."
    ]
