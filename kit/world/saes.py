"""SAEs on zoo activations: trained here, stored and loaded as genuine sae_lens SAEs.

Training is a plain torch loop over cached activations (``hook_name`` of one member, every
non-BOS position of train-mixture sequences), then the weights are written into a sae_lens
``TopKSAE`` / ``StandardSAE`` and saved with ``save_model``; ``load_world_sae`` uses
``SAE.load_from_disk``. sae_lens is imported lazily (it costs seconds per process).

- topk: ``f = TopK_k(ReLU(W_enc (x - b_dec) + b_enc))``, loss = MSE.
- standard: ``f = ReLU(W_enc (x - b_dec) + b_enc)``, loss = MSE + l1 * sum_i f_i ||W_dec[i]||,
  with the MSE and the L1 term both divided by the mean squared norm of the centred data, so
  ``l1`` does not depend on the activation scale.

Stats (on held-out activations): explained variance ``1 - E||x - x_hat||^2 / E||x - mean||^2``,
L0 (mean active features per token), dead fraction (features never active on the held-out set).
Concept labels: for each feature, its 20 top-activating (token, position) contexts; the label is
the dominant task of those contexts and the most frequent token, e.g. ``"add: apples"``.
"""

from __future__ import annotations

import json
import random
import shutil
from collections import Counter
from dataclasses import asdict
from pathlib import Path

import torch
from tqdm.auto import tqdm

from kit.models import tl
from kit.world.tasks import TASKS
from kit.world.train import item_sequence, mixture_stream
from kit.world.tokenizer import PAD_ID, pad_right
from kit.world.zoo import (
    UNIFORM,
    SAESpec,
    WorldSpec,
    _digest,
    _seed_of,
    load_member,
    member_key,
    not_built_error,
    world_dir,
    world_spec,
)


def _sae_dir(spec: WorldSpec, name: str) -> Path:
    s = _spec_of(name, spec)
    key = _digest([asdict(s), member_key(spec, s.member)])
    return world_dir(spec.name) / "saes" / f"{name.replace('/', '__')}-{key}"


def is_sae_done(spec: WorldSpec, s: SAESpec) -> bool:
    return (_sae_dir(spec, s.name) / "stats.json").is_file()


def saes(world: str | None = None) -> list[str]:
    """Names of the world's SAEs."""
    return [s.name for s in world_spec(world).saes]


def _spec_of(name: str, spec: WorldSpec) -> SAESpec:
    for s in spec.saes:
        if s.name == name:
            return s
    raise ValueError(f"SAE {name!r} is not in world {spec.name!r}; SAEs: {', '.join(saes(spec.name))}")


