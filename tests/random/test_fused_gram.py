"""The fused draw-and-Gram kernel (cpp/include/relucore/random/fused_gram.hpp).

Its K is the Gram matrix of the X it would keep (which is the documented
range of the counter stream times the column scales), and it has the law of
``relucore.sample``'s ``X X^T`` for every z and spectrum it serves: exact
moments of the entries, and two-sample KS tests against ``sample`` of a
diagonal entry, an off-diagonal entry and the extreme eigenvalues. Fixed keys
and seeds; each statistical check is a test at level 1e-3 (KS p-value above
1e-3, standardised moments inside +-3.29).
"""

import numpy as np
import pytest
from scipy import stats

import relucore
from relucore import _core
from relucore.theory.sampling import make_spectrum

Z_CRIT = stats.norm.isf(0.5e-3)
P_MIN = 1e-3
#: E z^4 - 1 = Var z^2 for each law of z (Gaussian 3, Rademacher 1, uniform on [-sqrt 3, sqrt 3] 9/5)
VAR_Z2 = {"gaussian": 2.0, "rademacher": 0.0, "uniform": 0.8}


def scales(spectrum, d):
    return np.sqrt(make_spectrum(spectrum, d).to_array())


def test_kept_x_is_the_counter_range_times_the_scales():
    n, d = 5, 1_003
    s = scales(("power", 0.7), d)
    for z, draw in (
        ("gaussian", _core.counter_normals),
        ("rademacher", _core.counter_rademacher),
        ("uniform", _core.counter_uniforms),
    ):
        K, X = _core.fused_gram(17, 4, n, d, z=z, scale=s, keep_x=True)
        ref = np.empty(n * d)
        draw(17, 4, 0, ref)
        if z == "uniform":
            ref = (2.0 * ref - 1.0) * np.sqrt(3.0)
        np.testing.assert_array_equal(X, ref.reshape(n, d) * s)
        np.testing.assert_allclose(K, X @ X.T, rtol=1e-12, atol=1e-12)
        assert np.array_equal(K, K.T)
        # without X: the same blocks from a buffer, so the same bits; another block width changes only rounding
        np.testing.assert_array_equal(_core.fused_gram(17, 4, n, d, z=z, scale=s), K)
        np.testing.assert_allclose(_core.fused_gram(17, 4, n, d, z=z, scale=s, block_columns=24), K, rtol=1e-12)


TRIALS = 3_000
CASES = [
    ("gaussian", "isotropic"),
    ("gaussian", ("power", 1.0)),
    ("rademacher", "isotropic"),
    ("rademacher", ("power", 0.5)),
    ("uniform", ("power", 1.0)),
]


def _fused_trials(n, d, z, spectrum, trials):
    s = None if spectrum == "isotropic" else scales(spectrum, d)
    return np.stack([_core.fused_gram(2026, t, n, d, z=z, scale=s) for t in range(trials)])


@pytest.mark.parametrize(("z", "spectrum"), CASES)
def test_entries_have_the_exact_moments(z, spectrum):
    n, d = 3, 40
    lam = make_spectrum(spectrum, d).to_array()
    K = _fused_trials(n, d, z, spectrum, TRIALS)
    # K_ii = sum_t lam_t z_t^2: mean ||lam||_1, variance Var(z^2) ||lam||_2^2.
    # K_ij (i != j) = sum_t lam_t z_it z_jt: mean 0, variance ||lam||_2^2.
    l1, l2sq = lam.sum(), (lam**2).sum()
    diag, off = K[:, 0, 0], K[:, 0, 1]
    if VAR_Z2[z] > 0:
        assert abs(diag.mean() - l1) / np.sqrt(VAR_Z2[z] * l2sq / TRIALS) < Z_CRIT
    else:
        np.testing.assert_allclose(diag, l1, rtol=1e-13)  # z^2 = 1: the diagonal is exactly ||lam||_1
    assert abs(off.mean()) / np.sqrt(l2sq / TRIALS) < Z_CRIT
    # Var K_ij = E K_ij^2 = ||lam||_2^2; E K_ij^4 = 3 ||lam||_2^4 + (E z^4 ^2 - 3) ||lam||_4^4 bounds the error
    m4 = (VAR_Z2[z] + 1) ** 2
    e4 = 3 * l2sq**2 + (m4 - 3) * (lam**4).sum()
    assert abs((off**2).mean() - l2sq) / np.sqrt((e4 - l2sq**2) / TRIALS) < Z_CRIT


@pytest.mark.parametrize(("z", "spectrum"), CASES)
def test_same_law_as_relucore_sample(z, spectrum):
    n, d = 4, 30
    K = _fused_trials(n, d, z, spectrum, TRIALS)
    R = np.stack([relucore.sample(n, d, spectrum=spectrum, z=z, rng=1000 + t).K for t in range(TRIALS)])
    ev_k, ev_r = np.linalg.eigvalsh(K), np.linalg.eigvalsh(R)
    checks = {
        "K_00": (K[:, 0, 0], R[:, 0, 0]),
        "K_12": (K[:, 1, 2], R[:, 1, 2]),
        "mu_max": (ev_k[:, -1], ev_r[:, -1]),
        "mu_min": (ev_k[:, 0], ev_r[:, 0]),
    }
    for name, (a, b) in checks.items():
        if z == "rademacher" and name == "K_00":
            np.testing.assert_allclose(a, b, rtol=1e-13)  # both exactly ||lam||_1
            continue
        assert stats.ks_2samp(a, b).pvalue > P_MIN, name


