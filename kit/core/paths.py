"""Where things live: the repository, the shared data directory, caches and run directories.

Every path the project reads or writes is resolved here, so a user can move any of them with
one environment variable:

- ``KIT_DATA_DIR``  real benchmark data (default ``../shared/data`` beside the repository);
- ``KIT_CACHE_DIR`` built worlds, trained SAEs, activation caches (default ``<repo>/.cache``);
- ``KIT_WORLD``     which embedded world ``zoo/...`` names load from (default ``tiny``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

REPO_ROOT = Path(__file__).resolve().parents[2]
WORLDS = ("tiny", "micro")


class DataError(RuntimeError):
    """The data directory is missing, incomplete or fails its checksums."""


class PathError(OSError):
    """A folder the project must write to cannot be used; the message names it and what to do."""


def data_dir(verify: bool = True) -> Path:
    """The real-benchmark data directory, checksum-verified once per process.

    Resolution: ``$KIT_DATA_DIR``, then ``../shared/data`` relative to the repository root.
    """
    env = os.environ.get("KIT_DATA_DIR")
    path = Path(env).expanduser() if env else REPO_ROOT.parent / "shared" / "data"
    if not path.is_dir():
        source = "KIT_DATA_DIR" if env else "the default ../shared/data"
        raise DataError(
            f"data directory {path} (from {source}) does not exist. Set KIT_DATA_DIR to the folder "
            "holding gsm8k/, mmlu/, bbh/ ... and checksums.sha256, or name a Hugging Face dataset "
            "(kit.load_benchmark(..., source='hf')) if you have network access."
        )
    if verify:
        verify_checksums(path)
    return path


_VERIFIED: set[Path] = set()


def verify_checksums(path: Path) -> None:
    """Check every file listed in ``path/checksums.sha256`` (once per process per directory)."""
    path = path.resolve()
    if path in _VERIFIED:
        return
    listing = path / "checksums.sha256"
    if not listing.is_file():
        raise DataError(f"{listing} is missing: cannot verify the data directory {path}.")
    bad: list[str] = []
    entries = [line for line in listing.read_text().splitlines() if line.strip()]
    if not entries:
        raise DataError(f"{listing} lists no files: nothing in {path} can be verified.")
    for n, line in enumerate(entries, 1):
        digest, _, name = line.partition(" ")
        name = name.strip().lstrip("*")
        if len(digest) != 64 or not name:
            raise DataError(f"{listing}, entry {n}: expected '<sha256> <file>', got {line!r}")
        target = path / name
        if not target.is_file():
            bad.append(f"{name}: missing")
        elif sha256(target) != digest:
            bad.append(f"{name}: checksum mismatch")
    if bad:
        shown = "\n  ".join(bad[:10]) + (f"\n  ... and {len(bad) - 10} more" if len(bad) > 10 else "")
        raise DataError(f"data directory {path} fails checksums.sha256:\n  {shown}")
    _VERIFIED.add(path)


def sha256(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def cache_dir() -> Path:
    """Root of all caches (worlds, SAEs, activations); ``$KIT_CACHE_DIR`` or ``<repo>/.cache``."""
    env = os.environ.get("KIT_CACHE_DIR")
    path = Path(env).expanduser() if env else REPO_ROOT / ".cache"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        source = f"KIT_CACHE_DIR={env}" if env else "the default <repo>/.cache"
        why = "it is a file, not a folder" if path.is_file() else (e.strerror or str(e))
        raise PathError(f"cache folder {path} (from {source}) cannot be used: {why}. "
                        "Point KIT_CACHE_DIR at a writable folder (it is created if missing).") from None
    return path


def current_world(world: str | None = None) -> str:
    """The embedded world that ``zoo/...`` names resolve in: argument, ``$KIT_WORLD``, ``tiny``."""
    name = world or os.environ.get("KIT_WORLD") or "tiny"
    if name not in WORLDS:
        source = f"world={name!r}" if world else f"KIT_WORLD={name!r} (environment variable)"
        raise ValueError(f"{source} is not a known world; allowed values: {', '.join(WORLDS)}"
                         + ("" if world else "; unset KIT_WORLD for the default 'tiny'"))
    return name


@contextmanager
def atomic_path(target: Path) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; rename it onto ``target`` only if the block succeeds.

    Readers never see a half-written cache or result: either the old file or the complete new one.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, target)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def atomic_write_text(target: Path, text: str) -> None:
    with atomic_path(target) as tmp:
        tmp.write_text(text)


@contextmanager
def atomic_dir(target: Path) -> Iterator[Path]:
    """Yield an empty temporary directory beside ``target``; when the block succeeds, it becomes
    ``target`` (replacing an older one), so readers see the complete directory or none.

    If the block fails, the temporary directory is removed and an existing ``target`` is kept.
    If another process completed ``target`` first, its copy is kept and ours is discarded.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        yield tmp
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
            os.replace(target, old / "d")  # a directory cannot be renamed onto a non-empty one
            os.replace(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            try:
                os.replace(tmp, target)
            except OSError:
                if not target.is_dir():  # not a lost race with another builder: a real error
                    raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
