"""Progress of long steps: bars over a notebook's loops, and the runner's live line per notebook.

Two audiences, one mechanism:

- **In JupyterLab** (a kernel you started) :func:`progress_bar` is ``tqdm.auto``: a widget bar per
  loop over models, items, groups, fine-tunes or jobs.
- **Under ``kit run``** (``KIT_BATCH=1``) a bar in a cell's output would be saved into the executed
  notebook and differ on every run, so :func:`progress_bar` writes its bar as plain lines, at most
  every :data:`BAR_INTERVAL_S`, to the notebook's :data:`LOG_NAME` in the run folder (the path comes
  in ``KIT_PROGRESS_LOG``). Third-party bars stay off there (``TQDM_DISABLE=1``): they would land in
  the outputs.

The same log gets a ``cell`` line each time papermill starts a code cell (:class:`CellLog`) and the
runner's heartbeat every :data:`HEARTBEAT_S` (:class:`RunProgress`), which also reads the log back
to draw one line per running notebook: its section, cell, elapsed time, the last run's time of that
notebook for that profile (:func:`last_seconds`) and its newest bar.

Log lines are ``HH:MM:SS kind text`` with kind ``cell``, ``bar`` or ``beat``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, TextIO

LOG_NAME = "progress.log"
"""The per-notebook log in the run folder: ``runs/<profile>/<ts>/<notebook>/progress.log``."""
LOG_ENV = "KIT_PROGRESS_LOG"
"""Environment variable naming the log a batch kernel's bars write to; empty: no bars (job
workers: one bar per loop, not one per job)."""
BAR_INTERVAL_S = 30.0
"""Seconds between two lines of one bar in the log (its last line is always written)."""
HEARTBEAT_S = 60.0
"""Seconds between two heartbeat lines of a running notebook: in its log, and on the runner's
output when that is not a terminal (CI, ``make`` piped to a file)."""
TTY_REDRAW_S = 1.0
"""Seconds between two redraws of the live lines on a terminal."""
LOG_BAR_FORMAT = "{desc}: {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]"
"""A bar as a log line: counts and times, no drawn bar."""


def in_batch() -> bool:
    """Whether this process is a kernel (or its child) started by ``kit run``."""
    return os.environ.get("KIT_BATCH") == "1"


def progress_bar(
    iterable: Iterable[Any] | None = None,
    *,
    desc: str,
    total: float | None = None,
    unit: str = "it",
    leave: bool = True,
) -> Any:
    """A tqdm bar over ``iterable`` (or one updated by hand with ``total``): a widget in JupyterLab,
    lines in the notebook's progress log under ``kit run`` (none in a job worker)."""
    import tqdm.auto
    import tqdm.std

    if not in_batch():
        return tqdm.auto.tqdm(iterable, desc=desc, total=total, unit=unit, leave=leave)
    path = os.environ.get(LOG_ENV, "")
    return tqdm.std.tqdm(
        iterable,
        desc=desc,
        total=total,
        unit=unit,
        file=LogLines(Path(path)) if path else None,
        disable=not path,  # explicit: TQDM_DISABLE=1 keeps third-party bars out of the outputs
        mininterval=BAR_INTERVAL_S,
        bar_format=LOG_BAR_FORMAT,
        dynamic_ncols=False,
        ncols=200,
    )


def append_line(path: Path, kind: str, text: str) -> None:
    """Append ``HH:MM:SS kind text`` to ``path`` (one small append: several processes share the
    file); a log that cannot be written is skipped, progress is never worth a failed notebook."""
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{time.strftime('%H:%M:%S')} {kind} {text}\n")
    except OSError:
        pass


class LogLines:
    """A file-like object for tqdm: each redraw becomes one ``bar`` line of the log (tqdm writes
    ``\\r`` + the bar, and blanks when a bar that does not stay is closed)."""

    encoding = "utf-8"

    def __init__(self, path: Path):
        self.path = path

    def write(self, s: str) -> int:
        for piece in s.replace("\r", "\n").split("\n"):
            if piece.strip():
                append_line(self.path, "bar", piece.strip())
        return len(s)

    def flush(self) -> None:
        pass


_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.M)


def last_heading(markdown: str) -> str | None:
    """The last heading of a markdown cell's source (``## 2. The law`` -> ``2. The law``)."""
    found = _HEADING.findall(markdown)
    return found[-1].strip() if found else None


