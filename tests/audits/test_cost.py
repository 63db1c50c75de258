"""What a section needs is checked when the config loads, naming the field; edge
patching has an estimated cost, a switch and a budget, and MIB says why when the edges were off."""

from __future__ import annotations

import pytest

import kit
from kit.audits import circuit_family
from kit.audits import cost as K
from kit.audits.circuits import graph_edges
from kit.core.params import ParamsError
from kit.core.paths import REPO_ROOT


def test_edge_count_by_hand_and_against_the_graph():
    # 2 layers x 2 heads: input -> 4 heads, input -> logits, 4 heads -> logits,
    # and 2 x 2 layer-0 -> layer-1 pairs
    assert K.n_edges(2, 2) == 4 + 1 + 4 + 4 == 13
    assert K.n_edges(30, 9) == 35_776  # SmolLM2-135M's edges
    for L in range(1, 6):
        for H in range(1, 5):
            assert K.n_edges(L, H) == len(graph_edges(L, H))


def test_forward_flops_by_hand():
    plain = K.ModelShape(n_layers=1, n_heads=1, d_model=2, d_mlp=3, d_vocab=5)
    # per token: 4 * 2^2 (attention) + 2 * 2 * 3 (MLP) + 2 * 5 (unembedding) = 38 multiply-adds
    assert K.forward_flops(plain, 10) == 2 * 10 * 38
    gated = K.ModelShape(1, 1, 2, 3, 5, gated=True)
    assert K.forward_flops(gated, 10) == 2 * 10 * (16 + 18 + 10)


def test_cost_of_a_known_shape_and_of_an_unknown_one():
    shape = K.ModelShape(2, 2, 2, 3, 5)
    c = K.edge_patching_cost(shape, n_prompts=4, device="cpu")
    per_pass = K.PASS_OVERHEAD_S + K.forward_flops(shape, 4 * K.IOI_PROMPT_TOKENS) / K.CPU_FLOPS
    assert c.n_edges == 13 and c.seconds == pytest.approx(13 * per_pass)
    assert "2 layers x 2 heads" in c.text() and "assumed 30 GFLOP/s on cpu" in c.text()
    unknown = K.edge_patching_cost(None, 4, "cpu")
    assert unknown.seconds is None and "cost unknown" in unknown.text()
    assert (
        K.duration(30) == "30 s"
        and K.duration(600) == "10 min"
        and K.duration(172_800) == "2.0 days"
    )


def test_model_shapes_come_from_configs_without_weights():
    assert K.model_shape("random/llama-1b", "micro") == K.ModelShape(
        16, 32, 2048, 8192, 128256, gated=True
    )
    assert K.model_shape("zoo/base-xl", "micro").n_heads == 4
    assert K.model_shape("no-such-org/no-such-model", "micro") is None  # not cached, never fetched


def test_auto_turns_edges_off_over_the_budget_and_says_why():
    cfg = kit.load_params("06_measurement_audits", "smoke", {"circuit_model": "random/llama-1b"})
    plan = cfg.edge_plan()
    assert (
        not plan.on
        and "123,905 edges" in plan.reason
        and "over edge_budget_s = 60 min" in plan.reason
    )
    assert kit.load_params("06_measurement_audits", "smoke").edge_plan().on, "smoke keeps its edges"
    assert (
        not kit.load_params("06_measurement_audits", "smoke", {"circuit_edges": "off"})
        .edge_plan()
        .on
    )


def test_edges_forced_on_over_the_budget_fail_at_load():
    with pytest.raises(
        ParamsError,
        match="field 'circuit_edges': 'on' but edge patching is 123,905 edges.*edge_budget_s",
    ):
        kit.load_params(
            "06_measurement_audits",
            "smoke",
            {"circuit_model": "random/llama-1b", "circuit_edges": "on"},
        )
    cfg = kit.load_params(
        "06_measurement_audits",
        "smoke",
        {"circuit_model": "random/llama-1b", "circuit_edges": "on", "edge_budget_s": 1e12},
    )
    assert cfg.edge_plan().on


def test_mib_without_edges_is_not_testable_and_says_why(make_model):
    from kit.audits.claims import audit_claims

    model = make_model(n_layers=2)
    cfg = kit.load_params("06_measurement_audits", "smoke", {"circuit_edges": "off"})
    cc = circuit_family.circuit_context(
        model, circuit_family.ioi_items(cfg.ioi_task, cfg.n_ioi, model=model), cfg
    )
    assert cc.circuit.edges == []
    results, art = circuit_family.run_circuit_audits(model, cc, cfg, "random")
    mib = results[0]
    assert mib.metric == "MIB" and mib.value is None and art["curve"] is None
    (claim,) = [c for c in audit_claims(results) if c.id == "MIB.vs_null"]
    assert (
        claim.verdict == "not testable here"
        and "edge patching was not run: off (circuit_edges: off)" in claim.why
    )


