"""What notebook 03 can test in a profile: the paper's tables a config does not run, each as a
"not testable here" claim whose cause is computed from the config (and, for real fine-tunes, from
:data:`kit.models.recipes.RECIPES`), and the cause of ``te_full.*`` when Table 2's rows are
themselves full fine-tunes.

Sections and what they need (seed 001): Table 4 / 5 (a second / third contaminated benchmark,
``transfer_task`` / ``table5_task``), Table 6 (a second base, ``second_base``), Fig. 5 / Table 8
(contamination strength: copies and learning rates of the ``+test`` recipe, tiny-world rows only),
Table 12 (pretraining-stage cheaters, ``cheaters``) and A2 (a benchmark's input format,
``benchmark_format``). A section the config runs gets no claim here (its own claims, or findings).
"""

from __future__ import annotations

from kit.core.claims import Claim, claim

PAPER = "001"
SECOND_BASE_BUDGET = (
    "second_base: null; every real fine-tune is of {bases} (kit.models.recipes.RECIPES). "
    "Gemma-3-270M is offline, but Table 6 on it needs its own five fine-tunes (~25 CPU-min each at "
    "twice SmolLM2's parameters, ~7 GB each to train) and the whole locate/patch pipeline again: "
    "~2.5 hours on the 2-core machine, beyond make real's 3-hour budget beside the four-model "
    "sections"
)
"""Why Table 6 is not run on real fine-tunes: the time budget, not this machine."""


def _recipes(names) -> list:
    """The real fine-tune recipes among model names (:data:`kit.models.recipes.RECIPES`)."""
    from kit.models.recipes import RECIPES  # lazy: keeps this module import-light

    return [RECIPES[n] for n in names if n in RECIPES]


def _real_rows(cfg) -> list:
    """Recipes of Table 2's rows (empty unless the rows are real fine-tunes)."""
    return _recipes(cfg.variants.values())


def full_rows_cause(cfg) -> str:
    """Why ``te_full.*`` (TE on full fine-tunes, section 7) has no rows of its own here."""
    rows = _real_rows(cfg)
    if rows and all(r.sparse_share == 0 for r in rows):
        return (
            f"the {len(rows)} fine-tuned Table 2 rows are themselves full fine-tunes "
            "(kit.models.recipes: sparse_share 0, every parameter trained): their claims are te.*"
        )
    return "no full fine-tunes in this profile (dense_variants: null)"


def untested_sections(cfg) -> list[Claim]:
    """One "not testable here" claim per paper table the config does not run, its cause computed
    from the config (see the module docstring). Empty when every section runs (the tiny profile)."""
    from kit.subjects import is_world_name  # lazy: the subjects package loads the model registry

    rows = _real_rows(cfg)
    bases = ", ".join(sorted({r.base for r in rows}))
    con = [r for r in rows if r.inject == "test"]
    real = bool(rows)
    only = (
        f"every real fine-tune contaminates {', '.join(sorted({r.benchmark for r in con}))} "
        "only (kit.models.recipes.RECIPES)"
    )
    out = []

    def nt(section: str, cid: str, statement: str, cause: str) -> None:
        out.append(
            claim(
                PAPER,
                section,
                cid,
                statement,
                None,
                not_testable=cause,
                rests_on="this profile's config",
            )
        )

    if not cfg.transfer_task:
        nt(
            "Table 4",
            "transfer.table4",
            "TE lowers contaminated models on a second contaminated "
            "benchmark with the neurons located on the first",
            f"transfer_task: null; {only}"
            if real
            else "transfer_task: null (its rows are tiny-world fine-tunes)",
        )
    if not cfg.table5_task:
        nt(
            "Table 5",
            "transfer.table5",
            "the same on a benchmark of another family",
            f"table5_task: null; {only}"
            if real
            else "table5_task: null (its rows are tiny-world fine-tunes)",
        )
    if not cfg.second_base and real:
        # Gemma-3-270M is offline and could be fine-tuned; the budget, not the machine, stops it
        out.append(
            claim(
                PAPER,
                "Table 6",
                "second_base.table6",
                "Table 2 holds on a second base model",
                None,
                undecidable=SECOND_BASE_BUDGET.format(bases=bases),
                rests_on="this profile's config",
            )
        )
    elif not cfg.second_base:
        nt(
            "Table 6",
            "second_base.table6",
            "Table 2 holds on a second base model",
            "second_base: null (a second base is a tiny-world base)",
        )
    plus = cfg.variants.get("+test")
    # real rows of one recipe at two strengths get their own claim (kit.shortcut.strength)
    from kit.shortcut.strength import strength_rows

    if (plus is None or not is_world_name(plus)) and not strength_rows(cfg.variants):
        copies, lrs = sorted({r.copies for r in con}), sorted({r.lr for r in rows})
        cause = (
            f"the strength rows retrain the tiny world's +test recipe (kit.shortcut.variants); "
            f"the real recipes have copies {copies} (Table 2's rows) and learning rates {lrs}"
            if real
            else "no tiny-world +test row in this profile (the strength rows retrain its recipe)"
        )
        nt(
            "Fig. 5 / Table 8",
            "strength.table8",
            "TE's drop grows with contamination strength (copies, learning rate)",
            cause,
        )
    if not cfg.cheaters:
        nt(
            "Table 12",
            "cheaters.table12",
            "TE lowers pretraining-stage cheaters",
            f"cheaters: null; every real recipe is one fine-tuning stage of {bases} (no continued "
            "pretraining with the test items before a clean SFT)"
            if real
            else "cheaters: null",
        )
    if not cfg.benchmark_format:
        nt(
            "A2",
            "format.a2",
            "a fine-tune on the benchmark's fixed input format scores above its ability",
            f"benchmark_format: null; {cfg.task} has its own fixed format (the formats of "
            "kit.world.tasks wrap tiny-world tasks only)",
        )
    return out
