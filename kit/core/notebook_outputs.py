"""The outputs a committed notebook ships: an executed copy's outputs written back into
``notebooks/<nb>.ipynb`` with what changes from run to run taken out, and the hash of the code they
came from.

A reader who opens a committed notebook (in JupyterLab, on a code host) sees the figures, tables and
claims of the committed ``tiny`` run without running anything. :func:`shipped` takes the committed
notebook as it is (its cells, ids, metadata, markdown) and gives each code cell the outputs of the
same cell of an executed copy, normalised by :func:`shipped_outputs`, so that rerunning an unchanged
tree rewrites the same bytes (``git status`` stays clean). Found by comparing the executed notebooks
of two runs, what changes between runs and is removed:

- papermill's cell and notebook metadata (start/end times, durations) and its injected-parameters
  cell (it holds the run directory); the committed cells keep their own metadata;
- execution counts (numbered 1, 2, ... over the code cells, as one clean top-to-bottom run would);
- stderr (library chatter such as "Moving model to device", warnings, text progress bars: its order
  against stdout depends on timing); carriage-return redraws in stdout keep their last state;
- progress-bar widgets (``application/vnd.jupyter.widget-*``) and the notebook's widget state;
- HTML that needs JavaScript (circuitsvis views: ~1.3 MB of script and a random element id per view;
  a notebook opened from the repository is untrusted, so JupyterLab and code hosts never run it):
  replaced by a one-line text note, the view appears when the notebook is run; a run's page shown
  in an iframe keeps only its text (the page's path: the iframe's address is the run folder's);
- absolute paths: the run directory becomes ``runs/<profile>/latest``, the repository root is
  dropped (paths become relative), the cache and data directories become ``$KIT_CACHE_DIR`` /
  ``$KIT_DATA_DIR``, the home directory ``~``;
- memory addresses (``<... at 0x7f...>``) and printed wall times (``Runtime 211 s``).

``metadata.kit.source_sha256`` records the hash of the code cells' sources the outputs were made
from (:func:`source_sha256`; markdown makes no output, so editing prose keeps the outputs valid);
:func:`problems` names a notebook without outputs or whose code changed since.

``python -m kit notebooks adopt RUN_DIR`` fills ``notebooks/`` from an existing run (the runner does
the same after each ``tiny`` run, :mod:`kit.core.runner`); ``python -m kit notebooks check`` lists
the problems.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from kit.core.paths import REPO_ROOT, atomic_write_text, cache_dir

SHIPPED_PROFILE = "tiny"
"""The profile whose outputs the committed notebooks carry (the committed run behind
``figures/``)."""

WIDGET_MIME = "application/vnd.jupyter.widget"
SCRIPT_NOTE = (
    "(an interactive view that needs JavaScript; a notebook opened from the repository is not "
    "trusted to run it: run the notebook to see it)"
)
ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{6,16}\b")
WALL_TIME = re.compile(
    r"\b(Runtime|runtime|wall time|Wall time|took) \d+(?:\.\d+)? ?(s|sec|seconds|min|minutes)\b"
)
TEXT_MIMES = ("text/", "application/json", "application/javascript")


class NotebookMismatch(ValueError):
    """The executed copy was made from other cells than the committed notebook holds."""


def code_sources(cells: Sequence[dict]) -> list[str]:
    """The sources of the code cells that make outputs: every code cell but papermill's injected
    parameters."""
    return [
        _text(c.get("source", ""))
        for c in cells
        if c.get("cell_type") == "code"
        and "injected-parameters" not in c.get("metadata", {}).get("tags", [])
    ]


def source_sha256(nb: dict) -> str:
    """sha256 of the notebook's code cells' sources, in order (a JSON list, so cell boundaries
    count)."""
    blob = json.dumps(code_sources(nb["cells"]), ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def _text(value: str | list[str]) -> str:
    return value if isinstance(value, str) else "".join(value)


def _lines(text: str) -> list[str]:
    """Multi-line text the way nbformat writes it: a list of lines with their newlines."""
    return text.splitlines(keepends=True)


@dataclass(frozen=True)
class Rewrites:
    """Text substitutions for one run's outputs: literal prefixes (longest first), then patterns."""

    literal: tuple[tuple[str, str], ...]

    def __call__(self, text: str) -> str:
        for old, new in self.literal:
            text = text.replace(old, new)
        text = ADDRESS.sub("0x...", text)
        return WALL_TIME.sub(lambda m: f"{m[1]} (wall time, not shipped)", text)


