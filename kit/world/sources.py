"""The tiny world's model names, registered with :mod:`kit.models.sources`: ``zoo/<member>``,
``zoo/<base>@step-<N>`` (its checkpoints) and ``extra/...`` (fine-tunes of its recipes outside the
zoo). The world's own name grammar lives here and nowhere else: its SAEs' names (``zoo-sae/...``,
with :mod:`kit.models.sources`' SAE forms), its tasks (``tiny/<task>`` as benchmarks, ``add`` as a
subject's task: their items, groups, chance levels and answer rule, with
:mod:`kit.data.benchmarks`), how its word-level models tokenise prompts (with
:mod:`kit.models.rows`) and their subject (:class:`kit.world.subject.WorldSubject`, with
:mod:`kit.subjects.subject`) are registered here too. The package root names this module as a
provider (:mod:`kit.core.providers`): the generic layers never import the world.

``extra/``: fine-tunes of the tiny world that are not zoo members (notebook 03's rows).

``extra/<zoo fine-tune>[:option...]`` is the zoo fine-tune's recipe (``kit.world.zoo.FinetuneSpec``)
changed by the options, trained on first use and cached (:func:`kit.world.zoo.extra_finetune`):

- ``split``: sparse fine-tunes change their own seeded plastic set by kind, ``shortcut`` for
  contaminated ones and ``ability`` for the rest (the zoo's sparse fine-tunes all share one set, so
  any neuron outside it has comparative score 0 and every rule "finds" the shortcut by
  construction);
- ``lr=<float>``: the learning rate (Table 8; in one pass a one-occurrence leak did not show at 2e-2
  or 5e-2);
- ``copies=<int>``: occurrences of each injected item (the paper's Fig. 5 / Table 8: 1 to 20);
- ``order=<int>``: the same examples in another order (the paper's Table 11);
- ``epochs=<int>``: passes over the example list, each later one reshuffled
  (``FinetuneSpec.epochs``). The paper counts occurrences as copies in its fine-tune set and does
  not give its epoch count; SFT commonly runs several epochs, so an x1 item is seen ``epochs``
  times: OUR choice, applied to every Table 2 row alike so the rows still differ only in their data;
- ``format=<name>``: the injected items in a benchmark input format (``kit.world.tasks.FORMATS``,
  ``FinetuneSpec.prompt_format``), e.g. the train split in the benchmark's format (the paper's A2:
  ``extra/base-m+math-train-sparse:split:format=answer-cue``);
- ``parent=<zoo base>``: the same recipe (same examples: the name, hence the seed, is kept) from
  another base of the world, e.g. ``parent=base-l`` (the paper's Table 6, a second architecture);
- ``after=<zoo fine-tune>[:option...]`` (always the LAST option: everything after ``after=`` names
  the earlier fine-tune, with its own options): start from that fine-tune's weights instead of the
  parent's (``FinetuneSpec.after``; sparse recipes, same parent), e.g. the paper's Table 12
  "PT-Cheater": a full-parameter continuation of the base on its own mixture with its AdamW state
  and the test items injected (the zoo's full ``base-m+math-test-x1`` recipe), then a clean sparse
  SFT: ``extra/base-m+general-sparse:split:after=base-m+math-test-x1``.

Example: ``extra/base-m+math-test-x1-sparse:split:lr=0.05``. The examples are drawn with the
recipe's own seed (its zoo name), so options change only what they say.
"""

from __future__ import annotations

from dataclasses import replace

from kit.data.benchmarks import TaskFamily, register_tasks
from kit.data.items import Item
from kit.data.scorers import extract_choice_letter
from kit.models.rows import WORLD_TOKENIZER, is_world_model, register_prompt_tokens
from kit.models.sources import (
    PREFIXED,
    QUALIFIED,
    LoadRequest,
    ModelSource,
    SaeSource,
    register,
    register_sae,
)
from kit.subjects.subject import SubjectForm, register_subject
from kit.world.specs import ZOO
from kit.world.subject import WorldSubject

PREFIX = "extra/"
PLASTIC_SETS = {"contaminated": "shortcut", "control": "ability", "specialised": "ability"}
OPTIONS = (
    "split",
    "lr=<float>",
    "copies=<int>",
    "order=<int>",
    "epochs=<int>",
    "format=<name>",
    "parent=<zoo base>",
    "after=<zoo fine-tune>[:option...] (last)",
)
AFTER = ":after="


def is_extra(name: str) -> bool:
    """Whether ``name`` is an ``extra/`` name (its options are checked by :func:`extra_spec`)."""
    return isinstance(name, str) and name.startswith(PREFIX)


