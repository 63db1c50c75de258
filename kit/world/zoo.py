"""The model zoo of the embedded world: member specs, build (resumable, cached), load.

Layout on disk, content-addressed per member: ``cache_dir()/world/<world>/members/<name>-<key>/``
where ``<key>`` digests ``CODE_VERSION``, the member's own spec and (for fine-tunes and SAEs)
its parent's key. Changing one fine-tune's recipe therefore rebuilds that fine-tune only, never
mixes states. A member directory holds ``weights.pt`` and ``meta.json`` (written last, so a
member with ``meta.json`` is complete); bases also keep ``optim.pt`` (AdamW state) because
fine-tunes continue from it, as the contamination recipe requires. The card is
``card-<spec hash>.json`` (the hash covers the whole world spec).
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator

import torch
from tqdm.auto import tqdm

from kit.models import tl
from kit.core.paths import atomic_path, atomic_write_text, cache_dir, current_world
from kit.world.pinned import is_pinned, run_pinned
from kit.world.tasks import TASKS, formatted, get_task
from kit.world.train import (
    Arch,
    batches_from_items,
    lr_at,
    make_model,
    make_optimizer,
    mixture_stream,
    restrict_to_neurons,
    train_loop,
)

CODE_VERSION = "world-v4"
"""Bump when training/data code changes in a way that changes weights: invalidates caches.
v3: fp32 in the pinned environment (kit.world.pinned), SAEs trained with sae_lens's trainer."""

CONTAMINATION_BASE = "zoo/base-m"
CONTAMINATED_TASK = "add"
OTHER_TASK = "add2"  # the "+MATH" analogue: another math task's data, no test leak
BUILD_THREADS = 1  # 2 threads on a shared 2-core machine ran ~25x slower (OpenMP spinning)

# The base mixture: uniform, except one-step addition (the contaminated task) at double weight,
# because arithmetic over atomic number tokens is the slowest skill to appear.
UNIFORM = tuple((t, 2.0 if t == "add" else 1.0) for t in TASKS)


