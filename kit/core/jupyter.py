"""The Jupyter side of the notebooks: the project's kernel, notebook trust, and a run's local pages
shown inside a notebook.

**The kernel.** Every notebook names the kernel :data:`KERNEL_NAME` (``kit``, shown as
:data:`DISPLAY_NAME`). ``make setup`` installs it for this environment's Jupyter (``--sys-prefix``:
the ``.venv``'s JupyterLab and papermill) and for the user's own Jupyter (``--user``: a JupyterLab
installed elsewhere lists it and starts this ``.venv``'s Python; the last clone set up wins), via
``python -m kit jupyter kernel``. ``papermill -k kit`` then runs a notebook in the project's
environment. The runner does not depend on either install: it gives its kernels a spec of its own
Python under the same name (:func:`runner_kernel_path`), so ``kit run`` always computes in the
Python it runs in. A notebook's ``kernelspec`` and ``language_info`` metadata are what this kernel
reports (:func:`notebook_metadata`); JupyterLab rewrites both when the kernel starts and marks the
notebook modified when they differ (a different Python patch version does).

**Trust.** Jupyter runs the JavaScript and HTML in a notebook's outputs (circuitsvis views, an
embedded page) only when the notebook is *trusted*: its signature, an HMAC of its contents keyed
with a secret of this user on this machine, is in the user's signature database
(``nbsignatures.db`` and ``notebook_secret`` in ``jupyter --data-dir``, ``~/.local/share/jupyter``
on Linux; the same for every Jupyter of this user, whatever environment it runs from). Output a
kernel makes in the open session is trusted; a notebook read from disk is trusted only if signed
here. The runner signs each executed notebook (:func:`sign`: it made those outputs, on this
machine); ``make setup`` signs the committed ``notebooks/`` (``python -m kit jupyter trust``, the
same as ``jupyter trust``). A fresh clone's notebooks are untrusted on any other machine (a new
secret) until signed there, and editing a notebook outside Jupyter breaks its signature.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import shutil
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

KERNEL_NAME = "kit"
"""The kernel every notebook names (``papermill -k kit``)."""
DISPLAY_NAME = "Python (kit)"
"""How Jupyter lists it."""


def kernelspec_metadata() -> dict[str, str]:
    """A notebook's ``metadata.kernelspec``: what JupyterLab writes there when the kernel starts."""
    return {"display_name": DISPLAY_NAME, "language": "python", "name": KERNEL_NAME}


def language_info() -> dict[str, Any]:
    """A notebook's ``metadata.language_info`` as this Python's kernel reports it (ipykernel's
    ``kernel_info`` reply; the version is this interpreter's)."""
    from ipykernel.ipkernel import IPythonKernel

    return dict(IPythonKernel.language_info)


def notebook_metadata() -> dict[str, Any]:
    """``kernelspec`` and ``language_info`` for a notebook run with this Python."""
    return {"kernelspec": kernelspec_metadata(), "language_info": language_info()}


def install_kernel(user: bool = False, prefix: str | None = None) -> Path:
    """Install the ``kit`` kernel (this Python) for the user's Jupyter (``user``) or under
    ``prefix`` (``sys.prefix``: this environment's Jupyter); returns its folder."""
    from ipykernel.kernelspec import install

    return Path(
        install(
            user=user,
            prefix=None if user else prefix or sys.prefix,
            kernel_name=KERNEL_NAME,
            display_name=DISPLAY_NAME,
        )
    )


@contextmanager
def runner_kernel_path() -> Iterator[dict[str, str]]:
    """A ``JUPYTER_PATH`` (as an environment dict) whose first folder holds a ``kit`` kernel spec
    of this Python: kernels started with it run here, whatever ``kit`` kernels are installed (the
    user's may belong to another clone)."""
    from ipykernel.kernelspec import write_kernel_spec

    root = Path(tempfile.mkdtemp(prefix="kit-kernelspec-"))
    try:
        write_kernel_spec(root / "kernels" / KERNEL_NAME, overrides={"display_name": DISPLAY_NAME})
        rest = os.environ.get("JUPYTER_PATH")
        yield {"JUPYTER_PATH": os.pathsep.join([str(root), *([rest] if rest else [])])}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _notary(data_dir: str | Path | None = None):
    from jupyter_core.paths import jupyter_data_dir
    from nbformat.sign import NotebookNotary

    # the user's Jupyter data dir by default: where every Jupyter of this user looks. The notary
    # writes its secret there without creating the folder (a new account has none yet)
    folder = Path(data_dir or jupyter_data_dir())
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return NotebookNotary(data_dir=str(folder))


def sign(path: str | Path, data_dir: str | Path | None = None) -> None:
    """Mark the notebook at ``path`` trusted for this user (``jupyter trust``): its outputs'
    JavaScript and HTML run when it is opened. ``data_dir``: another signature database (tests)."""
    import nbformat

    nb = nbformat.read(str(path), as_version=4)
    _notary(data_dir).sign(nb)


