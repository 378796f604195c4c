"""The current speed table of bench/README.md: relucore against its peers in the settings of the
performance targets, at this CPU's widest SIMD level and on the AVX2 path, each row saying which
CPU and ISA produced it.

    python bench/table.py                       # every row at every level; prints the table
    python bench/table.py --write               # ... and replaces the table in bench/README.md
    python bench/table.py small gram --levels avx --repeat 5
    pip install torch==2.13.0 jax jaxlib        # the peers (a missing one is skipped, said so)

Levels. ``native``: what this CPU runs by default. ``avx``: relucore's AVX2 path, and on an
AVX-512 CPU the stand-in for an AVX2 machine: ``RELUCORE_SIMD=avx`` caps relucore's kernels,
``OPENBLAS_CORETYPE=Haswell`` numpy's and scipy's OpenBLAS, ``ATEN_CPU_CAPABILITY=avx2``
PyTorch's and ``--xla_cpu_max_isa=AVX2`` JAX's. The CPU stays the AVX-512 one (its caches,
clock and memory), so the row says "AVX2 path on <CPU>", not an AVX2 machine. Each level runs
in its own process, because the libraries choose their kernels when they load.

Every row runs relucore and its peers side by side in one process, one thread each (the
sweep row compares relucore's 2 threads with its 1), checks that they agree (the ``max rel
diff`` column), and reports ``peer s / relucore s`` (above 1: relucore is faster) against the
target. Times are wall-clock bests of ``--repeat`` interleaved calls (bench/bench_peers.py);
the load average before and after each row is in the row: on a loaded machine the ratios of
single-threaded rows hold better than the times, the thread-scaling row does not.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
README = HERE / "README.md"
BEGIN, END = "<!-- table.py: begin -->", "<!-- table.py: end -->"

#: The environment of each level (see the docstring).
LEVELS = {
    "native": {},
    "avx": {
        "RELUCORE_SIMD": "avx",
        "OPENBLAS_CORETYPE": "Haswell",
        "ATEN_CPU_CAPABILITY": "avx2",
        "XLA_FLAGS": "--xla_cpu_max_isa=AVX2 --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
    },
}

#: (row, relucore label prefix, peer prefix) -> (target text, the least ratio peer s / relucore s that meets it).
TARGETS = {
    ("small", "relucore", "JAX"): ("≥ 5×", 5.0),
    ("dual100", "relucore", "JAX jit+scan (dual step, X numpy)"): ("≥ 1.5×", 1.5),
    ("dual200", "relucore", "JAX jit+scan (dual step, X numpy)"): ("≥ 1.5×", 1.5),
    ("batch64", "relucore", "JAX"): ("≥ 2×", 2.0),
    ("gram", "relucore", "OpenBLAS dsyrk"): ("≤ 1.1× dsyrk's time", 1 / 1.1),
    ("outer", "relucore", "numpy loop"): ("≥ 3×", 3.0),
    ("outer", "relucore", "PyTorch"): ("≥ 5×", 5.0),
    ("dana1", "relucore train(engine='auto')", "PyTorch"): ("≥ 2×", 2.0),
    ("dana2", "relucore train(engine='auto'", "PyTorch"): ("≥ 2×", 2.0),
    ("boursier", "relucore meanfield.train", "PyTorch autograd+SGD float64"): ("≥ 2×", 2.0),
    ("boursier", "relucore meanfield.train", "PyTorch autograd+SGD float32"): ("≥ 1×", 1.0),
    ("sweep10", "relucore", "1 thread"): ("≥ 1.8×", 1.8),
    ("sweep40", "relucore", "1 thread"): ("≥ 1.8×", 1.8),
    ("meanfield", "relucore meanfield.train", "floor"): ("within 1.3× of the floor", 1 / 1.3),
}

#: Rows that run with threads of their own: their process is not pinned to one CPU.
THREADED = ("sweep10", "sweep40")

ROW_NAMES = ["small", "dual100", "dual200", "batch64", "gram", "outer", "dana1", "dana2", "boursier",
             "sweep10", "sweep40", "meanfield"]  # fmt: skip


def target(row: str, relucore: str, peer: str):
    for (r, rc_prefix, prefix), t in TARGETS.items():
        if r == row and relucore.startswith(rc_prefix) and peer.startswith(prefix):
            return t
    return ("", None)


def _with_alternatives(setting, label, t_rc, peers):
    """The row as measured, and for every relucore alternative among its peers (a second engine
    or front end), the same outside peers against that alternative."""
    out = [(setting, label, t_rc, peers)]
    outside = [p for p in peers if not p[0].startswith("relucore")]
    for name, t, _ in peers:
        if name.startswith("relucore") and outside:
            out.append((setting, name, t, outside))
    return out


# --------------------------------------------------------------------------- child: measure


def _outer_bias(repeat):
    """n = 500 > d = 20, m = 50, both layers and the hidden bias trained, 3000 steps (½Σ loss)."""
    import bench_peers as P
    import numpy as np

    import relucore

    n, d, m, steps = 500, 20, 50, 3000
    rng = np.random.default_rng(5)
    X = rng.standard_normal((n, d)) / np.sqrt(d)
    y = np.sin(X @ rng.standard_normal(d))
    W0, b0, a0 = rng.standard_normal((m, d)), 0.1 * rng.standard_normal(m), rng.standard_normal(m) / m
    eta = 0.5 / n

    def rc():
        return relucore.train(X, y, signs=a0, init=np.column_stack([W0, b0]), bias=True, train_outer=True,
                              eta=eta, steps=steps, tol=0.0, n_threads=1)  # fmt: skip

    def numpy_loop():
        W, b, a = W0.copy(), b0.copy(), a0.copy()
        for _ in range(steps):
            pre = W @ X.T + b[:, None]
            act = np.maximum(pre, 0.0)
            r = a @ act - y
            g = a[:, None] * (pre > 0) * r[None, :]
            W, b, a = W - eta * (g @ X), b - eta * g.sum(1), a - eta * (act @ r)
        return W, b, a

    def torch_loop(torch):
        Xt, yt = torch.from_numpy(X), torch.from_numpy(y)
        W, b, a = (torch.from_numpy(v.copy()).requires_grad_() for v in (W0, b0, a0))
        opt = torch.optim.SGD([W, b, a], lr=eta)
        for _ in range(steps):
            opt.zero_grad()
            loss = 0.5 * torch.sum((torch.relu(Xt @ W.T + b) @ a - yt) ** 2)
            loss.backward()
            opt.step()
        return W.detach().numpy(), b.detach().numpy(), a.detach().numpy()

    fns = {"relucore": rc, "numpy loop": numpy_loop}
    torch = P._torch()
    if torch is not None:
        fns["PyTorch autograd+SGD"] = lambda: torch_loop(torch)
    # the hidden bias as a feature, as both loops have it
    fns[P.GEMM_FLOOR] = P.gemm_floor(np.column_stack([X, np.ones(n)]), m, steps)
    times = P.race(fns, repeat)
    res = times["relucore"][1]

    def check(out):
        W, b, a = out
        return max(P._rel(W, res.W), P._rel(b, res.bias), P._rel(a, res.outer))

    checks = dict.fromkeys([k for k in fns if k != "relucore"], check)
    checks[P.GEMM_FLOOR] = lambda out: float("nan")  # times the products only: nothing to compare
    return P._rows("outer", f"relucore train(train_outer, bias) -> {res.engine!r}", times, checks)


#: The noisy mean-field row's floor (bench/README.md, item "noisy mean-field floor").
MF_FLOOR = "floor: the noise-free step + the step's normals alone (counter generator)"


def _sweep_threads(n, repeat):
    """A Gram-mode sweep (d = 10^5) on 2 threads against 1: the 'peer' is relucore on 1 thread."""
    import bench_sweep as S

    trials = {10: 8192, 40: 2048}[n]
    best = {1: 0.0, 2: 0.0}
    for _ in range(repeat):
        for nt in (1, 2):
            rate, _ = S.sweep_rate(n, 100_000, trials, use_gram=True, n_threads=nt)
            best[nt] = max(best[nt], rate)
    # times per trial, so that the ratio is the speed-up of 2 threads
    return [(f"sweep{n}", "relucore sweep, 2 threads", 1 / best[2], [("1 thread", 1 / best[1], 0.0)])]


def _meanfield_noise(repeat):
    """Noisy single-sample mean-field SGD (N = 1000, 3×3 grid, temperature 1e-3) against the numpy loop."""
    import bench_meanfield as M
    import numpy as np

    from relucore import _core, meanfield

    X, y = M.GRID_X, M.GRID_LABELS
    theta0 = np.random.default_rng(0).normal(0, 1e-3, (1000, 4))
    rng = np.random.default_rng(0)

    def engine(i):
        meanfield.train(X, y, m=1000, eta=1.0, weight_decay=1e-2, temperature=1e-3, steps=i, init=theta0, rng=0,
                        record=0, n_threads=1)  # fmt: skip

    def numpy_loop(i):
        M.numpy_loop(X, y, theta0, iters=i, step=1.0, lam=1e-2, T=1e-3, rng=rng)

    def noise_free(i):
        meanfield.train(X, y, m=1000, eta=1.0, weight_decay=1e-2, temperature=0.0, steps=i, init=theta0, rng=0,
                        record=0, n_threads=1)  # fmt: skip

    # A step's noise is one normal per parameter (N x (d + 2)). They are drawn 32 steps at a time into
    # one buffer (1 MB) that stays in the cache, as the engine's normals do, not streamed to memory.
    chunk = 32
    normals = np.empty(theta0.size * chunk)

    def counter_normals(i):
        for c in range(0, i, chunk):
            _core.counter_normals(7, 0, c * theta0.size, normals)

    best = dict.fromkeys(("engine", "numpy", "noise-free", "normals"), np.inf)
    for _ in range(repeat):
        for name, fn, iters in (("engine", engine, 5000), ("numpy", numpy_loop, 1000),
                                ("noise-free", noise_free, 5000), ("normals", counter_normals, 5000)):  # fmt: skip
            t0 = time.perf_counter()
            fn(iters)
            best[name] = min(best[name], (time.perf_counter() - t0) / iters)
    # per step; the laws agree (noise is random: the agreement is checked noise-free in bench_meanfield).
    # The floor of a noisy step is what no fused step can avoid: the noise-free step plus the step's
    # normals from the counter generator alone (_core.counter_normals, the widest SIMD path).
    return [
        (
            "meanfield",
            "relucore meanfield.train (per step)",
            best["engine"],
            [
                ("numpy loop", best["numpy"], float("nan")),
                (MF_FLOOR, best["noise-free"] + best["normals"], float("nan")),
            ],  # fmt: skip
        )
    ]


def child(rows, repeat, level):
    sys.path.insert(0, str(HERE))
    import _common
    import bench_peers as P

    import relucore

    runners = dict(P.RUNNERS)
    runners.update(outer=_outer_bias, sweep10=lambda r: _sweep_threads(10, r),
                   sweep40=lambda r: _sweep_threads(40, r), meanfield=_meanfield_noise)  # fmt: skip
    cpu = _common.machine()
    for name in rows:
        load0 = os.getloadavg()[0]
        measured = [alt for row in runners[name](repeat) for alt in _with_alternatives(*row)]
        for setting, label, t_rc, peers in measured:
            load = f"{load0:.1f} → {os.getloadavg()[0]:.1f}"
            if not peers:
                peers = [("(no peer installed)", float("nan"), float("nan"))]
            for peer, t, diff in peers:
                print(json.dumps(dict(row=setting, relucore=label, relucore_s=t_rc, peer=peer, peer_s=t, diff=diff,
                                      level=level, cpu=cpu, load=load, version=relucore.__version__)), flush=True)  # fmt: skip


# --------------------------------------------------------------------------- parent: table


def measure(rows, repeat, level):
    """The records of ``rows`` at ``level``: single-threaded rows in one process pinned to one CPU
    (bench_peers.py), the threaded ones in another, not pinned."""
    records = []
    for group, pin in (([r for r in rows if r not in THREADED], {}), ([r for r in rows if r in THREADED], {"RELUCORE_BENCH_CPU": "none"})):  # fmt: skip
        if not group:
            continue
        env = dict(os.environ, **LEVELS[level], **pin)
        cmd = [sys.executable, __file__, "--child", level, "--repeat", str(repeat), *group]
        out = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True, check=True).stdout
        records += [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return records


def render(records) -> str:
    lines = [
        "| setting | relucore | peer | CPU, ISA (relucore path) | level | relucore s | peer s | peer s / relucore s | target | met | max rel diff | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    for r in records:
        text, least = target(r["row"], r["relucore"], r["peer"])
        ratio = r["peer_s"] / r["relucore_s"]
        met = "" if least is None or ratio != ratio else ("yes" if ratio >= least else "**no**")
        lines.append(
            f"| {r['row']} | {r['relucore']} | {r['peer']} | {r['cpu']} | {r['level']} | {r['relucore_s']:.4g} | "
            f"{r['peer_s']:.4g} | {ratio:.2f} | {text} | {met} | {r['diff']:.1e} | {r['load']} |"
        )
    return "\n".join(lines)


def write_readme(table: str, header: str) -> None:
    text = README.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{README} has no {BEGIN} ... {END} block to replace")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    README.write_text(f"{head}{BEGIN}\n{header}\n\n{table}\n{END}{tail}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rows", nargs="*", help=f"any of {', '.join(ROW_NAMES)} (default: all)")
    ap.add_argument("--levels", default="native,avx", help="comma-separated, of: " + ", ".join(LEVELS))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--write", action="store_true", help="replace the table in bench/README.md")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    rows = args.rows or ROW_NAMES
    unknown = sorted(set(rows) - set(ROW_NAMES))
    if unknown:
        ap.error(f"unknown row(s) {unknown}; choose from {ROW_NAMES}")
    if args.child:
        return child(rows, args.repeat, args.child)
    levels = args.levels.split(",")
    bad = sorted(set(levels) - set(LEVELS))
    if bad:
        ap.error(f"unknown level(s) {bad}; choose from {list(LEVELS)}")
    t0 = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    records = []
    for level in levels:
        records += measure(rows, args.repeat, level)
    records.sort(key=lambda r: (ROW_NAMES.index(r["row"]), levels.index(r["level"])))
    table = render(records)
    header = (
        f"Measured {t0} by `python bench/table.py --repeat {args.repeat} --write` (relucore "
        f"{records[0]['version'] if records else '?'}), best of {args.repeat}, wall time, one thread each."
    )
    loads = [float(x) for r in records for x in r["load"].split(" → ")]
    if loads and max(loads) > 0.75 * (os.cpu_count() or 1):
        header += (
            f"\n\nThis run shared the machine with other jobs (load average up to {max(loads):.1f} on "
            f"{os.cpu_count()} cores, in each row's last column): its times are inflated and its ratios "
            "scattered, the thread-scaling rows most. Rerun it on a quiet machine before reading a "
            "target as met or missed."
        )
    print(header + "\n\n" + table)
    if args.write:
        write_readme(table, header)


if __name__ == "__main__":
    main()