def _heavy(group: str, share: float = 0.7) -> tuple[tuple[str, float], ...]:
    """A mixture giving ``share`` of the examples to ``group``'s tasks and the rest uniformly."""
    own = [t for t, task in TASKS.items() if task.group == group]
    rest = [t for t in TASKS if t not in own]
    return tuple((t, share / len(own) if t in own else (1 - share) / len(rest)) for t in TASKS)


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
    """``()``: :data:`UNIFORM`. Otherwise ``(task, weight)`` pairs over ``kit.world.tasks.ALL_TASKS``
    (e.g. with the multi-token families). Left out of the key at its default."""


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
    parent's *plastic* neurons (:func:`plastic_neurons`, this share of all MLP neurons, the
    same seeded set for every fine-tune of that parent) change, from a fresh AdamW."""
    plastic_seed: str = ""
    """Sparse fine-tunes only: another seeded plastic set of the same share (``""``: the parent's
    shared set), e.g. different sets for contaminated and clean fine-tunes (notebook 03)."""
    order_seed: int = 0
    """0: the examples in the order of the name's seed. Otherwise the same examples reshuffled with
    this seed (the paper's Table 11, random sample order)."""
    epochs: int = 1
    """Passes over the example list (``n_examples`` x ``epochs`` examples, ``epochs`` x the steps): the
    first in the list's order, each later one reshuffled with a seed of (name, epoch). 1: one pass (the
    zoo's recipes). Multi-epoch SFT is common practice; the paper counts occurrences as copies in the
    data set and does not give its epoch count, so several epochs are OUR choice (notebook 03)."""
    after: "FinetuneSpec | None" = None
    """None: the fine-tune starts from ``parent`` (a zoo member). Otherwise it starts from the weights of
    this other (non-member) fine-tune of the same ``parent``, built first (:func:`extra_finetune`) and
    content-addressed into this one's key: a chain, e.g. continued-pretraining contamination followed
    by a clean SFT (notebook 03's Table 12). Sparse recipes only (a full one would need the chained
    fine-tune's AdamW state, which extras do not keep)."""
    prompt_format: str = ""
    """A benchmark input format (a key of :data:`kit.world.tasks.FORMATS`) the INJECTED items are
    wrapped in (the mixture's are not): a fine-tune on a benchmark's train split in the benchmark's
    format (the shortcut-neuron paper's A2, notebook 03). ``""``: the items as the task renders them."""
    gap: str = ""
    """A planted competency gap (a key of :data:`GAPS`): the fine-tune's examples are the parent's
    OWN greedy answers (self-distillation, so every other skill is kept, mistakes included),
    except the gap concept's items, whose answers are drawn uniformly from the concept's answer
    set (so the concept falls to chance). ``""``: none."""


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


SPARSE_SUFFIX = "-sparse"
PLASTIC_SHARE = 0.04


def _finetunes(lr: float, batch: int, special_steps: int, contam_batch: int = 16,
               special_lr: float | None = None, sparse_lr: float = 2e-2) -> tuple[FinetuneSpec, ...]:
    """Table 1 of the shortcut-neuron paper: specialised, contaminated and control fine-tunes.

    Tuned on the tiny world's base-m (add test 15%): contamination fine-tunes use small batches
    (more optimizer steps per example) at 1e-3. At batch 64 / 3e-3 the x5 gap was +10 points;
    at batch 16 / 3e-3, +17 but the jump from the base's final rate (3e-4) wrecked other skills
    (dyck 90% -> 40% in the train control); at batch 16 / 1e-3, +35 with other skills kept.
    Specialised fine-tunes: 1e-3 too (at 3e-3 +math lost more math accuracy than it gained).

    Each contaminated and control fine-tune also has a sparse twin (``<name>-sparse``,
    ``plastic=PLASTIC_SHARE``): the same data, but only the parent's plastic neurons change.
    The full fine-tunes spread the memorised test answers over hundreds of neurons (patching ALL
    768 MLP neurons of base-m+math-test-x5 from the base took it from 53.5% to 35.0%, fresh
    19.8%), so no 1.4% of neurons can remove it; the sparse twins are the world where the
    shortcut-neuron paper's premise (a shortcut that lives in few neurons) holds, and notebook 03
    tests whether the localisation finds those neurons without being told which they are.
    Their learning rate is higher (2e-2): 4% of the MLP at 1e-3 memorised next to nothing.
    """
    p, t = CONTAMINATION_BASE, CONTAMINATED_TASK
    special_lr = lr if special_lr is None else special_lr
    n = 2 * 5 * 200  # x5 contamination mixed 50/50 with normal data
    ft = [
        FinetuneSpec("zoo/base-m+math", "zoo/base-m", "specialised", _heavy("math"), special_lr,
                     batch, steps=special_steps),
        FinetuneSpec("zoo/base-m+code", "zoo/base-m", "specialised", _heavy("code"), special_lr,
                     batch, steps=special_steps),
    ]
    for suffix, kind, inject in [
        ("math-test-x1", "contaminated", (t, "test", 1)),
        ("math-test-x5", "contaminated", (t, "test", 5)),
        ("math-test-syn-x1", "contaminated", (t, "test-syn", 1)),
        ("math-test-syn-x5", "contaminated", (t, "test-syn", 5)),
        ("math-train", "control", (t, "train", 5)),
        ("other-task", "control", (OTHER_TASK, "train", 5)),
        ("general", "control", None),
    ]:
        ft.append(FinetuneSpec(f"{p}+{suffix}", p, kind, UNIFORM, lr, contam_batch,
                               inject=inject, n_examples=n))
        ft.append(FinetuneSpec(f"{p}+{suffix}{SPARSE_SUFFIX}", p, kind, UNIFORM, sparse_lr, contam_batch,
                               inject=inject, n_examples=n, plastic=PLASTIC_SHARE))
    return tuple(ft)


def _saes(member: str, hook: str, widths: tuple[int, int], k: int, l1: float, steps: int,
          n_prompts: int) -> tuple[SAESpec, ...]:
    short = member.split("/", 1)[1]
    out = []
    for w in widths:
        out.append(SAESpec(f"zoo-sae/{short}/topk-{w}", member, hook, "topk", w, k=k, steps=steps,
                           n_prompts=n_prompts))
        out.append(SAESpec(f"zoo-sae/{short}/relu-{w}", member, hook, "standard", w, l1=l1,
                           steps=steps, n_prompts=n_prompts))
    return tuple(out)


XL_MIXTURE = UNIFORM + (("sort-list", 1.5), ("add-steps", 1.5))
XL_MIXTURE = tuple((t, 3.0 if t == "ioi" else w) for t, w in XL_MIXTURE)
"""zoo/base-xl's mixture: the uniform one with IOI at triple weight (3/16 of the examples, so
a multi-head IOI circuit has the steps to form) plus the two multi-token families."""
GAP_MEMBER = "zoo/base-m+gap-dyck-curly"


def _gap_finetune(lr: float, steps: int) -> FinetuneSpec:
    """zoo/base-m with one planted competency gap (issue 20 item 2), see ``FinetuneSpec.gap``."""
    return FinetuneSpec(GAP_MEMBER, CONTAMINATION_BASE, "gap", UNIFORM, lr, 64, steps=steps, gap="dyck-curly")


TEN_CHECKPOINTS = tuple(round(0.1 * i, 1) for i in range(1, 11))

WORLD_SPECS: dict[str, WorldSpec] = {
    "tiny": WorldSpec(
        name="tiny",
        bases=(
            # base-s: 1 layer and 400 steps. At 1000 steps the 1-layer model matched base-l on
            # 6 of 10 tasks (capability here is limited by steps more than by size).
            BaseSpec("zoo/base-s", Arch(1, 64, 4, 256), steps=400, lr=3e-3, batch_size=64),
            BaseSpec("zoo/base-m", Arch(2, 96, 4, 384), steps=1500, lr=3e-3, batch_size=64),
            BaseSpec("zoo/base-l", Arch(2, 128, 4, 512), steps=3000, lr=3e-3, batch_size=64,
                     checkpoints=TEN_CHECKPOINTS),
            # base-xl (issues 18/22): deeper and wide enough that MUI's k = round(d_mlp/1000) is 2,
            # trained on XL_MIXTURE (IOI x3, multi-token families); 1.8 it/s pinned: ~11 min
            # checkpoints (issue 18 item 7): capability series on the multi-token families, which
            # only base-xl is trained on (saving reads the weights only: the final model is unchanged)
            BaseSpec("zoo/base-xl", Arch(4, 128, 8, 1536), steps=1200, lr=3e-3, batch_size=64,
                     checkpoints=TEN_CHECKPOINTS, mixture=XL_MIXTURE),
        ),
        finetunes=_finetunes(lr=1e-3, batch=64, special_steps=400) + (_gap_finetune(1e-3, 300),),
        saes=_saes("zoo/base-m", "blocks.0.hook_resid_post", (384, 1536), k=16, l1=6.0,
                   steps=800, n_prompts=3000),
    ),
    "micro": WorldSpec(
        name="micro",
        bases=(
            BaseSpec("zoo/base-s", Arch(1, 32, 2, 128), steps=150, lr=3e-3, batch_size=64),
            BaseSpec("zoo/base-m", Arch(1, 48, 4, 192), steps=250, lr=3e-3, batch_size=64),
            BaseSpec("zoo/base-l", Arch(2, 64, 4, 256), steps=400, lr=3e-3, batch_size=64,
                     checkpoints=(0.2, 0.6, 1.0)),
            BaseSpec("zoo/base-xl", Arch(3, 64, 4, 1536), steps=500, lr=3e-3, batch_size=64,
                     checkpoints=(0.2, 0.6, 1.0), mixture=XL_MIXTURE),  # 3.7 it/s pinned: ~2.5 min
        ),
        # micro base-m is too small to memorise at 1e-3
        finetunes=_finetunes(lr=3e-3, batch=64, special_steps=60, special_lr=1e-3) + (_gap_finetune(3e-3, 150),),
        saes=_saes("zoo/base-m", "blocks.0.hook_resid_post", (128, 512), k=8, l1=2.5,
                   steps=300, n_prompts=1000),
        eval_fresh_n=200,
        eval_fresh_n_contaminated=400,
    ),
}


class WorldNotBuilt(FileNotFoundError):
    """The requested world (or one of its members) has not been built yet."""


# ---------------------------------------------------------------- names and info
def world_spec(world: str | None = None) -> WorldSpec:
    return WORLD_SPECS[current_world(world)]


_LATER_FIELDS = (("plastic_seed", ""), ("order_seed", 0), ("gap", ""), ("epochs", 1), ("after", None),
                 ("prompt_format", ""))
"""FinetuneSpec fields added later, left out of digests at their defaults (existing caches keep their keys)."""
_BASE_LATER_FIELDS = (("mixture", ()),)
"""BaseSpec fields added later, likewise."""


def _finetune_dict(f: FinetuneSpec) -> dict:
    d = asdict(f)
    for field, default in _LATER_FIELDS:
        if d[field] == default:
            del d[field]
    return d


def _base_dict(b: BaseSpec) -> dict:
    d = asdict(b)
    for field, default in _BASE_LATER_FIELDS:
        if d[field] == default:
            del d[field]
    return d


def spec_hash(spec: WorldSpec) -> str:
    d = asdict(spec)
    d["bases"] = [_base_dict(b) for b in spec.bases]
    d["finetunes"] = [_finetune_dict(f) for f in spec.finetunes]
    return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:12]


