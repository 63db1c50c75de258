"""Toy jobs, and checks of an engine built on them: a small DAG compared with ``inline`` (with a
worker killed mid-job), and the overhead per trivial job.

The toy jobs write content-addressed JSON files under a folder, as real jobs write the caches: the
file's name is a hash of what it holds, and it is written atomically. The test suite
(``tests/core/test_jobs.py``) runs them on every engine; ``python -m kit.core.jobs selftest --engine
ray --ray-address ADDR`` runs the same check on a cluster (its folder must be on storage every node
sees: ``--root``, default a temporary folder under ``KIT_CACHE_DIR``).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import tempfile
import time
from pathlib import Path
from typing import Any

from kit.core.jobs.schedule import Engine, run_jobs
from kit.core.jobs.spec import Job
from kit.core.paths import atomic_write_text, cache_dir


def _index(root: Path) -> Path:
    return root / "index"


def write_value(root: str, key: str, value: int, inputs: list[str] | None = None) -> dict[str, Any]:
    """Toy job: ``total = value + the totals of the jobs named in inputs`` (read from their files),
    written to ``root/<sha256 of the content>.json``; ``root/index/<key>`` names that file.
    Returns ``{"key", "total", "file"}``. Reading an input that is not written yet raises."""
    base = Path(root)
    total = value
    for name in inputs or []:
        file = (_index(base) / name).read_text()
        total += json.loads((base / file).read_text())["total"]
    content = json.dumps({"key": key, "total": total}, sort_keys=True)
    file = hashlib.sha256(content.encode()).hexdigest()[:16] + ".json"
    atomic_write_text(base / file, content)
    atomic_write_text(_index(base) / key, file)
    return {"key": key, "total": total, "file": file}


def die_first(
    root: str, key: str, value: int, inputs: list[str] | None = None, times: int = 1
) -> dict[str, Any]:
    """Toy job: its process kills itself with SIGKILL mid-job on its first ``times`` attempts
    (counted in the file ``root/<key>.died``, which lists the killed pids); then it is
    :func:`write_value`."""
    marker = Path(root) / f"{key}.died"
    killed = marker.read_text().split() if marker.exists() else []
    if len(killed) < times:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(" ".join([*killed, str(os.getpid())]))
        os.kill(os.getpid(), signal.SIGKILL)
    return write_value(root, key, value, inputs)


def fail(message: str, number: int = 0) -> None:
    """Toy job that raises ``ValueError(message)``."""
    raise ValueError(f"{message} ({number})")


def environment(names: list[str]) -> dict[str, Any]:
    """Toy job: the values of the environment variables ``names`` where it runs, and its pid."""
    return {"env": {n: os.environ.get(n) for n in names}, "pid": os.getpid()}


def numerics(names: list[str]) -> dict[str, Any]:
    """Toy job: :func:`environment`, and whether torch's oneDNN is on where it runs (off once a
    process entered the pinned environment)."""
    import torch  # lazy: the other toy jobs run without it

    return {**environment(names), "mkldnn": torch.backends.mkldnn.enabled}


def noop(i: int) -> int:
    """Toy job that does nothing (for the overhead per job)."""
    return i


def record_call(path: str, text: str) -> int:
    """Toy job: append ``text`` as a line to the file ``path``; returns the number of lines."""
    with open(path, "a") as f:
        f.write(text + "\n")
    return len(Path(path).read_text().splitlines())


def sleep_job(pid_file: str, seconds: float) -> float:
    """Toy job: write its pid to ``pid_file``, then sleep ``seconds``."""
    atomic_write_text(Path(pid_file), str(os.getpid()))
    time.sleep(seconds)
    return seconds


def toy_dag(root: str | Path, kill: bool = True) -> list[Job]:
    """Seven toy jobs in three levels (four leaves, two joins, one sink), given sink first so an
    engine must follow the dependencies, and one leaf given twice (it runs once). With ``kill``,
    the second join kills its own process on its first attempt (:func:`die_first`)."""
    fn = "kit.core.jobs.selftest:write_value"
    r = str(root)
    leaves = [Job(fn, {"root": r, "key": k, "value": v}) for k, v in zip("abcd", (1, 2, 3, 4))]
    left = Job(fn, {"root": r, "key": "ab", "value": 10, "inputs": ["a", "b"]}, after=leaves[:2])
    right = Job(
        f"kit.core.jobs.selftest:{'die_first' if kill else 'write_value'}",
        {"root": r, "key": "cd", "value": 20, "inputs": ["c", "d"]},
        after=leaves[2:],
    )
    sink = Job(
        fn, {"root": r, "key": "all", "value": 100, "inputs": ["ab", "cd"]}, after=[left, right]
    )
    return [sink, left, right, *leaves, leaves[0]]


def dag_totals(report_results: dict[str, Any]) -> dict[str, int]:
    """``{key: total}`` from a toy DAG's results: what must be equal on every engine."""
    return {r["key"]: r["total"] for r in report_results.values()}


def main_selftest(
    engine: Engine, max_workers: int | None, ray_address: str | None, root: str | None = None
) -> int:
    """Run :func:`toy_dag` on ``engine`` (a worker killed mid-job, except inline) and inline; print
    whether the results and the files written are the same; exit status 0 if they are."""
    base = Path(root) if root else cache_dir() / "jobs-selftest"
    base.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=base) as tmp:
        want = run_jobs(toy_dag(Path(tmp) / "inline", kill=False), engine="inline", desc="inline")
        report = run_jobs(
            toy_dag(Path(tmp) / engine, kill=engine != "inline"),
            engine=engine,
            max_workers=max_workers,
            ray_address=ray_address,
            desc=engine,
        )
        written = [
            sorted(p.name for p in (Path(tmp) / e).glob("*.json")) for e in ("inline", engine)
        ]
    same = dag_totals(report.results) == dag_totals(want.results) and written[0] == written[1]
    print(
        f"engine {engine}: {len(report.results)} jobs, totals {dag_totals(report.results)}: "
        f"{'the same' if same else 'NOT the same'} results and files as inline; "
        f"{report.wall_seconds:.1f} s"
    )
    return 0 if same else 1


def overhead(
    engine: Engine, n: int, max_workers: int | None = None, ray_address: str | None = None
) -> tuple[float, float]:
    """``(start-up s, s per job)`` of ``engine`` on trivial jobs: the wall time of a sweep of one
    job (worker processes; a Ray worker; with no Ray initialised, a local Ray too), and ``(sweep of
    2n - sweep of n) / n``, which leaves out what every sweep pays once."""
    times = []
    for size in (1, n, 2 * n):
        t0 = time.perf_counter()
        run_jobs(
            [Job(noop, {"i": i}) for i in range(size)],
            engine=engine,
            max_workers=max_workers,
            ray_address=ray_address,
            desc=f"{size} trivial jobs",
        )
        times.append(time.perf_counter() - t0)
    return times[0], (times[2] - times[1]) / n


def main_overhead(engine: Engine, n: int, max_workers: int | None, ray_address: str | None) -> int:
    start, per_job = overhead(engine, n, max_workers, ray_address)
    print(
        f"engine {engine}: a sweep of one trivial job {start:.2f} s; then "
        f"{per_job * 1000:.1f} ms per trivial job (sweeps of {n} and {2 * n})"
    )
    return 0
