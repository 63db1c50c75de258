"""One notebook of a run in its own process: what the runner starts when notebooks run side by side.

``python -m kit.core.run_one SPEC.json`` executes the notebook SPEC names (``notebook``,
``profile``, ``run_dir``, ``timeout``, ``overrides``) with :func:`kit.core.execution.execute` and
writes its :class:`~kit.core.execution.NotebookOutcome` as JSON to SPEC's ``outcome`` path
(atomically). SIGTERM stops it as Ctrl-C stops the serial runner: no staging file is left, the
outcome says ``interrupted``. The outcome carries the peak memory of the process tree (its
kernel and job workers), sampled each second. The runner starts it in a process group of its own
and it ignores SIGINT: a terminal's Ctrl-C reaches the runner, which stops the children with
SIGTERM (one line on the terminal, not one traceback per child).
"""

from __future__ import annotations

import json
import signal
import sys
from dataclasses import asdict
from pathlib import Path

from kit.core.execution import NotebookOutcome, execute
from kit.core.memory import TreePeak
from kit.core.paths import atomic_write_text
from kit.core.runner import sigterm_as_interrupt


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    spec = json.loads(Path(args[0]).read_text())
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    nb = Path(spec["notebook"])
    try:
        with sigterm_as_interrupt(), TreePeak() as peak:
            outcome = execute(
                nb, spec["profile"], Path(spec["run_dir"]), spec["timeout"], spec["overrides"]
            )
        outcome.peak_bytes = peak.peak or None  # what the runner plans the next run's memory with
    except KeyboardInterrupt:
        outcome = NotebookOutcome(nb.stem, "interrupted", 0.0, error="SIGTERM")
    atomic_write_text(Path(spec["outcome"]), json.dumps(asdict(outcome)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
