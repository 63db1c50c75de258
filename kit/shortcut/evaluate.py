"""Evaluation with patched shortcut neurons (seed 001, sections 3.4 and 4): accuracy with neuron
sets patched from the base model, per item and per set; trustworthy evaluation (TE) and side-effect
tables; the sparsity curve; agreement of a score with a reference (Spearman, RMSE).

Every accuracy here generates by dynamic patching (:func:`kit.shortcut.patching.patched_generate`:
the chosen neurons take the patching model's activations on the same sequence, step by step, each
model with its own KV cache). Patching a model with itself is plain greedy decoding:

>>> import torch, kit
>>> from kit.shortcut.patching import generate, patched_generate
>>> model = kit.load_model("random/tiny-gelu")
>>> other = kit.load_model("random/tiny-gelu", seed=1)
>>> prompt = torch.tensor([[1, 5, 7, 9]])
>>> plain = generate(model, prompt, 4)
>>> torch.equal(patched_generate(model, model, prompt, [(0, 3), (1, 8)], 4), plain)
True
>>> patched_generate(model, other, prompt, [(L, i) for L in range(2) for i in range(64)],
...                  4).shape                  # every neuron from the other model
torch.Size([1, 8])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
import torch
from numpy.typing import ArrayLike

from kit.core.progress import progress_bar
from kit.data.scorers import score
from kit.shortcut.items import TaskData, generation_kwargs
from kit.shortcut.patching import Neuron, group_patched_generate
from kit.shortcut.scores import _targets_list, exact_match, group_accuracy, random_neurons
from kit.subjects import benchmark_of


def patched_accuracy(
    model,
    base,
    tokens,
    lengths,
    targets,
    neuron_sets: Sequence[Sequence[Neuron]],
    max_rows: int = 2048,
) -> np.ndarray:
    """Exact-match accuracy of ``model`` with each neuron set patched from ``base`` (TE when the
    set is the located top-N; the empty set gives Ori)."""
    return group_accuracy(
        model, base, tokens, lengths, targets, neuron_sets, method="exact", max_rows=max_rows
    ).numpy()


@dataclass(frozen=True)
class Trustworthy:
    """Trustworthy evaluation (TE) of one model: accuracy as it is and with its shortcut neurons
    patched from the base model, fractions in [0, 1]."""

    ori: float
    te: float

    @property
    def delta(self) -> float:
        """TE - Ori: how much of the accuracy the shortcut neurons carried."""
        return self.te - self.ori


def trustworthy_accuracy(
    model,
    base,
    data: TaskData,
    neurons: Sequence[Neuron],
    max_rows: int = 2048,
    max_new_tokens: int | None = None,
) -> Trustworthy:
    """Ori and TE of ``model`` on ``data`` (:func:`kit.shortcut.task_data`): its accuracy, and its
    accuracy while the (layer, index) ``neurons`` of ``blocks.{layer}.mlp.hook_post`` take
    ``base``'s activations during generation (dynamic patching, seed 001 section 4). One row of
    :func:`trustworthy_table`.

    >>> import kit
    >>> from kit.shortcut import task_data, trustworthy_accuracy
    >>> model = kit.load_model("zoo/base-m+math-test-x5-sparse", world="micro")
    >>> base = kit.load_model("zoo/base-m", world="micro")
    >>> data = task_data(base, kit.load_subject("zoo/base-m", world="micro").items("add", n=16), 1)
    >>> same = trustworthy_accuracy(model, model, data, [(0, 1), (0, 2)])  # patched with itself
    >>> same.delta
    0.0
    >>> 0 <= trustworthy_accuracy(model, base, data, [(0, 1), (0, 2)]).te <= 1
    True
    """
    ori, te = accuracies(model, base, data, [[], list(neurons)], max_rows, max_new_tokens)
    return Trustworthy(float(ori), float(te))


def sparsity_curve(
    model_con,
    model_un,
    base,
    tokens,
    lengths,
    targets,
    ranked: Sequence[Neuron],
    ns: Sequence[int],
    seed: int = 0,
    max_rows: int = 2048,
    data: "TaskData | None" = None,
    max_new_tokens: int | None = None,
) -> pd.DataFrame:
    """Figure 3: accuracy vs number of patched neurons, located (top of ``ranked``) vs random.

    Long format: columns ``model`` (contaminated/uncontaminated), ``neurons`` (located/random),
    ``n``, ``accuracy``. All N of one model run as groups of one batched generation.
    """
    from kit.shortcut.pool import resolve

    n_layers, d_mlp = base.cfg.n_layers, base.cfg.d_mlp
    located = [list(ranked[:n]) for n in ns]
    rand = [random_neurons(n_layers, d_mlp, n, seed=seed + k) for k, n in enumerate(ns)]
    rows = []
    pair = (("contaminated", model_con), ("uncontaminated", model_un))
    for label, m in progress_bar(pair, desc="sparsity curve", unit="model"):
        m = resolve(m)  # Lazy handles: one model at a time
        if data is not None:  # study path: also handles free-text benchmarks
            acc = accuracies(m, base, data, located + rand, max_rows, max_new_tokens)
        else:
            acc = patched_accuracy(
                m, base, tokens, lengths, targets, located + rand, max_rows=max_rows
            )
        for k, n in enumerate(ns):
            rows.append({"model": label, "neurons": "located", "n": n, "accuracy": acc[k]})
            rows.append({"model": label, "neurons": "random", "n": n, "accuracy": acc[len(ns) + k]})
    return pd.DataFrame(rows)


def agreement(scores: ArrayLike, reference: ArrayLike) -> dict[str, float]:
    """Spearman rho and RMSE of the least-squares line ``scores ~ a * reference + b`` (Figure 4's
    rho and e), plus the mean absolute difference. Same units in, same units out. A constant
    reference defines no line (slope, intercept and rho NaN): e is then the spread of ``scores``
    about their mean, the best any fit on a constant reference can do."""
    from scipy.stats import spearmanr

    x = np.asarray(reference, dtype=float)
    y = np.asarray(scores, dtype=float)
    if x.shape != y.shape or x.ndim != 1 or len(x) < 3:
        raise ValueError(
            f"scores and reference must be 1-D of the same length >= 3; got {y.shape} and {x.shape}"
        )
    rho = spearmanr(x, y).statistic if np.ptp(x) > 0 and np.ptp(y) > 0 else float("nan")  # pyright: ignore[reportAttributeAccessIssue]  (scipy)
    if np.ptp(x) > 0:
        slope, intercept = np.polyfit(x, y, 1)
        resid = y - (slope * x + intercept)
    else:
        slope, intercept, resid = float("nan"), float("nan"), y - y.mean()
    return {
        "spearman": float(rho),
        "rmse": float(np.sqrt(np.mean(resid**2))),
        "slope": float(slope),
        "intercept": float(intercept),
        "mean_abs_diff": float(np.mean(np.abs(y - x))),
    }


def table2_summary(table: pd.DataFrame) -> dict[str, float]:
    """Mean |TE - Ref| and |Ori - Ref| over contaminated and uncontaminated rows, mean |Δacc|.

    ``table`` has columns ``contaminated`` (bool), ``ref``, ``ori``, ``te`` (in %).
    """
    out = {}
    for label, sub in (
        ("contaminated", table[table.contaminated]),
        ("uncontaminated", table[~table.contaminated]),
    ):
        if len(sub) == 0:
            continue
        out[f"{label}_mean_abs_te_minus_ref"] = float((sub.te - sub.ref).abs().mean())
        out[f"{label}_mean_abs_ori_minus_ref"] = float((sub.ori - sub.ref).abs().mean())
        out[f"{label}_mean_delta_acc"] = float((sub.te - sub.ori).mean())
        out[f"{label}_mean_abs_delta_acc"] = float((sub.te - sub.ori).abs().mean())
        # the paper's "drop of 37%" is relative to Ori
        rel = 100 * (sub.te - sub.ori) / sub.ori.where(sub.ori > 0)
        out[f"{label}_mean_relative_delta_acc"] = float(rel.mean())
        out[f"{label}_mean_abs_relative_delta_acc"] = float(rel.abs().mean())
    return out


def item_correct(
    model,
    base,
    data: TaskData,
    neuron_sets: Sequence[Sequence[Neuron]],
    max_rows: int = 2048,
    max_new_tokens: int | None = None,
) -> np.ndarray:
    """Float[ndarray, "group item"]: 1 where ``model`` (each neuron set patched from ``base``)
    answers the item correctly. Per-item twin of :func:`accuracies`. Generated greedily, or sampled
    with the seeded settings of ``data.decoding`` (:func:`generation_kwargs`)."""
    if data.items is not None:
        return scored(
            model, data, responses_of(model, base, data, neuron_sets, max_rows, max_new_tokens)
        )
    targets = _targets_list(data.targets)
    n_new = max_new_tokens or max(len(t) for t in targets)
    gen = group_patched_generate(
        model,
        base,
        data.tokens,
        neuron_sets,
        n_new,
        lengths=data.lengths,
        max_rows=max_rows,
        **generation_kwargs(data),
    )
    return exact_match(gen, data.lengths, targets).float().cpu().numpy()


def responses_of(
    model,
    base,
    data: TaskData,
    neuron_sets: Sequence[Sequence[Neuron]],
    max_rows: int = 2048,
    max_new_tokens: int | None = None,
) -> list[list[list[int]]]:
    """``[set][prompt]`` the new token ids ``model`` generates with each neuron set patched from
    ``base`` (up to ``max_new_tokens``, 256 when None; padded after the end-of-sequence token).
    Greedy answers to benchmark items are cached by content (:mod:`kit.shortcut.patched_cache`)."""
    from kit.shortcut import patched_cache

    tok = model.tokenizer
    stop = [tok.eos_token_id] if tok.eos_token_id is not None else []
    n_new = max_new_tokens or 256

    def compute(sets: list[int], prompts: list[int]) -> list[list[list[int]]]:
        sub = patched_cache.subset(data, prompts)
        gen = group_patched_generate(
            model,
            base,
            sub.tokens,
            [neuron_sets[g] for g in sets],
            n_new,
            lengths=sub.lengths,
            stop_token_ids=stop,
            max_rows=max_rows,
            **generation_kwargs(sub),
        ).cpu()
        lengths = sub.lengths.tolist()
        return [
            [gen[g, p, n : n + n_new].tolist() for p, n in enumerate(lengths)]
            for g in range(len(sets))
        ]

    settings = {"max_new_tokens": n_new, "stop": stop}
    cache = patched_cache.item_cache(model, base, data, "responses", settings)
    # as many sets per call as one forward holds (the generator's own chunks): each is kept at once
    per_call = max(1, max_rows // max(1, data.n))
    check = patched_cache.responses_check(model.cfg.d_vocab, n_new)
    return patched_cache.per_set_and_prompt(
        cache, data, neuron_sets, compute, False, per_call, check
    )


def first_tokens(
    model,
    base,
    data: TaskData,
    neuron_sets: Sequence[Sequence[Neuron]],
    max_rows: int = 2048,
) -> tuple[np.ndarray, np.ndarray]:
    """Float[ndarray, "set prompt"] probability of each prompt's first target token at its last
    position, and Int[ndarray, "set prompt"] the argmax token there (greedy decoding's first
    token), with each neuron set patched from ``base``: one teacher-forced pass
    (:func:`kit.shortcut.patching.group_patched_first_token`), cached by content for benchmark
    items."""
    from kit.shortcut import patched_cache
    from kit.shortcut.patching import group_patched_first_token

    def compute(sets: list[int], prompts: list[int]) -> list[list[list[float]]]:
        sub = patched_cache.subset(data, prompts)
        first = torch.tensor([t[0] for t in _targets_list(sub.targets)])
        lp, top = group_patched_first_token(
            model,
            base,
            sub.tokens,
            sub.lengths - 1,
            first,
            [neuron_sets[g] for g in sets],
            max_rows=max_rows,
        )
        return [
            [[float(a), int(b)] for a, b in zip(ra, rb)]
            for ra, rb in zip(lp.cpu().tolist(), top.cpu().tolist())
        ]

    cache = patched_cache.item_cache(model, base, data, "first-token", {})
    per_call = max(1, max_rows // max(1, data.n))
    check = patched_cache.first_token_check(model.cfg.d_vocab)
    vals = patched_cache.per_set_and_prompt(
        cache, data, neuron_sets, compute, True, per_call, check
    )
    arr = np.asarray(vals, dtype=float).reshape(len(neuron_sets), data.n, 2)
    return np.exp(arr[..., 0]), arr[..., 1].astype(np.int64)


def scored(model, data: TaskData, responses: Sequence[Sequence[Sequence[int]]]) -> np.ndarray:
    """Float[ndarray, "set item"]: 1 where the response ``responses[set][item]`` (token ids,
    decoded without special tokens) is correct on ``data.items[item]`` by its benchmark's rule."""
    if data.items is None:
        raise ValueError("scored needs benchmark items: data.items is None")
    tok = model.tokenizer
    return np.array(
        [
            [
                float(score(benchmark_of(it), it, tok.decode(list(r), skip_special_tokens=True)))
                for r, it in zip(row, data.items)
            ]
            for row in responses
        ]
    )


