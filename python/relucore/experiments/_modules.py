"""Imports every experiment module so that it registers itself.

Add one line per new module; order is the order of ``relucore reproduce all``.
"""

from relucore.experiments import (
    counterexamples,  # noqa: F401  b4, vardi-shamir
    dana2025,  # noqa: F401  convergence-probability
    flow_events,  # noqa: F401  flow-events
    kou2023,  # noqa: F401  kou-stable-rank
    lai_dynamics,  # noqa: F401  fig4-fig6
    lai_gap,  # noqa: F401  fig2
    lai_selection,  # noqa: F401  fig3
    lai_shared_signs,  # noqa: F401  fig7
    meanfield,  # noqa: F401
    step_size,  # noqa: F401  step-size
)
