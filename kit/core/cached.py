"""One cached JSON value in a file, checked on every read: its bytes against the digest written
with it, its content against the caller's schema.

A cache that returns whatever parses (``{}``, a torn file, a plausible value someone or something
changed) either blocks every rerun (``KeyError`` on the missing key) or gives a wrong number with
exit 0. So a value is written with the sha256 of its canonical bytes (:func:`value_digest`), and
:func:`read_json` returns it only when

- the file parses as JSON,
- the digest written with the value matches the value read (a changed value behind a valid key),
- the caller's schema (a :data:`Check`: keys, types, ranges) accepts it.

Otherwise it warns (:class:`DamagedCacheWarning`) naming the file and the reason and returns
:data:`MISSING`: the caller recomputes and rewrites (:func:`cached_json` does both). Files written
before the digest existed hold the bare value: they are read when the schema accepts them, so a
cache built by an earlier version stays valid, with the same numbers.

Writes are atomic (temporary file + ``os.replace``, :func:`kit.core.paths.atomic_write_text`).

Binary caches (``.pt``, ``.npz``, ``.npy``) get the same check through :func:`write_bytes_cached`
/ :func:`read_bytes_cached`: the sha256 of the file's bytes in a sidecar ``<file>.sha256`` written
with it (before it: a write cut between the two leaves a mismatch, never a trusted file), the
bytes checked against it, then parsed and checked by the caller's schema. A file written before
the sidecar existed is accepted when it parses and passes the schema, and gets its sidecar then
(so a cache that took an hour to build is not rebuilt, and is checked from then on).

A file's sha256 (:func:`file_sha256`) is hashed once per version of the file (its size, mtime,
ctime, inode and device), remembered in the process and, for the files that name a model in cache
keys, on disk: the one memo of file hashes (:mod:`kit.models.identity` and GGUF files use it).

Built directories (fine-tunes, SAEs: several files and a ``meta.json`` written last) record each
file's size and sha256 in ``meta.json`` (:func:`file_sizes`, :func:`file_digests`); a reader
checks the sizes, then the bytes (:func:`built_dir_refusal`), and rebuilds a directory that fails
either. One built before digests existed is accepted on its sizes and gets its digests then.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import warnings
from pathlib import Path
from typing import Any, Callable

from kit.core.paths import atomic_write_bytes, atomic_write_text, cache_dir, sha256

Check = Callable[[Any], "str | None"]
"""A value check (a schema): None when the value is usable, else the reason it is not (a short
phrase, e.g. ``"missing key 'results'"``)."""

ENVELOPE = "kit-cached-json"
"""The ``format`` of a file written by :func:`write_json`: ``{"format", "sha256", "value"}``."""

MISSING: Any = type("Missing", (), {"__repr__": lambda self: "MISSING"})()
"""What :func:`read_json` returns for an absent or refused file (never a cached value)."""


class DamagedCacheWarning(UserWarning):
    """A cache file could not be used (damaged, changed, or failing its schema); its value is
    recomputed and the file rewritten."""


def canonical(value: Any) -> bytes:
    """The bytes a value's digest is taken over: sorted keys, no spaces (NaN as ``NaN``, as
    Python's ``json`` writes and reads it)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def value_digest(value: Any) -> str:
    """The sha256 (hex) of :func:`canonical` ``(value)``."""
    return hashlib.sha256(canonical(value)).hexdigest()


def write_json(path: Path, value: Any) -> None:
    """Write ``value`` (plain JSON) with its digest to ``path``, atomically."""
    doc = {"format": ENVELOPE, "sha256": value_digest(value), "value": value}
    atomic_write_text(Path(path), json.dumps(doc))


def is_envelope(doc: Any) -> bool:
    return isinstance(doc, dict) and doc.get("format") == ENVELOPE


