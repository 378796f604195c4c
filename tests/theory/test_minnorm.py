"""relucore.minnorm (Eq. 7, Lemma 3; Eq. 8/9, Lemma 4; Eq. 52), checked against independent solvers."""

import itertools

import numpy as np
import pytest
from scipy import optimize, sparse

import relucore as rc

clarabel = pytest.importorskip("clarabel")


def _clarabel_qp(d_vars, A_eq, b_eq, A_le, b_le):
    """min 1/2 ||w||^2 s.t. A_eq w = b_eq, A_le w <= b_le, solved by Clarabel (interior point) to 1e-12."""
    P = sparse.identity(d_vars, format="csc")
    q = np.zeros(d_vars)
    A = sparse.csc_matrix(np.vstack([A_eq, A_le]))
    b = np.concatenate([b_eq, b_le])
    cones = []
    if len(b_eq):
        cones.append(clarabel.ZeroConeT(len(b_eq)))
    if len(b_le):
        cones.append(clarabel.NonnegativeConeT(len(b_le)))
    s = clarabel.DefaultSettings()
    s.verbose = False
    s.tol_gap_abs = s.tol_gap_rel = 1e-12
    s.tol_feas = 1e-12
    s.tol_ktratio = 1e-10
    sol = clarabel.DefaultSolver(P, q, A, b, cones, s).solve()
    return np.array(sol.x), str(sol.status)


def test_m1_against_clarabel_primal_and_bvls_dual():
    ds = rc.sample(12, 40, labels="normal", rng=0)
    X, y = ds.X, ds.y
    sol = rc.minnorm(X, y)
    assert sol.success and sol.exact
    pos = y > 0
    w_ref, status = _clarabel_qp(40, X[pos], y[pos], X[~pos], np.zeros((~pos).sum()))
    assert status == "Solved"
    np.testing.assert_allclose(sol.w, w_ref, atol=1e-7 * np.linalg.norm(w_ref))
    # The dual as a bounded least-squares problem: min ||L^T z - L^{-1} c||, z_- <= 0 (BVLS, active set).
    K = X @ X.T
    L = np.linalg.cholesky(K)
    c = np.where(pos, y, 0.0)
    r = optimize.lsq_linear(
        L.T, np.linalg.solve(L, c), bounds=(np.full(12, -np.inf), np.where(pos, np.inf, 0.0)), method="bvls", tol=1e-14
    )
    np.testing.assert_allclose(sol.alpha[0], r.x, atol=1e-9 * np.max(np.abs(r.x)))


def test_m1_kkt_certificate_and_lemma3():
    ds = rc.sample(60, 3000, rng=1)
    sol = rc.minnorm(ds.X, ds.y)
    cert = sol.certificate
    assert cert.max_residual <= 1e-10, cert
    S = sol.active_set[0]
    assert np.all(S[ds.y > 0])
    np.testing.assert_array_equal(sol.active_indices[0], np.flatnonzero(S))
    # Lemma 3: w* = X_S^T (X_S X_S^T)^{-1} ytilde_S.
    XS = ds.X[S]
    w3 = XS.T @ np.linalg.solve(XS @ XS.T, np.maximum(ds.y[S], 0.0))
    np.testing.assert_allclose(sol.w, w3, atol=1e-10 * np.linalg.norm(w3))
    # All-positive labels: w* is the linear minimum-norm interpolator.
    yp = np.abs(ds.y)
    w_lin = ds.X.T @ np.linalg.solve(ds.X @ ds.X.T, yp)
    np.testing.assert_allclose(rc.minnorm(ds.X, yp).w, w_lin, atol=1e-10 * np.linalg.norm(w_lin))


def test_m1_gram_only_mode_and_negative_sign():
    ds = rc.sample(15, 200, rng=2)
    K = ds.X @ ds.X.T
    a = rc.minnorm(ds.X, ds.y)
    b = rc.minnorm(gram=K, y=ds.y)
    assert b.W is None
    np.testing.assert_allclose(b.alpha, a.alpha, atol=1e-10 * np.max(np.abs(a.alpha)))
    assert b.objective == pytest.approx(a.objective, rel=1e-10)
    # s = -1 fits the negative labels: the same as s = +1 on -y.
    c = rc.minnorm(ds.X, ds.y, signs=(-1,))
    d = rc.minnorm(ds.X, -ds.y)
    np.testing.assert_allclose(c.W, d.W, atol=1e-12 * np.linalg.norm(d.W))


