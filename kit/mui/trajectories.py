"""Training trajectories in the MUI–performance plane (seed 000, sections 3.3–3.4, appendix
B.2/B.3): notebook 02's settings on the tiny world or Hugging Face models (checkpoint series,
specialised and contaminated fine-tunes against their bases), the directions of every setting
from one measurement table (:func:`analyse`), and the typed result the notebook fills
(:class:`TrajectoryStudy`).

The measurements live in :mod:`kit.mui.measurements`, the notebook's sections in
:mod:`kit.mui.trajectory_sections`, the directions and corollaries in :mod:`kit.mui.directions`,
the training takeaway in :mod:`kit.mui.regression`, the published tables in
:mod:`kit.mui.published_trajectories`.

Tidy schema shared by every table here (one row per model x task/benchmark x split):
``model, task, group, split, perf, mui`` plus ``order`` for checkpoint series and ``base``,
``domain`` for pairs. ``perf`` and ``mui`` are percentages (0–100), as in the paper's tables.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence, cast

import pandas as pd

from kit.mui.checkpoints import STEP_NAME as _STEP
from kit.mui.checkpoints import checkpoint_series  # noqa: F401 (one definition; re-exported)
from kit.mui.directions import _require, pair_directions, step_directions
from kit.subjects import task_group


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
    (:func:`kit.mui.claims.study_claims`) read these fields."""

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