@torch.inference_mode()
def collect_activations(model, hook_name: str, n_prompts: int, seed: int):
    """Activations at ``hook_name`` for every non-BOS, non-pad position of train sequences.

    Returns (acts Float[Tensor, "n d_model"], token_ids Int[Tensor, "n"], task_index Int[Tensor, "n"]).
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


def _encode(x, W_enc, b_enc, b_dec, arch: str, k: int):
    pre = torch.relu((x - b_dec) @ W_enc + b_enc)
    if arch == "topk":
        vals, idx = pre.topk(k, dim=-1)
        return torch.zeros_like(pre).scatter_(-1, idx, vals)
    return pre


def train_sae(spec: WorldSpec, s: SAESpec) -> None:
    """Train one SAE, save it as a sae_lens SAE with stats and labels."""
    seed = _seed_of(spec, s.name)
    torch.manual_seed(seed)
    model = load_member(s.member, world=spec.name)
    acts, toks, tasks = collect_activations(model, s.hook_name, s.n_prompts, seed)
    n_val = min(len(acts) // 5, 20_000)
    perm = torch.randperm(len(acts))
    val_idx, train_idx = perm[:n_val], perm[n_val:]
    x_train = acts[train_idx]
    d_in = acts.shape[1]
    mean = x_train.mean(0)
    scale = (x_train - mean).pow(2).sum(-1).mean()  # E||x - mean||^2
    W_dec = torch.randn(s.d_sae, d_in)
    W_dec = W_dec / W_dec.norm(dim=1, keepdim=True)
    W_enc = torch.nn.Parameter(W_dec.t().clone())
    W_dec = torch.nn.Parameter(W_dec)
    b_enc = torch.nn.Parameter(torch.zeros(s.d_sae))
    b_dec = torch.nn.Parameter(mean.clone())
    opt = torch.optim.Adam([W_enc, W_dec, b_enc, b_dec], lr=s.lr)
    for step in tqdm(range(s.steps), desc=s.name, leave=False, mininterval=2):
        x = x_train[torch.randint(len(x_train), (s.batch_size,))]
        f = _encode(x, W_enc, b_enc, b_dec, s.architecture, s.k)
        x_hat = f @ W_dec + b_dec
        loss = (x - x_hat).pow(2).sum(-1).mean() / scale
        if s.architecture == "standard":
            loss = loss + s.l1 * (f * W_dec.norm(dim=1)).sum(-1).mean() / scale.sqrt()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if s.architecture == "topk":
            with torch.no_grad():  # unit-norm decoder rows keep TopK's ranking meaningful
                W_dec /= W_dec.norm(dim=1, keepdim=True)
        for g in opt.param_groups:  # linear decay over the last 20%
            g["lr"] = s.lr * min(1.0, 5 * (1 - (step + 1) / s.steps))
    with torch.no_grad():
        stats = _stats(acts[val_idx], W_enc, b_enc, W_dec, b_dec, s)
        f_all = _encode(acts, W_enc, b_enc, b_dec, s.architecture, s.k)
        labels = _labels(f_all, toks, tasks, model)
    _save_sae(spec, s, W_enc.detach(), b_enc.detach(), W_dec.detach(), b_dec.detach(), stats, labels)


def _stats(x, W_enc, b_enc, W_dec, b_dec, s: SAESpec) -> dict:
    f = _encode(x, W_enc, b_enc, b_dec, s.architecture, s.k)
    x_hat = f @ W_dec + b_dec
    ev = 1 - (x - x_hat).pow(2).sum(-1).mean() / (x - x.mean(0)).pow(2).sum(-1).mean()
    active = f > 0
    return {
        "explained_variance": float(ev),
        "l0": float(active.sum(-1).float().mean()),
        "dead_fraction": float((~active.any(0)).float().mean()),
        "n_eval_tokens": int(len(x)),
        "d_sae": s.d_sae,
        "architecture": s.architecture,
        "hook_name": s.hook_name,
        "member": s.member,
    }


def _labels(f, toks, tasks, model, top: int = 20) -> dict[int, str]:
    names = list(TASKS)
    vals, idx = f.topk(min(top, len(f)), dim=0)  # [top, d_sae]
    labels: dict[int, str] = {}
    for j in range(f.shape[1]):
        live = idx[vals[:, j] > 0, j]
        if len(live) == 0:
            labels[j] = "dead"
            continue
        task = Counter(names[int(t)] for t in tasks[live]).most_common(1)[0][0]
        word = Counter(int(t) for t in toks[live]).most_common(1)[0][0]
        labels[j] = f"{task}: {model.tokenizer.convert_ids_to_tokens(word)}"
    return labels


def _save_sae(spec, s: SAESpec, W_enc, b_enc, W_dec, b_dec, stats, labels) -> None:
    from sae_lens import StandardSAE, StandardSAEConfig, TopKSAE, TopKSAEConfig
    from sae_lens.saes.sae import SAEMetadata

    meta = SAEMetadata(hook_name=s.hook_name, model_name=s.member, context_size=64,
                       prepend_bos=True, world=spec.name)
    if s.architecture == "topk":
        cfg = TopKSAEConfig(d_in=W_enc.shape[0], d_sae=s.d_sae, k=s.k, metadata=meta)
        sae = TopKSAE(cfg)
    else:
        cfg = StandardSAEConfig(d_in=W_enc.shape[0], d_sae=s.d_sae, metadata=meta)
        sae = StandardSAE(cfg)
    sae.load_state_dict({"W_enc": W_enc, "b_enc": b_enc, "W_dec": W_dec, "b_dec": b_dec})
    final = _sae_dir(spec, s.name)
    tmp = final.with_name(final.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    sae.save_model(tmp)
    (tmp / "labels.json").write_text(json.dumps({str(k): v for k, v in labels.items()}))
    (tmp / "stats.json").write_text(json.dumps(stats, indent=1))  # last: marks completion
    if final.exists():
        shutil.rmtree(final)
    tmp.rename(final)  # the directory appears complete or not at all


def load_world_sae(name: str, device: str = "cpu", world: str | None = None):
    """A zoo SAE as a sae_lens SAE; ``sae.cfg.metadata.hook_name`` names its site."""
    from sae_lens import SAE

    spec = world_spec(world)
    s = _spec_of(name, spec)
    d = _sae_dir(spec, s.name)
    if not (d / "stats.json").is_file():
        raise not_built_error(spec.name, f"SAE {name!r}")
    return SAE.load_from_disk(d, device=device)


def sae_labels(name: str, world: str | None = None) -> dict[int, str]:
    """feature index -> concept label from its top-activating contexts ("dead" if never active)."""
    spec = world_spec(world)
    d = _sae_dir(spec, _spec_of(name, spec).name)
    if not (d / "labels.json").is_file():
        raise not_built_error(spec.name, f"SAE {name!r}")
    return {int(k): v for k, v in json.loads((d / "labels.json").read_text()).items()}


def sae_stats(name: str, world: str | None = None) -> dict:
    """explained_variance, l0, dead_fraction (held-out activations) and the SAE's site."""
    spec = world_spec(world)
    d = _sae_dir(spec, _spec_of(name, spec).name)
    if not (d / "stats.json").is_file():
        raise not_built_error(spec.name, f"SAE {name!r}")
    return json.loads((d / "stats.json").read_text())
