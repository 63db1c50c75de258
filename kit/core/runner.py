"""``python -m kit run``: execute the notebooks with papermill into a run directory.

A run owns ``runs/<profile>/<timestamp>/``: one folder per notebook holding the executed
notebook, its resolved ``params.yaml``, ``results.json`` and ``figures/``; ``run.json`` summarises
the run (rewritten after each notebook, so an interrupted run says so; ``status`` is ``running``,
``ok``, ``failed``, ``interrupted`` or ``killed``: a runner that died without a word, found by the
next run through the ``pid`` run.json records, which also removes its staging files; ``error``
names the cause of a run-level failure). Before any kernel starts, the machine is checked
(:mod:`kit.core.preflight`: cache writable with room, device, data folder, hub ids).
``runs/<profile>/latest`` points at the newest complete run (every notebook ok). The figures of
notebooks that succeeded are copied to the top-level ``figures/<notebook>/`` (default profile only);
a failed notebook's exported figures are never touched. Likewise (default profile, no ``--set``; off
with ``--no-notebook-outputs``) their outputs are written back into the notebooks they ran from,
without what changes from run to run (:mod:`kit.core.notebook_outputs`), so the committed notebooks
show the committed run and an unchanged rerun rewrites nothing. The profile and every ``--set
field=value`` are validated against every selected notebook before anything is created. A failing
notebook is named and the run goes on; the exit code is non-zero if any failed. An existing run
directory is never overwritten; concurrent runners each get their own.

Every file of a run is written whole or not at all: the executed notebook goes to a hidden staging
file renamed into place when papermill is done (a failed notebook keeps its executed copy, an
interrupted or disk-full one keeps none), and staging debris is removed after each notebook. A
full disk is named as such, with the file. SIGTERM is handled like Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from kit.core.execution import NotebookOutcome, _short_error, execute, remove_staging
from kit.core.export import changed_figures, export_figures
from kit.core.jobs.schedule import count_arg, default_workers
from kit.core.machine import load, run_facts
from kit.core.memory import MemoryPlan, next_that_fits, plan_memory
from kit.core.params import (
    ParamsError,
    config_class,
    load_params,
    notebook_names,
    parse_assignment,
    read_profiles,
)
from kit.core.paths import REPO_ROOT, atomic_write_text, disk_full_error, is_disk_full
from kit.core.preflight import run_problems
from kit.core.progress import RunProgress, duration, last_seconds, run_order

NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
DEFAULT_PROFILE = "tiny"


class RunError(Exception):
    """Something the user can fix (a path, a permission): printed as one line, exit code 2."""


def discover(only: list[str] | None = None, notebooks_dir: Path = NOTEBOOKS_DIR) -> list[Path]:
    """Notebooks ``NN_*.ipynb`` in order, filtered by ``only`` (prefixes like ``01`` or full
    ids)."""
    paths = sorted(Path(notebooks_dir).glob("[0-9][0-9]_*.ipynb"))
    if not only:
        return paths
    chosen = [p for p in paths if any(p.stem == o or p.stem.startswith(f"{o}_") for o in only)]
    missing = [o for o in only if not any(p.stem == o or p.stem.startswith(f"{o}_") for p in paths)]
    if missing:
        raise SystemExit(
            f"--only: no notebook matches {missing}; notebooks: {', '.join(p.stem for p in paths)}"
        )
    return chosen


def plan(
    notebooks: list[Path],
    profile: str,
    sets: dict[str, Any],
    loaded: dict[str, Any] | None = None,
) -> dict[str, dict[str, Any]]:
    """Validate the profile and the ``--set`` overrides against every notebook; nothing is created.

    Returns each notebook's overrides (the ``--set`` fields its config has); ``loaded``, when given,
    receives each notebook's resolved config. Raises ``ParamsError``
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
            cfg = load_params(nb.stem, profile, mine)
            if loaded is not None:
                loaded[nb.stem] = cfg
        except ParamsError as e:
            errors.append(f"{nb.stem}: {e}")
    if lacking:
        errors.insert(
            0,
            f"profile {profile!r} is not defined for {', '.join(lacking)}; "
            f"allowed profiles: {', '.join(sorted(allowed or ())) or '(none shared)'}",
        )
    unused = [k for k in sets if k not in used]
    if unused and not lacking:
        fields = sorted(
            {f for nb in notebooks if nb.stem in known for f in config_class(nb.stem).model_fields}
        )
        errors.append(
            f"--set {', '.join(unused)}: no selected notebook has such a field; fields: "
            f"{', '.join(fields)}"
        )
    if errors:
        raise ParamsError("\n".join(errors))
    return per_notebook


