"""The Gram-mode fast path of relucore.sweep: seeds, the batched Bartlett sampler, the
batched one-neuron minnorm, and whole C++ trials against the general path."""

import concurrent.futures as cf
import os
import types

import numpy as np
import pandas as pd
import pytest
import scipy.stats

import relucore
from relucore import _core
from relucore.sweeps.config import config_key, expand_grid
from relucore.sweeps.gram_trial import _settings as _gram_settings
from relucore.sweeps.gram_trial import fast_trials_ok, gram_plan, trial_keys
from relucore.theory.sampling import wishart_bartlett


# ----------------------------------------------------------------------------- seeds
@pytest.mark.parametrize("entropy", [0, 7, 2**40 + 3, 12345678901234567890123456789012345678901234567890])
def test_seed_keys_are_numpys_seed_sequence(entropy):
    key = (3000000000, 17)
    trials = [0, 1, 99, 2**32 + 5]
    keys = trial_keys(entropy, key, trials)
    assert keys.dtype == np.uint64 and keys.shape == (4,)
    for k, t in zip(keys, trials):
        ss = np.random.SeedSequence(entropy, spawn_key=(*key, t))
        assert k == ss.generate_state(1, np.uint64)[0] == ss.generate_state(2, np.uint64)[0]


# ----------------------------------------------------------------------------- sampler
class _Streams:
    """The documented stream layout of relucore/random/gram_sample.hpp, read variate by variate
    through the bound generator (_core.counter_normals / counter_uniforms) and assembled in numpy."""

    def __init__(self, key):
        self.key = int(key)

    def normals(self, stream, start, k):
        out = np.empty(k)
        _core.counter_normals(self.key, stream, start, out)
        return out

    def uniforms(self, stream, start, k):
        out = np.empty(k)
        _core.counter_uniforms(self.key, stream, start, out)
        return out

    def gamma(self, a, stream):  # Marsaglia-Tsang: attempt t takes normal t and uniform 2^46 + t
        d = a - 1.0 / 3.0
        c = 1.0 / np.sqrt(9.0 * d)
        t = 0
        while True:
            x = self.normals(stream, t, 1)[0]
            v = 1.0 + c * x
            if v > 0:
                v = v**3
                u = self.uniforms(stream, 2**46 + t, 1)[0]
                if u < 1 - 0.0331 * x**4 or u == 0 or np.log(u) < 0.5 * x * x + d * (1 - v + np.log(v)):
                    return d * v
            t += 1

    def chi2(self, k, stream):
        if k <= 16:
            return float(np.sum(self.normals(stream, 0, k) ** 2))
        return 2.0 * self.gamma(0.5 * k, stream)


