"""kit.cg.plots: the per-benchmark panels wrap into rows at the full width; the figures fit their
stated width."""

from __future__ import annotations

import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from kit.cg import plots
from kit.core.figures import FigureSizeWarning, measure_pdf, save_figure, use_paper_style


def test_twelve_benchmarks_wrap_into_two_rows_at_the_full_width(tmp_path):
    rng = np.random.default_rng(0)
    names = [f"benchmark-{k}" for k in range(12)]
    chi = pd.DataFrame(rng.lognormal(size=(200, 12)), columns=names)
    with matplotlib.rc_context(), warnings.catch_warnings():
        use_paper_style()
        warnings.simplefilter("error", FigureSizeWarning)
        figs = {
            "coverage": plots.per_benchmark_coverage(chi),
            "performance": plots.per_benchmark_performance(chi / chi.max()),
            "overlap": plots.overlap_heatmap(pd.DataFrame(rng.random((12, 12)), names, names)),
            "missing": plots.missing_fraction_bars(pd.Series(rng.random(12), names)),
        }
        panels = [ax for ax in figs["coverage"].axes if ax.axison]
        assert len(panels) == 12 and len({round(ax.get_position().y0, 3) for ax in panels}) == 2
        assert all(ax.get_xticklabels() for ax in panels), "each panel's x axis keeps its ticks"
        for name, fig in figs.items():
            save_figure(fig, name, tmp_path)
            plt.close(fig)
    assert measure_pdf(tmp_path / "coverage.pdf").width == "full"
    assert measure_pdf(tmp_path / "coverage.pdf").width_in <= 6.85
