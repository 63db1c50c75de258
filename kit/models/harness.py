"""lm-evaluation-harness as the response and scoring engine: run a task on the model kit loaded and
get the harness's prompts, responses and per-item scores (optional: ``pip install kit[lm-eval]``).

kit's own path stays the default everywhere: :func:`kit.models.generate.respond` answers kit's
prompts (:mod:`kit.data.benchmarks`: the bare question, multiple-choice options as ``A. text``
lines, the chat template on when the tokenizer has one) and :mod:`kit.data.scorers` scores them.
:func:`run_lm_eval` replaces both with the harness's: the task's own prompt template and few-shot
examples (gsm8k: 5-shot ``Question: ...\\nAnswer:``), its stop sequences and generation settings,
its filters (answer extraction) and metrics, and no chat template unless ``chat=True``. So its
accuracies are the harness's, comparable with published harness numbers, and not with kit's on
the same benchmark (other prompts, other extraction). Internals are then measured on the harness's
texts: :attr:`HarnessRun.prompts` are exactly what the model read (templated or not, as run), so
pass them with ``chat=False`` (e.g. ``kit.mui.metric.mui_key_neurons(model,
run.prompts, run.responses, chat=False)``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kit.models.generate import hf_model
from kit.models.lm_eval_samples import lm_eval_records


@dataclass(frozen=True)
class HarnessRun:
    """One lm-evaluation-harness task run on one model, under one filter (one record per
    document)."""

    task: str
    filter: str | None
    """The harness filter whose extracted answers were scored (gsm8k: ``strict-match`` or
    ``flexible-extract``)."""
    metric: str
    """The per-item metric read as correctness (``exact_match``, ``acc``...)."""
    doc_ids: list[Any]
    prompts: list[str]
    """The context the harness sent, exactly as the model read it (few-shot, template)."""
    responses: list[str]
    """The raw generations (before the filter's extraction)."""
    filtered: list[Any]
    """The filter's extracted answers."""
    targets: list[Any]
    correct: np.ndarray
    """Bool[ndarray, "n_docs"]: the harness's per-item metric > 0."""
    accuracy: float
    """The harness's aggregate of ``metric`` under ``filter``
    (``results[task]["<metric>,<filter>"]``)."""
    version: str
    """lm-evaluation-harness's version."""
    results: dict = field(repr=False, compare=False)
    """simple_evaluate's ``results[task]`` (every metric, filter and stderr)."""

    @property
    def n(self) -> int:
        return len(self.doc_ids)


def run_lm_eval(
    model,
    task: str,
    *,
    include_path: str | Path | None = None,
    limit: int | None = None,
    filter: str | None = None,
    metric: str | None = None,
    num_fewshot: int | None = None,
    batch_size: int = 8,
    chat: bool = False,
    gen_kwargs: dict | None = None,
    seed: int = 0,
    include_defaults: bool = True,
) -> HarnessRun:
    """Run lm-evaluation-harness task ``task`` on ``model`` (loaded by ``kit.load_model`` from a
    Hugging Face id, directory or twin) with ``lm_eval.simple_evaluate(..., log_samples=True)``.

    The harness drives the model's Hugging Face copy (the one :func:`kit.models.generate.hf_model`
    holds for generation, on the model's device and dtype) through its own ``HFLM`` wrapper.
    ``include_path``: a folder of task YAMLs (e.g. a task whose data is a local file:
    ``dataset_path: json`` + ``dataset_kwargs.data_files``); ``include_defaults=False`` leaves the
    harness's ~15,000 built-in tasks out of the index (indexing them takes about a minute here).
    ``limit``: the first documents only.
    ``filter``: which filter's scores to read (None: the task's only one; a task with several, like
    gsm8k, must name one). ``metric``: the per-item metric read as correctness (None: the first the
    samples list). ``chat``: the harness's ``apply_chat_template``. ``gen_kwargs``: overrides of
    the task's generation settings (e.g. ``{"max_gen_toks": 64}``). ``seed``: the harness's four
    seeds (python, numpy, torch, few-shot sampling).

    Returns a :class:`HarnessRun`. Raises ImportError naming the extra when lm-eval is missing,
    ValueError for an unknown task, filter or metric (naming the allowed ones).
    """
    _hf_path(model)  # fails before anything loads
    lm_eval = _lm_eval()
    manager = _task_manager(include_path, include_defaults)
    if task not in manager.all_tasks:
        near = [t for t in manager.all_tasks if task.split("_")[0] in t][:10]
        raise ValueError(
            f"task={task!r} is not an lm-evaluation-harness task here"
            + (f"; similar: {', '.join(near)}" if near else "")
            + (f" (include_path={include_path})" if include_path else "")
        )
    task_obj = manager.load([task])["tasks"][task]
    filters = [f["name"] for f in (task_obj.config.filter_list or [])] or ["none"]
    if filter is None and len(filters) > 1:
        raise ValueError(
            f"lm-eval task {task!r} scores every document under {len(filters)} filters: "
            f"{', '.join(filters)}; choose one with filter= (e.g. filter={filters[0]!r})"
        )
    if filter is not None and filter not in filters:
        raise ValueError(
            f"filter={filter!r} is not a filter of {task}; allowed values: {', '.join(filters)}"
        )
    metrics = [m["metric"] for m in (task_obj.config.metric_list or [])]
    metric = metric or (metrics[0] if metrics else None)
    if metric not in metrics:
        raise ValueError(
            f"metric={metric!r} is not a per-item metric of {task}; allowed values: "
            f"{', '.join(metrics) or 'none'}"
        )
    assert metric is not None  # else it is not in metrics (raised above)
    evaluate: Any
    evaluate = lm_eval.simple_evaluate  # its decorator hides the keyword arguments from pyright
    out = evaluate(
        model=_hflm(model, batch_size),
        tasks=[task_obj],
        num_fewshot=num_fewshot,
        limit=limit,
        log_samples=True,
        task_manager=manager,
        apply_chat_template=chat,
        gen_kwargs=gen_kwargs,
        random_seed=seed,
        numpy_random_seed=seed,
        torch_random_seed=seed,
        fewshot_random_seed=seed,
        bootstrap_iters=0,
    )
    samples = out["samples"][task]
    records = lm_eval_records(
        [(f"{task} doc {s.get('doc_id')}", s) for s in samples],
        filter or filters[0],
        f"lm-eval task {task!r}",
    )
    chosen = records[0]["filter"]
    results = out["results"][task]
    return HarnessRun(
        task=task,
        filter=chosen,
        metric=metric,
        doc_ids=[r["doc_id"] for r in records],
        prompts=[r["prompt"] for r in records],
        responses=[r["response"] for r in records],
        filtered=[r["filtered"] for r in records],
        targets=[r["target"] for r in records],
        correct=np.array([float(r["metrics"][metric]) > 0 for r in records], dtype=bool),
        accuracy=float(results[f"{metric},{chosen}"]),
        version=lm_eval.__version__,
        results=dict(results),
    )


def _lm_eval():
    # lazy: lm-eval is an optional extra, and importing it takes seconds
    try:
        import lm_eval
    except ImportError as e:
        raise ImportError(
            "run_lm_eval needs lm-evaluation-harness: pip install 'kit[lm-eval]' "
            "(lm-eval[hf] 0.4.x)"
        ) from e
    return lm_eval


_MANAGERS: dict[tuple[str | None, bool], Any] = {}


def _task_manager(include_path: str | Path | None = None, include_defaults: bool = True):
    """The harness's task index with the task YAMLs under ``include_path`` added, built once per
    process (indexing the built-in tasks reads ~15,000 YAML files)."""
    _lm_eval()
    from lm_eval.tasks import TaskManager

    key = (None if include_path is None else str(Path(include_path).resolve()), include_defaults)
    if key not in _MANAGERS:
        _MANAGERS[key] = TaskManager(include_path=key[0], include_defaults=include_defaults)
    return _MANAGERS[key]


def _hflm(model, batch_size: int = 8):
    """The harness's Hugging Face wrapper (``HFLM``) around the copy of ``model`` kit holds for
    generation (:func:`kit.models.generate.hf_model`: same device and dtype)."""
    _lm_eval()
    from lm_eval.models.huggingface import HFLM

    hf, tokenizer = hf_model(
        _hf_path(model), str(model.cfg.device), str(model.cfg.dtype).removeprefix("torch.")
    )
    hflm: Any = HFLM  # lm-eval's register_model decorator hides its keyword arguments from pyright
    return hflm(pretrained=hf, tokenizer=tokenizer, batch_size=batch_size)


def _hf_path(model) -> str:
    path = getattr(model, "kit_path", None)
    if path is None:
        raise ValueError(
            "run_lm_eval needs a model loaded from a Hugging Face directory (kit.load_model of an "
            "id, a local directory or twin/<arch>); tiny-world models have no Hugging Face copy"
        )
    return str(path)
