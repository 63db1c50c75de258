"""The bench harness: speed as ratios in one process run (its command line: :mod:`kit.bench`).

Each workload times our implementation against its baseline (the naive reference algorithm, or
the plain forward pass) on the same model and data, in this process, and returns one
:class:`BenchLine` per comparison: ``name: ratio=X.XX (details)``. Ratios, not seconds, so results
compare across machines. A workload is a function ``run(model: str, device: str) ->
list[BenchLine]`` in its paper's ``bench`` module; :data:`kit.bench.WORKLOADS` names them all.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Callable

DEFAULT_MODEL = "random/gpt2-small"


@dataclass
class BenchLine:
    name: str
    """Workload (and variant), e.g. ``mui/score_vs_forward``."""
    ratio: float
    """The headline ratio; ``detail`` says which way round it is."""
    detail: str
    """What was compared, on what, and the raw times."""

    def __str__(self) -> str:
        return f"{self.name}: ratio={self.ratio:.2f} ({self.detail})"


def median_time(
    fn: Callable[[], object], repeat: int = 5, warmup: int = 1, device: str = "cpu"
) -> float:
    """Median wall-clock seconds of ``fn()`` over ``repeat`` runs after ``warmup`` runs."""
    import torch

    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    for _ in range(warmup):
        fn()
    sync()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)
