"""Responses apart from internals: batched generation, or responses a user already has.

Internals (MUI scores, concept activations, comparative scores) never need the model to
*generate* through TransformerLens: responses come from here, then :mod:`kit.models.internals`
runs teacher-forced forward passes over prompt + response.

- :func:`generate_responses`: batched generation with a KV cache through vLLM when it is
  installed and the model fits beside what the GPU already holds (:func:`choose_backend`), else
  ``transformers``' ``generate``, with the model's chat template on by
  default when the tokenizer has one (instruct models), prompts truncated to the context window
  with a warning, greedy by default, sampling as an option (:data:`SHORTCUT_PAPER_SAMPLING`:
  the shortcut-neuron paper samples at T=1, top-k 50);
- :func:`kit.models.lm_eval_samples.read_lm_eval_samples`: lm-evaluation-harness ``--log_samples``
  jsonl files;
- the published responses in ``../shared/data/model_responses`` are read by
  :func:`kit.data.responses.load_responses`.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

from kit.models.cache import ItemCache, is_text, map_items
from kit.models.decoding import resolve_decoding
from kit.models.hf_ablation import ablated
from kit.models.identity import fingerprints


@dataclass(frozen=True)
class GenerationSettings:
    """Decoding settings; part of every response cache key."""

    max_new_tokens: int = 256
    do_sample: bool = False
    """Greedy (the MUI and Competency-Gaps papers) unless True."""
    temperature: float = 1.0
    top_k: int = 50
    top_p: float = 1.0
    seed: int = 0
    chat: bool | None = None
    """Apply the tokenizer's chat template: None = when the tokenizer has one (instruct models)."""
    system_prompt: str | None = None
    repetition_penalty: float | None = None
    """None: the model's ``generation_config`` value (what ``transformers`` applies by default), on
    both backends; a number overrides it on both (1.0 = none). See :mod:`kit.models.decoding`."""

    def __post_init__(self):
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens={self.max_new_tokens} must be >= 1")
        if self.do_sample and (self.temperature <= 0 or self.top_k < 0 or not 0 < self.top_p <= 1):
            raise ValueError(
                f"sampling needs temperature > 0, top_k >= 0, 0 < top_p <= 1; got {self}"
            )
        if self.repetition_penalty is not None and not self.repetition_penalty > 0:
            raise ValueError(f"repetition_penalty={self.repetition_penalty} must be None or > 0")

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        # the default: keys of caches written before it existed hold
        if out["repetition_penalty"] is None:
            del out["repetition_penalty"]
        return out


SHORTCUT_PAPER_SAMPLING = GenerationSettings(do_sample=True, temperature=1.0, top_k=50)
"""Seed 001 (shortcut neurons) samples with temperature 1 and top-k 50 (its section 4.1)."""


def use_chat(tokenizer, chat: bool | None) -> bool:
    has = getattr(tokenizer, "chat_template", None) is not None
    if chat and not has:
        raise ValueError(
            "chat=True but this tokenizer has no chat_template; use chat=None or False"
        )
    return has if chat is None else bool(chat)


def prompt_text(tokenizer, prompt: str, chat: bool, system_prompt: str | None = None) -> str:
    """The text the model sees: the prompt, or the prompt in the chat template with the
    assistant turn opened."""
    if not chat:
        return prompt
    messages = ([{"role": "system", "content": system_prompt}] if system_prompt else []) + [
        {"role": "user", "content": prompt}
    ]
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


def encode(tokenizer, text: str) -> list[int]:
    """Token ids of ``text`` with the tokenizer's special tokens, except a BOS that a chat template
    already wrote (Llama-3's template starts with ``<|begin_of_text|>``: no second one)."""
    bos = getattr(tokenizer, "bos_token", None)
    add = not (bos and text.startswith(bos))
    return tokenizer(text, add_special_tokens=add)["input_ids"]


