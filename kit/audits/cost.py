"""What MIB's edge scores and faithfulness curve will cost, known before any weights load.

Edge patching (:func:`kit.audits.circuits.edge_scores`) runs one forward pass over the IOI batch
per edge of the head graph: input -> every head, every head -> every head of a later layer and
-> the logits, input -> logits, i.e. ``2 L H + 1 + H^2 L (L - 1) / 2`` edges for ``L`` layers of
``H`` heads (35,776 for SmolLM2-135M's 30 x 9). The estimate is edges x (FLOPs of one pass at an
assumed throughput + a fixed per-pass overhead); the shape comes from the model's config alone
(:func:`model_shape`: the world's spec, a directory's ``config.json``, a cached hub config).
Edge attribution (:func:`kit.audits.circuits.edge_attribution_scores`) runs one forward and one
backward pass whatever the number of edges, plus one dot product per edge
(:func:`edge_attribution_cost`). The curve then runs one forward pass over the audited prompts per
threshold, for the ranking and for each random ranking of its null (:func:`mib_curve_cost`).

The throughputs are assumptions, printed with every estimate: :data:`CPU_FLOPS` is one idle AVX2
core (the 2-core development machine did 8 GFLOP/s on ``random/gpt2-small``, 24 x 16 tokens, with
the core shared by about five processes; 3e10 puts SmolLM2-135M's 35,776 edges over 24 prompts at
about two days, the order of the ~48 h measured once); :data:`GPU_FLOPS` was not measured.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

CPU_FLOPS = 3e10
"""Assumed float32 throughput of a CPU forward pass, FLOP/s: one idle AVX2 core (measured here: 8e9
on a core shared with about five other processes)."""
GPU_FLOPS = 1e13
"""Assumed throughput on a GPU, FLOP/s (not measured)."""
PASS_OVERHEAD_S = 0.05
"""Seconds of hooks and Python per patched pass, whatever the size (micro base-xl: ~0.1 s here)."""
IOI_PROMPT_TOKENS = 20
"""Tokens of one IOI prompt (the world's and GPT-2's IOI sentences are 15-20 tokens)."""
BACKWARD_FLOPS = 2.0
"""A backward pass in forward passes' FLOPs (the usual 2: gradients through every matrix product;
only the activations' gradients are taken, so this is an upper bound)."""


@dataclass(frozen=True)
class ModelShape:
    """What the cost of a forward pass depends on."""

    n_layers: int
    n_heads: int
    d_model: int
    d_mlp: int
    d_vocab: int
    gated: bool = False
    """A gated MLP (Llama, Qwen2, Gemma...) has three d_model x d_mlp matrices, not two."""


@dataclass(frozen=True)
class EdgeCost:
    """The estimate of scoring the edges: edges, seconds (None: shape unknown), how it was made;
    with ``curve_seconds``, MIB's curve and its null after them (:func:`mib_curve_cost`)."""

    n_edges: int | None
    seconds: float | None
    how: str
    curve_seconds: float | None = None
    curve_how: str = ""

    @property
    def total(self) -> float | None:
        """Scoring plus the curve (None when either is unknown)."""
        if self.seconds is None or (self.curve_how and self.curve_seconds is None):
            return None
        return self.seconds + (self.curve_seconds or 0.0)

    def text(self) -> str:
        if self.seconds is None:
            return f"cost unknown ({self.how})"
        out = f"{self.n_edges:,} edges, estimated {duration(self.seconds)} ({self.how})"
        if self.curve_seconds is not None:
            out += f", then {self.curve_how}, estimated {duration(self.curve_seconds)}"
        return out