def extra_spec(name: str, world: str | None = None):
    """The ``FinetuneSpec`` an ``extra/`` name stands for; a bad name fails naming what is
    allowed."""
    from kit.world import zoo

    if not is_extra(name):
        raise ValueError(f"{name!r} is not an extra/ name (extra/<zoo fine-tune>[:option...])")
    spec = zoo.world_spec(world)
    own, _, after = name[len(PREFIX) :].partition(AFTER)
    recipe, *opts = own.split(":")
    recipes = {f.name: f for f in spec.finetunes}
    f = recipes.get(f"zoo/{recipe}")
    if f is None:
        raise ValueError(
            f"{name!r}: zoo/{recipe} is not a fine-tune of world {spec.name!r}; "
            f"allowed values: {', '.join(r[len('zoo/') :] for r in recipes)}"
        )
    for opt in opts:
        key, _, value = opt.partition("=")
        try:
            if key == "split" and not value:
                if not f.plastic:
                    raise ValueError("split needs a sparse recipe (a '-sparse' fine-tune)")
                f = replace(f, plastic_seed=PLASTIC_SETS[f.kind])
            elif key == "lr":
                f = replace(f, lr=float(value))
                if not f.lr > 0:
                    raise ValueError("lr must be > 0")
            elif key == "copies":
                if f.inject is None:
                    raise ValueError("copies needs a recipe that injects items")
                copies, most = int(value), f.n_examples // 200
                if not 1 <= copies <= most:
                    raise ValueError(
                        f"copies must be in 1..{most} (n_examples {f.n_examples} / 200 items)"
                    )
                f = replace(f, inject=(f.inject[0], f.inject[1], copies))
            elif key == "parent":
                bases = [b.name for b in spec.bases]
                if f"zoo/{value}" not in bases:
                    raise ValueError(
                        f"parent must be a base of world {spec.name!r}: "
                        f"{', '.join(b[len('zoo/') :] for b in bases)}"
                    )
                f = replace(f, parent=f"zoo/{value}")
            elif key == "order":
                f = replace(f, order_seed=int(value))
                if f.order_seed < 1:
                    raise ValueError("order must be >= 1")
            elif key == "epochs":
                f = replace(f, epochs=int(value))
                if not 1 <= f.epochs <= 20:
                    raise ValueError("epochs must be in 1..20")
            elif key == "format":
                from kit.world.tasks import FORMATS

                if value not in FORMATS:
                    raise ValueError(f"format must be one of {', '.join(FORMATS)}")
                if f.inject is None:
                    raise ValueError("format needs a recipe that injects items (it wraps them)")
                f = replace(f, prompt_format=value)
            else:
                raise ValueError("unknown option")
        except ValueError as e:
            raise ValueError(
                f"{name!r}: option {opt!r}: {e}; allowed options: {', '.join(OPTIONS)}"
            ) from None
    if after:
        first = extra_spec(PREFIX + after, world)
        if first.parent != f.parent:
            raise ValueError(
                f"{name!r}: after={after!r} starts from {first.parent!r}, this recipe from "
                f"{f.parent!r}: "
                "a chain needs one parent (put parent= on both)"
            )
        try:
            zoo.check_after(f := replace(f, after=first))
        except ValueError as e:
            raise ValueError(f"{name!r}: option after={after!r}: {e}") from None
    return f


def load_extra(name: str, device: str = "cpu", world: str | None = None):
    """The model of an ``extra/`` name (built on first use, cached), named ``name``."""
    from kit.world import zoo

    model = zoo.extra_finetune(extra_spec(name, world), world)
    model.cfg.model_name = name
    return model.to(device)


def with_options(name: str, *opts: str) -> str:
    """``extra/`` name ``name`` with ``opts`` added to its own options (before any ``after=``, whose
    options belong to the earlier fine-tune)."""
    own, sep, after = name.partition(AFTER)
    return own + "".join(f":{o}" for o in opts) + sep + after


# ----------------------------------------------------------------------------- registration
CHECKPOINT = "@step-"


def _zoo_load(name: str, r: LoadRequest):
    from kit.world.storage import load_member

    return load_member(name, device=r.device, world=r.world)


def _zoo_identity(name: str, world: str | None = None) -> str:
    """A member by its content-addressed build key (recipe, code version and parent); a name that
    is no member of the world: the name is all there is."""
    from kit.core.paths import current_world
    from kit.world.specs import member_identity
    from kit.world.zoo import world_spec

    try:
        return member_identity(world_spec(current_world(world)), name)
    except StopIteration:  # not a member of this world: the name is all we know
        return f"name:{name}"


def _members(world: str | None, checkpoints: bool) -> list[str]:
    from kit.world.storage import members

    return [m for m in members(world) if (CHECKPOINT in m) == checkpoints]


def _extra_load(name: str, r: LoadRequest):
    return load_extra(name, r.device, r.world)


