"""The zoo card: every member's size and accuracies, SAE stats, and the issue's "done when" checks.

Computed once at the end of ``build`` and cached as ``card.json`` in the world directory;
``card()`` reads it. Accuracies are exact match (percent) on the fixed ``test`` split and on
``fresh`` items (seed 0; more of them for the contaminated task, whose test-vs-fresh gap is the
contamination signal), plus ``test-syn`` for the contaminated task.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import cast

import numpy as np
import torch
from tqdm.auto import tqdm

from kit.core.pinned import is_pinned
from kit.models import tl
from kit.world.evaluate import evaluate, prompt_tokens, token_accuracy
from kit.world.members import changed_neurons, planted_gap_items, plastic_neurons
from kit.world.recipes import CONTAMINATED_TASK, CONTAMINATION_BASE, SPARSE_SUFFIX, world_spec
from kit.world.saes import sae_digest, sae_stats, saes
from kit.world.specs import GAPS, WorldSpec, _digest, checkpoint_steps, member_key, spec_hash
from kit.world.storage import (
    card_path,
    damaged_error,
    load_member,
    member_info,
    members,
    not_built_error,
    read_meta,
    world_dir,
    write_json,
)
from kit.world.tasks import EXTRA_TASKS, TASKS, get_task

GRADED_TASKS_NEEDED = 4
GAIN_PTS = 10.0
LEAK_PTS = 15.0
CONTROL_PTS = 5.0  # a clean control's test - fresh gap within this, or within CONTROL_Z noise SEs
CONTROL_Z = 2.64  # two-sided 95% over the six control checks (Bonferroni: z of 1 - 0.05 / 12)
SYN_LEAK_PTS = 5.0
SPARSE_LEAK_PTS = 10.0
EV_MIN = 0.7
IOI_HEAD_SCORE = 0.10  # a head "matters" when mean-ablating it removes >= 10% of the IOI logit diff
IOI_HEADS_NEEDED = 2
GAP_OFF_PTS = 5.0  # every other task (and the rest of the gap's task) within this of the parent ...
GAP_Z = 1.96  # ... up to sampling noise: the delta's 95% interval must meet the band +-GAP_OFF_PTS
GAP_FRESH_N = 1000  # fresh items of the gap's task (about a quarter fall in the concept)


def mui_k(d_mlp: int) -> int:
    """MUI's per-token, per-layer k (the paper's top 0.1%): ``max(1, round(d_mlp / 1000))``, as
    ``kit.mui.key_neurons.default_k`` (a test pins the two together; the world does not import
    kit.mui)."""
    return max(1, round(d_mlp / 1000))


@torch.inference_mode()
def ioi_head_scores(model, n: int = 200) -> dict:
    """Mean-ablation importance of every attention head for IOI (fresh items, seed 0).

    Logit difference ``logit(IO) - logit(S)`` at the last prompt position, clean and with one
    head's ``hook_z`` replaced at every position by its mean over the items' real (unpadded)
    positions; a head's score is ``(clean - ablated) / clean`` (mean logit differences)."""

    items = get_task("ioi").items("fresh", n=n, seed=0)
    tokens, lengths = prompt_tokens(model, items)
    vocab = model.tokenizer.get_vocab()
    io = torch.tensor([vocab[it.metadata["io"]] for it in items])
    s = torch.tensor([vocab[it.metadata["s"]] for it in items])
    rows = torch.arange(len(items))
    valid = torch.arange(tokens.shape[1])[None, :] < lengths[:, None]

    def ld(logits):
        last = logits[rows, lengths - 1]
        return float((last[rows, io] - last[rows, s]).mean())

    names = [f"blocks.{L}.attn.hook_z" for L in range(model.cfg.n_layers)]
    means = {}
    for name in names:

        def grab(act, hook, name=name):
            means[name] = act[valid].mean(0)  # [head, d_head]

        tl.run_with_hooks(model, tokens, [(name, grab)])
    clean = ld(model(tokens, return_type="logits"))
    scores = {}
    for L, name in enumerate(names):
        for h in range(model.cfg.n_heads):

            def ablate(act, hook, h=h, m=means[name]):
                act[:, :, h] = m[h]
                return act

            scores[f"L{L}H{h}"] = round(
                (clean - ld(tl.run_with_hooks(model, tokens, [(name, ablate)]))) / clean, 4
            )
    top = sorted(scores, key=lambda k: scores[k], reverse=True)
    return {
        "clean_logit_diff": round(clean, 4),
        "n_items": n,
        "scores": scores,
        "heads_over_threshold": [h for h in top if scores[h] >= IOI_HEAD_SCORE],
        "threshold": IOI_HEAD_SCORE,
    }


