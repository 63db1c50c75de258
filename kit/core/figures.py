"""Paper-style figures and a notebook's key numbers (``results.json``)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, cast

import numpy as np

from kit.core.paths import atomic_path, atomic_write_text

PAPER_STYLE = {
    "figure.dpi": 110,
    "savefig.dpi": 200,
    "savefig.bbox": "tight",
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "pdf.fonttype": 42,  # editable text in the PDF, as journals ask
}


# No volatile metadata, so an unchanged figure is an unchanged file: the PDF's creation
# date changes on every save, and the matplotlib version stamp (PDF Creator and Producer, PNG
# Software) on every upgrade even when the drawing does not.
STABLE_METADATA = {
    "png": {"Software": None},
    "pdf": {"CreationDate": None, "Creator": None, "Producer": None},
}


def use_paper_style() -> None:
    import matplotlib as mpl
    import seaborn as sns

    sns.set_palette("colorblind")
    mpl.rcParams.update(cast(Any, PAPER_STYLE))  # the stubs want literal rc keys
    bundled_fonts_first()


def bundled_fonts_first() -> Path:
    """Let matplotlib's own fonts (DejaVu 2.35 in its ``mpl-data``) win every tie with a system copy
    of the same family (Debian's fonts-dejavu is 2.37); returns their folder.

    Why: among equally good matches ``findfont`` takes the first in its font list, and that list's
    order comes from the user-wide cache (``~/.cache/matplotlib``), written by whichever matplotlib
    install built it last, so one machine embedded 2.35 in a PDF and the next 2.37 (same drawing,
    same PNG, a different PDF). Putting the bundled fonts first makes the PDF a function of the
    figure.
    """
    import matplotlib as mpl
    from matplotlib import font_manager as fm

    bundled = Path(mpl.get_data_path(), "fonts", "ttf")
    manager = fm.fontManager
    known = {Path(f.fname) for f in manager.ttflist}
    for path in sorted(bundled.glob("*.ttf")):
        if path not in known:  # a cache written by an install since deleted lists none of ours
            manager.addfont(path)
    # stable: keeps each group's order
    manager.ttflist.sort(key=lambda f: Path(f.fname).parent != bundled)
    clear_findfont_cache(manager)
    return bundled


def clear_findfont_cache(manager) -> None:
    """Forget ``manager``'s cached ``findfont`` answers after its font list changed, as matplotlib's
    own ``FontManager.addfont`` does (there is no public call for it in matplotlib 3.9-3.11).

    It reaches the private ``FontManager._findfont_cached`` (an ``lru_cache``); if a matplotlib
    release renames or removes it, this raises naming the version instead of leaving stale answers
    (figures would then embed whichever font was cached first), and
    tests/core/test_figures.py::test_findfont_cache_is_what_addfont_clears fails the same way.
    """
    cached = getattr(manager, "_findfont_cached", None)
    if not callable(getattr(cached, "cache_clear", None)):
        import matplotlib

        raise RuntimeError(
            f"matplotlib {matplotlib.__version__}: FontManager._findfont_cached.cache_clear() "
            "is gone; kit.core.figures.clear_findfont_cache must follow what "
            "FontManager.addfont now does to drop its findfont cache"
        )
    cached.cache_clear()  # pyright: ignore[reportOptionalMemberAccess]  (checked just above)


def save_figure(fig, name: str, out_dir: str | Path) -> list[Path]:
    """Save ``fig`` as ``<out_dir>/<name>.png`` and ``.pdf``; returns both paths.

    ``name`` is a file stem (letters, digits, ``-`` and ``_``); each file is written atomically,
    without creation date or version stamp: the same figure gives the same bytes.
    """
    if not name or not all(c.isalnum() or c in "-_" for c in name):
        raise ValueError(f"figure name {name!r}: use letters, digits, '-' and '_' only")
    out_dir = Path(out_dir)
    paths = []
    for ext in ("png", "pdf"):
        target = out_dir / f"{name}.{ext}"
        with atomic_path(target) as tmp:
            fig.savefig(tmp, format=ext, metadata=STABLE_METADATA[ext])
        paths.append(target)
    return paths


def _jsonable(value: Any) -> Any:
    """Numbers from numpy/torch/pandas as plain JSON; NaN/inf as null (JSON has neither)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        return _jsonable(value.tolist())
    if hasattr(value, "to_dict"):
        return _jsonable(cast(Any, value).to_dict())
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return v if math.isfinite(v) else None
    if isinstance(value, (np.integer,)):
        return int(value)
    return value


def record_results(path: str | Path, **numbers: Any) -> dict[str, Any]:
    """Merge ``numbers`` into the JSON file at ``path`` (created if missing); returns the whole
    dict.

    A notebook calls this for each key number it wants reviewers and tests to read.
    """
    path = Path(path)
    current = json.loads(path.read_text()) if path.exists() else {}
    current.update(_jsonable(numbers))
    atomic_write_text(path, json.dumps(current, indent=2, sort_keys=True) + "\n")
    return current
