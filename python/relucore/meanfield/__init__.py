"""Wide two-layer ReLU networks with bias trained by noisy SGD (Liang et al. 2026, Sec. 3 and 7).

Liang et al. (2026), "Implicit bias of SGD in multivariate ReLU networks:
effective width collapse": with weight decay and vanishing noise the input
weights and biases (w_i, b_i) of a mean-field network collapse onto at most
2P - 1 directions, P the number of linear dichotomies of the training inputs,
and distinct directions have distinct ternary activation patterns.

- :func:`train` runs the C++ engine (``relucore/meanfield/weight_gd.hpp``);
- :func:`analyze` clusters the neurons on the sphere and checks the theorems;
- :func:`count_dichotomies`, :func:`dichotomies`, :func:`count_cells` are the
  exact combinatorics behind it.

>>> import numpy as np
>>> from relucore import meanfield
>>> X = np.array([[2.0], [-2.0]]); y = np.array([1.0, -1.0])
>>> res = meanfield.train(X, y, m=200, steps=20_000, rng=0)
>>> meanfield.analyze(res, rel_norm=1e-2).n_directions
2
"""

from relucore.meanfield._analyze import MeanFieldAnalysis, analyze, angular_distances, ternary_patterns
from relucore.meanfield._geometry import count_cells, count_dichotomies, dichotomies
from relucore.meanfield._train import MeanFieldResult, output_scale_factor, predict, seed_key, train

__all__ = [
    "MeanFieldAnalysis",
    "MeanFieldResult",
    "analyze",
    "angular_distances",
    "count_cells",
    "count_dichotomies",
    "dichotomies",
    "output_scale_factor",
    "predict",
    "seed_key",
    "ternary_patterns",
    "train",
]
