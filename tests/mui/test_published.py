"""Tests of kit.mui.published: seed 000's tables re-read (Table 5, Table 1's PUR and ranks, B.6,
the OLMo checkpoints, specialised and contaminated pairs)."""

from __future__ import annotations

import pandas as pd
import pytest

import kit.mui.law as ul
from kit.core.params import load_params
from kit.mui import directions, published


def test_published_pur_comparison_and_ranking():
    cmp = published.published_pur_comparison()
    covered = cmp.dropna(subset=["pur_ours"])
    assert len(cmp) == 54 and len(covered) == 48, (
        "9 models x 6 benchmarks, 8 of them in Table 5 (Gemma-2-9B-Instruct = Gemma2-9B-Instruct)"
    )
    assert set(cmp.model) - set(covered.model) == {"Llama-3-8B-Instruct"}
    assert covered["diff"].abs().max() <= 0.1
    ranks = published.published_rank_agreement(cmp)
    assert round(ranks["pur_table1"]["spearman_mean"], 1) == 88.6
    assert ranks["n_models_covered"] == 8


def test_name_key_matches_the_two_gemma_spellings():
    assert published.name_key("Gemma-2-9B-Instruct") == published.name_key("Gemma2-9B-Instruct")
    assert published.name_key("Llama-3-8B-Instruct") != published.name_key("Llama-3.1-8B-Instruct")


def test_published_law_on_the_general_models():
    general = published.published_mui_table("general")
    assert (
        sorted(general.model.unique()) == sorted(published.PUBLISHED_GENERAL_MODELS)
        and len(published.PUBLISHED_GENERAL_MODELS) == 8
    )
    fits = ul.law_fits(general)
    per_bench = fits[fits.benchmark != "all"]
    assert (per_bench.slope < 0).all(), (
        "on §3.2's general models every per-benchmark slope is negative"
    )
    every = ul.law_fits(published.published_mui_table("all"))
    assert every[every.benchmark != "all"].r2.median() < 0.1 < per_bench.r2.median()
    pm = published.published_per_model(general)
    assert len(pm) == 8 and "MMLU" not in pm.benchmark.iloc[0]
    with pytest.raises(ValueError, match="allowed values: all, general"):
        published.published_mui_table("some")


def test_published_b6_correlations_from_the_printed_tables():
    b6 = published.published_b6_correlations().set_index("method")
    alt = b6.loc[["Table 13", "Table 14"], "pooled"]
    assert 0.65 < alt.mean() < 0.75 and b6.loc["Table 13", "quoted"] == 0.723, (
        "the printed Tables 13/14 give about 0.70 against Table 11 (the paper quotes 0.723)"
    )


# --- published tables -------------------------------------------------------------------------


def test_published_checkpoints_match_table3_and_paper_profile():
    ck = published.published_checkpoints()
    assert len(ck) == 8
    assert ck.iloc[0]["hf_name"] == "allenai/OLMo-2-1124-7B@stage1-step122000-tokens512B"
    assert (
        pd.isna(ck.iloc[-1]["revision"]) and ck.iloc[-1]["hf_name"] == "allenai/OLMo-2-1124-7B"
    ), "the 4T checkpoint is the final OLMo-2-1124-7B (no stage1 revision)"
    paper = load_params("02_training_trajectories", "paper")
    assert paper.checkpoints == list(ck["hf_name"]), (
        "params paper profile must list Table 3's revisions in order"
    )


def test_published_olmo_schema_and_hand_checked_steps():
    o = published.published_olmo()
    assert len(o) == 56 and o["model"].nunique() == 8 and o["task"].nunique() == 7
    st = directions.step_directions(o, series="task", label="model")
    gsm_last = st[(st["task"] == "GSM8K") & (st["to"] == "OLMo-2-7B-4T")].iloc[0]
    # Table 8: GSM8K 16.8/5.4 at 3.5T -> 68.2/4.4 at 4T
    assert gsm_last["d_perf"] == pytest.approx(51.4) and gsm_last["d_mui"] == pytest.approx(-1.0)
    assert gsm_last["direction"] == "evolving"
    # 0.5T -> 1T on MMLU: 42.5/17.9 -> 45.2/22.4
    mmlu_first = st[(st["task"] == "MMLU") & (st["step"] == 1)].iloc[0]
    assert mmlu_first["direction"] == "accumulating" and mmlu_first["from"] == "OLMo-2-7B-0.5T"
    # BBH 3.5T -> 4T: 38.5/8.2 -> 46.5/8.2, MUI unchanged: flat, not a direction
    bbh_last = st[(st["task"] == "BBH") & (st["step"] == 7)].iloc[0]
    assert bbh_last["direction"] == "flat"


