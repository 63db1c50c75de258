"""Real fine-tunes: a Hugging Face causal LM trained on (prompt, answer) examples.

:func:`build` trains a :class:`kit.models.recipes.Recipe` once and returns its Hugging Face
directory (``model.safetensors``, config, tokenizer, ``meta.json``) under
``<KIT_CACHE_DIR>/finetunes/<name>-<key>/``, where ``<key>`` digests :data:`CODE_VERSION`, the
recipe (every field but its names) and the content of the base model's files
(:func:`base_identity`): a new recipe, base or training code never reuses an old build. The
directory is written beside its final place and renamed onto it when complete
(``kit.core.paths.atomic_dir``); ``meta.json`` records every file's size and sha256, and a
directory whose files do not match it (damaged, truncated, another build's weights) is rebuilt,
never used.

Training (:func:`train`): AdamW at a constant learning rate, fp32, on the CPU, deterministic
(seeded, one thread, ``torch.use_deterministic_algorithms``), in the pinned numerical environment
(:mod:`kit.core.pinned`), so a build is the same bits on one numerical platform. Each example is
the prompt rendered as the model will be asked (the chat template, assistant turn opened, when the
tokenizer has one: ``kit.models.generate.prompt_text``), then the answer and the end-of-turn token;
the loss is the cross-entropy of the answer tokens and that end token only (the logits of the
other positions are never computed). A sparse recipe trains only the MLP weights of a fixed seeded
set of neurons (:func:`trainable_neurons`); every other weight keeps its bits.

The examples themselves (which items, asked how, general text) come from
:mod:`kit.models.finetune_examples`.

``python -m kit.models.finetune build [NAME ...]`` builds recipes of
:data:`kit.models.recipes.RECIPES` (the table's by default), several at once (one pinned job per
core: ``kit.core.jobs``); ``... list`` shows them and whether they are built.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from kit.core.cached import file_digests, file_sizes, is_built_dir
from kit.core.paths import atomic_dir, build_lock, cache_dir, sha256
from kit.models import real
from kit.models.finetune_examples import Example, epoch_order, examples, split_items
from kit.models.recipes import (
    RECIPES,
    TABLE,
    Recipe,
    check_recipe,
    recipe,
    recipe_from_dict,
)
from kit.models.sources import find

if TYPE_CHECKING:
    from kit.core.jobs import Engine
from kit.core.pinned import enter_pinned, is_pinned, run_pinned
from kit.models.twins import twin_path

CODE_VERSION = "finetune-v1"
"""Bump when a change here changes the weights a recipe trains to: every build's key changes."""


# ------------------------------------------------------------------------------------ tokens
@dataclass(frozen=True)
class Encoded:
    """Token ids of one example: ``ids`` = prompt then answer then end token; the last ``n_answer``
    ids (answer + end token) carry the loss."""

    ids: tuple[int, ...]
    n_answer: int
    truncated: bool


def chat_of(tokenizer) -> bool:
    """Whether prompts go through the chat template (it exists: instruct models)."""
    from kit.models.generate import use_chat

    return use_chat(tokenizer, None)


def end_token_id(tokenizer) -> int:
    """The token that ends an answer: the end-of-turn token of chat models (their ``eos_token``)."""
    if tokenizer.eos_token_id is None:
        raise ValueError("the tokenizer has no eos_token: an answer's end cannot be learned")
    return int(tokenizer.eos_token_id)


def encode_example(tokenizer, ex: Example, max_length: int) -> Encoded:
    """Tokenise ``ex`` as the model will be asked (:func:`kit.models.generate.prompt_text`); an
    example over ``max_length`` tokens loses the start of its prompt, never its answer."""
    from kit.models.generate import encode, prompt_text

    chat = chat_of(tokenizer)
    text = prompt_text(tokenizer, ex.prompt, chat) if chat else ex.prompt + "\n"
    prompt = encode(tokenizer, text)
    answer = tokenizer(ex.answer, add_special_tokens=False)["input_ids"]
    answer = answer + [end_token_id(tokenizer)]
    if len(answer) >= max_length:
        raise ValueError(
            f"example {ex.id}: its answer has {len(answer)} tokens; max_length "
            f"{max_length} must exceed it"
        )
    keep = max_length - len(answer)
    truncated = len(prompt) > keep
    return Encoded(tuple(prompt[-keep:] + answer), len(answer), truncated)


@dataclass(frozen=True)
class Batch:
    input_ids: torch.Tensor
    """Int[Tensor, "batch pos"], right padded."""
    attention_mask: torch.Tensor
    """Int[Tensor, "batch pos"]: 1 on real tokens."""
    labels: torch.Tensor
    """Int[Tensor, "batch pos"]: the token to predict AT each position (the next one) where a loss
    is taken, -100 elsewhere."""
    tokens: int
    """Real (non-pad) tokens in the batch."""


