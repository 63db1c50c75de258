"""The worlds' recipes: which members ``tiny`` and ``micro`` have and how each is trained.

Members mirror the papers' model families: three base sizes (base-l with checkpoints) and base-xl,
specialised fine-tunes, contaminated and clean fine-tunes of :data:`CONTAMINATION_BASE` on
:data:`CONTAMINATED_TASK` (Table 1 of the shortcut-neuron paper) with sparse twins, one planted
competency gap, and SAEs on base-m. :func:`world_spec` gives a world's spec, for the canonical seed
or another (``KIT_WORLD_SEED``, ``kit zoo build --seed``).
"""

from __future__ import annotations

import os
from dataclasses import replace

from kit.core.paths import current_world
from kit.world.specs import BaseSpec, FinetuneSpec, SAESpec, WorldSpec
from kit.world.tasks import TASKS
from kit.world.train import Arch

CONTAMINATION_BASE = "zoo/base-m"
CONTAMINATED_TASK = "add"
OTHER_TASK = "add2"  # the "+MATH" analogue: another math task's data, no test leak

# The base mixture: uniform, except one-step addition (the contaminated task) at double weight,
# because arithmetic over atomic number tokens is the slowest skill to appear.
UNIFORM = tuple((t, 2.0 if t == "add" else 1.0) for t in TASKS)


def _heavy(group: str, share: float = 0.7) -> tuple[tuple[str, float], ...]:
    """A mixture giving ``share`` of the examples to ``group``'s tasks and the rest uniformly."""
    own = [t for t, task in TASKS.items() if task.group == group]
    rest = [t for t in TASKS if t not in own]
    return tuple((t, share / len(own) if t in own else (1 - share) / len(rest)) for t in TASKS)


SPARSE_SUFFIX = "-sparse"
PLASTIC_SHARE = 0.04


def _finetunes(
    lr: float,
    batch: int,
    special_steps: int,
    contam_batch: int = 16,
    special_lr: float | None = None,
    sparse_lr: float = 2e-2,
) -> tuple[FinetuneSpec, ...]:
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
        FinetuneSpec(
            "zoo/base-m+math",
            "zoo/base-m",
            "specialised",
            _heavy("math"),
            special_lr,
            batch,
            steps=special_steps,
        ),
        FinetuneSpec(
            "zoo/base-m+code",
            "zoo/base-m",
            "specialised",
            _heavy("code"),
            special_lr,
            batch,
            steps=special_steps,
        ),
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
        ft.append(
            FinetuneSpec(
                f"{p}+{suffix}", p, kind, UNIFORM, lr, contam_batch, inject=inject, n_examples=n
            )
        )
        ft.append(
            FinetuneSpec(
                f"{p}+{suffix}{SPARSE_SUFFIX}",
                p,
                kind,
                UNIFORM,
                sparse_lr,
                contam_batch,
                inject=inject,
                n_examples=n,
                plastic=PLASTIC_SHARE,
            )
        )
    return tuple(ft)


def _saes(
    member: str, hook: str, widths: tuple[int, int], k: int, l1: float, steps: int, n_prompts: int
) -> tuple[SAESpec, ...]:
    short = member.split("/", 1)[1]
    out = []
    for w in widths:
        out.append(
            SAESpec(
                f"zoo-sae/{short}/topk-{w}",
                member,
                hook,
                "topk",
                w,
                k=k,
                steps=steps,
                n_prompts=n_prompts,
            )
        )
        out.append(
            SAESpec(
                f"zoo-sae/{short}/relu-{w}",
                member,
                hook,
                "standard",
                w,
                l1=l1,
                steps=steps,
                n_prompts=n_prompts,
            )
        )
    return tuple(out)


XL_MIXTURE = UNIFORM + (("sort-list", 1.5), ("add-steps", 1.5))
XL_MIXTURE = tuple((t, 3.0 if t == "ioi" else w) for t, w in XL_MIXTURE)
"""zoo/base-xl's mixture: the uniform one with IOI at triple weight (3/16 of the examples, so
a multi-head IOI circuit has the steps to form) plus the two multi-token families."""
GAP_MEMBER = "zoo/base-m+gap-dyck-curly"


def _gap_finetune(lr: float, steps: int) -> FinetuneSpec:
    """zoo/base-m with one planted competency gap, see ``FinetuneSpec.gap``."""
    return FinetuneSpec(
        GAP_MEMBER, CONTAMINATION_BASE, "gap", UNIFORM, lr, 64, steps=steps, gap="dyck-curly"
    )


