"""lm-evaluation-harness samples as kit's records: the ``--log_samples`` jsonl files
(:func:`read_lm_eval_samples`) and the ``samples`` of ``lm_eval.simple_evaluate``
(:func:`lm_eval_records`), one record per document under one filter, each with the prompt the
harness sent, the response (a generation, or the option a multiple-choice task chose), the
harness's extracted answer and its per-item metrics."""

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

    Each record is ``{"doc_id", "prompt", "response", "filtered", "target", "metrics", "filter",
    "output_type"}``: ``prompt`` is the context the harness sent (``arguments.gen_args_0.arg_0``,
    or ``arguments[0][0]`` in older versions), already templated or not as the harness ran it (show
    it to the model as it is: ``chat=False``); ``filtered`` the harness's extracted answer under
    ``filter``, ``metrics`` its per-item scores (the names listed in the line's ``metrics``, e.g.
    ``exact_match``, ``acc``); ``output_type`` the task type (:func:`output_type`), one of
    :data:`OUTPUT_TYPES`:

    - ``generate_until``: ``response`` is the raw generation (``resps``: what the model's
      internals produced);
    - ``multiple_choice``: the harness scored each option's continuation by its log-likelihood
      after the context (``resps`` of ``[["-26.24", "False"]]``: log-likelihood and is-greedy, as
      strings). The record reads the option lm-eval's ``acc`` chooses, the first of largest
      log-likelihood: ``prompt`` is its context, ``response`` its continuation (``" Paris"``, with
      the task's target delimiter: prompt + response is the text the harness scored, so MUI is
      measured over the chosen continuation), ``filtered`` its option text. The record adds
      ``choices`` (the options' texts: the continuations, or the contexts of a multiple-input task
      such as winogrande), ``loglikelihoods`` (one float per option), ``chosen`` (its index) and
      ``gold`` (the right option's index from ``target``, None when the target names none).
      Correctness is the line's ``acc``, not recomputed.

    Raises ValueError naming the file and line for a line that is not JSON (a file cut off while
    written), a sample of a task type that holds no answer (``loglikelihood``,
    ``loglikelihood_rolling``: :data:`REFUSED_OUTPUT_TYPES`, named in the message) or is not a
    harness sample, an unknown or ambiguous filter, or a document read twice under one filter.
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


OUTPUT_TYPES = ("generate_until", "multiple_choice")
"""lm-evaluation-harness task types whose samples read as answers: a generation, or the option of
largest log-likelihood."""

REFUSED_OUTPUT_TYPES = {
    "loglikelihood": "one continuation's log-likelihood, no choice among options (e.g. lambada)",
    "loglikelihood_rolling": "a document's rolling log-likelihood, a perplexity (e.g. wikitext)",
}
"""lm-evaluation-harness task types whose samples hold no answer, and why."""


def _requests(args: Any) -> list[tuple]:
    """A sample's requests, each as its argument tuple: ``(context, generation kwargs)`` for
    generate_until, ``(context, continuation)`` for a log-likelihood, ``(text,)`` for a rolling
    one. Files write ``{"gen_args_<i>": {"arg_<j>": ...}}``, ``simple_evaluate`` a list of
    tuples (and older files lists)."""

    def by_index(d: dict) -> list:
        return [v for _, v in sorted(d.items(), key=lambda kv: int(str(kv[0]).rsplit("_", 1)[-1]))]

    if isinstance(args, dict):
        try:
            reqs = by_index(args)
            return [tuple(by_index(r)) if isinstance(r, dict) else (r,) for r in reqs]
        except ValueError:  # keys without an index: not the harness's layout
            return []
    if isinstance(args, (list, tuple)):
        return [tuple(a) if isinstance(a, (list, tuple)) else (a,) for a in args]
    return []


def output_type(rec: dict) -> str | None:
    """The lm-evaluation-harness ``output_type`` of the task that wrote sample ``rec``, told from
    its requests (a sample does not name it): one request whose second argument is the generation
    kwargs is ``generate_until``; several ``(context, continuation)`` requests are
    ``multiple_choice``, one is ``loglikelihood``; ``(text,)`` requests are
    ``loglikelihood_rolling``. None: not a harness sample."""
    reqs = _requests(rec.get("arguments"))
    if not reqs or not all(isinstance(r[0], str) for r in reqs):
        return None
    if all(len(r) == 1 for r in reqs):
        return "loglikelihood_rolling"
    if any(len(r) < 2 for r in reqs):
        return None
    if len(reqs) == 1 and isinstance(reqs[0][1], dict):
        return "generate_until"
    if all(isinstance(r[1], str) for r in reqs):
        return "multiple_choice" if len(reqs) > 1 else "loglikelihood"
    return None


def _loglik(resp: Any, where: str, i: int) -> float:
    """Request ``i``'s log-likelihood from its response: ``[[ll, is_greedy]]`` in a file (both
    written as strings: ``[["-26.24", "False"]]``), ``[(ll, is_greedy)]`` in memory."""
    while isinstance(resp, (list, tuple)) and resp and isinstance(resp[0], (list, tuple)):
        resp = resp[0]
    value: Any = resp[0] if isinstance(resp, (list, tuple)) and resp else resp
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(
            f"{where}: option {i}'s response {resp!r} holds no log-likelihood (a number, or its "
            "string as --log_samples writes it)"
        ) from None


def _gold(target: Any, choices: list[str]) -> int | None:
    """The index of the right option: the harness's target is an index (an int in memory, its
    string in a file: a digit string is an index, as the harness reads it) or the option's text;
    None when it is neither (several golds...)."""
    if isinstance(target, bool):
        return None
    if isinstance(target, int) or (isinstance(target, str) and target.strip().isdigit()):
        idx = int(target)
        return idx if 0 <= idx < len(choices) else None
    stripped = [c.strip() for c in choices]
    if isinstance(target, str) and target.strip() in stripped:
        return stripped.index(target.strip())
    return None


def _lm_eval_record(rec: dict, where: str, filter: str | None) -> dict[str, Any]:
    kind = output_type(rec)
    if kind in REFUSED_OUTPUT_TYPES:
        raise ValueError(
            f"{where}: a sample of an lm-eval {kind} task ({REFUSED_OUTPUT_TYPES[kind]}): it holds "
            f"no answer to read; readable task types: {', '.join(OUTPUT_TYPES)}"
        )
    names = rec.get("metrics")
    if isinstance(names, list):  # 0.4.x lists the metric names of the line
        metrics = {k: rec[k] for k in names if isinstance(rec.get(k), (int, float))}
    else:
        metrics = {k: v for k, v in rec.items() if isinstance(v, (int, float)) and k != "doc_id"}
    if kind == "multiple_choice":
        return _choice_record(rec, where, filter, metrics)
    reqs = _requests(rec.get("arguments"))
    prompt = reqs[0][0] if kind == "generate_until" else None
    resp, filtered = rec.get("resps"), rec.get("filtered_resps")
    while isinstance(resp, (list, tuple)):
        resp = resp[0] if resp else None
    while isinstance(filtered, (list, tuple)):
        filtered = filtered[0] if filtered else None
    if not isinstance(prompt, str) or not isinstance(resp, str):
        raise ValueError(
            f"{where}: not an lm-eval sample of a readable task type ({', '.join(OUTPUT_TYPES)}): "
            "need a prompt and generation kwargs in 'arguments' and a response string in 'resps', "
            "or (context, continuation) options"
        )
    return {
        "doc_id": rec.get("doc_id"),
        "prompt": prompt,
        "response": resp,
        "filtered": filtered,
        "target": rec.get("target"),
        "metrics": metrics,
        "filter": filter,
        "output_type": "generate_until",
    }


def _choice_record(
    rec: dict, where: str, filter: str | None, metrics: dict[str, Any]
) -> dict[str, Any]:
    """A multiple-choice sample read as the option lm-eval's ``acc`` chooses: the first of largest
    log-likelihood (``np.argmax``), its context as the prompt and its continuation as the
    response."""
    reqs = _requests(rec.get("arguments"))
    resps = rec.get("filtered_resps") or rec.get("resps")
    if not isinstance(resps, (list, tuple)) or len(resps) != len(reqs):
        raise ValueError(
            f"{where}: a multiple-choice sample with {len(reqs)} options but "
            f"{len(resps) if isinstance(resps, (list, tuple)) else 'no'} responses in "
            "'filtered_resps'/'resps'"
        )
    lls = [_loglik(r, where, i) for i, r in enumerate(resps)]
    chosen = max(range(len(lls)), key=lambda i: (lls[i], -i))  # the first maximum, as np.argmax
    contexts, continuations = [r[0] for r in reqs], [r[1] for r in reqs]
    # multiple input (winogrande): the contexts differ and the continuation is shared
    choices = continuations if len(set(contexts)) == 1 else contexts
    return {
        "doc_id": rec.get("doc_id"),
        "prompt": contexts[chosen],
        "response": continuations[chosen],
        "filtered": choices[chosen],
        "target": rec.get("target"),
        "metrics": metrics,
        "filter": filter,
        "output_type": "multiple_choice",
        "choices": choices,
        "loglikelihoods": lls,
        "chosen": chosen,
        "gold": _gold(rec.get("target"), choices),
    }
