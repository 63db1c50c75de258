"""Tests of kit.mui.published_trajectories: seed 000's training tables re-read (the OLMo
checkpoints, specialised and contaminated pairs)."""

from __future__ import annotations

import pandas as pd
import pytest

from kit.core.params import load_params
from kit.mui import directions, published_trajectories


def test_published_checkpoints_match_table3_and_paper_profile():
    ck = published_trajectories.published_checkpoints()
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
    o = published_trajectories.published_olmo()
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
    sp = directions.pair_directions(published_trajectories.published_specialised())
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
    co = directions.pair_directions(published_trajectories.published_contamination())
    assert len(co) == 42 and set(co["target"]) == {"math", "code"}
    q = co[(co["model"] == "Qwen2.5-Math-Leakage") & (co["task"] == "MMLU")].iloc[0]
    assert q["domain"] == "ood" and q["direction"] == "collapsing"  # 71.3/14.5 -> 44.7/11.1
    garbled = co[(co["model"] == "Llama3.1-Code-Leakage") & (co["task"] == "MATH")].iloc[0]
    assert (garbled["perf"], garbled["mui"]) == (40.2, 4.5), (
        "the garbled '40.2/ 4.5' cell is read as 40.2 / 4.5"
    )
    assert set(co[co["domain"] == "in-domain"]["task"]) == {"GSM8K", "MATH", "HumanEval", "MBPP"}
