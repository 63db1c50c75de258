"""Per-item caches: responses and per-item scores of one (model, benchmark, settings) survive a
killed run, and the rerun computes only the missing items.

An :class:`ItemCache` is an append-only jsonl file under ``<KIT_CACHE_DIR>/items/``; each finished
batch is written and fsynced at once, so a kill leaves at most a torn last line (ignored).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Callable, Sequence


class ItemCache:
    """Per-item records of one (model, benchmark, settings), in an append-only jsonl file.

    Each finished item is one line written and flushed at once; a killed run leaves at most a
    torn last line, which is ignored on reading. ``settings`` (any JSON-able dict) is part of the
    key: other settings never reuse these records.
    """

    def __init__(self, model: str, benchmark: str, settings: dict[str, Any], root: Path | None = None):
        from kit.core.paths import cache_dir

        key = json.dumps({"model": model, "benchmark": benchmark, "settings": settings}, sort_keys=True, default=str)
        digest = hashlib.sha256(key.encode()).hexdigest()[:16]
        safe = "".join(c if c.isalnum() or c in "-." else "_" for c in f"{model}__{benchmark}")[-80:]
        self.path = (Path(root) if root else cache_dir() / "items") / f"{safe}-{digest}.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.key = key
        self._args = (model, benchmark, settings, root)

    def extended(self, **settings: Any) -> "ItemCache":
        """The cache of the same model and benchmark with ``settings`` added to the key."""
        model, benchmark, old, root = self._args
        return ItemCache(model, benchmark, {**old, **settings}, root=root)

    def load(self) -> dict[str, Any]:
        """``{item id: record}`` of every complete line."""
        done: dict[str, Any] = {}
        if self.path.exists():
            for line in self.path.read_text().splitlines():
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:  # the torn last line of a killed run
                    continue
                done[str(rec["id"])] = rec["value"]
        return done

    def add(self, records: dict[str, Any]) -> None:
        with open(self.path, "a") as f:
            for k, v in records.items():
                f.write(json.dumps({"id": str(k), "value": v}) + "\n")
            f.flush()
            os.fsync(f.fileno())


def map_items(ids: Sequence[Any], compute: Callable[[list[int]], list[Any]], batches: list[list[int]],
              cache: ItemCache | None = None, progress: bool = False) -> list[Any]:
    """``compute(batch indices) -> values`` over ``batches``, skipping items ``cache`` already
    holds and recording each finished batch; returns the values in ``ids`` order."""
    done = cache.load() if cache else {}
    todo = [[i for i in b if str(ids[i]) not in done] for b in batches]
    todo = [b for b in todo if b]
    if progress:
        from tqdm.auto import tqdm

        todo = tqdm(todo, desc="items", unit="batch")
    for b in todo:
        values = compute(b)
        new = {str(ids[i]): v for i, v in zip(b, values)}
        if cache:
            cache.add(new)
        done.update(new)
    return [done[str(i)] for i in ids]
