"""relucore against the loops a researcher of this field writes, in the settings the field runs.

Each row runs one setting with relucore and with its peers side by side in this process,
one thread each, float64 unless said, checks that they agree, and reports the ratio
``peer time / relucore time`` (above 1: relucore is faster). Everything a call does is
timed (relucore's set-up included: K, eigenvalues, the init solve, W).

Settings:

- ``dana1``: n = 1300 > d = 100, m = 36 neurons, outer layer fixed (signs +-1), 200 GD steps,
  init and eta given (Dana et al.'s Exp. 1 sizes). Peers: numpy, PyTorch autograd + SGD, JAX jit.
- ``dana2``: d = 2000, n = 1000, p = 35, both layers trained, full batch, 50 steps (Dana et
  al.'s Exp. 2 sizes) via ``meanfield.train(batch_size=None, train_outer=True, bias=False)``.
  Peers: PyTorch, and ``relucore.train(engine="weights", train_outer=True)`` on the same steps.
- ``boursier``: 1-D inputs with bias, N = 20 000 neurons, 40 points, both layers, full batch,
  200 steps, via ``meanfield.train``. Peers: PyTorch float64 and float32, and ``relucore.train``
  as for dana2.
- ``small``: n = 10, d = 2000, m = 2, 2000 steps (Lai et al.'s setting; relucore's default
  positive start). Peers: JAX jit + lax.scan of the dual step, PyTorch autograd + SGD from
  the same W0, numpy loop.
- ``dual100``/``dual200``: n = 100, d = 10^4, m = 2, 500 steps; n = 200, d = 5*10^4, 100
  steps. Peer: JAX jit + lax.scan of the dual step (K formed by JAX too), given X as a numpy
  array (copied to the device on each call, as a script passing numpy data does) and given X
  already on the device (a ``jnp`` array: the copy left out).
- ``batch64``: 64 problems n = 10, d = 2000, m = 2, 2000 steps in one call. Peer: JAX vmap.
- ``gram``: K = X X^T at n = 400, d = 5*10^4. Peers: OpenBLAS dsyrk through scipy, numpy's
  ``X @ X.T``, and relucore's built-in kernel (what runs when no BLAS is registered).

    python bench/bench_peers.py                 # every setting
    python bench/bench_peers.py dana1 gram      # some of them
    python bench/bench_peers.py small --repeat 30 --cpu-time
    pip install torch==2.13.0 jax jaxlib        # the peers (optional; a missing one is skipped)

Timing: the process (relucore and every peer, whose pools start after this) is pinned to one
CPU, the last one it may run on, or the one named by the environment variable
RELUCORE_BENCH_CPU (``none``: no pinning). Times are the best of ``--repeat`` calls, wall time
or with ``--cpu-time`` the process's CPU time (less inflated by other jobs on a loaded
machine). In the small, dual, batch64 and gram rows relucore and its peers are called in
turn (one call each per round, ``--repeat`` rounds), so a burst of load hits all of them.
"""

from __future__ import annotations

import os