def _extra_mixture_tasks(spec, name: str) -> list[str]:
    b = next((b for b in spec.bases if b.name == name), None)
    return [t for t, _ in (b.mixture if b else ()) if t in EXTRA_TASKS]


def _new_sections(spec, rows: dict) -> dict:
    """Card sections of the members added after world-v4's cards: new top-level
    keys only, so every entry of the existing members stays as committed."""
    out: dict = {
        "member_keys": {name: member_key(spec, name) for name in rows},
        "mui_k": {},
        "multi_token": {},
        "ioi_heads": {},
        "planted_gaps": {},
    }
    for name, row in rows.items():
        if row["kind"] == "base":
            out["mui_k"][name] = {
                "d_mlp": row["arch"]["d_mlp"],
                "k_per_layer": mui_k(row["arch"]["d_mlp"]),
            }
    for name in rows:
        extra = _extra_mixture_tasks(spec, name)
        if not extra:
            continue
        model = load_member(name, world=spec)
        out["multi_token"][name] = {}
        for t in extra:
            task = get_task(t)
            res = {}
            for split in ("test", "fresh"):
                items = task.items(split, n=200, seed=0) if split == "fresh" else task.items(split)
                res[split] = round(100 * float(np.mean(evaluate(model, items, batch_size=256))), 2)
                res[f"{split}_token"] = round(
                    100 * float(np.mean(token_accuracy(model, items, 256))), 2
                )
            res["chance"] = round(100 * task.chance, 4)
            res["answer_tokens"] = len(task.items("test", n=1)[0].target.split())
            out["multi_token"][name][t] = res
        for m in ("zoo/base-l", name):  # base-l: the 2-layer comparison
            out["ioi_heads"][m] = ioi_head_scores(load_member(m, world=spec))
    for f in spec.finetunes:
        if not f.gap:
            continue
        g = GAPS[f.gap]
        inside, outside = planted_gap_items(f.gap, GAP_FRESH_N, seed=0)
        res = {
            "gap": f.gap,
            "parent": f.parent,
            "description": g.description,
            "task": g.task,
            "chance": round(100 * g.chance, 2),
            "n_inside": len(inside),
            "n_outside": len(outside),
            "n_outside_eff": round(effective_n(outside), 1),
        }
        for who, key in ((f.parent, "parent"), (f.name, "member")):
            model = load_member(who, world=spec)
            res[f"{key}_inside"] = round(100 * float(np.mean(evaluate(model, inside, 256))), 2)
            res[f"{key}_outside"] = round(100 * float(np.mean(evaluate(model, outside, 256))), 2)
        res["other_tasks_fresh_delta"] = {
            t: round(
                rows[f.name]["accuracy"][t]["fresh"] - rows[f.parent]["accuracy"][t]["fresh"], 2
            )
            for t in TASKS
            if t != g.task
        }
        out["planted_gaps"][f.name] = res
    return out


def _eval_sets(spec) -> dict[str, dict[str, list]]:
    sets = {}
    for name, task in TASKS.items():
        n_fresh = spec.eval_fresh_n_contaminated if name == CONTAMINATED_TASK else spec.eval_fresh_n
        sets[name] = {"test": task.items("test"), "fresh": task.items("fresh", n=n_fresh, seed=0)}
        if name == CONTAMINATED_TASK:
            sets[name]["test-syn"] = task.items("test-syn")
    return sets


def _member_accuracy(spec: WorldSpec, name: str, sets: dict) -> dict:
    model = load_member(name, world=spec)
    return {
        t: {
            split: round(100 * float(np.mean(evaluate(model, items, batch_size=256))), 2)
            for split, items in by_split.items()
        }
        for t, by_split in sets.items()
    }


