"""HF config -> HookedTransformerConfig fields, read from the config (kit.models.architectures)."""

from __future__ import annotations

import inspect
import re

import pytest
from transformers import AutoConfig

from kit.models import architectures as arch
from kit.models import twin_specs


def test_every_causal_architecture_transformer_lens_converts_is_listed_or_refused_by_name():
    """The list is TransformerLens's own: every ``original_architecture`` its state-dict converter
    handles that is a causal LM (not BERT/T5/HuBERT/wav2vec) is either loaded or refused with a
    reason. A TransformerLens upgrade that adds one fails here until it is added."""
    from transformer_lens import loading_from_pretrained

    source = inspect.getsource(loading_from_pretrained.get_pretrained_state_dict)
    converted = set(re.findall(r'cfg\.original_architecture == "(\w+)"', source))
    non_causal = {
        "HubertModel",
        "HubertForCTC",
        "Wav2Vec2Model",
        "Wav2Vec2ForPreTraining",
        "BertForMaskedLM",
        "T5ForConditionalGeneration",
        "neel-solu-old",
        "mingpt",
    }
    causal = converted - non_causal
    assert len(causal) >= 24, causal
    assert causal <= set(arch.ARCHITECTURES.values()) | set(arch.REFUSED), causal - set(
        arch.ARCHITECTURES.values()
    )
    # ... and each loaded one has a twin
    twinned = {twin_specs.TWINS[a]["architectures"][0] for a in twin_specs.TWINS}
    assert set(arch.ARCHITECTURES.values()) <= twinned, set(arch.ARCHITECTURES.values()) - twinned


class _Config:
    """A bare config object (attributes only), as old and new transformers write them."""

    def __init__(self, **fields):
        self.__dict__.update(fields)


@pytest.mark.parametrize(
    "config, layer_type, expected",
    [
        (_Config(rope_theta=5e5), "full_attention", 5e5),  # transformers 4: top-level field
        # 5: flat
        (
            _Config(rope_parameters={"rope_theta": 1e5, "rope_type": "default"}),
            "full_attention",
            1e5,
        ),
        # 5: per layer type (Gemma-3): the global base
        (
            _Config(
                rope_parameters={
                    "full_attention": {"rope_theta": 1e6},
                    "sliding_attention": {"rope_theta": 1e4},
                }
            ),
            "full_attention",
            1e6,
        ),
        (
            _Config(
                rope_parameters={
                    "full_attention": {"rope_theta": 1e6},
                    "sliding_attention": {"rope_theta": 1e4},
                }
            ),
            "sliding_attention",
            1e4,
        ),
        # falls back
        (
            _Config(rope_parameters={"full_attention": {"rope_theta": 1e6}}),
            "sliding_attention",
            1e6,
        ),
        (_Config(), "full_attention", 10000.0),  # nothing said: the RoPE paper's default
    ],
)
def test_rope_theta_reads_every_layout(config, layer_type, expected):
    assert arch.rope_theta(config, layer_type) == expected


def test_rope_scaling_fields_and_refusals():
    llama3 = _Config(
        max_position_embeddings=131072,
        rope_parameters={
            "rope_type": "llama3",
            "rope_theta": 5e5,
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192,
        },
    )
    assert arch.rope_scaling(llama3) == dict(
        use_NTK_by_parts_rope=True,
        NTK_original_ctx_len=8192,
        NTK_by_parts_low_freq_factor=1.0,
        NTK_by_parts_high_freq_factor=4.0,
        NTK_by_parts_factor=8.0,
    )
    linear = _Config(
        rope_parameters={
            "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
            "sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
        }
    )
    assert arch.rope_scaling(linear) == {"rotary_scaling_factor": 8.0}
    assert arch.rope_scaling(linear, "sliding_attention") == {}
    yarn = arch.rope_scaling(
        _Config(
            rope_parameters={
                "rope_type": "yarn",
                "factor": 32.0,
                "rope_theta": 1.5e5,
                "original_max_position_embeddings": 4096,
            }
        )
    )
    # HF's mscale
    assert yarn["yarn_attention_factor"] == pytest.approx(0.1 * __import__("math").log(32.0) + 1.0)
    with pytest.raises(arch.UnsupportedArchitecture, match="rope_type='longrope'"):
        arch.rope_scaling(_Config(rope_parameters={"rope_type": "longrope", "rope_theta": 1e4}))


def test_gemma3_config_reads_both_rope_bases_where_a_flat_reader_sees_10000():
    config = AutoConfig.for_model("gemma3_text", num_hidden_layers=6, sliding_window=512)
    cfg = arch.tl_config(config)
    assert cfg["rotary_base"] == 1e6 and cfg["rotary_base_local"] == 1e4
    assert cfg["attn_types"] == ["local"] * 5 + ["global"] and cfg["window_size"] == 512
    assert getattr(config, "rope_theta", None) is None  # what a flat reader falls back from


def test_refused_variants_name_the_field():
    with pytest.raises(arch.UnsupportedArchitecture, match="remote code"):
        arch.tl_config(_Config(model_type="qwen", architectures=["QWenLMHeadModel"]))
    with pytest.raises(arch.UnsupportedArchitecture, match="word_embed_proj_dim=32"):
        arch.tl_config(
            AutoConfig.for_model(
                "opt", hidden_size=64, word_embed_proj_dim=32, num_attention_heads=4
            )
        )
    with pytest.raises(
        arch.UnsupportedArchitecture, match="OLMo-1 conversion has no grouped-query"
    ):
        arch.tl_config(
            AutoConfig.for_model(
                "olmo", num_attention_heads=4, num_key_value_heads=2, hidden_size=64
            )
        )
    with pytest.raises(arch.UnsupportedArchitecture, match="attention_bias"):
        arch.tl_config(AutoConfig.for_model("llama", attention_bias=True))
    with pytest.raises(arch.UnsupportedArchitecture, match="model_type 'mamba'"):
        arch.tl_config(_Config(model_type="mamba", architectures=["MambaForCausalLM"]))


def test_n_ctx_is_capped_unless_asked():
    config = AutoConfig.for_model("llama", max_position_embeddings=131072)
    assert arch.tl_config(config)["n_ctx"] == arch.N_CTX_CAP
    assert arch.tl_config(config, n_ctx=16384)["n_ctx"] == 16384
    assert (
        arch.tl_config(AutoConfig.for_model("llama", max_position_embeddings=256))["n_ctx"] == 256
    )


def test_capabilities_of_dense_and_moe():
    assert (
        not arch.capabilities("llama").refused
        and "MUI neuron scores" in arch.capabilities("llama").works
    )
    moe = arch.capabilities("mixtral")
    assert set(moe.refused) == set(arch.NEURON_METHODS) and "logits" in moe.works
    assert "mixture-of-experts" in moe.summary() and moe.summary().count("because") == 1