def first_token_correct(model, data: TaskData, top: np.ndarray) -> np.ndarray:
    """:func:`scored` of the one-token answers ``top[set, item]`` (:func:`first_tokens`)."""
    return scored(model, data, [[[int(t)] for t in row] for row in top])


def te_items(
    models: Mapping[str, object],
    base,
    test: TaskData,
    fresh: TaskData,
    neurons: Sequence[Neuron],
    max_rows: int = 2048,
    max_new_tokens: int | None = None,
) -> dict[str, dict[str, np.ndarray]]:
    """Per variant the per-item correctness behind Table 2: ``ori`` and ``te`` on the test items
    (same items, so paired), ``ref`` on the fresh items."""
    out = {}
    for label, m in progress_bar(models.items(), desc="TE items", total=len(models), unit="model"):
        ori, te = item_correct(m, base, test, [[], list(neurons)], max_rows, max_new_tokens)
        ref = item_correct(m, None, fresh, [[]], max_rows, max_new_tokens)[0]
        out[label] = {"ori": ori, "te": te, "ref": ref}
    return out


def accuracies(
    model,
    base,
    data: TaskData,
    neuron_sets: Sequence[Sequence[Neuron]],
    max_rows: int = 2048,
    max_new_tokens: int | None = None,
) -> np.ndarray:
    """Accuracy (fraction) of ``model`` with each neuron set patched from ``base``: exact match of
    the target ids, or for free-text data (``data.items``) the decoded response scored as text."""
    if data.items is not None or generation_kwargs(data):
        return item_correct(model, base, data, neuron_sets, max_rows, max_new_tokens).mean(axis=1)
    return group_accuracy(
        model,
        base,
        data.tokens,
        data.lengths,
        data.targets,
        neuron_sets,
        method="exact",
        max_new_tokens=max_new_tokens,
        max_rows=max_rows,
    ).numpy()


