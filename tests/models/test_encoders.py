"""kit.models.encoders: sites map onto the right HF tensors, words are means of their subtokens."""

from __future__ import annotations

import pytest
import torch

from kit.models.encoders import (
    Encoder,
    UnknownSiteError,
    decoder_word_activations,
    load_encoder,
    minilm_path,
)


@pytest.fixture(scope="module")
def tiny_encoder() -> Encoder:
    """A 2-layer random BERT with MiniLM's (offline) tokenizer: milliseconds per forward."""
    from transformers import AutoTokenizer, BertConfig, BertModel

    torch.manual_seed(0)
    tok = AutoTokenizer.from_pretrained(minilm_path(), local_files_only=True)
    cfg = BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    return Encoder(name="tiny-bert", model=BertModel(cfg).eval(), tokenizer=tok)


TEXTS = [
    "The unbelievably quick fox jumped.",
    "Hi",
    "Tokenization splits rare words into pieces here.",
]


def test_shapes_and_sites(tiny_encoder):
    e = tiny_encoder
    assert (e.n_layers, e.d_model, e.d_mlp) == (2, 32, 64)
    assert "blocks.1.mlp.hook_post" in e.sites and "hook_embed" in e.sites
    assert (
        e.site_width("blocks.0.mlp.hook_post") == 64
        and e.site_width("blocks.1.hook_resid_post") == 32
    )


@pytest.mark.parametrize(
    "bad", ["blocks.2.hook_resid_post", "blocks.0.hook_mlp_out", "resid", "blocks.x.mlp.hook_post"]
)
def test_unknown_site_lists_allowed(tiny_encoder, bad):
    with pytest.raises(UnknownSiteError, match="allowed"):
        tiny_encoder.token_activations(["a"], bad)


def test_resid_post_is_hidden_state_l_plus_1_and_excludes_specials(tiny_encoder):
    e = tiny_encoder
    acts = e.token_activations(TEXTS, "blocks.0.hook_resid_post")
    toks = e.tokens(TEXTS)
    for text, a, t in zip(TEXTS, acts, toks):
        batch = e.tokenizer([text], return_tensors="pt")
        with torch.no_grad():
            hs = e.model(**batch, output_hidden_states=True).hidden_states
        # [CLS] at 0 and [SEP] at the end are special and must be dropped.
        assert a.shape == (len(t), 32), "rows must align with tokens() (special tokens excluded)"
        torch.testing.assert_close(
            a,
            hs[1][0, 1:-1],
            msg="resid_post of layer 0 must be hidden_states[1] "
            "(off by one in the hidden_states index?)",
        )
        pre = e.token_activations([text], "blocks.0.hook_resid_pre")[0]
        torch.testing.assert_close(pre, hs[0][0, 1:-1])


def test_padding_does_not_change_activations(tiny_encoder):
    alone = tiny_encoder.token_activations([TEXTS[1]], "blocks.1.hook_resid_post")[0]
    batched = tiny_encoder.token_activations(TEXTS, "blocks.1.hook_resid_post", batch_size=3)[1]
    torch.testing.assert_close(
        alone, batched, msg="padding leaked into activations (attention mask missing?)"
    )


def test_mlp_hook_post_is_the_input_to_w_out(tiny_encoder):
    """Layer output = LN(W_out @ mlp_post + attn_out): if mlp_post were the pre-GELU value or the
    layer output, this reconstruction would fail."""
    e = tiny_encoder
    layer = e.model.encoder.layer[1]
    captured = {}
    h = layer.attention.register_forward_hook(
        lambda m, i, o: captured.__setitem__("attn", o[0] if isinstance(o, tuple) else o)
    )
    try:
        batch = e.tokenizer([TEXTS[0]], return_tensors="pt")
        with torch.no_grad():
            hs = e.model(**batch, output_hidden_states=True).hidden_states
    finally:
        h.remove()
    post = e._forward(dict(batch), ["blocks.1.mlp.hook_post"])["blocks.1.mlp.hook_post"]
    assert post.shape[-1] == 64
    with torch.no_grad():
        rebuilt = layer.output(post, captured["attn"])
    torch.testing.assert_close(rebuilt, hs[2])
    assert (post > -0.2).all(), (
        "GELU outputs are >= -0.17; values below mean the hook is before the activation"
    )


