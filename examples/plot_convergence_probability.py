"""
Probability that gradient descent reaches a global minimum
==========================================================

The protocol of Dana et al. (2025), as the registered experiment
``convergence-probability`` runs it: a two-layer ReLU network with ``p`` neurons, both
layers trained by full-batch GD, on n points of the sphere in d dimensions. A run succeeds
when its loss falls below ``1e-4`` of the zero network's; ``relucore.threshold`` places the
runs where they narrow the interval of the threshold ``n*(d)`` (where the probability
crosses 1/2) most, and a monotone curve fitted by maximum likelihood gives ``n*(d)`` with a
90 % profile-likelihood interval. Below, the quick settings (d = 4 and 8, 192 runs each);
``relucore reproduce convergence-probability`` runs d = 10, 20, 40.
"""

import matplotlib.pyplot as plt

from relucore import experiments
from relucore.plots import plot_convergence_probability

result = experiments.run("convergence-probability", quick=True, check_step_size=False, progress=False)
for claim in result.claims:
    print(claim)
curves = result.data["curves"]
for c in curves:
    print(
        f"d = {c['d']}: n* = {c['n_star']:.1f} [{c['n_star_low']:.1f}, {c['n_star_high']:.1f}] "
        f"(p (d + 1) = {12 * (c['d'] + 1)})"
    )

# %%
# The runs binned over n (Wilson 95 % intervals) and the fitted curves, one per d.
plt.close("all")  # the experiment's own figure; draw the curves alone
fig, ax = plt.subplots(figsize=(6, 3.8), layout="constrained")
plot_convergence_probability(curves, ax=ax)
ax.set_title("P(GD reaches a global minimum), p = 12 neurons")
plt.show()
