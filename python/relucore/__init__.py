"""relucore: gradient descent on shallow ReLU networks in primal-dual coordinates.

The main entry points:

- :func:`train` runs GD on ``h(x) = sum_k s_k relu(w_k^T x)`` exactly in
  primal-dual coordinates (batched, multithreaded C++); :class:`Trainer` steps it.
- The theory toolkit (:mod:`relucore.theory`): :func:`sample`, :func:`sample_gram`,
  :func:`predicted_limit`, :func:`check_limit`, :func:`minnorm`, :func:`gram_stats`,
  the gap bounds, :func:`regimes` and :func:`training_metrics`.
- :func:`sweep` runs seeded, resumable sweeps (:mod:`relucore.sweeps`); :func:`threshold`
  finds where a probability crosses p, with an interval, by a sequential design.
- :mod:`relucore.meanfield`, :mod:`relucore.experiments`, :mod:`relucore.plots` and
  :mod:`relucore.cli` are loaded on first use (``relucore.meanfield.train(...)``
  works after ``import relucore``).

docs/architecture.md describes the layers; docs/math.md the mathematics.
"""

import importlib as _importlib

from relucore._core import Status, __version__
from relucore.gd.options import TrainOptions
from relucore.gd.results import History, TrainResult
from relucore.gd.train import DivergenceError, default_eta, train
from relucore.gd.trainer import Trainer
from relucore.sweeps.api import CheckpointError, save_table, sweep
from relucore.sweeps.threshold import NonMonotoneWarning, threshold
from relucore.theory.bounds import (
    limit_gap,
    normalized_gap,
    step_constant,
    theorem2_bounds,
    theorem4_bounds,
    theorem6_bounds,
)
from relucore.theory.flow import FlowResult, flow
from relucore.theory.gram_stats import GramStats, gram_stats
from relucore.theory.limits import LimitCheck, check_limit, predicted_limit
from relucore.theory.metrics import TrainingMetrics, training_metrics
from relucore.theory.minnorm import KKTCertificate, MinNormSolution, SearchCertificate, minnorm
from relucore.theory.regimes import Regimes, regimes
from relucore.theory.sampling import Dataset, GramDataset, Spectrum, sample, sample_gram, sample_gram_batch
from relucore.theory.verify import Claim, Verification, verify
from relucore.torch_io import from_torch, to_torch

#: Sub-packages imported on first attribute access (they pull optional dependencies
#: or a registry of experiments that ``import relucore`` should not pay for).
_LAZY_SUBPACKAGES = ("meanfield", "experiments", "plots", "cli")

# fmt: off
__all__ = [
    "__version__", "Status",
    # gradient descent
    "train", "Trainer", "TrainOptions", "TrainResult", "History", "DivergenceError", "default_eta",
    # PyTorch in and out (torch optional)
    "from_torch", "to_torch",
    # theory toolkit
    "sample", "sample_gram", "sample_gram_batch", "Dataset", "GramDataset", "Spectrum", "gram_stats", "GramStats",
    "predicted_limit", "check_limit", "LimitCheck", "minnorm", "MinNormSolution", "KKTCertificate",
    "SearchCertificate", "limit_gap", "normalized_gap", "theorem2_bounds", "theorem4_bounds", "theorem6_bounds",
    "step_constant", "regimes", "Regimes", "training_metrics", "TrainingMetrics", "flow", "FlowResult",
    "verify", "Verification", "Claim",
    # sweeps
    "sweep", "save_table", "CheckpointError", "threshold", "NonMonotoneWarning",
]
# fmt: on


def __getattr__(name):
    if name in _LAZY_SUBPACKAGES:
        module = _importlib.import_module(f"relucore.{name}")
        globals()[name] = module
        return module
    from relucore._renamed import RENAMED_NAMES

    if name in RENAMED_NAMES:
        raise AttributeError(f"relucore.{name} was renamed in 1.0: use relucore.{RENAMED_NAMES[name]}")
    raise AttributeError(f"module 'relucore' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY_SUBPACKAGES))