def refusal(path: Path, check: Check | None = None) -> tuple[Any, str | None]:
    """``(value, None)`` when ``path`` holds a usable value, else ``(MISSING, reason)``; an absent
    file is ``(MISSING, None)``. No warning: :func:`read_json` warns."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return MISSING, None
    except OSError as e:
        return MISSING, f"unreadable ({e.strerror or e})"
    try:
        doc = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return MISSING, "not UTF-8 text"
    except ValueError as e:
        return MISSING, f"not JSON ({e}; a torn or truncated write?)"
    if is_envelope(doc):
        if not {"sha256", "value"} <= set(doc):
            return MISSING, "a digest file without its digest or value"
        value = doc["value"]
        if value_digest(value) != doc["sha256"]:
            return MISSING, "the value does not match the digest written with it (changed)"
    else:  # written before digests existed: only the schema can vouch for it
        value = doc
    why = check(value) if check is not None else None
    return (MISSING, f"invalid value: {why}") if why is not None else (value, None)


def read_json(path: Path | None, check: Check | None = None, what: str = "cache") -> Any:
    """The value cached at ``path``, or :data:`MISSING` (absent, or refused with a
    :class:`DamagedCacheWarning` naming the file and the reason)."""
    if path is None:
        return MISSING
    value, why = refusal(Path(path), check)
    if why is not None:
        warnings.warn(
            f"{what} {path}: {why}; recomputing and rewriting it", DamagedCacheWarning, stacklevel=3
        )
    return value


def cached_json(
    path: Path | None, compute: Callable[[], Any], check: Check | None = None, what: str = "cache"
) -> Any:
    """The value at ``path`` if usable (:func:`read_json`), else ``compute()``, written to ``path``
    (None: computed, never stored). A freshly computed value that fails ``check`` raises
    ``ValueError`` (a bug to see, not a value to store)."""
    value = read_json(path, check, what)
    if value is not MISSING:
        return value
    value = compute()
    why = check(value) if check is not None else None
    if why is not None:
        raise ValueError(f"{what}: the value just computed is invalid ({why}); not stored")
    if path is not None:
        write_json(Path(path), value)
    return value


# ---------------------------------------------------------------- binary files
def digest_path(path: Path) -> Path:
    """The sidecar holding the sha256 of ``path``'s bytes: ``<path>.sha256``."""
    path = Path(path)
    return path.with_name(path.name + ".sha256")


def write_bytes_cached(path: Path, raw: bytes) -> None:
    """Write ``raw`` to ``path`` with the sha256 of its bytes in :func:`digest_path`, both
    atomically (the digest first)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(digest_path(path), hashlib.sha256(raw).hexdigest() + "\n")
    atomic_write_bytes(path, raw)


def read_bytes_cached(
    path: Path,
    load: Callable[[bytes], Any],
    check: Check | None = None,
    what: str = "cache",
) -> Any:
    """``load(bytes of path)`` when the bytes match the digest written with them, parse and pass
    ``check``; else :data:`MISSING` (absent, or refused with a :class:`DamagedCacheWarning` naming
    the file and the reason: the caller recomputes and rewrites with :func:`write_bytes_cached`).
    A file without a digest (written before digests existed) is accepted when it parses and
    passes ``check``, and its digest is written then."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return MISSING
    except OSError as e:
        return _refused(path, f"unreadable ({e.strerror or e})", what)
    sidecar = digest_path(path)
    try:
        written = sidecar.read_text().strip()
    except FileNotFoundError:
        written = None
    except OSError as e:
        return _refused(path, f"its digest {sidecar.name} is unreadable ({e})", what)
    digest = hashlib.sha256(raw).hexdigest()
    if written is not None and written != digest:
        return _refused(path, "its bytes do not match the digest written with them (changed)", what)
    try:
        value = load(raw)
    except Exception as e:  # torch, numpy and scipy raise their own types for a torn file
        first = (str(e).splitlines() or [""])[0]
        return _refused(path, f"cannot be read ({type(e).__name__}: {first})", what)
    why = check(value) if check is not None else None
    if why is not None:
        return _refused(path, f"invalid value: {why}", what)
    if written is None:  # an earlier version's file, vouched for by its schema: checked from now
        try:
            atomic_write_text(sidecar, digest + "\n")
        except OSError:
            pass  # a read-only cache still serves; the digest is written by a later run
    return value


def _refused(path: Path, why: str, what: str) -> Any:
    warnings.warn(f"{what} {path}: {why}; recomputing and rewriting it", DamagedCacheWarning, 3)
    return MISSING