def trustworthy_table(
    models: Mapping[str, object],
    base,
    test: TaskData,
    fresh: TaskData | None,
    neurons: Sequence[Neuron],
    contaminated: Sequence[str],
    max_rows: int = 2048,
    max_new_tokens: int | None = None,
) -> pd.DataFrame:
    """Table 2: per variant Ref (fresh-item accuracy), Ori (test), TE (test, top-N patched from
    ``base``), Δacc = TE - Ori, all in %. ``fresh=None`` leaves Ref empty.

    Generated answers (free text or sampled: :func:`accuracies` scores them per item anyway) keep
    their per-item correctness in ``table.attrs["per_item"]`` (:func:`te_items`' form), so the
    claims reuse these generations instead of repeating them."""
    rows, per_item = [], {}
    keep = fresh is not None and (test.items is not None or bool(generation_kwargs(test)))
    for label, m in progress_bar(models.items(), desc="Table 2", total=len(models), unit="model"):
        if keep:
            assert fresh is not None  # keep needs it
            ori_i, te_i = item_correct(m, base, test, [[], list(neurons)], max_rows, max_new_tokens)
            ref_i = item_correct(m, None, fresh, [[]], max_rows, max_new_tokens)[0]
            per_item[label] = {"ori": ori_i, "te": te_i, "ref": ref_i}
            ori, te, ref = ori_i.mean(), te_i.mean(), ref_i.mean()
        else:
            ori, te = accuracies(m, base, test, [[], list(neurons)], max_rows, max_new_tokens)
            ref = (
                accuracies(m, None, fresh, [[]], max_rows, max_new_tokens)[0]
                if fresh is not None
                else float("nan")
            )
        rows.append(
            {
                "variant": label,
                "contaminated": label in contaminated,
                "ref": 100 * ref,
                "ori": 100 * ori,
                "te": 100 * te,
                "delta_acc": 100 * (te - ori),
            }
        )
    table = pd.DataFrame(rows)
    if keep:
        table.attrs["per_item"] = per_item
    return table