def test_notebook_01_knows_before_anything_loads_whether_it_can_rank():
    """One real model generated everything, then failed at kit/mui/metric.py:880. Now
    the config says so when it loads: fewer than 3 models run the per-model sections and the law
    and PUR ranking read "not testable" with the count (the real smoke run)."""
    one = kit.load_params(
        "01_utility_law",
        "dryrun",
        {"models": ["twin/llama"], "reference_order": None, "family_pair": None},
    )
    assert one.law_testable() == (
        "not testable: 1 model (twin/llama); the law across models and PUR's ranking need >= 3"
    )
    assert kit.load_params("01_utility_law", "dryrun").law_testable() is None
    with pytest.raises(ParamsError, match="field 'reference_order': lacks \\['twin/mistral'\\]"):
        kit.load_params(
            "01_utility_law",
            "dryrun",
            {"reference_order": ["twin/gemma2", "twin/qwen2", "twin/llama"]},
        )
    with pytest.raises(
        ParamsError, match="field 'reference_order': required when models are not tiny-world"
    ):
        kit.load_params("01_utility_law", "dryrun", {"reference_order": None})


def test_notebook_06_names_need_to_be_single_tokens_of_the_tokenizer():
    """EX2's rare-name group had one single-token name, found after the run started."""
    groups = {"frequent": ["Mary", "John"], "rare": ["Thaddeus", "Philippa"]}
    with pytest.raises(
        ParamsError, match="field 'dif_name_groups': fewer than 2 single-token names of twin/gpt2"
    ):
        kit.load_params("06_measurement_audits", "dryrun", {"dif_name_groups": groups})
    with pytest.raises(ParamsError, match="of zoo/base-xl's tokenizer in \\{'a': 1\\}"):
        kit.load_params(
            "06_measurement_audits",
            "smoke",
            {"dif_name_groups": {"a": ["alice", "Zyxwvut"], "b": ["hugo", "ivan"]}},
        )
    ok = {"a": ["alice", "david"], "b": ["hugo", "ivan"]}  # words of the world's vocabulary
    assert (
        kit.load_params("06_measurement_audits", "smoke", {"dif_name_groups": ok}).dif_name_groups
        == ok
    )


def test_single_token_names_agree_with_the_model_check(make_model):
    from kit.audits.circuits import name_token
    from kit.audits.sources import single_token_names

    model = make_model()
    names = ["alice", "david", "hugo", "Alice", "Zyxwvut", "two words"]

    def by_model(name):
        try:
            name_token(model, name)
            return True
        except ValueError:
            return False

    assert single_token_names(model.tokenizer, names) == [n for n in names if by_model(n)]


def test_notebook_06_needs_an_sae_of_the_audited_model_per_role():
    with pytest.raises(
        ParamsError,
        match="fields sae_arch_a, sae_arch_b, sae_small, sae_large: required for model='twin/gpt2'",
    ):
        kit.load_params(
            "06_measurement_audits", "smoke", {"model": "twin/gpt2", "circuit_model": None}
        )
    with pytest.raises(
        ParamsError,
        match="field 'sae_arch_a': 'twin-sae/llama/blocks.1.hook_resid_post' is an SAE of "
        "twin/llama",
    ):
        kit.load_params(
            "06_measurement_audits",
            "dryrun",
            {"sae_arch_a": "twin-sae/llama/blocks.1.hook_resid_post"},
        )


def test_smollm2_the_issues_case_is_refused_or_switched_off_at_load():
    """On SmolLM2-135M (30 x 9 heads): its 35,776 edges (~48 h here) turn off under
    ``auto``, and the paper's rare-name group has one single-token name in its vocabulary."""
    import yaml

    from kit.models import real

    try:
        real.part_paths("smollm2-135m-instruct")
    except Exception as e:  # noqa: BLE001 (the real model's package is installed by make setup)
        pytest.skip(f"real/smollm2-135m-instruct not installed: {e}")
    smol = {"circuit_model": "real/smollm2-135m-instruct"}
    plan = kit.load_params("06_measurement_audits", "smoke", smol).edge_plan()
    assert not plan.on and "35,776 edges" in plan.reason and "30 layers x 9 heads" in plan.reason
    params = yaml.safe_load((REPO_ROOT / "params" / "06_measurement_audits.yaml").read_text())
    paper = params["profiles"]["paper"]["dif_name_groups"]
    with pytest.raises(
        ParamsError, match="real/smollm2-135m-instruct's tokenizer in \\{'rare': 1\\}"
    ):
        kit.load_params("06_measurement_audits", "smoke", {**smol, "dif_name_groups": paper})


