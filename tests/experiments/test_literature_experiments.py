"""The literature experiments (Kou et al. 2023, step size, Dana et al. 2025): their helpers against independent references,
and their claims at the quick size."""

import numpy as np
import pytest
from _problems import fig4_problem

import relucore
from relucore import experiments
from relucore.experiments import dana2025, kou2023, step_size

# ----------------------------------------------------------------------------- helpers


def test_log_recorded_run_is_an_exact_continuation():
    rng = np.random.default_rng(0)
    n, d, m = 6, 80, 4
    X = rng.standard_normal((n, d))
    y = np.array([1.0, -1.0, 1.0, -1.0, 1.0, -1.0])
    a = np.array([0.25, 0.25, -0.25, -0.25])
    W0 = 1e-2 * rng.standard_normal((m, d))
    kw = dict(signs=a, loss="logistic", activation="leaky_relu", leaky_slope=0.1, eta=0.5)
    met = kou2023.log_recorded_run(X, y, W0=W0, steps=250, per_decade=5, **dict(kw))
    assert met.steps[0] == 0 and met.steps[-1] == 250
    assert np.all(np.diff(met.steps) > 0)
    ref = relucore.train(X, y, init=W0, steps=250, record=1, tol=0.0, **kw)
    full = relucore.training_metrics(ref, X, y)
    idx = met.steps
    np.testing.assert_allclose(met.stable_rank, full.stable_rank[idx], rtol=1e-9)
    np.testing.assert_allclose(met.margin_ratio, full.margin_ratio[idx], rtol=1e-9)
    np.testing.assert_allclose(met.loss, full.loss[idx], rtol=1e-9)


