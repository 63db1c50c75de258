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
    """Every string inside a field's value (list items, tuple items, dict keys and values, a
    nested config's fields)."""
    from pydantic import BaseModel

    if isinstance(value, str):
        return [value]
    if isinstance(value, BaseModel):
        return _strings(value.model_dump())
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
    from kit.data.benchmarks import BENCHMARKS, _parse_name, task_families
    from kit.models.sources import prefixed, sae_prefixed
    from kit.world import TASKS

    world = cfg.world
    families = task_families()
    errors = []
    for field in type(cfg).model_fields:
        for name in _strings(getattr(cfg, field)):
            form = prefixed(name)  # a model name of a checked form (kit.models.sources)
            sae = sae_prefixed(name)  # an SAE name of a listed form (the world's zoo-sae/)
            family, sep, _ = name.partition("/")  # a generated task as a benchmark (tiny/<task>)
            tasks = families.get(family) if sep else None
            if form is not None and form.checked and form.names is not None:
                what, allowed = form.noun, form.names(world)
            elif sae is not None and sae.names is not None:
                what, allowed = "SAE", sae.names(world)
            elif tasks is not None:  # the world's single-token tasks, as its configs name them
                what, allowed = "tiny-world task", [f"{family}/{t}" for t in TASKS]
            else:
                what, allowed = None, []
            if what is not None:
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
