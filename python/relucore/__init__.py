"""relucore: gradient descent on shallow ReLU networks in primal-dual coordinates.

The main entry points:

- :func:`train` runs GD on ``h(x) = sum_k s_k relu(w_k^T x)`` exactly in
  primal-dual coordinates (batched, multithreaded C++).
- ``relucore demo`` / ``relucore reproduce`` on the command line.
"""
from relucore._core import __version__
from relucore._results import History, TrainResult
from relucore._train import DivergenceError, default_eta, train
from relucore._sampling import Dataset, GramDataset, Spectrum, sample, sample_gram
from relucore._gram_stats import GramStats, gram_stats
from relucore._limits import LimitCheck, check_limit, predicted_limit
from relucore._minnorm import KKTCertificate, MinNormSolution, SearchCertificate, minnorm
from relucore._bounds import (
    limit_gap,
    normalized_gap,
    step_constant,
    theorem2_bounds,
    theorem4_bounds,
    theorem6_bound,
)
from relucore._trainer import Trainer

__all__ = ["__version__", "train", "TrainResult", "History", "DivergenceError", "default_eta", "Trainer"]
# Theory toolkit (issue 3): sampling, Gram concentration, closed-form limits, minimum-norm solutions, bounds.
__all__ += [
    "sample", "sample_gram", "Dataset", "GramDataset", "Spectrum", "gram_stats", "GramStats",
    "predicted_limit", "check_limit", "LimitCheck", "minnorm", "MinNormSolution", "KKTCertificate",
    "SearchCertificate", "limit_gap", "normalized_gap", "theorem2_bounds", "theorem4_bounds", "theorem6_bound",
    "step_constant",
]
