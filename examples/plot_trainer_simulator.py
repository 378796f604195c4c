"""
Driving ``Trainer`` from a simulator loop
=========================================

:class:`relucore.Trainer` keeps one problem's primal-dual engine alive between calls, so a
simulator can step it, read its state without copies, move the targets and change the
step size as it goes (:doc:`/embedding`). Here the "simulator" drifts the labels slowly;
the network tracks them, and the loss spikes at each change and decays again.
"""

import matplotlib.pyplot as plt
import numpy as np

import relucore

ds = relucore.sample(12, 500, labels=("uniform", 0.2, 1.0), rng=1)
tr = relucore.Trainer(ds.X, ds.y, signs=(1, -1), init="positive")
rng = np.random.default_rng(1)

steps, losses, label_changes = [], [], []
y = ds.y.copy()
for epoch in range(8):
    for _ in range(25):  # the simulator's inner loop: 25 blocks of 4 GD steps
        tr.step(4)
        steps.append(tr.nit)
        losses.append(tr.loss)
    # the environment moves: labels drift, keeping their signs
    y = np.sign(y) * np.clip(np.abs(y) + 0.05 * rng.standard_normal(y.size), 0.1, None)
    tr.set_labels(y)
    label_changes.append(tr.nit)
    if epoch == 4:
        tr.set_eta(0.5 * tr.eta)  # the simulator halves the step size
print(f"after {tr.nit} steps: loss {tr.loss:.3e}, step size {tr.eta:.3e}")

# %%
# The loss after each block of steps; the dotted lines mark the label changes.
fig, ax = plt.subplots(figsize=(6, 3.6), layout="constrained")
ax.semilogy(steps, losses, ".-", ms=3)
for s in label_changes[:-1]:
    ax.axvline(s, color="0.7", ls=":", lw=1)
ax.set_xlabel("GD step")
ax.set_ylabel("square loss")
ax.set_title("Trainer stepped by a simulator; labels drift every 100 steps")
plt.show()
