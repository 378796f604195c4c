"""Plot helpers: draw on the given axes, return it, label axes, use log scales for power laws."""

import numpy as np
import pytest

import relucore
from relucore import plots

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


@pytest.fixture
def run(problem):
    X, y = problem(0)
    res = relucore.train(X, y, signs=(1, -1), record=1)
    return res, X, y


def test_gap_scaling_is_loglog_with_fitted_slope():
    x = np.repeat([10.0, 20.0, 40.0, 80.0], 4)
    gap = 0.5 * x**0.5 * np.exp(np.random.default_rng(0).normal(0, 0.01, x.size))
    fig, ax = plt.subplots()
    out = plots.plot_gap_scaling(x, gap, ax=ax, label="GD", theory_slope=0.5, plain_ticks=True)
    assert out is ax
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(t.startswith("GD: slope +0.") for t in labels) and "theory slope +0.5" in labels
    assert ax.get_xlabel() and ax.get_ylabel()
    slope, _ = plots.fit_loglog(x, gap)
    assert slope == pytest.approx(0.5, abs=0.02)
    plt.close(fig)


def test_predictions_regimes_timeline(run):
    res, X, y = run
    reg = relucore.regimes(res, X, y)
    h = res.history
    ax = plots.plot_predictions(h.steps, h.beta[:, 0, :], y=y)
    assert ax.get_xlabel() == "GD step" and len(ax.get_legend().get_texts()) == len(y)
    fig, axes = plt.subplots(1, 2)
    a = plots.plot_regimes(reg, ax=axes[0])
    assert a is axes[0] and len(a.get_yticklabels()) == 2 * len(y)
    assert [t.get_text() for t in a.get_legend().get_texts()][:2] == ["primal-stable (L5)", "dual-frozen (L6)"]
    b = plots.plot_activation_timeline(h.steps, h.mask, ax=axes[1], stable_step=res.pattern_stable_step)
    assert b is axes[1] and "pattern stable from step 1" in [t.get_text() for t in b.get_legend().get_texts()]
    # The regime grid holds the state codes: colours follow REGIME_COLORS by code.
    mesh = a.collections[0]
    np.testing.assert_array_equal(
        np.asarray(mesh.get_array()).reshape(2 * len(y), -1), np.concatenate([reg.state[:, 0].T, reg.state[:, 1].T])
    )
    plt.close("all")


@pytest.mark.parametrize(
    "lo, hi, expected",
    [
        (250.0, 8000.0, ["500", "1000", "2000", "5000"]),  # 1, 2, 5 times the powers of ten
        (0.18, 0.6, ["0.2", "0.3", "0.4", "0.5", "0.6"]),  # under a decade: every multiple
        (1e-4, 1.0, ["0.0001", "0.001", "0.01", "0.1", "1"]),  # the powers of ten suffice
    ],
)
@pytest.mark.parametrize("axis", ["x", "y"])
def test_label_log_axis_labels_at_least_three_ticks(lo, hi, expected, axis):
    fig, ax = plt.subplots()
    ax.plot([lo, hi], [lo, hi])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    plots.label_log_axis(ax, axis)
    fig.canvas.draw()
    target = ax.xaxis if axis == "x" else ax.yaxis
    shown = [t.label1.get_text() for t in target.get_major_ticks() if lo * (1 - 1e-9) <= t.get_loc() <= hi * (1 + 1e-9)]
    assert shown == expected
    plt.close(fig)


def test_phase_diagram_draws_estimates_intervals_and_never_crossing_rows():
    import pandas as pd

    table = pd.DataFrame(
        {
            "d": [10, 20, 40, 10, 20, 40],
            "p": [12, 12, 12, 24, 24, 24],
            "estimate": [50.0, 110.0, np.nan, 60.0, 130.0, 300.0],
            "low": [45.0, 100.0, np.nan, 55.0, 120.0, 270.0],
            "high": [56.0, 121.0, np.nan, 66.0, 141.0, 330.0],
            "crosses": [True, True, False, True, True, True],
            # P stays above p up to the bracket's upper end, and P falls with the axis: beyond 400
            "bracket_low": [5.0, 5, 10, 5, 5, 10],
            "bracket_high": [200.0, 200, 400, 200, 200, 400],
            "p_at_low": [1.0, 1, 0.95, 1, 1, 1],
            "p_at_high": [0.0, 0, 0.8, 0, 0, 0],
        }
    )
    table.attrs.update(axis="n", p=0.5, confidence=0.9)
    fig, ax = plt.subplots()
    out = plots.plot_phase_diagram(table, ax=ax)
    assert out is ax
    assert ax.get_xlabel() == "d" and ax.get_ylabel().startswith("n where P = 0.5")
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["p=12", "p=24"]
    # the error bars: one segment per crossing row, from low to high
    segments = [s for c in ax.collections for s in c.get_segments()]
    spans = sorted((float(s[0][1]), float(s[1][1])) for s in segments)
    assert spans == sorted([(45.0, 56.0), (100.0, 121.0), (55.0, 66.0), (120.0, 141.0), (270.0, 330.0)])
    # the row that never crosses: an up triangle at the bracket's upper end
    ups = [ln for ln in ax.lines if ln.get_marker() == "^" and len(ln.get_xdata())]
    assert len(ups) == 1 and list(ups[0].get_xdata()) == [40.0] and list(ups[0].get_ydata()) == [400.0]
    assert not [ln for ln in ax.lines if ln.get_marker() == "v" and len(ln.get_xdata())]
    with pytest.raises(ValueError, match="not a given column"):
        plots.plot_phase_diagram(table, x="estimate")
    plt.close("all")
