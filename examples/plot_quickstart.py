"""
Quickstart: train, the minimum-norm network and the closed form
===============================================================

Train a two-neuron ReLU network (signs +1 and -1) from the positive initialisation on
n = 10 examples in d = 2000 dimensions, then compare the limit of gradient descent with
the closed form of Lai et al. (2026), Theorem 3, and with the minimum-norm interpolant
(eq. (8), program (9)): GD ends near, but not at, the minimum-norm network
(:doc:`/math`, sections 5 and 6).
"""

import matplotlib.pyplot as plt
import numpy as np

import relucore

ds = relucore.sample(10, 2000, spectrum="isotropic", labels=("uniform", 0.1, 1.0), rng=0)
res = relucore.train(ds.X, ds.y, signs=(1, -1), init="positive", record=1)
print(res.message)

# %%
# The closed form: once the activation pattern froze (after one step here), each neuron
# converges to the projection of its start onto the interpolating set of its examples.
chk = relucore.check_limit(res, ds.X, ds.y)
print(chk)
star = relucore.minnorm(ds.X, ds.y, signs=(1, -1))
print(star)
gap = relucore.limit_gap(res.W, star.W)
print(f"||W_GD - W*|| = {gap:.3e}, ||W*|| = {np.linalg.norm(star.W):.3f}")

# %%
# The loss along the run (``record=1`` keeps every step).
fig, ax = plt.subplots(figsize=(5.5, 3.4), layout="constrained")
ax.semilogy(res.history.steps, res.history.loss)
ax.set_xlabel("step")
ax.set_ylabel("square loss")
ax.set_title(f"GD on n=10, d=2000: gap to min-norm {gap:.2e}")
plt.show()
