"""Executing one notebook of a run with papermill: the kernel's environment, the staging file
renamed into place when the notebook is done, and the :class:`NotebookOutcome` the runner records.

A failed notebook keeps its executed copy, an interrupted or disk-full one keeps none; staging
debris (:data:`STAGING`) is removed after each notebook. Used by the serial runner
(:mod:`kit.core.runner`) and by each side-by-side child process (:mod:`kit.core.run_one`).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
import traceback
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from kit.core.jupyter import KERNEL_NAME, kernelspec_metadata, runner_kernel_path, sign
from kit.core.paths import atomic_path, disk_full_error, is_disk_full
from kit.core.pinned import PINNED_ENV
from kit.core.progress import LOG_ENV, LOG_NAME, CellLog


@dataclass
class NotebookOutcome:
    notebook: str
    status: str
    """``ok``, ``failed`` or ``interrupted`` (Ctrl-C)."""
    seconds: float
    n_results: int = 0
    n_figures: int = 0
    error: str = ""
    peak_bytes: int | None = None
    """Largest resident memory of the notebook's process tree (kit.core.memory.TreePeak), where
    measured: the runner plans side-by-side runs with it."""


# Kernels the runner starts: no progress bars in cell outputs (papermill saves tqdm widgets as bars
# frozen at 0%, and text bars as redraw fragments, different on every run); KIT_BATCH sends kit's
# own bars (kit.core.progress.progress_bar) to the notebook's progress log instead, named per
# notebook in KIT_PROGRESS_LOG, and makes kit.start turn tqdm.auto into plain tqdm for the bars a
# caller forces on. IPC transport: no "running over TCP without encryption" warning.
# PINNED_ENV: the kernels compute in the numerical environment the worlds are trained in (torch's
# portable kernels, products in OpenBLAS, exact roots, one thread: kit.start enters it), so the
# numbers and figures of a run are the same bits on one numerical platform (kit/core/pinned.py).
KERNEL_ENV = {"TQDM_DISABLE": "1", "TQDM_MININTERVAL": "30", "KIT_BATCH": "1", **PINNED_ENV}
KERNEL_CONFIG = {"KernelManager": {"transport": "ipc"}}
KERNEL_START_TIMEOUT_S = 300
"""Seconds a notebook's kernel may take to answer its first request (papermill's
``start_timeout``)."""
IOPUB_TIMEOUT_S = 600
"""Seconds to wait for a cell's remaining output after the kernel said it finished (nbclient's
``iopub_timeout``, default 4 s: under load a heatmap cell's figure arrived later and papermill
failed the notebook with ``CellTimeoutError``). Cells themselves have no timeout unless asked."""


@contextmanager
def kernel_env(env: dict[str, str]) -> Iterator[None]:
    """Set ``env`` for the kernels started inside the block (they inherit ours), then restore
    ours."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def execute(
    nb: Path,
    profile: str,
    run_dir: Path,
    timeout: int | None,
    overrides: dict[str, Any] | None = None,
) -> NotebookOutcome:
    """Run one notebook into ``run_dir/<notebook>/``; a failure becomes the outcome, Ctrl-C
    propagates."""
    import papermill as pm
    from traitlets.config import Config

    stem = nb.stem
    out_dir = run_dir / stem
    out_dir.mkdir()
    final, staging = out_dir / nb.name, out_dir / f".{nb.stem}.partial.ipynb"
    t0 = time.perf_counter()
    # The kernel's IPC sockets in a folder of its own: by default they are named kernel-ipc-<n> in
    # the working directory, and two kernels starting at once could pick the same <n>.
    sockets = Path(tempfile.mkdtemp(prefix="kit-kernel-"))
    log = out_dir / LOG_NAME
    try:
        # the project's kernel, as this Python (kit/core/jupyter.py), whatever is installed
        with (
            runner_kernel_path() as kernel_path,
            kernel_env({**KERNEL_ENV, LOG_ENV: str(log), **kernel_path}),
        ):
            pm.execute_notebook(
                str(nb),
                str(staging),
                parameters={"profile": profile, "out_dir": str(out_dir), **(overrides or {})},
                cwd=str(nb.parent),
                kernel_name=KERNEL_NAME,
                progress_bar=False,
                execution_timeout=timeout,
                config=Config(
                    {
                        "KernelManager": {
                            **KERNEL_CONFIG["KernelManager"],
                            "ip": str(sockets / "ipc"),
                        }
                    }
                ),
                # papermill's default 60 s for the kernel's first reply failed two notebooks when
                # two test suites shared the 2 cores; a slow start is not a failed notebook
                start_timeout=KERNEL_START_TIMEOUT_S,
                iopub_timeout=IOPUB_TIMEOUT_S,
                # on Ctrl-C a graceful shutdown makes the kernel print zmq errors
                shutdown_kernel="immediate",
                # a "cell k/n § section" line in the progress log as each cell starts: the
                # runner's live line and heartbeat read it (nbclient's hook)
                on_cell_start=CellLog.for_notebook(log, nb),
            )
        status, error = "ok", ""
    except Exception as e:  # keep going: the summary names the notebook and the cause
        status = "failed"
        error = _short_error(e)
        if is_disk_full(e):
            error = str(disk_full_error(getattr(e, "filename", None) or staging))
    except BaseException:  # Ctrl-C or SIGTERM: no half-executed notebook is left behind
        stop_kernels()
        remove_staging(out_dir)
        raise
    finally:
        shutil.rmtree(sockets, ignore_errors=True)
    if staging.exists() and not is_disk_full_text(error):
        os.replace(staging, final)  # the executed notebook, complete (with its error, if any)
        trust(final)
    remove_staging(out_dir)
    results = out_dir / "results.json"
    n_results = len(json.loads(results.read_text())) if results.exists() else 0
    n_figures = (
        len(list((out_dir / "figures").glob("*.png"))) if (out_dir / "figures").exists() else 0
    )
    return NotebookOutcome(stem, status, time.perf_counter() - t0, n_results, n_figures, error)


