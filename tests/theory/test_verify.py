"""relucore.verify and the self-check of certified limits (docs/math.md §13, "The self-check", "verify")."""

import dataclasses

import numpy as np
import pytest
from _random_problems import fig4_problem

import relucore as rc
from relucore import Status
from relucore.theory.verify import exact_matmul


def _problems():
    rng = np.random.default_rng(7)
    X4, y4 = fig4_problem(0)
    X5 = rng.standard_normal((5, 40)) / np.sqrt(40)
    y5 = rng.standard_normal(5)
    X12 = rng.standard_normal((12, 6)) / np.sqrt(6)  # n > d
    y12 = rng.standard_normal(12)
    return [(X4, y4, True), (X5, y5, True), (X12, y12, False)]


@pytest.mark.parametrize("engine", ["dual", "weights"])
@pytest.mark.parametrize("init", ["positive", "gaussian"])
def test_every_success_passes_verify(engine, init):
    for X, y, full_rank in _problems():
        if init == "positive" and not full_rank:
            continue
        kw = dict(signs=(1, -1), init=init, engine=engine)
        if init == "gaussian":
            kw["rng"] = 3
        r = rc.train(X, y, **kw)
        v = rc.verify(r, X, y)
        assert v.holds, str(v)
        names = {c.name for c in v.claims}
        assert {"beta = X W", "loss", "grad_norm"} <= names
        assert ("stationary (grad <= tol)" in names) == bool(r.success)


def test_batched_results_and_gram_mode_pass_verify():
    X, y = fig4_problem(1, d=300)
    Xb, yb = np.stack([X, X[::-1]]), np.stack([y, y[::-1]])
    r = rc.train(Xb, yb, signs=(1, -1))
    v = rc.verify(r, Xb, yb)
    assert v.holds and {c.problem for c in v.claims} == {0, 1}
    lim = rc.train(Xb, yb, signs=(1, -1), steps=np.inf)
    vl = rc.verify(lim, Xb, yb)
    assert all(c.holds for c in lim.certificate) and vl.holds, str(vl)
    assert "pattern" in {c.name for c in vl.claims}
    K = X @ X.T
    g = rc.train(None, y, gram=K, signs=(1, -1))
    vg = rc.verify(g, y=y, gram=K)
    assert vg.holds and "beta = K alpha" in {c.name for c in vg.claims}


@pytest.mark.parametrize("seed", [0, 2])
def test_certified_limits_flow_and_minnorm_pass_verify(seed):
    X, y = fig4_problem(seed, d=300)
    lim = rc.train(X, y, signs=(1, -1), steps=np.inf)
    assert lim.certificate.holds
    v = rc.verify(lim, X, y)
    assert v.holds, str(v)
    assert {"pattern", "margin", "stationary (r_A = 0)", "bound terms finite"} <= {c.name for c in v.claims}
    t = rc.Trainer(X, y, signs=(1, -1))
    assert rc.verify(t.run_to_limit(), X, y).holds
    f = rc.flow(X, y, signs=(1, -1))
    assert f.status == Status.certified and rc.verify(f, X, y).holds
    s = rc.minnorm(X, y, signs=(1, -1))
    vs = rc.verify(s, X, y)
    assert s.success and vs.holds, str(vs)


def test_corrupted_results_fail_with_the_claim_named():
    X, y = fig4_problem(3, d=300)
    lim = rc.train(X, y, signs=(1, -1), steps=np.inf)
    v = rc.verify(lim, X, y)
    assert v.holds
    bound = v["beta = X W"].bound
    # beta moved by 100 times the bound of beta = X W (W unchanged): beta = X W fails.
    beta = lim.beta.copy()
    k, i = np.unravel_index(np.argmax(lim.beta), lim.beta.shape)
    beta[k, i] += 100 * bound
    bad = rc.verify(dataclasses.replace(lim, beta=beta), X, y)
    assert not bad.holds and not bad["beta = X W"].holds and bad["beta = X W"].value > 50 * bound
    # W inconsistent with beta.
    W = lim.W.copy()
    W[0] *= 1 + 1e-9
    assert not rc.verify(dataclasses.replace(lim, W=W), X, y)["beta = X W"].holds
    # A wrong pattern: an inactive entry claimed active.
    pat = lim.certificate.pattern.copy()
    pat[np.unravel_index(np.argmin(lim.beta), lim.beta.shape)] = True
    wrong = dataclasses.replace(lim, certificate=dataclasses.replace(lim.certificate, pattern=pat))
    assert not rc.verify(wrong, X, y)["pattern"].holds
    # A wrong loss and a point that is not a limit.
    assert not rc.verify(dataclasses.replace(lim, loss=lim.loss + 1e-3), X, y)["loss"].holds
    early = rc.train(X, y, signs=(1, -1), steps=3)
    fake = dataclasses.replace(early, success=True)
    assert not rc.verify(fake, X, y)["stationary (grad <= tol)"].holds


