"""Building a world: verify what is built, then train what is missing or damaged, as a DAG of jobs.

The world is a DAG: bases (each with its checkpoints) first, then the fine-tunes and SAEs of their
parents (each job also computing its members' card rows), then the card. :func:`plan` turns
what :func:`world_status` finds missing or damaged into :class:`WorldJob` units grouped into jobs;
:func:`build` runs them under the world's lock (:func:`kit.world.storage.world_lock`, one builder
per world) with an engine of ``kit.core.jobs``:

- ``inline``: one pinned process trains every unit in order (the serial build);
- ``local`` (default): one pinned process per job, up to ``max_workers`` at once (one per core), so
  members that do not depend on each other train concurrently; ``ray``: the same on a Ray cluster.

Every unit trains in a pinned process (:mod:`kit.core.pinned`) and is seeded by (world, name) only,
so every engine writes the same bits (``tests/world``). A killed build leaves no child behind (the
children die with their parent) and nothing half-written: each member's ``meta.json`` and the card
are written once, atomically, when complete, and a rerun verifies and finishes the rest.

Sits above ``members``, ``saes`` and ``card`` (which never import it), so the world has no import
circle.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from kit.core.pinned import EXIT_NO_SPACE, enter_pinned, is_pinned, pinned_report, run_pinned
from kit.world.card import compute_accuracies, compute_card, weights_digests
from kit.world.members import (
    _train_base,
    _train_finetune,
    base_outputs,
    deterministic,
    extra_finetune,
)
from kit.world.recipes import world_spec
from kit.world.saes import sae_status, train_sae
from kit.world.specs import FinetuneSpec, WorldSpec, member_names, param_count, spec_hash, world_id
from kit.world.storage import (
    MemberDamaged,
    NoSpaceLeft,
    card_path,
    member_status,
    world_dir,
    world_label,
    world_lock,
    write_json,
)

if TYPE_CHECKING:
    from kit.core.jobs import Engine

ENGINES = ("inline", "local", "ray")
DEFAULT_ENGINE: Engine = "local"


@dataclass(frozen=True)
class WorldStatus:
    """What :func:`world_status` found: ``"ok"``, ``"missing"`` or ``"damaged: <why>"`` per member
    and SAE, and the card's (``"stale: <why>"`` when it no longer describes the members' bits)."""

    members: dict[str, str]
    saes: dict[str, str]
    card: str

    def damaged(self) -> dict[str, str]:
        """``{name: why}`` of every damaged member or SAE."""
        return {
            n: s.removeprefix("damaged: ")
            for n, s in {**self.members, **self.saes}.items()
            if s.startswith("damaged")
        }

    def missing(self) -> list[str]:
        return [n for n, s in {**self.members, **self.saes}.items() if s == "missing"]

    @property
    def complete(self) -> bool:
        return self.card == "ok" and all(s == "ok" for s in {**self.members, **self.saes}.values())


def world_status(world: str | WorldSpec | None = None) -> WorldStatus:
    """Verify every member and SAE against the sizes and sha256 recorded when it was written, and
    the card against the members' weight digests."""
    spec = world_spec(world)
    mem = {n: member_status(spec, n) for n in _all_members(spec)}
    sae = {s.name: sae_status(spec, s) for s in spec.saes}
    path = card_path(spec)
    if not path.is_file():
        card = "missing"
    else:
        try:
            recorded = json.loads(path.read_text()).get("weights_digests")
            if not all(s == "ok" for s in {**mem, **sae}.values()):
                card = "stale: not every member is intact"
            elif recorded != weights_digests(spec):
                card = "stale: its weight digests are not the members'"
            else:
                card = "ok"
        except (ValueError, UnicodeDecodeError) as e:
            card = f"damaged: {path} is not valid JSON ({e})"
    return WorldStatus(mem, sae, card)


def _all_members(spec: WorldSpec) -> list[str]:
    return [n for b in spec.bases for n in base_outputs(b)] + [f.name for f in spec.finetunes]


def is_built(world: str | None = None) -> bool:
    """True when the world's card exists (``world_status`` verifies every file)."""
    return card_path(world).is_file()


# ---------------------------------------------------------------- the DAG
@dataclass(frozen=True)
class WorldJob:
    """Units trained one after another in one pinned process: ``(kind, name)`` with kind ``base``
    (a base and its checkpoints), ``finetune``, ``sae``, ``accuracy`` (a member's card row) or
    ``card``; ``after``: ids of jobs that must finish first."""

    id: str
    units: tuple[tuple[str, str], ...]
    after: tuple[str, ...] = ()
    cost: float = 0.0


UNIT_OVERHEAD = 2e8
"""Cost of a unit beyond its training (loading its parent, saving): a micro fine-tune's ~2 CPU s."""


