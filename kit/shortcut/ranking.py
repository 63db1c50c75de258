"""Localising shortcut neurons (seed 001): the comparative and causal scores of a contaminated /
uncontaminated pair combined into one ranking (:func:`locate`, :class:`Located`), and every way of
combining them compared on held-out items (:func:`ranking_rules`, :func:`best_rule`,
:func:`rule_intervals`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
import pandas as pd
from torch import Tensor

from kit.shortcut.causal_jobs import Remote, pair_accuracies
from kit.shortcut.evaluate import item_correct
from kit.shortcut.items import TaskData
from kit.shortcut.patching import Neuron
from kit.shortcut.scores import (
    POSITIONS,
    CausalScores,
    _targets_list,
    causal_score,
    combine_scores,
    comparative_scores_of_models,
    neuron_groups,
    top_neurons,
)

Rule = Literal["veto", "rank_mean", "sum"]
"""A ``combine_scores`` rule."""


def rule_specs(causal_weight: float = 0.5) -> dict[str, tuple[Rule | None, str | None, float]]:
    """Every way of turning the scores into a ranking: label -> (``combine_scores`` rule or None for
    eq. 3 alone, causal variant, weight). The public code's sum comes first (it wins ties)."""
    out: dict[str, tuple[Rule | None, str | None, float]] = {}
    for m in ("exact", "teacher_forced"):
        for r in ("sum", "veto", "rank_mean"):
            out[f"{r} ({m})"] = (r, m, causal_weight)
    out["comparative only"] = (None, None, 0.0)
    for m in ("exact", "teacher_forced"):
        out[f"causal only ({m})"] = ("rank_mean", m, 1.0)
    return out


@dataclass
class Located:
    """Result of locating shortcut neurons on one (contaminated, uncontaminated) pair."""

    comparative: Tensor
    causal_exact: CausalScores
    causal_tf: CausalScores
    combined: Tensor
    ranked: list[Neuron]
    rule: str = ""
    """Label of the ranking rule behind ``combined`` (a key of :func:`rule_specs`)."""

    def scores_by(self, label: str, causal_weight: float = 0.5) -> Tensor:
        """The combined score of rule ``label`` (a key of :func:`rule_specs`)."""
        specs = rule_specs(causal_weight)
        if label not in specs:
            raise ValueError(f"rule {label!r}; allowed values: {', '.join(specs)}")
        rule, method, w = specs[label]
        if rule is None:
            return combine_scores(self.comparative, None)
        cs = self.causal_exact if method == "exact" else self.causal_tf
        return combine_scores(self.comparative, cs.per_neuron(*self.comparative.shape), rule, w)

    def rerank(self, label: str, causal_weight: float = 0.5) -> "Located":
        """The same scores ranked by rule ``label``."""
        combined = self.scores_by(label, causal_weight)
        return replace(
            self, combined=combined, ranked=top_neurons(combined, combined.numel()), rule=label
        )

    def summary(self) -> dict[str, Any]:
        from scipy.stats import spearmanr

        rho = spearmanr(self.causal_exact.score, self.causal_tf.score).statistic  # pyright: ignore[reportAttributeAccessIssue]  (scipy)
        return {
            "acc_con": self.causal_exact.acc_con,
            "acc_un": self.causal_exact.acc_un,
            "max_causal_exact": float(np.max(self.causal_exact.score)),
            "max_causal_tf": float(np.max(self.causal_tf.score)),
            "spearman_exact_vs_teacher_forced": float(rho) if np.isfinite(rho) else float("nan"),
            "n_groups": len(self.causal_exact.groups),
            "rule": self.rule,
        }


