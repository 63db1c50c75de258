"""The embedded tiny world: tokenizer, task suites, model zoo, SAEs, zoo card.

Worlds: ``tiny`` (default; the notebooks' world) and ``micro`` (same member names and kinds,
smaller; for tests and smoke runs), chosen by argument or ``$KIT_WORLD``. Build with
``python -m kit zoo build [--world micro] [--seed N]`` or :func:`build`; cached under
``kit.core.paths.cache_dir()/world/<world>/`` (:mod:`kit.world.storage`). Modules: ``specs`` (what a
world is made of), ``recipes`` (the worlds), ``storage`` (members on disk), ``members`` (training
them), ``saes``, ``card``, ``build`` (the DAG of pinned jobs, in :mod:`kit.core.pinned`'s numerical
environment); ``zoo`` names them all.

Conventions: sequences are ``<bos> prompt answer <eos>``; every answer is one token; batched
prompts are RIGHT padded (:func:`prompt_tokens` returns the lengths); scoring is exact match of
the greedy next token at the last prompt position (:func:`evaluate`).
"""

from kit.world.build import build, is_built, world_status
from kit.world.card import card, format_card
from kit.world.evaluate import (
    evaluate,
    last_logits,
    prompt_tokens,
    respond,
    target_ids,
    token_accuracy,
)
from kit.world.members import changed_neurons, planted_gap_items, plastic_neurons
from kit.world.recipes import CONTAMINATED_TASK, CONTAMINATION_BASE, GAP_MEMBER
from kit.world.saes import load_world_sae, sae_labels, sae_stats, saes
from kit.world.specs import GAPS
from kit.world.storage import (
    MemberDamaged,
    NoSpaceLeft,
    WorldNotBuilt,
    load_member,
    member_info,
    members,
    world_dir,
)
from kit.world.subject import WorldSubject, world_correct
from kit.world.tasks import EXTRA_TASKS, GROUPS, SPLITS, TASKS, Task, get_task
from kit.world.tokenizer import build_tokenizer


def accuracy(model, task: str, split: str, n: int | None = None, seed: int = 0) -> float:
    """Exact-match accuracy (fraction) of ``model`` on ``n`` items of ``task``'s ``split``."""
    return float(evaluate(model, get_task(task).items(split, n=n, seed=seed)).mean())


__all__ = [
    "CONTAMINATED_TASK",
    "CONTAMINATION_BASE",
    "EXTRA_TASKS",
    "GAPS",
    "GAP_MEMBER",
    "GROUPS",
    "MemberDamaged",
    "NoSpaceLeft",
    "SPLITS",
    "TASKS",
    "Task",
    "WorldNotBuilt",
    "WorldSubject",
    "accuracy",
    "build",
    "build_tokenizer",
    "card",
    "changed_neurons",
    "evaluate",
    "format_card",
    "get_task",
    "is_built",
    "last_logits",
    "load_member",
    "load_world_sae",
    "member_info",
    "members",
    "planted_gap_items",
    "plastic_neurons",
    "prompt_tokens",
    "respond",
    "sae_labels",
    "sae_stats",
    "saes",
    "target_ids",
    "token_accuracy",
    "world_correct",
    "world_dir",
    "world_status",
]