def is_trusted(path: str | Path, data_dir: str | Path | None = None) -> bool:
    """Whether the notebook at ``path`` is signed in this user's database (as Jupyter checks it
    when it opens the file)."""
    import nbformat

    nb = nbformat.read(str(path), as_version=4)
    return bool(_notary(data_dir).check_signature(nb))


@dataclass(frozen=True)
class LocalPage:
    """A local HTML page (a run's concept explorer) shown inside a notebook output: an iframe that
    JupyterLab loads from its file server (``/files/...``, where the page's scripts run in a
    sandbox of their own), with a link to open it in a tab of its own; as text, its path.

    ``src`` is the page's address relative to the notebook document the output is read in
    (JupyterLab resolves it against the document's folder: :func:`document_dir`). JupyterLab shows
    the iframe only in a trusted notebook (the runner signs what it executes; a live session's
    outputs are trusted); the link and the path work either way."""

    path: Path
    src: str
    height: int = 720

    def _repr_html_(self) -> str:
        src, name = html.escape(self.src, quote=True), html.escape(self.path.name)
        return (
            f'<iframe src="{src}" title="{name}" width="100%" height="{self.height}" '
            'style="border:1px solid #ccc"></iframe>'
            f'<p><a href="{src}" target="_blank" rel="noopener">{name}</a> (JupyterLab opens it in '
            "its HTML viewer: click <i>Trust HTML</i> there to run it; any browser opens the file "
            "as it is)</p>"
        )

    def __repr__(self) -> str:
        return f"{self.path} (a page: open it in a browser; a trusted notebook shows it inline)"


def local_page(
    path: str | Path, document: str | Path | None = None, height: int = 720
) -> LocalPage:
    """:class:`LocalPage` for ``path``, its address relative to ``document`` (the folder of the
    notebook the output is read in; default: the working directory)."""
    page = Path(path).resolve()
    here = Path(document or Path.cwd()).resolve()
    return LocalPage(page, Path(os.path.relpath(page, here)).as_posix(), height)


def document_dir(run_dir: str | Path) -> Path:
    """The folder of the notebook document a run's outputs are read in: the run's own folder for
    the runner's executed copy (its kernels have ``KIT_BATCH`` set), else the working directory."""
    return Path(run_dir) if os.environ.get("KIT_BATCH") == "1" else Path.cwd()


OLD_KERNEL = ("python3", "Python 3 (kit)")
"""The name and display name earlier set-ups installed this kernel under."""


def _remove_old_kernel(prefix: Path) -> None:
    """Remove an earlier set-up's kernel from ``prefix`` (two entries for one Python confuse the
    kernel picker); a ``python3`` spec of anyone else is left alone."""
    folder = prefix / "share" / "jupyter" / "kernels" / OLD_KERNEL[0]
    try:
        spec = json.loads((folder / "kernel.json").read_text())
    except (OSError, ValueError):
        return
    if spec.get("display_name") == OLD_KERNEL[1]:
        shutil.rmtree(folder, ignore_errors=True)
        print(f"removed the earlier kernel {OLD_KERNEL[0]!r} ({OLD_KERNEL[1]}): {folder}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kit jupyter",
        description="Install the project's Jupyter kernel; sign notebooks as trusted.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    k = sub.add_parser("kernel", help=f"install the {KERNEL_NAME!r} kernel ({DISPLAY_NAME})")
    k.add_argument("--sys-prefix", action="store_true", help="for this environment's Jupyter")
    k.add_argument("--user", action="store_true", help="for the user's own Jupyter")
    t = sub.add_parser("trust", help="sign notebooks (files or folders of *.ipynb) as trusted")
    t.add_argument("paths", nargs="+")
    args = parser.parse_args(argv)
    if args.command == "kernel":
        if not (args.sys_prefix or args.user):
            parser.error("kernel: say where: --sys-prefix, --user or both")
        if args.sys_prefix:
            print(f"kernel {KERNEL_NAME!r} ({DISPLAY_NAME}): {install_kernel(prefix=sys.prefix)}")
            _remove_old_kernel(Path(sys.prefix))
        if args.user:
            try:
                print(f"kernel {KERNEL_NAME!r} ({DISPLAY_NAME}): {install_kernel(user=True)}")
            except OSError as e:  # a read-only home: this environment's Jupyter still has it
                print(f"kernel {KERNEL_NAME!r} not installed for the user ({e})", file=sys.stderr)
        return 0
    files = [
        f for p in map(Path, args.paths) for f in (sorted(p.glob("*.ipynb")) if p.is_dir() else [p])
    ]
    for f in files:
        sign(f)
    print(f"signed {len(files)} notebook(s) as trusted for this user (jupyter --data-dir)")
    return 0
