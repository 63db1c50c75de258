"""kit.neuronvote.study: the per-layer/per-concept driver and its analyses, on synthetic data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from kit.neuronvote import methods as nv
from kit.neuronvote import study as nvs
from kit.neuronvote.concepts import TaggedSentence, build_concept_tasks


def test_first_middle_last_matches_paper_layers():
    assert nvs.first_middle_last(12) == [0, 5, 11], "paper layers 1/6/12 of 12 are blocks 0/5/11"
    assert nvs.first_middle_last(6) == [0, 2, 5]
    assert nvs.first_middle_last(1) == [0]
    with pytest.raises(ValueError):
        nvs.first_middle_last(0)


def test_run_study_long_tables(study):
    s = study.scores
    assert set(s.position) == {"first", "middle", "last"} and set(s.concept) == {"A", "B"}
    assert set(s.metric) == {"AvgOverlap", "NeuronVote"} and set(s.s) == {5, 10}
    # 3 layers x 2 concepts x 2 s x 2 metrics x 9 methods
    assert len(s) == 3 * 2 * 2 * 2 * 9
    assert s.score.between(0, 1).all()
    assert len(study.accuracy) == 3 * 2 * 1 * 9 and study.accuracy.accuracy.between(0, 1).all()
    assert set(study.pairwise) == {"first", "middle", "last"}


def test_run_study_rejects_bad_methods_and_s():
    vectors = {0: np.zeros((10, 4))}
    with pytest.raises(ValueError, match="unknown methods"):
        nvs.run_study([], vectors, "m", "s", methods=["probeless", "nope"], voters=["probeless"])
    with pytest.raises(ValueError, match="exceed"):
        nvs.run_study([], vectors, "m", "s", s_values=(10,), progress=False)


@pytest.mark.parametrize("profile", ["tiny", "smoke", "paper", "dryrun", "real", "realsmoke"])
def test_params_profiles_validate(profile):
    from kit import load_params

    cfg = load_params("05_neuronvote", profile)
    assert set(cfg.voters) <= set(cfg.methods)
    if profile == "paper":
        assert cfg.encoder == "bert-base-cased" and set(cfg.extra_encoders) == {
            "roberta-base",
            "xlm-roberta-base",
        }


def test_config_rejects_bad_values():
    from kit import ParamsError, load_params

    with pytest.raises(ParamsError, match="methods"):
        load_params("05_neuronvote", "smoke", overrides={"methods": ["probeless", "svm"]})
    with pytest.raises(ParamsError, match="iou_percentile"):
        load_params("05_neuronvote", "smoke", overrides={"iou_percentile": 100})
    with pytest.raises(ParamsError, match="voters"):
        load_params("05_neuronvote", "smoke", overrides={"voters": ["lca"]})
    # a zoo decoder has no English vocabulary
    with pytest.raises(ParamsError, match="decoder_source"):
        load_params("05_neuronvote", "smoke", overrides={"decoder_source": "ud_ewt"})


def test_testability_names_what_ran_and_what_did_not(study):
    from kit import load_params
    from kit.neuronvote.settings import NeuronVoteStudy, setting, testability

    cfg = load_params("05_neuronvote", "smoke", overrides={"chunking": False, "all_layers": False})
    one = nvs.StudyResult(
        study.model,
        study.site,
        study.scores[study.scores.layer == study.scores.layer.min()],
        study.accuracy,
    )
    st = NeuronVoteStudy(
        encoder=setting("encoder", study, pd.DataFrame(), cfg, "ud_ewt", 50, None),
        decoder=setting("decoder", one, pd.DataFrame(), cfg, "world-roles", 50, None),
    )
    text = "\n".join(testability(cfg, st))
    assert "(3 layers)" in text and "(1 layer)" in text
    assert (
        "chunking (Table 6): switched off" in text
        and "every layer (Tables 7-14): switched off" in text
    )
    assert "SEM (Table 5)" in text and "a reproduction on a decoder" in text


def test_tie_breaks_independent_random_differs_across_concepts(study):
    """Random's ranking differs across concepts and layers, and is no method's tie order."""
    randoms = [r["random"] for r in study.rankings.values()]
    assert len({tuple(r) for r in randoms}) == len(randoms), (
        "Random must be a fresh draw per concept and layer"
    )
    for rankings in study.rankings.values():
        # the zero-weight tail is ordered by the tie-break alone
        lasso_tail = rankings["lasso"][10:]
        for m, r in rankings.items():
            if m != "random":
                assert not np.array_equal(rankings["random"], r), f"Random equals {m}'s ranking"
        assert not np.array_equal(
            lasso_tail, [n for n in rankings["random"] if n in set(lasso_tail)]
        ), "Lasso's ties must not follow Random's permutation (one shared seed)"


def test_random_averaged_over_draws(study):
    nv_random = study.scores[
        (study.scores.method == "random") & (study.scores.metric == "AvgOverlap")
    ]
    # A mean of 20 draws of IoU(top-s) is not on the 1/(2s-1) lattice of a single draw's values.
    lattice = {k / (2 * s - k) for s in (5, 10) for k in range(s + 1)}
    assert any(min(abs(v - q) for q in lattice) > 1e-9 for v in nv_random.score), (
        "Random is a single draw"
    )


def test_intervals_consensus_subsets_lobby(study):
    iv = nvs.score_intervals(study, n_boot=200)
    assert ((iv.lo <= iv["mean"] + 1e-12) & (iv["mean"] <= iv.hi + 1e-12)).all()
    assert set(iv.position) == {"first", "middle", "last", "all"}
    sub = nvs.consensus_subsets(study, "probeless", "lca")
    # subsets of Gaussian, IoU, Lasso, Ridge
    assert len(sub) == 2**4 - 1 and sub.n_consensus_methods.max() == 4
    lobby = nvs.lobby_effect(study, "lasso", copies=(0, 3, 60))
    # Clones of Lasso vote for Lasso's own neurons: Lasso's NeuronVote can only rise (here to 1: the
    # clones outvote the rest), and at k = 0 it equals the study's own NeuronVote.
    assert lobby.loc[3, "Lasso"] >= lobby.loc[0, "Lasso"]
    own = study.scores[
        (study.scores.method == "lasso") & (study.scores.metric == "NeuronVote")
    ].score.mean()
    assert lobby.loc[0, "Lasso"] == pytest.approx(own, abs=1e-3)
    # Non-voters (a "new method") are scored against the lobbied consensus too. With 60 clones
    # Lasso's s-th neuron has >= 61 points and any other neuron <= 5 voters x s = 50, so the
    # consensus is Lasso's own top-s and a non-voter's NeuronVote is its overlap with Lasso.
    assert {"MeanSelect", "Random"} <= set(lobby.columns)
    ms = [
        nv.overlap(r["meanselect"][:s], r["lasso"][:s])
        for r in study.rankings.values()
        for s in (5, 10)
    ]
    assert lobby.loc[60, "MeanSelect"] == pytest.approx(np.mean(ms), abs=1e-3)


def test_reseeds_rerank_all_but_the_seedless_gaussian():
    rng = np.random.default_rng(1)
    tags = rng.choice(["A", "O"], size=600, p=[0.4, 0.6])
    sents = [
        TaggedSentence(tuple(f"w{i + j}" for j in range(10)), tuple(tags[i : i + 10]))
        for i in range(0, 600, 10)
    ]
    tasks = build_concept_tasks(sents, ["A"], min_examples=100, max_per_class=100, seed=0)
    v = rng.normal(size=(600, 30))
    v[:, 3] += 2.0 * (tags == "A")
    res = nvs.run_study(
        tasks,
        {0: v, 1: v + 0.1 * rng.normal(size=v.shape)},
        model="syn",
        site="x",
        s_values=(5,),
        accuracy_s=(5,),
        pairwise_s=(5,),
        progress=False,
        gaussian_max_neurons=5,
        random_draws=2,
        reseeds=2,
        seed=4,
    )
    rs = res.reseed_scores
    assert sorted(rs.seed.unique()) == [4, 5, 6]
    own = rs[rs.seed == 4].drop(columns="seed").reset_index(drop=True)
    pd.testing.assert_frame_equal(own, res.scores.reset_index(drop=True))
    by = rs.groupby(["method", "metric", "seed"]).score.mean().unstack("seed")
    assert by.loc[("random", "AvgOverlap")].nunique() > 1, "Random must be redrawn under each seed"
    st = nvs.seed_stability(res)
    assert set(st.columns) >= {"method", "metric", "spread", "n_seeds"} and (st.n_seeds == 3).all()
    assert (st.spread >= 0).all()
    with pytest.raises(ValueError, match="reseeds"):
        nvs.run_study(
            tasks,
            {0: v},
            model="syn",
            site="x",
            s_values=(5,),
            accuracy_s=(5,),
            pairwise_s=(5,),
            progress=False,
            reseeds=-1,
        )
