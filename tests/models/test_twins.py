"""Twins: real HF directories of real architectures, loaded by kit with raw weights, checked
against references computed directly on the ``transformers`` model."""

from __future__ import annotations

import json

import pytest
import torch

import kit
from kit.models import twin_specs, twins
from kit.models.architectures import MOE as MOE_TYPES
from kit.shortcut import patching as pt

CAUSAL = [a for a in twin_specs.TWINS if a not in twin_specs.ENCODER_TWINS]
MOE = [a for a in CAUSAL if twin_specs.TWINS[a]["model_type"] in MOE_TYPES]
DENSE = [a for a in CAUSAL if a not in MOE]
TEXT = "Question: 12 + 30 = ? Let's think step by step. The answer is 42, said the astronaut."


@pytest.fixture(scope="module")
def hf_models():
    """The ``transformers`` causal twins, eager attention (the same kernels TransformerLens
    uses)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = {}
    for arch in CAUSAL:
        path = twins.twin_path(arch)
        out[arch] = (
            AutoModelForCausalLM.from_pretrained(path, attn_implementation="eager").eval(),
            AutoTokenizer.from_pretrained(path),
        )
    return out


_LAYERS = (
    "model.layers",
    "model.language_model.layers",
    "transformer.h",
    "gpt_neox.layers",
    "model.decoder.layers",
)


def _layers(hf) -> list:
    """The decoder layers of a ``transformers`` causal LM, whatever its module layout."""
    for path in _LAYERS:
        obj = hf
        for attr in path.split("."):
            obj = getattr(obj, attr, None)
        if obj is not None:
            return list(obj)
    raise AttributeError(f"no decoder layers found in {type(hf).__name__}")


def _down(layer):
    """The module whose input is the MLP neurons' activation (down_proj and its per-architecture
    names)."""
    mlp = getattr(layer, "mlp", layer)  # OPT keeps fc2 on the layer itself
    for attr in ("down_proj", "c_proj", "fc_out", "dense_4h_to_h", "fc2"):
        if hasattr(mlp, attr):
            return getattr(mlp, attr)
    raise AttributeError(f"no MLP output projection in {type(layer).__name__}")


def _w_out_rows(hf, arch: str, layer: int) -> torch.Tensor:
    """``[d_mlp, d_model]``: what each MLP neuron writes, read from the HF module itself."""
    down = _down(_layers(hf)[layer])
    # Conv1D stores [in, out]
    return down.weight if type(down).__name__ == "Conv1D" else down.weight.T


def _reference_scores(hf, arch: str, tokens: torch.Tensor) -> torch.Tensor:
    """Eq. 3 computed on the transformers model: ``a_i^l(p) * (W_out^l[i] . lm_head[y_{p+1}])`` with
    ``a`` the input of down_proj (c_proj, fc_out, dense_4h_to_h, fc2) captured by a plain torch
    hook. ``[batch, pos-1, layer, d_mlp]``."""
    layers = _layers(hf)
    acts = {}
    handles = [
        _down(layer).register_forward_hook(
            lambda m, inp, out, L=L: acts.__setitem__(L, inp[0].detach())
        )
        for L, layer in enumerate(layers)
    ]
    try:
        with torch.no_grad():
            hf(tokens)
    finally:
        for h in handles:
            h.remove()
    W_U = hf.get_output_embeddings().weight  # [vocab, d_model], raw (its bias, if any, is not W_U)
    target = W_U[tokens[:, 1:]]  # [batch, pos-1, d_model]
    out = []
    for L in range(len(layers)):
        proj = torch.einsum("bpd,nd->bpn", target, _w_out_rows(hf, arch, L))  # W_out[i] . W_U[:, y]
        a = acts[L].reshape(*tokens.shape, -1)  # OPT flattens [batch * pos, d_mlp] before fc2
        out.append(a[:, :-1] * proj)
    return torch.stack(out, dim=2)


def test_twins_are_real_hf_directories_with_chat_templates():
    for arch in twin_specs.TWINS:
        path = twins.twin_path(arch)
        names = {p.name for p in path.iterdir()}
        assert {
            "config.json",
            "model.safetensors",
            "tokenizer.json",
            "tokenizer_config.json",
        } <= names, names
        assert (
            json.loads((path / "config.json").read_text())["model_type"]
            == twin_specs.TWINS[arch]["model_type"]
        )
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(twins.twin_path("llama"))
    text = tok.apply_chat_template(
        [{"role": "user", "content": "2+2?"}], tokenize=False, add_generation_prompt=True
    )
    assert text == "<|user|>\n2+2?</s>\n<|assistant|>\n"


def test_twin_build_is_deterministic(tmp_path):
    for arch in ("llama", "bert"):  # BPE and WordPiece tokenizers
        a, b = (
            twins.build_twin(arch, root=tmp_path / "a"),
            twins.build_twin(arch, root=tmp_path / "b"),
        )
        for name in ("model.safetensors", "tokenizer.json", "config.json"):
            assert (a / name).read_bytes() == (b / name).read_bytes(), (
                f"{arch}/{name} differs between two builds"
            )


def test_unknown_twin_names_the_allowed_ones():
    with pytest.raises(ValueError, match="twin/llama"):
        kit.load_model("twin/gpt-17")
    with pytest.raises(ValueError, match="blocks.0.hook_resid_post"):
        kit.load_sae("twin-sae/llama/blocks.9.hook_resid_post")


@pytest.mark.parametrize("arch", CAUSAL)
def test_load_model_from_local_dir_matches_transformers(arch, hf_models):
    hf, tok = hf_models[arch]
    # a plain local directory, not the twin/ name
    model = kit.load_model(str(twins.twin_path(arch)))
    tokens = tok([TEXT], return_tensors="pt")["input_ids"]
    assert tokens.shape[1] > 16  # longer than Gemma-2's sliding window (8): the window is exercised
    with torch.no_grad():
        got, want = model(tokens), hf(tokens).logits
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)
    assert torch.equal(kit.models.tl.unembed(model), hf.get_output_embeddings().weight.T), (
        "W_U is not the raw lm_head"
    )
    if arch in MOE:
        return
    for L in range(model.cfg.n_layers):
        assert torch.equal(kit.models.tl.mlp_out(model, L), _w_out_rows(hf, arch, L)), (
            "W_out is not the raw down_proj"
        )


def test_gemma3_global_layers_use_the_nested_global_rope_base(hf_models):
    """The trap: Gemma-3's RoPE bases live in ``rope_parameters[layer type]``; a reader of the flat
    ``rope_theta`` (TransformerLens's ``_get_rope_theta``) gets 10000 for the global layers. The
    twin tells the two apart: with the sliding base on every layer its logits leave
    transformers'."""
    from transformers import AutoConfig

    hf, tok = hf_models["gemma3"]
    cfg = kit.models.tl.hf_to_tl_config(AutoConfig.from_pretrained(twins.twin_path("gemma3")))
    assert (cfg["rotary_base"], cfg["rotary_base_local"], cfg["rotary_scaling_factor"]) == (
        1e6,
        1e4,
        8.0,
    )
    assert cfg["attn_types"] == ["local", "global"] and cfg["window_size"] == 8
    tokens = tok([TEXT], return_tensors="pt")["input_ids"]
    wrong = kit.load_model("twin/gemma3")
    for block in wrong.blocks:  # what a flat reader would build: 1e4 for every layer, no scaling
        attn = block.attn
        sin, cos = attn.calculate_sin_cos_rotary(attn.cfg.rotary_dim, attn.cfg.n_ctx, base=1e4)
        attn.rotary_sin.copy_(sin)
        attn.rotary_cos.copy_(cos)
    with torch.no_grad():
        gap = (wrong(tokens) - hf(tokens).logits).abs().max().item()
    assert gap > 1e-2, f"the twin cannot tell the global RoPE base apart (max gap {gap})"


@pytest.mark.parametrize("arch", MOE)
def test_moe_twins_load_and_refuse_neuron_methods_naming_why(arch, hf_models):
    _, tok = hf_models[arch]
    with pytest.warns(UserWarning, match="mixture-of-experts"):
        model = kit.load_model(f"twin/{arch}")
    assert (
        "MUI neuron scores" in model.kit_capabilities.refused
        and "logits" in model.kit_capabilities.works
    )
    tokens = tok([TEXT], return_tensors="pt")["input_ids"]
    with pytest.raises(NotImplementedError, match="mixture-of-experts MLP has no single W_out"):
        kit.mui.neuron_scores(model, tokens)
    with pytest.raises(NotImplementedError, match="experts"):
        kit.models.tl.check_hooks(model, ["blocks.0.mlp.hook_post"])
    # residual hooks work
    _, cache = kit.models.tl.run_with_cache(model, tokens, ["blocks.1.hook_resid_post"])
    assert cache["blocks.1.hook_resid_post"].shape == (1, tokens.shape[1], model.cfg.d_model)


@pytest.mark.parametrize("arch", DENSE)
def test_mui_scores_match_raw_weight_reference(arch, hf_models):
    hf, tok = hf_models[arch]
    model = kit.load_model(f"twin/{arch}")
    tokens = tok([TEXT, TEXT[::-1][:40]], return_tensors="pt", padding=True)["input_ids"]
    got = kit.mui.neuron_scores(model, tokens)
    ref = _reference_scores(hf, arch, tokens)
    torch.testing.assert_close(got, ref, atol=1e-4, rtol=1e-4)
    # The key neurons (per-token, per-layer top-k) are the same sets.
    k = 3
    assert torch.equal(
        got.topk(k, dim=-1).indices.sort(-1).values, ref.topk(k, dim=-1).indices.sort(-1).values
    )


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_processed_weights_only_when_asked(arch, hf_models):
    hf, tok = hf_models[arch]
    raw = kit.load_model(f"twin/{arch}")
    proc = kit.load_model(f"twin/{arch}", process_weights=True)
    tokens = tok([TEXT], return_tensors="pt")["input_ids"]
    with torch.no_grad():  # same predictions (centring the unembedding shifts logits by a constant)
        torch.testing.assert_close(
            proc(tokens).log_softmax(-1), raw(tokens).log_softmax(-1), atol=1e-4, rtol=1e-4
        )
    assert not torch.allclose(
        kit.mui.neuron_scores(proc, tokens), kit.mui.neuron_scores(raw, tokens), atol=1e-3
    ), "processing left W_out . W_U unchanged: is process_weights reaching TransformerLens?"


@pytest.mark.parametrize("dtype", ["bf16", "float16"])
def test_dtypes(dtype):
    model = kit.load_model("twin/qwen2", dtype=dtype)
    assert (
        str(kit.models.tl.unembed(model).dtype)
        == "torch." + {"bf16": "bfloat16", "float16": "float16"}[dtype]
    )
    with pytest.raises(ValueError, match="allowed: float32"):
        kit.load_model("twin/qwen2", dtype="int3")


@pytest.mark.parametrize("arch", ["llama", "gemma2"])
def test_identity_patching_on_a_twin_pair(arch, hf_models):
    _, tok = hf_models[arch]
    a, b = kit.load_model(f"twin/{arch}"), kit.load_model(f"twin/{arch}")  # two loads: a real pair
    enc = tok(["The answer is", "Question: 12 + 30 ="], return_tensors="pt", padding=True)
    tokens, lengths = enc["input_ids"], enc["attention_mask"].sum(1)
    plain = pt.generate(a, tokens, 6, lengths=lengths)
    neurons = [(0, 1), (1, 5), (1, 127)]
    assert torch.equal(pt.patched_generate(a, b, tokens, neurons, 6, lengths=lengths), plain)
    # (Gemma-2's tied embedding makes its greedy output copy the input: no signal)
    if arch == "llama":
        # same shape, other weights: patching must change the output
        other = kit.load_model("twin/qwen2")
        every = [(L, i) for L in range(2) for i in range(128)]
        assert not torch.equal(
            pt.patched_generate(a, other, tokens, every, 6, lengths=lengths), plain
        )


@pytest.mark.parametrize("arch", twin_specs.ENCODER_TWINS)
def test_encoder_twins_load_as_encoders(arch):
    enc = kit.load_model(f"twin/{arch}")
    assert type(enc).__name__ == "Encoder" and enc.d_mlp == 128
    acts = enc.word_activations(
        [["The", "astronaut", "drops", "feathers"]], "blocks.1.mlp.hook_post"
    )
    assert acts.shape == (4, 128) and torch.isfinite(acts).all()


def test_twin_saes_load_through_sae_lens():
    sae = kit.load_sae("twin-sae/llama/blocks.1.hook_resid_post")
    assert (
        sae.cfg.metadata.hook_name == "blocks.1.hook_resid_post"
        and sae.cfg.d_sae == twin_specs.TWIN_D_SAE
    )
    # a plain directory
    same = kit.load_sae(str(twins.sae_path("llama", "blocks.1.hook_resid_post")))
    assert torch.equal(sae.W_enc, same.W_enc)


def test_revision_twins_are_seeded_variants_of_the_same_architecture(tmp_path):
    a, b = twins.twin_path("olmo2", revision="step1"), twins.twin_path("olmo2", revision="step2")
    base = twins.twin_path("olmo2")
    assert a.name == "olmo2@step1" and a.parent == base.parent
    assert json.loads((a / "config.json").read_text()) == json.loads(
        (base / "config.json").read_text()
    )
    assert (a / "tokenizer.json").read_bytes() == (base / "tokenizer.json").read_bytes()
    weights = {p: (p / "model.safetensors").read_bytes() for p in (a, b, base)}
    assert len(set(weights.values())) == 3  # three different models
    again = twins.build_twin(
        "olmo2", root=tmp_path, seed=twins.revision_seed("step1"), revision="step1"
    )
    assert (again / "model.safetensors").read_bytes() == weights[a]  # reproducible
    assert not (tmp_path / "olmo2@step1-sae").exists()
    assert (
        twins.revision_seed("step1") == twins.revision_seed("step1") != twins.revision_seed("step2")
    )
    for bad in ("", None):
        with pytest.raises(ValueError, match="non-empty"):
            twins.revision_seed(bad)
    with pytest.raises(ValueError, match="cannot contain '/'"):
        twins.twin_path("olmo2", revision="a/b")


def test_perturbed_twin_revisions_change_only_their_seeded_neurons():
    """``twin/llama@perturbed-<seed>``: a sparse fine-tune stand-in (notebook 03's dryrun) that
    changes exactly the seeded MLP neurons of ``twin/llama`` and nothing else; other seeds, other
    neurons."""
    from kit.shortcut import variants

    base = kit.load_model("twin/llama")
    a, b = (
        kit.load_model("twin/llama@perturbed-1"),
        kit.load_model("twin/llama", revision="perturbed-2"),
    )
    assert variants.changed_between(a, base) == set(twins.perturbed_neurons("llama", 1))
    assert variants.changed_between(b, base) == set(twins.perturbed_neurons("llama", 2))
    assert twins.perturbed_neurons("llama", 1) != twins.perturbed_neurons("llama", 2)
    assert len(twins.perturbed_neurons("llama", 1)) == 2 * round(twins.PERTURB_FRACTION * 128)
    for name, pa in a.named_parameters():  # attention, embeddings, norms: identical
        if ".mlp." not in name:
            assert torch.equal(pa, dict(base.named_parameters())[name]), name
    with pytest.raises(ValueError, match="perturbed-<seed>"):
        twins.perturbed_path("llama", "v2")
    with pytest.raises(ValueError, match="causal twins only"):
        twins.perturbed_path("bert", "perturbed-1")