def _bvls_dual(K, y):
    """The dual of Eq. (7) as a bounded least-squares problem, min ||L^T z - L^{-1} c||, z_- <= 0 (scipy BVLS)."""
    n = K.shape[0]
    L = np.linalg.cholesky(K)
    pos = y > 0
    c = np.where(pos, y, 0.0)
    r = optimize.lsq_linear(
        L.T, np.linalg.solve(L, c), bounds=(np.full(n, -np.inf), np.where(pos, np.inf, 0.0)), method="bvls", tol=1e-15
    )
    return r.x


def test_m1_low_dimension_uses_a_correct_active_set():
    # d barely above n: K far from a multiple of I, many active constraints.
    for seed in range(5):
        ds = rc.sample(20, 22, labels="normal", rng=10 + seed)
        sol = rc.minnorm(ds.X, ds.y)
        z = _bvls_dual(ds.X @ ds.X.T, ds.y)
        w_ref = ds.X.T @ z
        np.testing.assert_allclose(sol.w, w_ref, atol=1e-7 * max(1.0, np.linalg.norm(w_ref)))
        assert sol.certificate.max_residual <= 1e-9


def _lemma4_reference(X, y):
    """Best partition of Lemma 4 by solving program (9) for every partition with Clarabel (primal, R^{2d})."""
    n, d = X.shape
    pos = np.flatnonzero(y > 0)
    best = (np.inf, None)
    Z = np.zeros(d)
    for choice in itertools.product([0, 1], repeat=n):
        eq, beq, le, ble = [], [], [], []
        for i in range(n):
            x = X[i]
            if i in pos and choice[i] == 0:  # S1: wp x = y, wm x <= 0
                eq.append(np.r_[x, Z])
                beq.append(y[i])
                le.append(np.r_[Z, x])
                ble.append(0.0)
            elif i in pos:  # S2: wp x - wm x = y, wm x >= 0
                eq.append(np.r_[x, -x])
                beq.append(y[i])
                le.append(np.r_[Z, -x])
                ble.append(0.0)
            elif choice[i] == 0:  # S3: -wm x = y, wp x <= 0
                eq.append(np.r_[Z, -x])
                beq.append(y[i])
                le.append(np.r_[x, Z])
                ble.append(0.0)
            else:  # S4: wp x - wm x = y, wp x >= 0
                eq.append(np.r_[x, -x])
                beq.append(y[i])
                le.append(np.r_[-x, Z])
                ble.append(0.0)
        w, status = _clarabel_qp(2 * d, np.array(eq), np.array(beq), np.array(le), np.array(ble))
        if status != "Solved":
            continue
        val = 0.5 * float(w @ w)
        if val < best[0]:
            best = (val, w)
    return best


@pytest.mark.parametrize("d", [7, 9, 40])
def test_m2_global_optimum_against_clarabel_over_all_partitions(d):
    ds = rc.sample(6, d, rng=20 + d)
    sol = rc.minnorm(ds.X, ds.y, signs=(1, -1))
    val, w = _lemma4_reference(ds.X, ds.y)
    assert sol.exact and sol.search.complete
    assert sol.objective == pytest.approx(val, rel=1e-7, abs=1e-12)
    # Tied optima aside, the weights agree too.
    np.testing.assert_allclose(np.r_[sol.W[0], sol.W[1]], w, atol=1e-6 * np.linalg.norm(w))
    assert sol.certificate.max_residual <= 1e-9, sol.certificate
    pred = np.maximum(ds.X @ sol.W[0], 0) - np.maximum(ds.X @ sol.W[1], 0)
    np.testing.assert_allclose(pred, ds.y, atol=1e-10)
    assert set(np.unique(sol.partition)) <= {1, 2, 3, 4}
    assert np.all(np.isin(sol.partition[ds.y > 0], [1, 2])) and np.all(np.isin(sol.partition[ds.y < 0], [3, 4]))


def test_m2_branch_and_bound_equals_exhaustive_search_and_gram_mode():
    for seed in range(4):
        ds = rc.sample(9, 10, rng=30 + seed)
        a = rc.minnorm(ds.X, ds.y, signs=(1, -1))
        b = rc.minnorm(ds.X, ds.y, signs=(1, -1), method="exhaustive")
        assert b.search.nodes == 2**9
        assert a.objective == pytest.approx(b.objective, rel=1e-10)
        s = a.search
        assert s.complete and s.min_pruned_bound >= a.objective * (1 - 1e-9)
        c = rc.minnorm(gram=ds.X @ ds.X.T, y=ds.y, signs=(1, -1))
        assert c.W is None and c.objective == pytest.approx(a.objective, rel=1e-9)