def test_attribution_cost_by_hand():
    """One forward and one backward pass (3 forwards' FLOPs at most) and one dot product per edge,
    whatever the number of edges: SmolLM2's 35,776 edges cost seconds, not days."""
    shape = K.ModelShape(2, 2, 2, 3, 5)
    c = K.edge_attribution_cost(shape, n_prompts=4, device="cpu")
    tokens = 4 * K.IOI_PROMPT_TOKENS
    flops = 3 * K.forward_flops(shape, tokens) + 2 * 13 * tokens * 2
    assert c.n_edges == 13 and c.seconds == pytest.approx(
        2 * K.PASS_OVERHEAD_S + flops / K.CPU_FLOPS
    )
    assert "one forward and one backward pass" in c.text()
    smol = K.ModelShape(30, 9, 576, 1536, 49152, gated=True)
    patching = K.edge_patching_cost(smol, 40, "cpu").seconds
    attribution = K.edge_attribution_cost(smol, 40, "cpu").seconds
    assert patching is not None and attribution is not None
    assert attribution < 60 < 86400 < patching


def test_curve_passes_are_the_forward_passes_the_null_runs(monkeypatch, make_model, ioi_items):
    """The count known before the weights load is the count the random rankings run: one pass per
    distinct set of heads, neither all (m(N)) nor none (m(empty))."""
    from kit.audits import circuits as C
    from kit.audits import mib as M

    model = make_model(n_layers=2)
    b = C.ioi_batch(model, ioi_items[:4])
    means = C.head_means(model, b)
    edges = [C.Edge(u, v, 0.0) for u, v in C.graph_edges(2, 4)]  # the graph's order, as counted
    seeds = (1, 2, 3, 4, 5)
    calls = []
    real = C.run_heads

    def counted(*a, **k):
        calls.append(1)
        return real(*a, **k)

    ends = M.curve_ends(model, b, means)
    monkeypatch.setattr(C, "run_heads", counted)
    monkeypatch.setattr(M, "run_heads", counted)
    M.random_ranking_cprs(model, b, means, edges, M.MIB_THRESHOLDS, seeds, ends)
    expected = K.curve_passes(2, 4, M.MIB_THRESHOLDS, seeds) - 2 - len(M.MIB_THRESHOLDS)
    assert len(calls) == expected > 0
    # every edge kept touches every head: a curve of one threshold at 1.0 runs nothing
    assert K.curve_passes(2, 4, (1.0,), seeds) == 2 + 1


def test_real_profile_scores_edges_by_attribution_within_its_budget():
    """The real profile's MIB runs: attribution and the curve are estimated within edge_budget_s
    (printed, and quoted by the claim); patching the same edges is refused with the way out."""
    from kit.models import real

    try:
        real.part_paths("smollm2-135m-instruct")
    except Exception as e:  # noqa: BLE001 (the real model's package is installed by make setup)
        pytest.skip(f"real/smollm2-135m-instruct not installed: {e}")
    cfg = kit.load_params("06_measurement_audits", "real")
    plan = cfg.edge_plan()
    assert cfg.edge_scores == "attribution" and plan.on and "MIB" not in cfg.not_testable()
    assert "35,776 edges" in plan.reason and "one forward and one backward pass" in plan.reason
    assert "the MIB curve" in plan.reason and "within edge_budget_s" in plan.reason
    assert plan.what_runs().startswith("edges scored by attribution: on (")
    with pytest.raises(ParamsError, match="raise edge_budget_s or edge_scores: attribution"):
        kit.load_params(
            "06_measurement_audits", "real", {"edge_scores": "patching", "circuit_edges": "on"}
        )


def test_unknown_edge_scores_fail_at_load_naming_the_field():
    with pytest.raises(ParamsError, match="edge_scores") as e:
        kit.load_params("06_measurement_audits", "smoke", {"edge_scores": "gradient"})
    assert "patching" in str(e.value) and "attribution" in str(e.value)
