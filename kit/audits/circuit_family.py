"""Notebook 06's circuit family: IOI items, the circuit found on some of them, its audits.

The IOI items a config names (world tasks, names that are single tokens of the circuit's model, or
a config's name categories), the seeded discovery / audit split, the circuit discovered (or given:
Wang et al.'s GPT-2 heads) on the discovery prompts (:mod:`kit.audits.circuits`), and MIB, EX1,
EX2, EX11 on the held-out prompts (:mod:`kit.audits.mib`, :mod:`kit.audits.psychophysics`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from kit.core.cached import Check, has_keys
from kit.models.identity import cache_identity

from . import circuits, psychophysics, step_cache
from .mib import mib_audit
from .result import AuditInputs, AuditResult, not_run


def load_circuit_model(cfg, model):
    """The circuit family's model and its name: ``cfg.circuit_model`` loaded, or ``model``
    itself."""
    if cfg.circuit_model in (None, cfg.model):
        return model, cfg.model
    import kit

    return kit.load_model(cfg.circuit_model, device=cfg.device, world=cfg.world), cfg.circuit_model


def circuit_items(model, cfg) -> tuple[list, dict[str, list[str]]]:
    """The IOI items of the circuit family and EX2, with the names dropped per category.

    Without ``cfg.dif_name_groups``: the world's IOI items whose names are single tokens of
    ``model`` (its frequent / rare groups). With it: every item's two names replaced by two names
    of one category (round-robin), keeping only names that are single tokens of ``model``; the
    world's own names need not be tokens then (they are replaced)."""
    from kit.models.sources import form_of

    from .sources import regroup_names

    groups = cfg.dif_name_groups
    items = ioi_items(
        cfg.ioi_task,
        cfg.n_ioi,
        cfg.ioi_split,
        cfg.seed,
        model=None if groups else model,
        capitalize=not form_of(cfg.circuit_model or cfg.model).world_member,
    )
    if groups is None:
        return items, {}
    return regroup_names(items, groups, model, seed=cfg.seed)


def ioi_items(
    task: str, n: int, split: str = "test", seed: int = 0, model=None, capitalize: bool = False
):
    """``n`` IOI items; ``fresh`` draws unlimited items (both name groups equally often).

    For a BPE model (GPT-2) pass ``capitalize=True``: names become ``Mary`` in prompt and metadata,
    as in Wang et al.; with ``model`` given, items whose names are not single tokens are dropped.
    """
    from dataclasses import replace

    from kit.world.tasks import get_task

    items = (
        get_task(task).items(split, n, seed=seed)
        if split != "test"
        else get_task(task).items(split, n)
    )
    if capitalize:

        def cap(it):
            io, s = it.metadata["io"], it.metadata["s"]
            words = [w.capitalize() if w in (io, s) else w for w in it.prompt.split(" ")]
            return replace(
                it,
                prompt=" ".join(words),
                answer=io.capitalize(),
                metadata={**it.metadata, "io": io.capitalize(), "s": s.capitalize()},
            )

        items = [cap(it) for it in items]
    if model is not None:

        def single(name: str) -> bool:
            try:
                circuits.name_token(model, name)
                return True
            except ValueError:
                return False

        items = [it for it in items if single(it.metadata["io"]) and single(it.metadata["s"])]
        if len(items) < 4:
            raise ValueError(
                f"fewer than 4 IOI items have single-token names for this model (task {task!r})"
            )
    return items


@dataclass
class CircuitContext:
    batch: circuits.IOIBatch
    """The held-out IOI prompts every circuit audit reads (never used to choose the circuit)."""
    means: torch.Tensor
    """Mean-ablation means of every head (over the discovery prompts: the reference
    distribution)."""
    circuit: circuits.Circuit
    """Heads and edges scored on ``discovery``."""
    lds: dict[str, torch.Tensor]
    """Per-prompt logit diffs on ``batch``: full, circuit ablated, circuit only."""
    discovery: circuits.IOIBatch | None = None
    """The IOI prompts the circuit was found on (head and edge patching)."""

    def cache_key(self) -> tuple[list[torch.Tensor], dict[str, Any]]:
        """The tensors and plain inputs that make this circuit part of an audit cache key
        (:func:`kit.audits.step_cache.step_path`): the audited prompts, the means, the circuit."""
        tensors = [*self.batch.key_tensors(), self.means, self.circuit.head_scores]
        if self.discovery is not None:
            tensors += self.discovery.key_tensors()
        return tensors, {
            "ids": self.batch.ids,
            "groups": self.batch.groups,
            "circuit": circuit_json(self.circuit),
        }