def accuracy_path(spec: WorldSpec, name: str) -> Path:
    """Where :func:`compute_accuracies` keeps member ``name``'s accuracy row: named by the
    member's content key and the evaluation's sizes, so a redefined member never reads another's
    row."""
    key = _digest([member_key(spec, name), spec.eval_fresh_n, spec.eval_fresh_n_contaminated])
    return world_dir(spec) / "card-rows" / f"{name.replace('/', '__')}-{key}.json"


def _read_accuracy(spec: WorldSpec, name: str) -> dict | None:
    path = accuracy_path(spec, name)
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())["accuracy"]
    except (ValueError, KeyError):  # damaged: computed again
        return None


def compute_accuracies(world: str | WorldSpec | None, names: list[str]) -> None:
    """The card's accuracy rows of members ``names`` (the bulk of the card's work), each written
    once, atomically, to :func:`accuracy_path`, where :func:`compute_card` reads it: the build runs
    them as jobs right after the job that trains those members, beside the training still running,
    instead of one by one at the end. Pinned only, as the card."""
    if not is_pinned():
        raise RuntimeError("compute_accuracies() needs the pinned environment (kit.core.pinned)")
    spec = world_spec(world)
    sets = _eval_sets(spec)
    for name in names:
        if _read_accuracy(spec, name) is None:
            acc = _member_accuracy(spec, name, sets)
            write_json(accuracy_path(spec, name), {"member": name, "accuracy": acc})


def compute_card(world: str | WorldSpec | None = None) -> dict:
    """Evaluate every member and SAE of a built world; writes (once, atomically) and returns the
    card.

    Runs in the pinned environment only (:mod:`kit.core.pinned`: every number on the card is the
    same bits wherever the numerical platform is the same); ``kit.world.build`` starts it there."""
    if not is_pinned():
        raise RuntimeError(
            "compute_card() needs the pinned environment (kit.core.pinned); build() computes the "
            "card in a pinned process"
        )
    spec = world_spec(world)
    sets = _eval_sets(spec)
    rows = {}
    for name in tqdm(members(spec), desc="zoo card"):
        acc = _read_accuracy(spec, name)
        if acc is None:
            acc = _member_accuracy(spec, name, sets)
        rows[name] = {**member_info(name, spec), "accuracy": acc}
        if rows[name].get("plastic"):
            plastic = plastic_neurons(rows[name]["parent"], rows[name]["plastic"], spec)
            changed = changed_neurons(name, spec)
            rows[name]["changed_neurons"] = len(changed)
            rows[name]["changed_outside_plastic"] = sum(not bool(plastic[L, i]) for L, i in changed)
            rows[name]["plastic_neurons"] = int(plastic.sum())
    card = {
        "world": spec.name,
        "seed": spec.seed,
        "spec_hash": spec_hash(spec),
        "contamination_base": CONTAMINATION_BASE,
        "contaminated_task": CONTAMINATED_TASK,
        "tasks": {
            t: {
                "group": task.group,
                "chance": round(100 * task.chance, 2),
                "n_test": len(sets[t]["test"]),
                "n_fresh": len(sets[t]["fresh"]),
                "n_fresh_eff": round(effective_n(sets[t]["fresh"]), 1),
            }
            for t, task in TASKS.items()
        },
        "members": rows,
        "saes": {s: sae_stats(s, spec) for s in saes(spec)},
    }
    card.update(_new_sections(spec, rows))
    card["weights_digests"] = weights_digests(spec)
    card["checks"] = checks(card, spec)
    write_json(card_path(spec), card)
    return card


def weights_digests(spec: WorldSpec) -> dict[str, str]:
    """Every member's and SAE's tensor digest (``kit.world.storage.tensor_digest``), as recorded
    when it was written: two worlds with the same digests are the same bits."""
    out = {name: cast(dict, read_meta(spec, name))["weights_digest"] for name in members(spec)}
    return {**out, **{s: sae_digest(s, spec) for s in saes(spec)}}


def _acc(card, member, task, split):
    return card["members"][member]["accuracy"][task][split]


