"""lm-evaluation-harness samples as kit's records: the ``--log_samples`` jsonl files
(:func:`read_lm_eval_samples`) and the ``samples`` of ``lm_eval.simple_evaluate``
(:func:`lm_eval_records`), one record per document under one filter, each with the prompt the
harness sent, the raw response, the harness's extracted answer and its per-item metrics."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence


def read_lm_eval_samples(path: str | Path, filter: str | None = None) -> list[dict[str, Any]]:
    """Read an lm-evaluation-harness ``--log_samples`` file (``samples_<task>_<date>.jsonl``): one
    record per document, under one filter.

    The harness (0.4.x) writes one line per (filter, document): gsm8k's two filters
    (``strict-match``, ``flexible-extract``) give every document twice, with the same prompt and
    response and a different extracted answer and score. ``filter`` names the one to read; None
    takes the file's only filter, and fails listing them when it has several. Lines without a
    ``filter`` field (harness versions before 0.4) are all read.

    Each record is ``{"doc_id", "prompt", "response", "filtered", "target", "metrics", "filter"}``:
    ``prompt`` is the context the harness sent (``arguments.gen_args_0.arg_0``, or
    ``arguments[0][0]`` in older versions), already templated or not as the harness ran it (show it
    to the model as it is: ``chat=False``); ``response`` the raw generation (``resps``: what the
    model's internals produced), ``filtered`` the harness's extracted answer under ``filter``,
    ``metrics`` its per-item scores (the names listed in the line's ``metrics``, e.g.
    ``exact_match``). Generation tasks only: log-likelihood tasks have no response text.

    Raises ValueError naming the file and line for a line that is not JSON (a file cut off while
    written), a line that is not a generation sample, an unknown or ambiguous filter, or a document
    read twice under one filter.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"lm-eval samples file {path} does not exist (write it with --log_samples)"
        )
    lines = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                lines.append((f"{path}, line {n}", json.loads(line)))
            except json.JSONDecodeError as e:
                raise ValueError(
                    f"{path}, line {n}: not valid JSON ({e.msg}, column {e.colno}); the line is "
                    "torn (the file was cut off while being written?): rerun the harness or drop "
                    "the line"
                ) from None
    if not lines:
        raise ValueError(f"{path} holds no samples")
    return lm_eval_records(lines, filter, str(path))


def lm_eval_records(
    samples: Sequence[tuple[str, dict]], filter: str | None, source: str
) -> list[dict[str, Any]]:
    """lm-evaluation-harness samples, as ``(where, sample)`` pairs (a file's lines, or the
    ``samples[task]`` of ``lm_eval.simple_evaluate``), to one record per document under ``filter``
    (see :func:`read_lm_eval_samples`, which also says what a record holds)."""
    filters = list(dict.fromkeys(s["filter"] for _, s in samples if s.get("filter") is not None))
    if filter is None and len(filters) > 1:
        raise ValueError(
            f"{source} holds every document under {len(filters)} filters: "
            f"{', '.join(filters)}; choose one with filter= (e.g. filter={filters[0]!r})"
        )
    if filter is not None and filter not in filters:
        raise ValueError(
            f"{source}: filter={filter!r} is not among its filters; allowed values: "
            f"{', '.join(filters) or 'none (its lines carry no filter field: pass filter=None)'}"
        )
    chosen = filter if filter is not None else (filters[0] if filters else None)
    out, seen = [], {}
    for where, rec in samples:
        if filters and rec.get("filter") != chosen:
            continue
        record = _lm_eval_record(rec, where, chosen)
        if record["doc_id"] is None:  # very old files: the document's position
            record["doc_id"] = len(out)
        if record["doc_id"] in seen:
            raise ValueError(
                f"{where}: doc_id {record['doc_id']} was already read at {seen[record['doc_id']]}"
                + (f" under filter {chosen!r}" if chosen else "")
                + ": two runs in one file? one record per document is expected"
            )
        seen[record["doc_id"]] = where
        out.append(record)
    return out


def _lm_eval_record(rec: dict, where: str, filter: str | None) -> dict[str, Any]:
    args = rec.get("arguments")
    if isinstance(args, dict):
        first = args.get("gen_args_0") or next(iter(args.values()), {})
        prompt = first.get("arg_0") if isinstance(first, dict) else None
    elif isinstance(args, (list, tuple)) and args:  # older files, and simple_evaluate's own samples
        prompt = args[0][0] if isinstance(args[0], (list, tuple)) else args[0]
    else:
        prompt = None
    resp, filtered = rec.get("resps"), rec.get("filtered_resps")
    while isinstance(resp, (list, tuple)):
        resp = resp[0] if resp else None
    while isinstance(filtered, (list, tuple)):
        filtered = filtered[0] if filtered else None
    if not isinstance(prompt, str) or not isinstance(resp, str):
        raise ValueError(
            f"{where}: not a generation sample (need a prompt string in 'arguments' "
            "and a response string in 'resps'/'filtered_resps')"
        )
    names = rec.get("metrics")
    if isinstance(names, list):  # 0.4.x lists the metric names of the line
        metrics = {k: rec[k] for k in names if isinstance(rec.get(k), (int, float))}
    else:
        metrics = {k: v for k, v in rec.items() if isinstance(v, (int, float)) and k != "doc_id"}
    return {
        "doc_id": rec.get("doc_id"),
        "prompt": prompt,
        "response": resp,
        "filtered": filtered,
        "target": rec.get("target"),
        "metrics": metrics,
        "filter": filter,
    }
