"""What a notebook holds on to while it runs: its config, its output directory, its seeds."""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kit.core.figures import record_results, save_figure, use_paper_style
from kit.core.params import BaseConfig, load_params, to_yaml
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

    def save_figure(self, fig, name: str) -> list[Path]:
        """Save ``fig`` as PNG+PDF under ``<run dir>/figures/``."""
        return save_figure(fig, name, self.dir / "figures")

    def record(self, **numbers: Any) -> dict[str, Any]:
        """Record key numbers into ``<run dir>/results.json``."""
        return record_results(self.results_path, **numbers)


def start(notebook: str, profile: str | None = None, out_dir: str | Path | None = None,
          overrides: dict[str, Any] | None = None) -> NotebookRun:
    """Begin a notebook run: validate params, make the output dir, save resolved params, seed RNGs.

    ``out_dir`` is set by the runner; run by hand in JupyterLab it defaults to
    ``runs/<profile>/interactive/<notebook>/``.
    """
    cfg = load_params(notebook, profile, overrides)
    profile = profile or "tiny"
    run_dir = Path(out_dir) if out_dir else REPO_ROOT / "runs" / profile / "interactive" / notebook
    run_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(run_dir / "params.yaml", f"# {notebook}, profile {profile}\n" + to_yaml(cfg))
    seed_everything(cfg.seed)
    use_paper_style()
    return NotebookRun(notebook=notebook, profile=profile, cfg=cfg, dir=run_dir)
