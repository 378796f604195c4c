"""The Gram-mode fast path of relucore.sweep: seeds, the batched Bartlett sampler, the
batched one-neuron minnorm, and whole C++ trials against the general path."""

import concurrent.futures as cf

import numpy as np
import pandas as pd
import pytest
import scipy.stats

import relucore
from relucore import _core
from relucore.sweeps.config import config_key, expand_grid
from relucore.sweeps.gram_trial import fast_trials_ok, trial_keys


# ----------------------------------------------------------------------------- seeds
@pytest.mark.parametrize("entropy", [0, 7, 2**40 + 3, 12345678901234567890123456789012345678901234567890])
def test_seed_keys_are_numpys_seed_sequence(entropy):
    key = (3000000000, 17)
    trials = [0, 1, 99, 2**32 + 5]
    keys = trial_keys(entropy, key, trials)
    for k, t in zip(keys, trials):
        ss = np.random.SeedSequence(entropy, spawn_key=(*key, t))
        np.testing.assert_array_equal(k, ss.generate_state(2, np.uint64))
        np.testing.assert_array_equal(k, np.random.Philox(ss).state["state"]["key"])


# ----------------------------------------------------------------------------- sampler
class _Words:
    """The documented consumption of np.random.Philox raw words (relucore/random/gram_sample.hpp), in numpy."""

    def __init__(self, ss):
        self.raw = np.random.Philox(ss).random_raw(200_000)
        self.i = 0

    def next(self):
        w = self.raw[self.i]
        self.i += 1
        return w

    def uniform(self):
        return float(self.next() >> np.uint64(11)) * 2.0**-53

    def pair(self):
        u1 = 1.0 - self.uniform()
        u2 = self.uniform()
        r = np.sqrt(-2.0 * np.log(u1))
        return r * np.cos(2 * np.pi * u2), r * np.sin(2 * np.pi * u2)

    def normals(self, k):
        out = []
        while len(out) < k:
            out.extend(self.pair())
        return np.array(out[:k])

    def gamma(self, a):  # Marsaglia-Tsang
        d = a - 1.0 / 3.0
        c = 1.0 / np.sqrt(9.0 * d)
        while True:
            x = self.pair()[0]
            v = 1.0 + c * x
            if v <= 0:
                continue
            v = v**3
            u = self.uniform()
            if u < 1 - 0.0331 * x**4 or u == 0 or np.log(u) < 0.5 * x * x + d * (1 - v + np.log(v)):
                return d * v

    def chi2(self, k):
        if k <= 16:
            return float(sum(self.pair()[0] ** 2 for _ in range(k)))
        return 2.0 * self.gamma(0.5 * k)


