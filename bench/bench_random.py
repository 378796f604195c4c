"""Random variates and the fused draw-and-Gram trial against numpy, one thread, side by side.

- variates per second of the counter-based generator (Philox4x32-10,
  ``_core.counter_normals`` / ``counter_uniforms`` / ``counter_rademacher``)
  against numpy's ``Generator`` (PCG64): ``standard_normal`` (ziggurat),
  ``random``, and for Rademacher ``choice([-1, 1])`` (what
  ``relucore.sample`` uses) and a bit-unpacking idiom;
- an explicit-X trial, n = 40, d = 1e5: ``_core.fused_gram`` (X drawn in
  column blocks, K accumulated, X never whole) against numpy drawing X
  (``z * sqrt(lambda)``) and forming ``X X^T`` alone;
- the same trial end to end through ``relucore.sweep`` (``--only sweep``):
  the whole row (fused draw, GD, the minimum-norm QP, gram_* columns) per
  trial against numpy's X and ``X X^T`` alone.

Each case runs A, B, A, B, ... (``--repeat`` rounds) and keeps each side's
best CPU time of the process (``time.process_time``; BLAS and OpenMP are
held to one thread), so a ratio compares the two under the same load.

    python bench/bench_random.py [--repeat 5] [--n 40] [--d 100000] [--only sweep]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from relucore import _core  # noqa: E402
from relucore.theory.sampling import make_spectrum  # noqa: E402

# The (entry law, spectrum) pairs both trial benchmarks race numpy on.
LAWS = (
    ("gaussian", "isotropic"),
    ("gaussian", ("power", 1.0)),
    ("rademacher", "isotropic"),
    ("rademacher", ("power", 1.0)),
)


def race(fa, fb, repeat):
    """Best process CPU time of fa and of fb over ``repeat`` alternating rounds."""
    best = [np.inf, np.inf]
    for _ in range(repeat):
        for k, f in enumerate((fa, fb)):
            t0 = time.process_time()
            f()
            best[k] = min(best[k], time.process_time() - t0)
    return best


def variates(count, repeat):
    rng = np.random.default_rng(1)
    out = np.empty(count)
    counter = iter(range(1, 10**9))
    rows = []
    cases = [
        ("normal", lambda: rng.standard_normal(out=out), lambda: _core.counter_normals(7, next(counter), 0, out)),
        ("uniform", lambda: rng.random(out=out), lambda: _core.counter_uniforms(7, next(counter), 0, out)),
        (
            "Rademacher (numpy choice)",
            lambda: rng.choice(np.array([-1.0, 1.0]), size=count),
            lambda: _core.counter_rademacher(7, next(counter), 0, out),
        ),
        (
            "Rademacher (numpy bits)",
            lambda: 1.0 - 2.0 * np.unpackbits(np.frombuffer(rng.bytes(count // 8), np.uint8), bitorder="little"),
            lambda: _core.counter_rademacher(7, next(counter), 0, out),
        ),
    ]
    for name, fn_numpy, fn_counter in cases:
        t_np, t_c = race(fn_numpy, fn_counter, repeat)
        rows.append((name, count / t_np / 1e6, count / t_c / 1e6, t_np / t_c))
    print(f"variates ({count:.0e} per call, M variates per CPU second, one thread)")
    print(f"  {'variate':28s} {'numpy':>9s} {'counter':>9s} {'ratio':>7s}")
    for name, a, b, r in rows:
        print(f"  {name:28s} {a:9.0f} {b:9.0f} {r:6.2f}x")


def trials(n, d, repeat):
    rng = np.random.default_rng(2)
    counter = iter(range(1, 10**9))
    print(f"explicit-X trial n={n}, d={d} (ms of CPU, best of {repeat}; ratio = numpy / fused)")
    print(f"  {'z, spectrum':32s} {'numpy X, XX^T':>14s} {'fused':>8s} {'ratio':>7s} {'fused+keep X':>13s}")
    for z, spectrum in (*LAWS, ("uniform", "isotropic")):
        sq = np.sqrt(make_spectrum(spectrum, d).to_array())
        iso = spectrum == "isotropic"
        scale = None if iso else sq

        def draw_z(shape):
            if z == "gaussian":
                return rng.standard_normal(shape)
            if z == "rademacher":
                return rng.choice(np.array([-1.0, 1.0]), size=shape)
            return rng.uniform(-np.sqrt(3.0), np.sqrt(3.0), size=shape)

        def numpy_trial():
            X = draw_z((n, d))
            if not iso:
                X = X * sq
            return X @ X.T

        def fused_trial(keep=False):
            return _core.fused_gram(11, next(counter), n, d, z=z, scale=scale, keep_x=keep)

        t_np, t_f = race(numpy_trial, fused_trial, repeat)
        t_keep = race(lambda: fused_trial(True), lambda: None, max(2, repeat // 2))[0]
        label = f"{z}, {spectrum if iso else 'power 1.0'}"
        print(f"  {label:32s} {1e3 * t_np:14.1f} {1e3 * t_f:8.1f} {t_np / t_f:6.2f}x {1e3 * t_keep:13.1f}")


def sweep_trials(n, d, repeat, trials):
    """Explicit-X sweep trials end to end through ``relucore.sweep`` (sampling by the fused trial,
    the train call, the minimum-norm QP, the gram_* columns, the table) against numpy drawing X
    alone (the laws of ``relucore.sample`` from numpy's Generator, ``z * sqrt(lambda)``) and forming
    ``X @ X.T``, per trial; one thread each."""
    import relucore

    rng = np.random.default_rng(3)
    seeds = iter(range(1, 10**9))
    print(f"explicit-X sweep trial n={n}, d={d}, end to end (ms of CPU per trial, best of {repeat} rounds of {trials})")
    print(f"  {'z, spectrum':32s} {'numpy X, XX^T':>14s} {'relucore.sweep':>15s} {'ratio':>7s}")
    for z, spectrum in LAWS:
        sq = np.sqrt(make_spectrum(spectrum, d).to_array())
        iso = spectrum == "isotropic"
        grid = [{"n": n, "d": d, "z": z, "spectrum": "isotropic" if iso else ["power", 1.0]}]

        def numpy_trials():
            for _ in range(trials):
                if z == "gaussian":
                    X = rng.standard_normal((n, d))
                else:
                    X = rng.choice(np.array([-1.0, 1.0]), size=(n, d))
                if not iso:
                    X *= sq
                X @ X.T

        def sweep_trials():
            table = relucore.sweep(grid, trials=trials, rng=next(seeds), n_threads=1, progress=False)
            assert not (table["status"] == "error").any()

        t_np, t_sw = race(numpy_trials, sweep_trials, repeat)
        label = f"{z}, {spectrum if iso else 'power 1.0'}"
        print(f"  {label:32s} {1e3 * t_np / trials:14.1f} {1e3 * t_sw / trials:15.1f} {t_np / t_sw:6.2f}x")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--d", type=int, default=100_000)
    ap.add_argument("--count", type=int, default=4_000_000)
    ap.add_argument("--sweep-trials", type=int, default=8, help="trials per round of the sweep section")
    ap.add_argument("--only", choices=["variates", "trials", "sweep"], help="run one section")
    args = ap.parse_args()
    print(f"load: {os.getloadavg()}, generator path: {_core.counter_path()}")
    if args.only in (None, "variates"):
        variates(args.count, args.repeat)
    if args.only in (None, "trials"):
        trials(args.n, args.d, args.repeat)
    if args.only in (None, "sweep"):
        sweep_trials(args.n, args.d, args.repeat, args.sweep_trials)
    print(f"load: {os.getloadavg()}")


if __name__ == "__main__":
    main()
