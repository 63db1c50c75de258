"""What a notebook holds on to while it runs: its config, its output directory, its seeds."""

from __future__ import annotations

import ast
import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kit.core.figures import record_results, save_figure, use_paper_style
from kit.core.params import (
    BaseConfig,
    ParamsError,
    config_class,
    format_overrides,
    load_params,
    to_yaml,
)
from kit.core.paths import REPO_ROOT, atomic_write_text


def seed_everything(seed: int) -> None:
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    os.environ.setdefault("PYTHONHASHSEED", str(seed))


@dataclass
class NotebookRun:
    """A notebook's run: ``cfg`` (validated params), ``dir`` (where its outputs go)."""

    notebook: str
    profile: str
    cfg: BaseConfig
    dir: Path

    @property
    def results_path(self) -> Path:
        return self.dir / "results.json"

    # Both return None: a notebook cell ending in either call would otherwise echo the paths
    # (or the whole results dict) under its figure. kit.save_figure returns the paths.
    def save_figure(self, fig, name: str) -> None:
        """Save ``fig`` as PNG+PDF under ``<run dir>/figures/``."""
        save_figure(fig, name, self.dir / "figures")

    def record(self, **numbers: Any) -> None:
        """Record key numbers into ``<run dir>/results.json`` (merged into what it holds)."""
        record_results(self.results_path, **numbers)

    def page(self, path: str | Path, height: int = 720):
        """A local HTML page this run wrote (``path``), for display inline: an iframe in a trusted
        notebook, a link and the path otherwise (:class:`kit.core.jupyter.LocalPage`)."""
        from kit.core.jupyter import document_dir, local_page

        return local_page(path, document_dir(self.dir), height)


def start(
    notebook: str,
    profile: str | None = None,
    out_dir: str | Path | None = None,
    overrides: dict[str, Any] | None = None,
    namespace: dict[str, Any] | None = None,
) -> NotebookRun:
    """Begin a notebook run: validate params, clean the output dir, save resolved params, seed RNGs.

    ``out_dir`` is set by the runner; run by hand in JupyterLab it defaults to
    ``runs/<profile>/interactive/<notebook>/``. Either way a start begins an empty
    ``results.json`` and removes the figures of an earlier start, so an interrupted rerun never
    looks complete with the old run's numbers.

    ``namespace`` is the notebook's ``globals()``: its parameters cell declares every config field
    (``None`` keeps the profile's value), papermill ``-p field value`` or ``kit run --set`` put
    values there, and they are validated like the YAML and recorded in ``params.yaml``. The fields
    are then removed from the namespace (the notebook reads ``run.cfg``), so a later cell that
    reuses such a name can never feed it back into a rerun of the start cell.
    """
    cls = config_class(notebook)
    given = dict(_take_parameters(notebook, cls, namespace) if namespace is not None else {})
    given.update(overrides or {})
    cfg = load_params(notebook, profile, given)
    profile = profile or "tiny"
    run_dir = Path(out_dir) if out_dir else REPO_ROOT / "runs" / profile / "interactive" / notebook
    run_dir.mkdir(parents=True, exist_ok=True)
    _clear_outputs(run_dir)
    header = f"# {notebook}, profile {profile}\n"
    if given:
        header += f"# overrides (papermill -p / kit run --set): {format_overrides(given)}\n"
    atomic_write_text(run_dir / "params.yaml", header + to_yaml(cfg))
    seed_everything(cfg.seed)
    use_paper_style()
    from kit.core.pinned import enter_pinned, is_pinned

    if is_pinned():  # the runner's kernels: the same bits as the world (kit/core/pinned.py)
        enter_pinned()
    if os.environ.get("KIT_BATCH") == "1":  # set by the runner for its kernels
        _plain_progress_bars()
    return NotebookRun(notebook=notebook, profile=profile, cfg=cfg, dir=run_dir)


def _take_parameters(
    notebook: str, cls: type[BaseConfig], namespace: dict[str, Any]
) -> dict[str, Any]:
    """The config fields the parameters cell (and papermill) set to something other than None.

    A name papermill injected (``-p NAME VALUE``) that is neither a field nor ``profile`` /
    ``out_dir`` is refused, naming it and the allowed names: a typo must not run the default."""
    allowed = [*RUN_PARAMETERS, *cls.model_fields]
    # papermill's own injections
    unknown = [
        n
        for n in injected_parameters(namespace)
        if n not in allowed and not n.startswith("PAPERMILL_")
    ]
    if unknown:
        raise ParamsError(
            f"{notebook}: unknown parameter(s) {', '.join(unknown)} (papermill -p); "
            f"allowed parameters: {', '.join(allowed)}"
        )
    missing = [f for f in cls.model_fields if f not in namespace]
    if missing:
        raise ParamsError(
            f"{notebook}: parameter(s) {', '.join(missing)} are not defined: run the parameters "
            "cell (it declares every field of the config) before kit.start; kit.start takes them "
            "out of the namespace each time it runs"
        )
    return {f: v for f in cls.model_fields if (v := namespace.pop(f)) is not None}


RUN_PARAMETERS = ("profile", "out_dir")
"""Parameters every notebook takes besides its config's fields."""

INJECTED_HEADER = "# Parameters"
"""First line of the cell papermill injects after the parameters cell (its ``comment``)."""


def injected_parameters(namespace: dict[str, Any]) -> list[str]:
    """Names assigned in the last cell papermill injected in this kernel (IPython's input history
    ``In``), in order; empty outside papermill."""
    history = namespace.get("In") or namespace.get("_ih") or []
    for source in reversed(list(history)):
        if isinstance(source, str) and source.lstrip().startswith(INJECTED_HEADER):
            try:
                tree = ast.parse(source)
            except SyntaxError:
                return []
            return [
                t.id
                for node in tree.body
                if isinstance(node, (ast.Assign, ast.AnnAssign))
                for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                if isinstance(t, ast.Name)
            ]
    return []


def _plain_progress_bars() -> None:
    """In batch kernels, ``tqdm.auto`` gives text bars: papermill saves widgets as bars frozen at
    0%."""
    import tqdm.auto
    import tqdm.std

    tqdm.auto.tqdm = tqdm.std.tqdm


def _clear_outputs(run_dir: Path) -> None:
    """Forget an earlier start's results and figures (only the files a run writes, nothing else)."""
    atomic_write_text(run_dir / "results.json", "{}\n")
    for old in (run_dir / "figures").glob("*"):
        if old.is_file() and old.suffix in (".png", ".pdf"):
            old.unlink()