def truncate_left(ids: list[int], limit: int, what: str) -> list[int]:
    """Keep the last ``limit`` tokens (the question sits at the end of a few-shot prompt), warning.
    ``limit < 1`` (``max_new_tokens`` fills the whole context) fails: no prompt token would be
    left."""
    if limit < 1:
        raise ValueError(
            f"{what}: max_new_tokens leaves {limit} of the model's context for the prompt; "
            "allowed: max_new_tokens < the context length"
        )
    if len(ids) <= limit:
        return ids
    warnings.warn(
        f"{what}: {len(ids)} tokens exceed the model's context ({limit} available); "
        f"keeping the last {limit}",
        stacklevel=3,
    )
    return ids[-limit:]


def context_length(config) -> int:
    for field in ("max_position_embeddings", "n_positions", "n_ctx", "seq_length"):
        if getattr(config, field, None):
            return int(getattr(config, field))
    raise ValueError("cannot tell the model's context length from its config")


_HELD: dict[tuple[str, ...], Any] = {}
"""The one model held for generation, a Hugging Face copy keyed by (path, device, dtype) or a vLLM
engine keyed by ("vllm", path, dtype, seed): a notebook asks one model for several tasks'
responses in a row, and loading 16 GB per task would dominate."""

BACKENDS = ("auto", "hf", "vllm")
VLLM_MEMORY_SHARE = 0.5
"""Share of the GPU memory free when a vLLM engine starts that it may take (weights + KV cache;
vLLM's ``gpu_memory_utilization`` is set to this budget over the card's total). The rest stays for
the HookedTransformer the notebook already holds and its teacher-forced passes."""
VLLM_WEIGHT_SHARE = 0.6
"""``auto`` picks vLLM only when the weights take at most this share of its budget: the rest is
its KV cache (below ~40% vLLM batches few sequences and gains little over ``generate``)."""


_ANNOUNCED: set[tuple[str, str]] = set()


def weight_bytes(model_path: str | Path, dtype: str | None) -> int:
    """Bytes of the model's parameters in ``dtype``, counted on the meta device (nothing loaded)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from kit.models.dtypes import torch_dtype

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(model_path))
    return sum(p.numel() for p in model.parameters()) * torch_dtype(dtype).itemsize


def _gpu_memory(device: str) -> tuple[int, int]:
    """(free, total) bytes of ``device``'s GPU."""
    import torch

    return torch.cuda.mem_get_info(torch.device(device))


def choose_backend(
    model_path: str | Path,
    device: str,
    dtype: str | None,
    ablate: Sequence = (),
    memory_share: float = VLLM_MEMORY_SHARE,
    settings: GenerationSettings | None = None,
) -> tuple[str, str]:
    """``(backend, why)`` of ``backend="auto"``: vLLM when it is installed, the device is a GPU,
    nothing is ablated (vLLM runs no forward hooks), the model's generation_config holds nothing
    vLLM cannot apply (:mod:`kit.models.decoding`) and the weights fit in ``VLLM_WEIGHT_SHARE`` of
    ``memory_share`` of the GPU memory free now (the notebook's HookedTransformer is already
    resident and stays); otherwise ``transformers``' ``generate``."""
    import importlib.util

    if ablate:
        return "hf", "ablated generation needs forward hooks, which vLLM does not run"
    unsupported = resolve_decoding(model_path, settings or GenerationSettings()).unsupported
    if unsupported:
        return "hf", f"vLLM cannot apply the model's generation_config {', '.join(unsupported)}"
    try:
        installed = importlib.util.find_spec("vllm") is not None
    except ValueError:  # a module without a spec is already imported (a stand-in)
        installed = True
    if not installed:
        return "hf", "vllm is not installed"
    if not str(device).startswith("cuda"):
        return "hf", f"device {device!r} is not a GPU"
    held = [k for k in _HELD if k[0] == "vllm" and k[1] == str(model_path) and k[2] == str(dtype)]
    if held:
        return "vllm", "this model's engine is already held"
    free, _ = _gpu_memory(device)
    need, budget = weight_bytes(model_path, dtype), memory_share * free
    if need > VLLM_WEIGHT_SHARE * budget:
        return "hf", (
            f"weights {need / 2**30:.1f} GiB > {VLLM_WEIGHT_SHARE:.0%} of vLLM's budget "
            f"{budget / 2**30:.1f} GiB ({memory_share:.0%} of {free / 2**30:.1f} GiB free)"
        )
    return "vllm", f"weights {need / 2**30:.1f} GiB fit in vLLM's budget {budget / 2**30:.1f} GiB"


