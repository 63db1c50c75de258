"""GGUF files (llama.cpp's format) as ordinary Hugging Face model directories.

In: a ``.gguf`` file (or a directory holding exactly one). Out: a Hugging Face directory
(``config.json``, ``model.safetensors`` in float32, the tokenizer and its chat template) under
``<KIT_CACHE_DIR>/gguf/<sha256 of the file>/``, written once by ``transformers`` with the
``gguf`` package (``from_pretrained(dir, gguf_file=..., GgufConfig(dequantize=True))``), then
loaded like any local model (``kit.load_model``).

The directory is keyed by the file's content, not its name or place: a file replaced in place
gets a new directory. Hashing a multi-GB file takes seconds, so the hash is remembered across
processes as every model file's is (:func:`kit.models.identity.file_sha256`: by path, size, mtime,
ctime, inode and device) and recomputed only when those change.

Dequantising is slow on a CPU (transformers parses the file's metadata, the vocabulary included,
once for the config, once for the weights and once for the tokenizer: about 2 min for SmolLM2-135M
and 6 min for Gemma-3-270M on a busy 2-core machine), which is why it happens once per file.
The weights are the GGUF's dequantised values: a Q4 file gives the Q4 model, not the original.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from kit.core.paths import atomic_dir, build_lock, cache_dir, file_mode
from kit.models.identity import file_sha256  # the file's sha256, remembered across processes

SOURCE_FILE = "kit_gguf_source.json"
"""Written beside the dequantised weights: which file (sha256, name, size) they came from. Nothing
else: the directory's content is the model's identity in every cache key
(:func:`kit.models.identity.path_identity`), so a timing written here would give each
dequantisation of the same file another identity, and orphan the fine-tunes and cached answers
keyed on the first."""


class GGUFError(ValueError):
    """A GGUF file or directory kit cannot use; the message names the path and the likely cause."""


@dataclass(frozen=True)
class Dequantised:
    """A GGUF file's Hugging Face directory: ``path``, the file's ``sha256``, and the seconds the
    dequantisation took (0.0 when the directory was already in the cache)."""

    path: Path
    sha256: str
    seconds: float


def is_gguf(path: Path) -> bool:
    """A ``.gguf`` file, or a directory without ``config.json`` that holds ``.gguf`` files."""
    path = Path(path)
    if path.is_file():
        return path.suffix == ".gguf"
    return path.is_dir() and not (path / "config.json").exists() and any(path.glob("*.gguf"))


def find_gguf(path: Path) -> Path:
    """The one ``.gguf`` file of ``path`` (a file, or a directory holding exactly one)."""
    path = Path(path)
    if path.is_file():
        if path.suffix != ".gguf":
            raise GGUFError(f"{path}: not a .gguf file")
        return path
    found = sorted(path.glob("*.gguf"))
    if not found:
        raise GGUFError(f"{path}: no .gguf file in this directory")
    if len(found) > 1:
        raise GGUFError(
            f"{path} holds {len(found)} .gguf files ({', '.join(p.name for p in found)}): pass the "
            "file itself, e.g. kit.load_model('" + str(found[0]) + "')"
        )
    return found[0]


def _root() -> Path:
    return cache_dir() / "gguf"


def cached_dir(digest: str) -> Path | None:
    """The dequantised directory of the file with sha256 ``digest``, if it is in the cache."""
    path = _root() / digest
    return path if (path / "config.json").is_file() and (path / SOURCE_FILE).is_file() else None


def dequantise(path: Path, digest: str | None = None) -> Dequantised:
    """The Hugging Face directory of a GGUF file (a file, or a directory holding one), written on
    first use. ``digest``: the file's sha256 when the caller already knows it (a pinned package)."""
    file = find_gguf(path)
    digest = digest or file_sha256(file)
    hit = cached_dir(digest)
    if hit is not None:
        return Dequantised(hit, digest, 0.0)
    # one dequantiser per file: notebooks side by side (and their job workers) load the same model
    # first; the others wait and read its directory instead of replacing it with their own copy
    with build_lock(_root() / f".{digest}.lock", f"the dequantised {file.name}"):
        hit = cached_dir(digest)
        if hit is not None:
            return Dequantised(hit, digest, 0.0)
        return _dequantise(file, digest)


def _dequantise(file: Path, digest: str) -> Dequantised:
    """Write ``file``'s Hugging Face directory under the cache (the caller holds its lock)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    start = time.perf_counter()
    try:
        model = AutoModelForCausalLM.from_pretrained(
            file.parent,
            gguf_file=file.name,
            dtype=torch.float32,
            quantization_config=GgufConfig(dequantize=True),
        )
        tokenizer = AutoTokenizer.from_pretrained(file.parent, gguf_file=file.name)
    except ImportError as e:
        raise GGUFError(
            f"{file}: reading GGUF needs the 'gguf' package ({e}); install it: pip install gguf"
        ) from e
    except (
        Exception
    ) as e:  # transformers raises ValueError / KeyError / RuntimeError by architecture
        raise GGUFError(
            f"{file}: transformers could not dequantise this GGUF file ({type(e).__name__}: {e}). "
            "Likely causes: an architecture transformers cannot read from GGUF, a quantisation "
            f"type it cannot unpack, or a truncated file ({file.stat().st_size} bytes)"
        ) from e
    # What from_pretrained remembers of the GGUF (a quantizer that refuses to save): the weights
    # are plain float32 tensors now.
    for attr in ("hf_quantizer", "quantization_method"):
        if hasattr(model, attr):
            delattr(model, attr)
    if hasattr(model.config, "quantization_config"):
        delattr(model.config, "quantization_config")
    model.is_quantized = False  # pyright: ignore[reportArgumentType]  (torch: tensors/modules only)
    with atomic_dir(_root() / digest) as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / SOURCE_FILE).write_text(
            json.dumps({"sha256": digest, "file": file.name, "size": file.stat().st_size}, indent=1)
        )
        # safetensors writes model.safetensors 0600; the other files are 0644 (umask 022): one mode
        # for the directory's files, so another user of a shared cache can read the weights
        for f in tmp.rglob("*"):
            if f.is_file():
                f.chmod(file_mode())
    return Dequantised(_root() / digest, digest, time.perf_counter() - start)
