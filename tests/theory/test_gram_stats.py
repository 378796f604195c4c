"""relucore.gram_stats: Lemma 7, Corollary 1, Assumptions 2 and 3 (App. A.1)."""

import numpy as np
import pytest

import relucore as rc


def _reference(K, norm1):
    ev = np.linalg.eigvalsh(K)
    off = K - np.diag(np.diag(K))
    return ev[-1], ev[0], np.linalg.norm(K / norm1 - np.eye(K.shape[0]), 2), np.max(np.abs(off)) / np.min(np.diag(K))


def test_against_numpy_reference_and_assumption_constants():
    ds = rc.sample(12, 300, spectrum=("spiked", 3, 4.0, 1.0), rng=0)
    g = rc.gram_stats(ds)
    K = ds.X @ ds.X.T
    mu1, mun, dev, ratio = _reference(K, ds.norm1)
    assert g.mu_max == pytest.approx(mu1, rel=1e-12)
    assert g.mu_min == pytest.approx(mun, rel=1e-12)
    assert g.deviation == pytest.approx(dev, rel=1e-10)
    assert g.offdiag_ratio == pytest.approx(ratio, rel=1e-12)
    assert not g.norm1_estimated and g.d2 == pytest.approx(ds.d2) and g.d_inf == pytest.approx(ds.d_inf)
    r = np.max(np.abs(ds.y)) / np.min(np.abs(ds.y))
    assert g.label_ratio == pytest.approx(r)
    # Assumption 2 holds with exactly C0 = C0_assumption2 (one inequality tight).
    C0 = g.C0_assumption2
    n = 12
    assert ds.d2 >= C0**2 * n**2 * r**2 * (1 - 1e-12)
    assert ds.d_inf >= C0 * n**1.5 * r * (1 - 1e-12)
    assert min(ds.d2 / (C0**2 * n**2 * r**2), ds.d_inf / (C0 * n**1.5 * r)) == pytest.approx(1.0)
    # Assumption 3 with C0_assumption3 is tight.
    off = np.max(np.abs(K - np.diag(np.diag(K))))
    assert np.min(np.diag(K)) == pytest.approx(g.C0_assumption3 * n * r * off, rel=1e-12)
    # Lemma 7 holds with c_lemma7 and fails for any smaller c >= 1 (when c > 1).
    c, lam1, s = g.c_lemma7, ds.spectrum.max(), ds.norm1
    assert s / c - c * lam1 * n <= mun * (1 + 1e-12) and mu1 <= c * (s + lam1 * n) * (1 + 1e-12)
    if c > 1:
        c2 = c * (1 - 1e-6)
        assert not (s / c2 - c2 * lam1 * n <= mun and mu1 <= c2 * (s + lam1 * n))
    assert g.C_cor1 == pytest.approx(dev / max(np.sqrt(n / ds.d2), n / ds.d_inf))


def test_batched_gram_input_and_estimated_norm():
    rng = np.random.default_rng(1)
    Ks = np.array([rc.sample_gram(8, 500, rng=rng).K for _ in range(3)])
    g = rc.gram_stats(gram=Ks)
    assert g.norm1_estimated and g.c_lemma7 is None and g.mu_max.shape == (3,)
    for b in range(3):
        s = np.trace(Ks[b]) / 8
        ref = _reference(Ks[b], s)
        np.testing.assert_allclose([g.mu_max[b], g.mu_min[b], g.deviation[b], g.offdiag_ratio[b]], ref, rtol=1e-10)


def test_corollary1_scale_on_isotropic_gaussians():
    # ||K/d - I|| is of order sqrt(n/d): the implied constant stays moderate.
    g = rc.gram_stats(rc.sample_gram(50, 20000, rng=2))
    assert 0.5 < g.C_cor1 < 5.0
    assert g.c_lemma7 < 2.0


def test_input_errors():
    with pytest.raises(TypeError):
        rc.gram_stats()
    with pytest.raises(ValueError, match="square"):
        rc.gram_stats(gram=np.ones((2, 3)))