def unit_cost(spec: WorldSpec, kind: str, name: str) -> float:
    """A rough cost to balance the jobs (only the schedule depends on it): examples x parameters for
    a transformer (~12 CPU s per 1e9 here, measured on the tiny world's bases and fine-tunes; a
    sparse fine-tune ~0.75 of a full one), steps x batch x width x 10 for an SAE (measured: an SAE
    step costs ~25x less per example x feature than a transformer step per example x parameter)."""
    from kit.world.tokenizer import vocab  # lazy: the tokenizer builds its vocabulary on first use

    if kind == "base":
        b = next(b for b in spec.bases if b.name == name)
        return UNIT_OVERHEAD + b.steps * b.batch_size * param_count(b.arch, len(vocab()))
    if kind == "finetune":
        f = next(f for f in spec.finetunes if f.name == name)
        b = next(b for b in spec.bases if b.name == f.parent)
        n = (f.n_examples or f.steps * f.batch_size) * f.epochs
        return UNIT_OVERHEAD + n * param_count(b.arch, len(vocab())) * (0.75 if f.plastic else 1.0)
    if kind == "sae":
        s = next(s for s in spec.saes if s.name == name)
        return UNIT_OVERHEAD + s.steps * s.batch_size * s.d_sae * 10
    if kind == "accuracy":  # ~5,000 items forward only (a third of a training step's work)
        base = name.split("@")[0]
        parent = next((f.parent for f in spec.finetunes if f.name == base), base)
        b = next(b for b in spec.bases if b.name == parent)
        return UNIT_OVERHEAD + 5000 * param_count(b.arch, len(vocab())) / 3
    return 0.0


def plan(
    spec: WorldSpec, status: WorldStatus, only: list[str] | None = None, workers: int = 1
) -> list[WorldJob]:
    """The jobs that bring the world to complete: a base job per base with a missing or damaged
    output, the missing or damaged fine-tunes and SAEs in ``workers`` cost-balanced jobs after their
    parents' jobs (greedy longest-first), and the card after everything when it is not ``ok``.
    ``only`` limits the plan to those members and SAEs (their parents must be built) and plans no
    card."""

    def wanted(name: str, state: str) -> bool:
        return state != "ok" and (only is None or name in only)

    jobs: list[WorldJob] = []
    job_of: dict[str, str] = {}  # member -> id of the job that (re)builds it in this plan
    for b in spec.bases:
        if any(wanted(n, status.members[n]) for n in base_outputs(b)):
            jid = f"base:{b.name}"
            jobs.append(WorldJob(jid, (("base", b.name),), cost=unit_cost(spec, "base", b.name)))
            job_of.update({n: jid for n in base_outputs(b)})
    rest: list[tuple[str, str, tuple[str, ...]]] = []
    for f in spec.finetunes:
        if wanted(f.name, status.members[f.name]):
            deps = [f.parent] + ([f.after.name] if isinstance(f.after, FinetuneSpec) else [])
            rest.append(("finetune", f.name, tuple(d for d in deps if d in job_of)))
    for s in spec.saes:
        if wanted(s.name, status.saes[s.name]):
            rest.append(("sae", s.name, (s.member,) if s.member in job_of else ()))
    # a fine-tune chained after another one being built (FinetuneSpec.after) goes into its job,
    # after it
    chain = {f.name: f.after.name for f in spec.finetunes if isinstance(f.after, FinetuneSpec)}
    names = {u[1] for u in rest}
    free = [u for u in rest if chain.get(u[1]) not in names]
    groups: list[list[tuple[str, str, tuple[str, ...]]]] = [[] for _ in range(max(1, workers))]
    loads = [0.0] * len(groups)
    group_of: dict[str, int] = {}
    for unit in sorted(free, key=lambda u: -unit_cost(spec, u[0], u[1])):
        i = loads.index(min(loads))
        groups[i].append(unit)
        group_of[unit[1]] = i
        loads[i] += unit_cost(spec, unit[0], unit[1])
    pending = [u for u in rest if u not in free]
    while pending:  # chains, prerequisites first
        unit = next(u for u in pending if chain[u[1]] in group_of)
        i = group_of[unit[1]] = group_of[chain[unit[1]]]
        groups[i].append(unit)
        loads[i] += unit_cost(spec, unit[0], unit[1])
        pending.remove(unit)
    order = {u[1]: i for i, u in enumerate(rest)}
    for i, group in enumerate(g for g in groups if g):
        # the spec's order inside a job, a chained fine-tune after its prerequisite
        group.sort(key=lambda u: (_chain_depth(u[1], chain), order[u[1]]))
        deps = sorted({job_of[d] for _, _, ds in group for d in ds})
        jobs.append(
            WorldJob(f"members:{i}", tuple((k, n) for k, n, _ in group), tuple(deps), loads[i])
        )
        job_of.update({n: f"members:{i}" for k, n, _ in group if k == "finetune"})
    card = only is None and status.card != "ok"
    if card:
        jobs = _with_accuracies(spec, jobs, job_of, workers)
    jobs = _critical_first(jobs)
    if card:
        jobs.append(WorldJob("card", (("card", spec.name),), tuple(j.id for j in jobs)))
    return jobs


