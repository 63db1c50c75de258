"""Models under evaluation: one way to ask any model, used by every paper package.

- :class:`Subject` (the interface) and :func:`load_subject` / :func:`subject_of` (the factory, by
  name or from a loaded model): :mod:`kit.subjects.subject`;
- :class:`HFSubject` (Hugging Face causal LMs on real benchmarks): :mod:`kit.subjects.hf`; other
  kinds of model register their own subject (:func:`register_subject`: the tiny world's
  ``kit.world.WorldSubject``, from :mod:`kit.world.sources`: this package never imports the world);
- :func:`ablation_hooks` (zero MLP neurons while a subject responds): :mod:`kit.subjects.ablation`;
- :class:`Answers` (scored responses: accuracy, Wilson interval, chance, parse failures,
  truncations): :mod:`kit.subjects.answers`;
- items, capability groups and chance levels of tasks (those of a registered task family, the
  world's) and benchmarks: :mod:`kit.subjects.items`;
- option log-likelihood scoring of multiple choice: :mod:`kit.subjects.loglik`.
"""

from kit.subjects.ablation import ablation_hooks
from kit.subjects.answers import SCORINGS, Answers, chance_of
from kit.subjects.hf import HFSubject
from kit.subjects.items import (
    BENCHMARK_GROUPS,
    benchmark_of,
    is_world_task,
    task_chance,
    task_family,
    task_group,
    task_items,
)
from kit.subjects.subject import (
    Subject,
    SubjectForm,
    is_world_name,
    load_model_any,
    load_subject,
    register_subject,
    subject_of,
)

__all__ = [
    "Answers",
    "BENCHMARK_GROUPS",
    "HFSubject",
    "benchmark_of",
    "SCORINGS",
    "Subject",
    "SubjectForm",
    "ablation_hooks",
    "chance_of",
    "is_world_name",
    "is_world_task",
    "load_model_any",
    "load_subject",
    "register_subject",
    "subject_of",
    "task_chance",
    "task_family",
    "task_group",
    "task_items",
]