def circuit_json(c: circuits.Circuit) -> dict[str, Any]:
    """A circuit as plain JSON (heads, head scores, scored edges): :func:`circuit_from_json`."""
    return {
        "heads": [list(h) for h in c.heads],
        "head_scores": c.head_scores.tolist(),
        "edges": [[e.sender, e.receiver, e.score] for e in c.edges],
    }


def circuit_schema(n_layers: int, n_heads: int) -> Check:
    """The check of a cached circuit (:func:`circuit_json`) of a model with ``n_layers`` x
    ``n_heads`` heads: it parses, its heads are heads of the model, one score per head."""

    def check(value: Any) -> str | None:
        why = has_keys(value, {"heads": list, "head_scores": list, "edges": list})
        if why is not None:
            return why
        try:
            c = circuit_from_json(value)
        except (ValueError, TypeError) as e:
            return f"not a circuit ({e})"
        bad = [h for h in c.heads if not (0 <= h[0] < n_layers and 0 <= h[1] < n_heads)]
        if bad:
            return f"head {bad[0]} is not a head of a {n_layers} x {n_heads} model"
        if tuple(c.head_scores.shape) != (n_layers, n_heads):
            return f"head scores of shape {tuple(c.head_scores.shape)}, not {(n_layers, n_heads)}"
        return None

    return check


def circuit_from_json(d: dict[str, Any]) -> circuits.Circuit:
    return circuits.Circuit(
        heads=[(int(L), int(H)) for L, H in d["heads"]],
        head_scores=torch.tensor(d["head_scores"], dtype=torch.float32),
        edges=[circuits.Edge(s, r, float(x)) for s, r, x in d["edges"]],
    )


def split_items(items: list, holdout: float, seed: int = 0) -> tuple[list, list]:
    """``(discovery, audit)``: a seeded split of ``items`` with ``holdout`` of each name group (its
    ``metadata['name_group']``) in the audit half, so both halves hold every group. Raises when a
    half would be empty."""
    if not 0 < holdout < 1:
        raise ValueError(f"circuit_holdout={holdout} must be in (0, 1)")
    rng = np.random.default_rng(seed)
    by_group: dict[str, list[int]] = {}
    for i, it in enumerate(items):
        by_group.setdefault(str(it.metadata.get("name_group", "")), []).append(i)
    audit: set[int] = set()
    for g in sorted(by_group):
        idx = by_group[g]
        k = int(round(holdout * len(idx)))
        audit |= {idx[j] for j in rng.permutation(len(idx))[:k]}
    disc = [it for i, it in enumerate(items) if i not in audit]
    held = [it for i, it in enumerate(items) if i in audit]
    if len(disc) < 2 or len(held) < 2:
        raise ValueError(
            f"n_ioi / circuit_holdout: {len(items)} IOI items split into {len(disc)} for discovery "
            f"and {len(held)} for the audits; need >= 2 each (raise n_ioi)"
        )
    return disc, held


def circuit_context(
    model, items, cfg, fixed_heads: list[circuits.Head] | None = None, progress: bool = False
) -> CircuitContext:
    """Circuit found on one part of the IOI prompts and audited on the other
    (``cfg.circuit_holdout`` of them, :func:`split_items`): head and edge patching and the
    mean-ablation means read the discovery prompts only, so the audits never score the heads on the
    prompts that chose them."""
    if fixed_heads:
        L, H = model.cfg.n_layers, model.cfg.n_heads
        bad = [h for h in fixed_heads if not (0 <= h[0] < L and 0 <= h[1] < H)]
        if bad:
            raise ValueError(
                f"circuit={cfg.circuit!r} names heads {bad[:4]} outside this model ({L} layers x "
                f"{H} heads): "
                "it is GPT-2 small's circuit; allowed values for another model: discover"
            )
    disc_items, audit_items = split_items(items, cfg.circuit_holdout, cfg.seed)
    discovery, batch = circuits.ioi_batch(model, disc_items), circuits.ioi_batch(model, audit_items)
    means = circuits.head_means(model, discovery)
    with_edges = cfg.edge_plan().on  # circuit_edges against edge_budget_s (kit.audits.cost)
    path = step_cache.step_path(  # edge scores: minutes on a real model; cached by content
        "circuit",
        [cache_identity(model)],
        cfg,
        [*discovery.key_tensors(), means],
        {"fixed": fixed_heads and [list(h) for h in fixed_heads], "with_edges": with_edges},
    )
    circuit = circuit_from_json(
        step_cache.cached(
            path,
            lambda: circuit_json(
                circuits.discover_circuit(
                    model,
                    discovery,
                    means,
                    frac=cfg.circuit_frac,
                    max_heads=cfg.max_circuit_heads,
                    fixed=fixed_heads,
                    with_edges=with_edges,
                    progress=progress,
                    layers=cfg.circuit_layers,
                    edge_scoring=cfg.edge_scores,
                )
            ),
            circuit_schema(model.cfg.n_layers, model.cfg.n_heads),
        )
    )
    return CircuitContext(
        batch,
        means,
        circuit,
        psychophysics.circuit_logit_diffs(model, batch, means, circuit.heads),
        discovery,
    )


