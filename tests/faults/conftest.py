"""Fault injection: a small full disk where the test can mount one, else a simulated ENOSPC."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MB tmpfs at ``tmp_path/disk`` (root on Linux), or None where it cannot be mounted (CI
    without privileges) or ``KIT_TEST_SIMULATE_ENOSPC=1``: the test then simulates ENOSPC."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.environ.get("KIT_TEST_SIMULATE_ENOSPC") == "1":  # to test the fallback where tmpfs mounts
        yield None
        return
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
            capture_output=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        done = None
    if done is None or done.returncode != 0:
        yield None
        return
    try:
        yield Path(mount)
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True, timeout=30)


def fill(disk: Path, leave: int) -> None:
    """Fill ``disk`` until about ``leave`` bytes are free."""
    st = os.statvfs(disk)
    free = st.f_bavail * st.f_frsize
    if free > leave:
        (disk / "ballast").write_bytes(b"\0" * (free - leave))


def notebooks(folder: Path, cells: dict[str, str]) -> Path:
    """Notebooks ``<name>.ipynb`` in ``folder/nbs``: a parameters cell (``profile``, ``out_dir``),
    then ``code``. They have no params file, so the runner gives them only those two parameters."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    nbs = folder / "nbs"
    nbs.mkdir()
    for name, code in cells.items():
        nb = new_notebook(
            cells=[
                new_code_cell(
                    "profile = 'smoke'\nout_dir = None", metadata={"tags": ["parameters"]}
                ),
                new_code_cell(code),
            ]
        )
        nb.metadata["kernelspec"] = {
            "name": "python3",
            "display_name": "Python 3",
            "language": "python",
        }
        nbformat.write(nb, nbs / f"{name}.ipynb")
    return nbs


def staging_debris(folder: Path) -> list[Path]:
    """Hidden staging files or folders a run may leave (``.*.partial.ipynb``, ``.*.tmp``...)."""
    return [
        p
        for pattern in (".*.partial*", ".*.tmp", ".*.new-*", ".*.old-*")
        for p in folder.rglob(pattern)
    ]


@pytest.fixture
def helpers():
    """The helpers above, for test modules (conftest cannot be imported with importlib mode)."""
    from types import SimpleNamespace

    return SimpleNamespace(notebooks=notebooks, staging_debris=staging_debris, fill=fill)
