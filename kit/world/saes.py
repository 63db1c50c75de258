"""SAEs on zoo activations, trained with sae_lens's trainer and stored as genuine sae_lens SAEs.

Activations: ``hook_name`` of one member at every non-BOS position of train-mixture sequences;
4/5 train the SAE (:func:`kit.models.sae_train.train_sae`, the recipe the MiniLM SAEs use too:
``topk`` or ``standard`` = ReLU + L1), 1/5 are held out. The SAE is saved with
``save_inference_model``; ``load_world_sae`` uses ``SAE.load_from_disk``. sae_lens is imported
lazily (it costs seconds per process).

Stats (on the held-out activations): explained variance ``1 - E||x - x_hat||^2 / E||x - mean||^2``,
L0 (mean active features per token), dead fraction (features never active on the held-out set).
Concept labels: for each feature, its 20 top-activating (token, position) contexts over all the
activations; the label is the dominant task of those contexts and their most frequent token,
e.g. ``"add: apples"`` (:func:`kit.models.sae_train.label_from_contexts`).
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict
from pathlib import Path

import torch

from kit.core.paths import atomic_dir
from kit.models import tl
from kit.world.recipes import UNIFORM, world_spec
from kit.world.specs import SAESpec, WorldSpec, _digest, _seed_of, member_key
from kit.world.storage import (
    damaged_error,
    disk_full_named,
    file_sha256,
    files_problem,
    load_member,
    not_built_error,
    tensor_digest,
    world_dir,
)
from kit.world.tasks import TASKS
from kit.world.tokenizer import PAD_ID, pad_right
from kit.world.train import item_sequence, mixture_stream

MANIFEST = "files.json"
"""Written last into an SAE's folder: ``{"files": {name: {"bytes", "sha256"}},
"weights_digest"}``."""


def _sae_dir(spec: WorldSpec, name: str) -> Path:
    s = _spec_of(name, spec)
    key = _digest([asdict(s), member_key(spec, s.member)])
    return world_dir(spec) / "saes" / f"{name.replace('/', '__')}-{key}"


def folder_status(d: Path) -> str:
    """``"ok"``, ``"missing"`` or ``"damaged: <why>"`` of an SAE folder (written by ``atomic_dir``,
    so complete or absent unless something changed it later) against its manifest."""
    if not d.is_dir():
        return "missing"
    try:
        manifest = json.loads((d / MANIFEST).read_text())
    except FileNotFoundError:
        return f"damaged: {d / MANIFEST} is missing"
    except (ValueError, UnicodeDecodeError) as e:
        return f"damaged: {d / MANIFEST} is not valid JSON ({e})"
    why = files_problem(d, manifest["files"])
    return f"damaged: {why}" if why else "ok"


def sae_status(spec: WorldSpec, s: SAESpec) -> str:
    """``"ok"``, ``"missing"`` or ``"damaged: <why>"`` of the world's SAE ``s``."""
    return folder_status(_sae_dir(spec, s.name))


def sae_digest(name: str, world: str | WorldSpec | None = None) -> str:
    """The tensor digest of an SAE's weights, recorded when it was trained."""
    d = _checked_dir(name, world_spec(world))
    return json.loads((d / MANIFEST).read_text())["weights_digest"]


def _checked_dir(name: str, spec: WorldSpec) -> Path:
    d = _sae_dir(spec, _spec_of(name, spec).name)
    status = folder_status(d)
    if status == "missing":
        raise not_built_error(spec, f"SAE {name!r}")
    if status != "ok":
        raise damaged_error(spec, f"SAE {name!r}", status.removeprefix("damaged: "))
    return d


def saes(world: str | WorldSpec | None = None) -> list[str]:
    """Names of the world's SAEs."""
    return [s.name for s in world_spec(world).saes]


def _spec_of(name: str, spec: WorldSpec) -> SAESpec:
    for s in spec.saes:
        if s.name == name:
            return s
    raise ValueError(
        f"SAE {name!r} is not in world {spec.name!r}; SAEs: {', '.join(saes(spec.name))}"
    )


