"""Imports every experiment module so that it registers itself.

Add one line per new module; order is the order of ``relucore reproduce all``.
"""
from relucore.experiments import meanfield  # noqa: F401
from relucore.experiments import literature  # noqa: F401  (kou-stable-rank, step-size, convergence-probability)
