"""How much memory each notebook of a run needs, so notebooks side by side are not killed for it.

The runner starts a notebook beside the running ones only when the sum of their peaks fits in the
memory available when the run starts (:func:`fits`); a notebook that needs more than the machine
has runs alone. A notebook's peak is, in order of preference:

1. its **recorded** peak: the largest resident memory its process tree (runner child, kernel, job
   workers) reached in the newest earlier run of the profile (``peak_bytes`` in ``run.json``,
   sampled each second by :class:`TreePeak`);
2. an **estimate** from the models its config names (:func:`estimate_peak`): a kernel's own
   :data:`KERNEL_BYTES`, plus :data:`HELD_COPIES` copies of its largest model's weights (parameter
   count x the bytes of the config's ``dtype``), plus, when the config names fine-tunes
   (``<base>+<recipe>``) that a first run builds, what their training workers hold
   (:data:`FINETUNE_BYTES_PER_PARAM`, one worker per fine-tune up to the config's ``max_workers``,
   whose None means every core, as the job engine reads it).
   The counts of the real models are :data:`N_PARAMS`; the tiny world's and the twins' models are a
   few MB and count as nothing beside the kernel.

dtype: every model is held in the dtype its profile states, ``float32`` unless it says otherwise
(kit.models.load's default; the ``real`` profiles state none, so the real LLMs run in float32 on a
CPU: bfloat16 halves the estimate but changes the numbers, and is chosen in a profile, never here).
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

GIB = 1024**3
KERNEL_BYTES = int(1.5 * GIB)
"""A kernel with torch, transformers and the kit imported, before any model (measured ~1.2-1.4 GiB
resident on the 2-core machine), rounded up."""
HELD_COPIES = 2
"""Copies of the largest model's weights a notebook holds at its peak: loading a real model holds
the ``transformers`` copy and the TransformerLens copy at once (measured: the Qwen pair in float32
peaks at 5.3 and 14.0 GiB, i.e. ~2 copies, docs/real-models.md), and a patched model sits beside
its patching model. Replaced by the recorded peak after a first run."""
FINETUNE_BYTES_PER_PARAM = 52
"""A training worker's resident bytes per parameter of the model it fine-tunes (fp32, AdamW, 8 x
320 tokens a step): measured ~7 GB for SmolLM2-135M's 134.5M parameters (docs/real-models.md)."""
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
N_PARAMS: dict[str, int] = {
    "real/smollm2-135m-instruct": 134_515_008,
    "real/gemma-3-270m": 268_098_176,
    "real/qwen2.5-coder-0.5b-instruct": 494_032_768 + 151_936 * 896,
    "real/qwen2.5-coder-1.5b-instruct": 1_543_714_304 + 151_936 * 1536,
}
"""Parameters held in memory by each real model, by kit name: SmolLM2 and Gemma-3 as their
dequantised files hold (tied embeddings, counted once); the Qwen pair from their widths (24 x 896 /
4864, 28 x 1536 / 8960, 2 key-value heads, 151,936 tokens: 494.0M and 1543.7M with tied embeddings)
plus the separate output matrix their GGUFs carry (vocabulary x d_model)."""


def strings_in(value: Any) -> Iterable[str]:
    """Every string in a config value, dict keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from strings_in(k)
            yield from strings_in(v)
    elif isinstance(value, (list, tuple, set)):
        for v in value:
            yield from strings_in(v)


def model_bytes(name: str, dtype: str = "float32") -> int:
    """Bytes of ``name``'s weights in ``dtype`` (a fine-tune ``<base>+<recipe>`` has its base's
    size); 0 for a model not in :data:`N_PARAMS` (the tiny world's, the twins')."""
    if dtype not in DTYPE_BYTES:
        raise ValueError(f"dtype={dtype!r}; allowed values: {', '.join(DTYPE_BYTES)}")
    return N_PARAMS.get(name.split("+")[0], 0) * DTYPE_BYTES[dtype]


def estimate_peak(config: Any, cores: int | None = None) -> int:
    """A notebook's peak resident bytes estimated from its config (module docstring): the kernel,
    :data:`HELD_COPIES` copies of its largest model in the config's ``dtype``, and its fine-tune
    workers if it names fine-tunes: one per fine-tune up to ``max_workers``, or up to ``cores``
    (default: the cores this process may use) where ``max_workers`` is None, as the job engine
    reads it (a first real run of notebook 03 measured 13.9 GiB with two workers, where one was
    planned)."""
    values = config.model_dump() if hasattr(config, "model_dump") else dict(config)
    dtype = str(values.get("dtype") or "float32")
    names = [s for s in strings_in(values) if s.split("+")[0] in N_PARAMS]
    if not names:
        return KERNEL_BYTES
    largest = max(names, key=lambda n: model_bytes(n, dtype))
    peak = KERNEL_BYTES + HELD_COPIES * model_bytes(largest, dtype)
    tuned = sorted({n for n in names if "+" in n})
    if tuned:
        base = max(tuned, key=lambda n: model_bytes(n, dtype)).split("+")[0]
        if cores is None:
            from kit.core.jobs.schedule import default_workers

            cores = default_workers()
        workers = min(len(tuned), int(values.get("max_workers") or cores))
        peak += workers * N_PARAMS[base] * FINETUNE_BYTES_PER_PARAM
    return peak


def recorded_peaks(out: Path, profile: str) -> dict[str, int]:
    """Each notebook's ``peak_bytes`` in the newest earlier run of ``profile`` under ``out`` that
    recorded one (a damaged ``run.json`` is skipped: a record is only a hint)."""
    peaks: dict[str, int] = {}
    for path in sorted((out / profile).glob("*/run.json")):  # timestamped names: oldest first
        try:
            for o in json.loads(path.read_text()).get("notebooks", []):
                if o.get("peak_bytes"):
                    peaks[o["notebook"]] = int(o["peak_bytes"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return peaks


def available_bytes() -> int | None:
    """``MemAvailable`` of ``/proc/meminfo`` (memory a new process can have without swapping), or
    ``None`` where the OS does not say."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