def stop_kernels() -> None:
    """Kill the kernels this process started that are still alive, and wait for them.

    Ctrl-C while papermill waits for a kernel to start leaves that kernel running: it then binds
    its sockets in the folder :func:`execute` removes and prints a zmq traceback on the terminal
    after the runner's one line. psutil comes with ipykernel."""
    try:
        import psutil
    except ImportError:
        return
    kernels = []
    for child in psutil.Process().children():
        try:
            if any("ipykernel" in part for part in child.cmdline()):
                kernels.append(child)
                child.kill()
        except psutil.Error:  # gone already
            continue
    psutil.wait_procs(kernels, timeout=10)


STAGING = (".*.partial.ipynb", ".*.tmp")
"""Hidden files a run writes before renaming them into place (papermill's notebook, atomic
writes)."""


def remove_staging(folder: Path) -> None:
    """Remove the staging files under ``folder`` (a notebook's output folder, owned by this run)."""
    for pattern in STAGING:
        for p in folder.rglob(pattern):
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)


def trust(notebook: Path) -> None:
    """Name the kernel that ran an executed notebook in its metadata (papermill keeps the input's
    ``kernelspec``) and sign it as trusted for this user (kit/core/jupyter.py): its outputs were
    made here, and JupyterLab runs their JavaScript (circuitsvis views, an embedded page) only in a
    trusted notebook. A signature database that cannot be written costs the views only."""
    import nbformat

    try:
        nb = nbformat.read(str(notebook), as_version=4)
        if nb.metadata.get("kernelspec") != kernelspec_metadata():
            nb.metadata["kernelspec"] = kernelspec_metadata()
            with atomic_path(notebook) as tmp:
                nbformat.write(nb, str(tmp))
        sign(notebook)
    except Exception as e:  # sqlite or a read-only data dir: the notebook itself is complete
        print(f"{notebook.name}: not signed as trusted ({type(e).__name__}: {e})", flush=True)


def is_disk_full_text(error: str) -> bool:
    """Whether a notebook's error text says the disk was full (in its kernel or in papermill)."""
    return "no space left on device" in error.lower()


def _short_error(e: Exception) -> str:
    name = getattr(e, "ename", type(e).__name__)
    value = getattr(e, "evalue", str(e))
    if not value:
        value = "".join(traceback.format_exception_only(type(e), e)).strip()
    text = f"{name}: {value}"
    # at most 500 characters, but never less than the first line: it names the cause (a job
    # sweep's first failure, a full disk's file)
    return text[: max(500, len(text.split("\n", 1)[0]))]