def rewrites_for(run_dir: Path, profile: str, repo_roots: Sequence[Path] = ()) -> Rewrites:
    """The substitutions for outputs of the run in ``run_dir``: its absolute path (as given and
    resolved) -> ``runs/<profile>/latest``; each repository root (the run's and this one) -> a
    relative path; the cache and data directories and the home directory -> their names."""
    pairs: dict[str, str] = {}
    for p in {str(run_dir), str(run_dir.resolve())}:
        pairs[p] = f"runs/{profile}/latest"
    for root in [*repo_roots, REPO_ROOT]:
        for p in {str(root), str(Path(root).resolve())}:
            if p.strip("/"):  # never "/" itself: that would take every slash out
                pairs[p.rstrip("/") + "/"] = ""
    for name, path in (("$KIT_CACHE_DIR", cache_dir()), ("$KIT_DATA_DIR", _data_dir())):
        if path is not None:
            pairs[str(path)] = name
    home = str(Path.home())
    if home not in ("", "/"):
        pairs[home.rstrip("/") + "/"] = "~/"
    return Rewrites(tuple(sorted(pairs.items(), key=lambda kv: -len(kv[0]))))


def _data_dir() -> Path | None:
    from kit.core.paths import DataError, data_dir

    try:
        return data_dir(verify=False)
    except DataError:  # no data directory on this machine: no path of it can be in an output
        return None


def shipped_outputs(outputs: Sequence[dict], rewrite: Rewrites, count: int | None) -> list[dict]:
    """``outputs`` of one executed cell as the committed notebook ships them (see the module
    docstring): stderr, widgets and script views out, streams merged, text rewritten, execution
    counts set to ``count``."""
    out: list[dict] = []
    for o in outputs:
        kind = o.get("output_type")
        if kind == "stream":
            if o.get("name") != "stdout":
                continue
            text = _text(o.get("text", ""))
            if out and out[-1]["output_type"] == "stream":
                out[-1]["text"] += text
            else:
                out.append({"name": "stdout", "output_type": "stream", "text": text})
        elif kind in ("display_data", "execute_result"):
            data = _shipped_data(o.get("data", {}), rewrite)
            if not data:
                continue
            item: dict[str, Any] = {"data": data}  # keys in nbformat's (sorted) order
            if kind == "execute_result":
                item["execution_count"] = count
            out.append({**item, "metadata": o.get("metadata", {}), "output_type": kind})
        elif kind == "error":
            out.append(
                {
                    "ename": o.get("ename", ""),
                    "evalue": rewrite(o.get("evalue", "")),
                    "output_type": "error",
                    "traceback": [rewrite(t) for t in o.get("traceback", [])],
                }
            )
    for o in out:  # streams merged first: a redraw may span two of them
        if o["output_type"] == "stream":
            o["text"] = _lines(rewrite(_without_redraws(o["text"])))
    return [o for o in out if o["output_type"] != "stream" or o["text"]]


def _without_redraws(text: str) -> str:
    """Each line as a terminal shows it after carriage-return redraws (text progress bars): the
    part after its last ``\r``; a ``\r\n`` line ending is kept as a newline."""
    lines = text.split("\n")  # not splitlines: it splits at every \r too
    shown = []
    for n, line in enumerate(lines):
        if n < len(lines) - 1 and line.endswith("\r"):
            line = line[:-1]
        shown.append(line.rsplit("\r", 1)[-1])
    return "\n".join(shown)


def _shipped_data(data: dict, rewrite: Rewrites) -> dict:
    kept = {k: v for k, v in data.items() if not k.startswith(WIDGET_MIME)}
    if len(kept) < len(data) and set(kept) <= {"text/plain"}:
        return {}  # a widget's text fallback ("HBox(children=...)") says nothing without it
    if "<script" in _text(kept.get("text/html", "")):
        kept.pop("text/html")
        kept.pop("application/javascript", None)
        kept["text/plain"] = SCRIPT_NOTE
    elif "<iframe" in _text(kept.get("text/html", "")) and "text/plain" in kept:
        # a run's page shown inline (kit.core.jupyter.local_page): its address is relative to
        # the run's folder, where no committed notebook lives; the text names the page
        kept.pop("text/html")
    return {
        k: (
            _lines(rewrite(_text(v))) if k.startswith(TEXT_MIMES) and not isinstance(v, dict) else v
        )
        for k, v in kept.items()
    }