def duration(seconds: float) -> str:
    """``48 s``, ``12 min``, ``3.2 h`` or ``5.1 days``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def n_edges(n_layers: int, n_heads: int) -> int:
    """Edges of the head graph (:func:`kit.audits.circuits.graph_edges`, counted, not listed)."""
    n = n_layers * n_heads
    return 2 * n + 1 + n_heads * n_heads * n_layers * (n_layers - 1) // 2


def forward_flops(shape: ModelShape, tokens: int) -> float:
    """Multiply-adds x 2 of one forward over ``tokens`` tokens: attention projections (4 d_model^2),
    the MLP (2 or 3 d_model x d_mlp) per layer, and the unembedding (d_model x d_vocab)."""
    mlp = (3 if shape.gated else 2) * shape.d_model * shape.d_mlp
    per_token = shape.n_layers * (4 * shape.d_model**2 + mlp) + shape.d_model * shape.d_vocab
    return 2.0 * tokens * per_token


def edge_patching_cost(shape: ModelShape | None, n_prompts: int, device: str) -> EdgeCost:
    """Edges x seconds per patched pass over ``n_prompts`` IOI prompts on ``device``."""
    if shape is None:
        return EdgeCost(None, None, "the model's config is not readable offline")
    rate = CPU_FLOPS if device == "cpu" else GPU_FLOPS
    per_pass = PASS_OVERHEAD_S + forward_flops(shape, n_prompts * IOI_PROMPT_TOKENS) / rate
    edges = n_edges(shape.n_layers, shape.n_heads)
    how = (
        f"{shape.n_layers} layers x {shape.n_heads} heads, "
        f"{n_prompts} prompts x {IOI_PROMPT_TOKENS} tokens "
        f"at an assumed {rate / 1e9:.0f} GFLOP/s on {device}"
    )
    return EdgeCost(edges, edges * per_pass, how)


def edge_attribution_cost(shape: ModelShape | None, n_prompts: int, device: str) -> EdgeCost:
    """One forward and one backward pass over ``n_prompts`` IOI prompts, then one dot product over
    prompts x tokens x ``d_model`` per edge, on ``device``."""
    if shape is None:
        return EdgeCost(None, None, "the model's config is not readable offline")
    rate = CPU_FLOPS if device == "cpu" else GPU_FLOPS
    tokens = n_prompts * IOI_PROMPT_TOKENS
    edges = n_edges(shape.n_layers, shape.n_heads)
    flops = (1 + BACKWARD_FLOPS) * forward_flops(
        shape, tokens
    ) + 2.0 * edges * tokens * shape.d_model
    how = (
        f"attribution: one forward and one backward pass, {shape.n_layers} layers x "
        f"{shape.n_heads} heads, {n_prompts} prompts x {IOI_PROMPT_TOKENS} tokens "
        f"at an assumed {rate / 1e9:.0f} GFLOP/s on {device}"
    )
    return EdgeCost(edges, 2 * PASS_OVERHEAD_S + flops / rate, how)


@functools.lru_cache(maxsize=16)  # the config asks at load, before the circuit and for the claim
def curve_passes(
    n_layers: int, n_heads: int, thresholds: tuple[float, ...], null_seeds: tuple[int, ...]
) -> int:
    """Forward passes of MIB's curve (:func:`kit.audits.mib.mib_audit`): ``m(N)`` and ``m(empty)``
    once, then one per distinct set of heads that a threshold's top edges touch (neither every head
    nor none: those are ``m(N)`` and ``m(empty)``), for the ranking (at most one per threshold)
    and for each random ranking of the null (seeded as there; counted here on the graph's own edge
    order, since the scored order is not known before the scores: the same count in
    distribution)."""
    from kit.audits.circuits import INPUT, LOGITS, graph_edges

    edges = graph_edges(n_layers, n_heads)

    def index(node: str) -> int:  # -1: input or logits (no head)
        if node in (INPUT, LOGITS):
            return -1
        L, H = (int(x) for x in node.split("."))
        return L * n_heads + H

    ends = np.array([[index(u), index(v)] for u, v in edges])
    n_all = n_layers * n_heads
    sizes = [max(1, int(np.floor(t * len(edges)))) for t in thresholds]
    passes = 2 + len(thresholds)
    for seed in null_seeds:
        order = np.argsort(np.random.default_rng(seed).permutation(len(edges)))
        seen = set()
        for n in sizes:
            heads = np.unique(ends[order[:n]])
            heads = frozenset(heads[heads >= 0].tolist())
            if 0 < len(heads) < n_all:
                seen.add(heads)
        passes += len(seen)
    return passes


def mib_curve_cost(
    shape: ModelShape | None,
    n_prompts: int,
    thresholds: tuple[float, ...],
    null_seeds: tuple[int, ...],
    device: str,
) -> tuple[float | None, str]:
    """Seconds and words of MIB's curve over ``n_prompts`` audited prompts, with its random
    rankings (:func:`curve_passes`)."""
    if shape is None:
        return None, "the MIB curve"
    passes = curve_passes(shape.n_layers, shape.n_heads, tuple(thresholds), tuple(null_seeds))
    how = (
        f"the MIB curve: {passes:,} forward passes ({len(thresholds)} thresholds, "
        f"{len(null_seeds)} random rankings) over {n_prompts} prompts"
    )
    rate = CPU_FLOPS if device == "cpu" else GPU_FLOPS
    per_pass = PASS_OVERHEAD_S + forward_flops(shape, n_prompts * IOI_PROMPT_TOKENS) / rate
    return passes * per_pass, how


def model_shape(name: str, world: str) -> ModelShape | None:
    """The shape of a model from its config only (no weights): a ``zoo/`` member from the world's
    spec, ``random/<shape>``, a twin or a local directory from its ``config.json``, a hub id from a
    config already in the Hugging Face cache; None when none is readable offline."""
    from kit.models.sources import form_of

    form = form_of(name)
    if form.world_member:
        # lazy: the world's specs import torch; hub models never need them
        from kit.world import member_info
        from kit.world.tokenizer import vocab

        a = member_info(name, world)["arch"]
        return ModelShape(a["n_layers"], a["n_heads"], a["d_model"], a["d_mlp"], len(vocab()))
    if form.random_init:
        from kit.models.load import RANDOM_SHAPES

        s = RANDOM_SHAPES.get(form.rest(name))
        if s is None:
            return None
        return ModelShape(
            s["n_layers"],
            s["n_heads"],
            s["d_model"],
            s["d_mlp"],
            s["d_vocab"],
            gated=bool(s.get("gated_mlp")),
        )
    config = _hf_config(name)
    return None if config is None else _shape_of(config)


def config_dir(name: str) -> Path | None:
    """The local directory with ``name``'s ``config.json`` (a twin's, built if missing; a ``real/``
    model's, dequantised if missing; a local directory; a hub id's cached snapshot, never fetched);
    None when there is none."""
    from kit.models.sources import form_of

    path: Path | None = None
    form = form_of(name)
    if form.family == "twin":
        from kit.models.twins import twin_path

        # a revision twin has its twin's shape and tokenizer; built offline in seconds if missing
        try:
            path = twin_path(form.rest(name).partition("@")[0])
        except (FileNotFoundError, ValueError):
            return None
    elif form.family == "real":
        from kit.models import real

        try:  # dequantised once (as kit.load_model would next), then cached
            path = real.real_path(form.rest(name))
        except Exception:  # noqa: BLE001 (package not installed, unknown name: the cost is unknown)
            return None
    elif Path(name).expanduser().is_dir():
        path = Path(name).expanduser()
    else:
        try:  # a hub id whose config is already cached; never the network
            from huggingface_hub import try_to_load_from_cache

            found = try_to_load_from_cache(name.split("@")[0], "config.json")
            path = Path(found).parent if isinstance(found, str) else None
        except Exception:  # noqa: BLE001 (no hub package or a malformed id: unknown, not an error)
            path = None
    return path if path is not None and (path / "config.json").is_file() else None


def _hf_config(name: str) -> dict | None:
    path = config_dir(name)
    if path is None:
        return None
    try:
        return json.loads((path / "config.json").read_text())
    except (OSError, ValueError):
        return None


def _shape_of(c: dict) -> ModelShape | None:
    c = c.get("text_config", c)
    get: Any = lambda *keys: next((c[k] for k in keys if c.get(k) is not None), None)  # noqa: E731
    n_layers, n_heads = get("num_hidden_layers", "n_layer"), get("num_attention_heads", "n_head")
    d_model, d_vocab = get("hidden_size", "n_embd"), get("vocab_size")
    if None in (n_layers, n_heads, d_model, d_vocab):
        return None
    d_mlp = get("intermediate_size", "n_inner") or 4 * d_model
    gated = c.get("model_type") not in (
        "gpt2",
        "gpt_neox",
        "gptj",
        "gpt_neo",
        "opt",
        "bloom",
        "bert",
        "roberta",
    )
    return ModelShape(
        int(n_layers), int(n_heads), int(d_model), int(d_mlp), int(d_vocab), gated=gated
    )
