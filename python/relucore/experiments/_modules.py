"""Imports every experiment module so that it registers itself.

Add one line per new module; order is the order of ``relucore reproduce all``.
"""
from relucore.experiments import lai_gap  # noqa: F401  fig2
from relucore.experiments import lai_selection  # noqa: F401  fig3
from relucore.experiments import lai_dynamics  # noqa: F401  fig4-fig7
from relucore.experiments import counterexamples  # noqa: F401  b4, vardi-shamir
from relucore.experiments import meanfield  # noqa: F401
from relucore.experiments import kou2023  # noqa: F401  kou-stable-rank
from relucore.experiments import step_size  # noqa: F401  step-size
from relucore.experiments import dana2025  # noqa: F401  convergence-probability