def test_rademacher_isotropic_k_from_the_sign_bits_is_the_float_sum():
    """Unit scales take the sign-bit kernel (K_ij = d - 2 popcount): exactly the float rank update."""
    for n, d in ((3, 1), (5, 64), (7, 1029), (40, 3001)):
        K, X = _core.fused_gram(31, n, n, d, z="rademacher", keep_x=True)
        Kf, Xf = _core.fused_gram(31, n, n, d, z="rademacher", scale=np.ones(d), keep_x=True)
        assert np.array_equal(X, Xf) and np.array_equal(K, Kf)
        np.testing.assert_array_equal(K, X @ X.T)  # integers: exact in any order


def test_bad_input():
    with pytest.raises(ValueError, match="z must be"):
        _core.fused_gram(1, 0, 3, 10, z="cauchy")
    with pytest.raises(ValueError, match="scale"):
        _core.fused_gram(1, 0, 3, 10, scale=np.ones(9))
    with pytest.raises(ValueError, match="non-negative"):
        _core.fused_gram(1, 0, 3, 3, scale=np.array([1.0, -1.0, 1.0]))
    with pytest.raises(ValueError, match="non-negative"):
        _core.fused_gram(1, 0, 3, 3, scale=np.array([1.0, np.nan, 1.0]))
    with pytest.raises(ValueError, match="positive"):
        _core.fused_gram(1, 0, 0, 10)
    with pytest.raises(ValueError, match="block_columns"):
        _core.fused_gram(1, 0, 3, 10, block_columns=-1)


def test_sweep_trial_k_entries_pass_ks_against_their_law():
    """The explicit-X sweep trial's K (sample_fused, fixed seeds) against the exact laws of its entries:
    Gaussian isotropic z gives K_00 ~ chi^2(d) and K_01 / sqrt(K_00) ~ N(0, 1) (given x_0, x_0 . x_1 is
    N(0, ||x_0||^2)); Rademacher isotropic z gives K_00 = d and (K_01 + d) / 2 ~ Binomial(d, 1/2)."""
    from relucore.theory.sampling import sample_fused

    n, d, B = 3, 64, 3_000
    rngs = [np.random.default_rng(np.random.SeedSequence(77, spawn_key=(b,))) for b in range(B)]
    K = sample_fused(n, d, rngs, z="gaussian", n_threads=2)[0]
    assert stats.kstest(K[:, 0, 0], stats.chi2(d).cdf).pvalue > P_MIN
    assert stats.kstest(K[:, 2, 2], stats.chi2(d).cdf).pvalue > P_MIN
    assert stats.kstest(K[:, 0, 1] / np.sqrt(K[:, 0, 0]), stats.norm.cdf).pvalue > P_MIN
    assert stats.kstest(K[:, 1, 2] / np.sqrt(K[:, 2, 2]), stats.norm.cdf).pvalue > P_MIN
    rngs = [np.random.default_rng(np.random.SeedSequence(78, spawn_key=(b,))) for b in range(B)]
    K = sample_fused(n, d, rngs, z="rademacher")[0]
    assert np.all(K[:, 0, 0] == d)
    k = np.rint((K[:, 0, 1] + d) / 2).astype(int)
    # chi-square goodness of fit over the bins of Binomial(d, 1/2), tails pooled to expected counts >= 5
    pmf = stats.binom(d, 0.5).pmf(np.arange(d + 1)) * B
    lo, hi = np.argmax(pmf >= 5), d - np.argmax(pmf[::-1] >= 5)
    obs = np.bincount(np.clip(k, lo, hi), minlength=d + 1)[lo : hi + 1]
    exp = pmf[lo : hi + 1].copy()
    exp[0] += pmf[:lo].sum()
    exp[-1] += pmf[hi + 1 :].sum()
    assert stats.chisquare(obs, exp * B / exp.sum()).pvalue > P_MIN


def test_sweep_trial_x_is_sample_and_k_does_not_depend_on_keeping_x_or_threads():
    from relucore.theory.sampling import sample_fused

    n, d = 40, 3_001  # n >= 32: K by the registered BLAS when there is one
    seeds = [np.random.SeedSequence(5, spawn_key=(b,)) for b in range(4)]
    for z in ("gaussian", "rademacher", "uniform"):
        kw = dict(spectrum=("power", 1.0), z=z, labels="normal")
        K1, X1, y1, _ = sample_fused(n, d, [np.random.default_rng(s) for s in seeds], keep_x=True, n_threads=1, **kw)
        K2, X2, y2, _ = sample_fused(n, d, [np.random.default_rng(s) for s in seeds], n_threads=2, **kw)
        assert X2 is None and np.array_equal(K1, K2) and np.array_equal(y1, y2)
        for b, s in enumerate(seeds):
            ds = relucore.sample(n, d, rng=np.random.default_rng(s), **kw)
            assert np.array_equal(ds.X, X1[b]) and np.array_equal(ds.y, y1[b])
            np.testing.assert_allclose(K1[b], ds.X @ ds.X.T, rtol=1e-12, atol=1e-9)