def shipped(committed: dict, executed: dict, rewrite: Rewrites, profile: str) -> dict:
    """``committed`` with each code cell's outputs taken from the same cell of ``executed``,
    normalised, and ``metadata.kit`` recording the code's hash and the profile.

    Raises :class:`NotebookMismatch` when the code cells differ (the notebook was edited after the
    run): outputs are only ever shipped beside the code that made them."""
    mine, theirs = code_sources(committed["cells"]), code_sources(executed["cells"])
    if mine != theirs:
        first = next(
            (i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b), min(len(mine), len(theirs))
        )
        raise NotebookMismatch(
            f"code cell {first + 1} of {len(mine)} differs from the run's copy ({len(theirs)} code "
            "cells): the notebook changed after the run; run it again (python -m kit run) "
            "before shipping its outputs"
        )
    ran = [
        c
        for c in executed["cells"]
        if c.get("cell_type") == "code"
        and "injected-parameters" not in c.get("metadata", {}).get("tags", [])
    ]
    nb = json.loads(json.dumps(committed))  # a deep copy: the caller's dict stays as read
    code = (c for c in nb["cells"] if c.get("cell_type") == "code")
    for n, (cell, done) in enumerate(zip(code, ran), start=1):
        count = n if done.get("execution_count") is not None else None
        cell["execution_count"] = count
        cell["outputs"] = shipped_outputs(done.get("outputs", []), rewrite, count)
    nb["metadata"].pop("widgets", None)
    for key in ("kernelspec", "language_info"):  # what the run's kernel reported (JupyterLab
        if key in executed.get("metadata", {}):  # marks a notebook modified when they differ)
            nb["metadata"][key] = executed["metadata"][key]
    nb["metadata"]["kit"] = {"profile": profile, "source_sha256": source_sha256(nb)}
    return nb


def notebook_text(nb: dict) -> str:
    """The file text of ``nb`` as the committed notebooks are written (one-space indent, keys in
    their order, UTF-8 as is, a final newline)."""
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def write_shipped(
    run_dir: Path, stem: str, notebooks_dir: Path, profile: str, repo_roots: Sequence[Path] = ()
) -> bool:
    """Write notebook ``stem`` of ``run_dir`` back into ``notebooks_dir`` (see :func:`shipped`);
    True if the file changed. The file is rewritten only when its text differs."""
    target = notebooks_dir / f"{stem}.ipynb"
    executed = json.loads((run_dir / stem / f"{stem}.ipynb").read_text())
    committed = json.loads(target.read_text())
    # the repository the run was made in: the folder above its notebooks/ (papermill's input path)
    ran_from = Path(executed.get("metadata", {}).get("papermill", {}).get("input_path") or ".")
    roots = [
        *repo_roots,
        *([ran_from.parent.parent] if ran_from.parent.name == "notebooks" else []),
    ]
    text = notebook_text(
        shipped(committed, executed, rewrites_for(run_dir, profile, roots), profile)
    )
    if target.read_text() == text:
        return False
    atomic_write_text(target, text)
    from kit.core.jupyter import sign

    try:  # made here, like the run's copy: trusted, its views render (kit/core/jupyter.py)
        sign(target)
    except Exception as e:  # a signature database that cannot be written costs the views only
        print(f"{target.name}: not signed as trusted ({type(e).__name__}: {e})", file=sys.stderr)
    return True


def problems(path: Path) -> list[str]:
    """What keeps the committed notebook at ``path`` from showing its results
    (:func:`problems_of`)."""
    return problems_of(json.loads(path.read_text()), path.name)


