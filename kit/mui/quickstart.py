"""Notebook 00 (quickstart): one prompt's MLP activations and a model's accuracy, on a tiny-world
model or on any Hugging Face model, through the same calls.

Two paths, chosen by the model name (:func:`is_zoo`):

- tiny world (``zoo/...``): a world task's test items, the world's word-level tokenizer, the
  greedy next token scored by exact match (``kit.world.evaluate``);
- real models (Hugging Face ids, local directories, ``twin/<arch>``): a real benchmark
  (``kit.load_benchmark``), the model's own tokenizer with its chat template when it has one, batched
  greedy generation (``kit.models.generate.respond``) scored by ``kit.data.scorers.score`` -- or
  responses a user already has (:func:`file_answers`: an lm-evaluation-harness ``--log_samples``
  file or a published response set) -- and MUI by teacher-forced passes over prompt + response in
  batches of at most ``max_batch_tokens`` padded tokens, cached per item
  (``kit.models.internals.mui_key_neurons``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch


def is_zoo(name: str) -> bool:
    """Whether ``name`` is a tiny-world member (the world's tasks and tokenizer apply)."""
    return name.startswith("zoo/")


def test_items(task: str, n: int, seed: int = 0, zoo: bool = True) -> list:
    """The first ``n`` test items of a world task (``zoo``) or of a real benchmark
    (``kit.load_benchmark`` name: ``arc_challenge``, ``gsm8k``, ``mmlu/<subject>``...)."""
    if zoo:
        from kit import world as kworld

        return kworld.get_task(task).items("test", n=n, seed=seed)
    from kit.data.benchmarks import load_benchmark

    items = load_benchmark(task, "test", limit=n)
    if not items:
        raise ValueError(f"task={task!r}: the benchmark's test split is empty")
    return items


def chance(task: str, items: Sequence[Any], zoo: bool = True) -> float | None:
    """Accuracy of a random guess: the world task's ``chance``; for a real multiple-choice benchmark
    the mean of 1/number of options; None for free-form benchmarks (no meaningful chance level)."""
    if zoo:
        from kit import world as kworld

        return float(kworld.get_task(task).chance)
    if all(getattr(it, "choices", None) for it in items):
        return float(np.mean([1.0 / len(it.choices) for it in items]))
    return None


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


def probe(model, item, layer: int, zoo: bool = True, chat: bool | None = None) -> Probe:
    """Run ``item``'s prompt through ``model`` and read ``blocks.{layer}.mlp.hook_post``.

    World models: ``model.to_tokens(prompt)`` and the one-token target. Real models: the prompt as
    the responses saw it (``chat``: None = the chat template when the tokenizer has one, as
    :func:`kit.models.generate.respond` generates; False = as written, e.g. lm-eval contexts), and
    the answer's first token as the tokenizer splits ``prompt + answer`` (as teacher-forced MUI does).
    """
    if not 0 <= layer < model.cfg.n_layers:
        raise ValueError(f"layer={layer} is out of range; allowed: 0..{model.cfg.n_layers - 1} for this model")
    hook = f"blocks.{layer}.mlp.hook_post"
    if zoo:
        tokens = model.to_tokens(item.prompt)
        answer_id = model.to_single_token(item.target)
    else:
        from kit.models.rows import teacher_forced_rows

        (ids, n_prompt), = teacher_forced_rows(model, [item.prompt], [item.target], chat=chat)
        if n_prompt >= len(ids):
            raise ValueError(f"item {item.id}: the answer {item.target!r} adds no token after the prompt")
        answer_id = ids[n_prompt]
        tokens = torch.tensor([ids[:n_prompt]], dtype=torch.long, device=model.cfg.device)
    from kit.models import tl

    with torch.no_grad():
        logits, cache = tl.run_with_cache(model, tokens, [hook])
    probs = logits[0, -1].float().softmax(-1)
    return Probe(tokens=tokens, str_tokens=model.to_str_tokens(tokens[0]), acts=cache[hook][0].float().cpu(),
                 prompt=item.prompt, answer=item.target, predicted=model.to_string(probs.argmax()),
                 p_answer=float(probs[answer_id].item()))


def top_neurons(acts: torch.Tensor, k: int) -> torch.Tensor:
    """Indices of the ``k`` neurons with the largest mean |activation| over the prompt."""
    if not 1 <= k <= acts.shape[-1]:
        raise ValueError(f"top_neurons={k} must be in [1, {acts.shape[-1]}] (the layer's d_mlp)")
    return acts.abs().mean(0).topk(k).indices


@dataclass
class Answers:
    """A model's responses to items and their correctness, generated or read from a file."""

    items: list
    """Objects with ``id``, ``prompt`` and ``target`` (the reference answer as text)."""
    responses: list[str]
    correct: np.ndarray
    """bool per item."""
    chat: bool | None
    """How the prompts were shown when responding (teacher forcing shows them the same way):
    None = the tokenizer's chat template when it has one, False = as written."""
    source: str
    """``generated (<settings>)``, ``lm-eval <file> (<metric>)`` or ``published <set>``: part of the MUI cache key."""
    benchmark: str

    @property
    def accuracy(self) -> float:
        return float(np.mean(self.correct))


@dataclass(frozen=True)
class FileItem:
    """An item read from a responses file: the prompt as the model saw it and the reference."""

    id: str
    prompt: str
    target: str


def answers(model, task: str, items: Sequence[Any], zoo: bool = True, max_new_tokens: int = 1,
            batch_size: int = 16) -> Answers:
    """Greedy responses to ``items`` and their correctness.

    World models: ``kit.world.respond`` / ``kit.world.evaluate`` (the greedy next token, exact match).
    Real models: batched generation of ``max_new_tokens`` tokens by the model's Hugging Face copy
    (KV cache, chat template when the tokenizer has one; cached per model, benchmark and settings:
    ``kit.models.generate.respond``) scored by ``kit.data.scorers.score``.
    """
    items = list(items)
    if zoo:
        from kit import world as kworld

        return Answers(items, list(kworld.respond(model, items, max_new_tokens=1)),
                       np.asarray(kworld.evaluate(model, items), dtype=bool), False, "generated (world, greedy)", task)
    from kit.data.scorers import score
    from kit.models.generate import GenerationSettings, respond

    settings = GenerationSettings(max_new_tokens=max_new_tokens)
    responses = respond(model, [it.prompt for it in items], settings, benchmark=task, ids=[it.id for it in items],
                        batch_size=batch_size)
    correct = np.array([bool(score(task, it, r)) for it, r in zip(items, responses)], dtype=bool)
    return Answers(items, responses, correct, settings.chat, f"generated ({settings.as_dict()})", task)


LM_EVAL_METRICS = ("exact_match", "acc", "pass@1")
"""Per-item metrics of an lm-evaluation-harness sample read as correctness, first found first."""


def file_answers(source: str, n: int) -> Answers:
    """The first ``n`` responses of a file a user already has.

    ``source``: a published response set (``kit.data.responses.RESPONSE_SETS``:
    ``arc/llama3.1-8b-instruct``...; correctness by its parse rule; prompts are the bare questions,
    shown through the chat template when the tokenizer has one) or the path of an
    lm-evaluation-harness ``--log_samples`` jsonl (``samples_<task>_<date>.jsonl``; prompts are the
    exact context the harness sent, so no template is added; correctness is the sample's first
    metric among :data:`LM_EVAL_METRICS`).
    """
    from kit.data.responses import RESPONSE_SETS, load_responses

    if n < 1:
        raise ValueError(f"n_eval={n} must be >= 1")
    if source in RESPONSE_SETS:
        rs = load_responses(source, limit=n)
        items = [FileItem(i, p, r) for i, p, r in zip(rs.ids, rs.prompts, rs.references)]
        return Answers(items, list(rs.responses), np.asarray(rs.correct, dtype=bool), None, f"published {source}",
                       rs.benchmark)
    path = Path(source).expanduser()
    if not path.is_file():
        raise ValueError(f"responses={source!r} is neither a published response set ({', '.join(RESPONSE_SETS)}) "
                         "nor an existing lm-evaluation-harness --log_samples jsonl file")
    from kit.models.generate import read_lm_eval_samples

    samples = read_lm_eval_samples(path)[:n]
    metric = next((m for m in LM_EVAL_METRICS if all(m in s["metrics"] for s in samples)), None)
    if metric is None:
        raise ValueError(f"responses={source!r}: the samples carry no per-item metric among {', '.join(LM_EVAL_METRICS)} "
                         f"(found: {', '.join(sorted(samples[0]['metrics'])) or 'none'})")
    items = [FileItem(str(s["doc_id"]), s["prompt"], "" if s["target"] is None else str(s["target"])) for s in samples]
    correct = sample_correctness([s["metrics"][metric] for s in samples],
                                 [s["doc_id"] for s in samples], source, metric)
    benchmark = path.stem.removeprefix("samples_").rsplit("_", 1)[0] or path.stem
    from kit.models.identity import file_sha256

    # the file's content, not its name, is what a cache may key on (a file replaced in place)
    return Answers(items, [s["response"] for s in samples], correct, False,
                   f"lm-eval {path.name} sha256:{file_sha256(path)[:16]} ({metric})", benchmark)


def sample_correctness(values: Sequence[Any], doc_ids: Sequence[Any], source: str,
                       metric: str) -> np.ndarray:
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
        raise ValueError(f"responses={source!r}: {len(bad)} sample(s) have a {metric} that is "
                         f"not a finite number (doc_id {shown}): the harness did not score them; "
                         "rescore the file or remove those samples")
    return arr > 0


def items_and_answers(task: str, n: int, seed: int = 0, zoo: bool = True,
                      responses: str | None = None) -> tuple[list, Answers | None]:
    """The items the notebook shows and scores, and the answers when they come from a file.

    ``responses`` (real models only: a world model cannot read another model's text) names a
    file (:func:`file_answers`) whose first ``n`` items replace ``task``'s; else the first ``n``
    test items of ``task`` (:func:`test_items`) and None (the answers are generated later).
    """
    if responses is not None:
        if zoo:
            raise ValueError(f"responses={responses!r} needs a real model (a Hugging Face id, directory or twin); "
                             "tiny-world models generate their own: set responses: null")
        ans = file_answers(responses, n)
        return ans.items, ans
    return test_items(task, n, seed=seed, zoo=zoo), None


def mui(model, ans: Answers, zoo: bool = True, max_batch_tokens: int = 8192, score: str = "score",
        threshold: str = "topk") -> float:
    """MUI (seed 000 Eq. 5, in %) of the model on its responses ``ans``.

    World models: ``kit.mui.metric.utilization_for_items``. Real models: per-item key neurons by
    teacher-forced passes over prompt (shown as when responding) + response, in length-sorted batches
    of at most ``max_batch_tokens`` padded tokens, cached per (model, benchmark, responses' source,
    MUI settings) so a rerun resumes (``kit.models.internals.mui_key_neurons``), then their union.
    """
    if zoo:
        from kit.mui import metric as kmui

        return float(kmui.utilization_for_items(model, ans.items, ans.responses, score=score, threshold=threshold).mui)
    from kit.models.internals import cached_items_mui

    return cached_items_mui(model, ans.items, ans.responses, ans.benchmark,
                            {"source": ans.source, "chat": ans.chat, "score": score, "threshold": threshold},
                            max_batch_tokens, chat=ans.chat, score=score, threshold=threshold)
