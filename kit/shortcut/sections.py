"""Notebook 03's sections past Table 2 (seed 001), each scoring another set of models like Table 2
(Ori, Ref, TE, Δacc) and recording its findings: the full fine-tunes (section 7), Table 4 / 5's
transfer models (a contaminated row's recipe on another task) and their section, a second base
(Table 6), contamination strength and sample order (Fig. 5 / Tables 8 and 11) and the
pretraining-stage cheaters (Table 12).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence, cast

import pandas as pd

from kit.shortcut.evaluate import accuracies, table2_summary, te_items, trustworthy_table
from kit.shortcut.items import study_items, task_data
from kit.shortcut.patching import Neuron
from kit.shortcut.ranking import locate
from kit.shortcut.scores import default_n_patched
from kit.shortcut.study import (
    Setup,
    changed_by,
    findings,
    ground_truth,
    locate_and_choose,
    remote,
    setup,
)

if TYPE_CHECKING:
    from kit.shortcut.pool import ModelPool


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
        remote=remote(cfg, s, variants),
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