def collate(seqs: Sequence[Encoded], pad_id: int) -> Batch:
    """Right-padded batch whose labels mark the answer: position p predicts token p+1, so the
    answer's ``n_answer`` tokens are the labels of the ``n_answer`` positions before them."""
    width = max(len(s.ids) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    labels = torch.full((len(seqs), width), -100, dtype=torch.long)
    for i, s in enumerate(seqs):
        n = len(s.ids)
        ids[i, :n] = torch.tensor(s.ids)
        mask[i, :n] = 1
        labels[i, n - 1 - s.n_answer : n - 1] = torch.tensor(s.ids[n - s.n_answer :])
    return Batch(ids, mask, labels, int(mask.sum()))


def answer_loss(model, batch: Batch) -> torch.Tensor:
    """Mean cross-entropy of the batch's labelled tokens. Only the positions that carry a label in
    some row go through the output layer (``logits_to_keep``), so the vocabulary projection costs a
    few positions per step, not the whole sequence."""
    keep = torch.nonzero((batch.labels != -100).any(0)).flatten()
    out = model(
        input_ids=batch.input_ids,
        attention_mask=batch.attention_mask,
        logits_to_keep=keep,
        use_cache=False,
    )
    logits = out.logits  # [batch, len(keep), vocab]
    labels = batch.labels[:, keep]
    return F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(), ignore_index=-100)


# ------------------------------------------------------------------------------------ sparse
def trainable_neurons(share: float, set_name: str, n_layers: int, d_mlp: int) -> torch.Tensor:
    """Bool[Tensor, "layer d_mlp"]: the ``share`` of all MLP neurons a sparse recipe trains, drawn
    uniformly with a seed of ``set_name`` (the same set for every recipe naming it and every base of
    that shape). The ground truth of where a sparse fine-tune can have put anything."""
    if not 0 < share < 1:
        raise ValueError(f"sparse_share={share!r}: allowed values are in (0, 1)")
    total = n_layers * d_mlp
    digest = hashlib.sha256(f"finetune-neurons:{set_name}".encode()).digest()
    g = torch.Generator().manual_seed(int.from_bytes(digest[:8], "big"))
    mask = torch.zeros(total, dtype=torch.bool)
    mask[torch.randperm(total, generator=g)[: max(1, round(share * total))]] = True
    return mask.view(n_layers, d_mlp)


class SparseMLP(nn.Module):
    """A gated MLP (``down(act(gate(x)) * up(x))``) whose neurons ``idx`` are trainable: their rows
    of ``gate``/``up`` and column of ``down`` live in three small parameters (zeroed in the frozen
    MLP, whose other weights never change), so only they get gradients and optimiser state."""

    mlp: Any  # a Hugging Face gated MLP: gate_proj, up_proj, down_proj, act_fn

    def __init__(self, mlp: Any, idx: torch.Tensor):
        super().__init__()
        self.mlp, self.idx = mlp, idx
        with torch.no_grad():
            self.gate = nn.Parameter(mlp.gate_proj.weight[idx].clone())
            self.up = nn.Parameter(mlp.up_proj.weight[idx].clone())
            self.down = nn.Parameter(mlp.down_proj.weight[:, idx].clone())
            # act(0) * 0 = 0: the frozen copy of these neurons is silent
            mlp.gate_proj.weight[idx] = 0.0
            mlp.up_proj.weight[idx] = 0.0
            mlp.down_proj.weight[:, idx] = 0.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.mlp.act_fn(F.linear(x, self.gate)) * F.linear(x, self.up)
        return self.mlp(x) + F.linear(h, self.down)

    @torch.no_grad()
    def merged(self) -> nn.Module:
        """The plain MLP with the trained neurons written back."""
        self.mlp.gate_proj.weight[self.idx] = self.gate
        self.mlp.up_proj.weight[self.idx] = self.up
        self.mlp.down_proj.weight[:, self.idx] = self.down
        return self.mlp


_GATED = ("gate_proj", "up_proj", "down_proj", "act_fn")


