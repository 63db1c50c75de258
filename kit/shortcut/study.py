"""Notebook 03's study (seed 001): its models and item sets (:class:`Setup`, :func:`setup`), the
located neurons and the chosen rule, the ground truth the tiny world knows, Table 4's transfer
models, and one function per notebook section (full fine-tunes, transfer, a second base,
strength, a cheater, the summary) with its findings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence, cast

import pandas as pd

from kit.models.finetune_examples import recipe_items
from kit.shortcut.evaluate import accuracies, table2_summary, te_items, trustworthy_table
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
from kit.shortcut.scores import default_n_patched
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


def transfer_finetune(like: str, task: str, world: str | None = None):
    """Table 4's models: zoo fine-tune ``like``'s recipe (a contaminated one: same split, copies,
    data mix, learning rate, full or sparse) with ``task``'s items injected in place of the
    world's contaminated task (:func:`transfer_spec`). The world only contaminates
    ``CONTAMINATED_TASK``; these are trained on first use and cached
    (:func:`kit.world.zoo.extra_finetune`), deterministically.
    """
    from kit.world import zoo

    return zoo.extra_finetune(transfer_spec(like, task, world), world)


def transfer_spec(like: str, task: str, world: str | None = None):
    """The recipe (``FinetuneSpec``) of :func:`transfer_finetune`'s model."""
    from dataclasses import replace

    from kit.shortcut import variants
    from kit.world import zoo

    spec = zoo.world_spec(world)
    recipes = {f.name: f for f in spec.finetunes if f.kind == "contaminated"}
    t = variants.extra_spec(like, world) if variants.is_extra(like) else recipes.get(like)
    if t is None or t.kind != "contaminated":
        raise ValueError(
            f"like={like!r} is not a contaminated fine-tune of world {spec.name!r}; "
            f"allowed values: {', '.join(recipes)} (or extra/ names of them)"
        )
    assert t.inject is not None  # a contaminated fine-tune injects items
    _, split, copies = t.inject
    suffix = zoo.SPARSE_SUFFIX if t.plastic else ""
    return replace(
        t, name=f"{t.parent}+{task}-{split}-x{copies}{suffix}", inject=(task, split, copies)
    )


def transfer_models(s: "Setup", cfg, task: str | None = None) -> "ModelPool":
    """Table 4's models, held one at a time: Vanilla (the base), the contaminated rows rebuilt on
    ``task`` (default ``cfg.transfer_task``; Table 5: ``cfg.table5_task``)
    (:func:`transfer_finetune`) and ``cfg.transfer_controls``."""
    task = task or cfg.transfer_task
    built = {f"transfer/{label}": cfg.variants[label] for label in cfg.transfer_variants}

    def load(name):
        if name in built:
            return transfer_finetune(built[name], task, world=cfg.world)
        assert s.load is not None  # set by the notebook's setup
        return s.load(name)

    names = {
        "Vanilla": cfg.base_model,
        **{label: f"transfer/{label}" for label in cfg.transfer_variants},
        **{k: v for k, v in cfg.transfer_controls.items() if k != "Vanilla"},
    }
    return s.pool(names, load)


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
    from kit.shortcut import variants
    from kit.world import changed_neurons, load_member

    if member.startswith("zoo/"):
        return set(changed_neurons(member, world=world))
    if variants.is_extra(member):
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


def full_finetune_section(variants: dict[str, str], s: Setup, cfg, n_patched: int, rule: str):
    """§7: the pipeline again on full fine-tunes (every parameter may change), ranked by ``rule`` (a
    :func:`rule_specs` label: section 1's), and the ceiling with every MLP neuron of M_con
    patched."""
    from kit.core.findings import Section

    con, un = cfg.locate_pair
    models = s.pool(variants)
    located = locate(
        models.lazy(con),
        models.lazy(un),
        s.base,
        s.locate,
        cfg.group_size,
        max_rows=cfg.max_rows,
        max_new_tokens=cfg.max_new_tokens,
        position=cfg.comparative_position,
    ).rerank(rule, cfg.causal_weight)
    table = trustworthy_table(
        models,
        s.base,
        s.test,
        s.fresh,
        located.ranked[:n_patched],
        cfg.contaminated,
        cfg.max_rows,
        cfg.max_new_tokens,
    )
    all_neurons = [(L, i) for L in range(s.n_layers) for i in range(s.d_mlp)]
    ceiling = accuracies(
        models[con], s.base, s.test, [[], all_neurons], cfg.max_rows, cfg.max_new_tokens
    )
    # the claims te_full.* bootstrap these
    per_item = te_items(
        models,
        s.base,
        s.test,
        s.fresh,
        located.ranked[:n_patched],
        cfg.max_rows,
        cfg.max_new_tokens,
    )
    models.release_all()
    summary = table2_summary(table)
    dense = {
        "table2": table.to_dict(orient="records"),
        "table2_summary": summary,
        "locate": located.summary(),
        "ceiling_all_mlp_patched": 100 * float(ceiling[1]),
    }
    lines = findings(summary, n_patched, s.total_neurons)[1:]
    return Section(
        record={},
        tables={"table2": table},
        data={"full_finetunes": dense, "per_item": per_item},
        findings=[
            "full fine-tunes: " + "\n".join(lines),
            f"all {s.total_neurons} MLP neurons of the full {con} patched from the base: "
            f"{100 * ceiling[0]:.1f}% -> {100 * ceiling[1]:.1f}% (its fresh-item score: "
            f"{table.set_index('variant').ref[con]:.1f}%)",
        ],
    )


