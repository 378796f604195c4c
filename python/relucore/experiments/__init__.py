"""The registry of reproducible experiments behind ``relucore reproduce``.

Each experiment is a function in its own module, registered with
:func:`register`. It takes its parameters as keyword arguments with the full
settings as defaults, accepts ``quick=True`` for the fast settings used by the
tests and by ``relucore reproduce --quick``, and returns an
:class:`~relucore.experiments._base.ExperimentResult` holding its table, its
figure and the claims it checked (what was expected, what was measured).

>>> import os
>>> from relucore import experiments
>>> "fig4" in experiments.names()
True
>>> result = experiments.run("fig4", quick=True)
>>> result.passed
True
>>> [os.path.basename(path) for path in result.save("out")]
['fig4.csv', 'fig4.json', 'fig4.png']
"""

from relucore.experiments._base import Claim, Context, ExperimentResult, get, names, register, run

__all__ = ["Claim", "Context", "ExperimentResult", "get", "names", "register", "run"]

# Importing the modules registers their experiments.
from relucore.experiments import _modules  # noqa: E402,F401