def _with_accuracies(
    spec: WorldSpec, jobs: list[WorldJob], job_of: dict[str, str], workers: int
) -> list[WorldJob]:
    """``jobs`` with the card's accuracy rows (:func:`kit.world.card.compute_accuracies`, most of
    the card's work): each training job computes its own members' rows last, in its process, so
    they run beside the training still going in other jobs without a process of their own (a
    pinned process takes 12-24 s to start here); the members already built get ``workers`` jobs
    of their own. The card job then only assembles the rows."""
    by_job: dict[str, list[str]] = {}
    for name in member_names(spec):
        by_job.setdefault(job_of.get(name, ""), []).append(name)
    built = by_job.pop("", [])

    def cost(names: list[str]) -> float:
        return sum(unit_cost(spec, "accuracy", m) for m in names)

    out = [
        replace(
            j,
            units=j.units + tuple(("accuracy", m) for m in by_job.get(j.id, [])),
            cost=j.cost + cost(by_job.get(j.id, [])),
        )
        for j in jobs
    ]
    n = min(max(1, workers), len(built))
    return out + [
        WorldJob(
            f"accuracy:{i}", tuple(("accuracy", m) for m in built[i::n]), (), cost(built[i::n])
        )
        for i in range(n)
    ]


def _critical_first(jobs: list[WorldJob]) -> list[WorldJob]:
    """The jobs ordered by the cost of the longest path from each to the end (its own cost plus its
    costliest chain of dependents), highest first: the scheduler starts ready jobs in the order
    given, so the critical path starts first (base-m before the long base-xl, whose dependents are
    none)."""
    below: dict[str, float] = {}

    def level(j: WorldJob) -> float:
        if j.id not in below:
            below[j.id] = j.cost + max((level(d) for d in jobs if j.id in d.after), default=0.0)
        return below[j.id]

    return sorted(jobs, key=lambda j: -level(j))


def _chain_depth(name: str, chain: dict[str, str]) -> int:
    return 0 if name not in chain else 1 + _chain_depth(chain[name], chain)


def run_job(world: str, seed: int, units: list[list[str]]) -> list[dict]:
    """The job function (``kit.world.build:run_job``): train ``units`` (``[kind, name]`` pairs) of
    world ``(world, seed)`` in this pinned process, in order; returns each unit's wall and CPU
    seconds."""
    spec = world_spec(world, seed)
    out = []
    with deterministic():
        for kind, name in units:
            t0, c0 = time.perf_counter(), time.process_time()
            if kind == "base":
                _train_base(spec, next(b for b in spec.bases if b.name == name))
            elif kind == "finetune":
                _train_finetune(spec, next(f for f in spec.finetunes if f.name == name))
            elif kind == "sae":
                train_sae(spec, next(s for s in spec.saes if s.name == name))
            elif kind == "accuracy":
                compute_accuracies(spec, [name])
            elif kind == "card":
                compute_card(spec)
            else:
                raise ValueError(
                    f"unit kind {kind!r}; allowed values: base, finetune, sae, accuracy, card"
                )
            out.append(
                {
                    "kind": kind,
                    "name": name,
                    "seconds": round(time.perf_counter() - t0, 1),
                    "cpu_seconds": round(time.process_time() - c0, 1),
                }
            )
            print(
                f"[world {world_label(spec)}] {kind} {name}: {out[-1]['seconds']:.0f} s "
                f"({out[-1]['cpu_seconds']:.0f} s CPU)",
                file=sys.stderr,
                flush=True,
            )
    return out


# ---------------------------------------------------------------- build
def build(
    world: str | None = None,
    force: bool = False,
    only: list[str] | None = None,
    engine: Engine = DEFAULT_ENGINE,
    max_workers: int | None = None,
    seed: int | None = None,
) -> Path:
    """Build, finish or repair the world; returns its directory.

    Verifies every member, SAE and the card (:func:`world_status`) and trains exactly what is
    missing or damaged, then the card if it is missing or no longer matches the members. ``force``
    deletes this world's cache first. ``only`` builds just these members/SAEs (their parents must be
    built) and no card. ``engine`` (:data:`ENGINES`) and ``max_workers`` (default: the machine's
    cores) choose how the jobs run; every engine gives the same bits. ``seed``: the world seed
    (default ``$KIT_WORLD_SEED``, else 0, the canonical world). One builder per world: a second
    waits for the first.
    """
    if engine not in ENGINES:
        raise ValueError(f"engine={engine!r}; allowed values: {', '.join(ENGINES)}")
    if max_workers is not None and (
        isinstance(max_workers, bool) or not isinstance(max_workers, int) or max_workers < 1
    ):
        raise ValueError(
            f"max_workers={max_workers!r}; allowed values: an int >= 1, or None (one per core)"
        )
    spec = world_spec(world, seed)
    with world_lock(spec):
        _build_locked(spec, force, only, engine, max_workers)
    return world_dir(spec)