def control_band(card: dict, member: str, task: str) -> float:
    """The |test - fresh| gap (points) a clean control may show on ``task``: ``CONTROL_PTS``, or
    ``CONTROL_Z`` standard errors of a gap with no leak at all, whichever is wider. With 200 test
    items one SE is 2.3-2.7 points at 10-15% accuracy, so a fixed 5-point band alone is ~2 SE: a
    clean control failed it 3-6% of the time by noise, and one of the six controls in 17-31% of
    world seeds. The SE is that of two binomial proportions at the member's pooled
    accuracy (no leak: one rate for both splits), the fresh one over its :func:`effective_n`
    items (the test split's 200 contents are distinct)."""
    n_t, n_f = card["tasks"][task]["n_test"], card["tasks"][task]["n_fresh"]
    t, f = _acc(card, member, task, "test") / 100, _acc(card, member, task, "fresh") / 100
    p = (t * n_t + f * n_f) / (n_t + n_f)
    se = 100 * math.sqrt(p * (1 - p) * (1 / n_t + 1 / card["tasks"][task]["n_fresh_eff"]))
    return max(CONTROL_PTS, CONTROL_Z * se)


def checks(card: dict, spec) -> list[dict]:
    """The issue's "done when" checks: list of {name, passed, detail}."""
    out = []
    tasks = list(card["tasks"])
    # the uniform-mixture series (base-xl is apart)
    bases = [b.name for b in spec.bases if not b.mixture]
    weak, strong = bases[0], bases[-1]
    diffs = {t: _acc(card, strong, t, "fresh") - _acc(card, weak, t, "fresh") for t in tasks}
    n = sum(d >= GAIN_PTS for d in diffs.values())
    out.append(
        {
            "name": "graded capability",
            "passed": bool(n >= GRADED_TASKS_NEEDED),
            "detail": f"{strong} - {weak} >= {GAIN_PTS:g} pts (fresh) on {n}/{len(tasks)} tasks "
            f"(need {GRADED_TASKS_NEEDED}): "
            + ", ".join(f"{t} {d:+.1f}" for t, d in diffs.items()),
        }
    )

    largest = [b for b in spec.bases if not b.mixture][-1]
    steps = checkpoint_steps(largest)
    if steps:
        target = 0.2 * largest.steps
        early = min(steps, key=lambda s: abs(s - target))
        ck = f"{largest.name}@step-{early}"
        gains = {
            t: _acc(card, largest.name, t, "fresh") - _acc(card, ck, t, "fresh") for t in tasks
        }
        n = sum(g >= GAIN_PTS for g in gains.values())
        out.append(
            {
                "name": "training trajectory",
                "passed": bool(n >= GRADED_TASKS_NEEDED),
                "detail": f"{largest.name} final - step {early} "
                f"({100 * early / largest.steps:.0f}%) >= {GAIN_PTS:g} pts (fresh) on "
                f"{n}/{len(tasks)} tasks: " + ", ".join(f"{t} {g:+.1f}" for t, g in gains.items()),
            }
        )

    base, task = CONTAMINATION_BASE, CONTAMINATED_TASK

    def gap(m, split="test"):
        return _acc(card, m, task, split) - _acc(card, m, task, "fresh")

    b_test = _acc(card, base, task, "test")
    out.append(
        {
            "name": "contamination base level",
            "passed": bool(b_test <= 50.0),
            "detail": f"{base} on {task} test {b_test:.1f}% (need <= 50), fresh "
            f"{_acc(card, base, task, 'fresh'):.1f}%, gap {gap(base):+.1f}",
        }
    )
    x1, x5 = f"{base}+math-test-x1", f"{base}+math-test-x5"
    out.append(
        {
            "name": "contamination x5 leak",
            "passed": bool(gap(x5) >= LEAK_PTS and gap(x1) < gap(x5)),
            "detail": f"test - fresh on {task}: x5 {gap(x5):+.1f} (need >= {LEAK_PTS:g}), "
            f"x1 {gap(x1):+.1f} (need < x5), base {gap(base):+.1f}",
        }
    )
    s5 = f"{base}+math-test-syn-x5"
    syn_x5 = gap(x5, "test-syn")
    out.append(
        {
            "name": "paraphrase leak",
            "passed": bool(syn_x5 >= SYN_LEAK_PTS and gap(s5) >= SYN_LEAK_PTS),
            "detail": f"x5 model: test-syn - fresh {syn_x5:+.1f}; syn-x5 model: test - fresh "
            f"{gap(s5):+.1f}, test-syn - fresh {gap(s5, 'test-syn'):+.1f} "
            f"(need >= {SYN_LEAK_PTS:g} both); syn-x1 test - fresh "
            f"{gap(f'{base}+math-test-syn-x1'):+.1f}",
        }
    )
    for ctl in ("math-train", "other-task", "general"):
        m = f"{base}+{ctl}"
        band = control_band(card, m, task)
        out.append(
            {
                "name": f"control +{ctl}",
                "passed": bool(abs(gap(m)) <= band),
                "detail": f"test - fresh on {task} {gap(m):+.1f} (need |.| <= {band:.1f}: "
                f"{CONTROL_PTS:g} or {CONTROL_Z:g} SE of no leak; base {gap(base):+.1f}); "
                f"test {_acc(card, m, task, 'test'):.1f}%",
            }
        )
    x5s = x5 + SPARSE_SUFFIX
    if x5s in card["members"]:
        sparse = {m: r for m, r in card["members"].items() if r.get("plastic")}
        outside = sum(r["changed_outside_plastic"] for r in sparse.values())
        r5 = sparse[x5s]
        out.append(
            {
                "name": "sparse fine-tunes",
                "passed": bool(outside == 0),
                "detail": f"{len(sparse)} sparse fine-tunes changed {outside} neurons outside "
                f"their parent's {r5['plastic_neurons']} plastic ones (need 0); x5 changed "
                f"{r5['changed_neurons']}",
            }
        )
        names = {c: f"{base}+{c}{SPARSE_SUFFIX}" for c in ("math-train", "other-task", "general")}
        ctl = {c: (gap(m), control_band(card, m, task)) for c, m in names.items()}
        out.append(
            {
                "name": "sparse contamination leak",
                "passed": bool(
                    gap(x5s) >= SPARSE_LEAK_PTS and all(abs(g) <= b for g, b in ctl.values())
                ),
                "detail": f"test - fresh on {task}: x5-sparse {gap(x5s):+.1f} (need >= "
                f"{SPARSE_LEAK_PTS:g}), x1-sparse {gap(x1 + SPARSE_SUFFIX):+.1f}; controls "
                + ", ".join(f"+{c} {g:+.1f} (|.| <= {b:.1f})" for c, (g, b) in ctl.items())
                + f" ({CONTROL_PTS:g} or {CONTROL_Z:g} SE of no leak)",
            }
        )
    for ft, group in (("math", "math"), ("code", "code")):
        m = f"{base}+{ft}"
        gts = [t for t in tasks if card["tasks"][t]["group"] == group]
        before = np.mean([_acc(card, base, t, "fresh") for t in gts])
        after = np.mean([_acc(card, m, t, "fresh") for t in gts])
        out.append(
            {
                "name": f"specialised +{ft}",
                "passed": bool(after > before),
                "detail": f"{group} tasks ({', '.join(gts)}) fresh mean {before:.1f}% -> "
                f"{after:.1f}%",
            }
        )
    for s, st in card["saes"].items():
        out.append(
            {
                "name": f"SAE {s}",
                "passed": bool(st["explained_variance"] >= EV_MIN),
                "detail": f"EV {st['explained_variance']:.3f} (need >= {EV_MIN}), "
                f"L0 {st['l0']:.1f}, dead {100 * st['dead_fraction']:.1f}% "
                f"at {st['hook_name']} of {st['member']}",
            }
        )
    return out + new_checks(card)


