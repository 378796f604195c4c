"""Plot helpers.

Every ``plot_*`` function draws on ``ax`` (a new figure when ``ax`` is None),
takes matplotlib keyword arguments through ``**kw`` and returns the axes.
matplotlib is imported only when a plot is drawn (``pip install relucore[plots]``).
"""
from relucore.plots._gd import (
    REGIME_COLORS,
    fit_loglog,
    label_log_ticks,
    plot_activation_timeline,
    plot_gap_scaling,
    plot_predictions,
    plot_regimes,
)
from relucore.plots._style import new_axes

__all__ = [
    "new_axes",
    "fit_loglog",
    "label_log_ticks",
    "plot_gap_scaling",
    "plot_predictions",
    "plot_regimes",
    "plot_activation_timeline",
    "REGIME_COLORS",
]
