"""The registered mean-field experiments run in their quick settings and their claims hold."""

import numpy as np
import pytest

from relucore import experiments
from relucore.experiments.meanfield import collapse_index

NAMES = ["meanfield-1d", "meanfield-grid", "meanfield-weight-decay", "meanfield-noise"]


def test_registered():
    assert set(NAMES) <= set(experiments.names())


@pytest.mark.parametrize("name", NAMES)
def test_quick_run(name, tmp_path):
    res = experiments.run(name, quick=True)
    failed = [(c.name, c.expected, c.measured) for c in res.claims if not c.passed]
    assert not failed
    assert res.table and res.figure is not None
    paths = res.save(tmp_path)
    assert any(p.endswith(".png") for p in paths)
    import matplotlib.pyplot as plt

    plt.close(res.figure)


def test_collapse_index_limits():
    rng = np.random.default_rng(0)
    u = np.array([0.6, 0.0, 0.8])
    one = np.column_stack([np.ones(50), rng.uniform(0.5, 1.0, 50)[:, None] * u])
    assert collapse_index(one, 2) == 1.0
    two = np.vstack([one, np.column_stack([np.ones(50), rng.uniform(0.5, 1.0, 50)[:, None] * -u])])
    m = np.linalg.norm(two[:, 1:], axis=1) ** 2
    share = m[:50].sum() / m.sum()
    np.testing.assert_allclose(collapse_index(two, 2), share**2 + (1 - share) ** 2)
    diffuse = np.column_stack([np.ones(4000), rng.standard_normal((4000, 3))])
    assert collapse_index(diffuse, 2) < 0.01
