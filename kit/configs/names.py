"""The names a notebook config may mention, checked before anything runs: ``zoo/`` members,
``zoo-sae/`` SAEs, ``random/`` shapes and ``tiny/`` tasks against the config's world, and task
and benchmark fields against :func:`kit.load_benchmark`'s names. Registered with
:func:`kit.core.params.register_configs` by :mod:`kit.configs`, so a typo fails in
``load_params``, not minutes into the run."""

from __future__ import annotations

from typing import Any

from kit.core.params import BaseConfig


def _is_task_field(field: str) -> bool:
    return field in ("task", "tasks") or field.endswith(("_task", "_tasks", "_task_a", "_task_b"))


def _strings(value: Any) -> list[str]:
    """Every string inside a field's value (list items, tuple items, dict keys and values)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in _strings(k) + _strings(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    return []


def name_errors(cfg: BaseConfig) -> list[str]:
    """Names that cannot load, found without loading anything: ``zoo/`` members, ``zoo-sae/`` SAEs,
    ``random/`` shapes and ``tiny/`` tasks in any field (checked against the config's world), task
    fields (``task``, ``*_tasks``...: a world task or a ``kit.load_benchmark`` name) and
    ``benchmarks``. Hub ids (``gpt2``, ``meta-llama/...``) and ``hf:`` prompt sources cannot be
    checked offline and pass here (the audits config checks the form of ``hf:`` sources).
    """
    from kit.data.benchmarks import BENCHMARKS, _parse_name
    from kit.models.sources import prefixed
    from kit.world import TASKS, saes

    world = cfg.world
    kinds = {
        "zoo-sae/": ("SAE", saes(world)),
        "tiny/": ("tiny-world task", [f"tiny/{t}" for t in TASKS]),
    }
    errors = []
    for field in type(cfg).model_fields:
        for name in _strings(getattr(cfg, field)):
            prefix = next((p for p in kinds if name.startswith(p)), None)
            form = prefixed(name)  # a model name of a checked form (kit.models.sources)
            if form is not None and form.checked and form.names is not None:
                allowed = form.names(world)
                if name not in allowed:
                    errors.append(
                        f"field {field!r}: {name!r} is not a {form.noun} of world {world!r}; "
                        f"allowed values: {', '.join(allowed)}"
                    )
            elif prefix is not None:
                what, allowed = kinds[prefix]
                if name not in allowed:
                    errors.append(
                        f"field {field!r}: {name!r} is not a {what} of world {world!r}; "
                        f"allowed values: {', '.join(allowed)}"
                    )
            elif _is_task_field(field) or field == "benchmarks":
                # benchmarks may pool a family ("bbh")
                if name in (BENCHMARKS if field == "benchmarks" else TASKS):
                    continue
                if name.startswith("hf:") and field != "benchmarks":
                    # a hub prompt source (kit.audits.sources), checked by its notebook's config
                    continue
                try:
                    _parse_name(name)
                except ValueError as e:
                    allowed = (
                        ""
                        if field == "benchmarks"
                        else f"a task of the world ({', '.join(TASKS)}) or "
                    )
                    errors.append(f"field {field!r}: {name!r} is not {allowed}a benchmark ({e})")
    return errors