@torch.inference_mode()
def collect_activations(model, hook_name: str, n_prompts: int, seed: int):
    """Activations at ``hook_name`` for every non-BOS, non-pad position of train sequences.

    Returns (acts Float[Tensor, "n d_model"], token_ids Int[Tensor, "n"], task_index Int[Tensor,
    "n"]).
    """
    rng = random.Random(seed)
    stream = mixture_stream(dict(UNIFORM), rng)
    names = list(TASKS)
    acts, toks, tasks = [], [], []
    for start in range(0, n_prompts, 256):
        items = [next(stream) for _ in range(min(256, n_prompts - start))]
        seqs = [item_sequence(it)[:-1] for it in items]  # <bos> prompt answer
        tokens, lengths = pad_right(seqs)
        _, cache = tl.run_with_cache(model, tokens, [hook_name])
        a = cache[hook_name]
        mask = tokens != PAD_ID
        mask[:, 0] = False  # BOS activations are outliers in norm; no SAE models them
        acts.append(a[mask].float())
        toks.append(tokens[mask])
        tidx = torch.tensor([names.index(it.metadata["task"]) for it in items])
        tasks.append(tidx[:, None].expand_as(tokens)[mask])
    return torch.cat(acts), torch.cat(toks), torch.cat(tasks)


def train_sae(spec: WorldSpec, s: SAESpec) -> None:
    """Train one SAE with the shared sae_lens recipe; save it with its stats and labels."""
    _train_into(spec, s, _sae_dir(spec, s.name), _seed_of(spec, s.name))


