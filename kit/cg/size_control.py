"""Coverage at equal size: the nulls of notebook 04's two coverage claims.

Whether a concept is *missing* (``chi_bench < eps``) depends on how much text was read: a concept
that fires once in 10,000 tokens is missing from 2,000 tokens and covered by 50,000. So neither
"the suite misses concepts" nor "two SAEs rank the benchmarks' missing fractions alike" means
anything until size is held fixed:

- :func:`coverage_vs_text`: the share of live concepts missing from ``m`` tokens of the suite
  against the share missing from ``m`` tokens of general text (held-out corpus paragraphs the SAE
  never trained on, :func:`general_text`), both drawn many times at the same ``m``. Subsamples
  without replacement at one fixed size keep the statistic unbiased for that size; a bootstrap of
  a unique-set count cannot (a resample with repeats only loses concepts).
- :func:`missing_at_equal_size`: each benchmark's missing fraction when every benchmark is cut to
  the same number of tokens (the smallest benchmark's), averaged over random cuts; the SAE-swap
  claim ranks benchmarks by these, so a benchmark cannot rank high under both SAEs merely for
  being longer.

Units: items are rows of sparse ``items x concepts`` matrices of eq. 1's ``s~`` and ``lengths``
their token counts (the tokens eq. 1 averaged over).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import scipy.sparse as sp
from scipy.stats import spearmanr

from kit.cg.metrics import CSR, EPSILON, Acts, _check_acts, chi_bench, missing_fraction
from kit.core.stats import null_band, rank_permutation_null


def token_prefix(lengths: np.ndarray, order: np.ndarray, tokens: int) -> np.ndarray:
    """The items ``order[:j]`` of the shortest prefix of ``order`` holding at least ``tokens``
    tokens (all of ``order`` if it holds fewer). ``lengths``: tokens per item."""
    if tokens < 1:
        raise ValueError(f"tokens={tokens}: a sample needs at least 1 token")
    cum = np.cumsum(np.asarray(lengths)[order])
    j = int(np.searchsorted(cum, tokens)) + 1
    return np.sort(order[:j])


def missing_mask(acts: Acts, eps: float = EPSILON) -> np.ndarray:
    """Concepts missing from ``acts`` read as one benchmark: ``chi_bench < eps`` (eq. 2). All
    concepts are missing when nothing fires (no text read)."""
    acts = _check_acts(acts)
    if acts.shape[0] == 0 or float(acts.sum()) <= 0:
        return np.ones(acts.shape[1], dtype=bool)
    return chi_bench(acts) < eps


@dataclass
class EqualSizeCoverage:
    """Missing shares of live concepts at one size, the suite's and general text's
    (:func:`coverage_vs_text`)."""

    tokens: int
    """Tokens per sample (both sides)."""
    suite: np.ndarray
    """Per draw: share of live concepts missing from ``tokens`` tokens of the suite's items."""
    text: np.ndarray
    """Per draw: the same share for ``tokens`` tokens of general text (the null)."""
    n_live: int
    suite_tokens: int
    """Tokens of the whole suite (the paper's setting reads all of them)."""
    text_tokens: int
    """Tokens of the general-text pool the null draws from."""
    text_source: str

    @property
    def p_value(self) -> float:
        """One-sided empirical p of the suite's mean share against the text draws:
        ``(1 + #{text >= mean suite}) / (1 + draws)``."""
        return float((1 + np.sum(self.text >= self.suite.mean())) / (1 + self.text.size))

    def summary(self) -> dict:
        s, t = null_band(self.suite), null_band(self.text)
        return {
            "tokens": self.tokens,
            "draws": int(self.suite.size),
            "n_live": self.n_live,
            "suite_mean": s[0],
            "suite_low": s[1],
            "suite_high": s[2],
            "text_mean": t[0],
            "text_low": t[1],
            "text_high": t[2],
            "p_value": self.p_value,
            "suite_tokens": self.suite_tokens,
            "text_tokens": self.text_tokens,
            "text_source": self.text_source,
        }


