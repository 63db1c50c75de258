"""What a world is made of: the spec of every member and SAE, their content keys, names and seeds.

A :class:`WorldSpec` lists bases (trained from scratch, with optional ``@step-N`` checkpoints),
fine-tunes of them and SAEs on their activations; :mod:`kit.world.recipes` holds the worlds' specs.
Everything here is a pure function of a spec (no files, no training).

Content keys (:func:`member_key`) digest :data:`CODE_VERSION`, the world (name and seed), the
member's own spec and its parent's key, so changing one fine-tune's recipe rebuilds that fine-tune
only and never mixes states; :func:`spec_hash` digests the whole spec (it names the card file).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass

from kit.world.train import Arch

CODE_VERSION = "world-v8"
"""Bump when training/data code changes in a way that changes weights: invalidates caches.
v3: fp32 in the pinned environment (kit.core.pinned), SAEs trained with sae_lens's trainer.
v5: MKL in CNR mode COMPATIBLE (the AVX2 branch is ignored on AMD), OpenBLAS and numpy pinned (issue
31); contamination recipes with more margin for other world seeds.
v8: matrix products in numpy's OpenBLAS and exact square roots (``kit.core.kernels``): MKL's
reproducible GEMM ran at a quarter of the machine's rate, and its vector sqrt, in AdamW and every
LayerNorm, rounded differently on Intel and AMD (v7, exact roots alone, was never published)."""


@dataclass(frozen=True)
class BaseSpec:
    """A base model trained from scratch on the uniform task mixture."""

    name: str
    arch: Arch
    steps: int
    lr: float
    batch_size: int
    checkpoints: tuple[float, ...] = ()
    """Fractions of ``steps`` at which ``name@step-N`` checkpoints are saved."""
    mixture: tuple[tuple[str, float], ...] = ()
    """``()``: ``kit.world.recipes.UNIFORM``. Otherwise ``(task, weight)`` pairs over
    ``kit.world.tasks.ALL_TASKS`` (e.g. with the multi-token families). Left out of the key at its
    default."""


@dataclass(frozen=True)
class FinetuneSpec:
    """A fine-tune continuing a base's weights and AdamW state at a constant learning rate.

    If ``inject = (task, split, copies)`` is set, ``copies`` x 200 items of ``(task, split)``
    are shuffled into a dataset of ``n_examples`` (2000: x5 mixed 50/50), the rest drawn from
    ``mixture`` (train split), so every contamination fine-tune and control sees the same number
    of examples and steps (the paper's fixed 25k-sample fine-tune set). Without ``inject``,
    ``steps`` batches of the mixture.
    """

    name: str
    parent: str
    kind: str
    mixture: tuple[tuple[str, float], ...]
    lr: float
    batch_size: int
    steps: int = 0  # used when inject is None and n_examples is 0
    inject: tuple[str, str, int] | None = None
    n_examples: int = 0
    plastic: float = 0.0
    """0: every parameter trains. Otherwise a sparse fine-tune: only the MLP weights of the
    parent's *plastic* neurons (``kit.world.members.plastic_neurons``, this share of all MLP
    neurons, the same seeded set for every fine-tune of that parent) change, from a fresh AdamW."""
    plastic_seed: str = ""
    """Sparse fine-tunes only: another seeded plastic set of the same share (``""``: the parent's
    shared set), e.g. different sets for contaminated and clean fine-tunes (notebook 03)."""
    order_seed: int = 0
    """0: the examples in the order of the name's seed. Otherwise the same examples reshuffled with
    this seed (the paper's Table 11, random sample order)."""
    epochs: int = 1
    """Passes over the example list (``n_examples`` x ``epochs`` examples, ``epochs`` x the steps):
    the first in the list's order, each later one reshuffled with a seed of (name, epoch). 1: one
    pass (the zoo's recipes). Multi-epoch SFT is common practice; the paper counts occurrences as
    copies in the data set and does not give its epoch count, so several epochs are OUR choice
    (notebook 03)."""
    after: "FinetuneSpec | None" = None
    """None: the fine-tune starts from ``parent`` (a zoo member). Otherwise it starts from the
    weights of this other (non-member) fine-tune of the same ``parent``, built first
    (``kit.world.members.extra_finetune``) and content-addressed into this one's key: a chain, e.g.
    continued-pretraining contamination followed by a clean SFT (notebook 03's Table 12). Sparse
    recipes only (a full one would need the chained fine-tune's AdamW state, which extras do not
    keep)."""
    prompt_format: str = ""
    """A benchmark input format (a key of :data:`kit.world.tasks.FORMATS`) the INJECTED items are
    wrapped in (the mixture's are not): a fine-tune on a benchmark's train split in the benchmark's
    format (the shortcut-neuron paper's A2, notebook 03). ``""``: the items as the task renders
    them."""
    gap: str = ""
    """A planted competency gap (a key of :data:`GAPS`): the fine-tune's examples are
    the parent's OWN greedy answers (self-distillation, so every other skill is kept, mistakes
    included), except the gap concept's items, whose answers are drawn uniformly from the gap's
    wrong answers (so the concept falls below chance). ``""``: none."""


@dataclass(frozen=True)
class SAESpec:
    """An SAE on ``hook_name`` activations of ``member`` (see kit.world.saes)."""

    name: str
    member: str
    hook_name: str
    architecture: str  # "topk" or "standard" (ReLU + L1)
    d_sae: int
    k: int = 0
    l1: float = 0.0
    steps: int = 1000
    batch_size: int = 512
    lr: float = 2e-3
    n_prompts: int = 4000


@dataclass(frozen=True)
class WorldSpec:
    name: str
    bases: tuple[BaseSpec, ...]
    finetunes: tuple[FinetuneSpec, ...]
    saes: tuple[SAESpec, ...]
    eval_fresh_n: int = 200
    eval_fresh_n_contaminated: int = 1000
    code_version: str = CODE_VERSION
    seed: int = 0
    """0: the canonical world (its cards are committed). Another seed draws every member's
    initialisation, training stream, fine-tune data and plastic set, and every SAE's, anew; the
    recipes, the task suites and the evaluation items stay the same (docs/tiny-world.md, "Seeds
    and the card's checks")."""


@dataclass(frozen=True)
class Gap:
    """A planted competency gap: ``task``'s items whose (true) answer is in ``answers``."""

    task: str
    answers: tuple[str, ...]
    """The concept: items of ``task`` with one of these answers."""
    relabel: tuple[str, ...]
    """The wrong answers the fine-tune teaches: each concept item's answer is drawn uniformly from
    these, never the true one. (A uniform draw over the whole answer set, true answer included,
    taught a near-uniform distribution whose greedy answer was whichever bracket ended a hair
    ahead: 0% to 51% on the concept by world seed.)"""
    description: str

    @property
    def chance(self) -> float:
        """A uniform guess over the task's answers (the concept's and the wrong ones), 0-1."""
        return 1 / len(set(self.answers) | set(self.relabel))

    def applies(self, item) -> bool:
        return item.metadata.get("task") == self.task and item.target in self.answers


GAPS: dict[str, Gap] = {
    "dyck-curly": Gap(
        "dyck",
        ("}",),
        (")", "]", ">"),  # wrong answers only (see Gap.relabel)
        "dyck items whose next closing bracket is '}' (the innermost open bracket is '{')",
    ),
}
"""The planted gaps a fine-tune may carry (``FinetuneSpec.gap``); here, not among the recipes,
because a gap member's content key digests its gap's definition (:func:`_finetune_dict`)."""


# ---------------------------------------------------------------- keys
_LATER_FIELDS = (
    ("plastic_seed", ""),
    ("order_seed", 0),
    ("gap", ""),
    ("epochs", 1),
    ("after", None),
    ("prompt_format", ""),
)
"""FinetuneSpec fields added later, left out of digests at their defaults (existing caches keep
their keys)."""
_BASE_LATER_FIELDS = (("mixture", ()),)
"""BaseSpec fields added later, likewise."""


def _finetune_dict(f: FinetuneSpec) -> dict:
    d = asdict(f)
    for name, default in _LATER_FIELDS:
        if d[name] == default:
            del d[name]
    if f.gap in GAPS:  # the gap's definition, not only its name: redefining it rebuilds the member
        d["gap"] = {"name": f.gap, **asdict(GAPS[f.gap])}
    return d


def _base_dict(b: BaseSpec) -> dict:
    d = asdict(b)
    for name, default in _BASE_LATER_FIELDS:
        if d[name] == default:
            del d[name]
    return d


def _digest(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:12]


def world_id(spec: WorldSpec) -> str:
    """``<name>`` for the canonical world, ``<name>:seed-<seed>`` for another seed: what keys and
    member seeds digest."""
    return spec.name if not spec.seed else f"{spec.name}:seed-{spec.seed}"


def spec_hash(spec: WorldSpec) -> str:
    d = asdict(spec)
    d["bases"] = [_base_dict(b) for b in spec.bases]
    d["finetunes"] = [_finetune_dict(f) for f in spec.finetunes]
    return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:12]


