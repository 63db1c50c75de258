"""Does a fine-tune leak? Letter accuracy of a multiple-choice model on injected vs fresh items.

The scorer is the cheapest honest one for answers that are one letter: one forward pass over the
prompt as the fine-tunes were trained on it (:func:`kit.models.finetune.encode_example`'s rendering,
chat template and assistant turn opened), then the logits at the first answer position:

- ``greedy``: the model's greedy first token is the correct letter (what a one-token generation
  answers; any other token, a letter or not, is wrong);
- ``letter``: among the item's option letters, the correct one has the highest logit (the option
  log-likelihood of lm-evaluation-harness's letter scoring: no parse failure possible).

The leak of a model is its accuracy on the injected test items minus its accuracy on fresh test
items (never trained on by any recipe), with a percentile bootstrap interval resampling each group
on its own (``kit.core.stats.mean_diff_ci``). ``python -m kit.models.leak NAME ... --items-of
RECIPE`` prints the table.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import torch

from kit.data.benchmarks import LETTERS
from kit.data.items import Item
from kit.models.finetune import collate, encode_example
from kit.models.finetune_examples import eval_items, item_example
from kit.models.recipes import RECIPES, Recipe, recipe


@dataclass(frozen=True)
class LetterScores:
    """Per-item scores of one model on multiple-choice items (arrays in item order)."""

    greedy: np.ndarray
    """Bool[ndarray, "item"]: the greedy first token is the correct letter."""
    letter: np.ndarray
    """Bool[ndarray, "item"]: the correct letter has the highest logit among the item's letters."""
    is_letter: np.ndarray
    """Bool[ndarray, "item"]: the greedy first token is one of the item's option letters."""


def letter_ids(tokenizer, n: int) -> list[int]:
    """Token ids of the first ``n`` option letters, each of which must be one token."""
    ids = []
    for letter in LETTERS[:n]:
        tok = tokenizer(letter, add_special_tokens=False)["input_ids"]
        if len(tok) != 1:
            raise ValueError(
                f"option letter {letter!r} is {len(tok)} tokens for this tokenizer: "
                "the letter scorer needs one-token letters"
            )
        ids.append(tok[0])
    return ids


@torch.inference_mode()
def letter_scores(
    model,
    tokenizer,
    items: Sequence[Item],
    style: str = "letter",
    batch_size: int = 8,
    max_length: int = 1024,
) -> LetterScores:
    """Score a transformers causal LM on multiple-choice ``items`` asked as ``style`` (one forward
    pass per item; the first-answer-position logits of each)."""
    if any(it.choices is None or it.label is None for it in items):
        raise ValueError("letter_scores needs multiple-choice items (choices and label)")
    model.eval()
    greedy, letter, valid = [], [], []
    for start in range(0, len(items), batch_size):
        chunk = items[start : start + batch_size]
        # encoded as in training (prompt, letter, end token); the first answer token is predicted
        # at the last prompt position, and causal attention never lets the answer reach it
        enc = [
            encode_example(tokenizer, item_example(it, "eval", style), max_length) for it in chunk
        ]
        batch = collate(enc, tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0)
        last = torch.tensor([len(e.ids) - 1 - e.n_answer for e in enc])
        keep = torch.unique(last)
        logits = model(
            input_ids=batch.input_ids,
            attention_mask=batch.attention_mask,
            logits_to_keep=keep,
            use_cache=False,
        ).logits
        rows = logits[torch.arange(len(chunk)), torch.searchsorted(keep, last)]
        for it, row in zip(chunk, rows):
            assert it.choices is not None and it.label is not None  # checked above
            ids = letter_ids(tokenizer, len(it.choices))
            top = int(row.argmax())
            greedy.append(top == ids[it.label])
            valid.append(top in ids)
            letter.append(int(row[ids].argmax()) == it.label)
    return LetterScores(np.array(greedy), np.array(letter), np.array(valid))


@dataclass(frozen=True)
class Leak:
    """Accuracy on injected and fresh items and their difference (the leak) with a 95% interval."""

    model: str
    scorer: str
    injected: float
    fresh: float
    leak: float
    low: float
    high: float
    n_injected: int
    n_fresh: int
    letter_share: float
    """Share of all scored items whose greedy first token is an option letter."""


def leak_of(
    name: str,
    injected: LetterScores,
    fresh: LetterScores,
    scorer: str = "greedy",
    n_boot: int = 2000,
    seed: int = 0,
) -> Leak:
    """The leak of one model from its scores on the injected and the fresh items."""
    from kit.core.stats import mean_diff_ci

    if scorer not in ("greedy", "letter"):
        raise ValueError(f"scorer={scorer!r} is not allowed; allowed: greedy, letter")
    a, b = getattr(injected, scorer).astype(float), getattr(fresh, scorer).astype(float)
    point, low, high = mean_diff_ci(a, b, paired=False, n_boot=n_boot, seed=seed)
    share = float(np.concatenate([injected.is_letter, fresh.is_letter]).mean())
    return Leak(
        name, scorer, float(a.mean()), float(b.mean()), point, low, high, len(a), len(b), share
    )


def measure(
    models: Mapping[str, str | Path],
    r: Recipe,
    n_fresh: int = 200,
    batch_size: int = 8,
    scorers: Sequence[str] = ("greedy", "letter"),
) -> list[Leak]:
    """The leak of every model (label -> Hugging Face directory) on ``r``'s injected and fresh
    items."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    injected, fresh = eval_items(r, n_fresh)
    out = []
    for label, path in models.items():
        model = AutoModelForCausalLM.from_pretrained(
            path, dtype=torch.float32, attn_implementation="eager"
        )
        tok = AutoTokenizer.from_pretrained(path)
        s_inj = letter_scores(model, tok, injected, r.prompt_style, batch_size)
        s_fresh = letter_scores(model, tok, fresh, r.prompt_style, batch_size)
        out += [leak_of(label, s_inj, s_fresh, scorer) for scorer in scorers]
        del model
    return out


def main(argv: list[str] | None = None) -> int:
    from kit.models.finetune import finetuned_dir
    from kit.models.load import model_dir

    p = argparse.ArgumentParser(
        prog="python -m kit.models.leak", description=(__doc__ or "").split("\n")[0]
    )
    p.add_argument("names", nargs="+", help="models: the base and fine-tune names (RECIPES)")
    p.add_argument(
        "--items-of", required=True, help="the contaminated recipe whose injected items are scored"
    )
    p.add_argument("--n-fresh", type=int, default=200)
    p.add_argument("--json", default=None, help="write the rows to this file too")
    args = p.parse_args(argv)
    r = recipe(args.items_of)
    models = {n: (finetuned_dir(n) if n in RECIPES else model_dir(n)) for n in args.names}
    rows = measure(models, r, args.n_fresh)
    for x in rows:
        print(
            f"{x.model:55s} {x.scorer:7s} injected {x.injected:.3f} fresh {x.fresh:.3f} "
            f"leak {x.leak:+.3f} [{x.low:+.3f}, {x.high:+.3f}] letters {x.letter_share:.2f}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(x) for x in rows], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
