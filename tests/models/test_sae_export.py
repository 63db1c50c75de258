"""kit.models.sae_export: kit's SAEs and labels written as sae_lens / Neuronpedia read them, and
read back: sae_lens's SAE.load_from_disk gives the same encode/decode, kit's reader of Neuronpedia's
exports gives the labels."""

from __future__ import annotations

import gzip
import importlib
import json
from pathlib import Path

import pytest
import torch

import kit
from kit.models import hub
from kit.models import sae_export as ex

ZOO_SAE = "zoo-sae/base-m/topk-128"


def read_back_explanations(export: ex.SAEExport) -> dict[int, str]:
    """kit.models.hub.neuronpedia_explanations (written against Neuronpedia's public export
    layout) reading the exported folder instead of Neuronpedia's bucket."""
    root = export.path / "neuronpedia"

    def local(url: str, timeout: float):
        path = root / url.removeprefix(hub.NEURONPEDIA_EXPORTS + "/")
        return path.read_bytes() if path.is_file() else None

    import unittest.mock

    with unittest.mock.patch.object(hub, "_read_url", local):
        return hub.neuronpedia_explanations(export.neuronpedia_id)


def same_sae(original, exported_dir: Path) -> None:
    from sae_lens import SAE

    loaded = SAE.load_from_disk(exported_dir)
    assert type(loaded) is type(original) and loaded.cfg.d_sae == original.cfg.d_sae
    x = torch.randn(64, original.cfg.d_in) * 3
    with torch.no_grad():
        f0, f1 = original.encode(x), loaded.encode(x)
        torch.testing.assert_close(f1, f0, rtol=0, atol=0)
        torch.testing.assert_close(loaded.decode(f1), original.decode(f0), rtol=0, atol=0)
    assert (f0 > 0).any(), "no feature fired: the comparison would be empty"


def test_zoo_sae_exports_for_sae_lens_and_neuronpedia(micro_world, tmp_path):
    world_saes = importlib.import_module("kit.world.saes")  # kit.world.saes is also a function
    out = tmp_path / "export"
    export = ex.export_sae(ZOO_SAE, out, world=micro_world)
    assert export.neuronpedia_id == "kit-micro-base-m/0-kit-topk-128"
    original = world_saes.load_world_sae(ZOO_SAE, world=micro_world)
    same_sae(original, out)
    cfg = json.loads((out / "cfg.json").read_text())
    assert cfg["metadata"]["neuronpedia_id"] == export.neuronpedia_id
    assert (
        cfg["metadata"]["hook_name"]
        == original.cfg.metadata.hook_name
        == "blocks.0.hook_resid_post"
    )
    labels = world_saes.sae_labels(ZOO_SAE, world=micro_world)
    assert json.loads((out / "labels.json").read_text())["labels"] == [
        labels[i] for i in range(128)
    ]
    live = {i: lab for i, lab in labels.items() if lab != "(dead)"}
    assert 0 < len(live) < 128 and export.n_labelled == len(live)
    assert read_back_explanations(export) == live, (
        "Neuronpedia's export reader does not get the labels back"
    )
    rows = [
        json.loads(line)
        for line in gzip.decompress(export.explanations[0].read_bytes()).splitlines()
    ]
    assert set(rows[0]) == {
        "modelId",
        "layer",
        "index",
        "description",
        "typeName",
        "explanationModelName",
        "authorId",
    }
    assert rows[0]["modelId"] == "kit-micro-base-m" and rows[0]["layer"] == "0-kit-topk-128"
    # the same export twice is the same bytes; a good export is never overwritten by accident
    again = ex.export_sae(ZOO_SAE, tmp_path / "again", world=micro_world)
    assert again.explanations[0].read_bytes() == export.explanations[0].read_bytes()
    with pytest.raises(FileExistsError, match="not empty"):
        ex.export_sae(ZOO_SAE, out, world=micro_world)
    with pytest.raises(ValueError, match="model_id='bad id'"):
        ex.export_sae(ZOO_SAE, out, world=micro_world, model_id="bad id", overwrite=True)
    same_sae(original, out)  # still the good one


def test_neuronpedia_batches_split_rows_as_its_exporter_does(micro_world, tmp_path, monkeypatch):
    # FEATURES_EXPLANATIONS_BATCH_SIZE of Neuronpedia's exporter
    assert ex.NEURONPEDIA_BATCH == 1024
    monkeypatch.setattr(ex, "NEURONPEDIA_BATCH", 10)
    export = ex.export_sae(ZOO_SAE, tmp_path / "e", world=micro_world, model_id="m", source_id="s")
    sizes = [len(gzip.decompress(p.read_bytes()).splitlines()) for p in export.explanations]
    assert (
        sum(sizes) == export.n_labelled and all(n == 10 for n in sizes[:-1]) and 0 < sizes[-1] <= 10
    )
    assert len(read_back_explanations(export)) == export.n_labelled


def test_minilm_sae_exports_with_its_concept_labels(monkeypatch, tmp_path):
    from kit.cg import saes as cg_saes
    from kit.core.paths import DataError

    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))
    torch.set_num_threads(1)
    name = "minilm-sae/L4/topk-64-k4-t1500"
    try:
        export = ex.export_sae(name, tmp_path / "minilm")
    except DataError as e:
        pytest.skip(f"data directory unavailable: {e}")
    assert export.neuronpedia_id == "all-minilm-l6-v2/4-kit-topk-64"
    same_sae(kit.load_sae(name), export.path)
    labels = cg_saes.minilm_sae_labels(name)
    assert read_back_explanations(export) == {
        i: lab for i, lab in enumerate(labels) if lab != "(dead)"
    }


def test_other_saes_are_refused_by_name():
    with pytest.raises(ValueError, match="zoo-sae/<member>/<arch>-<width>"):
        ex.export_sae("gpt2-small-res-jb/blocks.8.hook_resid_pre", "/nonexistent")