def locate(
    model_con,
    model_un,
    base,
    data: TaskData,
    group_size: int,
    rule: Literal["veto", "rank_mean", "sum"] = "veto",
    causal_weight: float = 0.5,
    rank_by: Literal["exact", "teacher_forced"] = "exact",
    max_rows: int = 2048,
    batch_size: int = 64,
    max_new_tokens: int | None = None,
    position: Literal["last", "completion"] = "last",
    remote: Remote | None = None,
) -> Located:
    """Comparative (eq. 3, at ``position``: ``last`` = the last prompt token, the paper's text;
    ``completion`` = every token of M_con's completion, the public code's default; see
    :func:`comparative_scores_of_models`) + causal (eq. 4, both variants) scores and the combined
    ranking.

    ``model_con`` / ``model_un`` may be :class:`kit.shortcut.pool.Lazy` handles: each is then loaded
    when its turn comes (comparative: M_con, then M_un; causal: M_un, then M_con), so with a
    one-model pool only the donor ``base`` and one of them are ever held together. ``remote``: eq.
    4's patched accuracies as one job per model (:mod:`kit.shortcut.causal_jobs`), the same
    numbers.

    ``data``: the contaminated items tokenised for the models (:func:`kit.shortcut.task_data`);
    ``group_size``: adjacent neurons patched together in eq. 4; ``rule`` / ``rank_by`` /
    ``causal_weight``: how the two scores combine (:func:`kit.shortcut.scores.combine_scores`).

    >>> import kit
    >>> from kit.shortcut import locate, task_data
    >>> con, un, base = (kit.load_model(n, world="micro") for n in (
    ...     "zoo/base-m+math-test-x5-sparse", "zoo/base-m+other-task-sparse", "zoo/base-m"))
    >>> items = kit.load_subject("zoo/base-m", world="micro").items("add", "test", n=16)
    >>> found = locate(con, un, base, task_data(base, items, 1), group_size=32)
    >>> found.comparative.shape == (base.cfg.n_layers, base.cfg.d_mlp)   # eq. 3 per neuron
    True
    >>> len(found.causal_exact.score) == base.cfg.d_mlp // 32            # eq. 4 per group
    True
    >>> len(found.ranked) == base.cfg.n_layers * base.cfg.d_mlp          # best first
    True
    """
    if rank_by not in ("exact", "teacher_forced"):
        raise ValueError(f"rank_by={rank_by!r}; allowed values: 'exact', 'teacher_forced'")
    if position not in POSITIONS:
        raise ValueError(f"position={position!r}; allowed values: {', '.join(POSITIONS)}")
    L, d = base.cfg.n_layers, base.cfg.d_mlp
    batches = [
        (data.tokens[s : s + batch_size], data.lengths[s : s + batch_size])
        for s in range(0, data.n, batch_size)
    ]
    n_new = max_new_tokens or max(len(t) for t in _targets_list(data.targets))
    comp = comparative_scores_of_models(model_con, model_un, batches, position, n_new)
    groups = neuron_groups(L, d, group_size)
    # M_un first: it is the one held after eq. 3
    accs = pair_accuracies(
        {"un": model_un, "con": model_con},
        base,
        data,
        [[]] + groups,
        max_rows,
        max_new_tokens,
        n_new,
        remote,
    )
    cs = {}
    for method in ("exact", "teacher_forced"):
        con, un = accs["con"][method], accs["un"][method]
        score = causal_score(
            np.full(len(groups), con[0]), con[1:], np.full(len(groups), un[0]), un[1:]
        )
        cs[method] = CausalScores(
            groups, float(con[0]), float(un[0]), con[1:], un[1:], np.atleast_1d(score), method
        )
    located = Located(comp, cs["exact"], cs["teacher_forced"], comp, [], "")
    return located.rerank(f"{rule} ({rank_by})", causal_weight)