def side_effect_table(
    models: dict[str, object],
    base,
    tasks: dict[str, TaskData],
    neurons: Sequence[Neuron],
    max_rows: int = 2048,
    max_new_tokens: int | None = None,
) -> pd.DataFrame:
    """Table 3: Ori and TE (in %) of every variant on other tasks, same patched neurons. Generated
    answers keep their per-item (ori, te) correctness in ``table.attrs["per_item"]``
    (``{(variant, task): (2, items)}``, :func:`kit.shortcut.evidence.side_items`' form)."""
    rows, per_item = [], {}
    keep = bool(tasks) and all(
        d.items is not None or bool(generation_kwargs(d)) for d in tasks.values()
    )
    # a generator, not a list: a pool's items() loads each model when reached (and releases the
    # one before), so listing them first would leave every model but the last released
    pairs = ((label, m, task, data) for label, m in models.items() for task, data in tasks.items())
    total = len(models) * len(tasks)
    for label, m, task, data in progress_bar(
        pairs, desc="Table 3", total=total, unit="model x task"
    ):
        if keep:
            per_item[label, task] = item_correct(
                m, base, data, [[], list(neurons)], max_rows, max_new_tokens
            )
            ori, te = per_item[label, task].mean(axis=1)
        else:
            ori, te = accuracies(m, base, data, [[], list(neurons)], max_rows, max_new_tokens)
        rows.append(
            {
                "variant": label,
                "task": task,
                "ori": 100 * ori,
                "te": 100 * te,
                "delta_acc": 100 * (te - ori),
            }
        )
    table = pd.DataFrame(rows)
    if keep:
        table.attrs["per_item"] = per_item
    return table
