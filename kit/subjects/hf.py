"""A Hugging Face model under evaluation (a hub id, a local directory, ``twin/<arch>``, anything
``kit.load_model`` loads as a causal LM), on real benchmarks.

- items: ``kit.load_benchmark`` items, their prompts wrapped in the benchmark's answer-format
  instruction (``prompt_style="instructed"``, :mod:`kit.data.prompts`) or bare (``"plain"``);
- responses: batched greedy generation by the model's Hugging Face copy with its chat template when
  the tokenizer has one, cached per (model, benchmark + prompt style, settings) under the item ids
  (:func:`kit.models.generate.respond`); ablated neurons zeroed inside the MLP (never cached);
- scores: :func:`kit.data.scorers.score`, parse failures :func:`kit.data.scorers.parse_failed`, and
  a truncation flag per response; or, for multiple choice, option log-likelihoods
  (:mod:`kit.subjects.loglik`);
- internals: teacher-forced rows over prompt + response (:meth:`HFSubject.tokens`; MUI's key
  neurons of them, cached per item: :func:`kit.mui.metric.per_item_key_neurons`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from kit.data.prompts import PROMPT_STYLES, instructed_items, instruction_for, prompt_key
from kit.subjects.answers import SCORINGS, Answers
from kit.subjects.items import task_chance, task_family, task_group, task_items
from kit.subjects.lent import LentMethods

Neuron = tuple[int, int]


def responses_digest(items: Sequence[Any], responses: Sequence[str]) -> str:
    """16 hex digits naming (id, prompt, response) of every item: per-item internals are cached
    under it, so other prompts or other responses never read another's key neurons."""
    rows = [[str(it.id), it.prompt, r] for it, r in zip(items, responses)]
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()[:16]


def prompt_style_of(items: Sequence[Any]) -> str:
    """``instructed`` when the items carry an instruction (:func:`kit.data.prompts.instructed`),
    else ``plain``."""
    return (
        "instructed"
        if any("plain_prompt" in (getattr(it, "metadata", None) or {}) for it in items)
        else "plain"
    )


def token_counts(tokenizer, responses: Sequence[str]) -> np.ndarray:
    """Int[ndarray, "item"]: tokens of each decoded response, re-encoded without special tokens.
    Re-encoding a greedy generation gives back its token count, up to a rare different merge."""
    return np.array(
        [len(tokenizer(r, add_special_tokens=False)["input_ids"]) if r else 0 for r in responses],
        dtype=int,
    )


@dataclass
class HFSubject(LentMethods):
    """A Hugging Face causal LM and the ways of asking it (see the module docstring)."""

    name: str
    model: Any
    """The ``HookedTransformer`` from ``kit.load_model`` (``kit_path`` names its Hugging Face
    directory)."""
    prompt_style: str = "instructed"
    chat: bool | None = None
    """Chat template: None = when the tokenizer has one (instruct models), True/False =
    always/never. ``loglik-text`` reads None as never (lm-eval's format); True gives its
    chat-template variant."""
    batch_size: int = 16
    """Prompts per generation batch."""
    kind: str = "hf"

    def __post_init__(self):
        if self.prompt_style not in PROMPT_STYLES:
            raise ValueError(
                f"prompt_style={self.prompt_style!r} is not allowed; "
                f"allowed: {', '.join(PROMPT_STYLES)}"
            )

    def items(
        self,
        task: str,
        split: str = "test",
        n: int | None = None,
        seed: int = 0,
        skip: int = 0,
        one_per_content: bool = False,
    ) -> list:
        """Items of a real benchmark (:func:`kit.subjects.items.task_items`), shown in this
        subject's prompt style. World task names are refused (``tiny/<task>`` gives their items as a
        benchmark)."""
        self.check_task(task)
        return instructed_items(
            task, task_items(task, split, n, seed, skip, one_per_content), self.prompt_style
        )

    def check_task(self, task: str) -> None:
        family = task_family(task)
        if family is not None:
            raise ValueError(
                f"task={task!r} is a tiny-world task; {self.name} answers real benchmarks "
                "(kit.load_benchmark names: gsm8k, arc_challenge, mmlu/<subject>...; "
                "the world's task as "
                f"a benchmark: {family.family}/{task})"
            )

    def fresh_items(self, task: str, n: int, seed: int = 0) -> list | None:
        """None: a public benchmark has no split its model is known never to have seen."""
        return None

    def token_budget(self, max_batch_tokens: int | None) -> int | None:
        """``max_batch_tokens``: teacher-forced passes run in length-sorted batches of at most that
        many padded tokens."""
        return max_batch_tokens

    def group(self, task: str) -> str:
        return task_group(task)

    def chance(self, task: str, items: Sequence[Any]) -> float | None:
        return task_chance(task, items)

    def _settings(self, max_new_tokens: int):
        from kit.models.generate import GenerationSettings

        return GenerationSettings(max_new_tokens=max_new_tokens, chat=self.chat)

    def respond(
        self,
        task: str,
        items: Sequence[Any],
        max_new_tokens: int = 256,
        ablate: Sequence[Neuron] = (),
    ) -> list[str]:
        """Greedy responses (:func:`kit.models.generate.respond`), cached under the benchmark and
        its prompt style (:func:`kit.data.prompts.prompt_key`) unless neurons are ablated."""
        from kit.models.generate import respond

        items = list(items)
        return respond(
            self.model,
            [it.prompt for it in items],
            self._settings(max_new_tokens),
            benchmark=prompt_key(task, prompt_style_of(items)),
            ids=[it.id for it in items],
            batch_size=self.batch_size,
            ablate=ablate,
        )

    def score(
        self, task: str, items: Sequence[Any], responses: Sequence[str], max_new_tokens: int = 256
    ) -> Answers:
        """Correctness by :func:`kit.data.scorers.score`, parse failures by
        :func:`kit.data.scorers.parse_failed`, and truncation: a response of at least
        ``max_new_tokens`` tokens (:func:`token_counts`) stopped at the budget, not at its end
        token."""
        from kit.data.scorers import parse_failed, score

        items, responses = list(items), list(responses)
        correct = np.array(
            [bool(score(task, it, r)) for it, r in zip(items, responses)], dtype=bool
        )
        failed = np.array(
            [parse_failed(task, it, r) for it, r in zip(items, responses)], dtype=bool
        )
        truncated = token_counts(self.model.tokenizer, responses) >= max_new_tokens
        settings = self._settings(max_new_tokens)
        return Answers(
            task,
            items,
            responses,
            correct,
            failed,
            truncated,
            self.chance(task, items),
            f"generated ({settings.as_dict()})",
            self.chat,
            "generate",
            prompt_style_of(items),
            max_new_tokens,
        )

    def answer(
        self,
        task: str,
        items: Sequence[Any],
        max_new_tokens: int = 256,
        ablate: Sequence[Neuron] = (),
        scoring: str = "generate",
        max_batch_tokens: int = 8192,
    ) -> Answers:
        """:meth:`respond` then :meth:`score` (``scoring="generate"``), or the most likely option
        (``loglik-letter`` / ``loglik-text``, multiple choice only: :func:`loglik_answers`)."""
        if scoring not in SCORINGS:
            raise ValueError(f"scoring={scoring!r} is not allowed; allowed: {', '.join(SCORINGS)}")
        items = list(items)
        if scoring == "generate":
            return self.score(
                task, items, self.respond(task, items, max_new_tokens, ablate), max_new_tokens
            )
        return loglik_answers(self, task, items, scoring, ablate, max_batch_tokens)

    def tokens(self, items: Sequence[Any], responses: Sequence[str]):
        """Right-padded prompt + response tokens, the prompt shown as this subject shows it
        (``chat``), and the response mask (:func:`kit.models.rows.teacher_forced_rows`, cut to the
        context with a warning; with ``chat=None`` the rows of
        :func:`kit.models.rows.item_tokens`)."""
        from kit.models.rows import pad_rows, teacher_forced_rows

        rows = teacher_forced_rows(
            self.model, [it.prompt for it in items], list(responses), chat=self.chat
        )
        pad = self.model.tokenizer.pad_token_id
        return pad_rows(rows, pad if pad is not None else 0)