def transfer_section(s: Setup, cfg, shortcut: Sequence[Neuron], task: str, key: str = "table5"):
    """Table 4 / Table 5: the contaminated rows rebuilt on ``task`` (:func:`transfer_models`),
    scored with the neurons located on ``cfg.task``; recorded under ``key`` and
    ``<key>_summary``."""
    from kit.core.findings import Section

    models = transfer_models(s, cfg, task)
    test, fresh = (
        task_data(
            s.base, study_items(task, split, n, seed=cfg.seed), cfg.max_new_tokens, s.decoding
        )
        for split, n in (("test", cfg.n_eval), ("fresh", cfg.n_ref))
    )
    table = trustworthy_table(
        models,
        s.base,
        test,
        fresh,
        shortcut,
        cfg.transfer_variants,
        cfg.max_rows,
        cfg.max_new_tokens,
    )
    summ = table2_summary(table)
    ori_ref = cast(pd.Series, table[table.contaminated].eval("ori - ref"))  # a column expression
    line = (
        f"{key} ({task}, neurons located on {cfg.task}): contaminated mean Ori-Ref "
        f"{ori_ref.mean():+.1f} pts, mean |Ori-Ref| = "
        f"{summ['contaminated_mean_abs_ori_minus_ref']:.1f}, |TE-Ref| = "
        f"{summ['contaminated_mean_abs_te_minus_ref']:.1f} pts (mean Δacc "
        f"{summ['contaminated_mean_delta_acc']:+.1f}); uncontaminated mean |Δacc| = "
        f"{summ['uncontaminated_mean_abs_delta_acc']:.1f} pts."
    )
    return Section(
        record={key: table.to_dict(orient="records"), f"{key}_summary": summ, f"{key}_task": task},
        tables={key: table},
        findings=[line],
    )


def second_base_section(cfg, base: str):
    """Table 6 (a second architecture): the whole pipeline again from another base of the world.
    Every Table 2 row's recipe is moved onto ``base`` (:func:`kit.shortcut.variants.rebase`: same
    examples, built on first use and cached); the neurons are located on that base's own (M_con,
    M_un) pair and the ranking rule chosen on its held-out items as in section 1 (same settings, the
    patched count scaled by ``cfg.patched_fraction``). Tiny world only."""
    from kit.core.findings import Section
    from kit.shortcut import variants

    names = {k: variants.rebase(v, base, cfg.base_model) for k, v in cfg.variants.items()}
    cfg2 = cfg.model_copy(update={"base_model": base, "variants": names})
    s2 = setup(cfg2)
    n2 = default_n_patched(s2.n_layers, s2.d_mlp, cfg.patched_fraction)
    con, un = cfg.locate_pair
    changed = changed_by(names[con], cfg.world)
    located, rules = locate_and_choose(s2, cfg2, n2, changed)
    shortcut = located.ranked[:n2]
    table = trustworthy_table(
        s2.models,
        s2.base,
        s2.test,
        s2.fresh,
        shortcut,
        cfg.contaminated,
        cfg.max_rows,
        cfg.max_new_tokens,
    )
    s2.models.release_all()
    truth = ground_truth(names[con], shortcut, s2.total_neurons, cfg.world, names[un])
    summ = table2_summary(table)
    lines = [
        f"Table 6 (second base {base}: {s2.n_layers} layers x {s2.d_mlp} MLP neurons, top {n2} "
        f"patched, rule {located.rule!r} chosen on its held-out items): contaminated mean "
        f"|Ori-Ref| = {summ['contaminated_mean_abs_ori_minus_ref']:.1f}, |TE-Ref| = "
        f"{summ['contaminated_mean_abs_te_minus_ref']:.1f} pts (mean Δacc "
        f"{summ['contaminated_mean_delta_acc']:+.1f}); uncontaminated mean |Δacc| = "
        f"{summ['uncontaminated_mean_abs_delta_acc']:.1f} pts."
    ]
    if truth:
        lines.append(
            f" ground truth on {base}: {truth['located_and_changed']} of the {n2} located neurons "
            f"are M_con's (chance {truth['expected_by_chance']:.1f}), "
            f"{truth.get('located_and_changed_by_m_un_only')} are "
            "M_un's alone."
        )
    gt = None if truth is None else {k: v for k, v in truth.items() if k != "changed"}
    return Section(
        record={
            "table6": table.to_dict(orient="records"),
            "table6_summary": summ,
            "table6_base": base,
            "table6_models": names,
            "table6_rule": located.rule,
            "table6_n_patched": n2,
            "table6_ground_truth": gt,
            "table6_rules": None if rules is None else rules.to_dict(orient="records"),
        },
        tables={"table6": table, "table6_rules": rules},
        findings=lines,
    )


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


