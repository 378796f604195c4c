"""relucore: gradient descent on shallow ReLU networks in primal-dual coordinates.

The main entry points:

- :func:`train` runs GD on ``h(x) = sum_k s_k relu(w_k^T x)`` exactly in
  primal-dual coordinates (batched, multithreaded C++).
- :func:`regimes` classifies every recorded (neuron, example) entry of a run as
  primal-stable / dual-frozen / undetermined (Lemmas 5 and 6 of Lai et al.).
- ``relucore demo`` / ``relucore reproduce`` on the command line
  (:mod:`relucore.experiments` holds the registered experiments).
"""
from relucore._core import __version__
from relucore._regimes import Regimes, regimes
from relucore._results import History, TrainResult
from relucore._train import DivergenceError, default_eta, train
from relucore._metrics import TrainingMetrics, training_metrics
from relucore._sampling import Dataset, GramDataset, Spectrum, sample, sample_gram, sample_gram_batch
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
from relucore._sweep import CheckpointError, save_table, sweep

__all__ = ["__version__", "train", "TrainResult", "History", "DivergenceError", "default_eta", "Trainer"]
# Activation regimes (issue 4): Lemma 5/6 classification of recorded runs.
__all__ += ["regimes", "Regimes"]
# Theory toolkit (issue 3): sampling, Gram concentration, closed-form limits, minimum-norm solutions, bounds.
__all__ += [
    "sample", "sample_gram", "sample_gram_batch", "Dataset", "GramDataset", "Spectrum", "gram_stats", "GramStats",
    "predicted_limit", "check_limit", "LimitCheck", "minnorm", "MinNormSolution", "KKTCertificate",
    "SearchCertificate", "limit_gap", "normalized_gap", "theorem2_bounds", "theorem4_bounds", "theorem6_bound",
    "step_constant",
]
# Sweeps (issue 5).
__all__ += ["sweep", "save_table", "CheckpointError"]
# Training metrics (issue 9): stable rank, normalised margins over a run's history.
__all__ += ["TrainingMetrics", "training_metrics"]
