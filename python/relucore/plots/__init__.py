"""Plot helpers.

Every ``plot_*`` function draws on ``ax`` (a new figure when ``ax`` is None),
takes matplotlib keyword arguments through ``**kw`` and returns the axes.
matplotlib is imported only when a plot is drawn (``pip install relucore[plots]``).
"""

# The public names are the submodules' ``__all__`` lists (plus ``new_axes``), kept in one place each.
from relucore.plots import _gd, _literature, _meanfield, _phase

# GD runs (Lai et al.): gap scaling, predictions, regime diagrams, activation timelines.
from relucore.plots._gd import *  # noqa: F403

# Logistic loss, leaky ReLU, step size, global convergence (Kou et al. 2023, Boursier et al. 2022,
# Dana et al. 2025).
from relucore.plots._literature import *  # noqa: F403

# Mean-field networks (Liang et al. 2026).
from relucore.plots._meanfield import *  # noqa: F403

# Phase diagrams: where a probability crosses p (relucore.threshold).
from relucore.plots._phase import *  # noqa: F403
from relucore.plots._style import new_axes

__all__ = ["new_axes", *_gd.__all__, *_meanfield.__all__, *_literature.__all__, *_phase.__all__]