def _orthogonal_problem(rng, n, d):
    Q = np.linalg.qr(rng.standard_normal((d, n)))[0].T  # orthonormal rows
    X = Q * rng.uniform(5.0, 20.0, (n, 1))
    y = rng.uniform(0.1, 1.0, n) * np.array([1.0, -1.0] * (n // 2))
    return X, y


def test_orthogonal_minnorm_closed_form_is_feasible_and_matches_the_qp():
    rng = np.random.default_rng(1)
    X, y = _orthogonal_problem(rng, 8, 30)
    K = X @ X.T
    alpha = step_size.orthogonal_minnorm(K, y)
    W = alpha @ X
    h = np.maximum(W[0] @ X.T, 0) - np.maximum(W[1] @ X.T, 0)
    np.testing.assert_allclose(h, y, atol=1e-12)
    # w+ = sum_{y>0} y_i x_i/||x_i||^2, w- = sum_{y<0} -y_i x_i/||x_i||^2
    k = np.sum(X**2, axis=1)
    np.testing.assert_allclose(W[0], ((y > 0) * y / k) @ X, atol=1e-14)
    np.testing.assert_allclose(W[1], ((y < 0) * -y / k) @ X, atol=1e-14)
    np.testing.assert_allclose(step_size._own_sign_qp(K, y), alpha, atol=1e-10 * np.abs(alpha).max())


def test_orthogonal_minnorm_beats_random_feasible_points():
    """Per example the cost is (p^2 + q^2)/||x||^2 with relu(p) - relu(q) = y: q = 0 (or p = 0) is optimal."""
    rng = np.random.default_rng(2)
    X, y = _orthogonal_problem(rng, 6, 20)
    K = X @ X.T
    a_star = step_size.orthogonal_minnorm(K, y)
    best = np.einsum("kn,nj,kj->", a_star, K, a_star)
    k = np.diag(K)
    for _ in range(200):
        extra = rng.uniform(0, 1, y.size)  # the other neuron also active by `extra`
        p = np.where(y > 0, y + extra, extra)
        q = np.where(y > 0, extra, -y + extra)
        assert np.sum((p**2 + q**2) / k) > best


def test_orthogonal_gap_matches_the_one_step_overshoot_formula():
    """Orthogonal data, tiny eps: the wrong-sign neuron's beta_i freezes at eps - eta k_i |y_i| after
    one step, everything else reaches W*, so ||W_GD - W*||^2 = sum_i (eta k_i |y_i| - eps)^2 / k_i."""
    rng = np.random.default_rng(3)
    X, y = _orthogonal_problem(rng, 8, 40)
    K = X @ X.T
    K = np.diag(np.diag(K))
    k = np.diag(K)
    eps = 1e-7
    astar = step_size.orthogonal_minnorm(K, y)[None]
    for eta_units in (0.01, 0.1, 0.5):
        gaps, conv = step_size._gd_gaps(K[None], y[None], astar, [eta_units], conv_steps=40, eps=eps)
        eta = eta_units / k.max()
        pred = np.sqrt(np.sum((eta * k * np.abs(y) - eps) ** 2 / k))
        assert conv == 1.0
        assert gaps[0, 0] == pytest.approx(pred, rel=1e-8)


def test_minnorm_alpha_is_a_valid_interpolant_on_near_orthogonal_data():
    X, y = fig4_problem(4, n=8, d=400)
    K = X @ X.T
    alpha, source = step_size.minnorm_alpha(K, y)
    beta = alpha @ K
    np.testing.assert_allclose(np.maximum(beta[0], 0) - np.maximum(beta[1], 0), y, atol=1e-9)
    # Never worse than the own-sign partition (each example on its own-sign neuron only: two
    # single-ReLU problems), one feasible piece of Lemma 4; the exact search may find a better
    # piece (here it does: one positive example is shared by both neurons, partition S2).
    norm2 = float(np.einsum("ki,ij,kj->", alpha, K, alpha))
    own = step_size._own_sign_qp(K, y)
    own_norm2 = float(np.einsum("kn,nj,kj->", own, K, own))
    assert norm2 <= own_norm2 * (1 + 1e-9)
    single = relucore.minnorm(X, y, signs=(1,)).W, relucore.minnorm(X, -y, signs=(1,)).W
    assert own_norm2 == pytest.approx(sum(float(np.sum(w**2)) for w in single), rel=1e-9)
    assert "minnorm" in source or "QP" in source


@pytest.mark.skipif(not hasattr(relucore, "minnorm"), reason="relucore.minnorm (theory branch) not merged yet")
def test_own_sign_qp_agrees_with_the_exact_search_on_near_orthogonal_data():
    X, y = fig4_problem(6, n=8, d=2000)
    K = X @ X.T
    exact = relucore.minnorm(None, y, signs=(1, -1), gram=K)
    own = step_size._own_sign_qp(K, y)
    # The exact optimum is never worse; on near-orthogonal data it is the own-sign partition.
    assert exact.objective <= 0.5 * np.einsum("kn,nj,kj->", own, K, own) * (1 + 1e-9)
    np.testing.assert_allclose(exact.alpha, own, atol=1e-8 * np.abs(own).max())


def test_wilson_interval_known_values():
    lo, hi = dana2025.wilson_interval(np.array([5, 0, 10]), np.array([10, 10, 10]))
    np.testing.assert_allclose(lo, [0.236593, 0.0, 0.722467], atol=1e-6)
    np.testing.assert_allclose(hi, [0.763407, 0.277533, 1.0], atol=1e-6)


def test_growth_exponent_is_weighted_least_squares_in_log_log():
    """Exact on a power law, and its interval from the points' intervals: with equal log widths w,
    the slope's standard error is (w / 2z) / sqrt(sum (log d - mean)^2)."""
    from scipy.stats import norm

    d = np.array([10.0, 20.0, 40.0])
    est = 3.0 * d**1.5
    q, lo, hi = dana2025.growth_exponent(d, est, est / 1.1, est * 1.1, 0.9)
    assert q == pytest.approx(1.5, abs=1e-12)
    z = norm.ppf(0.95)
    se = (2 * np.log(1.1) / (2 * z)) / np.sqrt(np.sum((np.log(d) - np.log(d).mean()) ** 2))
    assert hi - q == pytest.approx(z * se, rel=1e-12) and q - lo == pytest.approx(z * se, rel=1e-12)


def test_trained_outer_gd_step_is_the_gradient():
    """One step with a tiny eta moves (W, a) by -eta * gradient; compare with central differences."""
    rng = np.random.default_rng(5)
    B, n, d, p = 2, 5, 4, 3
    X, y = dana2025._sphere_data(rng, B, n, d)
    mask = np.ones((B, n))
    mask[1, -1] = 0.0  # a padded example contributes nothing
    W = rng.standard_normal((B, p, d))
    a = rng.standard_normal((B, p))
    eta = np.array([1e-3, 2e-3])

    def loss(Wb, ab, b):
        h = (ab @ np.maximum(Wb @ X[b].T, 0)) / np.sqrt(p)
        return 0.5 * np.sum(mask[b] * (h - y[b]) ** 2)

    _, W1, a1 = dana2025.trained_outer_gd(X, y, mask, W, a, eta, 1)
    h_ = 1e-6
    for b in range(B):
        gW = (W[b] - W1[b]) / eta[b]
        ga = (a[b] - a1[b]) / eta[b]
        for j in range(p):
            e = np.zeros(p)
            e[j] = h_
            assert ga[j] == pytest.approx((loss(W[b], a[b] + e, b) - loss(W[b], a[b] - e, b)) / (2 * h_), abs=1e-7)
            for c in range(d):
                E = np.zeros((p, d))
                E[j, c] = h_
                fd = (loss(W[b] + E, a[b], b) - loss(W[b] - E, a[b], b)) / (2 * h_)
                assert gW[j, c] == pytest.approx(fd, abs=1e-7)


def _sphere_problems_and_numpy_run(seed, sizes, steps):
    """T problems of n points on the sphere in R^d, a start of p neurons and the step 0.25 / mu_1(K) each,
    and the reference run ``trained_outer_gd`` (numpy) from it: ``(X, y, W0, a0, eta, (loss, W, a))``."""
    T, n, d, p = sizes
    rng = np.random.default_rng(seed)
    X, y = dana2025._sphere_data(rng, T, n, d)
    W0 = rng.standard_normal((T, p, d)) / np.sqrt(d)
    a0 = rng.standard_normal((T, p))
    eta = 0.25 / np.linalg.eigvalsh(X @ np.swapaxes(X, 1, 2))[:, -1]
    return X, y, W0, a0, eta, dana2025.trained_outer_gd(X, y, np.ones((T, n)), W0, a0, eta, steps)


def test_numpy_and_meanfield_engines_take_the_same_steps():
    """trained_outer_gd (numpy, batched) against relucore.meanfield.train (C++), same map."""
    X, y, W0, a0, eta, (loss_np, _, _) = _sphere_problems_and_numpy_run(7, (3, 12, 6, 8), 150)
    loss_mf = dana2025._meanfield_trials(X, y, W0, a0, eta, 150, n_threads=1)
    np.testing.assert_allclose(loss_mf, loss_np, rtol=1e-9)
    assert np.all(loss_np < 0.9)  # it did train


def test_numpy_and_train_engines_take_the_same_steps():
    """trained_outer_gd (numpy) against one batched relucore.train(train_outer=True) call."""
    p = 8
    # n = 20 > d = 5: K is singular, the weight-space engine runs.
    X, y, W0, a0, eta, (loss_np, W_np, a_np) = _sphere_problems_and_numpy_run(8, (4, 20, 5, p), 200)
    loss_tr = dana2025.train_trials(X, y, W0, a0, eta, 200, n_threads=1)
    np.testing.assert_allclose(loss_tr, loss_np, rtol=1e-10)
    import relucore

    r = relucore.train(
        X, y, signs=a0, init=W0, eta=eta, steps=200, tol=0, engine="weights", train_outer=True, output_scale=p**-0.5
    )
    assert np.max(np.abs(r.outer - a_np)) <= 1e-12 * np.max(np.abs(a_np))
    assert np.max(np.abs(r.W - W_np)) <= 1e-12 * np.max(np.abs(W_np))
    assert np.all(loss_np < 0.9)  # it did train


# ----------------------------------------------------------------------------- acceptance


def _claims(result):
    return {c.name: c for c in result.claims}


def test_kou_stable_rank_quick_claims():
    res = experiments.run("kou-stable-rank", quick=True)
    c = _claims(res)
    assert c["leaky_stable_rank_to_1"].passed, c["leaky_stable_rank_to_1"]
    assert c["relu_stable_rank_bounded"].passed, c["relu_stable_rank_bounded"]
    assert c["margin_ratio_to_1"].passed, c["margin_ratio_to_1"]
    lk, rl = res.data["metrics"]["leaky_relu"], res.data["metrics"]["relu"]
    g_lk = 0.5 * (lk.stable_rank_pos + lk.stable_rank_neg).mean(axis=0)
    g_rl = 0.5 * (rl.stable_rank_pos + rl.stable_rank_neg).mean(axis=0)
    late = lk.steps[0] >= 100
    assert np.all(g_lk[late] < g_rl[late])  # leaky below ReLU ...
    assert np.all(np.diff(g_lk[lk.steps[0] >= 10]) <= 1e-12)  # ... and falling
    assert res.figure is not None and res.passed


def test_step_size_quick_claims():
    res = experiments.run("step-size", quick=True)
    c = _claims(res)
    assert c["orthogonal_gap_proportional_to_eta"].passed, c["orthogonal_gap_proportional_to_eta"]
    assert c["near_orthogonal_gap_levels_off"].passed, c["near_orthogonal_gap_levels_off"]
    assert c["runs_converged"].passed
    g_o = res.data["gaps_orthogonal"].mean(axis=0)
    g_n = res.data["gaps_near_orthogonal"].mean(axis=0)
    eta = np.asarray(res.params["eta_units"])
    ratio = g_o / eta
    assert ratio.max() / ratio.min() < 3  # gap / eta bounded over 2.7 decades of eta
    assert g_n[0] > 2 * g_o[0] and res.data["floor"] > 0
    # Against the exact flow limit: on orthogonal data it is W*, so both distances agree.
    for name in ("orthogonal_flow_limit_is_min_norm", "gd_limit_to_flow_limit_proportional_to_eta"):
        assert c[name].passed, c[name]
    np.testing.assert_allclose(res.data["gaps_to_flow_orthogonal"], res.data["gaps_orthogonal"], rtol=1e-6)
    assert res.figure is not None


def test_step_size_flow_limit_is_a_rest_point_near_small_step_gd():
    """The flow limits the floor is measured from, against an independent check: GD at a
    10x smaller step than the smallest of the experiment lands 10x closer."""
    rng = np.random.default_rng(4)
    K, y = step_size._step_size_data(rng, 2, 8, 400, orthogonal=False)
    flow_alpha, ok = step_size._flow_limits(K, y)
    assert ok.all()
    gaps = [
        step_size._gaps_to(step_size._gd_limits(K, y, [e], conv_steps=40)[0], flow_alpha, K)[:, 0] for e in (1e-2, 1e-3)
    ]
    assert np.all(gaps[1] < gaps[0] / 5)


def test_dana_trial_same_outcome_on_relucores_engine_and_numpy():
    """The trial runs relucore.train by default; the numpy loop and the mean-field engine take the
    same steps from the same draws, so the outcomes agree (runs far from the loss threshold)."""
    for n in (6, 12, 24, 48):
        params = dict(n=n, d=4, p=12, steps=400, eta_factor=0.25, loss_threshold=1e-4)
        out = [
            dana2025.dana_trial(dict(params, engine=e), np.random.default_rng(n))
            for e in ("train", "numpy", "meanfield")
        ]
        assert out[0] == out[1] == out[2]


def test_convergence_probability_quick_claims():
    res = experiments.run("convergence-probability", quick=True, check_step_size=False, progress=False)
    assert res.params["engine"] == "train"
    table = res.data["thresholds"]
    assert list(table["d"]) == [4, 8] and table["crosses"].all()
    assert np.all(table["low"] < table["estimate"]) and np.all(table["estimate"] < table["high"])
    for curve in res.data["curves"]:
        assert np.all(curve["low"] <= curve["prob"]) and np.all(curve["prob"] <= curve["high"])
        assert curve["prob"][0] >= 0.8 and curve["prob"][-1] <= 0.2
    q, lo, hi = res.data["n_star_exponent"]
    assert lo < q < hi
    assert all(c.passed for c in res.claims), res.claims
    assert res.figure is not None


def test_experiments_are_registered_and_save(tmp_path):
    for name in ("kou-stable-rank", "step-size", "convergence-probability"):
        assert name in experiments.names()
    res = experiments.run("kou-stable-rank", n=6, d=200, m=4, steps=200, trials=2)
    paths = res.save(tmp_path)
    assert any(p.endswith(".png") for p in paths) and any(p.endswith(".csv") for p in paths)
