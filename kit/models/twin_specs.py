"""What each tiny random twin is: its Hugging Face config fields (:data:`TWINS`), the shared tiny
sizes, the tokenizer training corpus and special tokens, and the chat template.

Data only: :mod:`kit.models.twins` builds the directories from these specs (and keys its cache
directory by them) and resolves ``twin/<arch>`` names to those directories.
"""

from __future__ import annotations

from typing import Any

# Shared tiny sizes: 2 layers, d_model 64, 4 query heads of 16, 2 KV heads (GQA), d_mlp 128.
_D, _L, _H, _KV, _DH, _MLP, _CTX = 64, 2, 4, 2, 16, 128, 256
_GATED = dict(
    hidden_size=_D,
    num_hidden_layers=_L,
    num_attention_heads=_H,
    num_key_value_heads=_KV,
    head_dim=_DH,
    intermediate_size=_MLP,
    max_position_embeddings=_CTX,
    tie_word_embeddings=False,
)

# Gemma-3's per-layer-type RoPE: a global base of 1e6 with linear scaling, 1e4 on sliding layers
# (the trap: a reader of the flat rope_theta sees neither); query_pre_attn_scalar != head_dim.
_GEMMA3_TEXT = dict(
    model_type="gemma3_text",
    architectures=["Gemma3ForCausalLM"],
    hidden_activation="gelu_pytorch_tanh",
    query_pre_attn_scalar=24,
    sliding_window=8,
    layer_types=["sliding_attention", "full_attention"],
    rope_parameters={
        "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
        "sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
    },
    **{**_GATED, "tie_word_embeddings": True},
)

