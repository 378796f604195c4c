"""What the exact rescaling of the data (relucore._scaling) costs: an ordinary call, and a rescaled one.

Every call of ``train`` decides whether its data lie in the range that runs unscaled (the binary
exponents of max |X| and max |y|). As shipped, the C++ prepare step tests max_i K_ii and max |y_i|
right after forming K (O(n), ``PrepareRequest::rescale``, gd/prepare.hpp); only a flagged problem
pays the exact O(n d) decision, and is then prepared once, on its rescaled copy, in the same call.
This times the Figure 4 setting (n = 10, d = 2000, m = 2, all-positive start, default step; Lai et
al. 2026):

- a finite run and ``steps=np.inf`` as shipped against the same call with the decision turned off
  (``rescale=False`` in the prepare step: no test, nothing rescaled), alternating the two, best
  of several rounds; their ratio is what the normalisation costs an ordinary call;
- the Python side of the decision on an ordinary call (``not_scale_free`` and the read of the
  exponents; the C++ test is two passes over n numbers inside the prepare step) in isolation,
  as a share of the call;
- one call on data 2^-200 X (rescaled) against X, for ``train``, ``steps=np.inf``, ``flow`` and
  ``Trainer`` (construction and 100 steps).

    python bench/bench_scaling.py [--rounds 7]

Each row names the CPU model and ISA, and the load.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import relucore  # noqa: E402
import relucore.gd.prepare as prepare_module  # noqa: E402
from relucore.gd.rescale import not_scale_free  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import machine, problem  # noqa: E402


def per_call(fn, calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def best(fn, calls: int, rounds: int) -> float:
    return min(per_call(fn, calls) for _ in range(rounds))


def decision_rows(X, y, signs, rounds):
    shipped = prepare_module.prepare_start

    def without_decision(*args, **kwargs):
        return shipped(*args, **dict(kwargs, rescale=False))

    rows = []
    for label, steps, calls in (("train, Figure 4", 10000, 300), ("train steps=inf, Figure 4", np.inf, 150)):
        fn = lambda: relucore.train(X, y, signs=signs, steps=steps)  # noqa: E731
        ref = fn()
        with_test, without = np.inf, np.inf
        try:
            for _ in range(rounds):
                prepare_module.prepare_start = shipped
                with_test = min(with_test, per_call(fn, calls))
                prepare_module.prepare_start = without_decision
                without = min(without, per_call(fn, calls))
                assert np.array_equal(fn().W, ref.W)  # the decision changes no bit of an ordinary call
        finally:
            prepare_module.prepare_start = shipped
        rows.append((label, with_test, without))
    return rows


def python_side(calls: int = 200000) -> float:
    """Per call: the Python code an ordinary call runs for the decision (the C++ test is inside prepare)."""
    exponents = None

    def side():
        reason = not_scale_free("square", "positive")
        return reason or exponents is not None

    return per_call(side, calls)


def rescaled_rows(X, y, signs, rounds):
    tiny = np.ldexp(X, -200)
    calls = (
        ("train", lambda A: relucore.train(A, y, signs=signs), 100),
        ("train steps=inf", lambda A: relucore.train(A, y, signs=signs, steps=np.inf), 60),
        ("flow", lambda A: relucore.flow(A, y, signs=signs), 20),
        ("Trainer + 100 steps", lambda A: relucore.Trainer(A, y, signs=signs).step(100).W, 100),
    )
    rows = []
    for label, fn, n in calls:
        t_x, t_tiny = np.inf, np.inf
        for _ in range(rounds):
            t_x = min(t_x, per_call(lambda: fn(X), n))
            t_tiny = min(t_tiny, per_call(lambda: fn(tiny), n))
        rows.append((label, t_tiny, t_x))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    X, y, signs = problem(10, 2000, 2)
    rows = decision_rows(X, y, signs, args.rounds)
    side = python_side()
    resc = rescaled_rows(X, y, signs, max(3, args.rounds // 2))
    where = machine()
    load = os.getloadavg()[0]
    print(f"| call | as shipped (O(n) test) | without the decision | ratio | machine (load {load:.1f}) |")
    print("| --- | --- | --- | --- | --- |")
    for label, a, b in rows:
        print(f"| {label} | {a * 1e6:.1f} us | {b * 1e6:.1f} us | {a / b:.3f} | {where} |")
    print()
    print(f"| Python side of the decision per call | share of train | share of steps=inf | machine (load {load:.1f}) |")
    print("| --- | --- | --- | --- |")
    print(f"| {side * 1e6:.2f} us | {side / rows[0][1] * 100:.2f} % | {side / rows[1][1] * 100:.2f} % | {where} |")
    print()
    print(f"| call on 2^-200 X (rescaled) vs X | rescaled | X | ratio | machine (load {load:.1f}) |")
    print("| --- | --- | --- | --- | --- |")
    for label, a, b in resc:
        print(f"| {label} | {a * 1e6:.1f} us | {b * 1e6:.1f} us | {a / b:.3f} | {where} |")


if __name__ == "__main__":
    main()