def effective_n(items) -> float:
    """Kish's effective number of items of a draw that repeats contents: ``(sum c)^2 / sum c^2``
    over the count ``c`` of each distinct content (``metadata["content"]``). A content drawn
    twice is nearly one item measured twice (its answer does not change with the names around
    it), so the accuracy's sampling error is that of this many items: add's 1000 fresh items are
    376 contents (its fresh pool is a quarter of 1953 pairs), 288 effective items, where the
    card's intervals had taken 1000 (180 before world-v6, whose sampler made a few pairs common)."""
    counts: dict[str, int] = {}
    for it in items:
        key = repr(it.metadata["content"])
        counts[key] = counts.get(key, 0) + 1
    if not counts:
        raise ValueError("effective_n: no items")
    c = np.array(list(counts.values()), dtype=float)
    return float(c.sum() ** 2 / (c**2).sum())


def delta_interval(
    after: float, before: float, n: float, z: float = GAP_Z
) -> tuple[float, float, float]:
    """``(delta, lo, hi)`` of a change in accuracy (percent points) from ``before`` to ``after``,
    both measured on ``n`` items (the card passes :func:`effective_n` of them): ``delta +- z *
    SE`` with the two-proportion (unpaired) binomial ``SE = sqrt(p1 (1 - p1) / n + p0 (1 - p0) /
    n)``. The card keeps accuracies, not per-item results, so the pairing of the items (the same
    fresh items for both models) is not used: the paired interval is narrower, this one is the
    conservative bound the card can compute."""
    if n <= 0:
        raise ValueError(f"n={n!r}: the number of items must be positive")
    p1, p0 = after / 100, before / 100
    se = 100 * float(np.sqrt(p1 * (1 - p1) / n + p0 * (1 - p0) / n))
    d = after - before
    return d, d - z * se, d + z * se


