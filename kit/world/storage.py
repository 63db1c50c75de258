"""A world's members on disk: where they live, how they are written, verified, loaded and locked.

Layout, content-addressed per member: ``cache_dir()/world/<world>[-seed-<n>]/members/<name>-<key>/``
(``<key>``: :func:`kit.world.specs.member_key`). A member directory holds ``weights.pt`` (bases also
``optim.pt``, the AdamW state their fine-tunes continue) and ``meta.json``, written once, last,
after every other file of the member is complete: a member with ``meta.json`` is complete, and its
``meta.json`` records each file's size and sha256 (``files``) and the weights' tensor digest
(``weights_digest``, :func:`tensor_digest`). :func:`member_status` checks a member against them;
:func:`load_member` refuses a damaged one with :class:`MemberDamaged`, naming the file and the fix.

Writes go through :func:`write_bytes`: atomic (a reader sees the old file or the new one), and a
full disk is named as such (:class:`NoSpaceLeft`), not a C++ ``basic_ios::clear``. One builder per
world at a time: :func:`world_lock`.
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Iterator

import torch

from kit.core.cached import file_sha256  # streamed, memoised per file version
from kit.core.paths import atomic_path, build_lock, cache_dir
from kit.world.recipes import world_spec
from kit.world.specs import (
    CODE_VERSION,
    WorldSpec,
    _arch_of,
    _base,
    _check_name,
    member_identity,
    member_key,
    member_names,
    param_count,
)
from kit.world.train import make_model


class WorldNotBuilt(FileNotFoundError):
    """The requested world (or one of its members) has not been built yet."""


class MemberDamaged(WorldNotBuilt):
    """A built member's (or SAE's) files are missing, truncated or changed since they were
    written."""


class NoSpaceLeft(OSError):
    """A write failed because the file system is full; the message names the folder."""

    def __init__(self, message: str):
        super().__init__(errno.ENOSPC, message)

    def __str__(self) -> str:
        return self.strerror or ""


# ---------------------------------------------------------------- where
def world_dir(world: str | WorldSpec | None = None) -> Path:
    """``cache_dir()/world/<world>`` (``<world>-seed-<n>`` for another seed): the world's cache
    root."""
    spec = world_spec(world)
    return cache_dir() / "world" / (spec.name if not spec.seed else f"{spec.name}-seed-{spec.seed}")


def world_label(spec: WorldSpec) -> str:
    """``tiny`` or ``tiny (seed 7)``, as messages name a world."""
    return spec.name if not spec.seed else f"{spec.name} (seed {spec.seed})"


def build_command(spec: WorldSpec) -> str:
    return f"python -m kit zoo build --world {spec.name}" + (
        f" --seed {spec.seed}" if spec.seed else ""
    )


def card_path(world: str | WorldSpec | None = None) -> Path:
    from kit.world.specs import spec_hash

    spec = world_spec(world)
    return world_dir(spec) / f"card-{spec_hash(spec)}.json"


def _safe(name: str) -> str:
    return name.replace("/", "__").replace("@", "_at_").replace("+", "_plus_")


def _member_dir(spec: WorldSpec, name: str) -> Path:
    return world_dir(spec) / "members" / f"{_safe(name)}-{member_key(spec, name)}"


def not_built_error(world: str | WorldSpec, what: str) -> WorldNotBuilt:
    spec = world_spec(world)
    return WorldNotBuilt(
        f"{what} of world {world_label(spec)!r} is not built (cache {world_dir(spec)}); "
        f"run `{build_command(spec)}` first"
    )


def damaged_error(spec: WorldSpec, what: str, why: str) -> MemberDamaged:
    return MemberDamaged(
        f"{what} of world {world_label(spec)!r} is damaged: {why}; run `{build_command(spec)}`, "
        "which rebuilds exactly the damaged members (the same bits)"
    )


# ---------------------------------------------------------------- writing
DISK_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)


def is_disk_full(e: BaseException) -> bool:
    """A write error caused by a full disk or quota: errno ENOSPC/EDQUOT, or the text of a C++ or
    Rust writer (torch's ``basic_ios::clear``, safetensors' ``StorageFull``) on a full file
    system."""
    if isinstance(e, OSError) and e.errno in DISK_FULL_ERRNOS:
        return True
    text = str(e)
    return "No space left" in text or "StorageFull" in text or "Disk quota" in text


def no_space_error(folder: Path, what: str) -> NoSpaceLeft:
    try:
        free = os.statvfs(folder)
        left = f"{free.f_bavail * free.f_frsize / 1e6:.1f} MB free"
    except OSError:
        left = "free space unknown"
    return NoSpaceLeft(
        f"no space left on {folder} ({left}) while writing {what}; free some space there (or set "
        "KIT_CACHE_DIR to a disk with room) and run the build again: complete members are kept, "
        "nothing half-written is"
    )


@contextmanager
def disk_full_named(folder: Path, what: str) -> Iterator[None]:
    """Turn a full-disk failure of the block (any writer's wording) into :class:`NoSpaceLeft`."""
    try:
        yield
    except NoSpaceLeft:
        raise
    except Exception as e:  # noqa: BLE001 - any writer's error (safetensors' is its own class), re-raised if not
        if is_disk_full(e) or (isinstance(e, (OSError, RuntimeError)) and _nearly_full(folder)):
            raise no_space_error(folder, what) from e
        raise


def _nearly_full(folder: Path) -> bool:
    """Under 1 MB left: the cause of a writer's unspecific error (``basic_ios::clear``)."""
    try:
        st = os.statvfs(folder)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < 1_000_000


def write_bytes(target: Path, data: bytes) -> dict:
    """Write ``data`` to ``target`` atomically; return ``{"bytes", "sha256"}`` of what was
    written."""
    target = Path(target)
    with disk_full_named(target.parent, str(target)), atomic_path(target) as tmp:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def write_json(target: Path, obj) -> None:
    write_bytes(target, json.dumps(obj, indent=1).encode())


def torch_bytes(obj) -> bytes:
    """``torch.save`` into memory (then :func:`write_bytes` writes it with Python's errors)."""
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def tensor_digest(state_dict: dict) -> str:
    """sha256 over the keys in sorted order, each key's bytes followed by its tensor's raw bytes
    (contiguous, CPU); the first 16 hex digits. The same bits give the same digest on any machine
    and torch version (the cross-machine test vectors use this digest)."""
    h = hashlib.sha256()
    for k in sorted(state_dict):
        v = state_dict[k]
        if torch.is_tensor(v):
            h.update(k.encode())
            h.update(v.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def save_weights(
    spec: WorldSpec, name: str, state_dict: dict, optim_state: dict | None = None
) -> dict:
    """Write a member's ``weights.pt`` (and ``optim.pt``); returns the ``files`` record for its
    meta."""
    d = _member_dir(spec, name)
    files = {"weights.pt": write_bytes(d / "weights.pt", torch_bytes(state_dict))}
    if optim_state is not None:
        files["optim.pt"] = write_bytes(d / "optim.pt", torch_bytes(optim_state))
    return files


def write_meta(spec: WorldSpec, name: str, meta: dict, files: dict, weights_digest: str) -> None:
    """Write ``meta.json`` last: the member is complete from this moment on."""
    full = {
        **meta,
        "files": files,
        "weights_digest": weights_digest,
        "key": member_key(spec, name),
        "code_version": CODE_VERSION,
    }
    write_json(_member_dir(spec, name) / "meta.json", full)


def save_member(spec: WorldSpec, name: str, model, meta: dict, opt=None) -> None:
    """Weights (and optimizer state) first, ``meta.json`` once they are complete."""
    sd = model.state_dict()
    files = save_weights(spec, name, sd, opt.state_dict() if opt is not None else None)
    write_meta(spec, name, meta, files, tensor_digest(sd))


# ---------------------------------------------------------------- verifying
def files_problem(folder: Path, files: dict) -> str:
    """ "" if every file of ``files`` (``{name: {"bytes", "sha256"}}``) in ``folder`` is as
    recorded, else what is wrong with the first that is not."""
    for fname, rec in files.items():
        p = folder / fname
        if not p.is_file():
            return f"{p} is missing"
        size = p.stat().st_size
        if size != rec["bytes"]:
            return f"{p} has {size} bytes, {rec['bytes']} were written (truncated or replaced)"
        if file_sha256(p) != rec["sha256"]:
            return f"{p} differs from what was written (sha256 mismatch)"
    return ""


def read_meta(spec: WorldSpec, name: str) -> dict | None:
    """The member's ``meta.json``, None if it has none; MemberDamaged if it is not valid JSON."""
    p = _member_dir(spec, name) / "meta.json"
    if not p.is_file():
        return None
    try:
        return json.loads(p.read_text())
    except (ValueError, UnicodeDecodeError) as e:
        raise damaged_error(spec, f"member {name!r}", f"{p} is not valid JSON ({e})") from None


def member_status(spec: WorldSpec, name: str) -> str:
    """``"ok"``, ``"missing"`` (not built, or its build did not finish) or ``"damaged: <why>"``."""
    try:
        meta = read_meta(spec, name)
    except MemberDamaged as e:
        return f"damaged: {e}"
    if meta is None:
        return "missing"
    if "files" not in meta:
        return f"damaged: {_member_dir(spec, name) / 'meta.json'} records no file hashes"
    why = files_problem(_member_dir(spec, name), meta["files"])
    return f"damaged: {why}" if why else "ok"


def load_weights(path: Path, spec: WorldSpec, what: str) -> dict:
    """``torch.load`` of a state dict; a file that cannot be read raises MemberDamaged naming it."""
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise damaged_error(spec, what, f"{path} is missing") from None
    except (RuntimeError, EOFError, OSError, ValueError) as e:
        raise damaged_error(
            spec, what, f"{path} cannot be read ({str(e).splitlines()[0]})"
        ) from None


def load_member(name: str, device: str = "cpu", world: str | WorldSpec | None = None):
    """A built zoo member as a ``HookedTransformer`` in eval mode with the world tokenizer.

    Unknown names raise ValueError listing the members; an unbuilt world raises WorldNotBuilt; a
    member whose files are missing, truncated or changed raises :class:`MemberDamaged` (path and
    fix).
    """
    spec = world_spec(world)
    _check_name(name, spec)
    status = member_status(spec, name)
    if status == "missing":
        raise not_built_error(spec, f"member {name!r}")
    if status != "ok":
        raise damaged_error(spec, f"member {name!r}", status.removeprefix("damaged: "))
    model = make_model(_arch_of(spec, name), seed=0)
    model.load_state_dict(
        load_weights(_member_dir(spec, name) / "weights.pt", spec, f"member {name!r}")
    )
    model.cfg.model_name = name
    # what caches key on (kit.models.identity): this world's build of the member, so notebook 06's
    # audit steps and 03's patched answers are read back on a rerun (the ignore: torch's
    # Module.__setattr__ is annotated for tensors and modules only)
    model.kit_identity = member_identity(spec, name)  # pyright: ignore[reportArgumentType]
    return model.to(device, print_details=False).eval()


# ---------------------------------------------------------------- names and info
def members(world: str | WorldSpec | None = None, sparse: bool = True) -> list[str]:
    """Every member name of the world: bases, checkpoints, fine-tunes (build order).

    ``sparse=False`` leaves out the sparse fine-tunes (``FinetuneSpec.plastic``): near-copies of
    their parent outside a few neurons, they would only duplicate it in zoo-wide statistics.
    """
    return member_names(world_spec(world), sparse)


def member_info(name: str, world: str | WorldSpec | None = None) -> dict:
    """kind, parent, step, arch, params, and (once built) train_tokens of one member."""
    from kit.world.tokenizer import vocab

    spec = world_spec(world)
    _check_name(name, spec)
    info: dict = {"name": name, "world": spec.name, "parent": None, "step": None}
    root = name.split("@")[0]
    if "@step-" in name:
        info.update(kind="checkpoint", parent=root, step=int(name.split("@step-")[1]))
    elif any(b.name == name for b in spec.bases):
        info.update(kind="base", step=_base(spec, name).steps)
    else:
        f = next(f for f in spec.finetunes if f.name == name)
        info.update(
            kind=f.kind,
            parent=f.parent,
            step=None,
            finetune_data=(list(f.inject) if f.inject else "mixture"),
            plastic=f.plastic,
        )
    arch = _arch_of(spec, name)
    info["arch"] = asdict(arch)
    info["params"] = param_count(arch, len(vocab()))
    meta = read_meta(spec, name)
    info["train_tokens"] = meta["train_tokens"] if meta is not None else None
    return info


# ---------------------------------------------------------------- one builder at a time
@contextmanager
def world_lock(spec: WorldSpec, wait: bool = True) -> Iterator[None]:
    """Hold the world's build lock (``<world dir>/.build.lock``, :func:`kit.core.paths.build_lock`)
    for the block: a second builder of the same world waits, saying which process holds it
    (``wait=False``: raise BlockingIOError with that instead)."""
    with build_lock(world_dir(spec) / ".build.lock", f"world {world_label(spec)}", wait):
        yield
