"""MeanFieldResult and MeanFieldAnalysis print as short summaries."""

import numpy as np
from _summary_helpers import assert_summary

from relucore import meanfield


def test_result_and_analysis():
    X = np.array([[0.0], [1.0], [2.0]])
    res = meanfield.train(
        X,
        np.array([0.0, 1.0, 0.0]),
        m=300,
        steps=2000,
        record=100,
        rng=0,
        track=3,
        snapshots=(0, 1000),
        progress=False,
    )
    assert_summary(
        res,
        contains=[
            "m=300, d=1, n=3, with bias",
            "message: ",
            "params: m=300",
            "theta: array(shape=(300, 3), dtype=float64)",
            "trajectories: array(shape=(21, 3, 3), dtype=float64)",
        ],
    )
    an = meanfield.analyze(res, X)
    assert_summary(
        an,
        contains=[
            f"{an.n_directions} directions",
            "within_bound: ",
            f"patterns: array(shape=({an.n_directions}, 3), dtype=int8)",
        ],
    )
