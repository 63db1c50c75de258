"""Paper-style figures and a notebook's key numbers (``results.json``)."""

from __future__ import annotations

import json
import math
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np

from kit.core.paths import atomic_path, atomic_write_text

# Widths of a figure on the page, in inches: one column of a two-column paper (ICML, ACL, IEEE
# are 3.25-3.5) and the full text width (ICML 6.75, ACL 6.3, IEEE 7.16). Every figure is built at
# one of these, so its fonts are printed at the size they were set in (a figure scaled down to fit
# shrinks its 8-pt labels with it). Heights follow from the content (rows of panels).
WIDTHS = {"column": 3.5, "full": 6.75}
MAX_WIDTH_IN = 7.0  # the widest text block a figure may land in without being scaled down
MAX_HEIGHT_IN = 9.0  # a page's text height: a taller figure cannot be placed unscaled
MIN_FONT_PT = 6.0  # the smallest text venues accept in figures (ICML/NeurIPS: 6-7 pt at print size)
WIDTH_SLACK_IN = 0.1  # what the tight bounding box may add to a stated width (its padding)

PAPER_STYLE = {
    "figure.dpi": 110,
    "figure.figsize": (WIDTHS["column"], 2.6),  # a bare plt.subplots() is one column
    "savefig.dpi": 200,
    "savefig.bbox": "tight",
    "savefig.pad_inches": 0.02,
    "font.size": 8,
    "axes.titlesize": 8,
    "axes.labelsize": 8,
    "figure.titlesize": 9,
    "legend.fontsize": 7,
    "legend.title_fontsize": 7,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "axes.spines.top": False,
    "axes.spines.right": False,
    # a grid for reading values off lines and points; heatmaps turn it off (heatmap(), and
    # save_figure refuses a heatmap under grid lines)
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


def width_class(width: str) -> float:
    """The width in inches of a width class (``"column"`` or ``"full"``, see :data:`WIDTHS`)."""
    if width not in WIDTHS:
        raise ValueError(f"figure width {width!r}: use one of {', '.join(WIDTHS)}")
    return WIDTHS[width]


def new_figure(width: str = "column", height: float = 2.6, **subplots_kw: Any):
    """``plt.subplots`` at a stated ``width`` (``"column"`` 3.5 in, ``"full"`` 6.75 in) and
    ``height`` in inches; returns ``(fig, ax)`` (or the axes array when ``subplots_kw`` asks for a
    grid)."""
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(width_class(width), height), **subplots_kw)


def panel_figure(
    n: int,
    width: str | None = None,
    max_cols: int | None = None,
    panel_aspect: float = 0.8,
    extra_height: float = 0.3,
    **subplots_kw: Any,
):
    """``n`` panels wrapped into rows at a stated ``width`` (default: a column for one panel, the
    full width for more): at most ``max_cols`` a row (default 2 in a column, 4 at full width), each
    panel ``panel_aspect`` times as high as it is wide, plus ``extra_height`` inches for a title or
    a legend below. Returns ``(fig, axes)``: a list of the ``n`` panels in reading order; the
    grid's unused cells are switched off."""
    import matplotlib.pyplot as plt

    if n < 1:
        raise ValueError(f"panel_figure: n={n} panels; need at least 1")
    width = width or ("column" if n == 1 else "full")
    w = width_class(width)
    ncols = min(n, max_cols or (2 if width == "column" else 4))
    nrows = math.ceil(n / ncols)
    height = nrows * (w / ncols) * panel_aspect + extra_height
    fig, grid = plt.subplots(nrows, ncols, figsize=(w, height), squeeze=False, **subplots_kw)
    flat = list(grid.flat)
    for ax in flat[n:]:
        ax.axis("off")
    return fig, flat[:n]


def wrap_to(text: str, width_in: float, size_pt: float | None = None) -> str:
    """``text`` broken into lines that fit ``width_in`` inches at ``size_pt`` points (default: the
    title size), for titles and labels built from names of any length (real model ids)."""
    import textwrap

    import matplotlib as mpl
    from matplotlib.font_manager import FontProperties

    # matplotlib's default title size is a name ("large"), the paper style's a number
    title = FontProperties(size=mpl.rcParams["axes.titlesize"]).get_size_in_points()
    size = float(size_pt or title)
    # DejaVu Sans averages about 0.6 em a character
    return textwrap.fill(text, max(8, int(width_in * 72 / (0.6 * size))))


def heatmap(data, ax, **kwargs: Any):
    """``seaborn.heatmap`` without the paper style's grid lines (they would cross the cells);
    returns the axes."""
    import seaborn as sns

    sns.heatmap(data, ax=ax, **kwargs)
    ax.grid(False)
    return ax


