"""Where things live: the repository, the shared data directory, caches and run directories.

Every path the project reads or writes is resolved here, so a user can move any of them with
one environment variable:

- ``KIT_DATA_DIR``  real benchmark data (default ``../shared/data`` beside the repository);
- ``KIT_CACHE_DIR`` built worlds, trained SAEs, activation caches (default ``<repo>/.cache``);
- ``KIT_WORLD``     which embedded world ``zoo/...`` names load from (default ``tiny``).
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import secrets
import shutil
import socket
import sys
import time
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
        shown = "\n  ".join(bad[:10]) + (
            f"\n  ... and {len(bad) - 10} more" if len(bad) > 10 else ""
        )
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
        raise PathError(
            f"cache folder {path} (from {source}) cannot be used: {why}. "
            "Point KIT_CACHE_DIR at a writable folder (it is created if missing)."
        ) from None
    return path


def current_world(world: str | None = None) -> str:
    """The embedded world that ``zoo/...`` names resolve in: argument, ``$KIT_WORLD``, ``tiny``."""
    name = world or os.environ.get("KIT_WORLD") or "tiny"
    if name not in WORLDS:
        source = f"world={name!r}" if world else f"KIT_WORLD={name!r} (environment variable)"
        raise ValueError(
            f"{source} is not a known world; allowed values: {', '.join(WORLDS)}"
            + ("" if world else "; unset KIT_WORLD for the default 'tiny'")
        )
    return name


FULL = (errno.ENOSPC, errno.EDQUOT)
"""errno values of a full disk and of an exceeded quota."""


class DiskFullError(PathError):
    """No space left on the device (or quota) while writing a file; the message names the file."""

    def __init__(self, path: str | Path):
        super().__init__(errno.ENOSPC, "No space left on device", str(path))

    def __str__(self) -> str:
        return f"no space left on device writing {self.filename}"


def is_disk_full(e: BaseException | None) -> bool:
    """Whether ``e`` (or an exception it was raised from) is a full disk or an exceeded quota."""
    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, DiskFullError) or (isinstance(e, OSError) and e.errno in FULL):
            return True
        e = e.__cause__ or e.__context__
    return False


def disk_full_error(path: str | Path) -> DiskFullError:
    """The error for a write of ``path`` that ran out of space (``raise ... from e``)."""
    return DiskFullError(path)


def _new_name(parent: Path, stem: str, suffix: str) -> Path:
    return parent / f".{stem}.{os.getpid()}.{secrets.token_hex(4)}{suffix}"


def file_mode() -> int:
    """The mode ``open`` gives a new file: 0666 less this process's umask (read from
    ``/proc/self/status`` where it can be, so no other thread sees a changed umask)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def _create_temp_file(target: Path) -> Path:
    """An empty file beside ``target``, created with mode 0666 less the umask (as ``open`` would
    create ``target`` itself; ``mkstemp``'s 0600 made run outputs unreadable by the group)."""
    while True:
        tmp = _new_name(target.parent, target.name, ".tmp")
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            return tmp
        except FileExistsError:
            continue


def _create_temp_dir(target: Path, suffix: str = ".tmp") -> Path:
    """An empty folder beside ``target``, mode 0777 less the umask (``mkdtemp`` makes it 0700)."""
    while True:
        tmp = _new_name(target.parent, target.name, suffix)
        try:
            tmp.mkdir()
            return tmp
        except FileExistsError:
            continue


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def atomic_path(target: Path) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; rename it onto ``target`` only if the block
    succeeds.

    Readers never see a half-written cache or result: either the old file or the complete new one.
    The temporary file is removed on any failure; a full disk raises :class:`DiskFullError` naming
    ``target``. The new file has the permissions ``open`` would give it (0666 less the umask).
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp_path = _create_temp_file(target)
    try:
        yield tmp_path
        _fsync(tmp_path)  # a full disk may surface only here: never rename an incomplete file
        os.replace(tmp_path, target)
    except OSError as e:
        if is_disk_full(e) and not isinstance(e, DiskFullError):
            raise disk_full_error(target) from e
        raise
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def atomic_write_text(target: Path, text: str) -> None:
    with atomic_path(target) as tmp:
        tmp.write_text(text)


def atomic_write_bytes(target: Path, data: bytes) -> None:
    with atomic_path(target) as tmp:
        tmp.write_bytes(data)


@contextmanager
def atomic_dir(target: Path) -> Iterator[Path]:
    """Yield an empty temporary directory beside ``target``; when the block succeeds, it becomes
    ``target`` (replacing an older one), so readers see the complete directory or none.

    If the block fails, the temporary directory is removed and an existing ``target`` is kept.
    If another process completed ``target`` first, its copy is kept and ours is discarded.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = _create_temp_dir(target)
    try:
        yield tmp
        if target.exists():
            old = _create_temp_dir(target, ".old")
            os.replace(target, old / "d")  # a directory cannot be renamed onto a non-empty one
            os.replace(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            try:
                os.replace(tmp, target)
            except OSError:
                if not target.is_dir():  # not a lost race with another builder: a real error
                    raise
    except OSError as e:
        if is_disk_full(e) and not isinstance(e, DiskFullError):
            raise disk_full_error(target) from e
        raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def build_lock(path: Path, what: str, wait: bool = True) -> Iterator[None]:
    """Hold the exclusive lock file ``path`` (``fcntl.flock``) while ``what`` is built.

    A second builder waits, saying which process holds it (``wait=False``: raise BlockingIOError
    with that instead), then finds the first one's result in the cache. The kernel releases the
    lock when its holder exits, however it exits (SIGKILL included), so a stale lock never blocks a
    rebuild. On one machine; across nodes it holds only where the shared file system honours
    ``flock`` (the atomic renames keep the cache whole either way).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "another process"
            msg = f"{what} is being built by {holder} (lock {path})"
            if not wait:
                raise BlockingIOError(errno.EAGAIN, msg) from None
            print(f"{msg}; waiting for it to finish", file=sys.stderr, flush=True)
            fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        f.truncate()
        f.write(
            f"pid {os.getpid()} on {socket.gethostname()} since "
            f"{time.strftime('%Y-%m-%d %H:%M:%S')}"
        )
        f.flush()
        try:
            yield
        finally:
            f.seek(0)
            f.truncate()
            f.flush()
            fcntl.flock(f, fcntl.LOCK_UN)