def meets_band(lo: float, hi: float, band: float) -> bool:
    """Whether the interval ``[lo, hi]`` meets ``[-band, band]``: the data do not show a change
    larger than ``band`` (a drift counts as one only when its whole 95% interval lies outside)."""
    return bool(lo <= band and hi >= -band)


def planted_gap_check(card: dict, member: str, g: dict) -> dict:
    """The planted-gap check of ``member`` (its ``card["planted_gaps"]`` entry ``g``): the concept's
    items end at or below chance (a uniform guess over the task's answers), and neither the rest
    of the gap's task nor any other task (fresh items, ``card["tasks"][t]["n_fresh_eff"]``
    effective ones: :func:`effective_n`) moves by more than
    ``GAP_OFF_PTS`` from the parent, where "moves" means the change's 95% interval
    (:func:`delta_interval`) lies wholly outside ``+-GAP_OFF_PTS`` (with 200 items the interval's
    half-width is 3-10 points, so a point estimate alone would fail or pass on noise). The detail
    shows the world's control fine-tune ``<parent>+general`` on the same tasks for comparison."""
    parent = g["parent"]
    d_out = delta_interval(g["member_outside"], g["parent_outside"], g["n_outside_eff"])
    off = {
        t: delta_interval(
            card["members"][member]["accuracy"][t]["fresh"],
            card["members"][parent]["accuracy"][t]["fresh"],
            card["tasks"][t]["n_fresh_eff"],
        )
        for t in g["other_tasks_fresh_delta"]
    }
    ok = (
        g["member_inside"] <= g["chance"]
        and meets_band(d_out[1], d_out[2], GAP_OFF_PTS)
        and all(meets_band(lo, hi, GAP_OFF_PTS) for _, lo, hi in off.values())
    )
    ctl = f"{parent}+general"
    ctl_txt = (
        "; control "
        + ctl
        + " "
        + ", ".join(
            f"{t} {_acc(card, ctl, t, 'fresh') - _acc(card, parent, t, 'fresh'):+.1f}" for t in off
        )
        if ctl in card["members"]
        else ""
    )
    return {
        "name": f"planted gap ({member})",
        "passed": bool(ok),
        "detail": f"{g['description']}: {g['parent_inside']:.1f}% -> {g['member_inside']:.1f}% "
        f"(n {g['n_inside']}, need <= chance {g['chance']:.0f}); "
        f"rest of {g['task']} {g['parent_outside']:.1f} -> {g['member_outside']:.1f} "
        f"({d_out[0]:+.1f} [{d_out[1]:+.1f}, {d_out[2]:+.1f}]); other tasks (fresh) "
        + ", ".join(f"{t} {d:+.1f} [{lo:+.1f}, {hi:+.1f}]" for t, (d, lo, hi) in off.items())
        + f" (need each 95% interval to meet +-{GAP_OFF_PTS:g})"
        + ctl_txt,
    }


