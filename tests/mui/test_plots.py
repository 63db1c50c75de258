"""Tests of kit.mui.plots: trajectory figures draw one arrow per change in its direction's
colour."""

from __future__ import annotations

import matplotlib

from kit.mui import directions, plots, published_trajectories

matplotlib.use("Agg")


def test_plots_draw_one_arrow_per_change_in_direction_colours():
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_hex

    o = published_trajectories.published_olmo()
    st = directions.step_directions(
        o[o["task"].isin(["MATH", "BBH"])], series="task", label="model"
    )
    fig = plots.plot_trajectories(
        o[o["task"].isin(["MATH", "BBH"])], st, series="task", label="model"
    )
    arrows = [a for ax in fig.axes for a in ax.texts if getattr(a, "arrow_patch", None) is not None]
    assert len(arrows) == len(st) == 14
    colours = sorted(to_hex(a.arrow_patch.get_edgecolor()) for a in arrows)
    assert colours == sorted(directions.DIRECTION_COLORS[d] for d in st["direction"])
    plt.close(fig)
    sp = directions.pair_directions(published_trajectories.published_specialised())
    fig = plots.plot_pairs(sp)
    assert sum(
        1 for ax in fig.axes for a in ax.texts if getattr(a, "arrow_patch", None) is not None
    ) == len(sp)
    plt.close(fig)
    fig = plots.plot_direction_counts(
        {"x": directions.counts_dict(sp), "y": directions.counts_dict(st)}
    )
    assert len(fig.axes) == 1 and len(fig.axes[0].patches) == 2 * len(directions.DIRECTIONS), (
        "one bar per setting and direction"
    )
    plt.close(fig)


def test_the_published_figures_fit_their_stated_width(tmp_path):
    """Notebooks 01 and 02's figures of the published numbers (long model names in legends and
    titles) saved at their stated width without a size warning (too wide, text under 6 pt)."""
    import warnings

    import matplotlib.pyplot as plt

    from kit.core.figures import FigureSizeWarning, measure_pdf, save_figure, use_paper_style
    from kit.mui import published

    with matplotlib.rc_context(), warnings.catch_warnings():
        use_paper_style()
        warnings.simplefilter("error", FigureSizeWarning)
        o = published_trajectories.published_olmo()
        st = directions.step_directions(o, series="task", label="model")
        figs = {
            **published.published_law_section().figures,
            "pur": plots.plot_pur_diff(published.published_pur_comparison(0.5)),
            "olmo_all": plots.plot_trajectories(o, st, series="task", label="model", title="x"),
            "specialised": plots.plot_pairs(
                directions.pair_directions(published_trajectories.published_specialised()),
                title="Specialised vs base, published (Figure 5 analogue)",
            ),
            "contamination": plots.plot_pairs(
                directions.pair_directions(published_trajectories.published_contamination())
            ),
        }
        for name, fig in figs.items():
            save_figure(fig, name, tmp_path)
            plt.close(fig)
    assert measure_pdf(tmp_path / "fig3_published_per_model.pdf").width == "column"
    assert measure_pdf(tmp_path / "olmo_all.pdf").width == "full"