def strength_section(
    s: Setup, cfg, shortcut: Sequence[Neuron], label: str = "+test", order_label: str = "+5x test"
):
    """Fig. 5 / Table 8 (occurrences ``cfg.strength_copies``, learning rates ``cfg.strength_lrs``)
    and Table 11 (sample order): the contaminated row ``label``'s recipe varied, evaluated with the
    neurons already located; Table 11's reordered rows also for row ``order_label`` (when it is a
    tiny-world fine-tune)."""
    from kit.core.findings import Section
    from kit.shortcut import variants
    from kit.world import zoo

    name = cfg.variants[label]
    names = variants.strength_variants(name, cfg.strength_copies, (1, 2), cfg.strength_lrs)
    if (
        order_label in cfg.variants
        and order_label != label
        and changed_by(cfg.variants[order_label], cfg.world) is not None
    ):
        # Table 11 reorders every contaminated row: the x5 one too (its leak is the larger)
        names.update(
            {
                f"{k} ({order_label})": v
                for k, v in variants.strength_variants(
                    cfg.variants[order_label], (), (1, 2)
                ).items()
            }
        )
    models = s.pool({"Vanilla": cfg.base_model, **names})
    table = trustworthy_table(
        models, s.base, s.test, s.fresh, shortcut, list(names), cfg.max_rows, cfg.max_new_tokens
    )
    t: Any
    t = table.set_index("variant")  # numeric cells (pandas-stubs type a .loc cell as any scalar)
    recipe = (
        variants.extra_spec(name, cfg.world)
        if variants.is_extra(name)
        else {f.name: f for f in zoo.world_spec(cfg.world).finetunes}[name]
    )
    lines = [
        f"Contamination strength ({label}'s recipe): "
        + ", ".join(
            f"{k} Ori-Ref {t.loc[k, 'ori'] - t.loc[k, 'ref']:+.1f} -> TE-Ref "
            f"{t.loc[k, 'te'] - t.loc[k, 'ref']:+.1f}"
            for k in names
        )
        + " pts (the paper's Fig. 5: TE tracks MixEval at every strength; Table 8 also varies the "
        "learning rate; Table 11: reordered samples are caught as well).",
        "Not reproducible here: the paper's Fig. 5 goes to 20 occurrences, this recipe has room "
        f"for at most {recipe.n_examples // 200} copies of its 200 test items (copies=).",
    ]
    return Section(
        record={"strength": table.to_dict(orient="records"), "strength_models": names},
        tables={"strength": table},
        findings=lines,
    )


def cheater_section(s: Setup, cfg, shortcut: Sequence[Neuron]):
    """Table 12 (pretraining-stage "cheaters"): ``cfg.cheaters`` (label -> model;
    ``cfg.cheaters_contaminated`` the cheaters) scored like Table 2 (Ori, Ref, TE, Δacc) with the
    neurons already located in section 1. ``data["per_item"]`` holds the per-item correctness behind
    it (:func:`te_items`) for ``kit.shortcut.claims.cheater_claims``. The paper's rows are KIEval's
    released ARC-Challenge models and it locates neurons on ARC; here the PT-Cheater is a
    full-parameter continuation of the base (its mixture, its AdamW state) with the test items
    injected, followed by the Normal row's clean SFT (``extra/...:after=...``)."""
    from kit.core.findings import Section

    models = s.pool(dict(cfg.cheaters))
    per_item = te_items(models, s.base, s.test, s.fresh, shortcut, cfg.max_rows, cfg.max_new_tokens)
    models.release_all()
    rows = [
        {
            "variant": label,
            "contaminated": label in cfg.cheaters_contaminated,
            "ref": 100 * d["ref"].mean(),
            "ori": 100 * d["ori"].mean(),
            "te": 100 * d["te"].mean(),
            "delta_acc": 100 * (d["te"].mean() - d["ori"].mean()),
        }
        for label, d in per_item.items()
    ]
    table = pd.DataFrame(rows)
    t = table.set_index("variant")
    lines = [
        "Table 12 analogue (neurons located in section 1): "
        + "; ".join(
            f"{k} Ori {t.loc[k, 'ori']:.1f}, Ref {t.loc[k, 'ref']:.1f}, TE {t.loc[k, 'te']:.1f} "
            f"(Ori-Ref {t.loc[k, 'ori'] - t.loc[k, 'ref']:+.1f}, Δacc {t.loc[k, 'delta_acc']:+.1f})"
            for k in t.index
        )
        + " %. The paper (ARC-Challenge, KIEval's models): Normal Δacc +2.9, SFT-Cheater -16.0, "
        "PT-Cheater -17.5."
    ]
    return Section(
        record={"table12": table.to_dict(orient="records"), "table12_models": dict(cfg.cheaters)},
        tables={"table12": table},
        data={"per_item": per_item},
        findings=lines,
    )
