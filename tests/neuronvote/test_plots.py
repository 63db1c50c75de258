"""kit.neuronvote.plots: the figures of notebook 05 on the synthetic study."""

from __future__ import annotations

import numpy as np

from kit.neuronvote import plots


def test_figures(study):
    import matplotlib

    matplotlib.use("Agg")
    fig = plots.plot_pairwise(study, methods=["random", "probeless", "lca"])
    assert len(fig.axes) >= 3
    fig2 = plots.plot_method_overlap([study], "meanselect", others=["probeless", "lca", "random"])
    assert fig2.axes
    fig3 = plots.plot_by_layer(study, methods=["probeless", "lca", "random"], n_boot=100)
    ax = fig3.axes[1]
    assert ax.get_title().endswith("NeuronVote by layer") and len(ax.lines) == 3
    # The plotted points are the per-layer means of the long table (layers 0, 1, 2 here).
    want = (
        study.scores[(study.scores.method == "lca") & (study.scores.metric == "NeuronVote")]
        .groupby("layer")
        .score.mean()
        .to_numpy()
    )
    np.testing.assert_allclose(ax.lines[1].get_ydata(), want)


def test_figures_fit_their_stated_width(study, tmp_path):
    """Saved at their stated width without a size warning (too wide, text under 6 pt)."""
    import warnings

    import matplotlib

    from kit.core.figures import FigureSizeWarning, measure_pdf, save_figure, use_paper_style

    matplotlib.use("Agg")
    methods = ["random", "probeless", "lca", "lasso", "ridge", "gaussian", "iou", "meanselect"]
    with matplotlib.rc_context(), warnings.catch_warnings():
        use_paper_style()
        warnings.simplefilter("error", FigureSizeWarning)
        figs = {
            "pairwise": plots.plot_pairwise(study, methods=methods),
            "overlap": plots.plot_method_overlap([study], "meanselect", others=methods),
            "by_layer": plots.plot_by_layer(study, methods=methods, n_boot=100),
        }
        for name, fig in figs.items():
            save_figure(fig, name, tmp_path)
    assert measure_pdf(tmp_path / "pairwise.pdf").width == "full", "three layers: full width"
