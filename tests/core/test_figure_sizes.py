"""Figures sized for a paper: every exported figure was built at a stated width (a column or the
full text width), fits it, and prints no text under the smallest size venues accept; heatmaps
carry no grid lines."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest

from kit.core.figures import (
    MAX_WIDTH_IN,
    MIN_FONT_PT,
    WIDTH_SLACK_IN,
    WIDTHS,
    FigureSizeError,
    FigureSizeWarning,
    heatmap,
    measure_pdf,
    new_figure,
    panel_figure,
    save_figure,
    size_problems,
    use_paper_style,
)
from kit.core.paths import REPO_ROOT

# a figure that does not fit fails where no test expects it
pytestmark = pytest.mark.filterwarnings("error::kit.core.figures.FigureSizeWarning")

COMMITTED = sorted((REPO_ROOT / "figures").glob("*/*.pdf"))


@pytest.fixture(autouse=True)
def _paper_style():
    with matplotlib.rc_context():
        use_paper_style()
        yield
    plt.close("all")


def test_a_column_figure_is_saved_at_its_width_with_its_fonts(tmp_path):
    fig, ax = new_figure("column", 2.4)
    ax.plot([0, 1], [1, 0])
    ax.set_xlabel("x label")
    ax.set_title("a title")
    paths = save_figure(fig, "ok", tmp_path)
    size = measure_pdf(paths[1])
    assert size.width == "column"
    assert 3.0 < size.width_in <= WIDTHS["column"] + 0.1
    assert 2.0 < size.height_in <= 2.5
    # the style's sizes: ticks 7 pt, labels and title 8 pt
    assert size.smallest_font_pt == 7.0
    assert size_problems(size) == []


def test_a_twenty_inch_figure_is_refused_naming_the_widths(tmp_path):
    fig, ax = plt.subplots(figsize=(20.3, 2.6))
    ax.plot([0, 1], [1, 0])
    with pytest.raises(FigureSizeError, match=r"20\.3 in wide.*column \(3\.5 in\), full \(6\.75"):
        save_figure(fig, "wide", tmp_path)
    assert not list(tmp_path.iterdir()), "refused before anything is written"


def test_a_four_point_font_is_refused(tmp_path):
    fig, ax = new_figure("column")
    ax.plot([0, 1], [1, 0])
    ax.text(0.5, 0.5, "tiny", fontsize=4)
    with pytest.warns(FigureSizeWarning, match=r"text at 4 pt < 6 pt"):
        save_figure(fig, "small_font", tmp_path)
    assert size_problems(measure_pdf(tmp_path / "small_font.pdf")) == ["text at 4 pt < 6 pt"]


def test_content_sticking_out_of_its_width_is_refused(tmp_path):
    """A legend placed outside the axes widens the tight bounding box past the stated width."""
    fig, ax = new_figure("column")
    ax.plot([0, 1], [1, 0], label="a long legend entry that does not fit beside the axes")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    with pytest.warns(FigureSizeWarning, match=r"past its column width 3\.5 in"):
        save_figure(fig, "sticks_out", tmp_path)


def test_a_heatmap_under_grid_lines_is_refused_and_heatmap_draws_none(tmp_path):
    import seaborn as sns

    data = np.arange(9.0).reshape(3, 3)
    fig, ax = new_figure("column", 3.0)
    sns.heatmap(data, ax=ax)  # the paper style's grid stays on
    with pytest.raises(FigureSizeError, match="grid lines over the heatmap"):
        save_figure(fig, "gridded", tmp_path)
    fig, ax = new_figure("column", 3.0)
    heatmap(data, ax, annot=True, annot_kws={"fontsize": 6})
    assert not any(line.get_visible() for line in ax.xaxis.get_gridlines())
    save_figure(fig, "clean", tmp_path)


def test_panel_figure_wraps_panels_into_rows_at_the_width():
    fig, axes = panel_figure(10, "full", max_cols=4)
    assert len(axes) == 10 and fig.get_figwidth() == WIDTHS["full"]
    rows = {round(ax.get_position().y0, 3) for ax in axes}
    assert len(rows) == 3, "10 panels at 4 a row: three rows"
    assert sum(not ax.axison for ax in fig.axes) == 2, "the two unused cells are switched off"
    fig, axes = panel_figure(3, "column")
    assert fig.get_figwidth() == WIDTHS["column"] and len(axes) == 3
    assert panel_figure(1)[0].get_figwidth() == WIDTHS["column"], "one panel: a column"
    assert panel_figure(2)[0].get_figwidth() == WIDTHS["full"], "more: the full width"
    with pytest.raises(ValueError, match="figure width 'page': use one of column, full"):
        panel_figure(2, "page")
    with pytest.raises(ValueError, match="n=0 panels"):
        panel_figure(0)


def test_measure_pdf_reads_rotated_and_math_text(tmp_path):
    """Tick labels rotated and mathtext are measured too: a mathtext exponent prints at 70% of its
    base size (10^-2 at 7 pt has a 4.9 pt exponent)."""
    fig, ax = new_figure("column")
    ax.plot([0.01, 1], [1, 2])
    ax.set_xscale("log")
    ax.tick_params(axis="x", rotation=45)
    with pytest.warns(FigureSizeWarning, match=r"text at 4\.9 pt"):
        save_figure(fig, "log", tmp_path)


@pytest.mark.parametrize("pdf", COMMITTED, ids=[f"{p.parent.name}/{p.stem}" for p in COMMITTED])
def test_every_committed_figure_fits_its_stated_width(pdf):
    """Each figure under figures/ (as the runner exported it): built at a stated width, at most
    7 in wide and 9 in high, no text under 6 pt; its PNG no wider than its width."""
    from PIL import Image

    size = measure_pdf(pdf)
    assert size_problems(size) == [], (
        f"{pdf.relative_to(REPO_ROOT)}: {'; '.join(size_problems(size))} (rebuild the figure "
        "with kit.core.figures.new_figure / panel_figure and rerun its notebook)"
    )
    with Image.open(pdf.with_suffix(".png")) as png:
        # not the PDF's width to the hundredth: a table sizes its columns by each backend's metrics
        png_in = png.width / png.info["dpi"][0]
    assert size.width is not None
    assert png_in <= min(MAX_WIDTH_IN, WIDTHS[size.width] + WIDTH_SLACK_IN), (
        f"{pdf.with_suffix('.png').relative_to(REPO_ROOT)}: {png_in:.2f} in wide"
    )
    assert size.smallest_font_pt is None or size.smallest_font_pt >= MIN_FONT_PT


def test_there_are_committed_figures():
    assert len(COMMITTED) >= 40, "figures/ holds the default run's figures"
