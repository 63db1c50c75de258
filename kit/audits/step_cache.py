"""Notebook 06's audit steps cached by content: a rerun on the same model, SAEs, prompts, config
and code reads each step's results instead of recomputing them. The null controls (untrained SAE
copies, random circuits, permutations: tens of draws each), M09's SAE retraining and edge patching
are most of 06's time (26 min on the real profile's SmolLM2), and none of them changes between
runs of one commit.

A step's key (:func:`step_path`) is the digest of:

- the step's name and :data:`STEP_VERSION`;
- the model's identity (:func:`kit.models.identity.model_identity`: its files' hashes, or a world
  member's build key); a model known by name only (a random twin) is never cached;
- every field of the resolved config but the scheduling ones (engine, workers: the same numbers on
  every engine), so any seed, draw count or threshold is part of it;
- the bytes of the step's input tensors: the prompts' token ids and positions, every SAE's
  weights, the IOI batches, the mean-ablation means, the circuit's heads;
- the source of every ``kit`` module and the versions of torch, numpy, scipy and scikit-learn
  (:func:`code_digest`): any code change recomputes.

A value is JSON (the ``AuditResult``s as ``audits.json`` holds them, plus the plain numbers a
figure needs), written atomically with the digest of its bytes (:mod:`kit.core.cached`). On reading
it is checked against the step's schema (:func:`results_schema`: the keys its caller reads, results
that parse as ``AuditResult``s, the metrics expected); a file that cannot be read back, fails its
digest or its schema (``{}``, a torn write, a changed value) is warned about, naming the file, and
recomputed and rewritten, never returned.
"""

from __future__ import annotations

import functools
import hashlib
import json
import pkgutil
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np
import torch

from kit.core.cached import Check, cached_json, has_keys
from kit.core.paths import cache_dir

from .result import AuditResult

STEP_VERSION = 1
"""Part of every key: bump when what a step stores changes shape."""
SCHEDULING_FIELDS = frozenset({"engine", "ray_address", "max_workers"})
"""Config fields that choose where jobs run, not what they compute: left out of the keys."""


@functools.lru_cache(maxsize=1)
def code_digest() -> str:
    """A 16-hex digest of every ``kit`` module's source and the numeric libraries' versions."""
    import scipy
    import sklearn

    import kit
    from kit.models.identity import code_identity

    names = sorted(m.name for m in pkgutil.walk_packages(kit.__path__, "kit."))
    versions = f"torch {torch.__version__} numpy {np.__version__} scipy {scipy.__version__} "
    return code_identity(["kit", *names], versions + f"sklearn {sklearn.__version__}")


def sae_tensors(saes: dict[str, Any]) -> list[torch.Tensor]:
    """Every SAE's weights, role by role (sorted), parameter by parameter (sorted)."""
    out = []
    for role in sorted(saes):
        state = saes[role].state_dict()
        out += [state[k] for k in sorted(state)]
    return out


def step_path(
    step: str,
    identities: Iterable[str | None],
    cfg,
    tensors: Iterable[torch.Tensor] = (),
    extra: Any = None,
) -> Path | None:
    """Where ``step``'s value for these inputs lives. ``identities``: the models' (of
    :func:`kit.models.identity.cache_identity`); None when one is None (the step is then computed
    every time).
    ``extra``: JSON-able inputs that are not tensors."""
    idents = list(identities)
    if any(i is None for i in idents):
        return None
    fields = cfg.model_dump(mode="json", exclude=set(SCHEDULING_FIELDS))
    h = hashlib.sha256(
        json.dumps(
            [STEP_VERSION, step, idents, fields, extra, code_digest()], sort_keys=True
        ).encode()
    )
    for t in tensors:
        a = t.detach().cpu().contiguous()
        h.update(f"{a.dtype}{tuple(a.shape)}".encode())
        h.update(a.view(torch.uint8).numpy().tobytes() if a.numel() else b"")
    return cache_dir() / "audits" / "steps" / step / f"{h.hexdigest()[:24]}.json"


def results_schema(
    n: int | None = None, metrics: Iterable[str] = (), keys: Iterable[str] = ()
) -> Check:
    """The check of a step's value: a JSON object whose ``"results"`` is a list of
    ``AuditResult``s (``n`` of them when given, holding every metric of ``metrics``), with every
    key of ``keys`` (what the step's caller reads beside the results)."""
    metrics, keys = tuple(metrics), tuple(keys)

    def check(value: Any) -> str | None:
        why = has_keys(value, {"results": list, **{k: object for k in keys}})
        if why is not None:
            return why
        try:
            results = load_results(value["results"])
        except (ValueError, TypeError) as e:  # pydantic's ValidationError is a ValueError
            return f"'results' are not audit results ({str(e).splitlines()[0]})"
        if n is not None and len(results) != n:
            return f"{len(results)} result(s), expected {n}"
        missing = sorted(set(metrics) - {r.metric for r in results})
        return f"no result of {', '.join(missing)}" if missing else None

    return check


RESULTS = results_schema()
"""A step's value that is one or more audit results and nothing else its caller reads."""


def cached(
    path: Path | None, compute: Callable[[], dict[str, Any]], schema: Check | None = RESULTS
) -> dict[str, Any]:
    """``compute()``'s JSON-able dict, read from ``path`` when a run has stored it and it passes
    its digest and ``schema`` (default: :data:`RESULTS`; None: any JSON object), else computed and
    stored (atomically, with its digest). ``path`` None: computed, not stored."""
    check = schema or (lambda v: has_keys(v, {}))
    # through JSON on the first run too, so a rerun returns exactly what the first run did
    return cached_json(
        path,
        lambda: json.loads(json.dumps(compute(), default=_plain)),
        check,
        what="audit step cache",
    )


def _plain(value: Any) -> Any:
    """numpy and torch scalars and arrays as plain JSON numbers and lists."""
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    if isinstance(value, (np.ndarray, np.generic)):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON-able")


def dump_results(results: list[AuditResult]) -> list[dict[str, Any]]:
    return [r.model_dump(mode="json") for r in results]


def load_results(rows: list[dict[str, Any]]) -> list[AuditResult]:
    return [AuditResult.model_validate(r) for r in rows]