def test_a_closed_form_case_where_the_bound_matters():
    # One neuron, orthonormal examples: the limit is beta = y exactly on positive labels. A beta
    # off by one unit in the last place of X W is within the bound; off by 2^20 units it is not.
    X = np.eye(3, 5) * 3.0
    y = np.array([1.0, 2.0, 0.5])
    lim = rc.train(X, y, signs=(1,), steps=np.inf)
    v = rc.verify(lim, X, y)
    assert v.holds and np.array_equal(lim.beta, (lim.W @ X.T))
    b = v["beta = X W"].bound
    assert 0 < b < 1e-12
    beta = lim.beta.copy()
    beta[0, 1] = np.nextafter(beta[0, 1], np.inf)
    assert rc.verify(dataclasses.replace(lim, beta=beta), X, y)["beta = X W"].holds
    beta[0, 1] += 2**20 * np.spacing(beta[0, 1])
    assert not rc.verify(dataclasses.replace(lim, beta=beta), X, y)["beta = X W"].holds


def test_exact_matmul_is_correctly_rounded():
    # Catastrophic cancellation: the plain product loses every digit; the exact one does not.
    a = np.array([[1e16, 1.0, -1e16]])
    b = np.array([[1.0], [1.0], [1.0]])
    assert exact_matmul(a, b)[0, 0] == 1.0 and (a @ b)[0, 0] != 1.0
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((3, 50)) * 1e200, rng.standard_normal((50, 2)) * 1e-250
    from fractions import Fraction

    ref = [[float(sum(Fraction(A[i, j]) * Fraction(B[j, k]) for j in range(50))) for k in range(2)] for i in range(3)]
    assert np.array_equal(exact_matmul(A, B), np.array(ref))


def test_verify_refuses_missing_data():
    X, y = fig4_problem(0, d=50)
    r = rc.train(X, y, signs=(1, -1), steps=2)
    with pytest.raises(TypeError, match="labels y"):
        rc.verify(r, X)
    with pytest.raises(TypeError, match="X is required"):
        rc.verify(r, y=y)


# ----------------------------------------------------------------------------- the self-check
def _reproducer():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((5, 40)) / np.sqrt(40)
    y = rng.standard_normal(5)
    return X, y


def test_tiny_scale_limit_is_not_certified_wrongly():
    # At X * 1e-100 the proof's terms underflow (B_k z is 0 * inf); it used to hold with margin inf
    # at a point 0.1 (relative) from the limit. The self-check refuses it.
    X, y = _reproducer()
    assert (y > 0).any() and (y < 0).any()
    ref = rc.train(X, y, signs=(1, -1), steps=np.inf)
    assert ref.certificate.holds and rc.verify(ref, X, y).holds
    r = rc.train(X * 1e-100, y, signs=(1, -1), steps=np.inf)
    if r.certificate.holds:  # once the prepare step normalises the scale, the limit is the right one
        assert np.allclose(r.beta, ref.beta, rtol=1e-12, atol=1e-12 * np.abs(ref.beta).max())
        assert np.isfinite(r.certificate.margin)
    else:
        assert "self-check" in r.certificate.reason and "not certified" in r.message
    assert not (r.certificate.holds and rc.verify(r, X * 1e-100, y).failed)


def test_huge_scale_flow_does_not_report_a_limit_that_is_not_stationary():
    rng = np.random.default_rng(1)
    X8 = rng.standard_normal((8, 300)) / np.sqrt(300)
    y8 = rng.standard_normal(8)
    # Out of the safe scale range the flow runs on the exactly rescaled copy: its limit verifies at 1e80 (it
    # reported a limit at a point with gradient norm 3.6e91); inside the range too.
    f = rc.flow(X8 * 1e80, y8, signs=(1, -1))
    assert f.status == Status.certified and rc.verify(f, X8 * 1e80, y8).holds
    X8 = np.ldexp(X8, 60)
    f = rc.flow(X8, y8, signs=(1, -1))
    if f.status == Status.certified:
        assert rc.verify(f, X8, y8).holds
    else:
        assert f.status == Status.uncertified and not f.certificate.holds and "self-check" in f.message
        assert not f.success


def test_certify_gd_reports_a_failed_self_check():
    # One try of the proof at the state of step 1 of the X * 1e-100 reproducer: the proof's slack is
    # NaN (0 * inf), which used to leave the margin at inf; the self-check names it (status 4).
    X, y = _reproducer()
    Xs = X * 1e-100
    r = rc.train(Xs, y, signs=(1, -1), steps=1)
    from relucore import _core

    c = _core.certify_gd(K=Xs @ Xs.T, y=y, signs=np.array([1.0, -1.0]), alpha=r.alpha, beta=r.beta, eta=r.eta)
    if c.status == _core.CertificateStatus.unverified:
        assert "not finite" in c.reason or "not stationary" in c.reason
    else:  # a normalised prepare step makes the proof's terms finite: it must then be right
        assert c.status != _core.CertificateStatus.holds or np.isfinite(c.margin)