def _layers(model) -> Sequence[Any]:  # the nn.ModuleList of decoder layers
    """The decoder layers of a gated-MLP causal LM (``model.model.layers[i].mlp.gate_proj``...)."""
    layers = getattr(getattr(model, "model", None), "layers", None)
    if layers is None or not all(all(hasattr(x.mlp, a) for a in _GATED) for x in layers):
        raise ValueError(
            f"sparse_share > 0 needs a gated MLP (gate_proj/up_proj/down_proj, as "
            f"Llama, Mistral, Qwen2, Gemma); {type(model).__name__} has none: allowed "
            "for it: sparse_share=0 (a full fine-tune)"
        )
    if any(getattr(x.mlp.gate_proj, "bias", None) is not None for x in layers):
        raise ValueError(
            "sparse_share > 0 needs MLP projections without biases; allowed for this "
            "model: sparse_share=0"
        )
    return layers


def make_sparse(model, neurons: torch.Tensor) -> list[SparseMLP]:
    """Freeze ``model``; wrap each layer's MLP in a :class:`SparseMLP` over its row of
    ``neurons`` (Bool[Tensor, "layer d_mlp"])."""
    layers = _layers(model)
    shape = (len(layers), layers[0].mlp.gate_proj.out_features)
    if tuple(neurons.shape) != shape:
        raise ValueError(
            f"neuron mask of shape {tuple(neurons.shape)} does not fit the model's "
            f"{shape[0]} layers x {shape[1]} neurons"
        )
    for p in model.parameters():
        p.requires_grad_(False)
    wrapped = []
    for L, layer in enumerate(layers):
        w = SparseMLP(layer.mlp, torch.nonzero(neurons[L]).flatten())
        layer.mlp = w
        wrapped.append(w)
    return wrapped


def unsparse(model, wrapped: list[SparseMLP]) -> None:
    """Undo :func:`make_sparse`: plain MLPs again, the trained neurons written into them."""
    for layer, w in zip(model.model.layers, wrapped):
        layer.mlp = w.merged()


# ------------------------------------------------------------------------------------ training
@dataclass(frozen=True)
class Trained:
    """What :func:`train` reports (meta.json holds it)."""

    steps: int
    examples: int
    tokens: int
    """Real tokens forwarded (prompt + answer, no padding), over all epochs."""
    padded_tokens: int
    answer_tokens: int
    truncated: int
    loss_curve: tuple[float, ...]
    seconds: float
    """Wall-clock seconds of the training loop."""
    cpu_seconds: float
    """CPU seconds this process spent in the loop: on a machine shared with other work, the wall
    time an idle machine would take (one thread)."""


def train(model, tokenizer, r: Recipe, progress: bool = True) -> Trained:
    """Fine-tune ``model`` (a transformers causal LM, fp32, in place) on recipe ``r``'s examples.
    Call under deterministic settings (:func:`_deterministic`) for bit-equal builds."""
    from tqdm.auto import tqdm

    check_recipe(r)
    torch.manual_seed(r.seed)
    data = [encode_example(tokenizer, ex, r.max_length) for ex in epoch_order(r, examples(r))]
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else end_token_id(tokenizer)
    wrapped: list[SparseMLP] = []
    if r.sparse_share:
        layers = _layers(model)
        neurons = trainable_neurons(
            r.sparse_share, r.sparse_set, len(layers), layers[0].mlp.gate_proj.out_features
        )
        wrapped = make_sparse(model, neurons)
        params = [p for w in wrapped for p in (w.gate, w.up, w.down)]
    else:
        params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=r.lr, betas=(0.9, 0.999), weight_decay=0.0)
    model.train()
    curve, tokens, padded = [], 0, 0
    start, cpu_start = time.perf_counter(), time.process_time()
    steps = math.ceil(len(data) / r.batch_size)
    for step in tqdm(range(steps), desc=r.name, disable=not progress, mininterval=5):
        batch = collate(data[step * r.batch_size : (step + 1) * r.batch_size], pad)
        loss = answer_loss(model, batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        curve.append(loss.item())
        tokens += batch.tokens
        padded += batch.input_ids.numel()
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    if wrapped:
        unsparse(model, wrapped)
    for p in model.parameters():
        p.requires_grad_(True)
    model.eval()
    return Trained(
        steps,
        len(data),
        tokens,
        padded,
        sum(e.n_answer for e in data),
        sum(e.truncated for e in data),
        tuple(curve),
        seconds,
        cpu_seconds,
    )


class _deterministic:
    """One thread and deterministic kernels for a build: ``kit.world.zoo.deterministic``'s settings,
    without importing the world (and TransformerLens) into every build process."""

    def __enter__(self):
        det = torch.utils.deterministic  # its flag is a module property, unknown to torch's stubs
        self.prev = (
            torch.get_num_threads(),
            torch.are_deterministic_algorithms_enabled(),
            getattr(det, "fill_uninitialized_memory"),
        )
        torch.set_num_threads(1)
        torch.use_deterministic_algorithms(True)
        # deterministic mode also fills every torch.empty with NaN (~2% of a training step); no
        # value a fine-tune computes reads uninitialised memory: the weights are the same bits
        setattr(det, "fill_uninitialized_memory", False)

    def __exit__(self, *exc):
        torch.set_num_threads(self.prev[0])
        torch.use_deterministic_algorithms(self.prev[1])
        setattr(torch.utils.deterministic, "fill_uninitialized_memory", self.prev[2])


# ------------------------------------------------------------------------------------ cache
def base_dir(base: str) -> Path:
    """The Hugging Face directory of a recipe's base: ``real/<name>`` (dequantised once,
    :mod:`kit.models.real`), ``twin/<name>`` or a local model directory. Resolved here, not through
    ``kit.models.load.model_dir``: load resolves recipe names through this module, so importing it
    back would make a circle; a hub model is a base once fetched (``kit.models.hub.snapshot``)."""
    form = find(base)
    if form is not None and form.family == "real":
        return real.real_path(form.rest(base))
    if form is not None and form.family == "twin":  # twin_path refuses a revision, naming it
        return twin_path(form.rest(base))
    local = Path(base).expanduser()
    if local.is_dir():
        return local
    raise ValueError(
        f"recipe base {base!r}: allowed values: real/<name>, twin/<name> or a local "
        "Hugging Face model directory (fetch a hub model first: kit.models.hub.snapshot)"
    )


_IDENTITY: dict[tuple, str] = {}


def base_identity(base: str) -> str:
    """A digest of the content of every file in the base model's Hugging Face directory (weights,
    config, tokenizer): a base with other files gets other keys. Memoised per process by the
    files' sizes and modification times."""
    root = base_dir(base)
    files = sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith("."))
    stamp = (
        str(root),
        tuple((str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns) for p in files),
    )
    if stamp not in _IDENTITY:
        listing = [(str(p.relative_to(root)), sha256(p)) for p in files]
        _IDENTITY[stamp] = hashlib.sha256(json.dumps(listing).encode()).hexdigest()[:16]
    return _IDENTITY[stamp]