def coverage_vs_text(
    suite_acts: Mapping[str, Acts],
    suite_lengths: Mapping[str, Sequence[int]],
    text_acts: Acts,
    text_lengths: Sequence[int],
    live: np.ndarray,
    eps: float = EPSILON,
    draws: int = 200,
    seed: int = 0,
    share: float = 1 / 3,
    text_source: str = "general text",
) -> EqualSizeCoverage:
    """The suite's and general text's missing shares at one size ``m`` (the size-controlled
    null for "the suite leaves concepts uncovered").

    ``m = share * min(suite tokens, text tokens)``, so that every draw of either side is a fresh
    subsample (at most a third of its pool by default). Each draw takes items (suite: over all
    benchmarks pooled; text: paragraphs) in a random order until ``m`` tokens
    (:func:`token_prefix`), and counts the ``live`` concepts (bool over concepts: the SAE uses them)
    missing from them (:func:`missing_mask`). Returns both distributions over ``draws`` draws."""
    if draws < 2:
        raise ValueError(f"draws={draws}: need at least 2 draws for a distribution")
    if not 0 < share <= 1:
        raise ValueError(f"share={share}: must be in (0, 1]")
    mats = [_check_acts(suite_acts[b]) for b in suite_acts]
    lens = [np.asarray(suite_lengths[b], dtype=np.int64) for b in suite_acts]
    for b, a, n in zip(suite_acts, mats, lens):
        if a.shape[0] != n.size:
            raise ValueError(f"benchmark {b!r}: {a.shape[0]} items but {n.size} token counts")
    pooled: CSR = sp.vstack([sp.csr_matrix(a) for a in mats]).tocsr()
    pooled_len = np.concatenate(lens)
    text: CSR = sp.csr_matrix(_check_acts(text_acts))
    text_len = np.asarray(text_lengths, dtype=np.int64)
    if text.shape[0] != text_len.size or text.shape[1] != pooled.shape[1]:
        raise ValueError(
            f"general text: {text.shape} activations, {text_len.size} token counts; the suite has "
            f"{pooled.shape[1]} concepts"
        )
    live = np.asarray(live, dtype=bool)
    if live.shape != (pooled.shape[1],) or not live.any():
        raise ValueError("live must be a non-empty bool mask over the concepts")
    m = max(1, int(share * min(pooled_len.sum(), text_len.sum())))
    rng = np.random.default_rng(seed)

    def draw(mat: CSR, lengths: np.ndarray) -> float:
        rows = token_prefix(lengths, rng.permutation(lengths.size), m)
        return float((missing_mask(mat[rows], eps) & live).sum() / live.sum())

    suite = np.array([draw(pooled, pooled_len) for _ in range(draws)])
    text_shares = np.array([draw(text, text_len) for _ in range(draws)])
    return EqualSizeCoverage(
        m,
        suite,
        text_shares,
        int(live.sum()),
        int(pooled_len.sum()),
        int(text_len.sum()),
        text_source,
    )


def missing_at_equal_size(
    acts: Mapping[str, Acts],
    lengths: Mapping[str, Sequence[int]],
    eps: float = EPSILON,
    draws: int = 20,
    seed: int = 0,
    tokens: int | None = None,
) -> dict[str, float]:
    """Per benchmark, the fraction of the dictionary with ``chi_bench < eps`` (Fig. 13) on
    ``tokens`` tokens of its items (default: the smallest benchmark's total), averaged over
    ``draws`` random cuts (:func:`token_prefix`). The smallest benchmark is read whole every
    time."""
    totals = {b: int(np.sum(lengths[b])) for b in acts}
    for b, a in acts.items():
        if _check_acts(a).shape[0] != len(lengths[b]):
            raise ValueError(
                f"benchmark {b!r}: {a.shape[0]} items but {len(lengths[b])} token counts"
            )
    m = int(tokens if tokens is not None else min(totals.values()))
    rng = np.random.default_rng(seed)
    out = {}
    for b, a in acts.items():
        a = sp.csr_matrix(_check_acts(a))
        n = np.asarray(lengths[b])
        out[b] = float(
            np.mean(
                [
                    missing_mask(a[token_prefix(n, rng.permutation(n.size), m)], eps).mean()
                    for _ in range(draws)
                ]
            )
        )
    return out


