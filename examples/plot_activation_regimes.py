"""
Activation regimes along a run (Figure 4)
=========================================

Lai et al. (2026), Lemmas 5 and 6 sort every (neuron, example) entry of a run into two
regimes: *primal-stable* entries (blue) stay active from some step on, *dual-frozen*
entries (red) stop moving once they turned inactive. With two neurons of signs +1 and -1
from the positive start, Theorem 3 predicts that after one step every positive example is
fitted by the + neuron only and every negative one by the - neuron only
(:doc:`/math`, section 7). ``relucore.regimes`` classifies a recorded run and checks the
lemmas' premises; ``relucore.plots.plot_regimes`` draws it.
"""

import matplotlib.pyplot as plt

import relucore
from relucore.plots import plot_activation_timeline, plot_regimes

ds = relucore.sample(10, 2000, labels=("uniform", 0.1, 1.0), rng=4)
res = relucore.train(ds.X, ds.y, signs=(1, -1), init="positive", record=1)
reg = relucore.regimes(res, ds.X, ds.y)
print(res.message)
print(reg)

# %%
# Left: the regime of each entry of the + neuron against the step; right: the activation
# patterns of both neurons, which froze after one step (``pattern_stable_step``).
fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), layout="constrained")
plot_regimes(reg, neuron=0, ax=axes[0], title="neuron +1: regimes")
plot_activation_timeline(
    res.history.steps, res.history.mask, ax=axes[1], stable_step=res.pattern_stable_step, title="activation patterns"
)
plt.show()