def new_run_dir(out: Path, profile: str) -> Path:
    """A new, empty ``out/<profile>/<UTC timestamp>[-n]/``: never an existing one, also when several
    runners start in the same second (``mkdir`` decides who gets which name)."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    base = out / profile / stamp
    try:
        base.parent.mkdir(parents=True, exist_ok=True)
        for n in range(10_000):
            run_dir = base if n == 0 else base.with_name(f"{stamp}-{n}")
            try:
                run_dir.mkdir()
                return run_dir
            except FileExistsError:  # another run has this name: take the next one
                continue
        raise FileExistsError(17, "10,000 runs in one second", str(base))
    except OSError as e:
        raise RunError(
            f"cannot create the run directory {base}: {e.strerror or e}. "
            "Pass --out DIR naming a writable folder (default: runs/ in the repository)."
        ) from None


def point_latest(run_dir: Path) -> None:
    """Point ``<runs>/<profile>/latest`` at ``run_dir`` unless it already points at a newer run
    (runners that finish out of order must not move it back)."""
    latest = run_dir.parent / "latest"
    if latest.is_symlink():
        current = os.readlink(latest)
        if (run_dir.parent / current).is_dir() and run_order(current) > run_order(run_dir.name):
            return
    tmp = run_dir.parent / f".latest.{os.getpid()}"
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    tmp.symlink_to(run_dir.name)
    os.replace(tmp, latest)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def mark_killed_runs(profile_dir: Path) -> list[Path]:
    """Runs under ``profile_dir`` whose run.json says ``running`` but whose runner (its ``pid`` on
    this host) is gone (SIGKILL, a crash, a reboot): marked ``killed`` (and their notebooks still
    ``running`` likewise), their staging files removed. Returns their folders. Runs of another
    host, or written before run.json recorded the pid, are left alone."""
    out = []
    host = socket.gethostname()
    for path in sorted(profile_dir.glob("*/run.json")):
        try:
            record = json.loads(path.read_text())
            pid = record.get("pid")
            if record.get("status") != "running" or record.get("host") != host:
                continue
            if not isinstance(pid, int) or _alive(pid):
                continue
            record["status"] = "killed"
            record["error"] = f"the runner (pid {pid}) died without recording an end"
            for nb in record.get("notebooks", []):
                if nb.get("status") == "running":
                    nb["status"] = "killed"
            atomic_write_text(path, json.dumps(record, indent=2) + "\n")
        except (OSError, ValueError, AttributeError):  # unreadable or unwritable: not ours to fix
            continue
        for child in path.parent.iterdir():
            if child.is_dir():
                remove_staging(child)
        shutil.rmtree(path.parent / ".specs", ignore_errors=True)
        out.append(path.parent)
    return out


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the runner is so that it stops as on Ctrl-C."""


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Inside the block SIGTERM raises :class:`Terminated` (a ``KeyboardInterrupt``): run.json says
    'interrupted' and staging files are removed, as on Ctrl-C. The old handler comes back after."""

    def stop(signum, frame):
        raise Terminated()

    try:
        old = signal.signal(signal.SIGTERM, stop)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def summary_table(outcomes: list[NotebookOutcome]) -> str:
    rows = [f"{'notebook':28s} {'status':8s} {'time':>8s} {'results':>7s} {'figures':>7s}"]
    for o in outcomes:
        rows.append(
            f"{o.notebook:28s} {o.status:8s} {o.seconds:7.1f}s {o.n_results:7d} {o.n_figures:7d}"
        )
        if o.error:
            rows.append(f"    -> {o.error}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kit run", description="Execute the notebooks with papermill."
    )
    parser.add_argument(
        "--profile",
        default=DEFAULT_PROFILE,
        help="params profile (default: tiny; also smoke, paper)",
    )
    parser.add_argument(
        "--only", nargs="+", metavar="NN", help="notebooks to run, e.g. --only 01 03"
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="override a config field in every selected notebook that has it (repeatable; "
        "the value is read as YAML: --set n_items=20 --set tasks=[add,code])",
    )
    parser.add_argument(
        "--out", default=str(REPO_ROOT / "runs"), help="root of run directories (default: runs/)"
    )
    parser.add_argument(
        "--figures",
        default=None,
        help="where to copy exported figures (default: figures/ for the tiny profile, nowhere "
        "otherwise)",
    )
    parser.add_argument(
        "--notebooks", default=str(NOTEBOOKS_DIR), help="folder of NN_*.ipynb (default: notebooks/)"
    )
    parser.add_argument(
        "--notebook-outputs",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="write each notebook's outputs, without what changes from run to run, back into "
        "the notebook it ran from (kit.core.notebook_outputs; default: on for the tiny profile "
        "without --set, off otherwise)",
    )
    parser.add_argument("--timeout", type=int, default=None, help="per-cell timeout in seconds")
    parser.add_argument(
        "--parallel",
        type=count_arg("--parallel"),
        default=None,
        metavar="N",
        help="notebooks run at once, each in its own process and kernel (default: this "
        "machine's cores; 1: one after another in this process)",
    )
    args = parser.parse_args(argv)
    try:
        return run(args)
    except (ParamsError, RunError) as e:  # before or around the run: say what to fix, no traceback
        print(str(e), file=sys.stderr)
        return 2
    except (
        OSError
    ) as e:  # PathError says what to do itself; a bare OSError gets the file and a hint
        if is_disk_full(e):
            hint = str(disk_full_error(e.filename or "the run directory"))
        elif e.strerror:
            hint = f"{e.strerror}: {e.filename} (check that the folder exists and is writable)"
        else:
            hint = str(e)
        print(hint, file=sys.stderr)
        return 2


def run(args: argparse.Namespace) -> int:
    notebooks = discover(args.only, Path(args.notebooks))
    sets = dict(parse_assignment(a) for a in args.set)
    configs: dict[str, Any] = {}
    overrides = plan(notebooks, args.profile, sets, configs)  # a typo: seconds, not a run
    # the machine before any kernel: cache writable with room, device, data folder, hub ids
    problems = run_problems(configs)
    if problems:
        raise RunError("\n".join(problems))
    stale = mark_killed_runs(Path(args.out) / args.profile)
    for path in stale:
        print(f"an earlier run was killed: {path} (run.json now says 'killed')", file=sys.stderr)
    parallel = min(args.parallel or default_workers(), max(len(notebooks), 1))
    # before this run adds its own
    expected, first_run = expected_seconds(notebooks, Path(args.out), args.profile)
    order = (
        notebooks
        if parallel == 1
        else longest_first(notebooks, Path(args.out), args.profile, expected)
    )
    with sigterm_as_interrupt():
        run_dir = new_run_dir(Path(args.out), args.profile)
        print(f"run directory: {run_dir}", flush=True)
        outcomes: list[NotebookOutcome] = []
        running: dict[str, float] = {}  # notebook -> start time, for the ones not finished
        record: dict[str, Any] = {
            "profile": args.profile,
            "overrides": sets,
            "status": "running",
            "pid": os.getpid(),  # a later run tells a killed runner from a running one by it
            "host": socket.gethostname(),
            "parallel": parallel,
            "notebooks": [],
            # when, where and how busy: what docs/timings.md prints beside the times
            "started": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            **run_facts(),
        }
        started = time.perf_counter()

        def save(status: str, error: str = "") -> None:
            record.update(status=status, notebooks=[asdict(o) for o in outcomes])
            record["wall_s"] = round(time.perf_counter() - started, 1)
            loads = [x for x in (record.get("load_max"), record["load_start"], load()) if x]
            record["load_max"] = max(loads) if loads else None
            if error:
                record["error"] = error
            atomic_write_text(run_dir / "run.json", json.dumps(record, indent=2) + "\n")

        # one live line per running notebook (kit.core.progress), the lines below printed above it
        progress = RunProgress(
            run_dir, [nb.stem for nb in order], expected, parallel, first_run=first_run
        )

        def start(stem: str) -> None:
            running[stem] = time.perf_counter()
            progress.started(stem)
            last = ""
            if stem in expected:
                basis = "a first run ~" if stem in first_run else "last run "
                last = f"; {basis}{duration(expected[stem])}"
            progress.say(f"[{stem}] running (profile {args.profile}{last}) ...")

        def done(outcome: NotebookOutcome) -> None:
            running.pop(outcome.notebook, None)
            progress.finished(outcome.notebook)
            progress.say(
                f"[{outcome.notebook}] {outcome.status} in {outcome.seconds:.1f}s"
                + (f": {outcome.error}" if outcome.error else "")
            )
            outcomes.append(outcome)
            save("running")

        try:
            save("running")
            with progress:
                if parallel == 1:
                    for nb in notebooks:
                        start(nb.stem)
                        done(execute(nb, args.profile, run_dir, args.timeout, overrides[nb.stem]))
                else:
                    memory = plan_memory(configs, Path(args.out), args.profile)
                    progress.say(memory.describe())
                    record["memory_plan"] = memory.describe()
                    run_side_by_side(
                        order, args, overrides, run_dir, parallel, running, done, start, memory
                    )
            outcomes.sort(key=lambda o: o.notebook)
            return _finish(args, run_dir, outcomes, save)
        except KeyboardInterrupt as e:
            why = "SIGTERM" if isinstance(e, Terminated) else "Ctrl-C"
            for stem, t0 in running.items():
                outcomes.append(
                    NotebookOutcome(stem, "interrupted", time.perf_counter() - t0, error=why)
                )
            _save_quietly(save, "interrupted", why)
            where = f"during {', '.join(running)}" if running else "after the notebooks"
            print(
                f"\ninterrupted {where} ({why}): outputs so far are in {run_dir} (run.json says "
                "'interrupted'); no figures were exported",
                file=sys.stderr,
            )
            return 130
        except Exception as e:  # a run-level failure (disk full, report, export): run.json names it
            cause = str(e) if isinstance(e, OSError) and is_disk_full(e) else _short_error(e)
            _save_quietly(save, "failed", cause)
            print(f"run failed: {cause} (run.json in {run_dir} says 'failed')", file=sys.stderr)
            return 1


FIRST_RUN_MINUTES: dict[str, dict[str, float]] = {
    "tiny": {"00": 0.2, "01": 9.5, "02": 3.9, "03": 33, "04": 36, "05": 29, "06": 23},
    "real": {"00": 20, "01": 40, "02": 22.1, "03": 72.9, "04": 60, "05": 29.0, "06": 40.8},
}
"""Each notebook's first run (its own caches empty) on the 2-core machine, in minutes, by number
(docs/timings.md: the first runs of make run and make real; real 02, 03, 05 and 06 measured with the
four models on 2026-11-29, the others estimated there): the order of a run no earlier run has
timed, so a fresh clone starts its longest notebooks first, and the progress lines' estimates
until a run has its own times."""


def expected_seconds(
    notebooks: list[Path], out: Path, profile: str
) -> tuple[dict[str, float], frozenset[str]]:
    """Each notebook's expected time in seconds: its time in the newest earlier run of
    ``profile`` under ``out`` that has it, else its :data:`FIRST_RUN_MINUTES` (those notebooks are
    the second item: estimates, not measurements of this machine)."""
    seconds = last_seconds(out, profile)
    typical = FIRST_RUN_MINUTES.get(profile, {})
    first = frozenset(
        nb.stem for nb in notebooks if nb.stem not in seconds and nb.stem[:2] in typical
    )
    seconds.update({stem: 60.0 * typical[stem[:2]] for stem in first})
    return seconds, first


def longest_first(
    notebooks: list[Path], out: Path, profile: str, seconds: dict[str, float] | None = None
) -> list[Path]:
    """``notebooks`` ordered for side-by-side runs: the longest first (so the last to start are
    short), by ``seconds`` (default: :func:`expected_seconds`, which the runner has read already);
    notebooks with no expected time keep their number order, ahead of the others (they may be
    long)."""
    if seconds is None:
        seconds, _ = expected_seconds(notebooks, out, profile)
    return sorted(
        notebooks, key=lambda nb: (nb.stem in seconds, -seconds.get(nb.stem, 0.0), nb.stem)
    )


def run_side_by_side(
    order: list[Path],
    args: argparse.Namespace,
    overrides: dict[str, dict[str, Any]],
    run_dir: Path,
    parallel: int,
    running: dict[str, float],
    done,
    start=None,
    memory: MemoryPlan | None = None,
) -> None:
    """Run ``order`` with up to ``parallel`` notebooks at once, each in its own process
    (``python -m kit.core.run_one``) with its own kernel; ``done(outcome)`` as each finishes.

    The notebooks are independent: each reads the world and the caches, which are written whole
    under content keys (a member is built by one process at a time, under the world's lock), so the
    results and figures are those of a serial run. On Ctrl-C or SIGTERM the children get SIGTERM
    (each removes its staging files) and ``running`` keeps the ones that had not finished.
    ``start(stem)``, when given, is called as each notebook starts (it records it in ``running``).
    With a ``memory`` plan, a notebook starts only beside notebooks whose planned peaks leave it
    room (:func:`kit.core.memory.next_that_fits`): fewer run at once rather than one killed.
    """
    specs = run_dir / ".specs"
    specs.mkdir()
    children: dict[str, tuple[subprocess.Popen, Path]] = {}
    waiting = list(order)
    try:
        while waiting or children:
            while waiting and len(children) < parallel:
                i = _next_to_start(waiting, children, memory)
                if i is None:
                    break
                nb = waiting.pop(i)
                outcome = specs / f"{nb.stem}.outcome.json"
                spec = specs / f"{nb.stem}.json"
                spec.write_text(
                    json.dumps(
                        {
                            "notebook": str(nb),
                            "profile": args.profile,
                            "run_dir": str(run_dir),
                            "timeout": args.timeout,
                            "overrides": overrides[nb.stem],
                            "outcome": str(outcome),
                        }
                    )
                )
                if start is None:
                    running[nb.stem] = time.perf_counter()
                    print(f"[{nb.stem}] running (profile {args.profile}) ...", flush=True)
                else:
                    start(nb.stem)
                children[nb.stem] = (
                    # a process group of its own: a terminal's Ctrl-C reaches the runner only,
                    # also while the child is still importing (before it ignores SIGINT)
                    subprocess.Popen(
                        [sys.executable, "-m", "kit.core.run_one", str(spec)], process_group=0
                    ),
                    outcome,
                )
            time.sleep(0.2)
            for stem, (proc, outcome) in list(children.items()):
                if proc.poll() is None:
                    continue
                del children[stem]
                done(
                    _child_outcome(
                        stem, proc.returncode, outcome, time.perf_counter() - running[stem]
                    )
                )
    except BaseException:
        for proc, _ in children.values():
            proc.send_signal(signal.SIGTERM)
        for proc, _ in children.values():
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
        for stem in children:
            remove_staging(run_dir / stem)
        raise
    finally:
        shutil.rmtree(specs, ignore_errors=True)


def _next_to_start(waiting: list[Path], children: dict, memory: MemoryPlan | None) -> int | None:
    """Which waiting notebook starts next: the first (longest) one, or with a memory plan the
    first whose planned peak fits beside the running ones (``None``: wait)."""
    if memory is None:
        return 0
    return next_that_fits([nb.stem for nb in waiting], list(children), memory)


def _child_outcome(stem: str, returncode: int, path: Path, seconds: float) -> NotebookOutcome:
    """What a finished ``run_one`` process reported; a process that died before reporting is a
    failure."""
    try:
        return NotebookOutcome(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return NotebookOutcome(
            stem,
            "failed",
            seconds,
            error=f"the notebook's process exited with code {returncode} before reporting",
        )


def _save_quietly(save, status: str, error: str) -> None:
    """Record the final status; if run.json cannot be written (a full disk), say so and go on."""
    try:
        save(status, error)
    except OSError as e:
        print(f"could not record status {status!r} in run.json: {e}", file=sys.stderr)


def ship_outputs(args: argparse.Namespace, run_dir: Path, succeeded: list[str]) -> None:
    """Write the outputs of the notebooks that succeeded back into ``args.notebooks``
    (:mod:`kit.core.notebook_outputs`); a notebook edited during the run keeps its file (a
    warning says so)."""
    from kit.core.notebook_outputs import NotebookMismatch, write_shipped

    changed = []
    for stem in succeeded:
        try:
            if write_shipped(run_dir, stem, Path(args.notebooks), args.profile):
                changed.append(stem)
        except NotebookMismatch as e:
            print(f"WARNING: {stem}: outputs not written back: {e}")
    print(
        f"notebook outputs written back into {len(changed)} notebook(s) in {args.notebooks}"
        + (f": {', '.join(changed)}" if changed else " (unchanged)")
    )


def _finish(args: argparse.Namespace, run_dir: Path, outcomes: list[NotebookOutcome], save) -> int:
    """Report, figures, final status, ``latest``: the steps after the notebooks, in that order, so
    run.json says 'ok' only when everything a run writes has been written."""
    failed = [o.notebook for o in outcomes if o.status == "failed"]
    from kit.core.report import write_report  # the claims of every notebook, one table per paper

    print(f"report: {write_report(run_dir)[1]}")
    figures = args.figures or (
        str(REPO_ROOT / "figures") if args.profile == DEFAULT_PROFILE else None
    )
    if figures:
        succeeded = [o.notebook for o in outcomes if o.status == "ok"]
        n = export_figures(run_dir, Path(figures), succeeded)
        print(
            f"exported {n} figures (PNG + PDF) of {len(succeeded)} notebook(s) that succeeded to "
            f"{figures}"
        )
        for line in changed_figures(Path(figures), succeeded):
            print(f"WARNING: differs from the committed figure: {line}")
    ship = args.notebook_outputs
    if ship is None:  # the committed notebooks carry the default profile's outputs, as figures/
        ship = args.profile == DEFAULT_PROFILE and not args.set
    if ship:
        ship_outputs(args, run_dir, [o.notebook for o in outcomes if o.status == "ok"])
    save("failed" if failed else "ok", f"notebook(s) failed: {', '.join(failed)}" if failed else "")
    if not failed:
        point_latest(run_dir)
    print(summary_table(outcomes))
    if failed:
        print(f"FAILED notebooks: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
