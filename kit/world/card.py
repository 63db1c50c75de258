"""The zoo card: every member's size and accuracies, SAE stats, and the issue's "done when" checks.

Computed once at the end of ``build`` and cached as ``card.json`` in the world directory;
``card()`` reads it. Accuracies are exact match (percent) on the fixed ``test`` split and on
``fresh`` items (seed 0; more of them for the contaminated task, whose test-vs-fresh gap is the
contamination signal), plus ``test-syn`` for the contaminated task.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from kit.core.paths import atomic_write_text
from kit.world.evaluate import evaluate
from kit.world.saes import sae_stats, saes
from kit.world.tasks import TASKS
from kit.world.zoo import (
    CONTAMINATED_TASK,
    CONTAMINATION_BASE,
    SPARSE_SUFFIX,
    card_path,
    changed_neurons,
    checkpoint_steps,
    load_member,
    member_info,
    members,
    not_built_error,
    plastic_neurons,
    spec_hash,
    world_spec,
)

GRADED_TASKS_NEEDED = 4
GAIN_PTS = 10.0
LEAK_PTS = 15.0
CONTROL_PTS = 5.0
SYN_LEAK_PTS = 5.0
SPARSE_LEAK_PTS = 10.0
EV_MIN = 0.7


def _eval_sets(spec) -> dict[str, dict[str, list]]:
    sets = {}
    for name, task in TASKS.items():
        n_fresh = spec.eval_fresh_n_contaminated if name == CONTAMINATED_TASK else spec.eval_fresh_n
        sets[name] = {"test": task.items("test"), "fresh": task.items("fresh", n=n_fresh, seed=0)}
        if name == CONTAMINATED_TASK:
            sets[name]["test-syn"] = task.items("test-syn")
    return sets


def compute_card(world: str | None = None) -> dict:
    """Evaluate every member and SAE of a built world; writes and returns ``card.json``."""
    spec = world_spec(world)
    sets = _eval_sets(spec)
    rows = {}
    for name in tqdm(members(spec.name), desc="zoo card"):
        model = load_member(name, world=spec.name)
        acc = {
            t: {split: round(100 * float(np.mean(evaluate(model, items, batch_size=256))), 2)
                for split, items in by_split.items()}
            for t, by_split in sets.items()
        }
        rows[name] = {**member_info(name, spec.name), "accuracy": acc}
        if rows[name].get("plastic"):
            plastic = plastic_neurons(rows[name]["parent"], rows[name]["plastic"], spec.name)
            changed = changed_neurons(name, spec.name)
            rows[name]["changed_neurons"] = len(changed)
            rows[name]["changed_outside_plastic"] = sum(not bool(plastic[L, i]) for L, i in changed)
            rows[name]["plastic_neurons"] = int(plastic.sum())
    card = {
        "world": spec.name,
        "spec_hash": spec_hash(spec),
        "contamination_base": CONTAMINATION_BASE,
        "contaminated_task": CONTAMINATED_TASK,
        "tasks": {t: {"group": task.group, "chance": round(100 * task.chance, 2),
                      "n_test": len(sets[t]["test"]), "n_fresh": len(sets[t]["fresh"])}
                  for t, task in TASKS.items()},
        "members": rows,
        "saes": {s: sae_stats(s, spec.name) for s in saes(spec.name)},
    }
    card["checks"] = checks(card, spec)
    atomic_write_text(card_path(spec.name), json.dumps(card, indent=1))
    return card


def _acc(card, member, task, split):
    return card["members"][member]["accuracy"][task][split]


def checks(card: dict, spec) -> list[dict]:
    """The issue's "done when" checks: list of {name, passed, detail}."""
    out = []
    tasks = list(card["tasks"])
    bases = [b.name for b in spec.bases]
    weak, strong = bases[0], bases[-1]
    diffs = {t: _acc(card, strong, t, "fresh") - _acc(card, weak, t, "fresh") for t in tasks}
    n = sum(d >= GAIN_PTS for d in diffs.values())
    out.append({"name": "graded capability", "passed": bool(n >= GRADED_TASKS_NEEDED),
                "detail": f"{strong} - {weak} >= {GAIN_PTS:g} pts (fresh) on {n}/{len(tasks)} tasks "
                          f"(need {GRADED_TASKS_NEEDED}): "
                          + ", ".join(f"{t} {d:+.1f}" for t, d in diffs.items())})

    largest = spec.bases[-1]
    steps = checkpoint_steps(largest)
    if steps:
        target = 0.2 * largest.steps
        early = min(steps, key=lambda s: abs(s - target))
        ck = f"{largest.name}@step-{early}"
        gains = {t: _acc(card, largest.name, t, "fresh") - _acc(card, ck, t, "fresh") for t in tasks}
        n = sum(g >= GAIN_PTS for g in gains.values())
        out.append({"name": "training trajectory", "passed": bool(n >= GRADED_TASKS_NEEDED),
                    "detail": f"{largest.name} final - step {early} ({100 * early / largest.steps:.0f}%) "
                              f">= {GAIN_PTS:g} pts (fresh) on {n}/{len(tasks)} tasks: "
                              + ", ".join(f"{t} {g:+.1f}" for t, g in gains.items())})

    base, task = CONTAMINATION_BASE, CONTAMINATED_TASK

    def gap(m, split="test"):
        return _acc(card, m, task, split) - _acc(card, m, task, "fresh")

    b_test = _acc(card, base, task, "test")
    out.append({"name": "contamination base level", "passed": bool(b_test <= 50.0),
                "detail": f"{base} on {task} test {b_test:.1f}% (need <= 50), fresh "
                          f"{_acc(card, base, task, 'fresh'):.1f}%, gap {gap(base):+.1f}"})
    x1, x5 = f"{base}+math-test-x1", f"{base}+math-test-x5"
    out.append({"name": "contamination x5 leak", "passed": bool(gap(x5) >= LEAK_PTS and gap(x1) < gap(x5)),
                "detail": f"test - fresh on {task}: x5 {gap(x5):+.1f} (need >= {LEAK_PTS:g}), "
                          f"x1 {gap(x1):+.1f} (need < x5), base {gap(base):+.1f}"})
    s5 = f"{base}+math-test-syn-x5"
    syn_x5 = gap(x5, "test-syn")
    out.append({"name": "paraphrase leak", "passed": bool(syn_x5 >= SYN_LEAK_PTS and gap(s5) >= SYN_LEAK_PTS),
                "detail": f"x5 model: test-syn - fresh {syn_x5:+.1f}; syn-x5 model: test - fresh "
                          f"{gap(s5):+.1f}, test-syn - fresh {gap(s5, 'test-syn'):+.1f} "
                          f"(need >= {SYN_LEAK_PTS:g} both); syn-x1 test - fresh "
                          f"{gap(f'{base}+math-test-syn-x1'):+.1f}"})
    for ctl in ("math-train", "other-task", "general"):
        m = f"{base}+{ctl}"
        out.append({"name": f"control +{ctl}", "passed": bool(abs(gap(m)) <= CONTROL_PTS),
                    "detail": f"test - fresh on {task} {gap(m):+.1f} (need |.| <= {CONTROL_PTS:g}; "
                              f"base {gap(base):+.1f}); test {_acc(card, m, task, 'test'):.1f}%"})
    x5s = x5 + SPARSE_SUFFIX
    if x5s in card["members"]:
        sparse = {m: r for m, r in card["members"].items() if r.get("plastic")}
        outside = sum(r["changed_outside_plastic"] for r in sparse.values())
        r5 = sparse[x5s]
        out.append({"name": "sparse fine-tunes", "passed": bool(outside == 0),
                    "detail": f"{len(sparse)} sparse fine-tunes changed {outside} neurons outside their parent's "
                              f"{r5['plastic_neurons']} plastic ones (need 0); x5 changed {r5['changed_neurons']}"})
        ctl = {c: gap(f"{base}+{c}{SPARSE_SUFFIX}") for c in ("math-train", "other-task", "general")}
        out.append({"name": "sparse contamination leak",
                    "passed": bool(gap(x5s) >= SPARSE_LEAK_PTS and all(abs(g) <= CONTROL_PTS for g in ctl.values())),
                    "detail": f"test - fresh on {task}: x5-sparse {gap(x5s):+.1f} (need >= {SPARSE_LEAK_PTS:g}), "
                              f"x1-sparse {gap(x1 + SPARSE_SUFFIX):+.1f}; controls "
                              + ", ".join(f"+{c} {g:+.1f}" for c, g in ctl.items()) + f" (need |.| <= {CONTROL_PTS:g})"})
    for ft, group in (("math", "math"), ("code", "code")):
        m = f"{base}+{ft}"
        gts = [t for t in tasks if card["tasks"][t]["group"] == group]
        before = np.mean([_acc(card, base, t, "fresh") for t in gts])
        after = np.mean([_acc(card, m, t, "fresh") for t in gts])
        out.append({"name": f"specialised +{ft}", "passed": bool(after > before),
                    "detail": f"{group} tasks ({', '.join(gts)}) fresh mean {before:.1f}% -> {after:.1f}%"})
    for s, st in card["saes"].items():
        out.append({"name": f"SAE {s}", "passed": bool(st["explained_variance"] >= EV_MIN),
                    "detail": f"EV {st['explained_variance']:.3f} (need >= {EV_MIN}), "
                              f"L0 {st['l0']:.1f}, dead {100 * st['dead_fraction']:.1f}% "
                              f"at {st['hook_name']} of {st['member']}"})
    return out


