"""TrainResult and History print as short summaries, for one problem or a batch of any size."""

import numpy as np
import pytest
from _summary_helpers import assert_summary

import relucore as rc


@pytest.fixture(scope="module")
def quickstart():
    """The README quickstart: one recorded run and a batch of 64."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((10, 2000))
    y = rng.uniform(0.1, 1, 10) * rng.choice([-1, 1], 10)
    Xb = rng.standard_normal((64, 10, 200))
    yb = rng.uniform(0.1, 1, (64, 10))
    return rc.train(X, y, signs=(1, -1), record=1), rc.train(Xb, yb, signs=(1,), record=3, n_threads=1)


def test_single_run(quickstart):
    res, _ = quickstart
    text = assert_summary(
        res,
        contains=[
            "m=2, n=10, d=2000",
            "message: converged",
            "status: converged",
            f"nit: {res.nit}",
            "W, W0: array(shape=(2, 2000), dtype=float64)",
            f"history: History({res.nit + 1} records, m=2, n=10)",
        ],
    )
    assert "signs, outer: array(shape=(2,), dtype=float64)" in text
    assert_summary(res.history, contains=[f"{res.nit + 1} records", "mask: array(shape="])
    np.testing.assert_array_equal(res.to_dict()["W"], res.W)


def test_batch_is_summarised_per_batch_not_per_problem(quickstart):
    _, batch = quickstart
    text = assert_summary(
        batch,
        contains=[
            "64 problems, m=1, n=10, d=200",
            # d = 200 is too small for n = 10 (Theorem 1): the neuron dies on
            # some examples in 9 of the 64 problems, which stall.
            "success: 55 of 64",
            "status: 55 × converged, 9 × stalled",
            "W, W0: array(shape=(64, 1, 200)",
        ],
    )
    assert "nit: " in text and ".." in text.split("nit: ")[1].splitlines()[0]
    assert_summary(batch.history, contains=["64 problems, up to", "n_records:"])


def test_gram_only_and_leaky():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((6, 300))
    y = rng.uniform(0.1, 1, 6) * rng.choice([-1, 1], 6)
    res = rc.train(gram=X @ X.T, y=y, signs=(1, -1), activation="leaky_relu", leaky_slope=0.1)
    text = assert_summary(res, contains=["(Gram-only)", "leaky_relu (slope 0.1)"])
    assert "W, W0" not in text and res.W is None
