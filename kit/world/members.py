"""Training the world's members: bases (with checkpoints), fine-tunes (full, sparse, gap), extras.

Every function here trains deterministically, seeded by (world, name)
(:func:`kit.world.specs._seed_of`), and is meant to run in the pinned environment
(:mod:`kit.core.pinned`) inside :func:`deterministic`; :mod:`kit.world.build` schedules them.
Outputs go through :mod:`kit.world.storage`: weights first, ``meta.json`` once, last.
"""

from __future__ import annotations

import hashlib
import io
import json
import random
import warnings
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Iterator, cast

import torch

from kit.core.cached import MISSING, DamagedCacheWarning, digest_path, read_bytes_cached
from kit.core.pinned import is_pinned, run_pinned
from kit.models import tl
from kit.world.recipes import SEED_ENV, UNIFORM, world_spec
from kit.world.specs import (
    GAPS,
    BaseSpec,
    FinetuneSpec,
    Gap,
    WorldSpec,
    _arch_of,
    _seed_of,
    check_after,
    checkpoint_steps,
    finetune_key,
)
from kit.world.storage import (
    _member_dir,
    _safe,
    damaged_error,
    load_member,
    load_weights,
    member_info,
    member_status,
    not_built_error,
    read_meta,
    save_member,
    save_weights,
    tensor_digest,
    torch_bytes,
    world_dir,
    write_bytes,
    write_meta,
)
from kit.world.tasks import formatted, get_task
from kit.world.train import (
    batches_from_items,
    lr_at,
    make_model,
    make_optimizer,
    mixture_stream,
    restrict_to_neurons,
    train_loop,
)

BUILD_THREADS = 1  # 2 threads on a shared 2-core machine ran ~25x slower (OpenMP spinning)


@contextmanager
def deterministic(threads: int = BUILD_THREADS) -> Iterator[None]:
    """Fixed thread count and deterministic kernels for the duration of a build."""
    prev_threads = torch.get_num_threads()
    prev_det = torch.are_deterministic_algorithms_enabled()
    det = torch.utils.deterministic  # its flag is a module property, unknown to torch's stubs
    prev_fill = getattr(det, "fill_uninitialized_memory")
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)
    # deterministic mode also fills every torch.empty with NaN (~2% of a training step); no value
    # we compute reads uninitialised memory, so the weights are the same bits without it
    setattr(det, "fill_uninitialized_memory", False)
    try:
        yield
    finally:
        torch.set_num_threads(prev_threads)
        torch.use_deterministic_algorithms(prev_det)
        setattr(det, "fill_uninitialized_memory", prev_fill)


# ---------------------------------------------------------------- bases
def base_outputs(b: BaseSpec) -> list[str]:
    """The members one base's training writes: its checkpoints, then itself."""
    return [f"{b.name}@step-{s}" for s in checkpoint_steps(b)] + [b.name]


