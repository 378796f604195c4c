"""relucore.sample / sample_gram (docs/math.md §8; Lai et al. Sec. 2, App. A.1)."""

import numpy as np
import pytest
from scipy import stats

import relucore as rc
from relucore.theory.sampling import Spectrum, haar_orthogonal, make_spectrum, wishart_bartlett


def test_sample_shapes_and_effective_dimensions():
    ds = rc.sample(7, 50, spectrum=("power", 1.0), rng=0)
    assert ds.X.shape == (7, 50) and ds.y.shape == (7,)
    lam = np.arange(1, 51) ** -1.0
    np.testing.assert_allclose(ds.spectrum, lam)
    assert ds.d2 == pytest.approx(lam.sum() ** 2 / (lam**2).sum(), rel=1e-14)
    assert ds.d_inf == pytest.approx(lam.sum(), rel=1e-14)
    iso = rc.sample(3, 40, rng=1)
    assert iso.d2 == pytest.approx(40) and iso.d_inf == pytest.approx(40)
    sp = make_spectrum(("spiked", 3, 10.0, 0.5), 20)
    np.testing.assert_array_equal(sp.to_array(), np.r_[np.full(3, 10.0), np.full(17, 0.5)])
    assert sp.norm1 == pytest.approx(38.5)


@pytest.mark.parametrize("z", ["gaussian", "rademacher", "uniform"])
def test_z_laws_have_unit_variance_and_covariance_lambda(z):
    lam = np.array([4.0, 1.0, 0.25])
    ds = rc.sample(40000, 3, spectrum=lam, z=z, labels="normal", rng=2)
    cov = ds.X.T @ ds.X / ds.n
    # Sampling error of a variance with 40000 draws: ~ sqrt(2/40000) ~ 0.7% (relative); 5 sigma.
    np.testing.assert_allclose(np.diag(cov), lam, rtol=0.05)
    assert abs(cov[0, 1]) < 0.05 * 2.0
    if z == "rademacher":
        assert set(np.unique(np.abs(ds.X[:, 0]))) == {2.0}
    if z == "uniform":
        assert np.max(np.abs(ds.X[:, 2])) <= np.sqrt(3.0) * 0.5 + 1e-12


def test_labels():
    y = rc.sample(1000, 5, labels=("uniform", 0.2, 0.9), rng=3).y
    assert np.all((np.abs(y) >= 0.2) & (np.abs(y) <= 0.9))
    assert 400 < np.sum(y > 0) < 600
    assert np.all(rc.sample(50, 5, labels="positive", rng=4).y > 0)
    given = np.arange(5.0)
    np.testing.assert_array_equal(rc.sample(5, 3, labels=given, rng=0).y, given)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        rc.sample(4, 3, labels=given)
    with pytest.raises(ValueError, match="labels"):
        rc.sample(4, 3, labels="bogus")


def test_haar_and_orthogonal_rows():
    rng = np.random.default_rng(5)
    V = haar_orthogonal(30, rng)
    np.testing.assert_allclose(V.T @ V, np.eye(30), atol=1e-12)
    ds = rc.sample(6, 30, spectrum=("power", 0.5), V="haar", rng=6)
    # x = V Lambda^{1/2} z: rotating back with V is not available, but the norms follow the law:
    assert ds.X.shape == (6, 30)
    with pytest.raises(ValueError, match="refused"):
        rc.sample(2, 5000, V="haar")
    orth = rc.sample(8, 100, orthogonal=True, rng=7)
    K = orth.X @ orth.X.T
    off = K - np.diag(np.diag(K))
    assert np.max(np.abs(off)) < 1e-10 * np.max(np.diag(K))
    with pytest.raises(ValueError, match="n <= d"):
        rc.sample(10, 5, orthogonal=True)


def test_bartlett_mean_and_rank():
    rng = np.random.default_rng(8)
    n, df = 5, 12
    mean = sum(wishart_bartlett(n, df, rng) for _ in range(4000)) / 4000
    # E W = df I; Var W_ii = 2 df -> sd of the mean ~ sqrt(24/4000) ~ 0.08.
    np.testing.assert_allclose(mean, df * np.eye(n), atol=0.5)
    low = rc.sample_gram(6, 3, rng=9).K  # d < n: rank d
    assert np.linalg.matrix_rank(low) == 3


@pytest.mark.parametrize("spectrum", ["isotropic", ("spiked", 2, 5.0, 1.0), ("power", 1.0)])
def test_sample_gram_matches_explicit_gaussian_X(spectrum):
    """Two-sample KS tests of K's diagonal and off-diagonal entries: Wishart path vs X X^T."""
    n, d, reps = 4, 12, 3000
    rng = np.random.default_rng(10)
    Kw = np.array([rc.sample_gram(n, d, spectrum=spectrum, rng=rng).K for _ in range(reps)])
    Kx = []
    for _ in range(reps):
        X = rc.sample(n, d, spectrum=spectrum, rng=rng).X
        Kx.append(X @ X.T)
    Kx = np.array(Kx)
    for i, j in [(0, 0), (3, 3), (0, 1), (2, 3)]:
        p = stats.ks_2samp(Kw[:, i, j], Kx[:, i, j]).pvalue
        assert p > 1e-3, (i, j, p)