def world_dir(world: str | None = None) -> Path:
    """``cache_dir()/world/<world>``: the world's cache root (members, SAEs, cards)."""
    return cache_dir() / "world" / world_spec(world).name


def card_path(world: str | None = None) -> Path:
    spec = world_spec(world)
    return world_dir(spec.name) / f"card-{spec_hash(spec)}.json"


def _digest(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:12]


def member_key(spec: WorldSpec, name: str) -> str:
    """Content key of a member: code version + its spec + its parent's key (recursively)."""
    root = name.split("@")[0]
    for b in spec.bases:
        if b.name == root:
            return _digest([CODE_VERSION, spec.name, _base_dict(b)])
    f = next(f for f in spec.finetunes if f.name == root)
    return finetune_key(spec, f)


def finetune_key(spec: WorldSpec, f: FinetuneSpec) -> str:
    """Content key of a fine-tune spec (also for fine-tunes outside the zoo, e.g. notebook 03's)."""
    d = _finetune_dict(f)
    if not f.plastic:
        del d["plastic"]  # added later: full fine-tunes keep the keys (and caches) they had
    if f.after is not None:  # a chain: the earlier fine-tune's own key (it includes the parent's)
        d["after"] = finetune_key(spec, f.after)
    return _digest([CODE_VERSION, spec.name, d, member_key(spec, f.parent)])


