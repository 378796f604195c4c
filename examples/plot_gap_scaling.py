"""
Figure 2: the gap to the minimum-norm network grows like √n₋
============================================================

Lai et al. (2026), Theorem 2: a single ReLU neuron trained by GD from the positive
initialisation does not reach the minimum-norm interpolant; the distance
``||w(inf) - w*||`` is of order ``sqrt(n_- / ||lambda||_1)`` where ``n_-`` is the number of
negative labels (:doc:`/math`, section 6). This script measures the gap for growing n at
fixed d, entirely from Gram matrices (``relucore.sample_gram_batch`` draws ``K = X X^T``
without X, so d costs nothing), and fits the log-log slope, which the theorem puts at 1/2.
"""

import matplotlib.pyplot as plt
import numpy as np

import relucore
from relucore.plots import plot_gap_scaling

d, trials = 100_000, 8
n_minus_values = np.array([2, 4, 8, 16, 32])
rng = np.random.default_rng(0)

x, gaps = [], []
for n_minus in n_minus_values:
    n = 2 * n_minus
    K, y = relucore.sample_gram_batch(n, d, seeds=range(100 * n, 100 * n + trials))
    # exactly n_minus negative labels in every problem
    y = np.abs(y)
    for b in range(trials):
        y[b, rng.permutation(n)[:n_minus]] *= -1
    res = relucore.train(gram=K, y=y, signs=(1,), init="positive")
    for b in range(trials):
        star = relucore.minnorm(None, y[b], gram=K[b])
        x.append(n_minus)
        gaps.append(relucore.limit_gap(res.alpha[b], star.alpha, gram=K[b]))
    print(f"n_- = {n_minus:3d}: all converged: {bool(np.all(res.success))}, median gap {np.median(gaps[-trials:]):.3e}")

# %%
# Every point is one problem; the line is the least-squares fit on log-log axes, and the
# dashed line has the theorem's slope 1/2.
fig, ax = plt.subplots(figsize=(5.5, 3.8), layout="constrained")
plot_gap_scaling(np.array(x), np.array(gaps), ax=ax, theory_slope=0.5, plain_ticks=True, xlabel="$n_-$")
ax.set_title(f"single ReLU, positive init, d = {d:,}")
plt.show()
