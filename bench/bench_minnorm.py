"""minnorm (m = 1, Eq. 7) at n = 500, d = 20000: relucore vs scipy BVLS and Clarabel on the same dual QP.

    python bench/bench_minnorm.py

relucore: everything included (validation, K = X X^T in C++, the dual QP by the
C++ active-set method, w = X^T z, the KKT certificate computed with X).
Peers get K for free (formed once by numpy, time reported separately) and solve
the dual ``min 1/2 z'Kz - y+'z+  s.t. z- <= 0``: scipy.optimize.lsq_linear
(method="bvls") on ``||L^T z - L^{-1} c||`` (Cholesky L of K), and Clarabel
(interior point) on the QP directly.
"""

import numpy as np
from _common import best_of
from scipy import optimize, sparse

import relucore as rc


def main(n=500, d=20000, seed=0):
    ds = rc.sample(n, d, rng=seed)
    X, y = ds.X, ds.y
    t_rc, sol = best_of(lambda: rc.minnorm(X, y))
    from relucore._inputs import gram_of as _gram

    t_K, K = best_of(lambda: _gram(X))
    t_npK, _ = best_of(lambda: X @ X.T)
    pos = y > 0
    c = np.where(pos, y, 0.0)
    lo, hi = np.full(n, -np.inf), np.where(pos, np.inf, 0.0)

    def bvls():
        L = np.linalg.cholesky(K)
        return optimize.lsq_linear(L.T, np.linalg.solve(L, c), bounds=(lo, hi), method="bvls", tol=1e-14).x

    t_bvls, z_bvls = best_of(bvls, repeat=1)
    t_g, sol_g = best_of(lambda: rc.minnorm(gram=K, y=y))
    rows = [
        ("relucore.minnorm (all in)", t_rc, 0.0),
        ("relucore.minnorm(gram=K)", t_g, np.max(np.abs(sol_g.alpha[0] - sol.alpha[0])) / np.max(np.abs(sol.alpha[0]))),
    ]
    rows.append(("scipy BVLS (K given)", t_bvls, np.max(np.abs(z_bvls - sol.alpha[0])) / np.max(np.abs(z_bvls))))
    try:
        import clarabel

        def clar():
            P = sparse.csc_matrix(np.triu(K))
            A = sparse.csc_matrix(np.eye(n)[~pos])
            s = clarabel.DefaultSettings()
            s.verbose = False
            res = clarabel.DefaultSolver(
                P, -c, A, np.zeros((~pos).sum()), [clarabel.NonnegativeConeT(int((~pos).sum()))], s
            ).solve()
            return np.array(res.x)

        t_cl, z_cl = best_of(clar, repeat=1)
        rows.append(("Clarabel (K given)", t_cl, np.max(np.abs(z_cl - sol.alpha[0])) / np.max(np.abs(z_cl))))
    except ImportError:
        pass
    print(
        f"n={n} d={d}: K by relucore {t_K:.3f} s, by numpy X @ X.T {t_npK:.3f} s; "
        f"|S| = {int(sol.active_set.sum())}, KKT max residual {sol.certificate.max_residual:.1e}, {sol.nit} active-set solves"
    )
    for name, t, diff in rows:
        print(f"{name:28s} {t:8.3f} s   x relucore {t / t_rc:6.2f}   max rel diff of z {diff:.1e}")


if __name__ == "__main__":
    main()