def plain_log_ticks(axis) -> None:
    """Label a log axis ``0.01, 0.1, 1, 10`` rather than ``10^-2...``: mathtext exponents print at
    70% of the tick size, under :data:`MIN_FONT_PT`."""
    import matplotlib.ticker as mticker

    axis.set_major_formatter(mticker.FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(mticker.NullFormatter())


@dataclass(frozen=True)
class ExportedSize:
    """What an exported figure measures, read back from its PDF."""

    width_in: float
    height_in: float
    smallest_font_pt: float | None
    """The smallest font size any text is set in (None: no text)."""
    width: str | None
    """The width class it was built at (``column``/``full``), as save_figure recorded it."""


def _pdf_subject(width: str) -> str:
    return f"kit figure, {width} width ({WIDTHS[width]} in)"


def measure_pdf(path: str | Path) -> ExportedSize:
    """Page size, the smallest font size set (``Tf`` operators of the content streams) and the
    recorded width class of a PDF written by matplotlib."""
    import re
    import zlib

    data = Path(path).read_bytes()
    box = re.search(rb"/MediaBox\s*\[\s*([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s*\]", data)
    if box is None:
        raise ValueError(f"{path}: no /MediaBox; not a PDF page")
    x0, y0, x1, y1 = (float(v) for v in box.groups())
    sizes: list[float] = []
    for m in re.finditer(rb"stream\r?\n", data):
        body = data[m.end() : data.find(b"endstream", m.end())]
        try:
            body = zlib.decompress(body)
        except zlib.error:
            pass  # an uncompressed stream (pdf.compression 0), or binary font data
        sizes += [float(v) for v in re.findall(rb"/[^\s/]+\s+([\d.]+)\s+Tf\b", body)]
    subject = re.search(rb"/Subject\s*\(kit figure, (\w+) width", data)
    return ExportedSize(
        width_in=(x1 - x0) / 72,
        height_in=(y1 - y0) / 72,
        smallest_font_pt=min(sizes) if sizes else None,
        width=subject.group(1).decode() if subject else None,
    )


def size_problems(size: ExportedSize) -> list[str]:
    """Why an exported figure does not fit a page unscaled (empty: it does)."""
    out = []
    if size.width is None:
        out.append(f"no width class recorded (build it at one of {', '.join(WIDTHS)})")
    elif size.width_in > WIDTHS.get(size.width, 0) + WIDTH_SLACK_IN:
        out.append(
            f"{size.width_in:.2f} in wide, past its {size.width} width "
            f"{WIDTHS.get(size.width)} in (something sticks out: a legend, long labels)"
        )
    if size.width_in > MAX_WIDTH_IN:
        out.append(f"{size.width_in:.2f} in wide > {MAX_WIDTH_IN} in")
    if size.height_in > MAX_HEIGHT_IN:
        out.append(f"{size.height_in:.2f} in high > {MAX_HEIGHT_IN} in")
    if size.smallest_font_pt is not None and size.smallest_font_pt < MIN_FONT_PT:
        out.append(f"text at {size.smallest_font_pt:g} pt < {MIN_FONT_PT:g} pt")
    return out


class FigureSizeError(ValueError):
    """A figure not built at a stated width, or a heatmap under grid lines."""


class FigureSizeWarning(UserWarning):
    """A saved figure that would not fit a page at its stated width, or would print too small."""


def _stated_width(fig) -> str:
    w = float(fig.get_figwidth())
    for name, inches in WIDTHS.items():
        if abs(w - inches) < 1e-6:
            return name
    raise FigureSizeError(
        f"figure built {w:g} in wide: build it at a stated width, one of "
        + ", ".join(f"{k} ({v} in)" for k, v in WIDTHS.items())
        + " (kit.core.figures.new_figure / panel_figure)"
    )


def _gridded_heatmaps(fig) -> list[str]:
    """Titles of the axes that draw a colour mesh or image under visible grid lines."""
    from matplotlib.collections import QuadMesh
    from matplotlib.image import AxesImage

    out = []
    for ax in fig.axes:
        if not any(isinstance(a, (QuadMesh, AxesImage)) for a in ax.get_children()):
            continue
        lines = [*ax.xaxis.get_gridlines(), *ax.yaxis.get_gridlines()]
        if ax.axison and any(line.get_visible() for line in lines):
            out.append(ax.get_title() or "(untitled axes)")
    return out


def save_figure(fig, name: str, out_dir: str | Path) -> list[Path]:
    """Save ``fig`` as ``<out_dir>/<name>.png`` and ``.pdf``; returns both paths.

    ``name`` is a file stem (letters, digits, ``-`` and ``_``); each file is written atomically,
    without creation date or version stamp: the same figure gives the same bytes.

    The figure must be built at a stated width (:data:`WIDTHS`; recorded in the PDF's Subject) and
    draw no grid over a heatmap (else :class:`FigureSizeError`, before anything is written). The
    written PDF is then measured and a :class:`FigureSizeWarning` names what does not fit: wider
    than its width class or :data:`MAX_WIDTH_IN`, taller than :data:`MAX_HEIGHT_IN`, text under
    :data:`MIN_FONT_PT`. A warning, not an error, because what sticks out can depend on the data (a
    long model name in a legend) and a long run should not lose its later cells to it;
    tests/core/test_figure_sizes.py fails on every exported figure that does not fit.
    """
    if not name or not all(c.isalnum() or c in "-_" for c in name):
        raise ValueError(f"figure name {name!r}: use letters, digits, '-' and '_' only")
    width = _stated_width(fig)
    gridded = _gridded_heatmaps(fig)
    if gridded:
        raise FigureSizeError(
            f"figure {name}: grid lines over the heatmap(s) {gridded}; draw them with "
            "kit.core.figures.heatmap or call ax.grid(False)"
        )
    out_dir = Path(out_dir)
    paths = []
    for ext in ("png", "pdf"):
        target = out_dir / f"{name}.{ext}"
        metadata: dict[str, str | None] = dict(STABLE_METADATA[ext])
        if ext == "pdf":
            metadata["Subject"] = _pdf_subject(width)
        with atomic_path(target) as tmp:
            fig.savefig(tmp, format=ext, metadata=metadata)
        paths.append(target)
    problems = size_problems(measure_pdf(paths[1]))
    if problems:
        warnings.warn(
            f"figure {name} ({paths[1]}): " + "; ".join(problems), FigureSizeWarning, stacklevel=2
        )
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