class CellLog:
    """papermill's ``on_cell_start`` hook: a ``cell k/n [§ section]`` line in the log as each code
    cell starts, where the section is the last markdown heading above it. ``n_cells`` counts the
    notebook's code cells with a source, plus the parameters cell papermill injects."""

    def __init__(self, path: Path, n_cells: int):
        self.path, self.n_cells = path, n_cells
        self.section: str | None = None
        self.done = 0

    @classmethod
    def for_notebook(cls, path: Path, notebook: Path) -> "CellLog":
        cells = json.loads(notebook.read_text()).get("cells", [])
        n = sum(1 for c in cells if c.get("cell_type") == "code" and "".join(c["source"]).strip())
        return cls(path, n + 1)

    def __call__(self, cell: Any, cell_index: int, **_: Any) -> None:
        source = cell.source if isinstance(cell.source, str) else "".join(cell.source)
        if cell.cell_type == "markdown":
            self.section = last_heading(source) or self.section
            return
        if cell.cell_type != "code" or not source.strip():
            return
        self.done += 1
        self.n_cells = max(self.n_cells, self.done)
        where = f" § {self.section}" if self.section else ""
        append_line(self.path, "cell", f"{self.done}/{self.n_cells}{where}")


@dataclass
class LogState:
    """What a notebook's log says now: its current cell and section, and the newest bar line of
    that cell (None before the first)."""

    cell: str | None = None
    """``k/n`` or ``k/n § section``."""
    bar: str | None = None


def read_state(path: Path, tail_bytes: int = 16384) -> LogState:
    """The state at the end of a progress log (its last ``tail_bytes``, or the whole log when
    that tail holds no cell line: a long loop's bar lines can fill it); empty if there is none."""
    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - tail_bytes))
            text = f.read().decode("utf-8", "replace")
            if size > tail_bytes and not re.search(r"^\S+ cell ", text, re.MULTILINE):
                f.seek(0)
                text = f.read().decode("utf-8", "replace")
    except OSError:
        return LogState()
    lines = text.splitlines()
    state = LogState()
    for line in lines:
        parts = line.split(" ", 2)
        if len(parts) < 3:
            continue
        if parts[1] == "cell":
            state = LogState(cell=parts[2])
        elif parts[1] == "bar":
            state.bar = parts[2]
    return state


def run_order(name: str) -> tuple[str, int]:
    """Sort key of run folder names: ``20260101-120000`` < ``...-1`` < ``...-2`` < ``...-10``."""
    m = re.fullmatch(r"(\d{8}-\d{6})(?:-(\d+))?", name)
    return (m[1], int(m[2] or 0)) if m else ("", -1)