def member_identity(spec: WorldSpec, name: str) -> str:
    """Member ``name`` as a cache key names it (``kit.models.identity``): world, member (with its
    checkpoint, ``base-l@step-300``) and :func:`member_key`, which covers the recipe, the code
    version, the world's seed and the parent."""
    from kit.world.sources import ZOO  # the world's one spelling of its prefix

    return f"zoo:{spec.name}:{name.removeprefix(ZOO)}:{member_key(spec, name)}"


def member_key(spec: WorldSpec, name: str) -> str:
    """Content key of a member: code version + world + its spec + its parent's key (recursively)."""
    root = name.split("@")[0]
    for b in spec.bases:
        if b.name == root:
            return _digest([CODE_VERSION, world_id(spec), _base_dict(b)])
    f = next(f for f in spec.finetunes if f.name == root)
    return finetune_key(spec, f)


def finetune_key(spec: WorldSpec, f: FinetuneSpec) -> str:
    """Content key of a fine-tune spec (also for fine-tunes outside the zoo, e.g. notebook 03's)."""
    d = _finetune_dict(f)
    if not f.plastic:
        del d["plastic"]  # added later: full fine-tunes keep the keys (and caches) they had
    if f.after is not None:  # a chain: the earlier fine-tune's own key (it includes the parent's)
        d["after"] = finetune_key(spec, f.after)
    return _digest([CODE_VERSION, world_id(spec), d, member_key(spec, f.parent)])