def loglik_answers(
    subject: HFSubject,
    task: str,
    items: list,
    scoring: str,
    ablate: Sequence[Neuron] = (),
    max_batch_tokens: int = 8192,
) -> Answers:
    """Multiple-choice answers by option log-likelihood (:mod:`kit.subjects.loglik`): the chosen
    option is the response (``loglik-letter``: the answer prefix and its letter, as a model would
    write it, the prompt shown as the subject's ``chat`` says; ``loglik-text``: the option text
    after lm-eval's ``Question: ...\\nAnswer:`` items, without a chat template unless the
    subject's ``chat`` is True: lm-evaluation-harness's ``hf`` model's log-likelihoods by default,
    the chat-template variant with ``chat=True``). The answers record the chat setting used."""
    from kit.subjects.ablation import ablation_hooks
    from kit.subjects.loglik import LETTERS, letter_contexts, option_logliks, text_items

    missing = [it.id for it in items if not getattr(it, "choices", None)]
    if missing:
        raise ValueError(
            f"scoring={scoring!r} needs multiple-choice items; "
            f"{task} item {missing[0]} has no options "
            "(allowed for free-form benchmarks: scoring='generate')"
        )
    chat = subject.chat
    if scoring == "loglik-text":
        # lm-eval's format: no chat template unless asked for (chat=None means "when the tokenizer
        # has one" for generation, not here)
        chat = bool(subject.chat)
        shown = text_items(items, task)
        suffixes, options = [""] * len(shown), [[f" {c}" for c in it.choices] for it in shown]
    else:
        shown = items
        prefixes = [
            (ins.answer_prefix if ins is not None and "plain_prompt" in it.metadata else None)
            for it, ins in ((it, instruction_for(task, it)) for it in items)
        ]
        suffixes, options = map(list, zip(*letter_contexts(items, prefixes)))
    logliks = option_logliks(
        subject.model,
        [it.prompt for it in shown],
        suffixes,
        options,
        chat=chat,
        max_batch_tokens=max_batch_tokens,
        fwd_hooks=ablation_hooks(ablate),
    )
    chosen = [int(np.argmax(ll)) for ll in logliks]
    responses = [
        f"{s}{opts[c]}" if scoring == "loglik-letter" else opts[c]
        for s, opts, c in zip(suffixes, options, chosen)
    ]
    correct = np.array([c == it.label for c, it in zip(chosen, items)], dtype=bool)
    zeros = np.zeros(len(items), dtype=bool)
    return Answers(
        task,
        shown,
        responses,
        correct,
        zeros,
        zeros.copy(),
        subject.chance(task, items),
        f"option log-likelihood ({scoring}, chat={chat})",
        chat,
        scoring,
        prompt_style_of(items),
        None,
        {"option_logliks": [ll.tolist() for ll in logliks], "chosen": [LETTERS[c] for c in chosen]},
    )