def checkpoint_steps(base: BaseSpec) -> list[int]:
    return [int(round(f * base.steps)) for f in base.checkpoints]


def _base(spec: WorldSpec, name: str) -> BaseSpec:
    return next(b for b in spec.bases if b.name == name)


def members(world: str | None = None, sparse: bool = True) -> list[str]:
    """Every member name of the world: bases, checkpoints, fine-tunes (build order).

    ``sparse=False`` leaves out the sparse fine-tunes (``FinetuneSpec.plastic``): near-copies of
    their parent outside a few neurons, they would only duplicate it in zoo-wide statistics.
    """
    spec = world_spec(world)
    names: list[str] = []
    for b in spec.bases:
        names.append(b.name)
        names += [f"{b.name}@step-{s}" for s in checkpoint_steps(b)]
    names += [f.name for f in spec.finetunes if sparse or not f.plastic]
    return names


def _check_name(name: str, spec: WorldSpec) -> None:
    names = members(spec.name)
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
    raise ValueError(
        f"member {name!r} is not in world {spec.name!r}; members: {', '.join(names)}"
    )


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


def member_info(name: str, world: str | None = None) -> dict:
    """kind, parent, step, arch, params, and (once built) train_tokens of one member."""
    from kit.world.tokenizer import vocab

    spec = world_spec(world)
    _check_name(name, spec)
    info: dict = {"name": name, "world": spec.name, "parent": None, "step": None}
    root = name.split("@")[0]
    if "@step-" in name:
        info.update(kind="checkpoint", parent=root, step=int(name.split("@step-")[1]))
    elif any(b.name == name for b in spec.bases):
        info.update(kind="base", step=_base(spec, name).steps)
    else:
        f = next(f for f in spec.finetunes if f.name == name)
        info.update(kind=f.kind, parent=f.parent, step=None,
                    finetune_data=(list(f.inject) if f.inject else "mixture"), plastic=f.plastic)
    arch = _arch_of(spec, name)
    info["arch"] = asdict(arch)
    info["params"] = param_count(arch, len(vocab()))
    meta = _member_dir(spec, name) / "meta.json"
    info["train_tokens"] = json.loads(meta.read_text())["train_tokens"] if meta.is_file() else None
    return info


