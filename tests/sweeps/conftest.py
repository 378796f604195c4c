import pytest


@pytest.fixture(scope="module")
def dask_client():
    """A Dask client of a local cluster of two single-threaded worker processes (skipped without
    ``distributed``), shared by a test module's tests."""
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", worker_dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client
