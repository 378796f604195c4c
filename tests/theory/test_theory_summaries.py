"""The theory toolkit's results print as short summaries (arrays as placeholders, batches summarised)."""

import numpy as np
import pytest
from _summary_helpers import assert_summary

import relucore as rc


@pytest.fixture(scope="module")
def run():
    ds = rc.sample(10, 200, rng=0)
    return ds, rc.train(ds.X, ds.y, signs=(1, -1), record=1)


def test_check_limit_regimes_metrics(run):
    ds, res = run
    assert_summary(
        rc.check_limit(res, ds.X, ds.y),
        contains=["m=2, n=10, d=200", "distance: ", "W_closed: array(shape=(2, 200), dtype=float64)"],
    )
    reg = assert_summary(rc.regimes(res, ds.X, ds.y), contains=["final regimes: ", "lemma5_violations: 0"])
    assert "state: array(shape=" in reg
    assert_summary(rc.training_metrics(res, ds.X, ds.y), contains=["records, n=10", "stable_rank: array(["])


def test_batched_metrics_and_gram_stats():
    rng = np.random.default_rng(0)
    Xb = rng.standard_normal((64, 8, 40))
    yb = rng.choice([-1.0, 1.0], (64, 8))
    res = rc.train(Xb, yb, signs=(1, -1), record=5, n_threads=1)
    assert_summary(rc.training_metrics(res, Xb, yb), contains=["64 problems, up to"])
    text = assert_summary(rc.gram_stats(Xb, y=yb), contains=["64 matrices, n=8", "(median "])
    assert_summary(rc.gram_stats(rc.sample(8, 40, rng=1)), contains=["n=8", "deviation: "])
    assert "64" not in text.split("\n", 1)[1]  # no per-matrix listing


def test_samples():
    ds = rc.sample(10, 5000, rng=0)
    assert_summary(ds, contains=["n=10, d=5000", "X: array(shape=(10, 5000), dtype=float64)", "spectrum: array(["])
    gd = rc.sample_gram(10, 10**6, spectrum=("power", 0.5), rng=0)
    assert_summary(gd, contains=["d=1000000", "spectrum: Spectrum(d=1000000, distinct eigenvalues: 1000000)"])
    assert_summary(gd.spectrum, contains=["values: array(["])


def test_minnorm_and_certificates(run):
    ds, _ = run
    sol = rc.minnorm(ds.X, ds.y, signs=(1, -1))
    assert_summary(
        sol,
        contains=[
            "m=2, n=10, d=200; exact",
            "certificate: KKTCertificate(max residual",
            "search: SearchCertificate(complete",
            "W: array(shape=(2, 200), dtype=float64)",
        ],
    )
    assert_summary(sol.certificate, contains=["stationarity: "])
    assert str(sol.certificate).startswith("KKT residuals: stationarity")  # its one-line str is kept
    assert_summary(sol.search, contains=["pruned, closed_feasible, leaves: "])
    assert sol.to_dict()["certificate"]["stationarity"] == sol.certificate.stationarity


def test_docs_show_the_summary_as_printed():
    from pathlib import Path

    doc = Path(__file__).resolve().parents[2] / "docs" / "theory.md"
    if not doc.exists():
        pytest.skip("not running from a source checkout")
    shown = doc.read_text().split(">>> chk\n", 1)[1].split(">>>", 1)[0].rstrip().splitlines()
    ds = rc.sample(10, 2000, spectrum="isotropic", labels=("uniform", 0.1, 1.0), rng=0)
    res = rc.train(ds.X, ds.y, record=1)
    actual = repr(rc.check_limit(res, ds.X, ds.y)).splitlines()
    assert [line.split(":")[0] for line in shown] == [line.split(":")[0] for line in actual]