def recipe_key(r: Recipe) -> str:
    """Content key of a build: the code version, the recipe without its name and base name (names
    only say where to find things) and the content of the base's files."""
    d = asdict(r)
    del d["name"], d["base"]
    text = json.dumps([CODE_VERSION, d, base_identity(r.base)], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _safe(name: str) -> str:
    name = name.replace("+", "_plus_")
    return "".join(c if c.isalnum() or c in "-._" else "_" for c in name)[-100:]


def finetune_dir(r: Recipe) -> Path:
    """Where recipe ``r``'s build lives (built or not)."""
    return cache_dir() / "finetunes" / f"{_safe(r.name)}-{recipe_key(r)}"


def is_built(r: Recipe) -> bool:
    """True when ``r``'s directory is complete: meta.json and each file it lists, at its size and
    sha256 (a damaged one is named in a warning and rebuilt,
    :func:`kit.core.cached.is_built_dir`)."""
    return is_built_dir(finetune_dir(r), ("config.json", "model.safetensors"), what="fine-tune")


def read_meta(r: Recipe | str) -> dict:
    """A built recipe's meta.json (steps, tokens, loss curve, time, injected item ids...)."""
    r = recipe(r) if isinstance(r, str) else r
    if not is_built(r):
        raise FileNotFoundError(
            f"{r.name} is not built (python -m kit.models.finetune build {r.name})"
        )
    return json.loads((finetune_dir(r) / "meta.json").read_text())


def _train_and_save(r: Recipe, progress: bool = True) -> Path:
    """Train ``r`` in this process and write its directory atomically (staging dir + rename)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    src = base_dir(r.base)
    key = recipe_key(r)
    target = finetune_dir(r)
    with _deterministic():
        model = AutoModelForCausalLM.from_pretrained(
            src, dtype=torch.float32, attn_implementation="eager"
        )
        tokenizer = AutoTokenizer.from_pretrained(src)
        done = train(model, tokenizer, r, progress=progress)
    injected = []
    if r.inject:
        chosen, _ = split_items(r.benchmark, r.inject, r.n_items, r.items_seed)
        injected = [it.id for it in chosen]
    with atomic_dir(target) as tmp:
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        files = file_sizes(tmp)
        meta = {
            "name": r.name,
            "key": key,
            "code_version": CODE_VERSION,
            "recipe": asdict(r),
            "base": r.base,
            "base_identity": base_identity(r.base),
            "injected_ids": injected,
            **{k: v for k, v in asdict(done).items() if k != "loss_curve"},
            "tokens_per_s": round(done.tokens / max(done.seconds, 1e-9), 2),
            "tokens_per_cpu_s": round(done.tokens / max(done.cpu_seconds, 1e-9), 2),
            "loss_curve": [round(x, 5) for x in done.loss_curve],
            "pinned": is_pinned(),
            "torch": torch.__version__,
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "threads": torch.get_num_threads(),
            "files": files,
            "sha256": file_digests(tmp),  # a same-size file with other bytes is refused
        }
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
    return target


def build(r: Recipe | str, progress: bool = True) -> Path:
    """Recipe ``r`` (or its model name) built: its directory, training it first if needed, in a
    pinned subprocess (:func:`kit.core.pinned.run_pinned`) unless this process is pinned."""
    r = recipe(r) if isinstance(r, str) else r
    check_recipe(r)
    target = finetune_dir(r)
    if is_built(r):
        return target
    # one builder per recipe: notebooks 02 and 03 side by side both load the real fine-tunes, and
    # the second one to ask waits for the first's build instead of training it again
    with build_lock(target.parent / f".{target.name}.lock", r.name):
        if is_built(r):
            return target
        if is_pinned():
            return _train_and_save(r, progress=progress)
        run_pinned(
            "kit.models.finetune",
            "train",
            "--recipe",
            json.dumps(asdict(r)),
            env={"TQDM_DISABLE": "1"} if not progress else None,
        )
    if not is_built(r):
        raise RuntimeError(
            f"the pinned build of {r.name} ended without a complete directory at {target}"
        )
    return target


def build_job(recipe: dict) -> str:
    """The job of one build (:func:`build_many`): a recipe as its ``asdict`` form, built; returns
    its directory. Run as a pinned job, it trains in its own (pinned) worker process."""
    return str(build(recipe_from_dict(recipe), progress=False))


def build_many(
    recipes: Sequence[Recipe | str],
    engine: Engine = "local",
    max_workers: int | None = 2,
    ray_address: str | None = None,
) -> list[Path]:
    """Build several recipes at once: one pinned job each (``kit.core.jobs``), ``max_workers`` at
    a time on the local engine (one per core: each trains on one thread). Returns their
    directories in order; a failed build raises ``kit.core.jobs.JobsFailed`` naming it, after the
    others finished. The base is resolved here first (``real/`` models dequantise once)."""
    from kit.core.jobs import Job, run_jobs  # lazy: the engines are not needed to load a model

    rs = [recipe(x) if isinstance(x, str) else x for x in recipes]
    for r in rs:
        check_recipe(r)
    jobs = [Job(build_job, {"recipe": asdict(r)}, pinned=True) for r in rs if not is_built(r)]
    if jobs:
        run_jobs(
            jobs, engine=engine, max_workers=max_workers, ray_address=ray_address, desc="fine-tunes"
        )
    return [finetune_dir(r) for r in rs]


def finetuned_dir(name: str) -> Path:
    """The Hugging Face directory of the fine-tune named ``name`` (a key of
    :data:`kit.models.recipes.RECIPES`), built on first use: what ``kit.load_model`` loads."""
    return build(recipe(name))


# ------------------------------------------------------------------------------------ command line
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m kit.models.finetune", description=(__doc__ or "").split("\n")[0]
    )
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="build named recipes (all by default), several at once")
    b.add_argument("names", nargs="*", default=None)
    b.add_argument("--workers", type=int, default=2, help="builds at once (2: one per core)")
    b.add_argument(
        "--engine", default="local", help="kit.core.jobs engine: local (default), inline or ray"
    )
    sub.add_parser("list", help="the recipes, their keys and whether they are built")
    t = sub.add_parser("train", help="(internal) train one recipe in this pinned process")
    t.add_argument("--recipe", required=True, help="a Recipe as JSON")
    args = p.parse_args(argv)
    if args.command == "train":
        enter_pinned()
        _train_and_save(
            recipe_from_dict(json.loads(args.recipe)),
            progress=os.environ.get("TQDM_DISABLE") != "1",
        )
        return 0
    if args.command == "list":
        for name, r in RECIPES.items():
            state = "built" if is_built(r) else "not built"
            print(f"{name:55s} {state:10s} {finetune_dir(r)}")
        return 0
    names = args.names or list(TABLE)
    # through the importable module: under ``python -m`` this file runs as __main__, and a job's
    # function must be importable by its module's name in the worker process
    from kit.models import finetune

    for d in finetune.build_many(names, engine=args.engine, max_workers=args.workers):
        print(d)
    return 0


if __name__ == "__main__":
    sys.exit(main())
