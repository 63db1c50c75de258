"""Competency Gaps at the level of a model and a suite: one call for benchmark coverage, one for a
model's gaps (seed 002, sections 3.1 and 3.2).

The formulas are :mod:`kit.cg.metrics` (eq. 1-5 and the classes); this module bundles them into
typed results over a suite ``{benchmark: items x concepts}``:

- :func:`benchmark_concepts`: eq. 1 for the texts of each benchmark under a ``HookedTransformer``
  and an SAE that reads it (sparse, items x concepts);
- :func:`benchmark_coverage`: ``X_bench`` per concept with its class (missing / under / normal /
  over), ``chi_bench`` per benchmark and the missing fraction of each benchmark;
- :func:`model_gaps`: ``X_model`` per concept from a model's per-item correctness, with its class
  (gap / worst-decile / normal / best-decile / undefined) and ``chi_model`` per benchmark.

>>> import numpy as np
>>> from kit.cg.coverage import benchmark_coverage, model_gaps
>>> suite = {"a": np.array([[1.0, 0.0, 1.0]]), "b": np.array([[1.0, 1.0, 0.0]])}
>>> benchmark_coverage(suite).x_bench
array([1.5 , 0.75, 0.75])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from kit.cg.metrics import (
    CSR,
    EPSILON,
    Acts,
    chi_bench_table,
    chi_model_table,
    coverage_classes,
    missing_fraction,
    model_gap_classes,
    x_bench,
    x_model,
)


def benchmark_concepts(
    model,
    sae,
    texts_by_benchmark: Mapping[str, Sequence[str]],
    max_length: int = 512,
    max_batch_tokens: int = 8192,
) -> dict[str, CSR]:
    """Eq. 1 for every benchmark: each text's SAE activations at ``sae.cfg.metadata.hook_name`` of
    ``model`` (a ``HookedTransformer``), averaged over its tokens (BOS excluded), by
    :func:`kit.cg.model_space.hooked_item_concepts`. Returns ``{benchmark: CSR items x d_sae}``,
    the input of :func:`benchmark_coverage` and :func:`model_gaps`.

    >>> import kit
    >>> from kit.cg.coverage import benchmark_concepts, benchmark_coverage
    >>> model = kit.load_model("twin/llama")
    >>> sae = kit.load_sae("twin-sae/llama/blocks.1.hook_resid_post")
    >>> texts = {"math": ["two plus two is four", "three times three"]}
    >>> texts["facts"] = ["the sky is blue"]
    >>> acts = benchmark_concepts(model, sae, texts)
    >>> {b: a.shape for b, a in acts.items()}
    {'math': (2, 128), 'facts': (1, 128)}
    >>> cov = benchmark_coverage(acts)
    >>> len(cov.x_bench), bool(np.isclose(cov.chi_bench.mean().to_numpy(), 1).all())
    (128, True)
    """
    # model_space pulls in the notebook's suites and the model loaders: only a caller with a model
    # pays for that import, not one who brings activations
    from kit.cg.model_space import hooked_item_concepts

    if not texts_by_benchmark:
        raise ValueError("texts_by_benchmark is empty: give at least one benchmark's texts")
    return {
        b: hooked_item_concepts(
            model, sae, list(texts), max_length=max_length, max_batch_tokens=max_batch_tokens
        )
        for b, texts in texts_by_benchmark.items()
    }


@dataclass(frozen=True)
class Coverage:
    """How a benchmark suite covers an SAE's concepts (section 3.1)."""

    x_bench: np.ndarray
    """Per concept, eq. 3's ``X_bench`` (mean ``chi_bench`` over the suite)."""
    classes: np.ndarray
    """Per concept, ``missing`` (``X_bench < eps``), ``under``, ``normal`` or ``over``."""
    chi_bench: pd.DataFrame
    """concepts x benchmarks: eq. 2 of each benchmark (each column's mean is 1)."""
    missing_per_benchmark: pd.Series
    """Per benchmark, the fraction of concepts it leaves missing (``chi_bench < eps``)."""
    eps: float

    @property
    def missing(self) -> np.ndarray:
        """Indices of the concepts the suite misses."""
        return np.flatnonzero(self.classes == "missing")