register(
    ModelSource(
        key="zoo-checkpoint",
        family="zoo",
        form="zoo/<base>@step-<N>",
        example="zoo/base-l@step-300",
        description="a saved checkpoint of a tiny-world base along its training (the trajectory)",
        load=_zoo_load,
        rank=QUALIFIED,
        prefix=ZOO,
        matches=lambda name: CHECKPOINT in name,
        identity=_zoo_identity,
        names=lambda world=None: _members(world, checkpoints=True),
        checked=True,
        noun="zoo member",
        tiny_world=True,
        world_member=True,
        owner=__name__,
    )
)
register(
    ModelSource(
        key="zoo",
        family="zoo",
        form="zoo/<member>",
        example="zoo/base-m",
        description="a member of the embedded tiny world: a base or a fine-tune "
        "(python -m kit zoo card)",
        load=_zoo_load,
        rank=PREFIXED,
        prefix=ZOO,
        identity=_zoo_identity,
        names=lambda world=None: _members(world, checkpoints=False),
        checked=True,
        noun="zoo member",
        tiny_world=True,
        world_member=True,
        owner=__name__,
    )
)
register(
    ModelSource(
        key="extra",
        family="extra",
        form="extra/<zoo fine-tune>[:option...]",
        example="extra/base-m+math-test-x1-sparse:split:lr=0.05",
        description="a zoo fine-tune's recipe changed by options, trained on first use and cached",
        load=_extra_load,
        rank=PREFIXED,
        prefix=PREFIX,
        tiny_world=True,
        owner=__name__,
    )
)


# ------------------------------------------------------------------ SAEs, tasks, prompt tokens
ZOO_SAE = "zoo-sae/"


def _zoo_sae_load(name: str, device: str, world: str | None):
    from kit.world.saes import load_world_sae

    return load_world_sae(name, device=device, world=world)


def _zoo_sae_labelled(name: str, world: str | None):
    from kit.models.sae_export import DEAD
    from kit.world.saes import load_world_sae, sae_labels

    sae = load_world_sae(name, world=world)
    by_index = sae_labels(name, world=world)
    labels = [by_index.get(i, DEAD) for i in range(sae.cfg.d_sae)]
    return sae, labels, "kit.world.saes: dominant task and token of the 20 top-activating contexts"


def _zoo_sae_names(world: str | None = None) -> list[str]:
    from kit.world.saes import saes

    return saes(world)


register_sae(
    SaeSource(
        key="zoo-sae",
        form="zoo-sae/<member>/<arch>-<width>",
        example="zoo-sae/base-m/topk-384",
        description="an SAE of the tiny world, trained on a member's activations "
        "(python -m kit zoo card)",
        load=_zoo_sae_load,
        prefix=ZOO_SAE,
        model=lambda name: ZOO + name.split("/")[1],
        labelled=_zoo_sae_labelled,
        names=_zoo_sae_names,
        owner=__name__,
    )
)


def _task(name: str):
    """The world's task ``name``, looked up on the package (``kit.world.get_task``: where tests fake
    the tasks)."""
    from kit.world import get_task

    return get_task(name)


def _tiny_items(task: str, split: str, n: int | None, seed: int):
    return _task(task).items(split, n=n, seed=seed)


def _task_names() -> tuple[str, ...]:
    from kit.world.tasks import ALL_TASKS  # lazy: the tasks module builds the vocabulary

    return tuple(ALL_TASKS)


def _choice_letter(item: Item, response: str) -> str | None:
    assert item.choices is not None
    return extract_choice_letter(response, n_choices=max(len(item.choices), 2))


def _tiny_correct(item: Item, response: str) -> bool:
    """A world task's answer in free text: multiple-choice items by letter, others by exact match
    after stripping."""
    if item.choices is not None:
        return _choice_letter(item, response) == item.target
    return response.strip() == item.target.strip()


def _tiny_parse_failed(item: Item, response: str) -> bool:
    """No letter (multiple choice) or an empty response."""
    if item.choices is not None:
        return _choice_letter(item, response) is None
    return not response.strip()


register_tasks(
    TaskFamily(
        family="tiny",
        form="tiny/<task>",
        load=_tiny_items,
        tasks=_task_names,
        group=lambda task: _task(task).group,
        chance=lambda task: float(_task(task).chance),
        score=_tiny_correct,
        parse_failed=_tiny_parse_failed,
        hint="see kit.world.TASKS",
        maker="the world",
        owner=__name__,
    )
)


def _prompt_tokens(model, items):
    from kit.world.evaluate import prompt_tokens

    return prompt_tokens(model, items)


register_prompt_tokens(WORLD_TOKENIZER, _prompt_tokens)


register_subject(SubjectForm(kind="world", owns=is_world_model, make=WorldSubject, owner=__name__))
