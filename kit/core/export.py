"""Exporting a run's figures: the figures of the notebooks that succeeded copied to the top-level
``figures/<notebook>/`` (each folder replaced whole, by a rename), and the exported figures that
differ from the committed ones (``git status``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from kit.core.paths import disk_full_error, is_disk_full


def export_figures(run_dir: Path, dest: Path, notebooks: list[str]) -> int:
    """Copy the figures of ``notebooks`` (those that succeeded) to ``dest/<notebook>/``.

    Each notebook's folder is replaced whole, by a rename of a complete copy, so a reader sees the
    old set or the new one; a notebook not named here (failed, skipped) keeps its old figures. If a
    copy fails (a full disk: :class:`kit.core.paths.DiskFullError` naming the file) its staging
    folder is removed and the notebook's old figures stay.
    """
    n = 0
    for stem in notebooks:
        fig_dir = run_dir / stem / "figures"
        if not fig_dir.is_dir():
            continue
        target = dest / stem
        staging, old = dest / f".{stem}.new-{os.getpid()}", dest / f".{stem}.old-{os.getpid()}"
        try:
            staging.mkdir(parents=True)
            for src in sorted(p for p in fig_dir.iterdir() if p.is_file()):
                try:
                    shutil.copyfile(src, staging / src.name)
                except OSError as e:
                    if is_disk_full(e):
                        raise disk_full_error(dest / stem / src.name) from e
                    raise
            if target.exists():
                os.replace(target, old)
            os.replace(staging, target)
        except BaseException:
            if old.exists() and not target.exists():  # put the old figures back
                os.replace(old, target)
            raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
            shutil.rmtree(old, ignore_errors=True)
        n += len(list(target.glob("*.png")))
    return n


def changed_figures(dest: Path, notebooks: list[str]) -> list[str]:
    """``git status`` lines of exported figures that differ from the committed ones (empty outside
    git)."""
    paths = [str(dest / stem) for stem in notebooks if (dest / stem).exists()]
    if not paths:
        return []
    try:
        out = subprocess.run(
            [
                "git",
                "-C",
                str(dest),
                "status",
                "--porcelain",
                "--untracked-files=all",
                "--",
                *paths,
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    # no git, or not a work tree: nothing to compare with
    except (
        OSError,
        subprocess.CalledProcessError,
    ):
        return []
    kinds = {"M": "changed", "D": "deleted", "A": "added", "?": "new, not committed"}
    return [
        f"{line[3:]} ({kinds.get(line.strip()[0], line[:2].strip())})"
        for line in out.splitlines()
        if line.strip()
    ]
