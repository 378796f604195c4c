"""
Effective width collapse of a wide network
==========================================

Liang et al. (2026): a wide one-hidden-layer ReLU network *with bias*, trained by SGD with
weight decay, ends with its neurons' directions ``(w, b)/||(w, b)||`` gathered in a few
clusters: at most ``2 P - 1`` of them, where ``P`` is the number of linear dichotomies of the
training inputs (Theorem 5; :doc:`/math`, section 11). Here N = 200 neurons learn two
points in one dimension, ``x = +-2`` with labels of opposite signs; ``P = 2``, so at most
three directions survive, and the learned function has its kinks where Proposition 7 puts
them.
"""

import matplotlib.pyplot as plt
import numpy as np

from relucore import meanfield
from relucore.plots import plot_meanfield_directions, plot_meanfield_function

X = np.array([[2.0], [-2.0]])
y = np.array([1.0, -1.0])
res = meanfield.train(X, y, m=200, steps=100_000, eta=1.0, weight_decay=1e-2, init_scale=1e-3, rng=0, record=500)
an = meanfield.analyze(res, min_norm=1e-8, rel_norm=1e-3)
print(res)
print(an)
print(f"{an.n_directions} directions, bound 2P - 1 = {an.bound}")

# %%
# Left: the learned function and its kinks; right: the neurons' directions on the circle
# (each dot a neuron, sized by its norm), gathered in the clusters that ``analyze`` found.
fig, axes = plt.subplots(1, 2, figsize=(9, 3.8), layout="constrained")
plot_meanfield_function(res, an, ax=axes[0])
plot_meanfield_directions(res, an, ax=axes[1])
fig.suptitle("N = 200 neurons with bias, SGD with weight decay: the width collapses")
plt.show()