def _reference(n, groups, labels, key):
    w = _Streams(key)
    K = np.zeros((n, n))
    for g, (v, c) in enumerate(groups):
        L = np.zeros((n, n))
        L[np.tril_indices(n, -1)] = w.normals((g + 1) << 32, 0, n * (n - 1) // 2)  # row-major
        for i in range(n):
            L[i, i] = np.sqrt(w.chi2(c - i, ((g + 1) << 32) + 1 + i))
        K += v * (L @ L.T)
    if labels == "normal":
        y = w.normals(1, 0, n)
    else:
        u = w.uniforms(1, 0, 2 * n)
        y = 0.1 + 0.9 * u[:n]
        if labels == "uniform":
            y = y * np.where(u[n:] < 0.5, -1.0, 1.0)
    return K, y


@pytest.mark.parametrize(
    "n, d, spectrum, labels, groups",
    [
        (4, 6, "isotropic", "uniform", [(1.0, 6)]),  # chi-squares as sums of normals
        (5, 1000, "isotropic", "positive", [(1.0, 1000)]),  # Marsaglia-Tsang
        (3, 40, ("spiked", 4, 10.0, 0.5), "normal", [(10.0, 4), (0.5, 36)]),
    ],
)
def test_sampler_follows_its_documented_stream_layout(n, d, spectrum, labels, groups):
    seeds = [np.random.SeedSequence(11, spawn_key=(i,)) for i in range(4)]
    K, y = relucore.sample_gram_batch(n, d, seeds, spectrum=spectrum, labels=labels)
    for b, ss in enumerate(seeds):
        Kr, yr = _reference(n, groups, labels, ss.generate_state(1, np.uint64)[0])
        np.testing.assert_allclose(K[b], Kr, rtol=1e-12, atol=1e-12 * np.abs(Kr).max())  # measured ~1e-15
        np.testing.assert_array_equal(y[b], yr) if labels == "normal" else np.testing.assert_allclose(y[b], yr, 1e-15)
        np.testing.assert_array_equal(K[b], K[b].T)


def test_sampler_is_bitwise_independent_of_threads_batches_and_order():
    """Data set b depends on its key only: any thread count, batch cut or order gives the same bits."""
    seeds = list(range(40))
    K, y = relucore.sample_gram_batch(12, 10**6, seeds, spectrum=("spiked", 20, 4.0, 1.0))
    for n_threads in (1, 2, 3):
        K2, y2 = relucore.sample_gram_batch(12, 10**6, seeds, spectrum=("spiked", 20, 4.0, 1.0), n_threads=n_threads)
        np.testing.assert_array_equal(K2, K)
        np.testing.assert_array_equal(y2, y)
    perm = np.random.default_rng(0).permutation(40)
    for part in np.array_split(perm, 3):
        K3, y3 = relucore.sample_gram_batch(12, 10**6, [seeds[i] for i in part], spectrum=("spiked", 20, 4.0, 1.0))
        np.testing.assert_array_equal(K3, K[part])
        np.testing.assert_array_equal(y3, y[part])


@pytest.mark.parametrize("n, d", [(6, 9), (5, 14), (4, 10**8)])
def test_bartlett_factors_have_their_laws(n, d):
    """The Cholesky factor of K = L L^T (unique, so it recovers the Bartlett factor to rounding):
    L_ii^2 ~ chi^2(d - i) (sums of squares for d - i <= 16, Marsaglia-Tsang above), L_ij ~ N(0, 1)
    below the diagonal, all by KS tests against scipy's distributions at the 1e-3 level (3000 draws)."""
    N = 3000
    K, _ = relucore.sample_gram_batch(n, d, list(range(N)))
    L = np.linalg.cholesky(K)
    for i in range(n):
        assert scipy.stats.kstest(L[:, i, i] ** 2, scipy.stats.chi2(d - i).cdf).pvalue > 1e-3, i
    off = L[:, np.tril_indices(n, -1)[0], np.tril_indices(n, -1)[1]]
    for j in range(off.shape[1]):
        assert scipy.stats.kstest(off[:, j], scipy.stats.norm.cdf).pvalue > 1e-3, j
    # independence of the entries: the off-diagonals pairwise uncorrelated (|r| < 4.5 / sqrt(N))
    r = np.corrcoef(np.column_stack([off, L[:, range(n), range(n)] ** 2]).T)
    assert np.abs(r - np.eye(r.shape[0])).max() < 4.5 / np.sqrt(N)


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
    """KS tests (2000 draws each) against relucore.sample_gram (other keys of the same streams), a numpy
    Bartlett draw (numpy's normals and chi-squares: another engine) and, for small d, X X^T of relucore.sample."""
    N = 2000
    K, y = relucore.sample_gram_batch(n, d, list(range(N)), spectrum=spectrum)
    rng = np.random.default_rng(5)
    peers = [np.stack([relucore.sample_gram(n, d, spectrum=spectrum, rng=rng).K for _ in range(N)])]
    groups = [(1.0, d)] if spectrum == "isotropic" else [(5.0, 6), (1.0, d - 6)]
    peers.append(np.stack([sum(v * wishart_bartlett(n, c, rng) for v, c in groups) for _ in range(N)]))  # numpy
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
        assert sol.success and info[b, 0] == relucore.Status.optimal
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
COMPARE = ["loss", "grad_norm", "eta", "gap", "gap_normalized", "norm1"] + [
    f"gram_{k}" for k in ("mu_max", "mu_min", "deviation", "offdiag_ratio", "d2", "d_inf")
]
EXACT = ["nit", "pattern_stable_step", "n_pos", "n_neg", "status", "seed"]


def _nothing(data, result):
    return {}


@pytest.fixture(scope="module")
def fast():
    assert all(fast_trials_ok(c, None) for c in expand_grid(GRID))
    return relucore.sweep(GRID, trials=12, rng=4, progress=False)


def test_fast_path_equals_general_path(fast):
    """A measure forces the general path (prepare, train, minnorm in Python) on the same data."""
    assert not fast_trials_ok(expand_grid(GRID)[0], _nothing)
    slow = relucore.sweep(GRID, trials=12, rng=4, measure=_nothing, progress=False)
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


@pytest.mark.parametrize(
    "cfg",
    [
        {"n": 8, "d": 300, "use_gram": True, "eta": 0.004, "tol": 1e-7},
        {"n": 6, "d": 10**9, "use_gram": True, "labels": "positive", "eta": 2e-10, "tol": 0.0, "steps": 400},
        {"n": 7, "d": 9, "use_gram": True, "signs": [-1.5], "labels": "normal", "eta": 0.01, "tol": 1e-9, "eps": 0.05},
    ],
)
def test_fast_path_row_is_train_bitwise(cfg):
    """With eta and tol given, a fast-path row is relucore.train's run on the same K, y and
    positive init, bit for bit: the same start (prepare's rules, Cholesky) and the same engine.
    (Default eta and tol differ in the last bits only through mu_1: Laguerre vs LAPACK.)"""
    from numpy.random import SeedSequence  # noqa: F401  (used by eval)

    c = expand_grid([cfg])[0]
    assert fast_trials_ok(c, None)
    rows = relucore.sweep(cfg, trials=6, rng=3, progress=False)
    labels = tuple(c["labels"]) if isinstance(c["labels"], list) else (c["labels"] or "uniform")
    for _, row in rows.iterrows():
        K, y = relucore.sample_gram_batch(c["n"], c["d"], [eval(row.seed)], labels=labels)
        r = relucore.train(
            None, y[0], gram=K[0], signs=tuple(c["signs"]), eps=c["eps"], eta=c["eta"], tol=c["tol"], steps=c["steps"]
        )
        assert row.eta == r.eta
        assert (row.loss, row.grad_norm, row.nit, row.pattern_stable_step) == (
            r.loss,
            r.grad_norm,
            r.nit,
            r.pattern_stable_step,
        )
        assert row.status == r.status.name


def test_fast_path_refuses_a_step_as_train_does():
    """A given eta below machine epsilon times the default step: train refuses it, and so do
    both sweep paths, with train's text."""
    cfg = {"n": 10, "d": 10, "use_gram": True, "labels": "positive", "eta": 1e-300, "steps": 5}
    assert fast_trials_ok(expand_grid([cfg])[0], None)
    fast = relucore.sweep(cfg, trials=3, rng=9, progress=False)
    slow = relucore.sweep(cfg, trials=3, rng=9, progress=False, measure=_nothing)
    assert (fast.status == "error").all() and (slow.status == "error").all()
    for a, b in zip(fast.error, slow.error):
        assert a.startswith("ValueError: eta = 1e-300 is too small: it is below machine epsilon times the default step")
        assert b.startswith(a), (a, b)


@pytest.mark.parametrize("kw", [dict(chunk_size=1), dict(chunk_size=5, n_threads=2), dict(n_threads=1)])
def test_fast_path_bitwise_identical_across_batches_and_threads(fast, kw):
    pd.testing.assert_frame_equal(fast, relucore.sweep(GRID, trials=12, rng=4, progress=False, **kw), check_exact=True)


def test_fast_path_identical_on_an_executor(fast):
    with cf.ThreadPoolExecutor(2) as ex:
        out = relucore.sweep(GRID, trials=12, rng=4, progress=False, executor=ex, chunk_size=7)
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
    full = relucore.sweep(GRID, trials=12, rng=4, progress=False, chunk_size=5, checkpoint=ckpt)
    pd.testing.assert_frame_equal(fast, full, check_exact=True)
    with sqlite3.connect(ckpt) as conn:
        assert conn.execute("DELETE FROM trials WHERE trial >= 5").rowcount > 0
    conn.close()
    resumed = relucore.sweep(GRID, trials=12, rng=4, progress=False, chunk_size=5, checkpoint=ckpt)
    pd.testing.assert_frame_equal(fast, resumed, check_exact=True)


def test_fast_path_error_codes_become_error_rows(monkeypatch):
    """A trial the C++ batch refuses (a nonzero ``error`` output) is an error row with NaN/-1
    measurements and the batch's error text; the other trials of the batch keep their values."""
    from relucore.sweeps import gram_trial as _sweep_fast

    real = _core.sweep_gram_batch

    def refuse_second(*args, **kwargs):
        out = real(*args, **kwargs)
        fields = {k: getattr(out, k) for k in dir(out) if not k.startswith("_")}
        fields["error"] = out.error.copy()
        fields["error"][1] = int(_core.GramTrialError.ill_conditioned)
        fields["error_text"] = list(out.error_text)
        fields["error_text"][1] = "ValueError: the text of trial 1"
        return types.SimpleNamespace(**fields)

    monkeypatch.setattr(_sweep_fast._core, "sweep_gram_batch", refuse_second)
    cfg = {"n": 5, "d": 50, "use_gram": True}
    out = relucore.sweep(cfg, trials=4, rng=1, progress=False, chunk_size=4)
    monkeypatch.undo()
    ref = relucore.sweep(cfg, trials=4, rng=1, progress=False, chunk_size=4)
    assert list(out.status) == ["converged", "error", "converged", "converged"]
    assert list(out.error) == ["", "ValueError: the text of trial 1", "", ""]
    assert out.nit[1] == -1 and np.isnan(out.loss[1]) and np.isnan(out.gap[1])
    keep = [0, 2, 3]
    pd.testing.assert_frame_equal(out.iloc[keep], ref.iloc[keep], check_exact=True)


REFUSED = [
    # (configuration, GramTrialError of every trial, the start of the text)
    ({"eps": 1e300}, "not_finite", "ValueError: the starting point is too large: its loss overflows float64"),
    ({"labels": "positive", "eta": 1e-300, "steps": 5}, "step_invalid", "ValueError: eta = 1e-300 is too small"),
]
# Labels out of float64's range: the general path trains the exactly rescaled problem and fails
# later, with another text; the fast path refuses them at the start.
REFUSED_FAST_ONLY = [
    ({"labels": ("uniform", 1e200, 1e200)}, "labels_invalid", "ValueError: y is too large: the loss 1/2 ||y||^2"),
    ({"labels": ("uniform", 1e-200, 1e-200)}, "labels_invalid", "ValueError: y is too small: the loss 1/2 ||y||^2"),
]


@pytest.mark.parametrize("extra, code, head", REFUSED + REFUSED_FAST_ONLY)
def test_refused_trials_have_the_general_paths_error_text(extra, code, head):
    """A trial that the start refuses has the same error column whichever path runs it: the
    fast path's text comes from C++ (GramTrialResult::message), in the words the general path
    raises (relucore/gd/refusal.hpp)."""
    cfg = {"n": 6, "d": 8, "use_gram": True, **extra}
    c = expand_grid([cfg])[0]
    assert fast_trials_ok(c, None)
    fast = relucore.sweep([cfg], trials=3, rng=2, progress=False)
    assert (fast.status == "error").all()
    assert all(e.startswith(head) for e in fast.error), list(fast.error)
    if (extra, code, head) in REFUSED:
        slow = relucore.sweep([cfg], trials=3, rng=2, progress=False, measure=_nothing)
        assert (slow.status == "error").all()
        assert list(fast.error) == list(slow.error)
    # the code and the text as the binding returns them
    plan = gram_plan(c)
    keys = trial_keys(0, (1,), range(2))
    out = _core.sweep_gram_batch(
        keys, n=6, **plan.sampler_args(), settings=_gram_settings(c, plan.spectrum.norm1), keep_data=False
    )
    assert (out.error == int(getattr(_core.GramTrialError, code))).all()
    assert all(t.startswith(head) for t in out.error_text)


def test_measure_errors_say_where_they_were_raised():
    """An exception from outside relucore (here a measure callback) keeps its location in the
    error column; relucore's own refusals do not carry one (see the test above)."""

    def broken(data, result):
        raise KeyError("no such column")

    out = relucore.sweep({"n": 5, "d": 50, "use_gram": True}, trials=2, rng=1, progress=False, measure=broken)
    line = broken.__code__.co_firstlineno + 1
    assert list(out.error) == [f"KeyError: 'no such column' (at {os.path.basename(__file__)}:{line})"] * 2


def test_gram_trial_errors_are_the_cpp_table():
    """_core.GramTrialError is the C++ enum with the exception and meaning of each code."""
    E = _core.GramTrialError
    assert [e.name for e in E] == [
        "none",
        "ill_conditioned",
        "minnorm_failed",
        "minnorm_singular",
        "not_finite",
        "labels_invalid",
        "step_invalid",
    ]
    assert [int(e) for e in E] == list(range(7))
    assert E.none.exception == "" and E.minnorm_failed.exception == "RuntimeError"
    assert all(E(i).exception == "ValueError" for i in (1, 3, 4, 5, 6))
    assert all(e.meaning for e in E)
    # minnorm_singular's text is relucore.minnorm's for the same K (the general path raises it)
    from relucore.theory.minnorm.linalg import check_pd

    with pytest.raises(ValueError) as exc:
        check_pd(np.diag([1.0, 1e-14]))
    assert str(exc.value) == E.minnorm_singular.meaning


# ----------------------------------------------------------------------------- the binding's contract
def test_sweep_gram_batch_returns_the_named_outputs_of_the_schema():
    """_core.sweep_gram_batch returns a GramTrialOutput whose fields are the arrays that
    relucore.sweeps.columns declares (CORE_OUTPUTS, plus K and y), and every measured column
    the fast path takes from C++ is among them; the fields not asked for are None."""
    from relucore.sweeps.columns import CORE, CORE_OUTPUTS, MEASURED
    from relucore.theory.sampling import bartlett_plan

    n, B = 5, 3
    plan = bartlett_plan(n, 50, "isotropic", "uniform")
    keys = trial_keys(0, (1, 2), range(B))
    settings = _core.GramTrialSettings(norm1=plan.spectrum.norm1)
    out = _core.sweep_gram_batch(keys, n=n, **plan.sampler_args(), settings=settings)
    assert isinstance(out, _core.GramTrialOutput)
    assert out.K.shape == (B, n, n) and out.y.shape == (B, n)
    for name, kind in CORE_OUTPUTS.items():
        a = getattr(out, name)
        assert a.shape == (B,) and a.dtype == (np.float64 if kind == "f" else np.int64), name
    assert {c.name for c in MEASURED if c.fast == CORE} <= set(CORE_OUTPUTS)
    assert (out.error == 0).all() and (out.nit > 0).all()
    assert out.error_text == [""] * B
    gram_fields = ["gram_mu_max", "gram_mu_min", "gram_deviation", "gram_offdiag_ratio", "gram_max_offdiag"]
    gram_fields += ["gram_min_diag", "label_ratio"]
    assert all(getattr(out, f) is None for f in gram_fields)
    with pytest.raises(AttributeError):
        out.loss = np.zeros(B)  # read-only fields
    # keep_data=False, gram_stats=True: the same trials, K and y left out, the statistics in
    lean = _core.sweep_gram_batch(keys, n=n, **plan.sampler_args(), settings=settings, keep_data=False, gram_stats=True)
    assert lean.K is None and lean.y is None
    for name in CORE_OUTPUTS:
        np.testing.assert_array_equal(getattr(lean, name), getattr(out, name), err_msg=name)
    # the statistics are those of the returned K and y (gram_stats_batch's, with the trial's eigenvalues)
    ref = np.empty((B, 6))
    _core.gram_stats_batch(out.K, np.full(B, plan.spectrum.norm1), ref, 1)
    got = np.stack([getattr(lean, f) for f in gram_fields[:6]], axis=1)
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=0)
    y = np.abs(out.y)
    np.testing.assert_array_equal(lean.label_ratio, y.max(axis=1) / y.min(axis=1))


def test_gram_trial_settings_are_keyword_fields():
    st = _core.GramTrialSettings(sign=-1.0, eta=0.25, max_steps=7)
    assert (st.sign, st.eta, st.max_steps, st.eps, st.tol, st.minnorm) == (-1.0, 0.25, 7, 0.0, -1.0, True)
    with pytest.raises(TypeError):
        _core.GramTrialSettings(-1.0)
