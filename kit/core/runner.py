"""``python -m kit run``: execute the notebooks with papermill into a run directory.

A run owns ``runs/<profile>/<timestamp>/``: one folder per notebook holding the executed
notebook, its resolved ``params.yaml``, ``results.json`` and ``figures/``; ``run.json`` summarises
the run (rewritten after each notebook, so an interrupted run says so). ``runs/<profile>/latest``
points at the newest run. The figures of notebooks that succeeded are copied to the top-level
``figures/<notebook>/`` (default profile only); a failed notebook's exported figures are never
touched. The profile and every ``--set field=value`` are validated against every selected
notebook before anything is created. A failing notebook is named and the run goes on; the exit
code is non-zero if any failed. An existing run directory is never overwritten.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import traceback
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from kit.core.params import (ParamsError, config_class, load_params, notebook_names, parse_assignment,
                             read_profiles)
from kit.world.pinned import PINNED_ENV
from kit.core.paths import REPO_ROOT, atomic_write_text, cache_dir

NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
DEFAULT_PROFILE = "tiny"


class RunError(Exception):
    """Something the user can fix (a path, a permission): printed as one line, exit code 2."""


@dataclass
class NotebookOutcome:
    notebook: str
    status: str
    """``ok``, ``failed`` or ``interrupted`` (Ctrl-C)."""
    seconds: float
    n_results: int = 0
    n_figures: int = 0
    error: str = ""


def discover(only: list[str] | None = None, notebooks_dir: Path = NOTEBOOKS_DIR) -> list[Path]:
    """Notebooks ``NN_*.ipynb`` in order, filtered by ``only`` (prefixes like ``01`` or full ids)."""
    paths = sorted(Path(notebooks_dir).glob("[0-9][0-9]_*.ipynb"))
    if not only:
        return paths
    chosen = [p for p in paths if any(p.stem == o or p.stem.startswith(f"{o}_") for o in only)]
    missing = [o for o in only if not any(p.stem == o or p.stem.startswith(f"{o}_") for p in paths)]
    if missing:
        raise SystemExit(f"--only: no notebook matches {missing}; notebooks: {', '.join(p.stem for p in paths)}")
    return chosen


def plan(notebooks: list[Path], profile: str, sets: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Validate the profile and the ``--set`` overrides against every notebook; nothing is created.

    Returns each notebook's overrides (the ``--set`` fields its config has). Raises ``ParamsError``
    listing every problem: a profile some notebook lacks (with the profiles all of them define), a
    ``--set`` field no selected notebook has, a value its config rejects, a broken params file.
    """
    errors: list[str] = []
    lacking: list[str] = []
    allowed: set[str] | None = None
    known = set(notebook_names())
    per_notebook: dict[str, dict[str, Any]] = {}
    used: set[str] = set()
    for nb in notebooks:
        per_notebook[nb.stem] = {}
        if nb.stem not in known:  # a notebook without a params file gets only profile and out_dir
            continue
        try:
            _, profiles = read_profiles(REPO_ROOT / "params" / f"{nb.stem}.yaml")
            allowed = set(profiles) if allowed is None else allowed & set(profiles)
            if profile not in profiles:
                lacking.append(nb.stem)
                continue
            mine = {k: v for k, v in sets.items() if k in config_class(nb.stem).model_fields}
            used |= set(mine)
            per_notebook[nb.stem] = mine
            load_params(nb.stem, profile, mine)
        except ParamsError as e:
            errors.append(f"{nb.stem}: {e}")
    if lacking:
        errors.insert(0, f"profile {profile!r} is not defined for {', '.join(lacking)}; "
                         f"allowed profiles: {', '.join(sorted(allowed or ())) or '(none shared)'}")
    unused = [k for k in sets if k not in used]
    if unused and not lacking:
        fields = sorted({f for nb in notebooks if nb.stem in known for f in config_class(nb.stem).model_fields})
        errors.append(f"--set {', '.join(unused)}: no selected notebook has such a field; fields: {', '.join(fields)}")
    if errors:
        raise ParamsError("\n".join(errors))
    return per_notebook


def new_run_dir(out: Path, profile: str) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    base = out / profile / stamp
    run_dir, n = base, 1
    while run_dir.exists():  # never write into an existing run
        run_dir = base.with_name(f"{stamp}-{n}")
        n += 1
    try:
        run_dir.mkdir(parents=True)
    except OSError as e:
        raise RunError(f"cannot create the run directory {run_dir}: {e.strerror or e}. "
                       "Pass --out DIR naming a writable folder (default: runs/ in the repository).") from None
    return run_dir


