"""
Gradient flow, exactly, and the certified limit of GD
=====================================================

:func:`relucore.flow` integrates gradient flow ``dW/dt = -grad R(W)`` of the two-neuron
network ``h(x) = relu(w_1^T x) - relu(w_2^T x)`` exactly: between two events (an entry
``beta_k,i = w_k^T x_i`` reaching zero and switching off, or sliding along zero) the flow
is linear and solved in closed form, so there is no step size and no discretisation
error (docs/math.md §13). ``train(..., steps=np.inf)`` and
:meth:`relucore.Trainer.run_to_limit` run GD only until a rigorous bound proves that the
activation pattern can no longer change (the *certificate*), then jump to the limit
``t -> inf`` in closed form.

Here: the flow's trajectory with its events, GD at a few step sizes on the same time
axis (step ``k`` at step size ``eta`` is time ``k eta``), and the distance between each
GD limit and the flow limit, which vanishes with the step size (the flow is GD's
``eta -> 0`` limit). The data: n = 10 Gaussian inputs in d = 2000 as in Fig. 4 of
Lai et al. (2026), labels with ``|y_i|`` in [0.2, 1] and random signs, the positive
initialisation.
"""

import matplotlib.pyplot as plt
import numpy as np

import relucore

ds = relucore.sample(10, 2000, labels=("uniform", 0.2, 1.0), rng=0)
fl = relucore.flow(ds.X, ds.y, signs=(1, -1))
print(fl.message)
print(fl.certificate)

# %%
# GD limits at the default step size ``eta_0 = 1 / (||s||^2 mu_1(K))`` and at smaller
# ones, each certified; ``Trainer.run_to_limit`` gives bitwise the limit of
# ``train(..., steps=np.inf)``.
eta0 = relucore.default_eta(np.linalg.eigvalsh(ds.K)[-1], (1, -1))
factors = np.array([1.0, 0.5, 0.25, 0.125, 0.0625])
gaps = []
for c in factors:
    lim = relucore.train(ds.X, ds.y, signs=(1, -1), eta=c * eta0, steps=np.inf)
    assert lim.certificate.holds
    gaps.append(relucore.limit_gap(lim.W, fl.W))
    print(f"eta = {c:6.4f} eta_0: certified after {lim.nit:4d} steps, ||W_GD - W_flow|| = {gaps[-1]:.3e}")
gd_limit = relucore.train(ds.X, ds.y, signs=(1, -1), steps=np.inf)
print(gd_limit.certificate)
trainer_limit = relucore.Trainer(ds.X, ds.y, signs=(1, -1)).run_to_limit()
print("Trainer.run_to_limit() == train(steps=np.inf):", np.array_equal(trainer_limit.W, gd_limit.W))

# %%
# Left: the predictions ``beta_k,i(t)`` of the flow (lines; neuron 1 solid, neuron 2
# dashed; time on a log axis) with its events (vertical lines: an entry switches off, or
# starts or stops sliding along zero), and GD at ``eta_0`` and ``eta_0 / 8`` (dots) at
# times ``k eta``. GD at ``eta_0`` steps over every event at once. Right: the distance
# between the certified GD limit and the flow limit against the step size, with its
# fitted power law (:func:`relucore.plots.fit_loglog`).
t_end = 200 * fl.event_times[-1]
times = np.geomspace(fl.event_times[0] / 30, t_end, 400)
traj = relucore.flow(ds.X, ds.y, signs=(1, -1), times=times)

fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
colors = plt.cm.tab10(np.arange(ds.y.size) % 10)
for i, color in enumerate(colors):
    ax.plot(times, traj.beta_t[:, 0, i], "-", color=color, lw=1.4, zorder=4)
    ax.plot(times, traj.beta_t[:, 1, i], "--", color=color, lw=1.4, zorder=4)
event_style = {"off": ("0.3", ":"), "slide": ("tab:red", "-."), "leave-off": ("tab:green", "-.")}
for t, kind in zip(fl.event_times, fl.event_kinds):
    color, ls = event_style.get(kind.split()[0], ("0.6", ":"))
    ax.axvline(t, color=color, ls=ls, lw=0.8, zorder=0)
gd_style = {1.0: dict(s=28, marker="x", color="k", lw=1.0), 0.125: dict(s=4, marker="o", color="0.55", lw=0)}
for c, style in gd_style.items():
    eta = c * eta0
    run = relucore.train(ds.X, ds.y, signs=(1, -1), eta=eta, steps=int(t_end / eta), tol=0, record=1)
    t_gd = np.repeat(run.history.steps * eta, ds.y.size)
    for k in range(2):
        ax.scatter(t_gd, run.history.beta[:, k, :].ravel(), zorder=3, **style)
ax.set_xscale("log")
ax.set_xlabel(r"time t (GD: step k at time $k\eta$)")
ax.set_ylabel(r"$\beta_{k,i}(t) = w_k(t)^\top x_i$")
ax.set_title(f"gradient flow, {len(fl.event_times)} events; GD at $\\eta_0$ and $\\eta_0/8$")
handles = [
    plt.Line2D([], [], color="0.3", ls=":", label="event: off"),
    plt.Line2D([], [], color="tab:red", ls="-.", label="event: slide"),
    plt.Line2D([], [], color="tab:green", ls="-.", label="event: leave-off"),
    plt.Line2D([], [], color="k", marker="x", ls="", ms=5, label=r"GD at $\eta_0$"),
    plt.Line2D([], [], color="0.55", marker="o", ls="", ms=3, label=r"GD at $\eta_0/8$"),
]
ax.legend(handles=handles, fontsize=8, loc="upper left")

etas = factors * eta0
slope, intercept = relucore.plots.fit_loglog(etas, gaps)
ax2.loglog(etas, gaps, "o", label="certified GD limit vs flow limit")
ax2.loglog(etas, np.exp(intercept) * etas**slope, "--", color="0.5", label=f"fit: slope {slope:.2f}")
relucore.plots.label_log_ticks(ax2, etas)
ax2.xaxis.set_major_formatter(plt.FormatStrFormatter("%.1e"))
ax2.set_xlabel(r"step size $\eta$")
ax2.set_ylabel(r"$\|W_{GD}(\infty) - W_{flow}(\infty)\|_F$")
ax2.set_title("GD limits converge to the flow limit")
ax2.legend(fontsize=8)
plt.show()