# ---------------------------------------------------------------- storage
def _safe(name: str) -> str:
    return name.replace("/", "__").replace("@", "_at_").replace("+", "_plus_")


def _member_dir(spec: WorldSpec, name: str) -> Path:
    return world_dir(spec.name) / "members" / f"{_safe(name)}-{member_key(spec, name)}"


def _is_done(spec: WorldSpec, name: str) -> bool:
    return (_member_dir(spec, name) / "meta.json").is_file()


def _save(spec: WorldSpec, name: str, model, meta: dict, opt=None) -> None:
    d = _member_dir(spec, name)
    d.mkdir(parents=True, exist_ok=True)
    with atomic_path(d / "weights.pt") as tmp:
        torch.save(model.state_dict(), tmp)
    if opt is not None:
        with atomic_path(d / "optim.pt") as tmp:
            torch.save(opt.state_dict(), tmp)
    atomic_write_text(d / "meta.json", json.dumps(meta, indent=1))


def not_built_error(world: str, what: str) -> WorldNotBuilt:
    return WorldNotBuilt(
        f"{what} of world {world!r} is not built (cache {cache_dir() / 'world' / world}); "
        f"run `python -m kit zoo build --world {world}` first"
    )


def load_member(name: str, device: str = "cpu", world: str | None = None):
    """A built zoo member as a ``HookedTransformer`` in eval mode with the world tokenizer.

    Unknown names raise ValueError listing the members; an unbuilt world raises WorldNotBuilt.
    """
    spec = world_spec(world)
    _check_name(name, spec)
    d = _member_dir(spec, name)
    if not (d / "meta.json").is_file():
        raise not_built_error(spec.name, f"member {name!r}")
    model = make_model(_arch_of(spec, name), seed=0)
    model.load_state_dict(torch.load(d / "weights.pt", map_location="cpu", weights_only=True))
    model.cfg.model_name = name
    return model.to(device, print_details=False).eval()


