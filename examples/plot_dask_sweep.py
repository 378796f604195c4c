"""
A sweep on a local Dask cluster
===============================

:func:`relucore.sweep` runs seeded, resumable trials over a grid of settings and returns
one row per trial (:doc:`/sweeps`). Any ``concurrent.futures`` executor runs the batches;
a ``dask.distributed`` client gives the same table on a cluster. Here a small local
cluster (threads in this process) measures how the normalised gap of Theorem 2 depends on
d at fixed n; every trial's data comes from its own seed, so the table does not depend on
the executor.
"""

import matplotlib.pyplot as plt
import numpy as np
from dask.distributed import Client, LocalCluster

import relucore

grid = {"n": 16, "d": [1000, 4000, 16000, 64000], "m": 1, "init": "positive", "use_gram": True}

with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
    with Client(cluster) as client:
        table = relucore.sweep(grid, trials=16, rng=0, executor=client.get_executor(), progress=False)
print(type(table).__name__, len(table), "rows")
df = table
print(df.groupby("d")[["gap", "gap_normalized"]].median())

# %%
# The gap shrinks like ``1/sqrt(||lambda||_1) = 1/sqrt(d)``; the normalised gap
# ``gap * sqrt(||lambda||_1 / n_-)`` stays of order one (Theorem 2).
fig, axes = plt.subplots(1, 2, figsize=(9, 3.5), layout="constrained")
for ax, col in zip(axes, ["gap", "gap_normalized"]):
    ax.loglog(df["d"], df[col], "o", alpha=0.35, ms=4)
    med = df.groupby("d")[col].median()
    ax.loglog(med.index, med.values, "k-", lw=1.5, label="median")
    ax.set_xlabel("d")
    ax.set_ylabel(col)
    ax.legend()
d_values = np.array(grid["d"], float)
axes[0].loglog(d_values, df["gap"].median() * np.sqrt(d_values.mean() / d_values), "r--", lw=1, label="1/sqrt(d)")
axes[0].legend()
fig.suptitle("relucore.sweep on a local Dask cluster: 4 settings x 16 trials")
plt.show()