TWINS: dict[str, dict[str, Any]] = {
    # model_type -> config fields (vocab and special-token ids are filled in from the tokenizer).
    "llama": dict(
        model_type="llama",
        architectures=["LlamaForCausalLM"],
        hidden_act="silu",
        rope_parameters={"rope_theta": 500000.0, "rope_type": "default"},
        **_GATED,
    ),
    "qwen2": dict(
        model_type="qwen2", architectures=["Qwen2ForCausalLM"], hidden_act="silu", **_GATED
    ),
    "gemma2": dict(
        model_type="gemma2",
        architectures=["Gemma2ForCausalLM"],
        hidden_activation="gelu_pytorch_tanh",
        query_pre_attn_scalar=_DH,
        sliding_window=8,
        attn_logit_softcapping=50.0,
        final_logit_softcapping=30.0,
        layer_types=["sliding_attention", "full_attention"],
        **{**_GATED, "tie_word_embeddings": True},
    ),
    "mistral": dict(
        model_type="mistral",
        architectures=["MistralForCausalLM"],
        hidden_act="silu",
        sliding_window=None,
        **_GATED,
    ),
    # OLMo-2 7B has as many KV heads as query heads (and TransformerLens's conversion assumes it).
    "olmo2": dict(
        model_type="olmo2",
        architectures=["Olmo2ForCausalLM"],
        hidden_act="silu",
        **{**{k: v for k, v in _GATED.items() if k != "head_dim"}, "num_key_value_heads": _H},
    ),
    "gpt2": dict(
        model_type="gpt2",
        architectures=["GPT2LMHeadModel"],
        n_embd=_D,
        n_layer=_L,
        n_head=_H,
        n_inner=_MLP,
        n_positions=_CTX,
        activation_function="gelu_new",
    ),
    # Every other causal architecture TransformerLens 3.9 converts (kit.models.architectures), at
    # the same tiny size. Windows of 8 and per-layer-type RoPE make the tests' 30-token inputs
    # exercise sliding attention and both RoPE bases; scaled RoPE uses a short original context for
    # the same reason.
    "olmo2-gqa": dict(
        model_type="olmo2",
        architectures=["Olmo2ForCausalLM"],
        hidden_act="silu",
        **{k: v for k, v in _GATED.items() if k != "head_dim"},
    ),
    "llama3": dict(
        model_type="llama",
        architectures=["LlamaForCausalLM"],
        hidden_act="silu",
        rope_parameters={
            "rope_type": "llama3",
            "rope_theta": 500000.0,
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 32,
        },
        **_GATED,
    ),
    "gemma": dict(
        model_type="gemma",
        architectures=["GemmaForCausalLM"],
        hidden_activation="gelu_pytorch_tanh",
        **{**_GATED, "tie_word_embeddings": True},
    ),
    "gemma3": _GEMMA3_TEXT,
    "qwen3": dict(
        model_type="qwen3", architectures=["Qwen3ForCausalLM"], hidden_act="silu", **_GATED
    ),
    "phi3": dict(
        model_type="phi3",
        architectures=["Phi3ForCausalLM"],
        hidden_act="silu",
        sliding_window=8,
        **{k: v for k, v in _GATED.items() if k != "head_dim"},
    ),
    "phi": dict(
        model_type="phi",
        architectures=["PhiForCausalLM"],
        hidden_act="gelu_new",
        hidden_size=_D,
        num_hidden_layers=_L,
        num_attention_heads=_H,
        intermediate_size=_MLP,
        max_position_embeddings=_CTX,
        rope_parameters={
            "rope_type": "default",
            "rope_theta": 10000.0,
            "partial_rotary_factor": 0.5,
        },
    ),
    "olmo": dict(
        model_type="olmo",
        architectures=["OlmoForCausalLM"],
        hidden_act="silu",
        clip_qkv=8.0,
        **{**{k: v for k, v in _GATED.items() if k != "head_dim"}, "num_key_value_heads": _H},
    ),
    "olmo3": dict(
        model_type="olmo3",
        architectures=["Olmo3ForCausalLM"],
        hidden_act="silu",
        sliding_window=8,
        layer_types=["sliding_attention", "full_attention"],
        rope_parameters={
            "full_attention": {
                "rope_type": "yarn",
                "factor": 8.0,
                "rope_theta": 5e5,
                "original_max_position_embeddings": 32,
                "attention_factor": 1.2,
            },
            "sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
        },
        **{k: v for k, v in _GATED.items() if k != "head_dim"},
    ),
    "apertus": dict(
        model_type="apertus",
        architectures=["ApertusForCausalLM"],
        hidden_act="xielu",
        rope_parameters={
            "rope_type": "llama3",
            "rope_theta": 12e6,
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 32,
        },
        **{k: v for k, v in _GATED.items() if k != "head_dim"},
    ),
    "gpt_neox": dict(
        model_type="gpt_neox",
        architectures=["GPTNeoXForCausalLM"],
        hidden_act="gelu",
        hidden_size=_D,
        num_hidden_layers=_L,
        num_attention_heads=_H,
        intermediate_size=_MLP,
        max_position_embeddings=_CTX,
        tie_word_embeddings=False,
        rope_parameters={
            "rope_type": "default",
            "rope_theta": 10000.0,
            "partial_rotary_factor": 0.25,
        },
    ),
    "gptj": dict(
        model_type="gptj",
        architectures=["GPTJForCausalLM"],
        n_embd=_D,
        n_layer=_L,
        n_head=_H,
        n_inner=_MLP,
        n_positions=_CTX,
        rotary_dim=8,
        activation_function="gelu_new",
        tie_word_embeddings=False,
    ),
    "gpt_neo": dict(
        model_type="gpt_neo",
        architectures=["GPTNeoForCausalLM"],
        hidden_size=_D,
        num_layers=_L,
        num_heads=_H,
        intermediate_size=_MLP,
        max_position_embeddings=_CTX,
        window_size=8,
        attention_types=[[["global", "local"], 1]],
        activation_function="gelu_new",
    ),
    "opt": dict(
        model_type="opt",
        architectures=["OPTForCausalLM"],
        hidden_size=_D,
        num_hidden_layers=_L,
        num_attention_heads=_H,
        ffn_dim=_MLP,
        max_position_embeddings=_CTX,
        word_embed_proj_dim=_D,
        do_layer_norm_before=True,
        activation_function="relu",
    ),
    "bloom": dict(
        model_type="bloom",
        architectures=["BloomForCausalLM"],
        hidden_size=_D,
        n_layer=_L,
        n_head=_H,
    ),
    "mixtral": dict(
        model_type="mixtral",
        architectures=["MixtralForCausalLM"],
        hidden_act="silu",
        num_local_experts=4,
        num_experts_per_tok=2,
        **_GATED,
    ),
    "olmoe": dict(
        model_type="olmoe",
        architectures=["OlmoeForCausalLM"],
        hidden_act="silu",
        num_experts=4,
        num_experts_per_tok=2,
        **{k: v for k, v in _GATED.items() if k != "head_dim"},
    ),
    "gpt_oss": dict(
        model_type="gpt_oss",
        architectures=["GptOssForCausalLM"],
        num_local_experts=4,
        num_experts_per_tok=2,
        sliding_window=8,
        layer_types=["sliding_attention", "full_attention"],
        rope_parameters={
            "rope_type": "yarn",
            "factor": 8.0,
            "rope_theta": 150000.0,
            "beta_fast": 32.0,
            "beta_slow": 1.0,
            "truncate": False,
            "original_max_position_embeddings": 32,
        },
        **_GATED,
    ),
    # Gemma-3 4B+ is multimodal (Gemma3ForConditionalGeneration): its text model converts, a tiny
    # SigLIP tower stands in for the vision model (never read by kit).
    "gemma3-mm": dict(
        model_type="gemma3",
        architectures=["Gemma3ForConditionalGeneration"],
        mm_tokens_per_image=4,
        text_config={k: v for k, v in _GEMMA3_TEXT.items() if k != "architectures"},
        vision_config=dict(
            model_type="siglip_vision_model",
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=1,
            num_attention_heads=2,
            image_size=28,
            patch_size=14,
        ),
    ),
    "bert": dict(
        model_type="bert",
        architectures=["BertModel"],
        hidden_size=_D,
        num_hidden_layers=_L,
        num_attention_heads=_H,
        intermediate_size=_MLP,
        max_position_embeddings=_CTX,
    ),
    "roberta": dict(
        model_type="roberta",
        architectures=["RobertaModel"],
        hidden_size=_D,
        num_hidden_layers=_L,
        num_attention_heads=_H,
        intermediate_size=_MLP,
        max_position_embeddings=_CTX + 2,
    ),
}
"""The twins, keyed by their ``twin/<arch>`` name."""