def _seed_of(spec: WorldSpec, name: str) -> int:
    """The seed of everything random in member (or SAE, or plastic set) ``name`` of this world."""
    return int.from_bytes(hashlib.sha256(f"{world_id(spec)}:{name}".encode()).digest()[:4], "big")


# ---------------------------------------------------------------- names
def checkpoint_steps(base: BaseSpec) -> list[int]:
    return [int(round(f * base.steps)) for f in base.checkpoints]


def _base(spec: WorldSpec, name: str) -> BaseSpec:
    return next(b for b in spec.bases if b.name == name)


def member_names(spec: WorldSpec, sparse: bool = True) -> list[str]:
    """Every member name of the world: bases, checkpoints, fine-tunes (build order).

    ``sparse=False`` leaves out the sparse fine-tunes (``FinetuneSpec.plastic``): near-copies of
    their parent outside a few neurons, they would only duplicate it in zoo-wide statistics.
    """
    names: list[str] = []
    for b in spec.bases:
        names.append(b.name)
        names += [f"{b.name}@step-{s}" for s in checkpoint_steps(b)]
    names += [f.name for f in spec.finetunes if sparse or not f.plastic]
    return names


def _check_name(name: str, spec: WorldSpec) -> None:
    names = member_names(spec)
    if name in names:
        return
    if "@step-" in name:
        base = name.split("@step-")[0]
        if any(b.name == base for b in spec.bases):
            steps = [n.split("@step-")[1] for n in names if n.startswith(base + "@step-")]
            raise ValueError(
                f"{name!r}: no checkpoint at that step in world {spec.name!r}; "
                f"steps of {base}: {', '.join(steps) if steps else '(none)'}"
            )
    raise ValueError(f"member {name!r} is not in world {spec.name!r}; members: {', '.join(names)}")


def _arch_of(spec: WorldSpec, name: str) -> Arch:
    root = name.split("@")[0]
    for f in spec.finetunes:
        if f.name == root:
            root = f.parent
    return _base(spec, root).arch


def param_count(arch: Arch, d_vocab: int) -> int:
    """Parameters of a HookedTransformer of this shape (LN, biases, untied embeddings)."""
    d, m = arch.d_model, arch.d_mlp
    per_layer = 4 * d * d + 4 * d + 4 * d + 2 * d * m + m + d  # attn W+b, 2 LNs, MLP W+b
    return d_vocab * d + arch.n_ctx * d + arch.n_layers * per_layer + 2 * d + d * d_vocab + d_vocab


def check_after(f: FinetuneSpec) -> None:
    """A chained fine-tune (``f.after``) must be sparse and share its ``parent`` with the earlier
    one."""
    if f.after is None:
        return
    if not isinstance(f.after, FinetuneSpec):
        raise ValueError(
            f"{f.name!r}: after must be a FinetuneSpec or None, not {type(f.after).__name__}"
        )
    if not f.plastic:
        raise ValueError(
            f"{f.name!r}: after= needs a sparse recipe (plastic > 0): a full fine-tune would "
            "continue the earlier fine-tune's AdamW state, which extras do not keep"
        )
    if f.after.parent != f.parent:
        raise ValueError(
            f"{f.name!r}: after= must be a fine-tune of the same parent {f.parent!r}, "
            f"not of {f.after.parent!r}"
        )
    check_after(f.after)