def ranking_rules(
    located: Located,
    model_con,
    model_un,
    base,
    data: TaskData,
    n: int,
    truth: set[Neuron] | None = None,
    max_rows: int = 2048,
    max_new_tokens: int | None = None,
    causal_weight: float = 0.5,
) -> pd.DataFrame:
    """Each way of turning the scores into a top-``n`` (:func:`rule_specs`), scored on ``data``
    (held-out items: not those the scores were computed on). In points: M_con's and M_un's accuracy
    unpatched and with those neurons patched from ``base``, ``drop_con`` (M_con's loss, wanted
    large), ``change_un`` (M_un's change, wanted 0) and ``objective = drop_con - |change_un|`` (the
    two features of a shortcut neuron, section 3.3). ``found``: how many of the truly shortcut-
    carrying neurons ``truth`` (tiny world only) the top-``n`` holds; never used for the choice.
    ``attrs["items"]``: the per-item correctness behind it, ``{"con": (1 + rules, items), "un":
    ...}`` (row 0 unpatched, then the rules in row order), for :func:`rule_intervals`."""
    tops = {
        k: top_neurons(located.scores_by(k, causal_weight), n) for k in rule_specs(causal_weight)
    }
    sets = [[]] + list(tops.values())
    from kit.shortcut.pool import resolve

    con_items = item_correct(resolve(model_con), base, data, sets, max_rows, max_new_tokens)
    un_items = item_correct(resolve(model_un), base, data, sets, max_rows, max_new_tokens)
    con, un = 100 * con_items.mean(axis=1), 100 * un_items.mean(axis=1)
    rows = [
        {
            "rule": k,
            "n": n,
            "acc_con": con[0],
            "acc_con_patched": c,
            "acc_un": un[0],
            "acc_un_patched": u,
            "drop_con": con[0] - c,
            "change_un": u - un[0],
            "objective": (con[0] - c) - abs(u - un[0]),
            "found": len(truth & set(t)) if truth is not None else None,
        }
        for (k, t), c, u in zip(tops.items(), con[1:], un[1:])
    ]
    out = pd.DataFrame(rows)
    out.attrs["items"] = {"con": con_items, "un": un_items}
    return out


def best_rule(rules: pd.DataFrame) -> str:
    """The rule with the highest held-out ``objective`` (first in :func:`rule_specs` order on
    ties)."""
    return str(rules.rule.iloc[int(np.argmax(rules.objective.to_numpy()))])


def objective_items(con0, con_p, un0, un_p) -> float:
    """Held-out objective in points from per-item correctness (0/1 arrays over the same items):
    ``drop_con - |change_un|`` = ``100 * (mean(con0 - con_p) - |mean(un_p - un0)|)``."""
    return float(100 * (np.mean(con0 - con_p) - abs(np.mean(un_p - un0))))


def rule_intervals(
    rules: pd.DataFrame, chosen: str, n_boot: int = 1000, seed: int = 0
) -> pd.DataFrame:
    """Each rule's held-out objective minus the ``chosen`` rule's, with a 95% paired bootstrap
    interval over the held-out items (M_con and M_un answer the same items, resampled together):
    columns ``vs_chosen``, ``vs_chosen_low``, ``vs_chosen_high``. An interval that holds 0 means the
    held-out items cannot tell that rule from the chosen one. Needs ``rules.attrs["items"]``
    (:func:`ranking_rules`)."""
    from kit.core.stats import bootstrap_ci

    items = rules.attrs.get("items")
    if items is None:
        raise ValueError(
            "rules has no attrs['items'] (per-item correctness): make it with ranking_rules"
        )
    labels = list(rules.rule)
    if chosen not in labels:
        raise ValueError(f"chosen={chosen!r}; allowed values: {', '.join(labels)}")
    con, un = items["con"], items["un"]
    c = 1 + labels.index(chosen)
    out = []
    for k in range(len(labels)):
        est = bootstrap_ci(
            lambda c0, cp, u0, up, cc, uc: (
                objective_items(c0, cp, u0, up) - objective_items(c0, cc, u0, uc)
            ),
            con[0],
            con[1 + k],
            un[0],
            un[1 + k],
            con[c],
            un[c],
            n_boot=n_boot,
            seed=seed,
        )
        out.append(est)
    res = rules.copy()
    res["vs_chosen"], res["vs_chosen_low"], res["vs_chosen_high"] = (
        np.array([e[i] for e in out]) for i in range(3)
    )
    return res