def _train_into(spec: WorldSpec, s: SAESpec, target: Path, seed: int) -> None:
    from sae_lens import SAE

    from kit.models.sae_train import label_from_contexts, top_activations
    from kit.models.sae_train import train_sae as train

    torch.manual_seed(seed)
    model = load_member(s.member, world=spec)
    acts, toks, tasks = collect_activations(model, s.hook_name, s.n_prompts, seed)
    n_val = min(len(acts) // 5, 20_000)
    perm = torch.randperm(len(acts))
    val_idx, train_idx = perm[:n_val], perm[n_val:]
    trained = train(
        acts[train_idx],
        s.d_sae,
        s.steps * s.batch_size,
        architecture=s.architecture,
        k=s.k,
        l1=s.l1,
        batch_size=s.batch_size,
        lr=s.lr,
        seed=seed,
        metadata=dict(
            hook_name=s.hook_name,
            model_name=s.member,
            context_size=64,
            prepend_bos=True,
            world=spec.name,
        ),
    )
    names = list(TASKS)
    with disk_full_named(target.parent, str(target)), atomic_dir(target) as tmp:
        trained.save_inference_model(tmp)
        sae = SAE.load_from_disk(tmp)  # the inference SAE, exactly as load_world_sae will return it
        with torch.inference_mode():
            stats = _stats(sae, acts[val_idx], s)
        vals, rows = top_activations(sae, acts, n_top=20)
        labels = [
            label_from_contexts(
                [
                    {
                        "value": float(v),
                        "word": model.tokenizer.convert_ids_to_tokens(int(toks[j])),
                        "task": names[int(tasks[j])],
                    }
                    for v, j in zip(vals[c].tolist(), rows[c].tolist())
                    if v > 0 and j >= 0
                ],
                n_words=1,
                group="task",
            )
            for c in range(s.d_sae)
        ]
        (tmp / "labels.json").write_text(json.dumps({str(c): lab for c, lab in enumerate(labels)}))
        (tmp / "stats.json").write_text(json.dumps(stats, indent=1))
        files = {
            p.name: {"bytes": p.stat().st_size, "sha256": file_sha256(p)}
            for p in sorted(tmp.iterdir())
        }
        (tmp / MANIFEST).write_text(
            json.dumps(
                {"files": files, "weights_digest": tensor_digest(sae.state_dict())}, indent=1
            )
        )


def _stats(sae, x, s: SAESpec) -> dict:
    f = sae.encode(x)
    x_hat = sae.decode(f)
    ev = 1 - (x - x_hat).pow(2).sum(-1).mean() / (x - x.mean(0)).pow(2).sum(-1).mean()
    active = f > 0
    return {
        "explained_variance": round(float(ev), 6),
        "l0": round(float(active.sum(-1).float().mean()), 4),
        "dead_fraction": round(float((~active.any(0)).float().mean()), 6),
        "n_eval_tokens": int(len(x)),
        "d_sae": s.d_sae,
        "architecture": s.architecture,
        "hook_name": s.hook_name,
        "member": s.member,
    }


def load_world_sae(name: str, device: str = "cpu", world: str | WorldSpec | None = None):
    """A zoo SAE as a sae_lens SAE; ``sae.cfg.metadata.hook_name`` names its site."""
    from sae_lens import SAE

    return SAE.load_from_disk(_checked_dir(name, world_spec(world)), device=device)


def sae_labels(name: str, world: str | WorldSpec | None = None) -> dict[int, str]:
    """feature index -> concept label from its top-activating contexts (``(dead)`` if never
    active)."""
    d = _checked_dir(name, world_spec(world))
    return {int(k): v for k, v in json.loads((d / "labels.json").read_text()).items()}


def sae_stats(name: str, world: str | WorldSpec | None = None) -> dict:
    """explained_variance, l0, dead_fraction (held-out activations) and the SAE's site."""
    return json.loads((_checked_dir(name, world_spec(world)) / "stats.json").read_text())


# ------------------------------------------------------------- the same recipe at another site


def site_sae_name(name: str, hook_name: str) -> str:
    """Name of the world SAE ``name``'s recipe retrained at ``hook_name``:
    ``"<name>@<hook_name>"``."""
    return f"{name}@{hook_name}"


def site_sae_dir(name: str, hook_name: str, world: str | WorldSpec | None = None) -> Path:
    """Cache folder of :func:`site_sae`: ``<cache>/site-saes/<world>/<name>@<hook>-<key>``, ``key``
    a digest of the retargeted spec and the member's content key (a rebuilt member gets a new
    SAE)."""
    from dataclasses import replace

    from kit.core.paths import cache_dir

    spec = world_spec(world)
    s = replace(_spec_of(name, spec), name=site_sae_name(name, hook_name), hook_name=hook_name)
    key = _digest([asdict(s), member_key(spec, s.member)])
    return cache_dir() / "site-saes" / spec.name / f"{s.name.replace('/', '__')}-{key}"


def site_sae(name: str, hook_name: str, world: str | WorldSpec | None = None, device: str = "cpu"):
    """The world SAE ``name``'s recipe (member, architecture, width, k, steps, prompts, lr) trained
    at another site ``hook_name`` of the same member, on demand: not part of the world's spec or
    card, cached in :func:`site_sae_dir` (``atomic_dir``: readers see a complete SAE or none),
    seeded by ``(world, site_sae_name(name, hook_name))``. Returns ``(sae, labels, stats)`` as
    :func:`load_world_sae`, :func:`sae_labels` and :func:`sae_stats` do for the world's SAEs.
    Raises ``ValueError`` naming the member's hooks when ``hook_name`` is not one of them."""
    from dataclasses import replace

    from sae_lens import SAE

    from kit.world.members import deterministic  # lazy: members imports this module's neighbours

    spec = world_spec(world)
    base = _spec_of(name, spec)
    s = replace(base, name=site_sae_name(name, hook_name), hook_name=hook_name)
    target = site_sae_dir(name, hook_name, spec)
    if folder_status(target) != "ok":
        tl.check_hooks(load_member(s.member, world=spec), [hook_name], field="gap_sae_hooks")
        with deterministic():
            _train_into(spec, s, target, _seed_of(spec, s.name))
    labels = {int(k): v for k, v in json.loads((target / "labels.json").read_text()).items()}
    return (
        SAE.load_from_disk(target, device=device),
        labels,
        json.loads((target / "stats.json").read_text()),
    )
