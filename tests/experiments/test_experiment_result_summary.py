"""ExperimentResult prints as a short summary of its claims, table and outputs."""

import numpy as np
from _summary_helpers import assert_summary

from relucore.experiments import Claim, ExperimentResult


def test_summary_counts_claims_and_names_the_failed_ones():
    rows = [dict(n=n, gap=0.1 * n) for n in range(500)]
    claims = [Claim("slope_n", "0.5", "0.49", True), Claim("slope_l1", "-0.5", "-0.2", False)]
    res = ExperimentResult("fig2", {"n": [10, 20], "quick": True}, rows, claims, None, {"W": np.zeros((500, 3))})
    assert_summary(
        res,
        contains=[
            "'fig2', some claims fail",
            "claims: 1 of 2 hold; failed: slope_l1",
            "table: 500 rows x 2 columns: n, gap",
            "data: dict with keys W",
        ],
    )
    assert res.to_dict()["table"] is rows
