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
