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

# Mean-field networks (Liang et al. 2026).
from relucore.plots._meanfield import (  # noqa: E402
    plot_meanfield_directions,
    plot_meanfield_function,
    plot_meanfield_objective,
    plot_meanfield_trajectories,
)

__all__ += [
    "plot_meanfield_directions",
    "plot_meanfield_function",
    "plot_meanfield_objective",
    "plot_meanfield_trajectories",
]

# Logistic loss, leaky ReLU, step size, global convergence (Kou et al. 2023, Boursier et al. 2022,
# Dana et al. 2025).
from relucore.plots._literature import (  # noqa: E402
    plot_convergence_probability,
    plot_floor_scaling,
    plot_margin_ratio,
    plot_stable_rank,
    plot_step_size_gap,
)

__all__ += ["plot_stable_rank", "plot_margin_ratio", "plot_step_size_gap", "plot_floor_scaling",
            "plot_convergence_probability"]