def test_flow_fp_error_is_computed_from_the_data():
    X, y = fig4_problem(0, d=300)
    f1 = rc.flow(X, y, signs=(1, -1))
    f2 = rc.flow(X * 2.0**-3, y * 2.0**-6, signs=(1, -1))
    e1, e2 = f1.certificate.fp_error, f2.certificate.fp_error
    assert 0 < e1 < 1e-12 * np.abs(f1.beta).max()
    # Scaled by powers of two the computation is the same: fp_error scales with beta (2^-6).
    assert e2 == pytest.approx(e1 * 2.0**-6, rel=1e-12)


def test_random_problems_every_success_passes_verify_and_no_limit_fails_its_self_check():
    # n <= 13, m <= 4, n < d and n > d (Gaussian starts), positive/disjoint and Gaussian starts,
    # both engines; the run to the limit, the flow and a finite run. Ordinary problems: the
    # self-check never turns a certified limit into "not certified" here.
    rng = np.random.default_rng(12)
    checked = 0
    for t in range(60):
        n, m = int(rng.integers(2, 14)), int(rng.choice([1, 2, 3, 4]))
        d = int(rng.integers(max(2, n // 2), 3 * n + 40)) if t % 2 else int(rng.integers(n, 3 * n + 40))
        X, y = rng.standard_normal((n, d)) / np.sqrt(d), rng.standard_normal(n)
        signs = rng.choice([-1.0, 1.0], m)
        kw = dict(signs=signs, init="gaussian", rng=t, init_scale=0.3) if t % 2 else dict(signs=signs)
        if not t % 2:
            kw["init"] = "positive" if m <= 2 else "disjoint"
        try:
            lim = rc.train(X, y, steps=np.inf, **kw)
        except ValueError:
            continue  # refused (a singular K for an all-positive start)
        assert "self-check" not in lim.certificate.reason
        f = rc.flow(X, y, **kw)
        assert f.status != Status.uncertified, f.message
        fin = rc.train(X, y, engine="weights" if t % 3 == 0 else "dual", **kw)
        for r in (lim, f, fin):
            if r.success:
                v = rc.verify(r, X, y)
                assert v.holds, (t, str(v))
                checked += 1
    assert checked > 60


@pytest.mark.parametrize("scale", [1e-100, 2.0**-330, 1e100])
def test_no_wrong_certificate_across_the_reproducers_scale_family(scale):
    # The family: 13 of 16 problems at X * 1e-100 used to certify a wrong limit. Now each
    # either is not certified or is certified at the unscaled problem's limit (and passes verify).
    for seed in range(8):
        rng = np.random.default_rng(seed)
        X = rng.standard_normal((5, 40)) / np.sqrt(40)
        y = rng.standard_normal(5)
        ref = rc.train(X, y, signs=(1, -1), steps=np.inf)
        fref = rc.flow(X, y, signs=(1, -1))
        r = rc.train(X * scale, y, signs=(1, -1), steps=np.inf)
        # The data run exactly rescaled (relucore._scaling): the certificate is the unscaled problem's.
        assert r.certificate.holds == ref.certificate.holds
        if r.certificate.holds:
            assert rc.verify(r, X * scale, y).holds
            assert np.allclose(r.beta, ref.beta, rtol=1e-10, atol=1e-10 * np.abs(ref.beta).max())
        # The flow too: the unscaled problem's flow, its limit passing verify (its limit was 0.48 away at 1e-100).
        f = rc.flow(X * scale, y, signs=(1, -1))
        assert f.status == fref.status and (f.certificate is None) == (fref.certificate is None)
        np.testing.assert_allclose(f.beta, fref.beta, rtol=0, atol=1e-12 * np.abs(fref.beta).max())
        if f.success:
            assert rc.verify(f, X * scale, y).holds


def test_minnorm_solutions_pass_verify_and_a_moved_multiplier_fails_the_kkt_claims():
    rng = np.random.default_rng(5)
    for _ in range(10):
        n = int(rng.integers(3, 12))
        d = int(rng.integers(n, 60))
        X, y = rng.standard_normal((n, d)) / np.sqrt(d), rng.standard_normal(n)
        for signs in [(1,), (1, -1), (1, 1, -1)]:
            yy = np.abs(y) if len(signs) == 1 else y
            s = rc.minnorm(X, yy, signs=signs)
            if s.success:
                v = rc.verify(s, X, yy)
                assert v.holds and "KKT complementarity" in {c.name for c in v.claims}, str(v)
    # One multiplier of a strictly inactive entry moved (beta kept): complementarity and dual
    # feasibility fail, and beta = K alpha (Gram-only mode) and the objective with them.
    a = s.alpha.copy()
    a[0, np.argmin(s.beta[0])] += 1e-6
    bad = rc.verify(dataclasses.replace(s, alpha=a), gram=X @ X.T, y=yy)
    assert {c.name for c in bad.failed} >= {"KKT complementarity", "KKT dual feasibility", "beta = K alpha"}
    assert bad["interpolation"].holds
