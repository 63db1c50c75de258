"""A2 (seed 001, section 3.4): the benchmark's input format as a shortcut (notebook 03, section 11).

The paper's +GSM8K Train learns GSM8K's format from its train split, and TE lowers its score in that
format. Here a fine-tune on the task's train split wrapped in ``kit.world.tasks.FORMATS[name]``
plays it: :func:`format_section` scores it and the base in and out of the format,
:func:`kit.shortcut.claims.format_claims` tests that the format favours the fine-tune (the
precondition) and that TE lowers its score in the format (on the held-out test items).
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from kit.core.findings import Section
from kit.shortcut.claims import format_claims
from kit.shortcut.evaluate import item_correct
from kit.shortcut.evidence import locating_items
from kit.shortcut.items import study_items, task_data
from kit.shortcut.patching import Neuron
from kit.shortcut.study import Setup
from kit.world.tasks import formatted


def format_section(s: Setup, cfg, shortcut: Sequence[Neuron]):
    """A2 (section 3.4), the input-format shortcut: ``cfg.format_variants`` (label -> model) scored
    on the test items in the benchmark's input format ``cfg.benchmark_format``
    (``kit.world.tasks.FORMATS``): Ori, and TE with the neurons located in section 1; Ref is their
    accuracy on the fresh items as the task renders them (a query in no benchmark's format),
    ``plain`` on the test items without the format, and ``fresh_plain`` / ``fresh_format`` on
    ``cfg.n_format`` other fresh items without and with it (the same items: the format's effect on
    each row, paired). ``data["per_item"]`` holds those arrays per row; ``data["claims"]`` their
    claims (:func:`kit.shortcut.claims.format_claims` against the row of ``cfg.base_model``, TE on
    the held-out test items), also in the findings. The paper's +GSM8K Train learns GSM8K's format
    from its train split; its neurons were located on contamination in that format, ours on
    section 1's contaminated fine-tunes, which saw the test items without it."""
    items = formatted(
        study_items(cfg.task, "test", cfg.n_eval, seed=cfg.seed), cfg.benchmark_format
    )
    fresh = study_items(cfg.task, "fresh", cfg.n_format, seed=cfg.seed + 1)  # one per content
    data = {
        "fresh_plain": fresh,
        "fresh_format": formatted(fresh, cfg.benchmark_format),
        "ftest": items,
    }
    data = {k: task_data(s.base, v, cfg.max_new_tokens, s.decoding) for k, v in data.items()}
    data |= {"ref": s.fresh, "plain": s.test}
    models = s.pool(dict(cfg.format_variants))
    per_item = {}
    for label, m in models.items():
        ori, te = item_correct(
            m, s.base, data["ftest"], [[], list(shortcut)], cfg.max_rows, cfg.max_new_tokens
        )
        per_item[label] = {"ori": ori, "te": te} | {
            k: item_correct(m, None, data[k], [[]], cfg.max_rows, cfg.max_new_tokens)[0]
            for k in ("ref", "plain", "fresh_plain", "fresh_format")
        }
    models.release_all()
    table = pd.DataFrame(
        [
            {
                "variant": label,
                "ref": 100 * d["ref"].mean(),
                "ori_plain": 100 * d["plain"].mean(),
                "ori": 100 * d["ori"].mean(),
                "te": 100 * d["te"].mean(),
                "delta_acc": 100 * (d["te"].mean() - d["ori"].mean()),
                "fresh_plain": 100 * d["fresh_plain"].mean(),
                "fresh_format": 100 * d["fresh_format"].mean(),
            }
            for label, d in per_item.items()
        ]
    )
    vanilla = next(label for label, name in cfg.format_variants.items() if name == cfg.base_model)
    # the wrapped test items are the test items: the first n_locate located the neurons
    ftest = data["ftest"]
    locating = locating_items(ftest.n, min(cfg.n_locate, ftest.n), ftest.clusters)
    claims = format_claims(
        per_item, cfg.format_label, vanilla, locating, ftest.clusters, seed=cfg.seed
    )
    t = table.set_index("variant")
    lines = [
        f"A2, input format {cfg.benchmark_format!r} (test items wrapped, neurons of section 1; %): "
        + "; ".join(
            f"{k} Ori {t.loc[k, 'ori']:.1f} (unwrapped {t.loc[k, 'ori_plain']:.1f}), Ref "
            f"{t.loc[k, 'ref']:.1f}, TE {t.loc[k, 'te']:.1f} (Δacc {t.loc[k, 'delta_acc']:+.1f}), "
            f"fresh items {t.loc[k, 'fresh_plain']:.1f} -> {t.loc[k, 'fresh_format']:.1f} in the "
            "format"
            for k in t.index
        )
        + ". The paper's +GSM8K Train: Ori - Ref +10.4 / +6.8 (Vanilla +1.8 / +8.2), Δacc -6.5 / "
        "-4.3."
    ]
    lines += [
        f"{c.statement}: {c.ours:+.1f} [{c.ci_low:+.1f}, {c.ci_high:+.1f}] (95%; null: "
        f"{c.null_how}): {c.verdict} (claim {c.id})."
        for c in claims
    ]
    return Section(
        record={
            "a2_format": table.to_dict(orient="records"),
            "a2_format_models": dict(cfg.format_variants),
            "a2_format_name": cfg.benchmark_format,
        },
        tables={"a2_format": table},
        data={"per_item": per_item, "claims": claims},
        findings=lines,
    )
