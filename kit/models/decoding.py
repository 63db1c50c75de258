"""The decoding both generation backends run: kit's settings plus the model's ``generation_config``.

``transformers``' ``generate`` applies the model's ``generation_config.json`` for every field a call
does not set (a ``repetition_penalty`` of 1.3, extra stop ids...); vLLM given explicit
``SamplingParams`` applies none of it. :func:`resolve_decoding` reads the config once and returns
one :class:`Decoding` that both backends are handed explicitly:

- greedy or sampling, temperature, top-k, top-p: kit's
  :class:`~kit.models.generate.GenerationSettings` on both (the model's sampling defaults are not
  used: the papers fix their decoding);
- ``repetition_penalty``: the model's unless the settings give one (then that, on both);
- stop ids (``eos_token_id``, one or several) and ``min_new_tokens``: the model's, on both;
- ``min_p`` when sampling: the model's, on both;
- any other field that changes which tokens come out (``no_repeat_ngram_size``, ``bad_words_ids``,
  ``num_beams`` > 1, ``suppress_tokens``, ``typical_p`` when sampling...) has no vLLM equivalent:
  it is listed in :attr:`Decoding.unsupported`; transformers applies it, and vLLM is refused (the
  ``auto`` backend picks transformers, saying why).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

INERT = {
    "repetition_penalty": 1.0,
    "num_beams": 1,
    "num_beam_groups": 1,
    "no_repeat_ngram_size": 0,
    "encoder_no_repeat_ngram_size": 0,
    "encoder_repetition_penalty": 1.0,
    "min_length": 0,
    "min_new_tokens": 0,
    "remove_invalid_values": False,
    "renormalize_logits": False,
    "token_healing": False,
    "diversity_penalty": 0.0,
    "guidance_scale": 1.0,
    "penalty_alpha": 0.0,
}
"""generation_config values that change nothing (None always changes nothing)."""
NO_EFFECT = frozenset(
    {
        "transformers_version",
        "_from_model_config",
        "max_length",
        "max_new_tokens",
        "use_cache",
        "cache_implementation",
        "cache_config",
        "max_cache_len",
        "pad_token_id",
        "bos_token_id",
        "decoder_start_token_id",
        "output_attentions",
        "output_hidden_states",
        "output_scores",
        "output_logits",
        "return_dict_in_generate",
        "num_return_sequences",
        "compile_config",
        "disable_compile",
        "low_memory",
        "prefill_chunk_size",
        "length_penalty",
        "early_stopping",  # the last two act only with num_beams > 1
        "is_assistant",
        "num_assistant_tokens",
        "num_assistant_tokens_schedule",
        "assistant_confidence_threshold",
        "prompt_lookup_num_tokens",
        "max_matching_ngram_size",
        "assistant_early_exit",
        "assistant_lookbehind",
        "target_lookbehind",
        "assistant_ensemble_weight",
        "speculation_type",
        "use_mtp",  # assisted decoding: same tokens
        "continuous_batching_config",
    }
)
"""generation_config fields that do not change which tokens are generated (kit sets the length)."""
KIT_DECIDES = frozenset({"do_sample", "temperature", "top_k", "top_p"})
"""Set by kit's GenerationSettings on both backends, whatever the model's config says."""
SAMPLING_ONLY = frozenset({"min_p", "typical_p", "epsilon_cutoff", "eta_cutoff", "top_h"})
"""Logit warpers: transformers applies them only when sampling."""
MAPPED = frozenset({"repetition_penalty", "eos_token_id", "min_new_tokens", "min_p"})
"""Fields handed to both backends explicitly."""


@dataclass(frozen=True)
class Decoding:
    """What both backends generate with (module doc). Built by :func:`resolve_decoding`."""

    max_new_tokens: int
    do_sample: bool
    temperature: float
    top_k: int
    top_p: float
    repetition_penalty: float
    """1.0 = none."""
    eos_token_ids: tuple[int, ...]
    """The model's stop ids (generation_config, else the model config); () = the tokenizer's
    only."""
    min_new_tokens: int
    min_p: float
    """0.0 = none; used only when sampling."""
    unsupported: tuple[str, ...]
    """generation_config fields that act here and that vLLM cannot apply (``name=value``)."""

    def hf_kwargs(self, pad_token_id: int | None) -> dict[str, Any]:
        """Keyword arguments of ``transformers``' ``generate`` (explicit, so the two backends
        agree)."""
        kw: dict[str, Any] = dict(
            max_new_tokens=self.max_new_tokens,
            do_sample=self.do_sample,
            pad_token_id=pad_token_id,
            use_cache=True,
            repetition_penalty=self.repetition_penalty,
        )
        if self.eos_token_ids:
            kw["eos_token_id"] = list(self.eos_token_ids)
        if self.min_new_tokens:
            kw["min_new_tokens"] = self.min_new_tokens
        if self.do_sample:
            kw.update(temperature=self.temperature, top_k=self.top_k, top_p=self.top_p)
            if self.min_p:
                kw["min_p"] = self.min_p
        # a generation_config may carry sampling defaults: greedy must not warn about them or use
        # them
        else:
            kw.update(temperature=None, top_k=None, top_p=None)
        return kw

    def vllm_kwargs(self, seed: int) -> dict[str, Any]:
        """Keyword arguments of ``vllm.SamplingParams`` for one request seeded with ``seed``."""
        if self.unsupported:
            raise ValueError(
                f"vLLM cannot apply the model's generation_config {', '.join(self.unsupported)} "
                "(transformers does): use backend='hf'"
            )
        kw: dict[str, Any] = dict(
            max_tokens=self.max_new_tokens, seed=seed, repetition_penalty=self.repetition_penalty
        )
        if self.eos_token_ids:
            kw["stop_token_ids"] = list(self.eos_token_ids)
        if self.min_new_tokens:
            kw["min_tokens"] = self.min_new_tokens
        if self.do_sample:  # vLLM: top_k -1 = every token (transformers: 0)
            kw.update(temperature=self.temperature, top_k=self.top_k or -1, top_p=self.top_p)
            if self.min_p:
                kw["min_p"] = self.min_p
        else:
            kw["temperature"] = 0.0  # greedy
        return kw


def generation_config(model_path: str | Path):
    """The model's ``transformers.GenerationConfig``: its ``generation_config.json``, else the one
    transformers derives from ``config.json`` (what ``generate`` would use)."""
    from transformers import AutoConfig, GenerationConfig

    if (Path(model_path) / "generation_config.json").is_file():
        return GenerationConfig.from_pretrained(model_path)
    return GenerationConfig.from_model_config(AutoConfig.from_pretrained(model_path))


def resolve_decoding(model_path: str | Path, settings) -> Decoding:
    """The :class:`Decoding` of kit ``settings`` (a ``GenerationSettings``) on the model at
    ``model_path`` (a Hugging Face directory)."""
    config = generation_config(model_path)
    values = {k: v for k, v in config.to_dict().items() if v is not None}
    sampling = bool(settings.do_sample)
    unsupported = []
    for name, value in sorted(values.items()):
        if name in NO_EFFECT or name in KIT_DECIDES or INERT.get(name, object()) == value:
            continue
        if name in SAMPLING_ONLY and not sampling:
            continue
        if name in MAPPED and (name != "min_p" or sampling):
            continue
        unsupported.append(f"{name}={value!r}")
    eos = values.get("eos_token_id")
    eos_ids = (
        tuple(int(e) for e in (eos if isinstance(eos, (list, tuple)) else [eos]))
        if eos is not None
        else ()
    )
    penalty = (
        settings.repetition_penalty
        if settings.repetition_penalty is not None
        else values.get("repetition_penalty", 1.0)
    )
    return Decoding(
        max_new_tokens=settings.max_new_tokens,
        do_sample=sampling,
        temperature=settings.temperature,
        top_k=settings.top_k,
        top_p=settings.top_p,
        repetition_penalty=float(penalty),
        eos_token_ids=eos_ids,
        min_new_tokens=int(values.get("min_new_tokens") or 0),
        min_p=float(values.get("min_p") or 0.0) if sampling else 0.0,
        unsupported=tuple(unsupported),
    )