def test_m2_n16_exact():
    for d in (17, 30, 2000):
        ds = rc.sample(16, d, rng=40 + d)
        sol = rc.minnorm(ds.X, ds.y, signs=(1, -1))
        assert sol.exact and sol.search.n_patterns == 2**16
        assert sol.certificate.max_residual <= 1e-8


def test_m_many_exact_search_and_budget():
    # m = 3 with two positive neurons: pieces with all three neurons active exist.
    ds = rc.sample(4, 6, rng=50)
    a = rc.minnorm(ds.X, ds.y, signs=(1, 1, -1))
    b = rc.minnorm(ds.X, ds.y, signs=(1, 1, -1), method="exhaustive")
    assert a.exact and a.objective == pytest.approx(b.objective, rel=1e-9)
    h = np.maximum(a.beta, 0).T @ np.array([1.0, 1.0, -1.0])
    np.testing.assert_allclose(h, ds.y, atol=1e-10)
    # Independent check: Clarabel on the primal (in R^{3d}) of every activation pattern.
    X, y = ds.X, ds.y
    sg = np.array([1.0, 1.0, -1.0])
    n, d = X.shape
    best = np.inf
    subsets = [A for r in range(4) for A in itertools.combinations(range(3), r)]
    for pattern in itertools.product(subsets, repeat=n):
        # sum_{k in A} s_k relu(.) = y_i needs a neuron of the sign of y_i in A.
        if any(not any(sg[k] * y[i] > 0 for k in A) for i, A in enumerate(pattern)):
            continue
        eq, beq, le, ble = [], [], [], []
        for i, A in enumerate(pattern):
            row = np.zeros(3 * d)
            for k in range(3):
                unit = np.zeros(3 * d)
                unit[k * d : (k + 1) * d] = X[i]
                le.append(-unit if k in A else unit)
                ble.append(0.0)
                if k in A:
                    row += sg[k] * unit
            eq.append(row)
            beq.append(y[i])
        w, status = _clarabel_qp(3 * d, np.array(eq), np.array(beq), np.array(le), np.array(ble))
        if status == "Solved":
            best = min(best, 0.5 * float(w @ w))
    assert a.objective == pytest.approx(best, rel=1e-7)
    # A tiny budget: labelled as a bound, with a valid lower bound.
    c = rc.minnorm(ds.X, ds.y, signs=(1, 1, -1), max_nodes=2)
    assert not c.exact and c.kind.startswith("upper bound")
    assert c.search.lower_bound <= a.objective + 1e-12 and c.objective >= a.objective * (1 - 1e-12)


def test_errors():
    ds = rc.sample(5, 3, rng=0)
    with pytest.raises(ValueError, match="singular|full row rank"):
        rc.minnorm(ds.X, ds.y)
    ds = rc.sample(4, 10, labels="uniform", rng=1)
    with pytest.raises(ValueError, match="no neuron"):
        rc.minnorm(ds.X, np.abs(ds.y) * -1, signs=(1, 1))


def test_primal_active_set_fallback_alone():
    """The C++ fallback (primal active-set method) on its own gives the same dual solution."""
    from relucore import _core

    for seed in range(3):
        ds = rc.sample(25, 27, labels="normal", rng=60 + seed)
        K = ds.X @ ds.X.T
        n = 25
        pos = ds.y > 0
        c = np.where(pos, ds.y, 0.0)
        settings = _core.QPSettings()
        settings.max_block_iter = settings.stall_limit = 1
        out = _core.qp_box(H=K, c=c, lower=np.full(n, -np.inf), upper=np.where(pos, np.inf, 0.0), settings=settings)
        assert out.status == rc.Status.optimal and out.used_fallback
        assert out.block_iterations == 1 and out.primal_iterations >= 1
        ref = _bvls_dual(K, ds.y)
        np.testing.assert_allclose(out.z, ref, atol=1e-8 * np.max(np.abs(ref)))