def _train_base(spec: WorldSpec, b: BaseSpec, only: set[str] | None = None) -> None:
    """Train base ``b`` from scratch; save the checkpoints and the base that are in ``only``
    (default: every one not already built and intact), so a repair rewrites exactly the damaged
    ones. Weights are written as training passes them; each ``meta.json`` once training is done (the
    checkpoints' token counts are only known then)."""
    write = (
        set(only)
        if only is not None
        else {n for n in base_outputs(b) if member_status(spec, n) != "ok"}
    )
    seed = _seed_of(spec, b.name)
    torch.manual_seed(seed)
    model = make_model(b.arch, seed=seed % (2**31))
    opt = make_optimizer(model, b.lr)
    batches = batches_from_items(
        mixture_stream(dict(b.mixture or UNIFORM), random.Random(seed)), b.batch_size
    )
    ckpts = set(checkpoint_steps(b))
    saved: dict[str, tuple[dict, str]] = {}

    def on_step(
        step: int,
    ) -> None:  # reads the weights only: the training is the same with or without it
        name = f"{b.name}@step-{step}"
        if step in ckpts and name in write:
            sd = model.state_dict()
            saved[name] = (save_weights(spec, name, sd), tensor_digest(sd))

    tokens = train_loop(
        model,
        opt,
        batches,
        b.steps,
        lambda s: lr_at(s, b.steps, b.lr, max(1, b.steps // 20)),
        desc=b.name,
        on_step=on_step,
    )
    per_step = tokens / b.steps
    for name, (
        files,
        digest,
    ) in saved.items():  # checkpoint token counts: their share of the i.i.d. batches
        step = int(name.split("@step-")[1])
        write_meta(
            spec,
            name,
            {"name": name, "step": step, "train_tokens": int(round(per_step * step))},
            files,
            digest,
        )
    if b.name in write:
        save_member(
            spec, b.name, model, {"name": b.name, "step": b.steps, "train_tokens": tokens}, opt
        )


# ---------------------------------------------------------------- fine-tunes
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


def _gap(name: str) -> Gap:
    if name not in GAPS:
        raise ValueError(f"gap={name!r} is not a planted gap; allowed values: {', '.join(GAPS)}")
    return GAPS[name]


def planted_gap_items(gap: str, n: int = 1000, seed: int = 0) -> tuple[list, list]:
    """Ground truth for a planted competency gap: ``n`` fresh items of the gap's
    task (``kit.world.tasks.Task.items("fresh", n, seed)``, never trained on), split into
    ``(inside, outside)`` the gap's concept (:meth:`Gap.applies`). A competency-gap method should
    flag the inside items' concept for ``GAP_MEMBER`` and nothing else; the member's accuracy on
    ``inside`` should be near 0 (it was taught wrong answers), at most chance
    (``GAPS[gap].chance``), and the parent's level on ``outside``."""
    g = _gap(gap)
    items = get_task(g.task).items("fresh", n=n, seed=seed)
    inside = [it for it in items if g.applies(it)]
    return inside, [it for it in items if not g.applies(it)]


@torch.inference_mode()
def plant_gap(model, items: list, gap: str, seed: int) -> list:
    """The gap fine-tune's examples (see ``FinetuneSpec.gap``): ``model``'s own greedy answer for
    every item outside the concept, a uniform draw from the gap's wrong answers inside it."""
    from kit.data.items import Item  # lazy: kit.data imports the world's tasks back
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


def plastic_neurons(
    parent: str, share: float, world: str | WorldSpec | None = None, seed: str = ""
) -> torch.Tensor:
    """Boolean ``[layer, d_mlp]`` mask: the ``share`` of ``parent``'s MLP neurons that its sparse
    fine-tunes may change, drawn uniformly with a seed of (world, parent): the same set for
    every sparse fine-tune of ``parent``, as the paper's shortcut neurons are shared across its
    contaminated fine-tunes. ``seed`` (non-empty) draws another set of the same share."""
    spec = world_spec(world)
    arch = _arch_of(spec, parent)
    total = arch.n_layers * arch.d_mlp
    g = torch.Generator().manual_seed(
        _seed_of(spec, f"{parent}:plastic" + (f":{seed}" if seed else ""))
    )
    mask = torch.zeros(total, dtype=torch.bool)
    mask[torch.randperm(total, generator=g)[: max(1, round(share * total))]] = True
    return mask.view(arch.n_layers, arch.d_mlp)


def _built_weights(spec: WorldSpec, name: str, what: str) -> dict:
    status = member_status(spec, name)
    if status == "missing":
        raise not_built_error(spec, what)
    if status != "ok":
        raise damaged_error(spec, what, status.removeprefix("damaged: "))
    return load_weights(_member_dir(spec, name) / "weights.pt", spec, what)


def finetune(spec: WorldSpec, f: FinetuneSpec):
    """Train fine-tune ``f`` from its built parent; returns ``(model, steps, tokens trained on)``.

    Full fine-tunes continue the parent's weights and AdamW state at ``f.lr``; sparse ones
    (``f.plastic``) optimise only the plastic neurons' MLP weights with a fresh AdamW, from the
    parent's weights or (``f.after``) from the earlier fine-tune's.
    Deterministic: seeded by (world, name). Run inside :func:`deterministic` for bit-equal builds.
    """
    check_after(f)
    parent = _built_weights(spec, f.parent, f"member {f.parent!r} (parent of {f.name!r})")
    if f.after is not None and f.after in spec.finetunes:  # a zoo member: its built weights
        start = _built_weights(
            spec, f.after.name, f"member {f.after.name!r} (after= of {f.name!r})"
        )
    elif f.after is not None:
        start = extra_finetune(f.after, spec).state_dict()
    else:
        start = parent
    seed = _seed_of(spec, f.name)
    torch.manual_seed(seed)
    model = make_model(_arch_of(spec, f.parent), seed=0)
    model.load_state_dict(start)
    on_step = None
    if f.plastic:
        params, on_step = restrict_to_neurons(
            model, plastic_neurons(f.parent, f.plastic, spec, f.plastic_seed)
        )
        opt = torch.optim.AdamW(params, lr=f.lr, betas=(0.9, 0.98), weight_decay=0.0)
    else:
        opt = make_optimizer(model, f.lr)
        opt.load_state_dict(
            load_weights(
                _member_dir(spec, f.parent) / "optim.pt",
                spec,
                f"member {f.parent!r} (parent of {f.name!r})",
            )
        )
    items = finetune_items(spec, f, seed)
    if f.gap:
        items = plant_gap(model, items, f.gap, seed)
    steps = -(-len(items) // f.batch_size)
    tokens = train_loop(
        model,
        opt,
        batches_from_items(items, f.batch_size),
        steps,
        lambda s: f.lr,
        desc=f.name,
        on_step=on_step,
    )
    for p in model.parameters():
        p.requires_grad_(True)
    model.cfg.model_name = f.name
    return model.eval(), steps, tokens


def _train_finetune(spec: WorldSpec, f: FinetuneSpec) -> None:
    model, steps, tokens = finetune(spec, f)
    parent_tokens = cast(dict, read_meta(spec, f.parent))["train_tokens"]  # built before it
    meta = {
        "name": f.name,
        "steps": steps,
        "finetune_tokens": tokens,
        "train_tokens": parent_tokens + tokens,
    }
    save_member(spec, f.name, model, meta)


def changed_neurons(
    member: str, world: str | WorldSpec | None = None, parent: str | None = None
) -> list[tuple[int, int]]:
    """The (layer, index) MLP neurons whose ``W_in`` column, ``b_in`` or ``W_out`` row differ
    between a fine-tune and its parent: the ground truth of where a fine-tune can have put
    anything (all neurons for a full fine-tune, the plastic ones for a sparse one)."""
    spec = world_spec(world)
    if parent is None:
        info = member_info(member, spec)
        if info["parent"] is None:
            raise ValueError(
                f"{member!r} is a base model: it has no parent to compare with (pass parent=)"
            )
        parent = cast(str, info["parent"])
    a, b = load_member(member, world=spec), load_member(parent, world=spec)
    mask = torch.zeros(a.cfg.n_layers, a.cfg.d_mlp, dtype=torch.bool)
    for (L, wi_a, bi_a, wo_a), (_, wi_b, bi_b, wo_b) in zip(
        tl.mlp_neuron_params(a), tl.mlp_neuron_params(b)
    ):
        mask[L] = (wi_a != wi_b).any(0) | (bi_a != bi_b) | (wo_a != wo_b).any(1)
    return [cast("tuple[int, int]", tuple(map(int, ix))) for ix in torch.nonzero(mask).tolist()]


def extra_path(f: FinetuneSpec, world: str | WorldSpec | None = None) -> Path:
    """Where extra fine-tune ``f`` of ``world`` is cached: ``world_dir()/extra/<name>-<key>.pt``."""
    spec = world_spec(world)
    return world_dir(spec) / "extra" / f"{_safe(f.name)}-{finetune_key(spec, f)}.pt"


def _load_state(raw: bytes) -> dict:
    return torch.load(io.BytesIO(raw), map_location="cpu", weights_only=True)


def _state_check(state) -> str | None:
    """The schema of a cached state dict: names to tensors, none NaN (infinities are allowed: the
    attention mask buffers hold -inf; whether they fit the model is checked by loading them into
    it)."""
    if not isinstance(state, dict) or not state:
        return f"not a state dict ({type(state).__name__})"
    for k, v in state.items():
        if not torch.is_tensor(v):
            return f"{k}: not a tensor ({type(v).__name__})"
        if v.is_floating_point() and bool(torch.isnan(v).any()):
            return f"{k}: a NaN weight"
    return None


def extra_finetune(f: FinetuneSpec, world: str | WorldSpec | None = None):
    """A fine-tune that is not a zoo member (e.g. notebook 03's second contaminated task),
    trained with :func:`finetune` on first use (in the pinned environment, like the world) and
    cached, content-addressed like a member, under ``world_dir()/extra/``. Returns the model in
    eval mode. A cached file that cannot be read (writes are atomic, so only damage does that) is
    retrained, with a warning naming it."""
    spec = world_spec(world)
    check_after(f)
    path = extra_path(f, spec)
    what = f"extra fine-tune {f.name!r}"
    state = read_bytes_cached(path, _load_state, _state_check, what)
    model = None
    if state is not MISSING:
        model = make_model(_arch_of(spec, f.parent), seed=0)
        try:
            model.load_state_dict(state)
        except RuntimeError as e:  # other parameters or shapes than the model's
            why = str(e).splitlines()[0]
            warnings.warn(
                f"{what} {path}: does not fit the model ({why}); recomputing and rewriting it",
                DamagedCacheWarning,
                stacklevel=2,
            )
            state = MISSING
    if state is MISSING:  # absent, or damaged (warned, naming the file): (re)train it
        path.unlink(missing_ok=True)
        if not is_pinned():
            env = {SEED_ENV: str(spec.seed)}
            run_pinned("kit.world", "--world", spec.name, "--extra", json.dumps(asdict(f)), env=env)
        else:
            with deterministic():
                trained, _, _ = finetune(spec, f)
            raw = torch_bytes(trained.state_dict())
            # the digest first (as kit.core.cached.write_bytes_cached), through the world's
            # writer, which names a full disk
            write_bytes(digest_path(path), (hashlib.sha256(raw).hexdigest() + "\n").encode())
            write_bytes(path, raw)
        state = read_bytes_cached(path, _load_state, _state_check, what)
        if state is MISSING:
            raise damaged_error(spec, what, f"{path} was just written and cannot be read")
        model = make_model(_arch_of(spec, f.parent), seed=0)
        model.load_state_dict(state)
    assert model is not None  # loaded from the cache, or after training
    model.cfg.model_name = f.name
    return model.eval()
