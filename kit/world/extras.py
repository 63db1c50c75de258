"""Fine-tunes that are not world members (``extra`` ones, e.g. notebook 03's rows), built ahead as
one sweep of jobs: one pinned job per fine-tune, as many at once as the engine allows, a
chain (``FinetuneSpec.after``) after the job of its earlier fine-tune.

Each job trains exactly as :func:`kit.world.members.extra_finetune` does on first use (a pinned
process, seeded by the world and the recipe's name, inside ``deterministic()``), so a fine-tune has
the same bits whichever engine built it, and one built ahead is the one a notebook loads. Two jobs
never write one file: fine-tunes are deduplicated by their cache path (name and content key).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from kit.world.members import extra_finetune, extra_path
from kit.world.recipes import world_spec
from kit.world.specs import FinetuneSpec, WorldSpec, check_after

if TYPE_CHECKING:
    from kit.core.jobs import Engine


def build_extra_job(world: str, seed: int, finetune: dict) -> str:
    """The job function: build extra fine-tune ``finetune`` (its ``asdict`` form) of world
    ``(world, seed)`` in this (pinned) process, unless it is cached; returns its file name."""
    from kit.world.build import _finetune_from_json  # lazy: kit.world.build imports the members

    spec = world_spec(world, seed)
    f = _finetune_from_json(json.dumps(finetune))
    extra_finetune(f, spec)
    return extra_path(f, spec).name


def extra_jobs(finetunes: Iterable[FinetuneSpec], world: str | WorldSpec | None = None) -> list:
    """The jobs that build the fine-tunes of ``finetunes`` not yet cached (and, first, the earlier
    fine-tunes of their chains that are neither cached nor world members), one per cache file."""
    from kit.core.jobs import Job  # lazy: the job layer only when building ahead

    spec = world_spec(world)
    jobs: dict[Path, Job] = {}

    def add(f: FinetuneSpec) -> str | None:
        """The id of the job building ``f`` (None: nothing to build)."""
        if f in spec.finetunes:  # a world member: the world build made it
            return None
        check_after(f)
        path = extra_path(f, spec)
        if path in jobs:
            return jobs[path].id
        before = add(f.after) if f.after is not None else None
        if path.is_file():
            return None
        jobs[path] = Job(
            build_extra_job,
            {"world": spec.name, "seed": spec.seed, "finetune": asdict(f)},
            after=[before] if before else [],
            pinned=True,
        )
        return jobs[path].id

    for f in finetunes:
        add(f)
    return list(jobs.values())


def build_extras(
    finetunes: Iterable[FinetuneSpec],
    world: str | WorldSpec | None = None,
    engine: Engine = "local",
    max_workers: int | None = None,
    ray_address: str | None = None,
    desc: str = "extra fine-tunes",
) -> int:
    """Build every fine-tune of ``finetunes`` that is not cached, as one sweep of pinned jobs on
    ``engine`` (``kit.core.jobs.run_jobs``); returns how many were built. A failed build raises
    ``kit.core.jobs.JobsFailed`` naming it, after the others finished."""
    from kit.core.jobs import run_jobs  # lazy, as above

    jobs = extra_jobs(finetunes, world)
    if jobs:
        run_jobs(jobs, engine=engine, max_workers=max_workers, ray_address=ray_address, desc=desc)
    return len(jobs)