def test_word_is_mean_of_subtokens(tiny_encoder):
    e = tiny_encoder
    sentences = [["The", "unbelievably", "quick", "fox"], ["Tokenization", "works"]]
    words = e.word_activations(sentences, "blocks.1.hook_resid_post")
    assert words.shape == (6, 32)
    # Reference: token activations of the same word pieces, averaged by hand.
    texts = [" ".join(s) for s in sentences]
    toks = e.tokens(texts)
    acts = e.token_activations(texts, "blocks.1.hook_resid_post")
    assert toks[0][:2] == ["the", "un"], toks[0]
    # pieces of "unbelievably"
    n_un = sum(1 for t in toks[0][1:] if t == "un" or t.startswith("##"))
    torch.testing.assert_close(words[0], acts[0][0])
    torch.testing.assert_close(
        words[1],
        acts[0][1 : 1 + n_un].mean(0),
        msg="a word's vector must be the MEAN of its subtokens (first piece only? sum?)",
    )
    both = e.word_activations(sentences, ["blocks.1.hook_resid_post", "blocks.0.mlp.hook_post"])
    torch.testing.assert_close(both["blocks.1.hook_resid_post"], words)
    assert both["blocks.0.mlp.hook_post"].shape == (6, 64)


def test_word_order_survives_length_sorting(tiny_encoder):
    sentences = [
        ["a", "long", "sentence", "with", "many", "words"],
        ["short"],
        ["mid", "size", "one"],
    ]
    together = tiny_encoder.word_activations(sentences, "blocks.0.hook_resid_post", batch_size=2)
    separate = torch.cat(
        [tiny_encoder.word_activations([s], "blocks.0.hook_resid_post") for s in sentences]
    )
    torch.testing.assert_close(together, separate, msg="rows must come back in input order")


def test_word_without_subtokens_raises(tiny_encoder):
    with pytest.raises(ValueError, match="no subtokens"):
        tiny_encoder.word_activations([["fine", "\u200b", "words"]], "blocks.0.hook_resid_post")