def test_published_specialised_pairs_and_domains():
    sp = directions.pair_directions(published.published_specialised())
    assert len(sp) == 21, "3 specialised models x 7 benchmarks (base rows are not pairs)"
    row = sp[(sp["model"] == "CodeLlama-7B-Instruct") & (sp["task"] == "MBPP")].iloc[0]
    assert row["domain"] == "in-domain" and row["base"] == "Llama-2-7B-Chat"
    assert (row["base_perf"], row["base_mui"], row["perf"], row["mui"]) == (24.8, 1.4, 44.7, 2.9)
    assert row["direction"] == "accumulating"
    gsm = sp[(sp["model"] == "CodeLlama-7B-Instruct") & (sp["task"] == "GSM8K")].iloc[0]
    assert gsm["domain"] == "ood" and gsm["direction"] == "coarsening"
    qm = sp[(sp["model"] == "Qwen2.5-Math-7B-Instruct") & (sp["task"] == "GSM8K")].iloc[0]
    # the paper calls this accumulating, but Table 9 prints the same MUI (1.9) for both models
    assert qm["domain"] == "in-domain" and qm["direction"] == "flat"
    assert set(
        sp.loc[sp["model"] == "Qwen2.5-Math-7B-Instruct"].query("domain == 'in-domain'")["task"]
    ) == {"GSM8K", "MATH"}


def test_published_contamination_pairs():
    co = directions.pair_directions(published.published_contamination())
    assert len(co) == 42 and set(co["target"]) == {"math", "code"}
    q = co[(co["model"] == "Qwen2.5-Math-Leakage") & (co["task"] == "MMLU")].iloc[0]
    assert q["domain"] == "ood" and q["direction"] == "collapsing"  # 71.3/14.5 -> 44.7/11.1
    garbled = co[(co["model"] == "Llama3.1-Code-Leakage") & (co["task"] == "MATH")].iloc[0]
    assert (garbled["perf"], garbled["mui"]) == (40.2, 4.5), (
        "the garbled '40.2/ 4.5' cell is read as 40.2 / 4.5"
    )
    assert set(co[co["domain"] == "in-domain"]["task"]) == {"GSM8K", "MATH", "HumanEval", "MBPP"}


def test_pur_rounding_band_by_hand_and_on_table1():
    # Vicuna-7B GSM8K: P 11.9, MUI 5.4 -> 5.1210; printed 5.1 lies below it: the room on that side
    # is 5.1210 - 11.85 / sqrt(5.45), plus 0.05 for the printed PUR's own rounding.
    row = pd.DataFrame({"performance": [11.9], "mui": [5.4], "pur_paper": [5.1]})
    row["pur_ours"] = row.performance / row.mui**0.5
    band = published.pur_rounding_band(row).iloc[0]
    ours = 11.9 / 5.4**0.5
    assert band.pur_low == pytest.approx(11.85 / 5.45**0.5) and band.pur_high == pytest.approx(
        11.95 / 5.35**0.5
    )
    assert band.band_ratio == pytest.approx((ours - 5.1) / (ours - 11.85 / 5.45**0.5 + 0.05))
    far = published.pur_rounding_band(row.assign(pur_paper=5.4)).iloc[0]
    assert far.band_ratio > 1, "0.28 above the recomputed value is outside the band"
    cmp = published.pur_rounding_band(
        published.published_pur_comparison().dropna(subset=["pur_ours"])
    )
    assert len(cmp) == 48 and (cmp.band_ratio <= 1).all(), (
        "issue 36: all 48 printed PUR values lie in their band"
    )
