"""relucore.sweep on a spawn process pool and on a Dask LocalCluster: same table bit for bit."""

import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor

import pandas as pd
import pytest

import relucore

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _sweep_helpers as H  # noqa: E402


def _run(**kw):
    return relucore.sweep(H.GRID, trials=4, rng=21, measure=H.measure_norms, progress=False, **kw)


@pytest.fixture(scope="module")
def reference():
    return _run()


def test_spawn_process_pool(reference):
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as ex:
        out = _run(executor=ex, chunk_size=3)
    pd.testing.assert_frame_equal(reference, out, check_exact=True)


def test_dask_local_cluster(reference, dask_client, tmp_path):
    out = _run(executor=dask_client.get_executor(), chunk_size=2)
    pd.testing.assert_frame_equal(reference, out, check_exact=True)
    # Failures travel back from the workers as error rows, and checkpoints work there too.
    t = relucore.sweep(
        {"n": [12, 20], "d": 10},
        trials=2,
        rng=0,
        executor=dask_client.get_executor(),
        checkpoint=tmp_path / "c.db",
        progress=False,
    )
    assert (t.status == "error").all() and t.error.str.contains("rank-deficient").all()
    workers = dask_client.run(lambda: os.getpid())
    assert len(workers) == 2 and os.getpid() not in workers.values()
