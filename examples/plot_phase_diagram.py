"""
A phase diagram: where the activation pattern freezes after one step
====================================================================

Lai et al. (2026) show that in high dimensions GD from the positive start settles its
activation pattern after the first step (Lemmas 5 and 6; :doc:`/math`, section 7). How high
is high? For each number of examples n, ``relucore.threshold`` finds the dimension d at
which the pattern freezes after step 1 with probability 0.9, with a 90 % profile-likelihood
interval: it runs the built-in outcome ``"pattern_frozen_after_step_1"`` as sweep trials
(here with K drawn directly, ``use_gram=True``), in batches placed where they narrow the
interval most (:doc:`/math`, section 15). ``relucore.plots.plot_phase_diagram`` draws the
estimates with their intervals.
"""

import matplotlib.pyplot as plt
import numpy as np

import relucore
from relucore.plots import plot_phase_diagram

table = relucore.threshold(
    "pattern_frozen_after_step_1",
    axis="d",
    bounds=(32, 100_000),  # the positive start needs d >= n
    given={"n": [4, 8, 16], "use_gram": True},
    p=0.9,
    confidence=0.9,
    max_trials=512,
    rng=2026,
    progress=False,
)
print(table[["n", "estimate", "low", "high", "trials", "status"]].to_string(index=False))
slope = np.polyfit(np.log(table["n"]), np.log(table["estimate"]), 1)[0]
print(f"d*(n) grows like n^{slope:.2f}")

# %%
# The dimension above which the pattern freezes after one step in 90 % of the runs,
# against n, with the intervals (each search stops at 512 trials or when its interval is
# narrower than a quarter of its estimate).
fig, ax = plt.subplots(figsize=(5, 3.6), layout="constrained")
plot_phase_diagram(table, ax=ax)
ax.set_title(f"pattern frozen after step 1 with P = 0.9: d* ∝ n^{slope:.2f}", fontsize=9)
plt.show()
