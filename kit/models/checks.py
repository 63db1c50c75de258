"""What is wrong with a model directory: loading errors named with the file and the likely cause.

``transformers`` reports a damaged file with the parser's words ("incomplete metadata, file not
fully covered", a ``UnicodeDecodeError`` at byte 1000) and often without the path. When a load
fails, :func:`load_error` looks at the files itself and says which one is damaged and how
(:func:`safetensors_problems`: header and data sizes against the file's size; :func:`json_problem`:
where the JSON breaks), so the message says what to do: download that file again.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path


class ModelLoadError(OSError):
    """A model directory (or file) that could not be loaded; the message names the file and
    cause."""


_DTYPE_BYTES = {
    "F64": 8,
    "I64": 8,
    "U64": 8,
    "F32": 4,
    "I32": 4,
    "U32": 4,
    "F16": 2,
    "BF16": 2,
    "I16": 2,
    "U16": 2,
    "I8": 1,
    "U8": 1,
    "BOOL": 1,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
}


def safetensors_problems(path: Path) -> list[str]:
    """One line per damaged ``*.safetensors`` file under ``path`` (a file or directory): a header
    longer than the file, unreadable header JSON, or tensor data past the end (a truncated
    download). Also shards that ``model.safetensors.index.json`` names but that are missing."""
    path = Path(path)
    files = [path] if path.is_file() else sorted(path.glob("*.safetensors"))
    out = []
    for f in files:
        size = f.stat().st_size
        with open(f, "rb") as fh:
            head = fh.read(8)
            if len(head) < 8:
                out.append(
                    f"{f}: {size} bytes, shorter than a safetensors header (truncated or empty)"
                )
                continue
            (n,) = struct.unpack("<Q", head)
            if 8 + n > size:
                out.append(
                    f"{f}: header says {n} bytes of metadata but the file has {size} (truncated)"
                )
                continue
            try:
                header = json.loads(fh.read(n))
            except ValueError as e:
                out.append(
                    f"{f}: its header is not valid JSON ({e}): damaged or not a safetensors file"
                )
                continue
        ends = [
            int(v["data_offsets"][1])
            for k, v in header.items()
            if k != "__metadata__" and "data_offsets" in v
        ]
        need = 8 + n + max(ends, default=0)
        if need > size:
            out.append(
                f"{f}: its tensors need {need} bytes but the file has {size} "
                f"({100 * size / need:.0f}% "
                "present): truncated, e.g. an interrupted download or copy"
            )
    index = path / "model.safetensors.index.json" if path.is_dir() else None
    if index is not None and index.is_file():
        try:
            shards = set(json.loads(index.read_text()).get("weight_map", {}).values())
        except ValueError:
            shards = set()
        out += [
            f"{path / s}: named by {index.name} but missing"
            for s in sorted(shards)
            if not (path / s).exists()
        ]
    return out


def json_problem(path: Path) -> str | None:
    """Why ``path`` is not readable JSON (not UTF-8, empty, or where the parser stopped); None if it
    is."""
    path = Path(path)
    if not path.is_file():
        return None
    raw = path.read_bytes()
    if not raw.strip():
        return f"{path}: empty file"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return (
            f"{path}: not UTF-8 text (byte {e.start} of {len(raw)} is 0x{raw[e.start]:02x}): "
            "damaged"
        )
    try:
        json.loads(text)
    except json.JSONDecodeError as e:
        return (
            f"{path}: not valid JSON at line {e.lineno} column {e.colno} ({e.msg}; {len(raw)} "
            "bytes): damaged or truncated"
        )
    return None


STAGE_FILES = {
    "config": ("config.json",),
    "tokenizer": (
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "vocab.json",
    ),
    "weights": ("config.json", "model.safetensors.index.json"),
}


def load_error(path: Path, stage: str, error: BaseException) -> ModelLoadError:
    """A :class:`ModelLoadError` for a failed load of ``stage`` (config, weights, tokenizer) of the
    model directory ``path``: the damaged file and what to do when one is found, else the original
    error with the directory named."""
    path = Path(path)
    problems = [p for p in (json_problem(path / f) for f in STAGE_FILES.get(stage, ())) if p]
    if stage == "weights":
        problems += safetensors_problems(path)
    cause = f"{type(error).__name__}: {error}"
    if problems:
        return ModelLoadError(
            f"could not load the {stage} of {path}: "
            + "; ".join(problems)
            + f". Download or copy the file again (transformers said: {cause})"
        )
    return ModelLoadError(
        f"could not load the {stage} of {path} ({cause}). Check the files of this directory "
        "(config.json, *.safetensors, tokenizer.json) and their versions against transformers'"
    )