def last_seconds(out: Path, profile: str) -> dict[str, float]:
    """Each notebook's time in the newest earlier run of ``profile`` under ``out`` (``run.json``)
    where it was ok; a damaged record is skipped (an estimate lost, nothing else)."""
    seconds: dict[str, float] = {}
    runs = sorted(out.joinpath(profile).glob("*/run.json"), key=lambda p: run_order(p.parent.name))
    for path in runs:  # oldest first: a newer run's time overwrites an older one
        try:
            for o in json.loads(path.read_text()).get("notebooks", []):
                if o.get("status") == "ok":
                    seconds[o["notebook"]] = float(o["seconds"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
    return seconds


def duration(seconds: float) -> str:
    """``42s``, ``5m07s``, ``2h03m``."""
    s = int(round(max(seconds, 0.0)))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def estimate_text(elapsed: float, expected: float | None, first_run: bool = False) -> str:
    """Elapsed time beside the last run's, ``3m05s of ~12m00s (last run)``, or beside a first
    run's typical time where no earlier run has one (``first_run``)."""
    if expected is None:
        return f"{duration(elapsed)} (no earlier run to compare)"
    if elapsed <= expected:
        basis = "a first run's estimate" if first_run else "last run"
        return f"{duration(elapsed)} of ~{duration(expected)} ({basis})"
    basis = "a first run's estimated" if first_run else "the last run's"
    return f"{duration(elapsed)}, over {basis} {duration(expected)}"


def notebook_line(
    stem: str, state: LogState, elapsed: float, expected: float | None, first_run: bool = False
) -> str:
    """One running notebook: ``[03_x] cell 4/20 § Patching | 3m05s of ~12m00s (last run) | bar``."""
    parts = [f"[{stem}] " + (f"cell {state.cell}" if state.cell else "starting its kernel")]
    parts.append(estimate_text(elapsed, expected, first_run))
    if state.bar:
        parts.append(state.bar)
    return " | ".join(parts)


def run_line(
    n_done: int,
    n_total: int,
    running: dict[str, float],
    waiting: list[str],
    expected: dict[str, float],
    parallel: int,
    first_run: frozenset[str] = frozenset(),
) -> str:
    """The whole run: notebooks done/total and, when every unfinished notebook has an expected
    time (an earlier run's, or a first run's estimate for the ``first_run`` ones), the time left if
    the remaining work spreads over ``parallel`` slots (an estimate: the longest notebook may take
    longer than that share)."""
    text = f"[run] {n_done}/{n_total} notebooks done, {len(running)} running"
    todo = [*running, *waiting]
    basis = "with first-run estimates" if first_run & set(todo) else "last run's times"
    if todo and all(s in expected for s in todo):
        left = sum(max(expected[s] - e, 0.0) for s, e in running.items())
        left += sum(expected[s] for s in waiting)
        longest = max(
            [max(expected[s] - e, 0.0) for s, e in running.items()] + [expected[s] for s in waiting]
        )
        if longest > 0:
            text += f", ~{duration(max(left / max(parallel, 1), longest))} left ({basis})"
        else:
            text += f", past the expected times ({basis})"
    return text


class RunProgress:
    """The runner's live view: on a terminal one line per running notebook plus a ``[run]`` line,
    redrawn in place; otherwise those lines printed every :data:`HEARTBEAT_S`. Each running
    notebook's log gets a ``beat`` line every :data:`HEARTBEAT_S` either way. A thread draws; the
    runner reports with :meth:`started`, :meth:`finished` and prints through :meth:`say`."""

    def __init__(
        self,
        run_dir: Path,
        order: list[str],
        expected: dict[str, float],
        parallel: int,
        stream: TextIO | None = None,
        first_run: frozenset[str] = frozenset(),
        tty: bool | None = None,
        heartbeat_s: float | None = None,
    ):
        self.run_dir, self.expected, self.parallel = run_dir, expected, parallel
        self.first_run = first_run  # notebooks whose expected time is a first run's estimate
        self.waiting = list(order)
        self.n_total = len(order)
        self.n_done = 0
        self.running: dict[str, float] = {}  # notebook -> perf_counter at its start
        self.stream = stream or sys.stdout
        self.tty = self.stream.isatty() if tty is None else tty
        self.heartbeat_s = HEARTBEAT_S if heartbeat_s is None else heartbeat_s
        self.last_beat: dict[str, float] = {}
        self.drawn = 0  # live lines on the terminal below the printed ones
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="kit-progress", daemon=True)

    def __enter__(self) -> "RunProgress":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop.set()
        self.thread.join(timeout=5)
        with self.lock:
            self._erase()

    def started(self, stem: str) -> None:
        with self.lock:
            if stem in self.waiting:
                self.waiting.remove(stem)
            self.running[stem] = time.perf_counter()
            self.last_beat[stem] = time.perf_counter()

    def finished(self, stem: str) -> None:
        with self.lock:
            self.running.pop(stem, None)
            self.n_done += 1

    def say(self, text: str) -> None:
        """Print ``text`` above the live lines."""
        with self.lock:
            self._erase()
            print(text, file=self.stream, flush=True)
            if self.tty:
                self._draw()

    def lines(self) -> list[str]:
        """The live lines now: one per running notebook, then the whole run's."""
        return [*(self._notebook_line(s) for s in self.running), self._run_line()]

    def _notebook_line(self, stem: str) -> str:
        state = read_state(self.run_dir / stem / LOG_NAME)
        elapsed = time.perf_counter() - self.running[stem]
        return notebook_line(stem, state, elapsed, self.expected.get(stem), stem in self.first_run)

    def _run_line(self) -> str:
        now = time.perf_counter()
        elapsed = {s: now - t0 for s, t0 in self.running.items()}
        return run_line(
            self.n_done,
            self.n_total,
            elapsed,
            self.waiting,
            self.expected,
            self.parallel,
            self.first_run,
        )

    def beat(self) -> None:
        """Heartbeats due now: a ``beat`` line in each running notebook's log that has had none
        for :attr:`heartbeat_s`, and (not on a terminal) the live lines printed."""
        now = time.perf_counter()
        due = [s for s in self.running if now - self.last_beat.get(s, now) >= self.heartbeat_s]
        if not due:
            return
        for stem in due:
            self.last_beat[stem] = now
            state = read_state(self.run_dir / stem / LOG_NAME)
            where = f", cell {state.cell}" if state.cell else ""
            text = estimate_text(
                now - self.running[stem], self.expected.get(stem), stem in self.first_run
            )
            append_line(self.run_dir / stem / LOG_NAME, "beat", text + where)
        if not self.tty:  # the due notebooks' lines only: each at most every heartbeat_s
            for line in [*(self._notebook_line(s) for s in due), self._run_line()]:
                print(line, file=self.stream, flush=True)

    def _loop(self) -> None:
        while not self.stop.wait(TTY_REDRAW_S if self.tty else 1.0):
            with self.lock:
                try:
                    self.beat()
                    if self.tty:
                        self._erase()
                        self._draw()
                except (OSError, ValueError):  # a closed stream at exit: nothing left to show
                    return

    def _draw(self) -> None:
        width = shutil.get_terminal_size((100, 20)).columns - 1
        lines = [line[:width] for line in self.lines()]
        self.stream.write("".join(f"{line}\n" for line in lines))
        self.stream.flush()
        self.drawn = len(lines)

    def _erase(self) -> None:
        if self.tty and self.drawn:
            self.stream.write("\x1b[1A\x1b[2K" * self.drawn)
            self.stream.flush()
        self.drawn = 0