def test_decoder_word_activations_match_cache():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformer_lens import HookedTransformer, HookedTransformerConfig
    from transformers import PreTrainedTokenizerFast

    words = ["<pad>", "<bos>", "<eos>", "<unk>", "one", "two", "plus", "is"]
    core = Tokenizer(models.WordLevel(vocab={w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core,
        bos_token="<bos>",
        eos_token="<eos>",
        pad_token="<pad>",
        unk_token="<unk>",
        name_or_path="test-wordlevel",
    )
    cfg = HookedTransformerConfig(
        n_layers=1,
        d_model=16,
        n_heads=2,
        d_head=8,
        d_mlp=24,
        d_vocab=len(words),
        n_ctx=16,
        act_fn="gelu",
        seed=0,
    )
    model = HookedTransformer(cfg).eval()
    model.tokenizer = (
        tok  # set directly: the constructor would try to re-fetch it by name from the hub
    )
    sentences = [["one", "plus", "two"], ["two", "is", "one", "plus", "one"]]
    out = decoder_word_activations(model, sentences, "blocks.0.mlp.hook_post")
    assert out.shape == (8, 24)
    ids = torch.tensor([[1, 5, 7, 4, 6, 4]])  # <bos> two is one plus one: the second sentence
    _, cache = model.run_with_cache(ids)
    torch.testing.assert_close(
        out[3:],
        cache["blocks.0.mlp.hook_post"][0, 1:],
        msg="decoder words must skip BOS (position 0) and follow word order",
    )
    with pytest.raises(UnknownSiteError):
        decoder_word_activations(model, sentences, "blocks.3.hook_resid_post")


@pytest.mark.slow
def test_minilm_loads_offline():
    e = load_encoder("minilm")
    assert (e.n_layers, e.d_model, e.d_mlp) == (6, 384, 1536)
    acts = e.word_activations([["Dogs", "bark", "loudly"]], "blocks.5.hook_resid_post")
    assert acts.shape == (3, 384) and torch.isfinite(acts).all()


def test_hub_encoders_go_through_kit_hub(monkeypatch, tiny_encoder):
    """Paper-profile encoders (bert-base-cased...) load via kit.models.hub.hf_encoder: mock that
    boundary."""
    from kit.models import hub as hub

    calls = []

    def fake(name, device="cpu"):
        calls.append((name, device))
        return tiny_encoder.model, tiny_encoder.tokenizer

    monkeypatch.setattr(hub, "hf_encoder", fake)
    e = load_encoder("bert-base-cased")
    assert calls == [("bert-base-cased", "cpu")] and e.name == "bert-base-cased" and e.n_layers == 2

    def offline(name, device="cpu"):
        raise OSError("We couldn't connect to 'https://huggingface.co'")

    monkeypatch.setattr(hub, "hf_encoder", offline)
    with pytest.raises(OSError, match="network"):
        load_encoder("roberta-base")
    with pytest.raises(ValueError, match="non-empty"):
        load_encoder("")


def test_kit_load_model_dispatches_minilm_names(monkeypatch):
    import kit.models.encoders as enc
    from kit import load_model

    monkeypatch.setattr(enc, "load_encoder", lambda name, device="cpu": ("encoder", name, device))
    assert load_model("minilm") == ("encoder", "minilm", "cpu")
    assert (
        load_model("sentence-transformers/all-MiniLM-L6-v2")[1]
        == "sentence-transformers/all-MiniLM-L6-v2"
    )


def test_manual_word_encoding_matches_split_into_words(tiny_encoder):
    """The fallback for RoBERTa-style tokenizers (each word alone, leading space) must give the
    same ids and word alignment as is_split_into_words where both apply (BERT WordPiece)."""
    sentences = [["The", "unbelievably", "quick", "fox"], ["Hi", "there", "."]]
    ids_a, wid_a = tiny_encoder._encode_words(sentences, 512)
    ids_b, wid_b = tiny_encoder._encode_words(sentences, 512, manual=True)
    assert ids_a == ids_b and wid_a == wid_b


def test_byte_level_bpe_words_encoded_as_in_running_text(tmp_path):
    """A locally trained byte-level BPE tokenizer (RoBERTa's kind): a sentence's words must get
    the ids of the running text, i.e. the leading-space marker on every word but the first."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import PreTrainedTokenizerFast

    corpus = ["the quick brown fox jumps over the lazy dog", "a quick fox and a lazy dog run"] * 50
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        corpus, vocab_size=300, min_frequency=1, special_tokens=["<s>", "</s>", "<pad>"]
    )
    tok = PreTrainedTokenizerFast(
        tokenizer_object=bpe, bos_token="<s>", eos_token="</s>", pad_token="<pad>"
    )
    enc = Encoder(name="bpe", model=None, tokenizer=tok)
    words = ["the", "quick", "fox", "jumps"]
    ids, wids = enc._encode_words([words], 512)
    running = tok(" ".join(words), add_special_tokens=False)["input_ids"]
    assert ids[0] == [tok.bos_token_id] + running + [tok.eos_token_id], (
        "words lost their leading-space marker (Ġ): encoded as sentence-initial words"
    )
    assert wids[0][0] is None and wids[0][-1] is None and sorted(set(wids[0][1:-1])) == [0, 1, 2, 3]
    assert tok.convert_ids_to_tokens(ids[0][2:3])[0].startswith("Ġ")