def run_circuit_audits(
    model, cc: CircuitContext, cfg, model_name: str
) -> tuple[list[AuditResult], dict[str, Any]]:
    """MIB, EX1, EX2, EX11 on the circuit, with their nulls; cached by content
    (:mod:`kit.audits.step_cache`). The second value: the MIB curve (None without edges), EX1
    and EX11 again (for their figures), the task signal and the circuit's scope in words."""
    tensors, extra = cc.cache_key()
    path = step_cache.step_path(
        "circuit-audits",
        [cache_identity(model)],
        cfg,
        tensors,
        {**extra, "name": model_name},
    )

    def compute() -> dict[str, Any]:
        results, art = _circuit_audits(model, cc, cfg, model_name)
        return {"results": step_cache.dump_results(results), **art}

    value = step_cache.cached(
        path, compute, step_cache.results_schema(n=4, keys=("curve", "signal", "scope"))
    )
    mib, ex1, ex2, ex11 = step_cache.load_results(value["results"])
    art = {"curve": value["curve"], "ex1": ex1, "ex11": ex11}
    return [mib, ex1, ex2, ex11], {**art, "signal": value["signal"], "scope": value["scope"]}


def _circuit_audits(model, cc: CircuitContext, cfg, model_name: str):
    inp = AuditInputs(
        model=model_name,
        hook="blocks.*.attn.hook_z",
        task=cfg.ioi_task,
        n=len(cc.batch),
        seeds=[cfg.seed],
        extra={
            "circuit": [f"{L}.{H}" for L, H in cc.circuit.heads],
            "discovery_n": len(cc.discovery) if cc.discovery else None,
        },
    )
    null_seeds = [cfg.seed + 1 + i for i in range(cfg.n_null_draws)]
    if cc.circuit.edges:
        mib, curve = mib_audit(
            model,
            cc.batch,
            cc.means,
            cc.circuit.edges,
            cfg.mib_thresholds,
            inputs=inp,
            null_seeds=null_seeds,
            scoring=cfg.edge_plan().what_runs(),
        )
    else:
        mib, curve = (
            not_run(
                "MIB",
                "MIB faithfulness curve",
                cfg.not_testable()["MIB"],
                "CPR > 0.5 (needs the scored edges of the head graph)",
                inp,
            ),
            None,
        )
    ex1 = psychophysics.dprime_audit(cc.lds["full"].numpy(), cc.lds["ablated"].numpy(), inputs=inp)
    ex2 = psychophysics.dif_audit(
        cc.lds["circuit_only"].numpy(),
        cc.batch.groups,
        inputs=inp,
        full_model_values=cc.lds["full"].numpy(),
        n_null=cfg.n_null_draws,
        seed=cfg.seed,
    )
    curves = psychophysics.weber_curves(
        model, cc.batch, cc.means, cc.circuit.heads, cfg.weber_scales, cfg.weber_baselines
    )
    ex11 = psychophysics.weber_audit(curves, cfg.weber_scales, cfg.jnd_threshold, inputs=inp)
    psychophysics.attach_random_circuit_nulls(
        model,
        cc.batch,
        cc.means,
        cc.circuit.heads,
        ex1,
        ex11,
        cfg.weber_scales,
        cfg.weber_baselines,
        cfg.jnd_threshold,
        n=cfg.n_null_seeds,
        seed=cfg.seed,
        n_dprime=cfg.n_null_draws,
    )
    signal = circuits.task_signal(cc.lds["full"].numpy())
    scope = circuits.circuit_scope(
        known=cfg.circuit != "discover",
        signal=signal,
        n_heads=len(cc.circuit.heads),
        frac=cfg.circuit_frac,
        max_heads=cfg.max_circuit_heads,
    )
    for r in (mib, ex1, ex2, ex11):
        r.values["circuit_source"] = "known" if cfg.circuit != "discover" else "discovered"
        r.values["task_signal"] = signal
        r.notes = "; ".join(x for x in (scope, r.notes) if x)
    return [mib, ex1, ex2, ex11], {"curve": curve, "signal": signal, "scope": scope}


def circuit_heads_for(cfg) -> list[circuits.Head] | None:
    """Wang et al.'s GPT-2 heads for ``circuit: wang2023``; ``None`` means discover."""
    if cfg.circuit == "wang2023":
        return circuits.ioi_heads_gpt2()
    return None