def test_qp_box_returns_the_bound_result_the_public_solution_views():
    """_core.qp_box returns a QPResult (no dict); minnorm's m = 1 solution exposes its z and iteration counts."""
    from relucore import _core
    from relucore.theory.minnorm.single import minnorm_single

    ds = rc.sample(15, 40, labels="normal", rng=3)
    K = ds.X @ ds.X.T
    pos = ds.y > 0
    lower, upper = np.full(15, -np.inf), np.where(pos, np.inf, 0.0)
    out = _core.qp_box(H=K, c=np.where(pos, ds.y, 0.0), lower=lower, upper=upper)
    assert isinstance(out, _core.QPResult) and out.status == rc.Status.optimal
    assert out.z.shape == out.r.shape == (15,) and out.nu.shape == (0,) and out.state.dtype == np.int8
    # The KKT conditions of the box QP, from the returned fields alone.
    np.testing.assert_allclose(out.r, K @ out.z - np.where(pos, ds.y, 0.0), atol=1e-12 * np.max(np.abs(K)))
    at_upper = out.state == 1
    assert np.all(~pos[at_upper]) and np.all(out.z[at_upper] == 0.0) and np.all(out.r[at_upper] <= 1e-12)
    assert np.all(out.state != -1) and np.all(out.z <= upper)
    assert np.max(np.abs(out.r[~at_upper])) <= 1e-10 * np.max(np.abs(ds.y))
    sol = minnorm_single(None, K, ds.y, 1.0)
    np.testing.assert_array_equal(sol.alpha[0], out.z)
    assert sol.nit == out.block_iterations + out.primal_iterations


def test_qp_primal_returns_a_bound_result_with_kkt_fields():
    """min 1/2 z'Hz - c'z on the simplex (sum z = 1, z >= 0): the returned z, nu, r satisfy the KKT conditions;
    an infeasible start is reported, with r and nu zero-filled to their sizes."""
    from relucore import _core

    rng = np.random.default_rng(4)
    A = rng.standard_normal((8, 8))
    H = A @ A.T + np.eye(8)
    c = rng.standard_normal(8)
    E, e = np.ones((1, 8)), np.array([1.0])
    lower, upper = np.zeros(8), np.full(8, np.inf)
    z0, st0 = np.full(8, 1 / 8), np.zeros(8, dtype=np.int8)
    out = _core.qp_primal(H=H, c=c, E=E, e=e, lower=lower, upper=upper, z0=z0, state0=st0)
    assert isinstance(out, _core.QPResult) and out.status == rc.Status.optimal and not out.used_fallback
    assert out.nu.shape == (1,) and out.state.shape == (8,)
    z, r = out.z, out.r
    assert abs(z.sum() - 1.0) <= 1e-14 and np.all(z >= 0)
    np.testing.assert_allclose(r, H @ z - c + E.T @ out.nu, atol=1e-12 * np.max(np.abs(H)))
    bound = out.state == -1
    assert np.all(z[bound] == 0.0) and np.all(r[bound] >= -1e-12) and np.max(np.abs(r[~bound])) <= 1e-12
    bad = _core.qp_primal(H=H, c=c, E=E, e=e, lower=lower, upper=upper, z0=np.full(8, -1.0), state0=st0)
    assert bad.status == rc.Status.infeasible_start
    np.testing.assert_array_equal(bad.r, np.zeros(8))
    np.testing.assert_array_equal(bad.nu, np.zeros(1))


@pytest.mark.parametrize("signs", [(0.5, -2.0), (-1.0, 1.0), (1.0, -1.0, 1.0), (1.0, 1.0, -1.0, -1.0)])
def test_general_signs_and_zero_labels_bnb_equals_exhaustive(signs):
    n = {2: 6, 3: 4, 4: 3}[len(signs)]  # the exhaustive reference visits up to (2^m)^n patterns
    for seed in range(3):
        ds = rc.sample(n, 8, rng=70 + seed)
        y = ds.y.copy()
        y[seed] = 0.0  # a zero label: both neurons inactive, or equal and active
        a = rc.minnorm(ds.X, y, signs=signs)
        b = rc.minnorm(ds.X, y, signs=signs, method="exhaustive")
        assert a.exact and b.exact
        assert a.objective == pytest.approx(b.objective, rel=1e-9, abs=1e-14)
        # Every pattern is accounted for: explored, pruned, or a permutation of interchangeable neurons.
        assert a.search.patterns_pruned + a.search.patterns_by_symmetry <= a.search.n_patterns
        h = np.asarray(signs) @ np.maximum(ds.X @ a.W.T, 0.0).T
        np.testing.assert_allclose(h, y, atol=1e-10)
        assert a.certificate.max_residual <= 1e-9