def card(world: str | None = None) -> dict:
    """The cached zoo card of a built world (JSON-serialisable dict)."""
    spec = world_spec(world)
    path = card_path(spec.name)
    if not path.is_file():
        raise not_built_error(spec.name, "the zoo card")
    return json.loads(path.read_text())


COMMITTED_CARDS = Path(__file__).with_name("cards")
"""The canonical cards, committed: a build on any x86-64 machine must reproduce them exactly."""


def committed_card(world: str | None = None) -> dict:
    """The committed card of ``world`` (``kit/world/cards/<world>.json``)."""
    spec = world_spec(world)
    path = COMMITTED_CARDS / f"{spec.name}.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: no committed card for world {spec.name!r}")
    return json.loads(path.read_text())


def card_diff(a, b, where: str = "card") -> list[str]:
    """Every place where two cards (JSON values) differ, as ``"<path>: <a> != <b>"`` lines."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{where}.{k}: {'missing' if k not in a else 'present'} != {'missing' if k not in b else 'present'}"
               for k in sorted(set(a) ^ set(b))]
        return out + [d for k in a if k in b for d in card_diff(a[k], b[k], f"{where}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in card_diff(x, y, f"{where}[{i}]")]
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


def format_card(c: dict) -> str:
    """The card as a printed table: one row per member, test/fresh accuracy per task."""
    tasks = list(c["tasks"])
    width = max(len(m) for m in c["members"]) + 2
    head = f"{'member':<{width}}{'params':>9}{'tokens':>10} " + "".join(f"{t[:9]:>11}" for t in tasks)
    lines = [f"zoo card: world {c['world']} ({c['spec_hash']}); cells are test/fresh accuracy %",
             head,
             f"{'chance':<{width}}{'':>9}{'':>10} " + "".join(f"{c['tasks'][t]['chance']:>11.0f}" for t in tasks)]
    for name, row in c["members"].items():
        cells = "".join(
            f"{row['accuracy'][t]['test']:>5.0f}/{row['accuracy'][t]['fresh']:<5.0f}" for t in tasks)
        tok = row["train_tokens"] or 0
        lines.append(f"{name:<{width}}{row['params']:>9}{tok / 1e6:>9.2f}M " + cells)
    lines.append("")
    lines.append(f"SAEs: " + "; ".join(
        f"{s} EV {st['explained_variance']:.2f} L0 {st['l0']:.1f} dead {100 * st['dead_fraction']:.0f}%"
        for s, st in c["saes"].items()))
    lines.append("")
    lines += [f"[{'PASS' if ch['passed'] else 'FAIL'}] {ch['name']}: {ch['detail']}" for ch in c["checks"]]
    return "\n".join(lines)
