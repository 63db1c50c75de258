"""What a model or a file *is*, for cache keys: a digest of its content, never its name.

A cache keyed by a path or a file name returns old numbers after a model is retrained in place or a
responses file is replaced under the same name. Every cache asks this module:

- :func:`file_sha256`: the sha256 of a file's bytes, remembered per file under
  ``<KIT_CACHE_DIR>/identity/`` together with the file's ``stat`` (size, mtime, ctime, inode,
  device), so a 16 GB checkpoint is hashed once, not on every run; any write, replacement or
  ``touch`` changes ctime (which no user call can set back) and the file is hashed again
  (:func:`kit.core.cached.file_sha256`, the one memo of file hashes);
- :func:`path_identity`: a file's ``sha256:<hex>``, or for a model directory the digest of its
  top-level files' names and hashes (config, weights, tokenizer, chat template: what
  ``from_pretrained`` reads; hidden files and subfolders are not part of the model);
- :func:`name_identity`: a model name as a cache sees it: a local path by content, a tiny-world
  member by its content-addressed build key, anything else (a hub id, ``random/<shape>``) by name;
- :func:`model_identity`: the same for a loaded model (``kit.load_model`` sets ``kit_path`` /
  ``kit_name``; a tiny-world member carries its build identity, ``kit_identity``);
- :func:`text_fingerprint`: a short digest of strings (an item's prompt and response), so a cache
  record made for other text is refused;
- :func:`code_identity`: a digest of the source of the modules that decide a cached number, so a
  changed formula never reads numbers its old version wrote.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path
from typing import Any, Sequence

from kit.core import cached
from kit.models.sources import find

IDENTITY_VERSION = 3
"""Part of every directory identity and every :func:`code_identity`: bump it when what is hashed
changes, or when the numbers every cache holds change (3: pinned processes multiply matrices in
OpenBLAS and take square roots exactly, ``kit.core.kernels``; values cached before differ in their
last bits)."""


def file_sha256(path: str | Path) -> str:
    """sha256 (hex) of the bytes of ``path`` (symlinks followed), hashed once per version of it and
    remembered across processes (:func:`kit.core.cached.file_sha256` with ``persist``: reused only
    while size, mtime, ctime, inode and device are all unchanged)."""
    return cached.file_sha256(path, persist=True)


def model_files(directory: str | Path) -> list[Path]:
    """The files of a model directory that define it: every top-level regular file (symlinks
    followed, as in a Hugging Face snapshot) except hidden ones, sorted by name."""
    d = Path(directory)
    return sorted(
        (p for p in d.iterdir() if not p.name.startswith(".") and p.is_file()), key=lambda p: p.name
    )


def path_identity(path: str | Path) -> str:
    """``sha256:<hex>`` of a file, or ``dir-sha256:<hex>`` of a model directory (its
    :func:`model_files`' names and content hashes). A missing path raises ``FileNotFoundError``."""
    p = Path(path)
    if p.is_file():
        return f"sha256:{file_sha256(p)}"
    if not p.is_dir():
        raise FileNotFoundError(f"no file or directory {p}: its identity cannot be computed")
    listing = [[f.name, file_sha256(f)] for f in model_files(p)]
    digest = hashlib.sha256(json.dumps([IDENTITY_VERSION, listing]).encode()).hexdigest()
    return f"dir-sha256:{digest}"


def path_or_name(name: str, world: str | None = None) -> str:
    """The identity of a name whose form gives none: an existing local path by its content
    (:func:`path_identity`), anything else by the name itself (``name:<name>``)."""
    p = Path(name).expanduser()
    if name and (p.is_file() or p.is_dir()):
        return path_identity(p)
    return f"name:{name}"


def name_identity(name: str, world: str | None = None) -> str:
    """The identity of a model as named in a cache key: its form's identity
    (:mod:`kit.models.sources`): ``zoo/<member>`` by its build key (the world's members are
    content-addressed: recipe, code version and parent), anything else as :func:`path_or_name`
    says: an existing local path by its content (:func:`path_identity`), else the name itself (a
    hub id: its files are fetched into a snapshot directory, which callers pass instead)."""
    form = find(name)
    identity = form.identity if form is not None and form.identity is not None else path_or_name
    return identity(name, world)


def model_identity(model: Any) -> str:
    """The identity of a model loaded by ``kit.load_model``: a tiny-world member's build identity
    (``kit_identity``, set by ``kit.world.load_member`` for the world it was loaded from), its
    directory's content when it came from one (``kit_path``), else :func:`name_identity` of its
    name (``kit_name``)."""
    ident = getattr(model, "kit_identity", None)
    if ident:
        return str(ident)
    path = getattr(model, "kit_path", None)
    if path:
        return path_identity(path)
    name = getattr(model, "kit_name", None)
    if name:
        return name_identity(str(name))
    raise ValueError(
        "this model carries neither kit_path nor kit_name (load it with kit.load_model): "
        "a cache cannot tell it from another model"
    )


def cache_identity(model: Any) -> str | None:
    """:func:`model_identity` when it names content (files' hashes, a tiny-world build key); None
    when a name is all there is (a random twin, a hub id) or the model carries nothing: a cache
    keyed on it could return another model's numbers, so it must not cache."""
    try:
        ident = model_identity(model)
    except ValueError:
        return None
    return None if ident.startswith("name:") else ident


def text_fingerprint(*texts: str | None) -> str:
    """A 16-hex digest of ``texts`` (e.g. an item's prompt and response): a cache record made for
    other text carries another fingerprint and is refused."""
    return hashlib.sha256(json.dumps(list(texts)).encode()).hexdigest()[:16]


def fingerprints(*columns: Sequence[str | None]) -> list[str]:
    """:func:`text_fingerprint` of each row of equally long ``columns`` (prompts, responses...)."""
    n = {len(c) for c in columns}
    if len(n) > 1:
        raise ValueError(f"fingerprints: columns of different lengths {sorted(n)}")
    return [text_fingerprint(*row) for row in zip(*columns)]


def code_identity(modules: Sequence[str], versions: str = "") -> str:
    """A 16-hex digest of ``versions`` (library versions, as text) and the source files of the
    importable ``modules`` (dotted names): part of a cache key whose values they compute."""
    h = hashlib.sha256(f"{IDENTITY_VERSION}:{versions}".encode())
    for name in modules:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin:
            h.update(Path(spec.origin).read_bytes())
    return h.hexdigest()[:16]
