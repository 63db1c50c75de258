"""Building a world: members in order (bases, fine-tunes), then SAEs, then the card. Resumable.

Training always runs in a pinned subprocess (:mod:`kit.world.pinned`), so a world is the same bits
on every x86-64 CPU; ``python -m kit.world.build`` is that subprocess's entry point.

Sits above ``zoo``, ``saes`` and ``card`` (which never import it), so the world has no import circle.
"""

from __future__ import annotations

import argparse
import json
import shutil
from dataclasses import asdict
from pathlib import Path

from tqdm.auto import tqdm

from kit.core.paths import atomic_write_text
from kit.world.card import compute_card
from kit.world.pinned import enter_pinned, is_pinned, run_pinned
from kit.world.saes import is_sae_done, train_sae
from kit.world.zoo import (
    FinetuneSpec,
    _is_done,
    _train_base,
    _train_finetune,
    card_path,
    deterministic,
    extra_finetune,
    spec_hash,
    world_dir,
    world_spec,
)


def is_built(world: str | None = None) -> bool:
    """True when every member, SAE and the card of the world exist in the cache."""
    return card_path(world).is_file()


def build(world: str | None = None, force: bool = False, only: list[str] | None = None) -> Path:
    """Build (or finish building) the world; returns its directory.

    Resumable: completed members are skipped. ``force`` deletes this world's cache first.
    ``only`` builds just these members (their parents must be built) and no card.
    """
    spec = world_spec(world)
    root = world_dir(spec.name)
    if is_built(spec.name) and not force and only is None:
        return root
    if not is_pinned():
        args = ["--world", spec.name] + (["--force"] if force else []) + (["--only", *only] if only else [])
        run_pinned("kit.world.build", *args)
        return root
    if force and root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True, exist_ok=True)
    atomic_write_text(root / f"spec-{spec_hash(spec)}.json", json.dumps(asdict(spec), indent=1))
    jobs = [("base", b) for b in spec.bases] + [("ft", f) for f in spec.finetunes]
    jobs += [("sae", s) for s in spec.saes]
    if only is not None:
        jobs = [(kind, job) for kind, job in jobs if job.name in only]
    with deterministic():
        for kind, job in tqdm(jobs, desc=f"building world {spec.name}"):
            if kind == "sae":
                if not is_sae_done(spec, job):
                    train_sae(spec, job)
            elif not _is_done(spec, job.name):
                (_train_base if kind == "base" else _train_finetune)(spec, job)
        if only is None and not card_path(spec.name).is_file():
            compute_card(spec.name)
    return root


def _finetune_from_json(text: str) -> FinetuneSpec:
    d = json.loads(text)
    d["mixture"] = tuple(tuple(x) for x in d["mixture"])
    d["inject"] = tuple(d["inject"]) if d["inject"] is not None else None
    if d.get("after") is not None:  # a chain (FinetuneSpec.after): the earlier fine-tune, nested
        d["after"] = _finetune_from_json(json.dumps(d["after"]))
    return FinetuneSpec(**d)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m kit.world.build",
                                description="train a world in the pinned environment (started by build())")
    p.add_argument("--world", required=True)
    p.add_argument("--force", action="store_true")
    p.add_argument("--only", nargs="+", default=None)
    p.add_argument("--extra", default=None, help="a FinetuneSpec as JSON (zoo.extra_finetune)")
    args = p.parse_args(argv)
    enter_pinned()
    if args.extra is not None:
        extra_finetune(_finetune_from_json(args.extra), args.world)
    else:
        build(args.world, force=args.force, only=args.only)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
