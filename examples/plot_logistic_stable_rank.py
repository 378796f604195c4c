"""
Logistic loss and leaky ReLU: stable rank and margins (Kou et al. 2023)
=======================================================================

Kou et al. (2023) show that gradient descent on the logistic loss, for a two-layer leaky
ReLU network on nearly-orthogonal data, makes the first-layer weights of low stable rank
and the normalised margins of all training points nearly equal (:doc:`/math`,
section 10). Here 20 neurons start from a small Gaussian initialisation, whose stable
rank is close to n; after a few steps each sign group has a stable rank near one and the
whole layer near two, and the largest-to-smallest margin ratio decreases towards one. ``relucore.train`` runs the logistic loss and the leaky ReLU
exactly; :func:`relucore.training_metrics` measures the stable rank and the margins along
the recorded run.
"""

import matplotlib.pyplot as plt
import numpy as np

import relucore
from relucore.plots import plot_margin_ratio, plot_stable_rank

n, d, m = 20, 4000, 20
ds = relucore.sample(n, d, labels="uniform", rng=2)
y = np.sign(ds.y)
signs = np.repeat([1.0, -1.0], m // 2) / m
res = relucore.train(
    ds.X, y, signs=signs, init="gaussian", rng=3, loss="logistic", activation="leaky_relu", steps=3000, record=30
)
met = relucore.training_metrics(res, ds.X, y)
print(res.message)
print(met)
print(f"stable rank of the first layer: {met.stable_rank[0]:.1f} at step 0, {met.stable_rank[-1]:.2f} at the end")

# %%
# Left: the stable rank of the whole first layer and of each sign group; right: the ratio
# of the largest to the smallest normalised margin, which tends to a constant.
fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), layout="constrained")
plot_stable_rank(met, ax=axes[0])
axes[0].legend(axes[0].get_lines()[:2], ["one sign group (mean)", "whole first layer"])
plot_margin_ratio(met, ax=axes[1])
plt.show()