def general_text(n_texts: int, exclude: Sequence[str] = (), seed: int = 0) -> list[str]:
    """``n_texts`` paragraphs of the shipped corpus (:func:`kit.cg.saes.corpus_paragraphs`:
    Gutenberg selection and tiny Shakespeare) in a seeded order, none of them in ``exclude`` (the
    SAE's training texts): the general text the coverage null draws from."""
    from kit.cg.saes import corpus_paragraphs  # lazy: kit.cg.saes imports torch and sae_lens

    seen = set(exclude)
    pool = [p for p in corpus_paragraphs() if p not in seen]
    random.Random(f"general-text/{seed}").shuffle(pool)
    if len(pool) < n_texts:
        raise ValueError(f"the corpus holds {len(pool)} held-out paragraphs; {n_texts} requested")
    return pool[:n_texts]


@dataclass
class SaeSwap:
    """Benchmarks' missing fractions under two SAEs, at equal size (:func:`sae_swap`)."""

    sae_a: str
    sae_b: str
    tokens: int
    """Tokens every benchmark is cut to (the smallest benchmark's)."""
    missing_a: dict[str, float]
    missing_b: dict[str, float]
    rho: float
    """Spearman over benchmarks of the equal-size missing fractions, SAE A vs SAE B."""
    null: np.ndarray
    """Spearman under every (<= 8 benchmarks) or 5000 random orders of the benchmarks."""
    rho_full: float
    """The same at full size (each benchmark read whole): what the size-blind claim computed."""
    rho_size_a: float
    """Spearman of SAE A's full-size missing fractions and the benchmarks' token counts."""

    @property
    def p_value(self) -> float:
        """One-sided empirical p: ``(1 + #{null >= rho}) / (1 + orders)``."""
        return float((1 + np.sum(self.null >= self.rho - 1e-12)) / (1 + self.null.size))

    def summary(self) -> dict:
        m, lo, hi = null_band(self.null)
        return {
            "sae_a": self.sae_a,
            "sae_b": self.sae_b,
            "tokens": self.tokens,
            "rho": self.rho,
            "null_mean": m,
            "null_low": lo,
            "null_high": hi,
            "p_value": self.p_value,
            "rho_full_size": self.rho_full,
            "rho_missing_vs_tokens": self.rho_size_a,
            "missing_a": self.missing_a,
            "missing_b": self.missing_b,
        }


def sae_swap(
    acts_a: Mapping[str, Acts],
    acts_b: Mapping[str, Acts],
    lengths: Mapping[str, Sequence[int]],
    eps: float = EPSILON,
    draws: int = 20,
    seed: int = 0,
    names: tuple[str, str] = ("A", "B"),
) -> SaeSwap:
    """Do two SAEs rank the benchmarks' missing fractions alike once size is held fixed?

    Both SAEs read the same items (``lengths`` tokens each); :func:`missing_at_equal_size` cuts
    every benchmark to the smallest one's tokens (the same cuts for both SAEs: same seed), and the
    Spearman of the two per-benchmark vectors is set against the benchmarks' orders
    (:func:`kit.core.stats.rank_permutation_null`)."""
    names_ = sorted(acts_a)
    if sorted(acts_b) != names_ or len(names_) < 3:
        raise ValueError(
            f"both SAEs must read the same >= 3 benchmarks; got {sorted(acts_a)} and "
            f"{sorted(acts_b)}"
        )
    a = missing_at_equal_size(acts_a, lengths, eps, draws, seed)
    b = missing_at_equal_size(acts_b, lengths, eps, draws, seed)
    rho, null = rank_permutation_null([a[k] for k in names_], [b[k] for k in names_], seed=seed)
    fa, fb = missing_fraction(acts_a, eps), missing_fraction(acts_b, eps)
    tokens = {k: int(np.sum(lengths[k])) for k in names_}
    rho_full = float(spearmanr(fa[names_], fb[names_]).statistic)  # pyright: ignore[reportAttributeAccessIssue]  (scipy)
    rho_size = float(spearmanr(fa[names_], [tokens[k] for k in names_]).statistic)  # pyright: ignore[reportAttributeAccessIssue]  (scipy)
    return SaeSwap(
        names[0], names[1], min(tokens.values()), a, b, float(rho), null, rho_full, rho_size
    )