def test_sample_gram_huge_d_and_power_guard():
    gd = rc.sample_gram(20, 10**9, rng=11)
    assert gd.d == 10**9 and gd.norm1 == pytest.approx(1e9)
    # K/d -> I at rate sqrt(n/d) ~ 1.4e-4.
    assert np.max(np.abs(gd.K / 1e9 - np.eye(20))) < 2e-3
    sp = rc.sample_gram(5, 10**9, spectrum=("spiked", 10, 1e3, 1.0), rng=1).spectrum
    assert isinstance(sp, Spectrum) and sp.d == 10**9 and sp.norm1 == pytest.approx(1e9 - 10 + 1e4)
    with pytest.raises(ValueError, match="multiplicity < n"):
        rc.sample_gram(5, 10**5, spectrum=("power", 1.0), max_columns=10**4)
    # A power law (d distinct values) is drawn in one chunked product, as cheaply as X.
    gp = rc.sample_gram(8, 20000, spectrum=("power", 0.5), rng=2)
    assert gp.spectrum.d == 20000 and gp.K.shape == (8, 8)


def test_explicit_spectrum_keeps_its_order():
    lam = np.array([0.1, 5.0, 1.0])
    ds = rc.sample(30000, 3, spectrum=lam, rng=12)
    np.testing.assert_array_equal(ds.spectrum, lam)
    np.testing.assert_allclose(ds.X.var(axis=0), lam, rtol=0.05)
    assert ds.d_inf == pytest.approx(6.1 / 5.0)


def test_sample_refuses_an_X_larger_than_memory_at_once():
    import time

    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=r"needs 7\.28 TiB.*sample_gram") as info:
        rc.sample(1000, 10**9)
    assert time.perf_counter() - t0 < 2.0
    assert "n=1000, d=1000000000" in str(info.value)


def test_sample_gram_batch_names_a_bad_seed():
    from relucore.theory.sampling import sample_gram_batch

    with pytest.raises(ValueError, match=r"seeds\[0\] must be a non-negative integer.*got -1"):
        sample_gram_batch(5, 50, seeds=[-1, 2])
    with pytest.raises(TypeError, match=r"seeds\[1\] must be a non-negative integer.*2\.5"):
        sample_gram_batch(5, 50, seeds=[1, 2.5])
    K, y = sample_gram_batch(5, 50, seeds=[np.int64(3), np.random.SeedSequence(3)])
    assert np.array_equal(K[0], K[1]) and np.array_equal(y[0], y[1])


def test_sample_draws_z_from_the_counter_stream_keyed_by_one_draw_of_rng():
    """z_it is variate i d + t of the counter stream (key, 0), key one 64-bit draw of the Generator;
    the labels come from the Generator after that draw (sample's docstring)."""
    from relucore import _core

    n, d = 5, 37
    for z in ("gaussian", "rademacher", "uniform"):
        ds = rc.sample(n, d, spectrum=("power", 0.5), z=z, labels="normal", rng=np.random.SeedSequence(8))
        g = np.random.default_rng(np.random.SeedSequence(8))
        key = int(g.integers(0, 2**64, dtype=np.uint64))
        ref = np.empty(n * d)
        _core.counter_variates(key, 0, 0, z, ref)
        np.testing.assert_array_equal(ds.X, ref.reshape(n, d) * np.sqrt(np.arange(1, d + 1) ** -0.5))
        np.testing.assert_array_equal(ds.y, g.standard_normal(n))
    # an int seed and a Generator seeded alike give the same data
    a, b = rc.sample(3, 9, rng=4), rc.sample(3, 9, rng=np.random.default_rng(4))
    assert np.array_equal(a.X, b.X) and np.array_equal(a.y, b.y)


P_MIN = 1e-3  # every statistical check below is a test at level 1e-3 (fixed seeds: deterministic)


@pytest.mark.parametrize(
    ("z", "law"),
    [("gaussian", stats.norm()), ("uniform", stats.uniform(-np.sqrt(3.0), 2 * np.sqrt(3.0)))],
)
def test_sample_z_passes_ks_against_its_law(z, law):
    X = rc.sample(200, 1000, z=z, rng=20261203).X  # 2e5 variates of one stream
    assert stats.kstest(X.ravel(), law.cdf).pvalue > P_MIN
    # each row and each column is a sample of the same law too
    assert stats.kstest(X[7], law.cdf).pvalue > P_MIN
    assert stats.kstest(X[:, 3], law.cdf).pvalue > P_MIN
    # scaled columns: x_t / sqrt(lambda_t) has the law of z
    lam = np.arange(1, 1001) ** -1.0
    Xp = rc.sample(50, 1000, spectrum=("power", 1.0), z=z, rng=7).X
    assert stats.kstest((Xp / np.sqrt(lam)).ravel(), law.cdf).pvalue > P_MIN


def test_sample_rademacher_z_is_fair_and_independent():
    X = rc.sample(200, 1000, z="rademacher", rng=20261203).X
    assert set(np.unique(X)) == {-1.0, 1.0}
    plus = int(np.sum(X > 0))
    assert stats.binomtest(plus, X.size, 0.5).pvalue > P_MIN
    # pairs of neighbours (t, t + 1): the four sign patterns equally likely (chi-square, 3 d.o.f.)
    a, b = X[:, :-1:2].ravel() > 0, X[:, 1::2].ravel() > 0
    counts = np.array([np.sum(a & b), np.sum(a & ~b), np.sum(~a & b), np.sum(~a & ~b)])
    assert stats.chisquare(counts).pvalue > P_MIN


def test_sample_keeps_its_errors():
    with pytest.raises(ValueError, match="z must be 'gaussian', 'rademacher' or 'uniform'; got 'cauchy'"):
        rc.sample(3, 5, z="cauchy", rng=0)
    with pytest.raises(ValueError, match="orthogonal rows need n <= d"):
        rc.sample(6, 5, orthogonal=True, rng=0)
    with pytest.raises(TypeError, match="rng must be None, an int"):
        rc.sample(3, 5, rng="seed")
    with pytest.raises(ValueError, match="labels must be"):
        rc.sample(3, 5, labels="cauchy", rng=0)
