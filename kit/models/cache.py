"""Per-item caches: responses and per-item scores of one (model, benchmark, settings) survive a
killed run, and the rerun computes only the missing items.

An :class:`ItemCache` is an append-only jsonl file under ``<KIT_CACHE_DIR>/items/``; each finished
batch is written and fsynced at once. What makes a record usable:

- the cache's key names content: the model's identity (:mod:`kit.models.identity`: its files'
  hashes for a directory, its build key for a tiny-world member), the benchmark and the settings;
  every record carries the digest of that key and a record made for another key is refused;
- a record may carry its item's fingerprint (a digest of the prompt, or prompt and response): a
  record made for other text under the same item id is refused (a responses file replaced under
  the same name);
- every record carries the sha256 of its value's canonical bytes
  (:func:`kit.core.cached.value_digest`): a value changed behind a valid key and id (a plausible
  neuron list) is refused; records written before the digest existed are read without it;
- every value read is checked: finite numbers only, plus the caller's own check (neuron ids in
  range for this model...). A refused value is recomputed, never returned.

Reading tolerates any damaged line (bytes that are not UTF-8, not JSON, JSON that is not a record,
the torn last line of a killed run): it is skipped, counted, and the file is named in one warning
per file and process; the file is then rewritten without the refused lines (atomically), so the
next run starts clean.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Sequence

from kit.core.cached import Check, DamagedCacheWarning, non_finite, value_digest
from kit.core.paths import atomic_write_bytes, cache_dir, disk_full_error, is_disk_full
from kit.models.identity import name_identity

CACHE_FORMAT = 2
"""Part of every key: records of an older layout (without key digests) are refused, not misread."""

_WARNED: set[tuple[str, tuple[tuple[str, int], ...]]] = set()


def is_text(value: Any) -> str | None:
    """Check for cached responses: a string."""
    return None if isinstance(value, str) else f"not a text ({type(value).__name__})"


class ItemCache:
    """Per-item records of one (model, benchmark, settings), in an append-only jsonl file.

    ``model`` names the model (a directory, a file, ``zoo/<member>``, a hub id...); its identity
    (:func:`kit.models.identity.name_identity`, or ``identity`` when the caller knows it) is part of
    the key, so a model retrained in place or replaced under the same path gets a new cache.
    ``settings`` (any JSON-able dict) is part of the key too: other settings never reuse records.
    """

    def __init__(
        self,
        model: str,
        benchmark: str,
        settings: dict[str, Any],
        root: Path | None = None,
        identity: str | None = None,
    ):
        self.identity = identity if identity is not None else name_identity(str(model))
        key = json.dumps(
            {
                "format": CACHE_FORMAT,
                "model": self.identity,
                "benchmark": benchmark,
                "settings": settings,
            },
            sort_keys=True,
            default=str,
        )
        self.digest = hashlib.sha256(key.encode()).hexdigest()
        name = f"{model}__{benchmark}"
        safe = "".join(c if c.isalnum() or c in "-." else "_" for c in name)[-80:]
        folder = Path(root) if root else cache_dir() / "items"
        self.path = folder / f"{safe}-{self.digest[:16]}.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.key = key
        self._args = (model, benchmark, settings, root, self.identity)

    def extended(self, **settings: Any) -> "ItemCache":
        """The cache of the same model and benchmark with ``settings`` added to the key."""
        model, benchmark, old, root, identity = self._args
        return ItemCache(model, benchmark, {**old, **settings}, root=root, identity=identity)

    def load(
        self, fingerprints: dict[str, str] | None = None, check: Check | None = None
    ) -> dict[str, Any]:
        """``{item id: value}`` of every usable record (the last one of an id wins).

        ``fingerprints``: ``{item id: fingerprint}`` of the items asked for; a record of one of
        these ids made with another fingerprint is refused. ``check``: the caller's value check
        (after the finite-numbers check). Refused lines are counted per reason in one
        :class:`DamagedCacheWarning` naming the file, and the file is rewritten without them.
        """
        if not self.path.exists():
            return {}
        raw = self.path.read_bytes()
        lines = raw.split(b"\n")
        torn = lines.pop() if lines else b""  # after the last newline: a killed run's torn line
        done: dict[str, Any] = {}
        keep: dict[str, bytes] = {}
        refused: Counter[str] = Counter()
        if torn:
            refused["torn last line"] += 1
        for line in lines:
            if not line.strip():
                continue
            rec, why = self._parse(line, fingerprints, check)
            if why is not None:
                refused[why] += 1
                continue
            assert rec is not None  # _parse gives a record or a reason
            done[rec["id"]] = rec["value"]
            keep[rec["id"]] = line
        if refused:
            self._report(
                refused, repaired=set(refused) != {"torn last line"} and self._rewrite(raw, keep)
            )
        return done

    def _parse(
        self, line: bytes, fingerprints: dict[str, str] | None, check: Check | None
    ) -> tuple[dict[str, Any], None] | tuple[None, str]:
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            return None, "not UTF-8"
        try:
            rec = json.loads(text)
        except json.JSONDecodeError:
            return None, "not JSON"
        is_record = isinstance(rec, dict) and {"id", "value"} <= set(rec)
        if not (is_record and isinstance(rec["id"], str)):
            return None, "not a record (id, value)"
        if rec.get("key") != self.digest:
            return None, "made for another key (older format or another model/settings)"
        wanted = (fingerprints or {}).get(rec["id"])
        if wanted is not None and rec.get("fp") != wanted:
            return None, "made for another prompt/response under the same id"
        if "sha" in rec and rec["sha"] != value_digest(rec["value"]):
            return None, "value changed (it does not match its digest)"
        why = non_finite(rec["value"])
        if why is None and check is not None:
            why = check(rec["value"])
        return (rec, None) if why is None else (None, f"invalid value: {why}")

    def _rewrite(self, raw: bytes, keep: dict[str, bytes]) -> bool:
        """Replace the file by its usable lines, unless another process appended meanwhile."""
        try:
            if self.path.read_bytes() != raw:  # someone appended: leave it; the next read repairs
                return False
            atomic_write_bytes(self.path, b"".join(line + b"\n" for line in keep.values()))
            return True
        except OSError:  # a read-only or full disk: reading works, the warning says "left as it is"
            return False

    def _report(self, refused: Counter[str], repaired: bool) -> None:
        sig = (str(self.path), tuple(sorted(refused.items())))
        if sig in _WARNED:
            return
        _WARNED.add(sig)
        what = ", ".join(f"{n} {why}" for why, n in sorted(refused.items()))
        after = "rewritten without them" if repaired else "left as it is"
        warnings.warn(
            f"item cache {self.path}: skipped {sum(refused.values())} line(s) ({what}); "
            f"those items are recomputed; the file was {after}",
            DamagedCacheWarning,
            stacklevel=3,
        )

    def add(self, records: dict[str, Any], fingerprints: dict[str, str] | None = None) -> None:
        """Append ``{item id: value}`` (with each item's fingerprint when given), fsynced.

        A value holding NaN or an infinity is not written (it would be refused on reading). A full
        disk raises :class:`kit.core.paths.DiskFullError` naming this file."""
        lines = []
        for k, v in records.items():
            rec = {"key": self.digest, "id": str(k), "value": v, "sha": value_digest(v)}
            if fingerprints is not None and str(k) in fingerprints:
                rec["fp"] = fingerprints[str(k)]
            try:
                lines.append(json.dumps(rec, allow_nan=False) + "\n")
            except ValueError:  # NaN / inf: returned to the caller this once, never cached
                continue
        try:
            with open(self.path, "ab") as f:
                if f.tell() > 0 and not self._ends_with_newline():
                    lines.insert(0, "\n")  # a torn last line must not swallow our first record
                f.write("".join(lines).encode())
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:
            if is_disk_full(e):
                raise disk_full_error(self.path) from e
            raise

    def _ends_with_newline(self) -> bool:
        with open(self.path, "rb") as f:
            f.seek(-1, os.SEEK_END)
            return f.read(1) == b"\n"


def map_items(
    ids: Sequence[Any],
    compute: Callable[[list[int]], list[Any]],
    batches: list[list[int]],
    cache: ItemCache | None = None,
    progress: bool = False,
    fingerprints: Sequence[str] | None = None,
    check: Check | None = None,
) -> list[Any]:
    """``compute(batch indices) -> values`` over ``batches``, skipping items ``cache`` already
    holds and recording each finished batch; returns the values in ``ids`` order.

    ``fingerprints`` (one per item: :func:`kit.models.identity.fingerprints` of its prompt, or
    prompt and response) and ``check`` (a value check) decide which cached records are usable
    (:meth:`ItemCache.load`); a freshly computed value that fails ``check`` raises ``ValueError``
    naming the item (a bug to see, not a number to pass on)."""
    keys = [str(i) for i in ids]
    if fingerprints is not None and len(fingerprints) != len(keys):
        raise ValueError(f"map_items: {len(fingerprints)} fingerprints for {len(keys)} items")
    fps = dict(zip(keys, fingerprints)) if fingerprints is not None else None
    done = cache.load(fingerprints=fps, check=check) if cache else {}
    todo = [[i for i in b if keys[i] not in done] for b in batches]
    todo = [b for b in todo if b]
    if progress:
        from kit.core.progress import progress_bar

        todo = progress_bar(todo, desc="items", unit="batch")
    for b in todo:
        values = compute(b)
        new = {keys[i]: v for i, v in zip(b, values)}
        if check is not None:
            bad = {k: why for k, v in new.items() if (why := check(v)) is not None}
            if bad:
                k, why = next(iter(bad.items()))
                raise ValueError(
                    f"computed value of item {k!r} is invalid ({why}); {len(bad)} "
                    "item(s) of this batch fail the same check: nothing was cached"
                )
        if cache:
            cache.add(new, fps)
        done.update(new)
    return [done[k] for k in keys]
