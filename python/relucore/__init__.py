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

__all__ = ["__version__", "train", "TrainResult", "History", "DivergenceError", "default_eta", "regimes", "Regimes"]
