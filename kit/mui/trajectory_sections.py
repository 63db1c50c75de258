"""Notebook 02's sections on the measured models (seed 000, sections 3.3-3.4): the checkpoint
trajectory (every step, a few evenly spaced checkpoints, the regression report) and corollaries 1
and 2 (direction counts and checks per split beside the paper's tables), with their figures.

They read the settings and directions of :mod:`kit.mui.trajectories`; the paper's own tables get
theirs from :func:`kit.mui.published_trajectories.published_section`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import pandas as pd

from kit.mui.directions import contamination_text, corollary_checks, counts_dict, step_directions
from kit.mui.plots import plot_direction_counts, plot_trajectories
from kit.mui.regression import regression_report
from kit.mui.trajectories import Settings, coarse_checkpoints

if TYPE_CHECKING:
    from kit.core.findings import Section


def source_label(models: Sequence[str]) -> str:
    """What part 2 measured, for titles and check names: ``tiny world`` (zoo members) or
    ``measured`` (real models: Hugging Face ids, directories, twins)."""
    from kit.models.sources import form_of

    return "tiny world" if all(form_of(str(m)).world_member for m in models) else "measured"


def checkpoint_section(
    measurements: pd.DataFrame, pretraining: pd.DataFrame, checkpoints: Sequence[str], cfg
):
    """Part 2, checkpoints: the direction of every step per split, the same over a few evenly spaced
    checkpoints (``cfg.coarse_checkpoints``), and the regression report over the checkpoints."""
    from kit.core.findings import Section

    order = {m: i for i, m in enumerate(checkpoints)}
    points = measurements[measurements["model"].isin(list(order))].assign(
        order=lambda d: d["model"].map(order)
    )
    short = lambda name: name.split("@")[-1].replace("zoo/", "")  # noqa: E731
    src = source_label(checkpoints or list(measurements["model"]))
    sec = Section()
    for split in cfg.splits:
        st = pretraining[pretraining["split"] == split]
        if len(st):
            sec.tables[f"every step, {split} split"] = st.assign(to=st["to"].map(short)).pivot(
                index="task", columns="step", values="direction"
            )
        sec.figures[f"tiny_checkpoints_{split}"] = plot_trajectories(
            points[points["split"] == split],
            st,
            series="task",
            label="model",
            short=short,
            title=f"{src} checkpoints, {split} split",
        )
    coarse = coarse_checkpoints(checkpoints, cfg.coarse_checkpoints)
    coarse_points = points[points["model"].isin(coarse)]
    pre_coarse = step_directions(
        coarse_points,
        series=["task", "split"],
        order="order",
        label="model",
        tol_perf=cfg.tol_perf,
        tol_mui=cfg.tol_mui,
    )
    for split in cfg.splits:
        st = pre_coarse[pre_coarse["split"] == split]
        if len(st):
            sec.tables[f"{len(coarse)} checkpoints {[short(c) for c in coarse]}, {split} split"] = (
                st.assign(to=st["to"].map(short)).pivot(
                    index="task", columns="to", values="direction"
                )[[short(c) for c in coarse[1:]]]
            )
    split = cfg.splits[0]
    sec.figures[f"tiny_checkpoints_coarse_{split}"] = plot_trajectories(
        coarse_points[coarse_points["split"] == split],
        pre_coarse[pre_coarse["split"] == split],
        series="task",
        label="model",
        short=short,
        title=f"{src}, {len(coarse)} evenly spaced checkpoints, {split} split",
    )
    if len(points):
        sec.tables[f"regression report over the checkpoints ({split} split)"] = regression_report(
            points[points["split"] == split].rename(columns={"model": "checkpoint"}),
            cfg.tol_perf,
            cfg.tol_mui,
            order="order",
        )
    sec.data.update(coarse=coarse, pre_coarse=pre_coarse)
    return sec


def corollary_section(
    computed: dict[str, pd.DataFrame],
    pre_coarse: pd.DataFrame,
    coarse: Sequence[str],
    published: "Section",
    settings: Settings,
    cfg,
):
    """Corollaries 1 and 2: direction counts and checks of the tiny world per split, beside the
    paper's tables (``published``: :func:`published_section`'s output)."""
    from kit.core.findings import Section

    pre, spec, cont, ctrl = (
        computed[k] for k in ("pretraining", "specialised", "contaminated", "controls")
    )
    src = source_label(settings.models())
    pairs_all = pd.concat(
        [cont.assign(kind="contaminated"), ctrl.assign(kind="control")], ignore_index=True
    )

    def split_counts(split: str) -> dict[str, dict[str, int]]:
        st, sp = pre[pre["split"] == split], spec[spec["split"] == split]
        co, cc = cont[cont["split"] == split], ctrl[ctrl["split"] == split]
        late = st["step"] > st["n_steps"] - cfg.late_steps
        pc = pre_coarse[pre_coarse["split"] == split]
        return {
            "pretraining_all": counts_dict(st),
            "pretraining_early": counts_dict(st[~late]),
            "pretraining_late": counts_dict(st[late]),
            "specialised_in_domain": counts_dict(sp[sp["domain"] == "in-domain"]),
            "specialised_ood": counts_dict(sp[sp["domain"] == "ood"]),
            "contamination_in_domain": counts_dict(co[co["domain"] == "in-domain"]),
            "contamination_in_group": counts_dict(co[co["domain"] == "in-group"]),
            "contamination_ood": counts_dict(co[co["domain"] == "ood"]),
            "control_in_domain": counts_dict(cc[cc["domain"] == "in-domain"]),
            "control_ood": counts_dict(cc[cc["domain"] == "ood"]),
            # the coarse trajectory's last step is its late one (see cfg.coarse_checkpoints)
            "pretraining_coarse_early": counts_dict(pc[pc["step"] < pc["n_steps"]]),
            "pretraining_coarse_late": counts_dict(pc[pc["step"] == pc["n_steps"]]),
        }

    counts = {split: split_counts(split) for split in cfg.splits}
    checks = {"paper tables": published.data["checks"]}
    for split in cfg.splits:
        checks[f"{src}, {split} split"] = corollary_checks(
            pre[pre["split"] == split],
            spec[spec["split"] == split],
            cont[cont["split"] == split],
            late_steps=cfg.late_steps,
            controls=ctrl[ctrl["split"] == split],
            uncontaminated=pd.concat(
                [spec[spec["split"] == split], ctrl[ctrl["split"] == split]], ignore_index=True
            ),
        )
        checks[f"{src}, {split} split, {len(coarse)} checkpoints"] = corollary_checks(
            pre_coarse[pre_coarse["split"] == split], late_steps=1
        )
    record = dict(
        computed_direction_counts=counts,
        computed_corollary_checks={
            k: v.to_dict(orient="records") for k, v in checks.items() if k != "paper tables"
        },
        computed_tolerance={"perf": cfg.tol_perf, "mui": cfg.tol_mui},
        contamination_leaked_task=pairs_all[pairs_all["domain"] == "in-domain"][
            ["kind", "model", "task", "split", "base_perf", "perf", "base_mui", "mui", "direction"]
        ].to_dict(orient="records"),
        tiny_settings={
            "checkpoints": settings.checkpoints,
            "specialised": settings.specialised,
            "contaminated": settings.contaminated,
            "controls": settings.controls,
            "contaminated_tasks": settings.contaminated_tasks,
            "tasks": settings.tasks,
            "n_items": cfg.n_items,
        },
    )
    paper_keys = (
        "pretraining_early",
        "pretraining_late",
        "specialised_in_domain",
        "specialised_ood",
        "contamination_in_domain",
        "contamination_ood",
    )
    tiny_keys = (
        "pretraining_coarse_early",
        "pretraining_coarse_late",
        "specialised_in_domain",
        "specialised_ood",
        "contamination_in_domain",
        "contamination_ood",
        "control_ood",
    )
    bars = {f"paper: {k}": v for k, v in published.data["counts"].items() if k in paper_keys}
    bars.update(
        {
            f"{'tiny' if src == 'tiny world' else src} ({cfg.splits[0]}): {k}": v
            for k, v in counts[cfg.splits[0]].items()
            if k in tiny_keys
        }
    )
    fig = plot_direction_counts(bars, title="Share of each direction per setting")
    return Section(
        record=record,
        figures={"direction_counts": fig},
        # the corollary checks' "agrees" (modal direction) is a description, not a test: the
        # findings that state verdicts come from the claims (kit.mui.claims)
        findings=[contamination_text(cont, ctrl)],
        data={"checks": checks},
    )
