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