def _pin_cpu():
    """Pins this process to one CPU (see the docstring); returns it, or None."""
    choice = os.environ.get("RELUCORE_BENCH_CPU", "")
    if choice.lower() == "none" or not hasattr(os, "sched_setaffinity"):
        return None
    cpu = int(choice) if choice else max(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    return cpu


# One CPU and one thread for every peer: set before numpy/jax/torch start their pools.
PINNED_CPU = _pin_cpu()
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402

import _common  # noqa: E402
import numpy as np  # noqa: E402
from _common import numpy_gd, problem  # noqa: E402

import relucore  # noqa: E402
from relucore import meanfield  # noqa: E402


def _torch():
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    return torch


def _jax():
    try:
        import jax
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    return jax


CLOCK = time.perf_counter  # time.process_time with --cpu-time


def best_of(fn, repeat):
    """(best time of ``repeat`` calls on CLOCK, the last call's value)."""
    return _common.best_of(fn, repeat, clock=CLOCK)


def race(fns, repeat, calls=None):
    """{name: (best time, last value)} of the callables ``fns`` ({name: fn}), called in turn
    for ``repeat`` rounds, ``calls.get(name, 1)`` calls each per round (more for the
    sub-millisecond calls, which one scheduler hiccup can spoil): a burst of load hits all."""
    best = {name: (np.inf, None) for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            for _ in range((calls or {}).get(name, 1)):
                t0 = CLOCK()
                out = fn()
                best[name] = (min(best[name][0], CLOCK() - t0), out)
    return best


def _rel(a, b) -> float:
    return float(np.linalg.norm(np.asarray(a) - np.asarray(b)) / np.linalg.norm(np.asarray(b)))


# --- peers: fixed outer layer, weight space -------------------------------------------------


def torch_fixed_outer(X, y, W0, signs, eta, steps):
    """Autograd + torch.optim.SGD on 1/2 ||sum_k s_k relu(X w_k) - y||^2."""
    torch = _torch()
    Xt, yt, st = torch.from_numpy(X), torch.from_numpy(y), torch.from_numpy(signs)
    W = torch.nn.Parameter(torch.from_numpy(W0.copy()))
    opt = torch.optim.SGD([W], lr=eta)
    for _ in range(steps):
        opt.zero_grad()
        loss = 0.5 * (((st[:, None] * torch.relu(W @ Xt.T)).sum(0) - yt) ** 2).sum()
        loss.backward()
        opt.step()
    return W.detach().numpy()


def jax_fixed_outer(X, y, W0, signs, eta, steps):
    """The same GD as jax.grad inside a jitted lax.scan (compile time excluded by a warm-up call)."""
    jax = _jax()
    jnp = jax.numpy

    def loss(W):
        return 0.5 * jnp.sum((jnp.sum(signs[:, None] * jax.nn.relu(W @ X.T), axis=0) - y) ** 2)

    @jax.jit
    def run(W):
        return jax.lax.scan(lambda W, _: (W - eta * jax.grad(loss)(W), None), W, None, length=steps)[0]

    run(W0).block_until_ready()
    return lambda: np.asarray(run(W0).block_until_ready())


# --- peers: the dual step -------------------------------------------------------------------


def jax_dual(X, y, beta0, signs, eta, steps, on_device=False):
    """alpha, beta of the dual engine: beta_k <- beta_k - eta s_k K (1[beta_k > 0] * g), K formed in JAX.

    X is passed as the numpy array (copied to the device by every call) or, with ``on_device``,
    as a jnp array put on the device once here."""
    jax = _jax()
    jnp = jax.numpy
    if on_device:
        X = jax.device_put(X)
        X.block_until_ready()

    @jax.jit
    def run(X, beta0):
        K = X @ X.T

        def step(carry, _):
            alpha, beta = carry
            g = jnp.sum(signs[:, None] * jax.nn.relu(beta), axis=0) - y
            u = eta * signs[:, None] * (beta > 0) * g[None, :]
            return (alpha - u, beta - u @ K), None

        alpha0 = jnp.zeros_like(beta0)
        return jax.lax.scan(step, (alpha0, beta0), None, length=steps)[0]

    run(X, beta0)[1].block_until_ready()
    return lambda: tuple(np.asarray(a) for a in run(X, beta0))


def jax_dual_vmap(Xb, yb, beta0, signs, eta, steps):
    """jax_dual over a batch with vmap (one eta per problem)."""
    jax = _jax()
    jnp = jax.numpy

    def one(X, y, b0, e):
        K = X @ X.T

        def step(beta, _):
            g = jnp.sum(signs[:, None] * jax.nn.relu(beta), axis=0) - y
            return beta - (e * signs[:, None] * (beta > 0) * g[None, :]) @ K, None

        return jax.lax.scan(step, b0, None, length=steps)[0]

    run = jax.jit(jax.vmap(one))
    run(Xb, yb, beta0, eta).block_until_ready()
    return lambda: np.asarray(run(Xb, yb, beta0, eta).block_until_ready())


# --- peers: both layers trained (mean-field parametrisation) --------------------------------


def torch_two_layer(X, y, theta0, kappa, lr, steps, bias, dtype="float64"):
    """h = kappa sum_j a_j relu(w_j x (+ b_j)), loss mean (h - y)^2, SGD on every parameter."""
    torch = _torch()
    dt = getattr(torch, dtype)
    Xt, yt = torch.from_numpy(X).to(dt), torch.from_numpy(y).to(dt)
    d = X.shape[1]
    a = torch.nn.Parameter(torch.from_numpy(theta0[:, 0].copy()).to(dt))
    W = torch.nn.Parameter(torch.from_numpy(theta0[:, 1 : 1 + d].copy()).to(dt))
    params = [a, W]
    b = None
    if bias:
        b = torch.nn.Parameter(torch.from_numpy(theta0[:, 1 + d].copy()).to(dt))
        params.append(b)
    opt = torch.optim.SGD(params, lr=lr)
    for _ in range(steps):
        opt.zero_grad()
        pre = Xt @ W.T + (b if bias else 0.0)
        loss = ((kappa * torch.relu(pre) @ a - yt) ** 2).mean()
        loss.backward()
        opt.step()
    cols = [a.detach()[:, None], W.detach()] + ([b.detach()[:, None]] if bias else [])
    return torch.cat(cols, dim=1).double().numpy()


# --- the settings ---------------------------------------------------------------------------


def dana1_problem():
    """Dana et al.'s Exp. 1 sizes: n = 1300, d = 100, m = 36 (signs +-1), 200 steps; (X, y, W0, signs, eta, steps)."""
    n, d, m, steps = 1300, 100, 36, 200
    X, y, _ = problem(n, d, 1)
    rng = np.random.default_rng(1)
    signs = np.where(np.arange(m) % 2 == 0, 1.0, -1.0)
    W0 = rng.standard_normal((m, d)) / np.sqrt(d)
    eta = 0.1 / np.linalg.norm(X, 2) ** 2
    return X, y, W0, signs, eta, steps


#: The floor of a weight-space row: the two products of every step at numpy's BLAS rate.
GEMM_FLOOR = "floor: the step's two GEMMs (numpy's BLAS)"


def gemm_floor(X, m, steps):
    """What any weight-space loop of ``m`` neurons on ``X`` (n x d) pays at the BLAS's rate, as a callable:
    per step the predictions W X^T (m x n) and the gradient's product C X (m x d)."""
    rng = np.random.default_rng(0)
    n, d = X.shape
    W, C, pre, G = rng.standard_normal((m, d)), rng.standard_normal((m, n)), np.empty((m, n)), np.empty((m, d))

    def floor():
        for _ in range(steps):
            np.matmul(W, X.T, out=pre)
            np.matmul(C, X, out=G)

    return floor


def run_dana1(repeat):
    X, y, W0, signs, eta, steps = dana1_problem()
    floor_s, _ = best_of(gemm_floor(X, W0.shape[0], steps), repeat)
    rows = []
    for engine in ("dual", "weights", "auto"):

        def rc(engine=engine):
            return relucore.train(X, y, signs=signs, init=W0, eta=eta, steps=steps, tol=0.0, n_threads=1, engine=engine)

        t_rc, res = best_of(rc, repeat)
        peers = []
        t, W = best_of(lambda: numpy_gd(X, y, W0, signs, eta, steps), repeat)
        peers.append(("numpy loop", t, _rel(W, res.W)))
        if _torch() is not None:
            t, W = best_of(lambda: torch_fixed_outer(X, y, W0, signs, eta, steps), repeat)
            peers.append(("PyTorch autograd+SGD", t, _rel(W, res.W)))
        if _jax() is not None:
            t, W = best_of(jax_fixed_outer(X, y, W0, signs, eta, steps), repeat)
            peers.append(("JAX jit+scan (grad)", t, _rel(W, res.W)))
        peers.append((GEMM_FLOOR, floor_s, float("nan")))  # times the products only: nothing to compare
        rows.append(("dana1", f"relucore train(engine={engine!r})", t_rc, peers))
    return rows


def _two_layer(name, X, y, N, steps, bias, lr, kappa_name, repeat, dtypes):
    rng = np.random.default_rng(2)
    P = X.shape[1] + (2 if bias else 1)
    theta0 = rng.standard_normal((N, P)) * 0.5
    kappa = meanfield.output_scale_factor(kappa_name, N)

    def rc():
        return meanfield.train(
            X, y, m=N, eta=lr, steps=steps, weight_decay=0.0, temperature=0.0, batch_size=None, bias=bias,
            train_outer=True, output_scale=kappa_name, init=theta0, record=0, n_threads=1, progress=False,
        )  # fmt: skip

    def rc_train():
        # The same steps in train's vocabulary: 1/2 sum (h - y)^2 with eta = 2 lr / M, outer layer a_k.
        return relucore.train(
            X, y, signs=theta0[:, 0], init=theta0[:, 1:], eta=2 * lr / X.shape[0], steps=steps, tol=0.0,
            engine="weights", train_outer=True, output_scale=kappa, bias=bias, n_threads=1,
        )  # fmt: skip

    def rc_auto():
        # The engine by cost: the dual engine where K once and O(n^2 m) a step is cheaper (Dana Exp. 2).
        return relucore.train(
            X, y, signs=theta0[:, 0], init=theta0[:, 1:], eta=2 * lr / X.shape[0], steps=steps, tol=0.0,
            engine="auto", train_outer=True, output_scale=kappa, bias=bias, n_threads=1,
        )  # fmt: skip

    # interleaved (race): a burst of load hits all of them
    timed = race({"meanfield": rc, "train": rc_train, "auto": rc_auto}, repeat)
    (t_rc, res), (t_tr, tr), (t_au, au) = timed["meanfield"], timed["train"], timed["auto"]
    lines = []
    for label, t, r in (("'weights'", t_tr, tr), (f"'auto' -> {au.engine!r}", t_au, au)):
        th = np.column_stack([r.outer, r.W] + ([r.bias] if bias else []))
        lines.append((f"relucore train(engine={label}, train_outer=True)", t, _rel(th, res.theta)))
    if _torch() is not None:
        for dt in dtypes:
            t, th = best_of(lambda dt=dt: torch_two_layer(X, y, theta0, kappa, lr, steps, bias, dt), repeat)
            lines.append((f"PyTorch autograd+SGD {dt}", t, _rel(th, res.theta)))
    return [(name, "relucore meanfield.train", t_rc, lines)]


def run_dana2(repeat):
    n, d, p, steps = 1000, 2000, 35, 50
    rng = np.random.default_rng(3)
    X = rng.standard_normal((n, d)) / np.sqrt(d)
    y = np.sign(rng.standard_normal(n))
    return _two_layer("dana2", X, y, p, steps, False, 0.5, "1/sqrt(m)", repeat, ("float64",))


def run_boursier(repeat):
    M, N, steps = 40, 20_000, 200
    rng = np.random.default_rng(4)
    X = np.sort(rng.uniform(-1, 1, M))[:, None]
    y = np.sin(3 * X[:, 0])
    return _two_layer("boursier", X, y, N, steps, True, 0.05, "1/m", repeat, ("float64", "float32"))


def _dual_peers(X, y, signs, res, steps, on_device=(False, True)):
    """{label: fn} of the JAX dual loops started where relucore's run started, and their check."""
    if _jax() is None:
        return {}, None
    fns = {}
    for dev in on_device:
        label = "JAX jit+scan (dual step, X on device)" if dev else "JAX jit+scan (dual step, X numpy)"
        fns[label] = jax_dual(X, y, res.beta0, signs, float(res.eta), steps, on_device=dev)

    def check(out):
        alpha, beta = out
        return max(_rel(beta, res.beta), _rel(res.alpha0 + alpha, res.alpha))

    return fns, check


def _rows(name, label, times, checks):
    """One row (name, label, relucore s, [(peer, s, rel diff)]) from race()'s times."""
    t_rc = times.pop("relucore")[0]
    return [(name, label, t_rc, [(peer, t, checks[peer](out)) for peer, (t, out) in times.items()])]


#: The dual rows' floor: the work of the JAX peer (K, then the steps) at the best rates at hand.
DUAL_FLOOR = "floor: K by OpenBLAS dsyrk + relucore's steps alone"


def run_dual(name, n, d, m, steps, repeat):
    from scipy.linalg.blas import dsyrk
    from threadpoolctl import threadpool_limits

    X, y, signs = problem(n, d, m)

    def rc():
        return relucore.train(X, y, signs=signs, steps=steps, tol=0.0, n_threads=1)

    res = rc()
    fns, check = _dual_peers(X, y, signs, res, steps)
    checks = dict.fromkeys(fns, check)
    # What the JAX peer computes (K = X X^T, then the steps from relucore's start; no start, no W), each
    # part at the best rate at hand: K by OpenBLAS's dsyrk on X as it is (X.T is Fortran-ordered: no copy),
    # the steps by relucore's engine alone (a Trainer made once; a step's cost does not depend on where
    # the run is). JAX / floor is the most any implementation of the peer's work reaches against JAX.
    trainer = relucore.Trainer(X, y, signs=signs, tol=0.0, n_threads=1)

    def floor():
        dsyrk(1.0, X.T, trans=1)
        trainer.step(steps)

    fns[DUAL_FLOOR] = floor
    checks[DUAL_FLOOR] = lambda out: float("nan")  # times work only: nothing to compare
    with threadpool_limits(1):
        times = race({"relucore": rc, **fns}, repeat)
    return _rows(name, "relucore train (dual)", times, checks)


def run_small(repeat):
    """n = 10, d = 2000, m = 2, 2000 steps: relucore's whole call (fixed cost included)."""
    n, d, m, steps = 10, 2000, 2, 2000
    X, y, signs = problem(n, d, m)

    def rc():
        return relucore.train(X, y, signs=signs, steps=steps, tol=0.0, n_threads=1)

    res = rc()
    fns, check = _dual_peers(X, y, signs, res, steps, on_device=(True,))
    checks = dict.fromkeys(fns, check)
    fns["numpy loop"] = lambda: numpy_gd(X, y, res.W0, signs, res.eta, steps)
    checks["numpy loop"] = lambda W: _rel(W, res.W)
    if _torch() is not None:
        fns["PyTorch autograd+SGD"] = lambda: torch_fixed_outer(X, y, res.W0, signs, res.eta, steps)
        checks["PyTorch autograd+SGD"] = lambda W: _rel(W, res.W)
    calls = {"relucore": 20, **dict.fromkeys([k for k in fns if k.startswith("JAX")], 5)}
    times = race({"relucore": rc, **fns}, repeat, calls)
    return _rows("small", "relucore train (dual)", times, checks)


def run_batch64(repeat):
    B, n, d, m, steps = 64, 10, 2000, 2, 2000
    data = [problem(n, d, m, seed=b) for b in range(B)]
    Xb, yb, signs = np.stack([a for a, _, _ in data]), np.stack([b for _, b, _ in data]), data[0][2]

    def rc():
        return relucore.train(Xb, yb, signs=signs, steps=steps, tol=0.0, n_threads=1)

    res = rc()
    fns, checks = {}, {}
    if _jax() is not None:
        fns["JAX vmap(jit+scan)"] = jax_dual_vmap(Xb, yb, res.beta0, signs, res.eta, steps)
        checks["JAX vmap(jit+scan)"] = lambda beta: _rel(beta, res.beta)
    times = race({"relucore": rc, **fns}, repeat)
    return _rows("batch64", "relucore train (batched)", times, checks)


def run_gram(repeat):
    from scipy.linalg.blas import dsyrk
    from threadpoolctl import threadpool_limits

    X, _, _ = problem(400, 50_000, 1)
    K = np.empty((1, 400, 400))
    K_b = np.empty_like(K)

    def builtin():
        relucore._core._use_blas(False)
        try:
            relucore._core.gram_batch(X[None], K_b, 1)
        finally:
            relucore._core._use_blas(True)
        return K_b[0]

    fns = {
        "relucore": lambda: relucore._core.gram_batch(X[None], K, 1),
        # X.T is Fortran-ordered: dsyrk forms (X.T)^T X.T = X X^T without copying X.
        "OpenBLAS dsyrk (scipy)": lambda: np.triu(dsyrk(1.0, X.T, trans=1)),
        "numpy X @ X.T": lambda: X @ X.T,
        "relucore built-in kernel": builtin,
    }
    with threadpool_limits(1):
        times = race(fns, repeat)
    checks = {
        "OpenBLAS dsyrk (scipy)": lambda Ku: _rel(np.triu(K[0]), Ku),
        "numpy X @ X.T": lambda Kn: _rel(K[0], Kn),
        "relucore built-in kernel": lambda Kb: _rel(K[0], Kb),
    }
    label = f"relucore gram_batch ({relucore._core.blas_info().in_use.split(' (')[0]})"
    return _rows("gram", label, times, checks)


RUNNERS = {
    "dana1": run_dana1,
    "dana2": run_dana2,
    "boursier": run_boursier,
    "small": run_small,
    "dual100": lambda r: run_dual("dual100", 100, 10_000, 2, 500, r),
    "dual200": lambda r: run_dual("dual200", 200, 50_000, 2, 100, r),
    "batch64": run_batch64,
    "gram": run_gram,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("settings", nargs="*", help=f"any of {', '.join(RUNNERS)} (default: all)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cpu-time", action="store_true", help="time by the process's CPU time, not wall time")
    args = ap.parse_args()
    global CLOCK
    CLOCK = time.process_time if args.cpu_time else time.perf_counter
    chosen = args.settings or list(RUNNERS)
    unknown = sorted(set(chosen) - set(RUNNERS))
    if unknown:
        ap.error(f"unknown setting(s) {unknown}; choose from {list(RUNNERS)}")
    torch, jax = _torch(), _jax()
    print(
        f"# bench_peers  relucore {relucore.__version__}, numpy {np.__version__}, "
        f"torch {torch.__version__ if torch else 'absent'}, jax {jax.__version__ if jax else 'absent'}, "
        f"{platform.machine()}, load {os.getloadavg()[0]:.1f}; one thread each, "
        f"CPU {PINNED_CPU if PINNED_CPU is not None else 'not pinned'}, "
        f"{'CPU time' if args.cpu_time else 'wall time'} best of {args.repeat}"
    )
    print()
    print("| setting | relucore | relucore s | peer | peer s | peer s / relucore s | max rel diff |")
    print("|---|---|---|---|---|---|---|")
    for name in chosen:
        for setting, label, t_rc, peers in RUNNERS[name](args.repeat):
            if not peers:
                print(f"| {setting} | {label} | {t_rc:.4g} | (no peer installed) | | | |")
            for peer, t, diff in peers:
                print(f"| {setting} | {label} | {t_rc:.4g} | {peer} | {t:.4g} | {t / t_rc:.2f} | {diff:.1e} |")


if __name__ == "__main__":
    main()
