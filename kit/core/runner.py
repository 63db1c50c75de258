"""``python -m kit run``: execute the notebooks with papermill into a run directory.

A run owns ``runs/<profile>/<timestamp>/``: one folder per notebook holding the executed
notebook, its resolved ``params.yaml``, ``results.json`` and ``figures/``; ``run.json`` summarises
the run. ``runs/<profile>/latest`` points at the newest run. Figures of the default profile are
copied to the top-level ``figures/<notebook>/``. A failing notebook is named and the run goes on;
the exit code is non-zero if any failed. An existing run directory is never overwritten.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
import traceback
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from kit.core.params import ParamsError, load_params, notebook_names, read_profiles
from kit.core.paths import REPO_ROOT, atomic_write_text

NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
DEFAULT_PROFILE = "tiny"


@dataclass
class NotebookOutcome:
    notebook: str
    status: str
    """``ok``, ``failed`` or ``skipped`` (no such profile in its params file)."""
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


def params_errors(notebooks: list[Path], profile: str) -> list[str]:
    """Validate each notebook's profile up front; notebooks lacking the profile are skipped later."""
    errors = []
    known = set(notebook_names())
    for nb in notebooks:
        if nb.stem not in known:
            continue
        try:
            _, profiles = read_profiles(REPO_ROOT / "params" / f"{nb.stem}.yaml")
            if profile in profiles:
                load_params(nb.stem, profile)
        except ParamsError as e:
            errors.append(f"params error in {nb.stem}: {e}")
    return errors


def new_run_dir(out: Path, profile: str) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    base = out / profile / stamp
    run_dir, n = base, 1
    while run_dir.exists():  # never write into an existing run
        run_dir = base.with_name(f"{stamp}-{n}")
        n += 1
    run_dir.mkdir(parents=True)
    return run_dir


def point_latest(run_dir: Path) -> None:
    latest = run_dir.parent / "latest"
    tmp = run_dir.parent / f".latest.{os.getpid()}"
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    tmp.symlink_to(run_dir.name)
    os.replace(tmp, latest)


def execute(nb: Path, profile: str, run_dir: Path, timeout: int | None) -> NotebookOutcome:
    import papermill as pm

    stem = nb.stem
    out_dir = run_dir / stem
    out_dir.mkdir()
    t0 = time.perf_counter()
    params_path = REPO_ROOT / "params" / f"{stem}.yaml"
    if params_path.exists():
        _, profiles = read_profiles(params_path)
        if profile not in profiles:
            return NotebookOutcome(stem, "skipped", 0.0, error=f"no profile {profile!r} in {params_path.name}")
    try:
        pm.execute_notebook(
            str(nb), str(out_dir / nb.name),
            parameters={"profile": profile, "out_dir": str(out_dir)},
            cwd=str(nb.parent), kernel_name="python3", progress_bar=False,
            execution_timeout=timeout,
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


def export_figures(run_dir: Path, dest: Path) -> int:
    """Copy each notebook's figures to ``dest/<notebook>/`` (replacing that notebook's old ones)."""
    n = 0
    for fig_dir in sorted(run_dir.glob("*/figures")):
        target = dest / fig_dir.parent.name
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(fig_dir, target)
        n += len(list(target.glob("*.png")))
    return n


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
    parser.add_argument("--out", default=str(REPO_ROOT / "runs"), help="root of run directories (default: runs/)")
    parser.add_argument("--figures", default=None,
                        help="where to copy exported figures (default: figures/ for the tiny profile, nowhere otherwise)")
    parser.add_argument("--notebooks", default=str(NOTEBOOKS_DIR), help="folder of NN_*.ipynb (default: notebooks/)")
    parser.add_argument("--timeout", type=int, default=None, help="per-cell timeout in seconds")
    args = parser.parse_args(argv)

    notebooks = discover(args.only, Path(args.notebooks))
    errors = params_errors(notebooks, args.profile)
    if errors:  # before any notebook runs: a typo in a params file should cost seconds, not a run
        print("\n".join(errors), file=sys.stderr)
        return 2
    run_dir = new_run_dir(Path(args.out), args.profile)
    print(f"run directory: {run_dir}", flush=True)
    outcomes = []
    for nb in notebooks:
        print(f"[{nb.stem}] running (profile {args.profile}) ...", flush=True)
        outcome = execute(nb, args.profile, run_dir, args.timeout)
        print(f"[{nb.stem}] {outcome.status} in {outcome.seconds:.1f}s" + (f": {outcome.error}" if outcome.error else ""), flush=True)
        outcomes.append(outcome)
    atomic_write_text(run_dir / "run.json", json.dumps(
        {"profile": args.profile, "notebooks": [asdict(o) for o in outcomes]}, indent=2) + "\n")
    point_latest(run_dir)
    from kit.core.report import write_report  # the claims of every notebook, one table per paper
    print(f"report: {write_report(run_dir)[1]}")
    figures = args.figures or (str(REPO_ROOT / "figures") if args.profile == DEFAULT_PROFILE else None)
    if figures:
        n = export_figures(run_dir, Path(figures))
        print(f"exported {n} figures (PNG + PDF) to {figures}")
    print(summary_table(outcomes))
    failed = [o.notebook for o in outcomes if o.status == "failed"]
    if failed:
        print(f"FAILED notebooks: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