ENCODER_TWINS = ("bert", "roberta")
TWIN_D_SAE = 128
VERSION = 1  # bump when the build changes: the cache directory is keyed by it and the specs

CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}{{ eos_token }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
"""A minimal chat template (Zephyr-like): enough to exercise ``apply_chat_template``."""

_CORPUS = """\
Question: Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May.
How many clips did Natalia sell altogether in April and May? Answer: 72. The answer is 72.
Which of the following is the best way to keep warm in winter? (A) wear a coat (B) open a window.
An astronaut on the moon drops a feather and a hammer at the same time. Both reach the ground together.
def f(x): return x * 2 + 1
print(f(3)) # 7
The quick brown fox jumps over the lazy dog. She said that they would go home after the game.
Let's think step by step. First, add the numbers: 12 + 30 = 42. Then subtract 7 to get 35.
True and not False or ( True ) is True. Sort the words: apple banana cherry. [ ( ) ] < > { }
0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 25 30 40 50 60 70 80 90 100 1000
"""  # noqa: E501 (tokenizer training text: its lines are data)
# Numbers 0-255 as whole tokens (alone and after a space), as GPT-2's and Llama-3's tokenizers have
# them: the tiny-world tasks' answers are single tokens.
_CORPUS += (
    " ".join(str(n) for n in range(256)) + "\n" + "\n".join(str(n) for n in range(256)) + "\n"
) * 2
_CAUSAL_SPECIALS = ["<unk>", "<s>", "</s>", "<pad>", "<|system|>", "<|user|>", "<|assistant|>"]
_ENCODER_SPECIALS = {
    "bert": ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"],
    "roberta": ["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
}
_VOCAB = 1024