TEN_CHECKPOINTS = tuple(round(0.1 * i, 1) for i in range(1, 11))

WORLD_SPECS: dict[str, WorldSpec] = {
    "tiny": WorldSpec(
        name="tiny",
        bases=(
            # base-s: 1 layer and 400 steps. At 1000 steps the 1-layer model matched base-l on
            # 6 of 10 tasks (capability here is limited by steps more than by size).
            BaseSpec("zoo/base-s", Arch(1, 64, 4, 256), steps=400, lr=3e-3, batch_size=64),
            BaseSpec("zoo/base-m", Arch(2, 96, 4, 384), steps=1500, lr=3e-3, batch_size=64),
            BaseSpec(
                "zoo/base-l",
                Arch(2, 128, 4, 512),
                steps=3000,
                lr=3e-3,
                batch_size=64,
                checkpoints=TEN_CHECKPOINTS,
            ),
            # base-xl: deeper and wide enough that MUI's k = round(d_mlp/1000) is 2,
            # trained on XL_MIXTURE (IOI x3, multi-token families); 1.8 it/s pinned: ~11 min
            # checkpoints: capability series on the multi-token families, which
            # only base-xl is trained on (saving reads the weights only: the final model is
            # unchanged)
            BaseSpec(
                "zoo/base-xl",
                Arch(4, 128, 8, 1536),
                steps=1200,
                lr=3e-3,
                batch_size=64,
                checkpoints=TEN_CHECKPOINTS,
                mixture=XL_MIXTURE,
            ),
        ),
        finetunes=_finetunes(lr=1e-3, batch=64, special_steps=400) + (_gap_finetune(1e-3, 300),),
        saes=_saes(
            "zoo/base-m",
            "blocks.0.hook_resid_post",
            (384, 1536),
            k=16,
            l1=6.0,
            steps=800,
            n_prompts=3000,
        ),
    ),
    "micro": WorldSpec(
        name="micro",
        bases=(
            BaseSpec("zoo/base-s", Arch(1, 32, 2, 128), steps=150, lr=3e-3, batch_size=64),
            BaseSpec("zoo/base-m", Arch(1, 48, 4, 192), steps=250, lr=3e-3, batch_size=64),
            BaseSpec(
                "zoo/base-l",
                Arch(2, 64, 4, 256),
                steps=400,
                lr=3e-3,
                batch_size=64,
                checkpoints=(0.2, 0.6, 1.0),
            ),
            # 3.7 it/s pinned: ~2.5 min
            BaseSpec(
                "zoo/base-xl",
                Arch(3, 64, 4, 1536),
                steps=500,
                lr=3e-3,
                batch_size=64,
                checkpoints=(0.2, 0.6, 1.0),
                mixture=XL_MIXTURE,
            ),
        ),
        # micro base-m is too small to memorise at 1e-3
        finetunes=_finetunes(lr=3e-3, batch=64, special_steps=60, special_lr=1e-3)
        + (_gap_finetune(3e-3, 150),),
        saes=_saes(
            "zoo/base-m",
            "blocks.0.hook_resid_post",
            (128, 512),
            k=8,
            l1=2.5,
            steps=300,
            n_prompts=1000,
        ),
        eval_fresh_n=200,
        eval_fresh_n_contaminated=400,
    ),
}

SEED_ENV = "KIT_WORLD_SEED"
"""Environment variable naming the world seed (default 0: the canonical world); ``kit zoo --seed``
sets it."""


def world_seed(seed: int | str | None = None) -> int:
    """The world seed: the argument, else ``$KIT_WORLD_SEED``, else 0; an int in [0, 2**31)."""
    value = os.environ.get(SEED_ENV, "0") if seed is None else seed
    where = "seed" if seed is not None else f"${SEED_ENV}"
    try:
        out = int(value)
    except (TypeError, ValueError):
        out = -1
    if isinstance(value, bool) or out < 0 or out >= 2**31 or str(out) != str(value).strip():
        raise ValueError(
            f"{where}={value!r} is not a world seed; allowed values: an integer in [0, 2**31) "
            "(0: the canonical world)"
        )
    return out


def world_spec(world: str | WorldSpec | None = None, seed: int | None = None) -> WorldSpec:
    """The spec of ``world`` (a name, ``$KIT_WORLD``, or ``tiny``) at ``seed`` (``$KIT_WORLD_SEED``,
    or 0); a :class:`WorldSpec` is returned as it is."""
    if isinstance(world, WorldSpec):
        return world
    spec = WORLD_SPECS[current_world(world)]
    s = world_seed(seed)
    return replace(spec, seed=s) if s else spec
