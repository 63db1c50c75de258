"""Where and on what a run ran: the facts ``run.json`` records beside its times, so a measured
time can be read later with its machine, its commit and how busy the machine was."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from kit.core.paths import REPO_ROOT


def commit(repo: Path = REPO_ROOT) -> str:
    """The checkout's short commit, ``+changes`` when tracked files differ from it; ``""`` outside
    a git checkout (an installed copy, no git)."""
    try:
        head = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        if head.returncode != 0:
            return ""
        dirty = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return head.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


def machine() -> str:
    """``<CPU model>, <N> cores, <M> GiB``: what a CPU time depends on (as far as Linux says)."""
    from kit.core.pinned import cpuinfo  # the one /proc/cpuinfo reader

    cpu = cpuinfo("model name") or "unknown CPU"
    parts = [cpu, f"{os.cpu_count() or 0} cores"]
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        parts.append(f"{pages * size / 2**30:.0f} GiB")
    except (ValueError, OSError, AttributeError):
        pass
    return ", ".join(parts)


def load() -> float | None:
    """The one-minute load average (runnable processes, this run's included), or ``None``."""
    try:
        return round(os.getloadavg()[0], 2)
    except (OSError, AttributeError):
        return None


def run_facts() -> dict:
    """The facts recorded when a run starts: ``commit``, ``machine``, ``cores``, ``load_start``."""
    return {
        "commit": commit(),
        "machine": machine(),
        "cores": os.cpu_count() or 0,
        "load_start": load(),
    }
