"""Layout of the experiments' figures: readable ticks, legends off the data, no large blank areas.

Only the layout is checked here; the data drawn are those of the experiments' own tests.
"""

import pytest

from relucore import experiments

pytest.importorskip("matplotlib")


@pytest.fixture
def drawn():
    """Runs an experiment (quick), draws its figure; yields (figure, renderer) and closes it."""
    from relucore.plots._style import pyplot

    made = []

    def make(name, **params):
        fig = experiments.run(name, quick=True, progress=False, **params).figure
        made.append(fig)
        fig.canvas.draw()
        return fig, fig.canvas.get_renderer()

    yield make
    for fig in made:
        pyplot().close(fig)


def _labelled_ticks(ax, axis="x"):
    """Texts of the tick labels drawn inside the axis' view."""
    lo, hi = sorted(ax.get_xlim() if axis == "x" else ax.get_ylim())
    labels = ax.get_xticklabels() if axis == "x" else ax.get_yticklabels()
    pos = 0 if axis == "x" else 1
    return [t.get_text() for t in labels if t.get_text() and lo <= t.get_position()[pos] <= hi]


def test_fig2_lambda_axes_have_several_labelled_ticks(drawn):
    fig, _ = drawn("fig2")
    panel_b, panel_d = fig.axes[1], fig.axes[3]
    assert panel_b.get_title().startswith("(b)") and panel_d.get_title().startswith("(d)")
    for ax in (panel_b, panel_d):
        assert ax.get_xscale() == "log"
        assert len(_labelled_ticks(ax, "x")) >= 3, _labelled_ticks(ax, "x")


def test_fig4_legends_do_not_cover_the_data(drawn):
    fig, renderer = drawn("fig4", n_seeds=2)
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    assert any(leg.get_title().get_text() == "example" for leg in legends)
    data_boxes = [
        line.get_window_extent(renderer) for ax in fig.axes for line in ax.get_lines() if len(line.get_xdata()) > 2
    ]
    assert data_boxes
    for leg in legends:
        box = leg.get_window_extent(renderer)
        assert not any(box.overlaps(d) for d in data_boxes), leg.get_title().get_text()
        # and off every panel's plotting area
        assert not any(box.overlaps(ax.get_window_extent(renderer)) for ax in fig.axes)


def test_meanfield_grid_panels_fill_the_figure(drawn):
    fig, renderer = drawn("meanfield-grid")
    W, H = fig.bbox.width, fig.bbox.height
    panels = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert len(panels) == 4
    boxes = {ax.get_title(): ax.get_tightbbox(renderer) for ax in panels}
    for title, box in boxes.items():
        assert box.width >= 0.2 * W and box.height >= 0.25 * H, title
    # The three square panels share the top row with no wide blank between or beside them.
    top = sorted((b for b in boxes.values() if b.width < 0.5 * W), key=lambda b: b.x0)
    assert len(top) == 3
    edges = [0.0] + [x for b in top for x in (b.x0, b.x1)] + [W]
    gaps = [edges[i + 1] - edges[i] for i in range(0, len(edges), 2)]
    assert max(gaps) <= 0.15 * W, [g / W for g in gaps]
    objective = next(ax for ax in panels if ax.get_title() == "objective")
    assert len(_labelled_ticks(objective, "y")) >= 4, _labelled_ticks(objective, "y")