def test_m2_general_signs_against_clarabel():
    """s = (0.5, -2): program (9) with scaled outer weights, every partition by Clarabel."""
    ds = rc.sample(5, 7, rng=80)
    X, y = ds.X, ds.y
    sp, sm = 0.5, -2.0
    sol = rc.minnorm(X, y, signs=(sp, sm))
    d = X.shape[1]
    Z = np.zeros(d)
    best = np.inf
    for choice in itertools.product([0, 1], repeat=5):
        eq, beq, le, ble = [], [], [], []
        for i in range(5):
            x = X[i]
            if y[i] > 0 and choice[i] == 0:  # only w_plus active: sp x'wp = y, wm x <= 0
                eq.append(np.r_[sp * x, Z])
                beq.append(y[i])
                le.append(np.r_[Z, x])
                ble.append(0.0)
            elif y[i] < 0 and choice[i] == 0:  # only w_minus active
                eq.append(np.r_[Z, sm * x])
                beq.append(y[i])
                le.append(np.r_[x, Z])
                ble.append(0.0)
            else:  # both active
                eq.append(np.r_[sp * x, sm * x])
                beq.append(y[i])
                le.append(np.r_[-x, Z])
                ble.append(0.0)
                le.append(np.r_[Z, -x])
                ble.append(0.0)
        w, status = _clarabel_qp(2 * d, np.array(eq), np.array(beq), np.array(le), np.array(ble))
        if status == "Solved":
            best = min(best, 0.5 * float(w @ w))
    assert sol.objective == pytest.approx(best, rel=1e-7)


@pytest.mark.parametrize("signs", [(1,), (1, -1)])
@pytest.mark.parametrize("k", [-500, 500])
def test_minnorm_is_exactly_scale_invariant(signs, k):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((8, 60))
    y = rng.uniform(0.1, 1, 8) * rng.choice([-1.0, 1.0], 8)
    if len(signs) == 1:
        y = np.abs(y)
    a = rc.minnorm(X, y, signs=signs)
    b = rc.minnorm(X * 2.0**k, y, signs=signs)
    assert a.exact and b.exact and b.success
    # X -> c X maps W -> W / c, alpha -> alpha / c^2, the objective -> objective / c^2; beta stays.
    assert np.array_equal(b.W, a.W * 2.0**-k)
    assert np.array_equal(b.alpha, a.alpha * 2.0 ** (-2 * k))
    assert np.array_equal(b.beta, a.beta) and b.objective == a.objective * 2.0 ** (-2 * k)
    assert b.certificate == a.certificate
    g = rc.minnorm(gram=(X @ X.T) * 2.0 ** (2 * k), y=y, signs=signs)
    ag = rc.minnorm(gram=X @ X.T, y=y, signs=signs)
    assert np.array_equal(g.alpha, ag.alpha * 2.0 ** (-2 * k)) and g.objective == ag.objective * 2.0 ** (-2 * k)
    # y -> l y maps W -> l W.
    c = rc.minnorm(X, y * 2.0**k, signs=signs)
    assert np.array_equal(c.W, a.W * 2.0**k) and np.array_equal(c.beta, a.beta * 2.0**k)


def test_minnorm_tiny_data_is_solved_or_refused_never_nan():
    sol = rc.minnorm(np.eye(2) * 1e-100, [1.0, -1.0], signs=(1, -1))
    assert sol.success and sol.exact and np.allclose(sol.W, np.diag([1e100, 1e100]))
    assert np.isfinite(sol.W).all() and np.isfinite(sol.certificate.max_residual)
    for call in (
        lambda: rc.minnorm([[1e-155]], [1.0]),
        lambda: rc.minnorm(None, [1.0, 2.0], gram=np.eye(2) * 1e-310),
        lambda: rc.minnorm(np.eye(2) * 1e-155, [1.0, -1.0], signs=(1, -1)),
    ):
        with pytest.raises(ValueError, match="too small .* float64 cannot represent"):
            call()


