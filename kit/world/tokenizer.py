"""Word-level tokenizer of the embedded world.

One token per whitespace-separated word (numbers 0..63 are words), plus four specials:
``<pad>`` (0), ``<bos>`` (1), ``<eos>`` (2), ``<unk>`` (3).

BOS convention (the same everywhere): every sequence the models see starts with ``<bos>``.
The HF tokenizer prepends it itself (``add_bos_token=True``, so ``tokenizer("")`` is ``[1]``);
``HookedTransformer.to_tokens`` keeps it (``prepend_bos=False`` strips it), and
``kit.world.prompt_tokens`` / training build the same sequences.
Answers are followed by ``<eos>`` in training, so ``model.generate`` stops after the answer.
"""

from __future__ import annotations

from functools import lru_cache

import torch

from kit.world.vocabulary import all_words

SPECIALS = ["<pad>", "<bos>", "<eos>", "<unk>"]
PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3


@lru_cache(maxsize=1)
def vocab() -> dict[str, int]:
    """word -> id, specials first, then the task words in their fixed order."""
    words = SPECIALS + [w for w in all_words() if w not in SPECIALS]
    return {w: i for i, w in enumerate(words)}


def build_tokenizer():
    """A ``transformers.PreTrainedTokenizerFast`` over :func:`vocab` (whitespace split, BOS
    prepended)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(vocab=vocab(), unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)  # joins words with spaces
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<bos>",
        eos_token="<eos>",
        pad_token="<pad>",
        unk_token="<unk>",
        name_or_path="kit-world-wordlevel",
        add_bos_token=True,
    )
    fast.padding_side = "right"
    return fast


def encode(text: str) -> list[int]:
    """Word ids of ``text`` without BOS; unknown words raise ValueError naming them.

    Same result as the HF tokenizer (whitespace split), but a dict lookup: training streams
    tokenise millions of words.
    """
    v = vocab()
    try:
        return [v[w] for w in text.split()]
    except KeyError:
        unknown = sorted({w for w in text.split() if w not in v})
        raise ValueError(f"words not in the world's vocabulary: {unknown}") from None


def answer_id(answer: str) -> int:
    """The single token id of an answer string (answers are one word by construction)."""
    ids = encode(answer)
    if len(ids) != 1:
        raise ValueError(f"answer={answer!r} is not a single token of the world's vocabulary")
    return ids[0]


def pad_right(seqs: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad id lists: returns (tokens Int[Tensor, "batch pos"], lengths Int[Tensor,
    "batch"])."""
    lengths = torch.tensor([len(s) for s in seqs], dtype=torch.long)
    out = torch.full((len(seqs), int(lengths.max()) if seqs else 0), PAD_ID, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = torch.tensor(s, dtype=torch.long)
    return out, lengths
