"""Notebook 00 (quickstart): one prompt's MLP activations and a model's accuracy, on a tiny-world
model or on any Hugging Face model, through the same calls.

The model is a :class:`kit.subjects.Subject` (``kit.load_subject``): its items, its greedy answers
scored with their interval, chance, parse failures and truncations (:class:`kit.subjects.Answers`),
and MUI by teacher-forced passes over prompt + response. This module adds what only the
quickstart shows: one prompt through the model (:func:`probe`), the neurons to show
(:func:`top_neurons`), answers a user already has (:func:`file_answers`: an
lm-evaluation-harness ``--log_samples`` file or a published response set), and the same two
numbers for several models and benchmarks (:func:`compare`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping, Sequence, cast

import numpy as np
import pandas as pd
import torch

from kit.mui.metric import subject_mui
from kit.subjects import Answers, Subject


@dataclass
class Probe:
    """One prompt through the model: what the notebook shows."""

    tokens: torch.Tensor
    """``[1, pos]`` token ids the model saw (the chat template's when the tokenizer has one)."""
    str_tokens: list[str]
    acts: torch.Tensor
    """``[pos, d_mlp]`` activations at ``blocks.{layer}.mlp.hook_post`` (float32, CPU)."""
    prompt: str
    answer: str
    predicted: str
    """The greedy next token after the prompt."""
    p_answer: float
    """Probability of the answer's first token right after the prompt (teacher-forced; the whole
    answer for the world's one-token answers)."""


def probe(subject: Subject, item: Any, layer: int) -> Probe:
    """Run ``item``'s prompt through the subject's model and read ``blocks.{layer}.mlp.hook_post``.

    The prompt is shown as the subject shows it (world: ``<bos>`` + words; Hugging Face: the chat
    template when the tokenizer has one and ``subject.chat`` allows), and the answer's first token
    is the one teacher forcing of ``prompt + answer`` puts after it (``subject.tokens``), as MUI
    does.
    """
    model = subject.model
    if not 0 <= layer < model.cfg.n_layers:
        raise ValueError(
            f"layer={layer} is out of range; allowed: 0..{model.cfg.n_layers - 1} for this model"
        )
    hook = f"blocks.{layer}.mlp.hook_post"
    tokens, mask = subject.tokens([item], [item.target])
    n_prompt = int(mask[0].float().argmax()) if bool(mask[0].any()) else 0
    if not bool(mask[0].any()):
        raise ValueError(
            f"item {item.id}: the answer {item.target!r} adds no token after the prompt"
        )
    answer_id = int(tokens[0, n_prompt])
    tokens = tokens[:, :n_prompt].to(model.cfg.device)
    from kit.models import tl

    with torch.no_grad():
        logits, cache = tl.run_with_cache(model, tokens, [hook])
    assert logits is not None  # the default return_type gives logits
    probs = logits[0, -1].float().softmax(-1)
    return Probe(
        tokens=tokens,
        str_tokens=model.to_str_tokens(tokens[0]),
        acts=cache[hook][0].float().cpu(),
        prompt=item.prompt,
        answer=item.target,
        predicted=model.to_string(probs.argmax()),
        p_answer=float(probs[answer_id].item()),
    )


def top_neurons(acts: torch.Tensor, k: int) -> torch.Tensor:
    """Indices of the ``k`` neurons with the largest mean |activation| over the prompt."""
    if not 1 <= k <= acts.shape[-1]:
        raise ValueError(f"top_neurons={k} must be in [1, {acts.shape[-1]}] (the layer's d_mlp)")
    return acts.abs().mean(0).topk(k).indices


@dataclass(frozen=True)
class FileItem:
    """An item read from a responses file: the prompt as the model saw it and the reference."""

    id: str
    prompt: str
    target: str


LM_EVAL_METRICS = ("exact_match", "acc", "pass@1")
"""Per-item metrics of an lm-evaluation-harness sample read as correctness, first found first."""
LM_EVAL_INVALID = "[invalid]"
"""What lm-evaluation-harness's regex filters write when they find no answer (a parse failure)."""


def file_answers(source: str, n: int, filter: str | None = None) -> Answers:
    """The first ``n`` responses of a file a user already has.

    ``source``: a published response set (``kit.data.responses.RESPONSE_SETS``:
    ``arc/llama3.1-8b-instruct``...; correctness and parse failures by its parse rule; prompts are
    the bare questions, shown through the chat template when the tokenizer has one) or the path of
    an lm-evaluation-harness ``--log_samples`` jsonl (``samples_<task>_<date>.jsonl``; prompts are
    the exact context the harness sent, so no template is added; correctness is the sample's first
    metric among :data:`LM_EVAL_METRICS`). ``filter``: the harness's filter whose answers are read
    (``strict-match`` or ``flexible-extract`` for gsm8k; None: the file's only one, an error naming
    them when it has several); a published set has none.

    An lm-eval log of a generation task gives its generations (a parse failure is a filtered
    answer :data:`LM_EVAL_INVALID`, unknown when the samples carry no filtered answer); a log of a
    multiple-choice task gives the option the harness chose (the largest log-likelihood, as its
    ``acc``: the response is that option's continuation, so MUI is measured over it; the target
    is the right option's; ``scoring="loglik-text"``, chance the mean of 1/options, no parse
    failure; ``extra`` holds ``option_logliks`` and ``chosen``). Log-likelihood-only task types
    are refused by :func:`kit.models.lm_eval_samples.read_lm_eval_samples`. Truncation is unknown.
    """
    from kit.data.responses import RESPONSE_SETS, load_responses

    if n < 1:
        raise ValueError(f"n_eval={n} must be >= 1")
    if source in RESPONSE_SETS:
        if filter is not None:
            raise ValueError(
                f"filter={filter!r} names an lm-evaluation-harness filter; the published response "
                f"set {source} has none: set filter to None"
            )
        rs = load_responses(source, limit=n)
        items = [FileItem(i, p, r) for i, p, r in zip(rs.ids, rs.prompts, rs.references)]
        return Answers(
            rs.benchmark,
            items,
            list(rs.responses),
            np.asarray(rs.correct, dtype=bool),
            parse_failed=np.array([p is None for p in rs.predictions]),
            source=f"published {source}",
            chat=None,
        )
    path = Path(source).expanduser()
    if not path.is_file():
        raise ValueError(
            f"responses={source!r} is neither a published response set "
            f"({', '.join(RESPONSE_SETS)}) "
            "nor an existing lm-evaluation-harness --log_samples jsonl file"
        )
    from kit.models.lm_eval_samples import read_lm_eval_samples

    samples = read_lm_eval_samples(path, filter=filter)[:n]
    kinds = sorted({s["output_type"] for s in samples})
    if len(kinds) > 1:
        raise ValueError(
            f"responses={source!r} mixes lm-eval task types ({', '.join(kinds)}): one task per file"
        )
    choice = kinds == ["multiple_choice"]
    metric = next((m for m in LM_EVAL_METRICS if all(m in s["metrics"] for s in samples)), None)
    if metric is None:
        raise ValueError(
            f"responses={source!r}: the samples carry no per-item metric among "
            f"{', '.join(LM_EVAL_METRICS)} (found: "
            f"{', '.join(sorted(samples[0]['metrics'])) or 'none'})"
        )

    def target(s: dict) -> str:
        if choice and s["gold"] is not None:
            return s["choices"][s["gold"]]
        return "" if s["target"] is None else str(s["target"])

    items = [FileItem(str(s["doc_id"]), s["prompt"], target(s)) for s in samples]
    correct = sample_correctness(
        [s["metrics"][metric] for s in samples], [s["doc_id"] for s in samples], source, metric
    )
    filtered = [s["filtered"] for s in samples]
    if choice:  # an option is always chosen
        failed = np.zeros(len(samples), dtype=bool)
    elif all(isinstance(f, str) for f in filtered):
        failed = np.array([f == LM_EVAL_INVALID for f in filtered])
    else:
        failed = None
    benchmark = path.stem.removeprefix("samples_").rsplit("_", 1)[0] or path.stem
    from kit.models.identity import file_sha256

    chosen_filter = samples[0]["filter"]
    # the file's content, not its name, is what a cache may key on (a file replaced in place)
    return Answers(
        benchmark,
        items,
        [s["response"] for s in samples],
        correct,
        parse_failed=failed,
        chance=float(np.mean([1 / len(s["choices"]) for s in samples])) if choice else None,
        source=f"lm-eval {path.name} sha256:{file_sha256(path)[:16]} ({metric}"
        + (f", filter {chosen_filter}" if chosen_filter not in (None, "none") else "")
        + ")",
        chat=False,
        scoring="loglik-text" if choice else "generate",
        extra=(
            {
                "option_logliks": [s["loglikelihoods"] for s in samples],
                "chosen": [s["response"] for s in samples],
            }
            if choice
            else {}
        ),
    )


def sample_correctness(
    values: Sequence[Any], doc_ids: Sequence[Any], source: str, metric: str
) -> np.ndarray:
    """Correctness (bool per sample) from lm-eval per-sample metric values: value > 0. A value that
    is not a finite number (NaN: the harness could not score the item) is a named error listing the
    samples, never a silent wrong answer."""
    nums = []
    for v in values:
        try:
            nums.append(float(v))
        except (TypeError, ValueError):
            nums.append(float("nan"))
    arr = np.asarray(nums, dtype=float)
    bad = [str(d) for d, ok in zip(doc_ids, np.isfinite(arr)) if not ok]
    if bad:
        shown = ", ".join(bad[:5]) + (" ..." if len(bad) > 5 else "")
        raise ValueError(
            f"responses={source!r}: {len(bad)} sample(s) have a {metric} that is "
            f"not a finite number (doc_id {shown}): the harness did not score them; "
            "rescore the file or remove those samples"
        )
    return arr > 0


def items_and_answers(
    subject: Subject,
    task: str,
    n: int,
    seed: int = 0,
    responses: str | None = None,
    filter: str | None = None,
) -> tuple[list, Answers | None]:
    """The items the notebook shows and scores, and the answers when they come from a file.

    ``responses`` (real models only: a world model cannot read another model's text) names a
    file (:func:`file_answers`, read under lm-eval's ``filter``) whose first ``n`` items replace
    ``task``'s; the subject then shows prompts as the file says (``chat``). Else the first ``n``
    test items of ``task`` as the subject shows them (``subject.items``) and None (the answers are
    generated later).
    """
    if responses is not None:
        if subject.kind == "world":
            raise ValueError(
                f"responses={responses!r} needs a real model (a Hugging Face id, directory or "
                "twin); tiny-world models generate their own: set responses: null"
            )
        ans = file_answers(responses, n, filter=filter)
        return ans.items, ans
    return subject.items(task, "test", n=n, seed=seed), None


def reading_subject(subject: Subject, answers: Answers | None) -> Subject:
    """The subject that shows prompts as ``answers`` were generated from (a file's ``chat``)."""
    if answers is None or subject.kind == "world" or answers.chat == getattr(subject, "chat", None):
        return subject
    return replace(cast(Any, subject), chat=answers.chat)  # chat subjects are dataclasses


@dataclass
class Cell:
    """One (model, benchmark) of the comparison: its scored answers and their MUI."""

    model: str
    answers: Answers
    mui: float
    """MUI (seed 000 Eq. 5, %) of the responses, teacher-forced over prompt + response."""

    def row(self) -> dict[str, Any]:
        """The cell as a JSON-ready record: :meth:`Answers.summary`, the model and MUI."""
        return {"model": self.model, **self.answers.summary(), "mui": self.mui}


def compare(
    models: Sequence[str],
    tasks: Mapping[str, int],
    n: int,
    *,
    seed: int = 0,
    device: str = "cpu",
    world: str | None = None,
    dtype: str | None = None,
    prompt_style: str = "instructed",
    max_batch_tokens: int = 8192,
) -> list[Cell]:
    """Every model of ``models`` asked the first ``n`` test items of every benchmark of ``tasks``
    (name -> greedy response length in tokens: a letter needs ~16, a worked GSM8K answer ~256)
    exactly as the walk-through asks its one model: accuracy with its interval, chance, parse
    failures, truncations and MUI per cell. One model in memory at a time; responses and key
    neurons are cached by content (:class:`kit.models.cache.ItemCache`): a rerun re-reads them.
    """
    from kit.subjects import load_subject

    cells = []
    for name in models:
        subject = load_subject(name, device, world, dtype, prompt_style)
        for task, max_new_tokens in tasks.items():
            items = subject.items(task, "test", n=n, seed=seed)
            answers = subject.answer(task, items, max_new_tokens=max_new_tokens)
            mui = subject_mui(subject, answers, max_batch_tokens=max_batch_tokens)
            cells.append(Cell(name, answers, mui))
        del subject  # before the next model loads
    return cells


def compare_table(cells: Sequence[Cell]) -> pd.DataFrame:
    """One row per cell: model, benchmark, n, accuracy [95% Wilson interval], chance, parse
    failures, truncations, MUI (%)."""
    rows = []
    for c in cells:
        a = c.answers
        lo, hi = a.interval
        rows.append(
            {
                "model": c.model,
                "benchmark": a.task,
                "n": a.n,
                "accuracy": round(a.accuracy, 3),
                "95% interval": f"[{lo:.3f}, {hi:.3f}]",
                "chance": None if a.chance is None else round(a.chance, 3),
                "parse failures": a.n_parse_failed,
                "truncated": a.n_truncated,
                "max new tokens": a.max_new_tokens,
                "MUI %": round(c.mui, 2),
            }
        )
    return pd.DataFrame(rows)