@dataclass
class MemoryPlan:
    """Each notebook's planned peak and the memory they share."""

    peaks: dict[str, int]
    """Peak bytes by notebook stem (recorded, else estimated)."""
    budget: int | None
    """Bytes the notebooks may use together (``None``: unknown, no limit)."""
    source: dict[str, str] = field(default_factory=dict)
    """``recorded`` or ``estimated``, by notebook stem."""

    def describe(self) -> str:
        """One line for the run's log: each notebook's peak in GiB and where it comes from."""
        parts = [
            f"{stem} {self.peaks[stem] / GIB:.1f} ({self.source.get(stem, 'estimated')})"
            for stem in sorted(self.peaks)
        ]
        room = "unknown" if self.budget is None else f"{self.budget / GIB:.1f} GiB"
        return f"memory plan, GiB per notebook: {', '.join(parts)}; available {room}"


def plan_memory(
    configs: dict[str, Any], out: Path, profile: str, budget: int | None = None
) -> MemoryPlan:
    """The plan of a run: each notebook's recorded peak, else its estimate; ``budget`` defaults
    to the memory available now."""
    recorded = recorded_peaks(out, profile)
    peaks, source = {}, {}
    for stem, cfg in configs.items():
        if stem in recorded:
            peaks[stem], source[stem] = recorded[stem], "recorded"
        else:
            peaks[stem], source[stem] = estimate_peak(cfg), "estimated"
    return MemoryPlan(peaks, available_bytes() if budget is None else budget, source)


def fits(stem: str, running: Iterable[str], plan: MemoryPlan) -> bool:
    """Whether ``stem`` may start beside the ``running`` notebooks: their planned peaks sum within
    the budget. With nothing running it always may (a notebook larger than the machine runs
    alone, and fails as it would in a serial run)."""
    running = list(running)
    if not running or plan.budget is None:
        return True
    total = sum(plan.peaks.get(s, KERNEL_BYTES) for s in [*running, stem])
    return total <= plan.budget


def next_that_fits(waiting: list[str], running: Iterable[str], plan: MemoryPlan) -> int | None:
    """Index in ``waiting`` (longest first) of the first notebook that :func:`fits` beside the
    running ones, or ``None``: wait for one to finish."""
    running = list(running)
    for i, stem in enumerate(waiting):
        if fits(stem, running, plan):
            return i
    return None


def _tree_rss(root: int) -> int:
    """Resident bytes of ``root`` and all its descendants, from ``/proc`` (0 where unreadable)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            # fields after the command name, which may hold spaces: state ppid ...
            fields = stat[stat.rindex(")") + 2 :].split()
            pid, ppid = int(entry), int(fields[1])
            rss[pid] = int(fields[21]) * page
            children.setdefault(ppid, []).append(pid)
        except (OSError, ValueError, IndexError):
            continue
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack.extend(children.get(pid, []))
    return total


class TreePeak:
    """The largest resident memory of this process and its descendants, sampled every
    ``interval`` seconds on a daemon thread while the ``with`` block runs (``peak`` in bytes; 0
    where ``/proc`` is missing)."""

    def __init__(self, interval: float = 1.0):
        self.interval = interval
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while True:
            try:
                self.peak = max(self.peak, _tree_rss(os.getpid()))
            except OSError:
                return
            if self._stop.wait(self.interval):
                return

    def __enter__(self) -> "TreePeak":
        if Path("/proc").is_dir():
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