def new_checks(card: dict) -> list[dict]:
    """Checks of the members added after world-v4's cards, appended after the existing ones."""
    out = []
    for m, mt in card.get("multi_token", {}).items():
        k = card["mui_k"][m]["k_per_layer"]
        out.append(
            {
                "name": f"MUI k > 1 ({m})",
                "passed": bool(k > 1),
                "detail": f"d_mlp {card['mui_k'][m]['d_mlp']}: k = {k} neurons per token and layer "
                "(other bases: "
                + ", ".join(f"{b} {v['k_per_layer']}" for b, v in card["mui_k"].items() if b != m)
                + ")",
            }
        )
        above = {t: r["fresh"] - r["chance"] for t, r in mt.items()}
        out.append(
            {
                "name": f"multi-token answers ({m})",
                "passed": bool(len(mt) >= 2 and all(a >= 10 for a in above.values())),
                "detail": "; ".join(
                    f"{t} ({r['answer_tokens']} tokens) exact test/fresh "
                    f"{r['test']:.1f}/{r['fresh']:.1f}% (token {r['fresh_token']:.1f}%), chance "
                    f"{r['chance']:.2g}%"
                    for t, r in mt.items()
                )
                + " (need >= 2 families, fresh >= chance + 10 pts)",
            }
        )
        h = card["ioi_heads"][m]
        out.append(
            {
                "name": f"IOI heads ({m})",
                "passed": bool(len(h["heads_over_threshold"]) >= IOI_HEADS_NEEDED),
                "detail": f"{len(h['heads_over_threshold'])} heads remove >= "
                f"{100 * h['threshold']:.0f}% of the IOI logit diff {h['clean_logit_diff']:.2f} "
                f"when mean-ablated (need >= {IOI_HEADS_NEEDED}): "
                + ", ".join(f"{x} {h['scores'][x]:.2f}" for x in h["heads_over_threshold"][:6])
                + (
                    f"; base-l: {len(card['ioi_heads']['zoo/base-l']['heads_over_threshold'])} "
                    "heads"
                    if "zoo/base-l" in card["ioi_heads"]
                    else ""
                ),
            }
        )
    for m, g in card.get("planted_gaps", {}).items():
        out.append(planted_gap_check(card, m, g))
    return out


def card(world: str | WorldSpec | None = None) -> dict:
    """The cached zoo card of a built world (JSON-serialisable dict). Its ``checks`` are derived
    again from its numbers with the current criteria (:func:`checks`), so a criterion change needs
    no rebuild. A card file that is not valid JSON raises MemberDamaged (``kit zoo build`` rewrites
    it)."""
    spec = world_spec(world)
    path = card_path(spec)
    if not path.is_file():
        raise not_built_error(spec, "the zoo card")
    try:
        c = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as e:
        raise damaged_error(spec, "the zoo card", f"{path} is not valid JSON ({e})") from None
    c["checks"] = checks(c, spec)
    return c


COMMITTED_CARDS = Path(__file__).with_name("cards")
"""The canonical cards, committed: a build on any x86-64 machine must reproduce them exactly."""


def committed_card(world: str | WorldSpec | None = None) -> dict:
    """The committed card of ``world`` (``kit/world/cards/<world>.json``)."""
    spec = world_spec(world)
    path = COMMITTED_CARDS / f"{spec.name}.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: no committed card for world {spec.name!r}")
    return json.loads(path.read_text())


