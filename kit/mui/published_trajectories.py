"""Seed 000's published training trajectories (``../shared/paper_tables``), for notebook 02.

The OLMo checkpoints (Table 3) and their benchmark numbers (Table 8), the specialised models
(Table 9) and the contamination fine-tunes (Table 10) against their bases, in the shared tidy
schema of :mod:`kit.mui.trajectories`, and the corollary checks and direction counts on them
(:func:`published_section`).
"""

from __future__ import annotations

import pandas as pd

from kit.mui.directions import corollary_checks, counts_dict

# Which published benchmarks a specialisation / leak targets (seed 000, sec. 3.3 and A.6:
# math leakage = GSM8K + MATH test samples, code leakage = HumanEval + MBPP).
PAPER_DOMAIN_BENCHMARKS: dict[str, tuple[str, ...]] = {
    "math": ("GSM8K", "MATH"),
    "code": ("HumanEval", "MBPP"),
}

PAPER_LATE_STEPS = 2
"""OLMo steps the paper calls late: "until the final 200k steps (3T to 4T)" = 3T->3.5T->4T (sec.
3.3)."""

PAPER_OOD_CONTAMINATION = ("ARCc", "MMLU")
"""Section 3.4 names ARC and MMLU as the OOD tests on which contamination collapses."""


def published_checkpoints() -> pd.DataFrame:
    """Table 3 (appendix A.2): OLMo-2-7B checkpoints with their hub revision and Hugging Face name.

    Columns: ``checkpoint`` (paper's name, e.g. ``OLMo-2-7B-0.5T``), ``revision``
    (``stage1-step122000-tokens512B``; missing (NA) for the final model), ``hf_name``
    (``allenai/OLMo-2-1124-7B@<revision>``, the ``kit.load_model`` name), ``training_steps``,
    ``tokens_b``.
    """
    from kit.data.paper_tables import load_table

    t = load_table("000_table03_olmo_checkpoints")
    revision = [r if r.startswith("stage") else None for r in t["original_checkpoint_name"]]
    return pd.DataFrame(
        {
            "checkpoint": t["checkpoint"],
            "revision": revision,
            "hf_name": [
                f"allenai/OLMo-2-1124-7B@{r}" if r else "allenai/OLMo-2-1124-7B" for r in revision
            ],
            "training_steps": t["training_steps"].astype(int),
            "tokens_b": t["training_tokens_billion"].astype(float),
        }
    )


def published_olmo() -> pd.DataFrame:
    """Table 8 (B.2): OLMo-2-7B checkpoints x benchmarks in the tidy schema.

    Columns: ``model`` (checkpoint name), ``order`` (training tokens, billions), ``task``
    (benchmark), ``group`` (printed category), ``split`` (``test``), ``perf``, ``mui``.
    """
    from kit.data.paper_tables import load_table

    t = load_table("000_table08_olmo_checkpoint_mui")
    return pd.DataFrame(
        {
            "model": t["checkpoint"],
            "order": t["training_tokens_billion"].astype(float),
            "task": t["benchmark"],
            "group": t["benchmark_category"],
            "split": "test",
            "perf": t["performance"].astype(float),
            "mui": t["mui"].astype(float),
        }
    )


def _published_pairs(
    table: pd.DataFrame, model_col: str, base_col: str, domain_of_model: dict[str, str | None]
) -> pd.DataFrame:
    base_rows = table[table[model_col] == table[base_col]].set_index([model_col, "benchmark"])
    rows = table[table[model_col] != table[base_col]]
    out = []
    for _, r in rows.iterrows():
        b = base_rows.loc[(r[base_col], r["benchmark"])]
        dom = domain_of_model[r[model_col]]
        in_dom = dom is not None and r["benchmark"] in PAPER_DOMAIN_BENCHMARKS[dom]
        out.append(
            {
                "model": r[model_col],
                "base": r[base_col],
                "target": dom,
                "task": r["benchmark"],
                "group": r["benchmark_category"],
                "split": "test",
                "domain": "in-domain" if in_dom else "ood",
                "perf": float(r["performance"]),
                "mui": float(r["mui"]),
                "base_perf": float(b["performance"]),
                "base_mui": float(b["mui"]),
            }
        )
    return pd.DataFrame(out)


