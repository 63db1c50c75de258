import numpy as np
import pytest
import torch

from kit.audits import stability as ST


def test_reinitialize_writes_into_the_sae_itself():
    g = torch.Generator().manual_seed(0)
    sae = ST.TinySAE(8, 16, g)
    param = sae.W_dec
    before = sae.W_dec.detach().clone()
    which = torch.zeros(16, dtype=torch.bool)
    which[:4] = True
    ST.reinitialize_features(sae, which, g)
    assert sae.W_dec is param, "re-initialisation must modify the parameters in place, not a copy"
    assert (sae.W_dec.detach()[:4] != before[:4]).any(1).all(), "selected features were not re-initialised"
    assert torch.equal(sae.W_dec.detach()[4:], before[4:]), "core features must be left alone"
    assert torch.allclose(sae.W_enc.detach()[:, :4], sae.W_dec.detach()[:4].T)


def test_dead_feature_has_zero_importance():
    g = torch.Generator().manual_seed(0)
    sae = ST.TinySAE(4, 6, g)
    with torch.no_grad():
        sae.b_enc[2] = -1e6
    imp = ST.feature_importance(sae, torch.randn(50, 4))
    assert imp[2] == 0 and imp.sum() > 0


def test_core_set_hand_case():
    assert ST.core_set(torch.tensor([0.1, 0.9, 0.5, 0.0]), 0.5) == {1, 2}
    assert ST.core_set(torch.zeros(4), 0.5) == set(), "dead features are never core"


def test_core_stability_really_retrains_and_is_deterministic():
    x = torch.randn(400, 8) @ torch.randn(8, 8)
    r1 = ST.core_stability(x, d_sae=32, n_cycles=3, steps=20, seed=0)
    r2 = ST.core_stability(x, d_sae=32, n_cycles=3, steps=20, seed=0)
    assert r1.values["reinit_changed_frac"] == 1.0, "non-core features must change on re-initialisation"
    assert 0 <= r1.value <= 1 and len(r1.values["overlaps"]) == 2
    assert r1.values == r2.values, "same seed must give the same result"
    with pytest.raises(ValueError, match="n_cycles"):
        ST.core_stability(x, n_cycles=1)


def test_reproducibility_identical_runs_pass():
    run = {f"p{i}": float(i) for i in range(10)}
    r = ST.reproducibility([run, dict(run), dict(run)])
    assert r.passed and r.values["coherence_score"] == pytest.approx(1.0) and r.value == 0.0


def test_reproducibility_aligns_by_id_not_position():
    run = {f"p{i}": float(i) for i in range(10)}
    shuffled = dict(reversed(list(run.items())))  # same values, other order: the sketch compared by position
    r = ST.reproducibility([run, shuffled])
    assert r.values["coherence_score"] == pytest.approx(1.0), "runs must be compared on aligned prompt ids"


def test_reproducibility_detects_shift_and_reversal():
    run = {f"p{i}": float(i + 1) for i in range(10)}
    shifted = {k: v * 1.3 for k, v in run.items()}
    r = ST.reproducibility([run, shifted])
    assert r.values["deviation_rate"] == 1.0 and not r.passed
    rev = {k: 11.0 - v for k, v in run.items()}
    assert ST.reproducibility([run, rev]).values["coherence_score"] == pytest.approx(-1.0)


def test_reproducibility_few_shared_ids():
    r = ST.reproducibility([{"a": 1.0, "b": 2.0}, {"a": 1.0, "c": 2.0}])
    assert r.values["n_common_ids"] == 1 and np.isnan(r.values["coherence_score"] or np.nan)
    with pytest.raises(ValueError, match="2 runs"):
        ST.reproducibility([{"a": 1.0}])


def test_subsample_ids_seeded():
    ids = [str(i) for i in range(10)]
    assert ST.subsample_ids(ids, 0.5, 1) == ST.subsample_ids(ids, 0.5, 1)
    assert len(ST.subsample_ids(ids, 0.5, 1)) == 5
    assert sorted(ST.subsample_ids(ids, 1.0, 3)) == sorted(ids)


def test_cg_runs_full_sample_is_reproducible():
    rng = np.random.default_rng(0)
    acts = {"a": rng.random((6, 5)), "b": rng.random((4, 5))}
    runs = ST.cg_runs(acts, [0, 1], frac=1.0)
    assert not isinstance(runs, str), runs
    r = ST.reproducibility(runs)
    assert r.values["coherence_score"] == pytest.approx(1.0)