def hf_model(model_path: str | Path, device: str = "cpu", dtype: str | None = None):
    """``(model, tokenizer)`` for generation; loading another one first releases the one held."""
    key = (str(model_path), str(device), str(dtype))
    if key not in _HELD:
        release()
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        from kit.models.dtypes import torch_dtype

        hf_logging.disable_progress_bar()
        tokenizer = AutoTokenizer.from_pretrained(model_path)
        tokenizer.padding_side = "left"  # generation continues the right end of every row
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch_dtype(dtype))
        model = model.to(device).eval()  # pyright: ignore[reportArgumentType]  (transformers' .to)
        _HELD[key] = (model, tokenizer)
    return _HELD[key]


def release() -> None:
    """Free the Hugging Face model held for generation (one model at a time on the GPU)."""
    import gc

    import torch

    _HELD.clear()
    try:  # vLLM keeps a process group that must go before another engine can start
        from vllm.distributed.parallel_state import (  # pyright: ignore[reportMissingImports]  (vllm extra)
            destroy_distributed_environment,
            destroy_model_parallel,
        )
    except ImportError:
        pass
    else:
        destroy_model_parallel()
        destroy_distributed_environment()
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def generate_responses(
    model_path: str | Path,
    prompts: Sequence[str],
    settings: GenerationSettings = GenerationSettings(),
    device: str = "cpu",
    dtype: str | None = None,
    batch_size: int = 16,
    backend: str = "auto",
    cache: ItemCache | None = None,
    ids: Sequence[Any] | None = None,
    progress: bool = False,
    ablate: Sequence[tuple[int, int]] = (),
    vllm_memory_share: float = VLLM_MEMORY_SHARE,
) -> list[str]:
    """Responses of the Hugging Face model at ``model_path`` (a local directory:
    :func:`kit.models.hub.snapshot` gives one for a hub id) to ``prompts``, in order.

    ``backend``: ``"auto"`` (:func:`choose_backend`: vLLM when installed, on a GPU, and the model
    fits in ``vllm_memory_share`` of the free GPU memory; the choice is printed), ``"hf"``
    (``transformers.generate``: left-padded batches of ``batch_size`` prompts, KV cache) or
    ``"vllm"`` (needs the vllm package and a GPU). Responses are decoded
    without special tokens. With ``cache`` (an :class:`~kit.models.cache.ItemCache` keyed by the
    model, the benchmark and ``settings.as_dict()``), finished batches are kept and a rerun
    generates only the missing items (``ids`` name the items; default their positions).
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r} is not allowed; allowed: {', '.join(BACKENDS)}")
    if not 0 < vllm_memory_share <= 1:
        raise ValueError(f"vllm_memory_share={vllm_memory_share} must be in (0, 1]")
    if not prompts:
        raise ValueError("prompts is empty")
    if ablate and cache is not None:
        raise ValueError(
            "ablate and cache exclude each other: ablated responses must not be cached as the "
            "model's"
        )
    if backend == "auto":
        backend, why = choose_backend(
            model_path, device, dtype, ablate, vllm_memory_share, settings
        )
        if (str(model_path), backend) not in _ANNOUNCED:  # once per model, not per benchmark
            _ANNOUNCED.add((str(model_path), backend))
            print(f"generation backend for {Path(str(model_path)).name}: {backend} ({why})")
    if backend == "vllm":
        if ablate:
            raise ValueError("ablate needs backend='hf' (vLLM runs no forward hooks)")
        # HF keys stay as they were
        cache = cache.extended(backend="vllm") if cache is not None else None
        return _generate_vllm(
            str(model_path),
            list(prompts),
            settings,
            dtype,
            device=device,
            cache=cache,
            ids=ids,
            progress=progress,
            memory_share=vllm_memory_share,
        )
    import torch

    model, tokenizer = hf_model(model_path, device, dtype)
    chat = use_chat(tokenizer, settings.chat)
    limit = context_length(model.config) - settings.max_new_tokens
    rows = [
        truncate_left(
            encode(tokenizer, prompt_text(tokenizer, p, chat, settings.system_prompt)),
            limit,
            f"prompt {i}",
        )
        for i, p in enumerate(prompts)
    ]
    gen_kwargs = resolve_decoding(model_path, settings).hf_kwargs(tokenizer.pad_token_id)
    order = sorted(range(len(rows)), key=lambda i: len(rows[i]))  # similar lengths: little padding
    batches = [order[start : start + batch_size] for start in range(0, len(order), batch_size)]

    def compute(idx: list[int]) -> list[str]:
        batch = tokenizer.pad({"input_ids": [rows[i] for i in idx]}, return_tensors="pt").to(device)
        # sampling reproducible per batch, also on resume
        torch.manual_seed(settings.seed + min(idx))
        with ablated(model, ablate), torch.no_grad():
            gen = model.generate(**batch, **gen_kwargs)
        return [
            tokenizer.decode(gen[row, batch["input_ids"].shape[1] :], skip_special_tokens=True)
            for row in range(len(idx))
        ]

    return map_items(
        list(range(len(rows))) if ids is None else list(ids),
        compute,
        batches,
        cache=cache,
        progress=progress,
        fingerprints=fingerprints(list(prompts)),
        check=is_text,
    )


def respond(
    model,
    prompts: Sequence[str],
    settings: GenerationSettings,
    benchmark: str | None = None,
    ids: Sequence[Any] | None = None,
    batch_size: int = 16,
    ablate: Sequence[tuple[int, int]] = (),
    backend: str = "auto",
) -> list[str]:
    """Responses of a model loaded by ``kit.load_model`` (a Hugging Face id, directory or twin),
    generated from its directory on the same device and dtype (``backend``: see
    :func:`generate_responses`). With ``benchmark`` (and no ``ablate``) they are cached per (model
    directory, benchmark, settings; vLLM's responses under their own key) under the item ``ids``."""
    path = getattr(model, "kit_path", None)
    if path is None:
        raise ValueError(
            "this model was not loaded from a Hugging Face directory (kit.load_model of an id, a "
            "local directory or twin/<arch>); tiny-world models respond through kit.world.respond"
        )
    cache = ItemCache(path, benchmark, settings.as_dict()) if benchmark and not ablate else None
    return generate_responses(
        path,
        prompts,
        settings,
        device=str(model.cfg.device),
        dtype=str(model.cfg.dtype).removeprefix("torch."),
        batch_size=batch_size,
        cache=cache,
        ids=ids,
        ablate=ablate,
        backend=backend,
    )


def vllm_engine(
    model_path: str,
    dtype: str | None,
    seed: int = 0,
    device: str = "cuda",
    memory_share: float = VLLM_MEMORY_SHARE,
):
    """The vLLM engine of ``model_path``, held like :func:`hf_model` (starting one releases the
    model held before). It may take ``memory_share`` of the GPU memory free now on ``device``
    (``gpu_memory_utilization`` is a share of the card's total: the budget over the total), so the
    HookedTransformer already resident keeps its memory; and it starts on that same GPU
    (:func:`vllm_device_environment`: vLLM takes no device argument and uses the first visible
    GPU)."""
    try:
        from vllm import LLM  # pyright: ignore[reportMissingImports]  (the vllm extra)
    except ImportError as e:
        raise ImportError(
            "backend='vllm' needs the vllm package (pip install 'kit[vllm]') and a GPU; "
            "backend='hf' needs neither"
        ) from e
    from kit.models.dtypes import DTYPES

    key = ("vllm", str(model_path), str(dtype), str(seed), str(device))
    if key not in _HELD:
        # a device that is no GPU fails before anything
        environment = vllm_device_environment(device)
        release()
        free, total = _gpu_memory(device)
        with _environment(environment):
            _HELD[key] = LLM(
                model=model_path,
                dtype=DTYPES[dtype.removeprefix("torch.")] if dtype else "auto",
                seed=seed,
                gpu_memory_utilization=memory_share * free / total,
            )
    return _HELD[key]


def vllm_device_environment(device: str) -> dict[str, str]:
    """Environment under which a vLLM engine starts on ``device`` (``cuda`` = the current GPU,
    ``cuda:N``): ``CUDA_VISIBLE_DEVICES`` naming that one GPU (mapped through a
    ``CUDA_VISIBLE_DEVICES`` already set, as torch numbers the visible GPUs), and vLLM's engine in
    its own process (``VLLM_ENABLE_V1_MULTIPROCESSING=1``), which reads it when it starts; this
    process, whose CUDA is already initialised, is unaffected."""
    import os

    import torch

    where = torch.device(device)
    if where.type != "cuda":
        raise ValueError(f"device={device!r}: vLLM runs on a GPU ('cuda' or 'cuda:N')")
    index = (
        where.index
        if where.index is not None
        else (torch.cuda.current_device() if torch.cuda.is_available() else 0)
    )
    visible = [
        v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()
    ]
    if visible and index >= len(visible):
        raise ValueError(
            f"device={device!r}: only {len(visible)} GPU(s) visible (CUDA_VISIBLE_DEVICES="
            f"{os.environ['CUDA_VISIBLE_DEVICES']})"
        )
    return {
        "CUDA_VISIBLE_DEVICES": visible[index] if visible else str(index),
        "VLLM_ENABLE_V1_MULTIPROCESSING": "1",
    }


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    import os

    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def item_seed(seed: int, item_id: Any) -> int:
    """The sampling seed of one item: a hash of the settings' ``seed`` and the item's id (31 bits),
    so an item draws the same tokens whichever batch, order or resumed run it comes in."""
    import hashlib

    return (
        int.from_bytes(hashlib.sha256(f"{int(seed)}/{item_id}".encode()).digest()[:4], "big") >> 1
    )


def _generate_vllm(
    model_path: str,
    prompts: list[str],
    settings: GenerationSettings,
    dtype: str | None,
    device: str = "cuda",
    cache: ItemCache | None = None,
    ids: Sequence[Any] | None = None,
    progress: bool = False,
    memory_share: float = VLLM_MEMORY_SHARE,
) -> list[str]:
    """vLLM generation on the same token rows as the HF path (the chat template through
    :func:`encode`, so no second BOS; prompts cut to the context with a warning) and the same
    decoding (:func:`kit.models.decoding.resolve_decoding`: the model's generation_config honoured
    or overridden as on the HF path), each request seeded by its item (:func:`item_seed`), one vLLM
    call for every item ``cache`` does not hold yet."""
    from transformers import AutoConfig

    decoding = resolve_decoding(model_path, settings)
    # refuses a generation_config vLLM cannot apply, before the engine starts
    decoding.vllm_kwargs(0)
    llm = vllm_engine(model_path, dtype, settings.seed, device, memory_share)
    from vllm import SamplingParams  # pyright: ignore[reportMissingImports]  (the vllm extra)

    tokenizer = llm.get_tokenizer()
    chat = use_chat(tokenizer, settings.chat)
    limit = context_length(AutoConfig.from_pretrained(model_path)) - settings.max_new_tokens
    rows = [
        truncate_left(
            encode(tokenizer, prompt_text(tokenizer, p, chat, settings.system_prompt)),
            limit,
            f"prompt {i}",
        )
        for i, p in enumerate(prompts)
    ]
    keys = list(range(len(rows))) if ids is None else list(ids)

    def compute(idx: list[int]) -> list[str]:
        params = [
            SamplingParams(**decoding.vllm_kwargs(item_seed(settings.seed, keys[i]))) for i in idx
        ]
        return [
            o.outputs[0].text
            for o in llm.generate([{"prompt_token_ids": rows[i]} for i in idx], params)
        ]

    return map_items(
        keys,
        compute,
        [list(range(len(rows)))],
        cache=cache,
        progress=progress,
        fingerprints=fingerprints(prompts),
        check=is_text,
    )
