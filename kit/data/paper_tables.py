"""The papers' published tables (``../shared/paper_tables/*.csv``), read in place.

Values in the CSVs are the printed strings; ``load_table`` converts columns that are numeric as
printed (``+1.3`` -> 1.3, empty -> NaN) and leaves the rest as text. Nothing here is computed:
notebooks set these numbers *beside* what they compute, never in place of it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from kit.core.paths import REPO_ROOT


def tables_dir() -> Path:
    """``$KIT_PAPER_TABLES_DIR``, else ``../shared/paper_tables`` beside the repository."""
    env = os.environ.get("KIT_PAPER_TABLES_DIR")
    path = Path(env) if env else REPO_ROOT.parent / "shared" / "paper_tables"
    if not path.is_dir():
        raise FileNotFoundError(
            f"paper tables directory {path} not found; set KIT_PAPER_TABLES_DIR"
        )
    return path


def table_names() -> list[str]:
    return sorted(p.stem for p in tables_dir().glob("*.csv"))


def load_table(name: str, numeric: bool = True) -> pd.DataFrame:
    """A paper table by file stem, e.g. ``000_table05_neuron_mui_main``."""
    path = tables_dir() / f"{name}.csv"
    if not path.is_file():
        names = table_names()
        close = [n for n in names if n[:3] == name[:3]]
        raise FileNotFoundError(
            f"no paper table {name!r}; tables{' for this seed' if close else ''}: "
            f"{', '.join(close or names)}"
        )
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    if numeric:
        for col in df.columns:
            converted = pd.to_numeric(
                df[col].str.replace("+", "", regex=False).replace("", None), errors="coerce"
            )
            non_empty = df[col] != ""
            if non_empty.any() and converted[non_empty].notna().all():
                df[col] = converted
    return df