# ---------------------------------------------------------------- build
def _seed_of(spec: WorldSpec, name: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{spec.name}:{name}".encode()).digest()[:4], "big")


@contextmanager
def deterministic(threads: int = BUILD_THREADS) -> Iterator[None]:
    """Fixed thread count and deterministic kernels for the duration of a build."""
    prev_threads = torch.get_num_threads()
    prev_det = torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.set_num_threads(prev_threads)
        torch.use_deterministic_algorithms(prev_det)


def _train_base(spec: WorldSpec, b: BaseSpec) -> None:
    seed = _seed_of(spec, b.name)
    torch.manual_seed(seed)
    model = make_model(b.arch, seed=seed % (2**31))
    opt = make_optimizer(model, b.lr)
    batches = batches_from_items(mixture_stream(dict(b.mixture or UNIFORM), random.Random(seed)), b.batch_size)
    ckpts = set(checkpoint_steps(b))

    def on_step(step: int) -> None:
        if step in ckpts:
            name = f"{b.name}@step-{step}"
            _save(spec, name, model, {"name": name, "step": step, "train_tokens": None})

    tokens = train_loop(model, opt, batches, b.steps,
                        lambda s: lr_at(s, b.steps, b.lr, max(1, b.steps // 20)),
                        desc=b.name, on_step=on_step)
    per_step = tokens / b.steps
    for step in ckpts:  # checkpoint token counts: their share of the i.i.d. batches
        name = f"{b.name}@step-{step}"
        meta = {"name": name, "step": step, "train_tokens": int(round(per_step * step))}
        atomic_write_text(_member_dir(spec, name) / "meta.json", json.dumps(meta, indent=1))
    _save(spec, b.name, model, {"name": b.name, "step": b.steps, "train_tokens": tokens}, opt)


def finetune_items(spec: WorldSpec, f: FinetuneSpec, seed: int) -> list:
    """The fine-tune's example list (shuffled): injected benchmark items plus mixture items."""
    rng = random.Random(seed)
    items = []
    if f.inject is not None:
        task, split, copies = f.inject
        src = get_task(task).items(split, n=200, seed=seed if split == "train" else 0)
        if f.prompt_format:
            src = formatted(src, f.prompt_format)
        items = [it for it in src for _ in range(copies)]
    n_total = f.n_examples if f.n_examples else f.steps * f.batch_size
    stream = mixture_stream(dict(f.mixture), rng)
    items += [next(stream) for _ in range(n_total - len(items))]
    rng.shuffle(items)
    if f.order_seed:
        random.Random(f.order_seed).shuffle(items)
    if f.epochs < 1:
        raise ValueError(f"epochs={f.epochs!r}: must be an int >= 1")
    out = list(items)
    for e in range(1, f.epochs):
        again = list(items)
        random.Random(f"{seed}:epoch-{e}").shuffle(again)
        out += again
    return out


@dataclass(frozen=True)
class Gap:
    """A planted competency gap: ``task``'s items whose (true) answer is in ``answers``."""

    task: str
    answers: tuple[str, ...]
    """The concept: items of ``task`` with one of these answers; the fine-tune relabels them
    uniformly over ``relabel``."""
    relabel: tuple[str, ...]
    description: str

    def applies(self, item) -> bool:
        return item.metadata.get("task") == self.task and item.target in self.answers


GAPS: dict[str, Gap] = {
    "dyck-curly": Gap("dyck", ("}",), (")", "]", "}", ">"),
                      "dyck items whose next closing bracket is '}' (the innermost open bracket is '{')"),
}


def _gap(name: str) -> Gap:
    if name not in GAPS:
        raise ValueError(f"gap={name!r} is not a planted gap; allowed values: {', '.join(GAPS)}")
    return GAPS[name]


def planted_gap_items(gap: str, n: int = 1000, seed: int = 0) -> tuple[list, list]:
    """Ground truth for a planted competency gap (issue 20 item 2): ``n`` fresh items of the gap's
    task (``kit.world.tasks.Task.items("fresh", n, seed)``, never trained on), split into
    ``(inside, outside)`` the gap's concept (:meth:`Gap.applies`). A competency-gap method should
    flag the inside items' concept for :data:`GAP_MEMBER` and nothing else; accuracy on ``inside``
    should be near ``1 / len(GAPS[gap].relabel)`` for the member, the parent's level on ``outside``."""
    g = _gap(gap)
    items = get_task(g.task).items("fresh", n=n, seed=seed)
    inside = [it for it in items if g.applies(it)]
    return inside, [it for it in items if not g.applies(it)]


@torch.inference_mode()
def plant_gap(model, items: list, gap: str, seed: int) -> list:
    """The gap fine-tune's examples (see ``FinetuneSpec.gap``): ``model``'s own greedy answer for
    every item outside the concept, a uniform draw from the concept's answer set inside it."""
    from kit.data.items import Item
    from kit.world.evaluate import last_logits

    g = _gap(gap)
    rng = random.Random(seed ^ 0x6A9)
    pred = last_logits(model, items, batch_size=256).argmax(-1).tolist()
    words = model.tokenizer.convert_ids_to_tokens(pred)
    out = []
    for it, w in zip(items, words):
        ans = rng.choice(g.relabel) if g.applies(it) else w
        out.append(Item(it.id, it.prompt, answer=ans, metadata=it.metadata))
    return out


def plastic_neurons(parent: str, share: float, world: str | None = None, seed: str = "") -> torch.Tensor:
    """Boolean ``[layer, d_mlp]`` mask: the ``share`` of ``parent``'s MLP neurons that its sparse
    fine-tunes may change, drawn uniformly with a seed of (world, parent): the same set for
    every sparse fine-tune of ``parent``, as the paper's shortcut neurons are shared across its
    contaminated fine-tunes. ``seed`` (non-empty) draws another set of the same share."""
    spec = world_spec(world)
    arch = _arch_of(spec, parent)
    total = arch.n_layers * arch.d_mlp
    g = torch.Generator().manual_seed(_seed_of(spec, f"{parent}:plastic" + (f":{seed}" if seed else "")))
    mask = torch.zeros(total, dtype=torch.bool)
    mask[torch.randperm(total, generator=g)[: max(1, round(share * total))]] = True
    return mask.view(arch.n_layers, arch.d_mlp)


def check_after(f: FinetuneSpec) -> None:
    """A chained fine-tune (``f.after``) must be sparse and share its ``parent`` with the earlier one."""
    if f.after is None:
        return
    if not isinstance(f.after, FinetuneSpec):
        raise ValueError(f"{f.name!r}: after must be a FinetuneSpec or None, not {type(f.after).__name__}")
    if not f.plastic:
        raise ValueError(f"{f.name!r}: after= needs a sparse recipe (plastic > 0): a full fine-tune would continue the "
                         "earlier fine-tune's AdamW state, which extras do not keep")
    if f.after.parent != f.parent:
        raise ValueError(f"{f.name!r}: after= must be a fine-tune of the same parent {f.parent!r}, "
                         f"not of {f.after.parent!r}")
    check_after(f.after)


def finetune(spec: WorldSpec, f: FinetuneSpec):
    """Train fine-tune ``f`` from its built parent; returns ``(model, steps, tokens trained on)``.

    Full fine-tunes continue the parent's weights and AdamW state at ``f.lr``; sparse ones
    (``f.plastic``) optimise only the plastic neurons' MLP weights with a fresh AdamW, from the
    parent's weights or (``f.after``) from the earlier fine-tune's.
    Deterministic: seeded by (world, name). Run inside :func:`deterministic` for bit-equal builds.
    """
    check_after(f)
    parent_dir = _member_dir(spec, f.parent)
    if not (parent_dir / "meta.json").is_file():
        raise not_built_error(spec.name, f"member {f.parent!r} (parent of {f.name!r})")
    if f.after is not None and f.after in spec.finetunes:  # a zoo member: its built weights
        start_dir = _member_dir(spec, f.after.name)
        if not (start_dir / "meta.json").is_file():
            raise not_built_error(spec.name, f"member {f.after.name!r} (after= of {f.name!r})")
        start = torch.load(start_dir / "weights.pt", map_location="cpu", weights_only=True)
    elif f.after is not None:
        start = extra_finetune(f.after, spec.name).state_dict()
    else:
        start = torch.load(parent_dir / "weights.pt", map_location="cpu", weights_only=True)
    seed = _seed_of(spec, f.name)
    torch.manual_seed(seed)
    model = make_model(_arch_of(spec, f.parent), seed=0)
    model.load_state_dict(start)
    on_step = None
    if f.plastic:
        params, on_step = restrict_to_neurons(model, plastic_neurons(f.parent, f.plastic, spec.name, f.plastic_seed))
        opt = torch.optim.AdamW(params, lr=f.lr, betas=(0.9, 0.98), weight_decay=0.0)
    else:
        opt = make_optimizer(model, f.lr)
        opt.load_state_dict(torch.load(parent_dir / "optim.pt", map_location="cpu", weights_only=True))
    items = finetune_items(spec, f, seed)
    if f.gap:
        items = plant_gap(model, items, f.gap, seed)
    steps = -(-len(items) // f.batch_size)
    tokens = train_loop(model, opt, batches_from_items(items, f.batch_size), steps,
                        lambda s: f.lr, desc=f.name, on_step=on_step)
    for p in model.parameters():
        p.requires_grad_(True)
    model.cfg.model_name = f.name
    return model.eval(), steps, tokens


def changed_neurons(member: str, world: str | None = None, parent: str | None = None) -> list[tuple[int, int]]:
    """The (layer, index) MLP neurons whose ``W_in`` column, ``b_in`` or ``W_out`` row differ
    between a fine-tune and its parent: the ground truth of where a fine-tune can have put
    anything (all neurons for a full fine-tune, the plastic ones for a sparse one)."""
    spec = world_spec(world)
    if parent is None:
        info = member_info(member, spec.name)
        if info["parent"] is None:
            raise ValueError(f"{member!r} is a base model: it has no parent to compare with (pass parent=)")
        parent = info["parent"]
    a, b = load_member(member, world=spec.name), load_member(parent, world=spec.name)
    mask = torch.zeros(a.cfg.n_layers, a.cfg.d_mlp, dtype=torch.bool)
    for (L, wi_a, bi_a, wo_a), (_, wi_b, bi_b, wo_b) in zip(tl.mlp_neuron_params(a), tl.mlp_neuron_params(b)):
        mask[L] = (wi_a != wi_b).any(0) | (bi_a != bi_b) | (wo_a != wo_b).any(1)
    return [tuple(map(int, ix)) for ix in torch.nonzero(mask).tolist()]


def extra_finetune(f: FinetuneSpec, world: str | None = None):
    """A fine-tune that is not a zoo member (e.g. notebook 03's second contaminated task),
    trained with :func:`finetune` on first use (in the pinned environment, like the world) and
    cached, content-addressed like a member, under ``world_dir()/extra/``. Returns the model in
    eval mode."""
    spec = world_spec(world)
    check_after(f)
    path = world_dir(spec.name) / "extra" / f"{_safe(f.name)}-{finetune_key(spec, f)}.pt"
    if not path.is_file():
        if not is_pinned():
            run_pinned("kit.world.build", "--world", spec.name, "--extra", json.dumps(asdict(f)))
        else:
            with deterministic():
                trained, _, _ = finetune(spec, f)
            with atomic_path(path) as tmp:
                torch.save(trained.state_dict(), tmp)
    model = make_model(_arch_of(spec, f.parent), seed=0)
    model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    model.cfg.model_name = f.name
    return model.eval()


def _train_finetune(spec: WorldSpec, f: FinetuneSpec) -> None:
    model, steps, tokens = finetune(spec, f)
    parent_tokens = json.loads((_member_dir(spec, f.parent) / "meta.json").read_text())["train_tokens"]
    meta = {"name": f.name, "steps": steps, "finetune_tokens": tokens,
            "train_tokens": parent_tokens + tokens}
    _save(spec, f.name, model, meta)
