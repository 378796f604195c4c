"""What the exact rescaling of the data (relucore._scaling) costs a call that does not need it.

Every call of ``train`` decides whether its data lie in the range that runs unscaled (the binary
exponents of max |X| and max |y|). As shipped, the C++ prepare step tests max_i K_ii and max |y_i|
(O(n), gd/prepare.hpp: scale_may_be_out_of_range) and the exact O(n d) decision runs only where
that test flags a problem. This times the Figure 4 setting (n = 10, d = 2000, m = 2, all-positive
start, default step; Lai et al. 2026) as a finite run and as ``steps=np.inf``: as shipped, against
the exact decision forced on every call (what an O(n d) scan of X per call costs), alternating the
two, best of several rounds; and one call on data 2^-200 X (rescaled) against X.

    python bench/bench_scaling.py [--rounds 7]

Each row names the CPU model and ISA.
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import machine, problem  # noqa: E402


def per_call(fn, calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    X, y, signs = problem(10, 2000, 2)
    shipped = prepare_module._draws_once
    rows = []
    for label, steps, calls in (("train, Figure 4", 10000, 300), ("train steps=inf, Figure 4", np.inf, 150)):
        fn = lambda: relucore.train(X, y, signs=signs, steps=steps)
        ref = fn()
        with_plan, without = np.inf, np.inf
        for _ in range(args.rounds):
            prepare_module._draws_once = shipped
            with_plan = min(with_plan, per_call(fn, calls))
            prepare_module._draws_once = lambda *a: True  # the exact decision up front, on every call
            without = min(without, per_call(fn, calls))
            assert np.array_equal(fn().W, ref.W)  # the decision changes no bit of an ordinary call
        prepare_module._draws_once = shipped
        rows.append((label, with_plan, without))
    tiny = np.ldexp(X, -200)
    t_x = min(per_call(lambda: relucore.train(X, y, signs=signs), 100) for _ in range(3))
    t_tiny = min(per_call(lambda: relucore.train(tiny, y, signs=signs), 100) for _ in range(3))
    where = machine()
    load = os.getloadavg()[0]
    print(f"| call | as shipped (O(n) test) | exact O(n d) decision every call | ratio | machine (load {load:.1f}) |")
    print("| --- | --- | --- | --- | --- |")
    for label, a, b in rows:
        print(f"| {label} | {a * 1e6:.1f} us | {b * 1e6:.1f} us | {a / b:.3f} | {where} |")
    print(
        f"| train on 2^-200 X (rescaled) vs X | {t_tiny * 1e6:.1f} us | {t_x * 1e6:.1f} us | {t_tiny / t_x:.3f} | {where} |"
    )


if __name__ == "__main__":
    main()