# ---------------------------------------------------------------- schema pieces
def has_keys(value: Any, types: dict[str, type | tuple[type, ...]]) -> str | None:
    """None if ``value`` is a dict holding each key of ``types`` with a value of that type."""
    if not isinstance(value, dict):
        return f"not a JSON object ({type(value).__name__})"
    for key, t in types.items():
        if key not in value:
            return f"missing key {key!r}"
        if not isinstance(value[key], t):
            return f"key {key!r} is a {type(value[key]).__name__}"
    return None


def non_finite(value: Any) -> str | None:
    """``"non-finite number"`` if ``value`` holds NaN or an infinity anywhere, else None."""
    if isinstance(value, float):
        return None if math.isfinite(value) else "non-finite number"
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        for v in value:
            if (why := non_finite(v)) is not None:
                return why
    return None


# ---------------------------------------------------------------- file hashes
_FILE_SHA256: dict[str, tuple[tuple[int, ...], str, bool]] = {}
"""The :func:`file_sha256` memo of this process: a file's real path -> (its :func:`_stat_key`, its
sha256, whether the memo on disk holds it too)."""


def _stat_key(st: os.stat_result) -> tuple[int, ...]:
    """What identifies a version of a file: size, mtime, ctime, inode and device. Any write,
    replacement or ``touch`` changes ctime, which no user call can set back (``cp -p`` or a restore
    sets mtime back, never ctime)."""
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


def _memo_path(real: str) -> Path:
    return cache_dir() / "identity" / f"{hashlib.sha256(real.encode()).hexdigest()[:24]}.json"


def file_sha256(path: str | Path, persist: bool = False) -> str:
    """The sha256 (hex) of the bytes of ``path`` (symlinks followed), read in 1 MiB chunks
    (:func:`kit.core.paths.sha256`: a model's weights are never whole in memory), hashed once per
    version of the file (:func:`_stat_key`) in this process.

    ``persist``: remember it across processes too, in ``<KIT_CACHE_DIR>/identity/`` (a JSON file
    per path, checked on read: :func:`read_json`), for the files whose digest names a model in
    cache keys (a 16 GB checkpoint, a GGUF file: :mod:`kit.models.identity`). Built directories
    check their bytes with ``persist=False``: each process reads them again, so a change that keeps
    a file's stat (a same-size rewrite within the timestamp resolution of its hashing) is caught by
    the next process rather than trusted for good.

    A digest is remembered only when the file did not change while it was read."""
    real = os.path.realpath(path)
    key = _stat_key(os.stat(real))
    hit = _FILE_SHA256.get(real)
    if hit is not None and hit[0] == key and (hit[2] or not persist):
        return hit[1]
    memo = _memo_path(real) if persist else None
    if hit is not None and hit[0] == key:  # hashed here already, not yet remembered on disk
        digest = hit[1]
    else:
        # no memo yet, a damaged one (warned about) or one of another version of the file: hash
        rec = read_json(memo, _memo_check, what="file-hash memo")
        if rec is not MISSING and rec["path"] == real and tuple(rec["stat"]) == key:
            _FILE_SHA256[real] = (key, rec["sha256"], True)
            return rec["sha256"]
        digest = sha256(Path(real))
        if _stat_key(os.stat(real)) != key:  # changed while we read it: not safe to remember
            return digest
    stored = False
    if memo is not None:
        try:
            write_json(memo, {"path": real, "stat": list(key), "sha256": digest})
            stored = True
        except OSError:  # a read-only cache only costs a re-hash next time
            pass
    _FILE_SHA256[real] = (key, digest, stored)
    return digest


def _memo_check(rec: Any) -> str | None:
    """A file-hash memo: the file's path, its stat key (5 ints) and a 64-hex sha256."""
    why = has_keys(rec, {"path": str, "stat": list, "sha256": str})
    if why is None and not re.fullmatch(r"[0-9a-f]{64}", rec["sha256"]):
        return "'sha256' is not 64 hex digits"
    if why is None and (len(rec["stat"]) != 5 or not all(type(x) is int for x in rec["stat"])):
        return "'stat' is not 5 integers"
    return why