def problems_of(nb: dict, name: str) -> list[str]:
    """What keeps notebook ``nb`` (its file name ``name``) from showing its results: no outputs, no
    recorded source hash, code changed since its outputs were made, or another profile's outputs."""
    code = [c for c in nb["cells"] if c.get("cell_type") == "code"]
    found = []
    if not any(c.get("outputs") for c in code):
        found.append(f"{name}: no outputs")
    recorded = nb.get("metadata", {}).get("kit", {}).get("source_sha256")
    if recorded is None:
        found.append(f"{name}: no metadata.kit.source_sha256 (its outputs' source is unknown)")
    elif recorded != source_sha256(nb):
        found.append(
            f"{name}: its outputs were made from other code cells than it holds (recorded "
            f"source_sha256 {recorded[:12]}..., now {source_sha256(nb)[:12]}...)"
        )
    profile = nb.get("metadata", {}).get("kit", {}).get("profile")
    if recorded is not None and profile != SHIPPED_PROFILE:
        found.append(f"{name}: outputs of profile {profile!r}, not {SHIPPED_PROFILE!r}")
    if found:
        found[-1] += (
            f"; refill after a run: python -m kit notebooks adopt runs/{SHIPPED_PROFILE}/latest"
        )
    return found


def adopt(
    run_dir: Path, notebooks_dir: Path, only: Sequence[str] | None = None
) -> tuple[list[str], list[str]]:
    """Ship the outputs of every notebook that succeeded in ``run_dir`` (a run of the shipped
    profile without ``--set`` overrides) into ``notebooks_dir``; returns the notebooks changed and
    the ones skipped, each with why."""
    record_path = run_dir / "run.json"
    if not record_path.is_file():
        raise SystemExit(f"{run_dir}: no run.json; name a run directory (runs/<profile>/<stamp>)")
    record = json.loads(record_path.read_text())
    if record.get("profile") != SHIPPED_PROFILE or record.get("overrides"):
        raise SystemExit(
            f"{run_dir}: a run of profile {record.get('profile')!r} with overrides "
            f"{record.get('overrides') or {}}; the committed notebooks ship the "
            f"{SHIPPED_PROFILE!r} profile's outputs, without --set overrides"
        )
    changed, skipped = [], []
    for o in record.get("notebooks", []):
        stem = o["notebook"]
        if only and not any(stem == x or stem.startswith(f"{x}_") for x in only):
            continue
        if o.get("status") != "ok":
            skipped.append(f"{stem}: {o.get('status')} in this run")
        elif not (notebooks_dir / f"{stem}.ipynb").is_file():
            skipped.append(f"{stem}: no {notebooks_dir / f'{stem}.ipynb'}")
        else:
            try:
                if write_shipped(run_dir, stem, notebooks_dir, SHIPPED_PROFILE):
                    changed.append(stem)
            except NotebookMismatch as e:
                skipped.append(f"{stem}: {e}")
    return changed, skipped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kit notebooks",
        description="The outputs the committed notebooks ship (the tiny run's).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    a = sub.add_parser("adopt", help="write a run's outputs into notebooks/ (no rerun)")
    a.add_argument("run_dir", help="a run directory, e.g. runs/tiny/latest")
    a.add_argument("--only", nargs="+", metavar="NN", help="notebooks to fill, e.g. --only 01 03")
    c = sub.add_parser("check", help="list notebooks without outputs or with stale ones")
    sub.add_parser("sync", help="rewrite each notebook's parameters cell from kit/configs")
    for p in (a, c):
        p.add_argument(
            "--notebooks",
            default=str(REPO_ROOT / "notebooks"),
            help="folder of NN_*.ipynb (default: notebooks/)",
        )
    args = parser.parse_args(argv)
    if args.command == "sync":
        from kit.core.params import sync_parameters_cells

        changed = sync_parameters_cells()
        print(f"parameters cells rewritten: {', '.join(changed) or '-'}")
        return 0
    notebooks_dir = Path(args.notebooks)
    if args.command == "adopt":
        changed, skipped = adopt(Path(args.run_dir), notebooks_dir, args.only)
        print(f"outputs written into {len(changed)} notebook(s): {', '.join(changed) or '-'}")
        for line in skipped:
            print(f"not filled: {line}", file=sys.stderr)
        return 1 if skipped else 0
    found = [p for nb in sorted(notebooks_dir.glob("[0-9][0-9]_*.ipynb")) for p in problems(nb)]
    print("\n".join(found) if found else "every notebook ships the outputs of its own code")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