def test_budget_and_time_limit_report_a_valid_positive_lower_bound(capsys):
    ds = rc.sample(5, 60, rng=2)  # a draw whose search the default budget proves (rng=1 does not)
    signs = (1, -1, 1, -1)
    full = rc.minnorm(ds.X, ds.y, signs=signs, time_limit=None)
    assert full.exact and full.search.lower_bound == pytest.approx(full.objective, rel=1e-12)
    cut = rc.minnorm(ds.X, ds.y, signs=signs, max_nodes=3)
    assert not cut.exact and cut.kind.startswith("upper bound")
    # The root has no relaxed constraint here (two neurons of each sign), so the
    # parents' bounds are 0; the open subtrees' own relaxations give a positive bound.
    assert 0 < cut.search.lower_bound <= full.objective * (1 + 1e-12)
    assert cut.objective >= full.objective * (1 - 1e-12)
    assert "search budget of 3 QPs" in cut.message and "proven lower bound" in cut.message
    timed = rc.minnorm(ds.X, ds.y, signs=signs, time_limit=1e-4)
    assert not timed.exact and "time limit of 0.0001 s was reached" in timed.message
    assert 0 <= timed.search.lower_bound <= full.objective * (1 + 1e-12)
    capsys.readouterr()
    rc.minnorm(ds.X, ds.y, signs=signs, max_nodes=3, progress=True)
    assert "minnorm" in capsys.readouterr().err
    rc.minnorm(ds.X, ds.y, signs=signs, max_nodes=3, progress=False)
    assert capsys.readouterr().err == ""
    with pytest.raises(ValueError, match="time_limit must be positive"):
        rc.minnorm(ds.X, ds.y, signs=signs, time_limit=0)
    with pytest.raises(TypeError, match="progress must be None, True or False"):
        rc.minnorm(ds.X, ds.y, signs=signs, progress="yes")


def test_old_tol_is_refused_naming_solver_tol():
    """minnorm's pruning tolerance is solver_tol (tol is train's gradient threshold): the 0.x tol= names it."""
    X = np.eye(3)
    y = np.array([1.0, -1.0, 0.5])
    with pytest.raises(TypeError, match="0.x keyword tol=.*use solver_tol="):
        rc.minnorm(X, y, signs=(1, -1), tol=1e-8)
    sol = rc.minnorm(X, y, signs=(1, -1), solver_tol=1e-8)
    assert sol.search.solver_tol == 1e-8


@pytest.mark.parametrize("where", ["X", "y", "gram", "signs"])
def test_minnorm_refuses_non_finite_input(where):
    """A NaN or inf anywhere in the input is a ValueError naming it (never a NaN 'solution')."""
    ds = rc.sample(5, 12, rng=0)
    kw = dict(X=ds.X.copy(), y=ds.y.copy(), signs=np.array([1.0, -1.0]))
    if where == "gram":
        kw = dict(gram=ds.X @ ds.X.T, y=ds.y.copy(), signs=np.array([1.0]))
    kw[where][(1,) * kw[where].ndim] = np.nan if where != "y" else np.inf
    with pytest.raises(ValueError, match=f"{where} contains"):
        rc.minnorm(**kw)


def test_qp_bindings_refuse_non_finite_data():
    """The C++ solvers check their data (std::invalid_argument -> ValueError), not only relucore.minnorm."""
    from relucore import _core

    ds = rc.sample(6, 12, rng=1)
    K = ds.X @ ds.X.T
    lower, upper = np.full(6, -np.inf), np.full(6, np.inf)
    bad = K.copy()
    bad[2, 3] = np.nan
    with pytest.raises(ValueError, match=r"H must be finite, got nan at entry \(2, 3\)"):
        _core.qp_box(H=bad, c=ds.y, lower=lower, upper=upper)
    with pytest.raises(ValueError, match="lower > upper"):
        _core.qp_box(H=K, c=ds.y, lower=np.full(6, np.nan), upper=upper)
    z0, st0 = np.full(6, 1 / 6), np.zeros(6, dtype=np.int8)
    E, e = np.ones((1, 6)), np.array([1.0])
    with pytest.raises(ValueError, match="c must be finite, got inf at entry 0"):
        _core.qp_primal(H=K, c=np.r_[np.inf, ds.y[1:]], E=E, e=e, lower=lower, upper=upper, z0=z0, state0=st0)
    with pytest.raises(ValueError, match="z must be finite"):
        _core.qp_primal(H=K, c=ds.y, E=E, e=e, lower=lower, upper=upper, z0=np.full(6, np.nan), state0=st0)