# ---------------------------------------------------------------- built directories
def file_sizes(directory: Path) -> dict[str, int]:
    """``{relative path: size in bytes}`` of every file under ``directory`` (sorted): what a built
    directory's ``meta.json`` lists as ``files``, so a reader can tell it is whole."""
    d = Path(directory)
    return {str(p.relative_to(d)): p.stat().st_size for p in sorted(d.rglob("*")) if p.is_file()}


def file_digests(directory: Path) -> dict[str, str]:
    """``{relative path: sha256}`` of every file under ``directory`` (sorted): what a built
    directory's ``meta.json`` records as ``sha256``, so a reader can tell its bytes are the ones
    built (a same-size file with other bytes, e.g. another fine-tune's weights, is refused)."""
    d = Path(directory)
    return {str(p.relative_to(d)): file_sha256(p) for p in sorted(d.rglob("*")) if p.is_file()}


def built_dir_refusal(
    directory: Path, required: tuple[str, ...] = (), keys: tuple[str, ...] = ("name",)
) -> str | None:
    """Why the built directory ``directory`` (its ``meta.json`` written last) cannot be used, or
    None. ``meta.json`` must parse as an object holding ``keys`` (every build writes its
    ``name``: ``{}`` is no build's meta, and its readers would fail on it); every file it lists
    (``files``: ``{name: size}``) must exist at that size (the cheap test, first), then match the
    sha256 it records (``sha256``: ``{name: hex}``); a directory written before the listing
    existed must hold each file of ``required`` (non-empty). A directory without ``meta.json`` is
    not built: ``"not built"``.

    A directory built before digests were recorded (no ``sha256``) is accepted on its sizes, and
    its digests are recorded in its ``meta.json`` then (atomically; a read-only cache still
    serves), so an hour-long build is not redone and is checked by its bytes from then on."""
    d = Path(directory)
    meta_path = d / "meta.json"
    if not meta_path.is_file():
        return "not built"
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, ValueError) as e:
        return f"meta.json unreadable ({e})"
    if not isinstance(meta, dict):
        return "meta.json is not a JSON object"
    for key in keys:
        if key not in meta:
            return f"meta.json has no {key!r}"
    listed = meta.get("files")
    if listed is None:
        listed = {name: None for name in required}
    elif not isinstance(listed, dict):
        return "meta.json's 'files' is not a mapping"
    for name, size in listed.items():
        f = d / name
        if not f.is_file():
            return f"{name} is missing"
        actual = f.stat().st_size
        if (size is None and actual == 0) or (size is not None and actual != size):
            return (
                f"{name} has {actual} bytes, meta.json says {size if size is not None else '> 0'}"
            )
    recorded = meta.get("sha256")
    if recorded is None:  # built before digests were recorded: vouched for by its sizes
        try:
            digests = {name: file_sha256(d / name) for name in listed}
        except OSError as e:
            return f"unreadable ({e.strerror or e})"
        try:
            atomic_write_text(meta_path, json.dumps({**meta, "sha256": digests}, indent=1))
        except OSError:
            pass  # a read-only cache still serves; the digests are recorded by a later run
        return None
    if not isinstance(recorded, dict):
        return "meta.json's 'sha256' is not a mapping"
    for name in listed:
        if name not in recorded:
            return f"meta.json records no sha256 of {name}"
        try:
            digest = file_sha256(d / name)
        except OSError as e:
            return f"{name} is unreadable ({e.strerror or e})"
        if digest != recorded[name]:
            return f"{name}'s bytes do not match the sha256 meta.json records (changed)"
    return None


def is_built_dir(
    directory: Path,
    required: tuple[str, ...] = (),
    what: str = "cache",
    keys: tuple[str, ...] = ("name",),
) -> bool:
    """Whether ``directory`` is built and whole (:func:`built_dir_refusal`); a damaged one is
    warned about (naming it and the reason), so the caller rebuilds it."""
    why = built_dir_refusal(directory, required, keys)
    if why not in (None, "not built"):
        warnings.warn(
            f"{what} {directory}: {why}; rebuilding it", DamagedCacheWarning, stacklevel=3
        )
    return why is None
