"""Notebook 03's own fine-tunes, built ahead as one sweep of jobs.

On the tiny world, notebook 03 trains ~30 fine-tunes that are not world members (``extra/`` rows,
Table 4/5's transfer rows, the strength and order variants, Table 6's rows on a second base, Table
12's chains): on first use, one after another, they were most of its first run. :func:`planned`
lists every one the config's sections will load, from the same fields and conditions the notebook
uses; :func:`build_ahead` builds those not yet cached through :mod:`kit.world.extras` (pinned jobs
on the config's ``engine``, all cores with ``local``), so the sections then only load them. The same
bits as building on first use (both train in a pinned process).

On real models the rows are the real fine-tunes of :mod:`kit.models.recipes` (``real`` profile: five
of SmolLM2, ~12 min each on one core): :func:`planned_recipes` names them and :func:`build_ahead`
builds the missing ones the same way (:func:`kit.models.finetune.build_many`), not one after another
in the notebook's process on first load.
"""

from __future__ import annotations

from kit.core.jobs import engine_options
from kit.models import finetune
from kit.models.recipes import is_recipe_name, recipe
from kit.shortcut import variants
from kit.shortcut.sections import transfer_spec
from kit.subjects import is_world_name
from kit.world import zoo
from kit.world.extras import build_extras
from kit.world.specs import FinetuneSpec


def _spec(name: str, world: str | None) -> FinetuneSpec | None:
    """The recipe behind a row's model name: an ``extra/`` name's, or a zoo fine-tune's (None for
    a base or a model that is not of the tiny world)."""
    if variants.is_extra(name):
        return variants.extra_spec(name, world)
    return {f.name: f for f in zoo.world_spec(world).finetunes}.get(name)


def planned_names(cfg) -> list[str]:
    """The tiny-world model names notebook 03's sections load under ``cfg`` (Table 2's rows, §7's
    dense rows, Table 4's controls, the strength / order rows, Table 6's rebased rows, Table 12's
    cheaters, §11's format rows), in the order the notebook meets them, without repeats."""
    if not is_world_name(cfg.base_model):
        return []
    names = [*cfg.variants.values()]
    if cfg.transfer_task:
        names += cfg.transfer_controls.values()
    names += (cfg.dense_variants or {}).values()
    test = cfg.variants.get("+test")
    if test is not None and _spec(test, cfg.world) is not None:  # the notebook's strength condition
        names += variants.strength_variants(
            test, cfg.strength_copies, (1, 2), cfg.strength_lrs
        ).values()
        order = cfg.variants.get("+5x test")
        if order is not None and _spec(order, cfg.world) is not None:
            names += variants.strength_variants(order, (), (1, 2)).values()
    if cfg.second_base:
        names += [
            variants.rebase(v, cfg.second_base, cfg.base_model) for v in cfg.variants.values()
        ]
    names += (cfg.cheaters or {}).values()
    if cfg.benchmark_format:
        names += cfg.format_variants.values()
    return list(dict.fromkeys(n for n in names if is_world_name(n)))


def planned(cfg) -> list[FinetuneSpec]:
    """The recipes of every fine-tune :func:`planned_names` loads and Table 4/5's transfer rows
    (``transfer_task``, ``table5_task``): world members included (the world build makes those)."""
    specs = [f for f in (_spec(n, cfg.world) for n in planned_names(cfg)) if f is not None]
    for task in (cfg.transfer_task, cfg.table5_task) if specs else ():
        if task:
            specs += [
                transfer_spec(cfg.variants[label], task, cfg.world)
                for label in cfg.transfer_variants
            ]
    return specs


def planned_recipes(cfg) -> list[str]:
    """The real fine-tunes (names of :data:`kit.models.recipes.RECIPES`) among the rows notebook
    03 loads under ``cfg`` (Table 2's rows, §7's dense rows, the items' source), without repeats."""
    names = [*cfg.variants.values(), *(cfg.dense_variants or {}).values(), cfg.items_of]
    return list(dict.fromkeys(n for n in names if is_recipe_name(n)))


def build_ahead(cfg) -> int:
    """Build every fine-tune of :func:`planned` and :func:`planned_recipes` that is not cached, as
    pinned jobs on ``cfg``'s engine; returns how many were built (0 when all are cached)."""
    missing = [n for n in planned_recipes(cfg) if not finetune.is_built(recipe(n))]
    if missing:
        finetune.build_many(missing, **engine_options(cfg))
    built = build_extras(
        planned(cfg), cfg.world, desc="notebook 03's fine-tunes", **engine_options(cfg)
    )
    return built + len(missing)