def published_specialised() -> pd.DataFrame:
    """Table 9 (B.2, Figure 5): each specialised model vs its base, one row per benchmark.

    Columns: ``model, base, target`` (``code``/``math``), ``task`` (benchmark), ``group``,
    ``split``, ``domain`` (``in-domain`` when the benchmark is of the specialised ability:
    GSM8K/MATH for math, HumanEval/MBPP for code; else ``ood``), ``perf, mui, base_perf, base_mui``.
    """
    from kit.data.paper_tables import load_table

    t = load_table("000_table09_specialised_models_mui")
    target = {
        m: (None if role == "base" else role.split("-")[0])
        for m, role in zip(t["model"], t["role"])
    }
    return _published_pairs(t, "model", "reference_base_model", target)


def published_contamination() -> pd.DataFrame:
    """Table 10 (B.3, Figure 8): each "-Leakage" model vs its original, one row per benchmark.

    Same columns as ``published_specialised``; ``target`` is the leaked test data (``math`` =
    GSM8K + MATH, ``code`` = HumanEval + MBPP), ``domain`` is ``in-domain`` on the leaked
    benchmarks, ``ood`` elsewhere.
    """
    from kit.data.paper_tables import load_table

    t = load_table("000_table10_data_contamination_mui")
    target = {
        m: (None if leak == "none" else leak) for m, leak in zip(t["model"], t["leaked_test_data"])
    }
    return _published_pairs(t, "model", "base_model", target)


def published_section(
    olmo_steps: pd.DataFrame,
    specialised: pd.DataFrame,
    contamination: pd.DataFrame,
    tol_perf: float,
    tol_mui: float,
):
    """Part 1: the corollary checks and direction counts of the paper's own tables (Tables 8-10)."""
    from kit.core.findings import Section

    checks = corollary_checks(
        olmo_steps,
        specialised,
        contamination,
        late_steps=PAPER_LATE_STEPS,
        ood_tasks=PAPER_OOD_CONTAMINATION,
        uncontaminated=specialised,
    )
    late = olmo_steps["step"] > olmo_steps["n_steps"] - PAPER_LATE_STEPS
    sp, co = specialised, contamination
    counts = {
        "pretraining_all": counts_dict(olmo_steps),
        "pretraining_early": counts_dict(olmo_steps[~late]),
        "pretraining_late": counts_dict(olmo_steps[late]),
        "specialised_in_domain": counts_dict(sp[sp["domain"] == "in-domain"]),
        "specialised_ood": counts_dict(sp[sp["domain"] == "ood"]),
        "contamination_in_domain": counts_dict(co[co["domain"] == "in-domain"]),
        "contamination_ood": counts_dict(co[co["domain"] == "ood"]),
        "contamination_ood_arc_mmlu": counts_dict(co[co["task"].isin(PAPER_OOD_CONTAMINATION)]),
    }
    # "collapsing is only observed when data contamination occurs" (sec. 3.3), on the
    # paper's own Table 9
    sp_ood = sp[sp["domain"] == "ood"]
    col = sp_ood[sp_ood["direction"] == "collapsing"]
    finding = (
        f"Collapsing without contamination, paper tables: {len(col)} of {len(sp_ood)} OOD "
        "changes of the uncontaminated "
        f"specialised models (Table 9) are collapsing"
        + (
            f" ({', '.join(f'{r.model} on {r.task}' for r in col.itertuples())})"
            if len(col)
            else ""
        )
        + " -> the claim that collapsing occurs only under contamination is "
        + (
            "contradicted by the paper's own table."
            if len(col)
            else "consistent with the paper's own table."
        )
    )
    return Section(
        record={
            "published_direction_counts": counts,
            "published_corollary_checks": checks.to_dict(orient="records"),
            "published_tolerance": {"perf": tol_perf, "mui": tol_mui},
            "published_uncontaminated_ood_collapsing": {"n": int(len(col)), "of": int(len(sp_ood))},
        },
        findings=[finding],
        tables={"checks": checks},
        data={"checks": checks, "counts": counts},
    )
