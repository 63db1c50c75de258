"""Notebook 03's causal scores as one job per model (kit.shortcut.causal_jobs): on the dryrun
profile (random twins, benchmark items, the paper's sampling; and greedy), locate gives the same
accuracies, scores and ranking computed here and on the inline, local and Ray engines."""

from __future__ import annotations

import numpy as np
import pytest

import kit
from kit.core.paths import cache_dir
from kit.shortcut import causal_jobs, ranking, study


def _locate(s, cfg, remote):
    return ranking.locate(
        s.model_con,
        s.model_un,
        s.base,
        s.locate,
        cfg.group_size,
        max_rows=cfg.max_rows,
        max_new_tokens=cfg.max_new_tokens,
        remote=remote,
    )


def _same(a: ranking.Located, b: ranking.Located, label: str) -> None:
    for method in ("causal_exact", "causal_tf"):
        x, y = getattr(a, method), getattr(b, method)
        assert (x.acc_con, x.acc_un) == (y.acc_con, y.acc_un), (label, method)
        for f in ("acc_con_patched", "acc_un_patched", "score"):
            assert np.array_equal(getattr(x, f), getattr(y, f), equal_nan=True), (label, method, f)
            assert getattr(x, f).dtype == getattr(y, f).dtype, (label, method, f)
    assert a.ranked == b.ranked, label


def test_a_remote_must_name_every_model():
    r = causal_jobs.Remote({"con": "a", "un": "b"}, {}, {"engine": "inline"})
    with pytest.raises(ValueError, match="base"):
        causal_jobs.pair_accuracies({"con": None, "un": None}, None, None, [], 8, 1, 1, r)  # type: ignore[arg-type]


@pytest.mark.slow
@pytest.mark.parametrize("decoding", ["sample", "greedy"])
def test_causal_jobs_give_the_scores_computed_here_on_every_engine(
    decoding, tmp_path, monkeypatch, local_ray
):
    cfg = kit.load_params("03_shortcut_neurons", "dryrun", overrides={"decoding": decoding})
    s = study.setup(cfg)  # the twins, built once in the default cache
    twins = cache_dir() / "twins"
    # sampled answers on Ray; greedy ones (cached by content) inline and in local workers
    engines = (
        [("ray", {"engine": "ray"})]
        if decoding == "sample"
        else [("inline", {"engine": "inline"}), ("local", {"engine": "local", "max_workers": 2})]
    )
    out = {}
    for label, jobs in [("here", None), *engines]:
        root = tmp_path / label
        root.mkdir()
        (root / "twins").symlink_to(twins)
        # each its own cache: greedy answers are cached per (model, donor, set, prompt), so each
        # engine computes them; workers and Ray tasks inherit the variable
        monkeypatch.setenv("KIT_CACHE_DIR", str(root))
        remote = None if jobs is None else study.remote(cfg.model_copy(update=jobs), s)
        out[label] = _locate(s, cfg, remote)
    here = out["here"]
    assert len(here.causal_exact.groups) > 1 and np.isfinite(here.causal_tf.score).all()
    for label, _ in engines:
        _same(here, out[label], label)
    if decoding == "greedy":
        assert any((tmp_path / "local" / "items").glob("*patched*")), "workers wrote their caches"
    s.models.release_all()