def _reference(n, groups, labels, ss):
    w = _Words(ss)
    K = np.zeros((n, n))
    for v, c in groups:
        L = np.zeros((n, n))
        L[np.tril_indices(n, -1)] = w.normals(n * (n - 1) // 2)
        for i in range(n):
            L[i, i] = np.sqrt(w.chi2(c - i))
        K += v * (L @ L.T)
    if labels == "normal":
        y = w.normals(n)
    else:
        y = 0.1 + 0.9 * np.array([w.uniform() for _ in range(n)])
        if labels == "uniform":
            y = y * np.where(np.array([w.uniform() for _ in range(n)]) < 0.5, -1.0, 1.0)
    return K, y


@pytest.mark.parametrize(
    "n, d, spectrum, labels, groups",
    [
        (4, 6, "isotropic", "uniform", [(1.0, 6)]),  # chi-squares as sums of normals
        (5, 1000, "isotropic", "positive", [(1.0, 1000)]),  # Marsaglia-Tsang
        (3, 40, ("spiked", 4, 10.0, 0.5), "normal", [(10.0, 4), (0.5, 36)]),
    ],
)
def test_sampler_follows_its_documented_construction(n, d, spectrum, labels, groups):
    seeds = [np.random.SeedSequence(11, spawn_key=(i,)) for i in range(4)]
    K, y = relucore.sample_gram_batch(n, d, seeds, spectrum=spectrum, labels=labels)
    for b, ss in enumerate(seeds):
        Kr, yr = _reference(n, groups, labels, ss)
        np.testing.assert_allclose(K[b], Kr, rtol=1e-12, atol=1e-12 * np.abs(Kr).max())  # measured ~1e-15
        np.testing.assert_allclose(y[b], yr, rtol=1e-12, atol=1e-14)
        np.testing.assert_array_equal(K[b], K[b].T)
    K2, _ = relucore.sample_gram_batch(n, d, seeds, spectrum=spectrum, labels=labels, n_threads=2)
    np.testing.assert_array_equal(K, K2)


def _stats(K):
    n = K.shape[-1]
    return {
        "K00": K[:, 0, 0],
        "K01": K[:, 0, 1],
        "mu1": np.linalg.eigvalsh(K)[:, -1],
        "mun": np.linalg.eigvalsh(K)[:, 0],
        "tr": np.trace(K, axis1=1, axis2=2) / n,
    }


@pytest.mark.parametrize(
    "n, d, spectrum", [(5, 8, "isotropic"), (4, 60, ("spiked", 6, 5.0, 1.0)), (3, 10**7, "isotropic")]
)
def test_sampler_has_the_law_of_sample_gram_and_of_explicit_X(n, d, spectrum):
    """KS tests (2000 draws each) against relucore.sample_gram and, for small d, X X^T of relucore.sample."""
    N = 2000
    K, y = relucore.sample_gram_batch(n, d, list(range(N)), spectrum=spectrum)
    rng = np.random.default_rng(5)
    Kold = np.stack([relucore.sample_gram(n, d, spectrum=spectrum, rng=rng).K for _ in range(N)])
    peers = [Kold]
    if d <= 100:
        peers.append(np.stack([relucore.sample(n, d, spectrum=spectrum, rng=rng).K for _ in range(N)]))
    new = _stats(K)
    for peer in peers:
        old = _stats(peer)
        for k in new:
            assert scipy.stats.ks_2samp(new[k], old[k]).pvalue > 1e-3, k
    # labels: |y| ~ U(0.1, 1), signs fair
    assert scipy.stats.kstest(np.abs(y).ravel(), scipy.stats.uniform(0.1, 0.9).cdf).pvalue > 1e-3
    assert abs(np.mean(y > 0) - 0.5) < 4 * 0.5 / np.sqrt(y.size)


def test_sampler_refuses_what_bartlett_cannot_draw():
    with pytest.raises(ValueError, match="multiplicity >= n"):
        relucore.sample_gram_batch(10, 5, [0])
    with pytest.raises(ValueError, match="multiplicity >= n"):
        relucore.sample_gram_batch(4, 100, [0], spectrum=("power", 1.0))


# ----------------------------------------------------------------------------- minnorm
@pytest.mark.parametrize("n, d, s", [(6, 500, 1.0), (20, 25, 1.0), (12, 15, -1.0), (30, 10**6, 1.0)])
def test_minnorm_batch_equals_single_minnorm(n, d, s):
    B = 12
    K, y = relucore.sample_gram_batch(n, d, list(range(B)), labels="normal")
    z = np.empty((B, n))
    f = np.empty((B, 5))
    info = np.empty((B, 4), dtype=np.int32)
    _core.minnorm1_batch(K, y, s, z, f, info, 2)
    for b in range(B):
        sol = relucore.minnorm(None, y[b], signs=(s,), gram=K[b])
        assert sol.success and info[b, 0] == 0
        scale = np.abs(sol.alpha).max()
        np.testing.assert_allclose(z[b], sol.alpha[0], rtol=0, atol=1e-12 * scale)
        assert f[b, 0] == pytest.approx(sol.objective, rel=1e-12)
        c = sol.certificate
        np.testing.assert_allclose(
            f[b, 1:], [c.stationarity, c.primal_feasibility, c.dual_feasibility, c.complementarity], rtol=0, atol=1e-12
        )
        assert f[b, 1:].max() < 1e-9


# ----------------------------------------------------------------------------- whole trials
GRID = [
    {"n": 8, "d": 300, "use_gram": True},
    {"n": 6, "d": 10**9, "use_gram": True, "labels": ["uniform", 0.2, 2.0]},
    {"n": 5, "d": 200, "use_gram": True, "spectrum": ["spiked", 5, 20.0, 1.0], "eta": 1e-3, "steps": 50},
    {"n": 7, "d": 7, "use_gram": True, "signs": [-1], "labels": "normal", "minnorm": False},
]
COMPARE = ["loss", "grad_norm", "eta", "gap", "gap_normalised", "norm1"] + [
    f"gram_{k}" for k in ("mu_max", "mu_min", "deviation", "offdiag_ratio", "d2", "d_inf")
]
EXACT = ["nit", "pattern_stable_step", "n_pos", "n_neg", "status", "seed"]


def _nothing(data, result):
    return {}


@pytest.fixture(scope="module")
def fast():
    assert all(fast_trials_ok(c, None) for c in expand_grid(GRID))
    return relucore.sweep(GRID, trials=12, seed=4, progress=False)


def test_fast_path_equals_general_path(fast):
    """A measure forces the general path (prepare, train, minnorm in Python) on the same data."""
    assert not fast_trials_ok(expand_grid(GRID)[0], _nothing)
    slow = relucore.sweep(GRID, trials=12, seed=4, measure=_nothing, progress=False)
    assert (fast.status != "error").all(), fast.error.unique()
    for c in EXACT:
        assert list(fast[c]) == list(slow[c]), c
    for c in COMPARE:
        # eigenvalues (Laguerre vs LAPACK) and K^{-1} eps (Cholesky vs LU) differ in rounding
        np.testing.assert_allclose(fast[c].values, slow[c].values, rtol=1e-9, atol=1e-15, err_msg=c)


def test_fast_path_eta_is_one_over_mu1(fast):
    """The default step is 1/mu_1(K) with mu_1 from LAPACK on K rebuilt from the seed column."""
    from numpy.random import SeedSequence  # noqa: F401  (used by eval)

    cfgs = expand_grid(GRID)
    for _, row in fast[fast.config_index != 2].iterrows():
        cfg = cfgs[row.config_index]
        labels = tuple(cfg["labels"]) if isinstance(cfg["labels"], list) else (cfg["labels"] or "uniform")
        K, y = relucore.sample_gram_batch(cfg["n"], cfg["d"], [eval(row.seed)], labels=labels)
        assert row.eta == pytest.approx(1.0 / np.linalg.eigvalsh(K[0])[-1], rel=1e-13)
        assert row.n_pos == int(np.sum(y > 0))


@pytest.mark.parametrize("kw", [dict(batch_size=1), dict(batch_size=5, n_threads=2), dict(n_threads=1)])
def test_fast_path_bitwise_identical_across_batches_and_threads(fast, kw):
    pd.testing.assert_frame_equal(fast, relucore.sweep(GRID, trials=12, seed=4, progress=False, **kw), check_exact=True)


def test_fast_path_identical_on_an_executor(fast):
    with cf.ThreadPoolExecutor(2) as ex:
        out = relucore.sweep(GRID, trials=12, seed=4, progress=False, executor=ex, batch_size=7)
    pd.testing.assert_frame_equal(fast, out, check_exact=True)


def test_fast_path_theorem1_loss(fast):
    """One ReLU, positive init, d >> n (Theorem 1): final loss = 1/2 sum of the negative labels squared."""
    from numpy.random import SeedSequence  # noqa: F401

    cfg = expand_grid(GRID)[1]
    for _, row in fast[fast.config_index == 1].iterrows():
        assert eval(row.seed).spawn_key == (*config_key(cfg), row.trial)
        _, y = relucore.sample_gram_batch(cfg["n"], cfg["d"], [eval(row.seed)], labels=("uniform", 0.2, 2.0))
        assert row.loss == pytest.approx(0.5 * np.sum(y[0][y[0] < 0] ** 2), rel=1e-9)
        assert row.status == "converged" and row.pattern_stable_step <= 1


def test_fast_path_checkpoint_resumes_to_the_same_table(fast, tmp_path):
    """Fast-path batches come back as columns and are stored as columns.
    A run cut after the first batch of each configuration and resumed gives the uninterrupted table."""
    import sqlite3

    ckpt = tmp_path / "fast.db"
    full = relucore.sweep(GRID, trials=12, seed=4, progress=False, batch_size=5, checkpoint=ckpt)
    pd.testing.assert_frame_equal(fast, full, check_exact=True)
    with sqlite3.connect(ckpt) as conn:
        assert conn.execute("DELETE FROM trials WHERE trial >= 5").rowcount > 0
    conn.close()
    resumed = relucore.sweep(GRID, trials=12, seed=4, progress=False, batch_size=5, checkpoint=ckpt)
    pd.testing.assert_frame_equal(fast, resumed, check_exact=True)


def test_fast_path_error_codes_become_error_rows(monkeypatch):
    """A trial the C++ batch refuses (a nonzero ``error`` output) is an error row with NaN/-1
    measurements; the other trials of the batch keep their values."""
    from relucore.sweeps import gram_trial as _sweep_fast

    real = _core.sweep_gram_batch

    def refuse_second(*args, **kwargs):
        out = real(*args, **kwargs)
        out["error"][1] = 1
        out["cond"][1] = 3.5e13
        return out

    monkeypatch.setattr(_sweep_fast._core, "sweep_gram_batch", refuse_second)
    cfg = {"n": 5, "d": 50, "use_gram": True}
    out = relucore.sweep(cfg, trials=4, seed=1, progress=False, batch_size=4)
    monkeypatch.undo()
    ref = relucore.sweep(cfg, trials=4, seed=1, progress=False, batch_size=4)
    assert list(out.status) == ["converged", "error", "converged", "converged"]
    assert out.error[1].startswith("ValueError: K is rank-deficient or badly conditioned: cond(K) = 3.5e+13")
    assert out.nit[1] == -1 and np.isnan(out.loss[1]) and np.isnan(out.gap[1])
    keep = [0, 2, 3]
    pd.testing.assert_frame_equal(out.iloc[keep], ref.iloc[keep], check_exact=True)


# ----------------------------------------------------------------------------- the binding's contract
def test_sweep_gram_batch_returns_the_named_outputs_of_the_schema():
    """The outputs of _core.sweep_gram_batch are the named arrays that relucore.sweeps.columns
    declares (CORE_OUTPUTS, plus K and y), and every measured column the fast path takes
    from C++ is among them."""
    from relucore.sweeps.columns import CORE, CORE_OUTPUTS, MEASURED
    from relucore.theory.sampling import bartlett_plan

    n, B = 5, 3
    values, counts, labels, lo, hi, sp = bartlett_plan(n, 50, "isotropic", "uniform")
    out = _core.sweep_gram_batch(
        trial_keys(0, (1, 2), range(B)),
        n=n,
        values=values,
        counts=counts,
        labels=labels,
        lo=lo,
        hi=hi,
        settings=_core.GramTrialSettings(norm1=sp.norm1),
    )
    assert set(out) == set(CORE_OUTPUTS) | {"K", "y"}
    assert out["K"].shape == (B, n, n) and out["y"].shape == (B, n)
    for name, kind in CORE_OUTPUTS.items():
        assert out[name].shape == (B,) and out[name].dtype == (np.float64 if kind == "f" else np.int64), name
    assert {c.name for c in MEASURED if c.fast == CORE} <= set(CORE_OUTPUTS)
    assert (out["error"] == 0).all() and (out["nit"] > 0).all()


def test_gram_trial_settings_are_keyword_fields():
    st = _core.GramTrialSettings(sign=-1.0, eta=0.25, max_steps=7)
    assert (st.sign, st.eta, st.max_steps, st.eps, st.tol, st.minnorm) == (-1.0, 0.25, 7, 0.0, -1.0, True)
    with pytest.raises(TypeError):
        _core.GramTrialSettings(-1.0)