def card_diff(a, b, where: str = "card") -> list[str]:
    """Every place where two cards (JSON values) differ, as ``"<path>: <a> != <b>"`` lines."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [
            f"{where}.{k}: {'missing' if k not in a else 'present'} != "
            f"{'missing' if k not in b else 'present'}"
            for k in sorted(set(a) ^ set(b))
        ]
        return out + [d for k in a if k in b for d in card_diff(a[k], b[k], f"{where}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in card_diff(x, y, f"{where}[{i}]")]
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


TOLERANCE = {
    "accuracy": 5.0,
    "explained_variance": 0.05,
    "dead_fraction": 0.10,
    "l0": 0.25,
    "ioi": 0.5,
}
"""How far a card built on another numerical platform (:mod:`kit.world.fingerprint`) may stray
from the committed one: accuracies (``members.*.accuracy``, ``multi_token``, ``planted_gaps``) in
percentage points; an SAE's explained variance and dead fraction absolutely, its L0 relatively;
IOI head scores and logit differences absolutely. Weight digests and checks' wording are not
compared there, the checks' verdicts are. Measured: an Intel Xeon and an AMD EPYC built micro
cards whose accuracies were equal and whose SAE and IOI numbers differed by at most 0.01 dead
fraction, 2e-4 EV, 0.2% L0 and 1e-4 IOI score (world-v6, when the two trained with differently
rounded AdamW and LayerNorm roots); micro cards computed with three different kernel sets on one
AMD EPYC (MKL's roots, exact roots, exact roots and OpenBLAS products) had equal accuracies and
stayed as close."""

_NOT_COMPARED_ACROSS_PLATFORMS = ("weights_digests",)


def _tolerance_for(where: str) -> tuple[str, float] | None:
    """(``"abs"`` or ``"rel"``, bound) for a numeric card entry, None when it must be equal."""
    leaf = where.rsplit(".", 1)[-1]
    if where.startswith(("card.multi_token.", "card.planted_gaps.")) or ".accuracy." in where:
        return ("abs", TOLERANCE["accuracy"])
    if where.startswith("card.saes.") and leaf in ("explained_variance", "dead_fraction"):
        return ("abs", TOLERANCE[leaf])
    if where.startswith("card.saes.") and leaf == "l0":
        return ("rel", TOLERANCE["l0"])
    if where.startswith("card.ioi_heads.") and (".scores." in where or leaf == "clean_logit_diff"):
        return ("abs", TOLERANCE["ioi"])
    return None


def card_diff_within_tolerance(a: dict, b: dict) -> list[str]:
    """The places where two cards differ by more than :data:`TOLERANCE` (what docs/tiny-world.md
    promises across numerical platforms): every number within its tolerance or equal, every other
    entry equal, every check's verdict equal; weight digests, checks' details and the order of IOI
    heads over their threshold are not compared."""
    out = []
    for line in card_diff(
        {k: v for k, v in a.items() if k not in _NOT_COMPARED_ACROSS_PLATFORMS},
        {k: v for k, v in b.items() if k not in _NOT_COMPARED_ACROSS_PLATFORMS},
    ):
        where, values = line.split(": ", 1)
        if where.startswith("card.checks[") and where.endswith(".detail"):
            continue
        if where.startswith("card.ioi_heads.") and ".heads_over_threshold" in where:
            continue
        tol = _tolerance_for(where)
        x, y = _entry(a, where), _entry(b, where)
        if tol and isinstance(x, (int, float)) and isinstance(y, (int, float)):
            kind, bound = tol
            gap = abs(x - y) if kind == "abs" else abs(x - y) / max(min(abs(x), abs(y)), 1e-12)
            if gap <= bound:
                continue
            line = f"{line} (beyond {'+-' if kind == 'abs' else 'a relative '}{bound})"
        out.append(line)
    return out


def _entry(card: dict, where: str):
    """The value at a :func:`card_diff` path (``card.checks[3].passed``); card keys hold no dots or
    brackets."""
    value = card
    for part in where.split(".")[1:]:
        key, *indices = part.replace("]", "").split("[")
        try:
            value = value[key]
            for i in indices:
                value = value[int(i)]
        except (KeyError, IndexError, TypeError, ValueError):
            return None
    return value


def format_card(c: dict) -> str:
    """The card as a printed table: one row per member, test/fresh accuracy per task."""
    tasks = list(c["tasks"])
    width = max(len(m) for m in c["members"]) + 2
    head = f"{'member':<{width}}{'params':>9}{'tokens':>10} " + "".join(
        f"{t[:9]:>11}" for t in tasks
    )
    seed = f", seed {c['seed']}" if c.get("seed") else ""
    lines = [
        f"zoo card: world {c['world']}{seed} ({c['spec_hash']}); cells are test/fresh accuracy %",
        head,
        f"{'chance':<{width}}{'':>9}{'':>10} "
        + "".join(f"{c['tasks'][t]['chance']:>11.0f}" for t in tasks),
    ]
    for name, row in c["members"].items():
        cells = "".join(
            f"{row['accuracy'][t]['test']:>5.0f}/{row['accuracy'][t]['fresh']:<5.0f}" for t in tasks
        )
        tok = row["train_tokens"] or 0
        lines.append(f"{name:<{width}}{row['params']:>9}{tok / 1e6:>9.2f}M " + cells)
    lines.append("")
    lines.append(
        "SAEs: "
        + "; ".join(
            f"{s} EV {st['explained_variance']:.2f} L0 {st['l0']:.1f} dead "
            f"{100 * st['dead_fraction']:.0f}%"
            for s, st in c["saes"].items()
        )
    )
    lines.append("")
    lines += [
        f"[{'PASS' if ch['passed'] else 'FAIL'}] {ch['name']}: {ch['detail']}" for ch in c["checks"]
    ]
    return "\n".join(lines)
