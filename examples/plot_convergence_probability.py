"""
Probability that gradient descent reaches a global minimum
==========================================================

The protocol of Dana et al. (2025), as the registered experiment
``convergence-probability`` runs it: a two-layer ReLU network with ``p`` neurons, both
layers trained by full-batch GD, on n points of the sphere in d dimensions; for each n,
the fraction of independent runs whose loss falls below ``1e-4`` of the zero network's is a
probability with a Wilson 95 % interval, and a decreasing curve fitted by maximum
likelihood gives the threshold ``n*(d)`` where it crosses 1/2. Below, the quick settings
(d = 4 and 8, 16 runs per point); ``relucore reproduce convergence-probability`` runs the
full ones.
"""

import matplotlib.pyplot as plt

from relucore import experiments
from relucore.plots import plot_convergence_probability

result = experiments.run("convergence-probability", quick=True, check_step_size=False, progress=False)
for claim in result.claims:
    print(claim)
curves = result.data["curves"]
for c in curves:
    print(f"d = {c['d']}: n* = {c['n_star']:.1f} (p (d + 1) = {12 * (c['d'] + 1)})")

# %%
# The measured probabilities with their intervals and the fitted curves, one per d.
plt.close("all")  # the experiment's own figure; draw the curves alone
fig, ax = plt.subplots(figsize=(6, 3.8), layout="constrained")
plot_convergence_probability(curves, ax=ax)
ax.set_title("P(GD reaches a global minimum), p = 12 neurons")
plt.show()