def _build_locked(
    spec: WorldSpec, force: bool, only: list[str] | None, engine: Engine, max_workers: int | None
) -> None:
    root = world_dir(spec)
    if force:
        for p in root.iterdir():
            if p.name != ".build.lock":
                shutil.rmtree(p) if p.is_dir() else p.unlink()
    status = world_status(spec)
    if only is not None:
        known = set(status.members) | set(status.saes)
        unknown = [n for n in only if n not in known]
        if unknown:
            raise ValueError(
                f"only={unknown!r}: not members or SAEs of world {spec.name!r}; allowed values: "
                + ", ".join(sorted(known))
            )
    workers = 1 if engine == "inline" else (max_workers or len(os.sched_getaffinity(0)))
    jobs = plan(spec, status, only, workers)
    if not jobs:
        return
    for name, why in status.damaged().items():
        if only is None or name in only:
            print(
                f"world {world_label(spec)}: rebuilding {name}: {why}", file=sys.stderr, flush=True
            )
    if not is_pinned():
        report = pinned_report()
        print(
            f"world {world_label(spec)}: pinned environment: {report.summary()}",
            file=sys.stderr,
            flush=True,
        )
        for problem in report.problems():
            print(
                f"WARNING: {problem}: this world will differ from the committed cards",
                file=sys.stderr,
            )
    write_json(root / f"spec-{spec_hash(spec)}.json", asdict(spec))
    if engine == "inline":
        if is_pinned():
            for job in jobs:
                run_job(spec.name, spec.seed, [list(u) for u in job.units])
        else:  # one pinned process trains everything in order (it verifies again: the lock is ours)
            args = ["--world", spec.name, "--seed", str(spec.seed), "--locked"] + (
                ["--only", *only] if only else []
            )
            run_pinned("kit.world", *args)
        return
    _run_engine(spec, jobs, engine, workers)


def _run_engine(spec: WorldSpec, jobs: list[WorldJob], engine: Engine, workers: int) -> None:
    from kit.core.jobs import (  # lazy: the job layer (and Ray) only for these engines
        Job,
        JobsFailed,
        run_jobs,
    )

    todo = [
        Job(
            "kit.world.build:run_job",
            {"world": spec.name, "seed": spec.seed, "units": [list(u) for u in j.units]},
            id=f"{world_id(spec)}/{j.id}",
            after=[f"{world_id(spec)}/{d}" for d in j.after],
            pinned=True,
        )
        for j in jobs
    ]
    try:
        run_jobs(
            todo, engine=engine, max_workers=workers, desc=f"building world {world_label(spec)}"
        )
    except JobsFailed as e:
        full = [line.strip() for line in str(e).splitlines() if "NoSpaceLeft:" in line]
        if full:
            raise NoSpaceLeft(full[0].split("NoSpaceLeft:", 1)[1].strip()) from e
        raise


def _finetune_from_json(text: str) -> FinetuneSpec:
    d = json.loads(text)
    d["mixture"] = tuple(tuple(x) for x in d["mixture"])
    d["inject"] = tuple(d["inject"]) if d["inject"] is not None else None
    if d.get("after") is not None:  # a chain (FinetuneSpec.after): the earlier fine-tune, nested
        d["after"] = _finetune_from_json(json.dumps(d["after"]))
    return FinetuneSpec(**d)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m kit.world",
        description="train a world in the pinned environment (started by build())",
    )
    p.add_argument("--world", required=True)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--locked", action="store_true", help="the parent holds the world's lock")
    p.add_argument("--only", nargs="+", default=None)
    p.add_argument("--extra", default=None, help="a FinetuneSpec as JSON (members.extra_finetune)")
    args = p.parse_args(argv)
    enter_pinned()
    spec = world_spec(args.world, args.seed)
    try:
        if args.extra is not None:
            extra_finetune(_finetune_from_json(args.extra), spec)
        elif args.locked:
            _build_locked(spec, False, args.only, "inline", 1)
        else:
            build(args.world, only=args.only, engine="inline", seed=spec.seed)
    except NoSpaceLeft as e:
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_NO_SPACE
    except MemberDamaged as e:
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
