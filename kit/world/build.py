"""Building a world: members in order (bases, fine-tunes), then SAEs, then the card. Resumable.

Sits above ``zoo``, ``saes`` and ``card`` (which never import it), so the world has no import circle.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict
from pathlib import Path

from tqdm.auto import tqdm

from kit.core.paths import atomic_write_text
from kit.world.card import compute_card
from kit.world.saes import is_sae_done, train_sae
from kit.world.zoo import _is_done, _train_base, _train_finetune, card_path, deterministic, spec_hash, world_dir, world_spec


def is_built(world: str | None = None) -> bool:
    """True when every member, SAE and the card of the world exist in the cache."""
    return card_path(world).is_file()


def build(world: str | None = None, force: bool = False) -> Path:
    """Build (or finish building) the world; returns its directory.

    Resumable: completed members are skipped. ``force`` deletes this world's cache first.
    """
    spec = world_spec(world)
    root = world_dir(spec.name)
    if force and root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True, exist_ok=True)
    atomic_write_text(root / f"spec-{spec_hash(spec)}.json", json.dumps(asdict(spec), indent=1))
    jobs = [("base", b) for b in spec.bases] + [("ft", f) for f in spec.finetunes]
    jobs += [("sae", s) for s in spec.saes]
    with deterministic():
        for kind, job in tqdm(jobs, desc=f"building world {spec.name}"):
            if kind == "sae":
                if not is_sae_done(spec, job):
                    train_sae(spec, job)
            elif not _is_done(spec, job.name):
                (_train_base if kind == "base" else _train_finetune)(spec, job)
        if not card_path(spec.name).is_file():
            compute_card(spec.name)
    return root