def point_latest(run_dir: Path) -> None:
    latest = run_dir.parent / "latest"
    tmp = run_dir.parent / f".latest.{os.getpid()}"
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    tmp.symlink_to(run_dir.name)
    os.replace(tmp, latest)


# Kernels the runner starts: no progress bars (papermill saves tqdm widgets as bars frozen at 0%,
# and text bars as redraw fragments); KIT_BATCH makes kit.start turn tqdm.auto into plain tqdm for
# the bars a caller forces on. IPC transport: no "running over TCP without encryption" warning.
# PINNED_ENV: the kernels compute in the numerical environment the worlds are trained in (torch's
# portable kernels, MKL's reproducible path, one thread; kit.start switches oneDNN off), so the
# numbers and figures of a run are the same bits on any x86-64 CPU (kit/world/pinned.py).
KERNEL_ENV = {"TQDM_DISABLE": "1", "TQDM_MININTERVAL": "30", "KIT_BATCH": "1", **PINNED_ENV}
KERNEL_CONFIG = {"KernelManager": {"transport": "ipc"}}
KERNEL_START_TIMEOUT_S = 300
"""Seconds a notebook's kernel may take to answer its first request (papermill's ``start_timeout``)."""


@contextmanager
def kernel_env(env: dict[str, str]) -> Iterator[None]:
    """Set ``env`` for the kernels started inside the block (they inherit ours), then restore ours."""
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


def execute(nb: Path, profile: str, run_dir: Path, timeout: int | None,
            overrides: dict[str, Any] | None = None) -> NotebookOutcome:
    """Run one notebook into ``run_dir/<notebook>/``; a failure becomes the outcome, Ctrl-C propagates."""
    import papermill as pm
    from traitlets.config import Config

    stem = nb.stem
    out_dir = run_dir / stem
    out_dir.mkdir()
    t0 = time.perf_counter()
    try:
        with kernel_env(KERNEL_ENV):
            pm.execute_notebook(
                str(nb), str(out_dir / nb.name),
                parameters={"profile": profile, "out_dir": str(out_dir), **(overrides or {})},
                cwd=str(nb.parent), kernel_name="python3", progress_bar=False,
                execution_timeout=timeout, config=Config(KERNEL_CONFIG),
                # papermill's default 60 s for the kernel's first reply failed two notebooks when two test
                # suites shared the 2 cores; a slow start is not a failed notebook
                start_timeout=KERNEL_START_TIMEOUT_S,
                shutdown_kernel="immediate",  # on Ctrl-C a graceful shutdown makes the kernel print zmq errors
            )
        status, error = "ok", ""
    except Exception as e:  # keep going: the summary names the notebook and the cause
        status = "failed"
        error = _short_error(e)
    results = out_dir / "results.json"
    n_results = len(json.loads(results.read_text())) if results.exists() else 0
    n_figures = len(list((out_dir / "figures").glob("*.png"))) if (out_dir / "figures").exists() else 0
    return NotebookOutcome(stem, status, time.perf_counter() - t0, n_results, n_figures, error)


def _short_error(e: Exception) -> str:
    name = getattr(e, "ename", type(e).__name__)
    value = getattr(e, "evalue", str(e))
    if not value:
        value = "".join(traceback.format_exception_only(type(e), e)).strip()
    return f"{name}: {value}"[:500]


def export_figures(run_dir: Path, dest: Path, notebooks: list[str]) -> int:
    """Copy the figures of ``notebooks`` (those that succeeded) to ``dest/<notebook>/``.

    Each notebook's folder is replaced whole, by a rename of a complete copy, so a reader sees the
    old set or the new one; a notebook not named here (failed, skipped) keeps its old figures.
    """
    n = 0
    for stem in notebooks:
        fig_dir = run_dir / stem / "figures"
        if not fig_dir.is_dir():
            continue
        target = dest / stem
        staging, old = dest / f".{stem}.new-{os.getpid()}", dest / f".{stem}.old-{os.getpid()}"
        shutil.copytree(fig_dir, staging)
        if target.exists():
            os.replace(target, old)
        os.replace(staging, target)
        shutil.rmtree(old, ignore_errors=True)
        n += len(list(target.glob("*.png")))
    return n


def changed_figures(dest: Path, notebooks: list[str]) -> list[str]:
    """``git status`` lines of exported figures that differ from the committed ones (empty outside git)."""
    paths = [str(dest / stem) for stem in notebooks if (dest / stem).exists()]
    if not paths:
        return []
    try:
        out = subprocess.run(["git", "-C", str(dest), "status", "--porcelain", "--untracked-files=all", "--", *paths],
                             capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):  # no git, or not a work tree: nothing to compare with
        return []
    kinds = {"M": "changed", "D": "deleted", "A": "added", "?": "new, not committed"}
    return [f"{line[3:]} ({kinds.get(line.strip()[0], line[:2].strip())})" for line in out.splitlines() if line.strip()]


