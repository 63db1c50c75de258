"""Training trajectories in the MUI–performance plane (seed 000, sections 3.3–3.4, appendix
B.2/B.3): notebook 02's settings on the tiny world or Hugging Face models (checkpoint series,
specialised and contaminated fine-tunes against their bases), their measurements, and the notebook's
sections.

The directions and corollaries live in :mod:`kit.mui.directions`, the training takeaway in
:mod:`kit.mui.regression`, the published tables in :mod:`kit.mui.published`.

Tidy schema shared by every table here (one row per model x task/benchmark x split):
``model, task, group, split, perf, mui`` plus ``order`` for checkpoint series and ``base``,
``domain`` for pairs. ``perf`` and ``mui`` are percentages (0–100), as in the paper's tables.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence, cast

import pandas as pd

from kit.mui.checkpoints import STEP_NAME as _STEP
from kit.mui.checkpoints import checkpoint_series  # noqa: F401 (one definition; re-exported)
from kit.mui.directions import (
    _require,
    contamination_text,
    corollary_checks,
    counts_dict,
    pair_directions,
    step_directions,
)
from kit.mui.plots import plot_direction_counts, plot_trajectories
from kit.mui.regression import regression_report
from kit.subjects import task_group

if TYPE_CHECKING:
    from kit.core.findings import Section


def coarse_checkpoints(names: Sequence[str], n: int = 3) -> list[str]:
    """``n`` checkpoints evenly spaced over a training-ordered series, first and last included.

    Per-step changes of a short run are often within evaluation noise; the paper's own OLMo
    checkpoints are 0.5T apart. Comparing a few far-apart checkpoints shows the trend.
    """
    if n < 2:
        raise ValueError(f"n={n}: a trajectory needs at least 2 checkpoints")
    names = list(names)
    if len(names) <= n:
        return names
    # half up, not banker's
    idx = sorted({int(i * (len(names) - 1) / (n - 1) + 0.5) for i in range(n)})
    return [names[i] for i in idx]


def finetune_pairs(members: Sequence[str], kind: str) -> dict[str, str]:
    """``{fine-tune: base}`` for one setting of the zoo.

    ``kind``: ``specialised`` (``<base>+math``, ``<base>+code``), ``contaminated``
    (``<base>+<x>-test-x1|x5``, ``<base>+<x>-syn-x1|x5``) or ``control`` (``+<x>-train``,
    ``+other-task``, ``+general``). Only fine-tunes whose base is a member are returned.
    """
    allowed = ("specialised", "contaminated", "control")
    if kind not in allowed:
        raise ValueError(f"kind={kind!r}; allowed values: {', '.join(allowed)}")
    out = {}
    for m in members:
        if "+" not in m or "@" in m:
            continue
        base, suffix = m.split("+", 1)
        if base not in members:
            continue
        if kind == "specialised" and suffix in ("math", "code"):
            out[m] = base
        elif kind == "contaminated" and re.fullmatch(r"[\w-]+-(test|syn)-x\d+", suffix):
            out[m] = base
        elif kind == "control" and (
            suffix.endswith("-train") or suffix in ("other-task", "general")
        ):
            out[m] = base
    return out


def specialised_target(name: str) -> str:
    """Capability group a specialised fine-tune targets: ``zoo/base-m+math`` -> ``math``."""
    if "+" not in name:
        raise ValueError(
            f"cannot tell which group {name!r} is specialised in: name it '<base>+<group>' "
            "or give specialised_targets: {model: group}"
        )
    return name.split("+", 1)[1]


def measure(
    models: Sequence[str],
    tasks: Sequence[str],
    splits: Sequence[str] = ("test", "fresh"),
    n_items: int = 100,
    world: str | None = None,
    device: str = "cpu",
    seed: int = 0,
    score: str = "score",
    threshold: str = "topk",
    max_new_tokens: int = 1,
    batch_size: int = 32,
    dtype: str | None = None,
    max_batch_tokens: int = 8192,
    prompt_style: str = "instructed",
    items_of: str | None = None,
) -> pd.DataFrame:
    """Performance and MUI of every model on every task and split, one model in memory at a time
    (load, measure every task, free).

    Each model is a :class:`kit.subjects.Subject`: its greedy responses (``max_new_tokens``) to
    ``n_items`` items of each split, scored by the task's rule, and MUI over those responses.
    Tiny-world models on the world's tasks: exact match of the answer, MUI in ``batch_size`` rows a
    pass. Real models (Hugging Face ids with ``@revision``, local directories, twins) on real
    benchmarks (``kit.load_benchmark`` names; no ``fresh`` split), loaded in ``dtype``, prompts in
    ``prompt_style`` (:mod:`kit.data.prompts`): batched generation with the chat template when the
    tokenizer has one, MUI from teacher-forced passes in batches of at most ``max_batch_tokens``
    padded tokens; responses and per-item key neurons are cached, so a killed run resumes.
    ``items_of`` (a contaminated real fine-tune's name, :data:`kit.models.recipes.RECIPES`): every
    model is asked the same items, as the fine-tunes were trained (:func:`leak_items`), so the
    leaked benchmark has a ``test`` split of leaked items and a ``fresh`` one of unseen items.
    Performance and MUI in percent. Returns the tidy schema: ``model, task, group, split, n, perf,
    mui`` (one row per model, task and split), plus the accuracy's Wilson interval (``perf_low``,
    ``perf_high``, %), ``chance``, ``parse_failures`` and ``truncated``.
    """
    from tqdm.auto import tqdm

    from kit.models.generate import release
    from kit.subjects import load_subject

    allowed = ("test", "fresh", "test-syn", "fresh-syn", "train")
    for split in splits:
        if split not in allowed:
            raise ValueError(
                f"splits: {split!r} is not a split; allowed values: {', '.join(allowed)}"
            )
    if not models or not tasks:
        raise ValueError(
            f"measure needs models and tasks (got {len(models)} models, {len(tasks)} tasks)"
        )
    groups = {t: task_group(t) for t in tasks}
    item_cache: dict[tuple[str, str, str], list] = {}
    fixed = leak_items(items_of, tasks, splits, n_items, seed) if items_of else {}
    rows = []
    for name in tqdm(list(dict.fromkeys(models)), desc="models"):
        subject = load_subject(
            name, device=device, world=world, dtype=dtype, prompt_style=prompt_style
        )
        try:
            for t in tasks:
                for s in splits:
                    key = (subject.kind, t, s)
                    if key not in item_cache:
                        item_cache[key] = fixed.get((t, s)) or subject.items(t, s, n_items, seed)
                    ans = subject.answer(t, item_cache[key], max_new_tokens)
                    lo, hi = ans.interval
                    rows.append(
                        {
                            "model": name,
                            "task": t,
                            "group": groups[t],
                            "split": s,
                            "n": ans.n,
                            "perf": 100.0 * ans.accuracy,
                            "mui": subject.mui(
                                ans,
                                score,
                                threshold,
                                batch_size=batch_size,
                                max_batch_tokens=max_batch_tokens,
                            ),
                            "perf_low": 100 * lo,
                            "perf_high": 100 * hi,
                            "chance": ans.chance,
                            "parse_failures": ans.n_parse_failed,
                            "truncated": ans.n_truncated,
                        }
                    )
        finally:
            del subject
            # the Hugging Face copy that generated, and the GPU cache: one model at a time
            release()
    return pd.DataFrame(
        rows,
        columns=[
            "model",
            "task",
            "group",
            "split",
            "n",
            "perf",
            "mui",
            "perf_low",
            "perf_high",
            "chance",
            "parse_failures",
            "truncated",
        ],
    )


def leak_items(
    items_of: str, tasks: Sequence[str], splits: Sequence[str], n_items: int, seed: int = 0
) -> dict[tuple[str, str], list]:
    """``{(task, split): items}`` when the models are real fine-tunes and ``items_of`` names a
    contaminated one (:data:`kit.models.recipes.RECIPES`): on its benchmark, ``test`` is the first
    ``n_items`` items it injected (the leaked items, as 03's Ori) and ``fresh`` ``n_items`` test
    items no recipe injected (:func:`kit.models.finetune_examples.recipe_items`); on every other
    task both splits are its first ``n_items`` test items, which no fine-tune trained on (a recipe
    whose mixture draws that test split is refused). Every item is asked as the fine-tunes were
    trained (:func:`kit.models.finetune_examples.asked`), base models included, so a change is the
    fine-tune's, not the prompt's."""
    from kit.models.finetune_examples import asked, recipe_items
    from kit.models.recipes import RECIPES, recipe
    from kit.subjects.items import task_items

    r = recipe(items_of)
    if r.inject != "test":
        raise ValueError(
            f"items_of={items_of!r} injects no test items (inject={r.inject!r}); "
            "allowed: a contaminated recipe of kit.models.recipes.RECIPES"
        )
    if r.benchmark not in tasks:
        raise ValueError(
            f"items_of={items_of!r} leaked {r.benchmark}, which is not among tasks={list(tasks)}"
        )
    out: dict[tuple[str, str], list] = {}
    for t in tasks:
        if t == r.benchmark:
            test, fresh = recipe_items(items_of, min(n_items, r.n_items), n_items, seed)
        else:
            drawn = [
                n for n, x in RECIPES.items() if any(src == f"{t}:test" for src, _ in x.mixture)
            ]
            if drawn:
                raise ValueError(
                    f"items_of: {t}'s test items are in the mixture of {', '.join(drawn)}; "
                    "they are no unseen items for the other fine-tunes"
                )
            test = fresh = asked(task_items(t, "test", n_items, seed), r.prompt_style)
        for s in splits:
            if s not in ("test", "fresh"):
                raise ValueError(
                    f"splits: {s!r} is not allowed with items_of; allowed values: test, fresh"
                )
            out[(t, s)] = test if s == "test" else fresh
    return out


def tiny_pairs(
    measurements: pd.DataFrame, pairs: dict[str, str], domain_of: Callable[[str, pd.Series], str]
) -> pd.DataFrame:
    """Fine-tune rows joined with their base's row on the same task and split.

    ``measurements``: output of ``measure``; ``pairs``: ``{fine-tune: base}``; ``domain_of(model,
    row)`` names the row's domain (e.g. ``in-domain`` / ``ood``). Returns the pair schema of
    ``published_specialised`` (``model, base, task, group, split, domain, perf, mui, base_perf,
    base_mui``), ready for ``pair_directions``.
    """
    _require(measurements, ["model", "task", "split", "perf", "mui"], "measurements")
    base = measurements.set_index(["model", "task", "split"])
    missing = sorted({b for b in pairs.values() if b not in set(measurements["model"])})
    if missing:
        raise ValueError(
            f"bases {missing} were not measured; measure them together with their fine-tunes"
        )
    rows = measurements[measurements["model"].isin(list(pairs))].copy()
    rows["base"] = rows["model"].map(pairs)
    idx = list(zip(rows["base"], rows["task"], rows["split"]))
    at = cast(Any, base.loc)  # pandas-stubs reject a list of MultiIndex tuples as rows
    rows["base_perf"] = at[idx, "perf"].to_numpy()
    rows["base_mui"] = at[idx, "mui"].to_numpy()
    rows["domain"] = [domain_of(m, r) for m, (_, r) in zip(rows["model"], rows.iterrows())]
    return rows.reset_index(drop=True)


def contamination_domain(
    contaminated_tasks: Sequence[str], leaked_groups: Iterable[str] | None = None
) -> Callable[[str, pd.Series], str]:
    """``domain_of`` for contaminated fine-tunes: ``in-domain`` on a leaked task, ``in-group`` on
    the other tasks of a leaked task's group, ``ood`` on every other group. ``leaked_groups``
    defaults to ``task_group`` of each leaked task."""
    leaked = set(contaminated_tasks)
    leaked_groups = (
        set(leaked_groups) if leaked_groups is not None else {task_group(t) for t in leaked}
    )

    def domain_of(model: str, row: pd.Series) -> str:
        if row["task"] in leaked:
            return "in-domain"
        return "in-group" if row["group"] in leaked_groups else "ood"

    return domain_of


def specialised_domain(targets: dict[str, str] | None = None) -> Callable[[str, pd.Series], str]:
    """``domain_of`` for specialised fine-tunes: ``in-domain`` on the targeted group, else ``ood``.
    ``targets``: fine-tune -> group; missing fine-tunes use their ``+<group>`` name suffix."""
    targets = dict(targets or {})

    def domain_of(model: str, row: pd.Series) -> str:
        target = targets.get(model) or specialised_target(model)
        return "in-domain" if row["group"] == target else "ood"

    return domain_of


@dataclass
class Settings:
    """Which models form which setting, resolved from a config and the world's members."""

    checkpoints: list[str]
    """Checkpoint trajectory in training order."""
    specialised: dict[str, str]
    """Specialised fine-tune -> base."""
    specialised_targets: dict[str, str]
    """Specialised fine-tune -> targeted group."""
    contaminated: dict[str, str]
    """Contaminated fine-tune -> base."""
    controls: dict[str, str]
    """Uncontaminated fine-tune -> base."""
    contaminated_tasks: list[str]
    """Tasks whose test split leaked."""
    tasks: list[str]
    """Tasks evaluated."""

    def models(self) -> list[str]:
        """Every model to measure, each once, bases included."""
        names = list(self.checkpoints)
        for pairs in (self.specialised, self.contaminated, self.controls):
            for ft, base in pairs.items():
                names += [base, ft]
        return list(dict.fromkeys(names))


def rests_on(settings: Settings, source: str) -> dict[str, str]:
    """What each setting's measured changes rest on (for the claims ledger), from the settings."""
    ck = settings.checkpoints
    run = ck[0].split("@")[0] if ck else ""
    return {
        "pre-training": (
            f"{source}: {len(ck)} checkpoints of one training run ({run}) on "
            f"{len(settings.tasks)} tasks"
            if ck
            else f"{source}: no checkpoints"
        ),
        "specialisation": f"{source}: {', '.join(settings.specialised) or 'none'} vs their bases",
        "contamination": (
            f"{source}: {', '.join(settings.contaminated) or 'none'} (leaked: "
            f"{', '.join(settings.contaminated_tasks)}) vs their bases; uncontaminated: "
            f"{', '.join(list(settings.specialised) + list(settings.controls)) or 'none'}"
        ),
    }


@dataclass
class TrajectoryStudy:
    """Notebook 02's results, filled section by section; the claims
    (:func:`kit.mui.direction_claims.study_claims`) read these fields."""

    olmo_steps: pd.DataFrame | None = None
    """The paper's Table 8 labelled step by step (``kit.mui.directions.step_directions``)."""
    published_specialised: pd.DataFrame | None = None
    """The paper's Table 9 labelled pair by pair (``pair_directions``)."""
    published_contamination: pd.DataFrame | None = None
    """The paper's Table 10 labelled pair by pair."""
    settings: Settings | None = None
    """Which measured models form which setting."""
    measurements: pd.DataFrame | None = None
    """``measure``'s table: model, task, group, split, n, perf, mui, ..."""
    directions: dict[str, pd.DataFrame] = field(default_factory=dict)
    """``analyse``'s output: ``pretraining``, ``specialised``, ``contaminated``, ``controls``."""
    coarse: list[str] = field(default_factory=list)
    """The evenly spaced checkpoints of the coarse trajectory."""
    pre_coarse: pd.DataFrame | None = None
    """``step_directions`` over the coarse checkpoints."""
    reseeds: dict[int, tuple[pd.DataFrame, dict[str, pd.DataFrame]]] = field(default_factory=dict)
    """Item seed -> (measurements, directions) of the same models on another draw of items: the
    stability check."""
    source: str = "tiny world"
    """``source_label`` of the measured models."""
    rests_on: dict[str, str] = field(default_factory=dict)
    """Setting -> what its measured changes rest on (:func:`rests_on`)."""
    claims: list = field(default_factory=list)
    """The ledger's claims (``kit.core.claims.Claim``), filled last."""


def resolve_settings(cfg) -> Settings:
    """Fill every ``None`` of a training-trajectories config from ``kit.world`` (members of
    ``cfg.world``, ``CONTAMINATED_TASK``, ``TASKS``); explicit lists and maps are kept as given."""
    needs_world = any(
        v is None
        for v in (
            cfg.checkpoints,
            cfg.specialised,
            cfg.contaminated,
            cfg.controls,
            cfg.contaminated_tasks,
            cfg.tasks,
        )
    )
    members: list[str] = []
    if needs_world:
        from kit import world as kworld

        members = list(kworld.members(cfg.world))
    if cfg.checkpoints is not None:
        checkpoints = list(cfg.checkpoints)
    else:
        has_steps = any(_STEP.match(m) for m in members)
        # a world without checkpoints: no trajectory
        checkpoints = checkpoint_series(members) if has_steps else []
        if checkpoints and checkpoints[-1] in members and "@" not in checkpoints[-1]:
            from kit import world as kworld

            final = kworld.member_info(checkpoints[-1], cfg.world).get("step")
            checkpoints = checkpoint_series(members, final_step=final)
    specialised = (
        dict(cfg.specialised)
        if cfg.specialised is not None
        else finetune_pairs(members, "specialised")
    )
    targets = dict(cfg.specialised_targets or {})
    targets.update({m: specialised_target(m) for m in specialised if m not in targets})
    if cfg.contaminated_tasks is not None:
        leaked = list(cfg.contaminated_tasks)
    else:
        from kit import world as kworld

        leaked = [kworld.CONTAMINATED_TASK]
    if cfg.tasks is not None:
        tasks = list(cfg.tasks)
    else:
        from kit import world as kworld

        tasks = list(kworld.TASKS)
    # the leaked task is what the contamination analysis is about: always measure it
    tasks += [t for t in leaked if t not in tasks]
    return Settings(
        checkpoints=checkpoints,
        specialised=specialised,
        specialised_targets=targets,
        contaminated=dict(cfg.contaminated)
        if cfg.contaminated is not None
        else finetune_pairs(members, "contaminated"),
        controls=dict(cfg.controls)
        if cfg.controls is not None
        else finetune_pairs(members, "control"),
        contaminated_tasks=leaked,
        tasks=tasks,
    )


def analyse(
    measurements: pd.DataFrame, settings: Settings, tol_perf: float = 0.0, tol_mui: float = 0.0
) -> dict[str, pd.DataFrame]:
    """Directions of every setting from one measurement table (output of ``measure``).

    Returns ``{"pretraining": step_directions per (task, split), "specialised", "contaminated",
    "controls": pair_directions}``; an empty setting gives an empty frame.
    """
    out: dict[str, pd.DataFrame] = {}
    leaked_groups = set(
        measurements.loc[measurements["task"].isin(settings.contaminated_tasks), "group"]
    )
    order = {m: i for i, m in enumerate(settings.checkpoints)}
    pts = measurements[measurements["model"].isin(list(order))].copy()
    pts["order"] = pts["model"].map(order)
    out["pretraining"] = step_directions(
        pts,
        series=["task", "split"],
        order="order",
        label="model",
        tol_perf=tol_perf,
        tol_mui=tol_mui,
    )
    for name, pairs, dom in (
        ("specialised", settings.specialised, specialised_domain(settings.specialised_targets)),
        (
            "contaminated",
            settings.contaminated,
            contamination_domain(settings.contaminated_tasks, leaked_groups),
        ),
        (
            "controls",
            settings.controls,
            contamination_domain(settings.contaminated_tasks, leaked_groups),
        ),
    ):
        if pairs:
            out[name] = pair_directions(tiny_pairs(measurements, pairs, dom), tol_perf, tol_mui)
        else:
            out[name] = pd.DataFrame(
                columns=[
                    "model",
                    "base",
                    "task",
                    "group",
                    "split",
                    "domain",
                    "perf",
                    "mui",
                    "base_perf",
                    "base_mui",
                    "d_perf",
                    "d_mui",
                    "direction",
                ]
            )
    return out


def source_label(models: Sequence[str]) -> str:
    """What part 2 measured, for titles and check names: ``tiny world`` (zoo members) or
    ``measured`` (real models: Hugging Face ids, directories, twins)."""
    return "tiny world" if all(str(m).startswith("zoo/") for m in models) else "measured"


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
        # findings that state verdicts come from the claims (kit.mui.direction_claims)
        findings=[contamination_text(cont, ctrl)],
        data={"checks": checks},
    )
