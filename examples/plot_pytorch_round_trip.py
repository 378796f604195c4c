"""
PyTorch in and out: an exact run of a PyTorch model
====================================================

A two-layer ReLU network written the PyTorch way, ``nn.Sequential(nn.Linear(d, m), nn.ReLU(),
nn.Linear(m, 1))`` with both layers biased and a zero-initialised output layer, trained by
full-batch SGD on the weighted mean square loss ``mean(w (h - y)^2)``. relucore runs the same
iteration from :func:`relucore.from_torch` (``train_outer=True, reduction="mean",
sample_weight=w``, ``eta`` = PyTorch's ``lr``) and hands the result back as a float64 module
with :meth:`relucore.TrainResult.to_torch` (:doc:`/math`, section 2: output bias, loss
reductions and example weights). Without PyTorch installed (``pip install
"relucore[torch]"``) the script says so and draws relucore's run alone.

A model without biases and with a fixed outer layer is the model of the papers: there
``train(steps=np.inf)`` returns the certified limit of GD in closed form (:doc:`/math`,
section 13), shown at the end.
"""

import matplotlib.pyplot as plt
import numpy as np

import relucore

try:
    import torch
except ImportError:
    torch = None

rng = np.random.default_rng(0)
n, d, m = 60, 8, 16
X = rng.standard_normal((n, d))
y = np.sin(X[:, 0]) + 0.5 * X[:, 1]
w = rng.uniform(0.5, 1.5, n)  # per-example weights
lr, steps = 0.05, 2000

if torch is not None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(d, m), torch.nn.ReLU(), torch.nn.Linear(m, 1)).double()
    with torch.no_grad():
        model[2].weight.zero_()  # a zero-initialised output layer
        model[2].bias.zero_()
    start = relucore.from_torch(model)
else:  # the same kind of start without PyTorch
    start = dict(
        init=np.column_stack([rng.uniform(-1, 1, (m, d)) / np.sqrt(d), rng.uniform(-1, 1, m) / np.sqrt(d)]),
        signs=np.zeros(m),
        bias=True,
        output_bias=0.0,
    )
    print("PyTorch is not installed: relucore's run alone")

# %%
# relucore's exact run: every step of full-batch SGD on ``mean(w (h - y)^2)``.
res = relucore.train(
    X, y, **start, train_outer=True, reduction="mean", sample_weight=w, eta=lr, steps=steps, tol=0, record=10
)
print(res.message)
print(f"loss {res.loss:.6g}, output bias {res.output_bias:.6g}")

# %%
# The same loop in PyTorch (float64), and the result handed back as a module.
if torch is not None:
    Xt, yt, wt = (torch.from_numpy(a) for a in (X, y, w))
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.mean(wt * (model(Xt)[:, 0] - yt) ** 2)
        loss.backward()
        opt.step()
    with torch.no_grad():
        h_torch = model(Xt)[:, 0].numpy()
        W_torch = model[0].weight.numpy()
    print(
        f"predictions: max relative difference {np.max(np.abs(res.predictions - h_torch)) / np.max(np.abs(h_torch)):.2e}"
    )
    print(f"first layer: max relative difference {np.max(np.abs(res.W - W_torch)) / np.max(np.abs(W_torch)):.2e}")
    back = res.to_torch()  # float64 nn.Sequential with the final parameters
    with torch.no_grad():
        h_back = back(Xt)[:, 0].numpy()
    print(f"to_torch() reproduces result.predictions to {np.max(np.abs(h_back - res.predictions)):.1e}")

# %%
# A model without biases and with a fixed outer layer is the papers' model: ``steps=np.inf``
# runs GD until its activation pattern is proved frozen and returns the limit in closed form.
ds = relucore.sample(10, 400, rng=0)
if torch is not None:
    torch.manual_seed(0)
    plain = torch.nn.Sequential(
        torch.nn.Linear(400, 20, bias=False), torch.nn.ReLU(), torch.nn.Linear(20, 1, bias=False)
    ).double()
    start = relucore.from_torch(plain)
else:
    start = dict(init=rng.uniform(-0.05, 0.05, (20, 400)), signs=rng.uniform(-0.2, 0.2, 20))
lim = relucore.train(ds.X, ds.y, **start, steps=np.inf)
print(lim.message)
if torch is not None:
    limit_module = lim.to_torch()  # the limit network t -> inf, as a PyTorch module
    with torch.no_grad():
        fit = limit_module(torch.from_numpy(ds.X))[:, 0].numpy()
    print(f"the limit interpolates: max |h - y| = {np.max(np.abs(fit - ds.y)):.1e}")

fig, ax = plt.subplots(figsize=(5.5, 3.4), layout="constrained")
ax.semilogy(res.history.steps, res.history.loss)
ax.set_xlabel("step")
ax.set_ylabel("mean(w (h - y)^2)")
ax.set_title("relucore's run of the PyTorch model (train_outer, output bias)")
plt.show()