def summary_table(outcomes: list[NotebookOutcome]) -> str:
    rows = [f"{'notebook':28s} {'status':8s} {'time':>8s} {'results':>7s} {'figures':>7s}"]
    for o in outcomes:
        rows.append(f"{o.notebook:28s} {o.status:8s} {o.seconds:7.1f}s {o.n_results:7d} {o.n_figures:7d}")
        if o.error:
            rows.append(f"    -> {o.error}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kit run", description="Execute the notebooks with papermill.")
    parser.add_argument("--profile", default=DEFAULT_PROFILE, help="params profile (default: tiny; also smoke, paper)")
    parser.add_argument("--only", nargs="+", metavar="NN", help="notebooks to run, e.g. --only 01 03")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="override a config field in every selected notebook that has it (repeatable; "
                             "the value is read as YAML: --set n_items=20 --set tasks=[add,code])")
    parser.add_argument("--out", default=str(REPO_ROOT / "runs"), help="root of run directories (default: runs/)")
    parser.add_argument("--figures", default=None,
                        help="where to copy exported figures (default: figures/ for the tiny profile, nowhere otherwise)")
    parser.add_argument("--notebooks", default=str(NOTEBOOKS_DIR), help="folder of NN_*.ipynb (default: notebooks/)")
    parser.add_argument("--timeout", type=int, default=None, help="per-cell timeout in seconds")
    args = parser.parse_args(argv)
    try:
        return run(args)
    except (ParamsError, RunError) as e:  # before or around the run: say what to fix, no traceback
        print(str(e), file=sys.stderr)
        return 2
    except OSError as e:  # PathError says what to do itself; a bare OSError gets the file and a hint
        hint = f"{e.strerror}: {e.filename} (check that the folder exists and is writable)" if e.strerror else str(e)
        print(hint, file=sys.stderr)
        return 2


def run(args: argparse.Namespace) -> int:
    notebooks = discover(args.only, Path(args.notebooks))
    sets = dict(parse_assignment(a) for a in args.set)
    overrides = plan(notebooks, args.profile, sets)  # a typo should cost seconds, not a run
    cache_dir()  # a KIT_CACHE_DIR that is a file fails here, in one line, not in every kernel
    run_dir = new_run_dir(Path(args.out), args.profile)
    print(f"run directory: {run_dir}", flush=True)
    outcomes: list[NotebookOutcome] = []
    record = {"profile": args.profile, "overrides": sets, "status": "running", "notebooks": []}

    def save(status: str) -> None:
        record.update(status=status, notebooks=[asdict(o) for o in outcomes])
        atomic_write_text(run_dir / "run.json", json.dumps(record, indent=2) + "\n")

    save("running")
    for nb in notebooks:
        print(f"[{nb.stem}] running (profile {args.profile}) ...", flush=True)
        t0 = time.perf_counter()
        try:
            outcome = execute(nb, args.profile, run_dir, args.timeout, overrides[nb.stem])
        except KeyboardInterrupt:
            outcomes.append(NotebookOutcome(nb.stem, "interrupted", time.perf_counter() - t0, error="Ctrl-C"))
            save("interrupted")
            print(f"\ninterrupted during {nb.stem}: outputs so far are in {run_dir} (run.json says "
                  "'interrupted'); no figures were exported", file=sys.stderr)
            return 130
        print(f"[{nb.stem}] {outcome.status} in {outcome.seconds:.1f}s" + (f": {outcome.error}" if outcome.error else ""), flush=True)
        outcomes.append(outcome)
        save("running")
    failed = [o.notebook for o in outcomes if o.status == "failed"]
    save("failed" if failed else "ok")
    point_latest(run_dir)
    from kit.core.report import write_report  # the claims of every notebook, one table per paper
    print(f"report: {write_report(run_dir)[1]}")
    figures = args.figures or (str(REPO_ROOT / "figures") if args.profile == DEFAULT_PROFILE else None)
    if figures:
        succeeded = [o.notebook for o in outcomes if o.status == "ok"]
        n = export_figures(run_dir, Path(figures), succeeded)
        print(f"exported {n} figures (PNG + PDF) of {len(succeeded)} notebook(s) that succeeded to {figures}")
        for line in changed_figures(Path(figures), succeeded):
            print(f"WARNING: differs from the committed figure: {line}")
    print(summary_table(outcomes))
    if failed:
        print(f"FAILED notebooks: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
