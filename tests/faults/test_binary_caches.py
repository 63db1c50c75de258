"""Fault injection on the binary caches (``.pt``, ``.npz``, ``.npy``): a truncated file, and a
valid-looking wrong value behind a valid key, are named, recomputed and rewritten, never used; a
file written before digests existed is accepted once (when it parses and fits) and gets its digest.
"""

from __future__ import annotations

import importlib
import io
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from kit.core.cached import (
    MISSING,
    DamagedCacheWarning,
    digest_path,
    read_bytes_cached,
    write_bytes_cached,
)


def torch_bytes(obj) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def load_tensor(raw: bytes):
    return torch.load(io.BytesIO(raw), weights_only=True)


def truncate(path: Path) -> None:
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2])


def silently(fn):
    """``fn()`` with every warning an error: a healthy cache is read without a word."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn()


# ------------------------------------------------------------------ the helper itself
def test_a_binary_value_round_trips_with_its_digest(tmp_path):
    path = tmp_path / "v.pt"
    write_bytes_cached(path, torch_bytes(torch.arange(4.0)))
    assert digest_path(path).read_text().strip() != ""
    assert torch.equal(silently(lambda: read_bytes_cached(path, load_tensor)), torch.arange(4.0))
    assert read_bytes_cached(tmp_path / "absent.pt", load_tensor) is MISSING


def test_a_truncated_binary_file_is_named_and_refused(tmp_path):
    path = tmp_path / "v.pt"
    write_bytes_cached(path, torch_bytes(torch.arange(4.0)))
    truncate(path)
    with pytest.warns(DamagedCacheWarning, match=f"{path}.*do not match the digest"):
        assert read_bytes_cached(path, load_tensor) is MISSING


def test_a_valid_looking_wrong_binary_value_is_refused(tmp_path):
    path = tmp_path / "v.pt"
    write_bytes_cached(path, torch_bytes(torch.arange(4.0)))
    path.write_bytes(torch_bytes(torch.arange(4.0) + 1))  # parses, right shape, wrong numbers
    with pytest.warns(DamagedCacheWarning, match=f"{path}.*changed"):
        assert read_bytes_cached(path, load_tensor) is MISSING


def test_an_earlier_versions_file_is_accepted_once_and_gets_its_digest(tmp_path):
    path = tmp_path / "v.pt"
    path.write_bytes(torch_bytes(torch.arange(4.0)))  # no digest: written before they existed
    assert torch.equal(silently(lambda: read_bytes_cached(path, load_tensor)), torch.arange(4.0))
    assert digest_path(path).is_file(), "the digest is written on the first good read"
    path.write_bytes(torch_bytes(torch.arange(4.0) + 1))
    with pytest.warns(DamagedCacheWarning, match="changed"):
        assert read_bytes_cached(path, load_tensor) is MISSING


def test_an_earlier_versions_truncated_or_invalid_file_is_refused(tmp_path):
    path = tmp_path / "v.pt"
    path.write_bytes(torch_bytes(torch.arange(4.0))[:40])
    with pytest.warns(DamagedCacheWarning, match=f"{path}: cannot be read"):
        assert read_bytes_cached(path, load_tensor) is MISSING
    assert not digest_path(path).exists(), "a refused file gets no digest"
    path.write_bytes(torch_bytes(torch.arange(3.0)))
    check = lambda t: None if t.shape == (4,) else f"shape {tuple(t.shape)}"  # noqa: E731
    with pytest.warns(DamagedCacheWarning, match="invalid value: shape \\(3,\\)"):
        assert read_bytes_cached(path, load_tensor, check) is MISSING


# ------------------------------------------------------------------ head scores (.pt)
@pytest.fixture
def head_cache(tmp_path, monkeypatch):
    """kit.audits.circuits.head_scores on a stand-in 2-layer, 3-head model whose patching is a
    counted deterministic function, cached at a temporary path."""
    from kit.audits import circuits

    path = tmp_path / "head-scores" / "x.pt"
    calls = []

    def run_heads(model, batch, means, ablate=()):
        calls.append(ablate)
        return torch.tensor([10.0 - sum(3 * L + H for L, H in ablate)])

    monkeypatch.setattr(circuits, "_scores_path", lambda *a: path)
    monkeypatch.setattr(circuits, "run_heads", run_heads)
    monkeypatch.setattr(
        circuits, "all_heads", lambda m: [(L, H) for L in range(2) for H in range(3)]
    )
    model = SimpleNamespace(cfg=SimpleNamespace(n_layers=2, n_heads=3))
    circuits._SCORES.clear()

    def scores():
        circuits._SCORES.clear()  # from disk, not memory
        return circuits.head_scores(model, None, torch.zeros(1))  # type: ignore[arg-type]

    yield path, calls, scores
    circuits._SCORES.clear()


def test_a_truncated_head_score_file_is_recomputed_and_rewritten(head_cache):
    path, calls, scores = head_cache
    first = scores()
    assert first[1, 2] == 5.0 and len(calls) == 7 and digest_path(path).is_file()
    assert torch.equal(silently(scores), first) and len(calls) == 7, "read from the cache"
    truncate(path)
    with pytest.warns(DamagedCacheWarning, match=str(path)):
        assert torch.equal(scores(), first)
    assert len(calls) == 14, "recomputed"
    assert torch.equal(silently(scores), first) and len(calls) == 14, "and rewritten"


def test_a_wrong_head_score_table_behind_a_valid_key_is_recomputed(head_cache):
    path, calls, scores = head_cache
    first = scores()
    path.write_bytes(torch_bytes(torch.zeros(2, 3)))  # the right shape, wrong numbers
    with pytest.warns(DamagedCacheWarning, match=f"{path}.*changed"):
        assert torch.equal(scores(), first)
    assert len(calls) == 14


# ------------------------------------------------------------------ concept activations (.npz)
class _FakeEncoder:
    """Token activations as deterministic functions of the words (stands in for MiniLM)."""

    name = "fake"

    def token_activations(self, texts, site, batch_size=32, max_length=256):
        return [
            torch.stack([torch.tensor([float(len(w)), 1.0, -1.0, 0.5]) for w in t.split()])
            for t in texts
        ]


@pytest.fixture
def concept_cache(tmp_path, monkeypatch):
    from kit.cg import saes as cg_saes
    from kit.cg.bench import synthetic_sae

    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path))
    torch.manual_seed(0)
    sae = synthetic_sae(4, d_sae=64, k=3)
    loads = []
    monkeypatch.setattr(
        cg_saes, "load_minilm_sae", lambda name, device="cpu": loads.append(name) or sae
    )
    name = "minilm-sae/L4/topk-64-k3-t1000"
    texts = ["a bb ccc", "dd", "e f g"]

    def concepts():
        return cg_saes.item_concepts(_FakeEncoder(), [name], texts, batch_size=2)

    yield tmp_path / "cg" / "acts", name, loads, concepts


def test_a_truncated_concept_file_is_recomputed_and_rewritten(concept_cache):
    folder, name, loads, concepts = concept_cache
    first, lengths = concepts()
    assert len(loads) == 1 and lengths.tolist() == [3, 1, 3]
    (npz,) = folder.glob("*.npz")
    silently(concepts)
    assert len(loads) == 1, "read from the cache"
    truncate(npz)
    with pytest.warns(DamagedCacheWarning, match=str(npz)):
        again, _ = concepts()
    assert len(loads) == 2 and (again[name] != first[name]).nnz == 0
    silently(concepts)
    assert len(loads) == 2, "rewritten"


def test_a_wrong_concept_matrix_or_length_list_behind_a_valid_key_is_recomputed(concept_cache):
    folder, name, loads, concepts = concept_cache
    first, lengths = concepts()
    (npz,) = folder.glob("*.npz")
    buf = io.BytesIO()
    sp.save_npz(buf, sp.csr_matrix(first[name].toarray() * 2))  # same shape, other values
    npz.write_bytes(buf.getvalue())
    with pytest.warns(DamagedCacheWarning, match=f"{npz}.*changed"):
        again, _ = concepts()
    assert len(loads) == 2 and (again[name] != first[name]).nnz == 0
    (npy,) = folder.glob("*.lengths.npy")
    buf = io.BytesIO()
    np.save(buf, lengths + 1)
    npy.write_bytes(buf.getvalue())
    with pytest.warns(DamagedCacheWarning, match=f"{npy}.*changed"):
        _, again_lengths = concepts()
    assert len(loads) == 3 and again_lengths.tolist() == lengths.tolist()


# ------------------------------------------------------------------ shortcut task data (.pt)
def test_a_truncated_or_changed_task_data_file_is_named_and_rewritten(tmp_path, monkeypatch):
    from kit.shortcut import causal_jobs
    from kit.shortcut.items import TaskData

    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path))
    data = TaskData(torch.tensor([[1, 2, 3]]), torch.tensor([3]), [[4]], 1)
    path = Path(causal_jobs.save_task_data(data))
    assert silently(lambda: causal_jobs.read_task_data(str(path))).targets == [[4]]
    truncate(path)
    with pytest.warns(DamagedCacheWarning, match=str(path)):
        with pytest.raises(ValueError, match=f"task-data file {path}"):
            causal_jobs.read_task_data(str(path))
    with pytest.warns(DamagedCacheWarning, match=str(path)):
        assert causal_jobs.save_task_data(data) == str(path)  # rewritten before any job reads it
    assert silently(lambda: causal_jobs.read_task_data(str(path))).targets == [[4]]
    other = TaskData(torch.tensor([[1, 2, 3]]), torch.tensor([3]), [[5]], 1)
    path.write_bytes(torch_bytes(other))  # a valid item set, another answer, the same name
    with pytest.warns(DamagedCacheWarning, match=f"{path}.*changed"):
        with pytest.raises(ValueError, match="missing or damaged"):
            causal_jobs.read_task_data(str(path))


def test_an_earlier_versions_task_data_file_is_checked_by_its_name(tmp_path, monkeypatch):
    from kit.shortcut import causal_jobs
    from kit.shortcut.items import TaskData

    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path))
    path = Path(causal_jobs.save_task_data(TaskData(torch.zeros(1, 2), torch.ones(1), [[0]], 1)))
    digest_path(path).unlink()  # as an earlier version wrote it
    assert silently(lambda: causal_jobs.read_task_data(str(path))).n == 1
    assert digest_path(path).is_file()
    digest_path(path).unlink()
    path.write_bytes(torch_bytes(TaskData(torch.ones(1, 2), torch.ones(1), [[0]], 1)))
    with pytest.warns(DamagedCacheWarning, match="not its name"):
        with pytest.raises(ValueError, match=str(path)):
            causal_jobs.read_task_data(str(path))


# ------------------------------------------------------------------ extra fine-tunes (.pt)
class _Tiny(torch.nn.Linear):
    def __init__(self):
        super().__init__(2, 2)
        self.cfg = SimpleNamespace(model_name="")


@pytest.fixture
def extra_cache(tmp_path, monkeypatch):
    """kit.world.members.extra_finetune with its training replaced by a counted stand-in (a
    2 x 2 linear layer's weights), cached at a temporary path."""
    members = importlib.import_module("kit.world.members")  # kit.world.members is a function too

    path = tmp_path / "extra" / "x.pt"
    trained = []

    def finetune(spec, f):
        trained.append(f.name)
        m = _Tiny()
        with torch.no_grad():
            m.weight.copy_(torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
            m.bias.fill_(0.5)
        return m, None, None

    monkeypatch.setattr(members, "world_spec", lambda w: SimpleNamespace(name="w", seed=0))
    monkeypatch.setattr(members, "check_after", lambda f: None)
    monkeypatch.setattr(members, "extra_path", lambda f, spec: path)
    monkeypatch.setattr(members, "is_pinned", lambda: True)
    monkeypatch.setattr(members, "finetune", finetune)
    monkeypatch.setattr(members, "make_model", lambda arch, seed: _Tiny())
    monkeypatch.setattr(members, "_arch_of", lambda spec, parent: None)
    f = SimpleNamespace(name="zoo/base-m+x", parent="zoo/base-m")

    def model():
        return members.extra_finetune(f, "w")  # type: ignore[arg-type]

    yield path, trained, model


def test_a_truncated_extra_fine_tune_is_retrained_and_rewritten(extra_cache):
    path, trained, model = extra_cache
    m = model()
    assert m.weight[1, 0] == 3.0 and trained == ["zoo/base-m+x"] and digest_path(path).is_file()
    assert silently(model).weight[1, 0] == 3.0 and len(trained) == 1, "read from the cache"
    truncate(path)
    with pytest.warns(DamagedCacheWarning, match=str(path)):
        assert model().weight[1, 0] == 3.0
    assert len(trained) == 2
    assert silently(model).weight[1, 0] == 3.0 and len(trained) == 2, "rewritten"


def test_a_wrong_extra_fine_tune_behind_a_valid_key_is_retrained(extra_cache):
    path, trained, model = extra_cache
    model()
    path.write_bytes(torch_bytes(_Tiny().state_dict()))  # other weights, the same layout
    with pytest.warns(DamagedCacheWarning, match=f"{path}.*changed"):
        assert model().weight[1, 0] == 3.0
    assert len(trained) == 2


def test_an_earlier_versions_extra_fine_tune_is_kept_when_it_fits(extra_cache):
    path, trained, model = extra_cache
    model()
    digest_path(path).unlink()  # as an earlier version wrote it: no retraining
    assert silently(model).weight[1, 0] == 3.0 and len(trained) == 1
    assert digest_path(path).is_file()
    digest_path(path).unlink()
    path.write_bytes(torch_bytes({"weight": torch.zeros(3, 3)}))  # parses, fits no model here
    with pytest.warns(DamagedCacheWarning, match=f"{path}: does not fit the model"):
        assert model().weight[1, 0] == 3.0
    assert len(trained) == 2


# ------------------------------------------------------------------ NeuronVote staged arrays (.npy)
def test_a_truncated_or_changed_staged_array_is_named_and_rewritten(tmp_path, monkeypatch):
    from kit.neuronvote import units as nv_units

    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path))
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    key = nv_units.stage_array(a)
    path = tmp_path / "neuronvote" / "arrays" / f"{key}.npy"
    assert silently(lambda: nv_units.stage_array(a)) == key  # staged once, then checked
    truncate(path)
    with pytest.warns(DamagedCacheWarning, match=f"{path}: cannot be read"):
        assert nv_units.stage_array(a) == key
    np.testing.assert_array_equal(nv_units.load_array(key), a)
    buf = io.BytesIO()
    np.save(buf, a + 1)  # a valid array of the same shape and dtype, other numbers
    path.write_bytes(buf.getvalue())
    with pytest.warns(DamagedCacheWarning, match=f"{path}.*changed"):
        assert nv_units.stage_array(a) == key
    np.testing.assert_array_equal(nv_units.load_array(key, mmap=False), a)