def benchmark_coverage(
    acts_by_benchmark: Mapping[str, Acts], eps: float = EPSILON, denominator: str = "all"
) -> Coverage:
    """Coverage of a suite ``{benchmark: items x concepts}`` (length-normalised activations, eq.
    1): ``X_bench`` (eq. 3; ``denominator`` as in :func:`kit.cg.metrics.x_bench`) and its classes,
    ``chi_bench`` (eq. 2) and each benchmark's missing fraction.

    >>> import numpy as np
    >>> from kit.cg.coverage import benchmark_coverage
    >>> suite = {"a": np.array([[1.0, 0.0, 1.0, 0.0]]), "b": np.array([[1.0, 1.0, 0.0, 0.0]])}
    >>> cov = benchmark_coverage(suite)
    >>> cov.x_bench                      # chi_bench (2, 0, 2, 0) and (2, 2, 0, 0), averaged
    array([2., 1., 1., 0.])
    >>> cov.classes.tolist(), cov.missing.tolist()
    (['over', 'under', 'under', 'missing'], [3])
    >>> cov.missing_per_benchmark.to_dict()
    {'a': 0.5, 'b': 0.5}
    """
    xb = x_bench(acts_by_benchmark, denominator)
    return Coverage(
        x_bench=xb,
        classes=coverage_classes(xb, eps),
        chi_bench=chi_bench_table(acts_by_benchmark),
        missing_per_benchmark=missing_fraction(acts_by_benchmark, eps),
        eps=eps,
    )


@dataclass(frozen=True)
class ModelGaps:
    """Where a model's performance concentrates over the concepts (section 3.2)."""

    x_model: np.ndarray
    """Per concept, eq. 5's ``X_model`` (NaN where no benchmark's items activate it)."""
    classes: np.ndarray
    """Per concept, ``gap`` (``X_model < eps``), ``worst-decile``, ``normal``, ``best-decile`` or
    ``undefined``."""
    chi_model: pd.DataFrame
    """concepts x benchmarks: eq. 4 of each benchmark (NaN where undefined)."""
    accuracy: pd.Series
    """Per benchmark, the model's mean per-item score."""
    eps: float

    @property
    def gaps(self) -> np.ndarray:
        """Indices of the concepts that are model gaps."""
        return np.flatnonzero(self.classes == "gap")


def model_gaps(
    acts_by_benchmark: Mapping[str, Acts],
    correct_by_benchmark: Mapping[str, ArrayLike],
    eps: float = EPSILON,
) -> ModelGaps:
    """A model's gaps from its per-item correctness ``m_b(i)`` in [0, 1] on the items whose concept
    activations ``acts_by_benchmark`` holds (same benchmarks, same item order).

    >>> import numpy as np
    >>> from kit.cg.coverage import model_gaps
    >>> a = np.array([[1.0, 0.0, 1.0], [1.0, 0.0, 1.0]])   # 2 items x 3 concepts
    >>> suite = {"a": a, "b": np.array([[1.0, 2.0, 0.0]])}
    >>> gaps = model_gaps(suite, {"a": [1, 0], "b": [0]})
    >>> gaps.x_model                     # concept 1 is read on b only, whose one item is wrong
    array([0.25, 0.  , 0.5 ])
    >>> gaps.classes.tolist(), gaps.gaps.tolist(), gaps.accuracy.to_dict()
    (['worst-decile', 'gap', 'best-decile'], [1], {'a': 0.5, 'b': 0.0})
    """
    missing = [b for b in acts_by_benchmark if b not in correct_by_benchmark]
    if missing:
        raise ValueError(
            f"correct_by_benchmark lacks benchmark(s) {missing}; "
            f"it has {list(correct_by_benchmark)}"
        )
    xm = x_model(acts_by_benchmark, correct_by_benchmark)
    return ModelGaps(
        x_model=xm,
        classes=model_gap_classes(xm, eps),
        chi_model=chi_model_table(acts_by_benchmark, correct_by_benchmark),
        accuracy=pd.Series(
            {
                b: float(np.mean(np.asarray(correct_by_benchmark[b], float)))
                for b in acts_by_benchmark
            },
            dtype=float,
        ),
        eps=eps,
    )
