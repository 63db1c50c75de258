"""A model's items, responses, correctness and MUI (notebook 01's shared steps).

Items of a tiny-world task or of a real benchmark, greedy responses with chosen MLP neurons
zero-ablated and their correctness, and the MUI of a model on its own responses; zoo models go
through ``kit.world``, Hugging Face models through ``kit.models.generate`` / ``kit.models.internals``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from kit.models import tl
from kit.mui import metric as mui


def is_zoo(name: str) -> bool:
    return name.startswith("zoo/")


def task_items(task: str, split: str, n: int, seed: int = 0, zoo: bool = True, skip: int = 0) -> list:
    """``n`` items of a world task split, or (``zoo=False``) items ``skip .. skip+n`` of a real
    benchmark's test split (real benchmarks have no fresh split: ``skip`` keeps sets disjoint)."""
    if not zoo:
        from kit.data.benchmarks import load_benchmark

        return load_benchmark(task, "test", limit=n + skip)[skip:]
    from kit import world as kworld

    return kworld.get_task(task).items(split, n, seed)


def task_group(task: str, zoo: bool = True) -> str:
    if zoo:
        from kit import world as kworld

        return kworld.get_task(task).group
    return task.split("/")[0]


def respond_and_score(model, items: list, task: str, zoo: bool = True, max_new_tokens: int = 1,
                      ablate: Sequence[tuple[int, int]] = ()) -> tuple[list[str], np.ndarray]:
    """Greedy responses and their correctness, with the (layer, neuron) MLP neurons ``ablate``
    zeroed: ``kit.world.respond``/``evaluate`` for zoo models; for Hugging Face models (ids,
    directories, twins) batched generation by their HF copy with the chat template when the
    tokenizer has one (``kit.models.generate.respond``, cached per model and benchmark) and
    ``kit.data.scorers.score``."""
    if zoo:
        from kit import world as kworld

        with tl.hooks(model, ablation_hooks(ablate)):
            return kworld.respond(model, items, max_new_tokens=max_new_tokens), np.asarray(kworld.evaluate(model, items), dtype=bool)
    from kit.data.scorers import score
    from kit.models.generate import GenerationSettings, respond

    responses = respond(model, [it.prompt for it in items], GenerationSettings(max_new_tokens=max_new_tokens),
                        benchmark=task, ids=[it.id for it in items], ablate=ablate)
    return responses, np.array([score(task, it, r) for it, r in zip(items, responses)], dtype=bool)


def items_mui(model, items: list, responses: list[str], task: str, zoo: bool = True, score: str = "score",
              threshold: str = "topk", k: int | None = None, frac: float | None = None, batch_size: int = 32,
              max_batch_tokens: int = 8192) -> float:
    """MUI (Eq. 5, in %) of ``model`` on its ``responses`` to ``items``.

    Zoo models: ``kit.mui.metric.utilization_for_items`` in ``batch_size`` rows. Hugging Face models
    (ids, directories, twins): per-item key neurons by teacher-forced passes over prompt (through the
    chat template when the tokenizer has one, as :func:`respond_and_score` generated) + response, in
    length-sorted batches of at most ``max_batch_tokens`` padded tokens, cached per (model, benchmark,
    MUI settings, responses) so a killed run resumes (``kit.models.internals.mui_key_neurons``), then
    their union. Both give the same MUI (per-token thresholds; tests/mui/test_law_real.py).
    """
    if zoo:
        return float(mui.utilization_for_items(model, items, responses, score=score, threshold=threshold, k=k,
                                               frac=frac, batch_size=batch_size).mui)
    import hashlib
    import json

    from kit.models.internals import cached_items_mui

    digest = hashlib.sha256(json.dumps([[str(it.id), r] for it, r in zip(items, responses)]).encode()).hexdigest()[:16]
    return cached_items_mui(model, items, responses, task,
                            {"score": score, "threshold": threshold, "k": k, "frac": frac, "chat": None,
                             "responses": digest},
                            max_batch_tokens, chat=None, score=score, threshold=threshold, k=k, frac=frac)


def ablation_hooks(neurons: Sequence[tuple[int, int]]) -> list[tuple[str, Any]]:
    """Zero-ablation hooks on ``blocks.{L}.mlp.hook_post`` for the given (layer, neuron) pairs."""
    by_layer: dict[int, list[int]] = {}
    for L, i in neurons:
        by_layer.setdefault(int(L), []).append(int(i))
    hooks = []
    for L, idx in sorted(by_layer.items()):
        index = torch.tensor(sorted(idx))

        def zero(act, hook, index=index):
            act[..., index.to(act.device)] = 0.0
            return act

        hooks.append((f"blocks.{L}.mlp.hook_post", zero))
    return hooks


def focus_model(models: Sequence[str], preferred: str | None = None) -> str:
    """The model of sections 3.6-3.8: ``preferred``, else ``zoo/base-m`` if listed, else the first."""
    if preferred:
        return preferred
    return "zoo/base-m" if "zoo/base-m" in models else models[0]
