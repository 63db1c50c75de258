"""One interface for "a model under evaluation", and the factory that picks its implementation by
name.

A :class:`Subject` gives the items of a task or benchmark as the model should see them, greedy
responses (optionally with MLP neurons zero-ablated), their scores (:class:`~kit.subjects.Answers`:
accuracy with its interval, chance, parse failures, truncations), and the teacher-forced rows of its
responses that methods read internals over (``tokens``). The implementation is chosen by
:func:`subject_of` from the loaded model:

- a registered form (:func:`register_subject`) whose model it is: the tiny world registers
  :class:`kit.world.subject.WorldSubject` for its word-level models (``zoo/...``, notebook 03's
  ``extra/...``) on the world's tasks (this package never imports the world);
- else :class:`~kit.subjects.hf.HFSubject`: everything ``kit.load_model`` loads as a Hugging Face
  causal LM (hub ids with ``@revision``, local directories, ``twin/<arch>``; GGUF files and
  ``real/...`` as ``kit.load_model`` learns them) on real benchmarks.

A paper package asks a subject, never "is this a zoo model?"::

    s = kit.load_subject("zoo/base-m")               # or "twin/llama", "Qwen/Qwen2.5-7B-Instruct"
    items = s.items("add", "test", n=100)
    ans = s.answer("add", items, max_new_tokens=1)     # Answers
    print(ans.describe()); run.record(accuracy=ans.summary())
    mui = kit.mui.mui(s, ans)                        # MUI (%) of those responses (seed 000)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

from kit.core import providers
from kit.subjects.answers import Answers
from kit.subjects.lent import LentMethods, lend  # noqa: F401 (re-exported)

Neuron = tuple[int, int]


@runtime_checkable
class Subject(Protocol):
    """A model under evaluation (see the module docstring for the two implementations)."""

    name: str
    model: Any
    """The ``HookedTransformer`` whose internals are read."""
    kind: str
    """``world`` or ``hf``."""

    def items(
        self,
        task: str,
        split: str = "test",
        n: int | None = None,
        seed: int = 0,
        skip: int = 0,
        one_per_content: bool = False,
    ) -> list:
        """Items ``skip .. skip + n`` of ``task``'s ``split``, prompts as this subject is shown
        them."""
        ...

    def fresh_items(self, task: str, n: int, seed: int = 0) -> list | None:
        """``n`` items the model never saw (the world's ``fresh`` split), or None where no such
        split exists."""
        ...

    def token_budget(self, max_batch_tokens: int | None) -> int | None:
        """The padded-token budget of teacher-forced passes for this model (None: ``batch_size``
        rows)."""
        ...

    def group(self, task: str) -> str:
        """Capability group of ``task`` (``math``, ``code``, ``reasoning``, ``general``...)."""
        ...

    def chance(self, task: str, items: Sequence[Any]) -> float | None:
        """Accuracy of a random guess on ``items`` (None for free-form answers)."""
        ...

    def respond(
        self,
        task: str,
        items: Sequence[Any],
        max_new_tokens: int = 1,
        ablate: Sequence[Neuron] = (),
    ) -> list[str]:
        """Greedy responses, with the (layer, neuron) MLP neurons ``ablate`` zeroed."""
        ...

    def score(
        self, task: str, items: Sequence[Any], responses: Sequence[str], max_new_tokens: int = 1
    ) -> Answers:
        """Correctness, parse failures and truncations of ``responses``."""
        ...

    def answer(
        self,
        task: str,
        items: Sequence[Any],
        max_new_tokens: int = 1,
        ablate: Sequence[Neuron] = (),
        scoring: str = "generate",
    ) -> Answers:
        """:meth:`respond` then :meth:`score` (or option log-likelihoods: ``scoring``)."""
        ...

    def tokens(self, items: Sequence[Any], responses: Sequence[str]) -> tuple[Any, Any]:
        """Teacher-forced rows: right-padded prompt + response tokens [batch, seq] and the response
        mask."""
        ...


@dataclass(frozen=True)
class SubjectForm:
    """A kind of loaded model that is asked its own way, not as a Hugging Face causal LM: registered
    by what makes such models (the tiny world registers its word-level models' subject)."""

    kind: str
    """The subjects' ``kind`` (``world``)."""
    owns: Callable[[Any], bool]
    """Whether a loaded model is of this kind (the world's: it speaks the world's vocabulary,
    :func:`kit.models.rows.is_world_model`)."""
    make: Callable[[str, Any, str | None], Subject]
    """``make(name, model, world)``: the model's subject."""
    owner: str = ""


_FORMS: dict[str, SubjectForm] = {}


def register_subject(form: SubjectForm) -> SubjectForm:
    """Add a subject form (a module re-imported registers it again)."""
    _FORMS[form.kind] = form
    return form


def subject_forms() -> dict[str, SubjectForm]:
    """The registered subject forms, by kind (the providers named by the package root first)."""
    providers.ensure()
    return dict(_FORMS)


def is_world_name(name: str) -> bool:
    """Whether ``name`` is a tiny-world model: a zoo member (``zoo/...``) or notebook 03's own
    fine-tune of one (``extra/...``): its form's ``tiny_world`` (:mod:`kit.models.sources`)."""
    from kit.models.sources import find

    form = find(name)
    return form is not None and form.tiny_world


def load_model_any(
    name: str, device: str = "cpu", world: str | None = None, dtype: str | None = None
):
    """The model behind a subject name: ``kit.load_model`` (every form of
    :mod:`kit.models.sources`, notebook 03's ``extra/`` fine-tunes included: trained on first use).
    ``dtype`` applies to Hugging Face models and twins; tiny-world models stay float32 (their
    loaders take no dtype)."""
    from kit.models.load import load_model

    return load_model(name, device=device, world=world, dtype=dtype)


def subject_of(
    model: Any,
    name: str | None = None,
    world: str | None = None,
    prompt_style: str = "instructed",
    chat: bool | None = None,
) -> Subject:
    """The subject of a model already loaded (``kit.load_model``): that of the registered form it
    belongs to (:func:`register_subject`: a world subject when it speaks the world's vocabulary),
    else a Hugging Face one (it must come from a Hugging Face directory)."""
    from kit.subjects.hf import HFSubject

    label = name or str(
        getattr(model, "kit_name", None) or getattr(model.cfg, "model_name", "model")
    )
    for form in subject_forms().values():
        if form.owns(model):
            return form.make(label, model, world)
    if getattr(model, "kit_path", None) is None:
        raise ValueError(
            f"{label}: neither a tiny-world model nor one loaded from a Hugging Face directory "
            "(kit.load_model of an id, a local directory or twin/<arch>): it cannot generate"
        )
    return HFSubject(label, model, prompt_style, chat)


def load_subject(
    name: str,
    device: str = "cpu",
    world: str | None = None,
    dtype: str | None = None,
    prompt_style: str = "instructed",
    chat: bool | None = None,
) -> Subject:
    """Load ``name`` (:func:`load_model_any`) and wrap it (:func:`subject_of`).

    ``prompt_style`` (Hugging Face models on real benchmarks): ``instructed`` (the benchmark's
    answer-format instruction, :mod:`kit.data.prompts`) or ``plain`` (the bare question);
    ``chat``: the tokenizer's chat template (None: when it has one)."""
    from kit.data.prompts import PROMPT_STYLES

    if prompt_style not in PROMPT_STYLES:  # before loading anything
        raise ValueError(
            f"prompt_style={prompt_style!r} is not allowed; allowed: {', '.join(PROMPT_STYLES)}"
        )
    return subject_of(load_model_any(name, device, world, dtype), name, world, prompt_style, chat)
