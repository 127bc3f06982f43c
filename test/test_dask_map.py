"""Map-reduce of normal equations on Dask: same sums bit for bit with 0 or 2 workers."""
import numpy as np
import pytest

from robot_identification._dask import check_workers, dask_client, map_sum
from robot_identification.errors import ConfigError
from robot_identification.estimation import NormalEquations


def _equations(seed, p):
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(500, 2, p))
    neq = NormalEquations(p, 2)
    neq.add(W, rng.normal(size=(500, 2)))
    return neq


def test_map_sum_is_the_same_in_process_and_on_two_workers():
    pytest.importorskip("distributed")
    local = map_sum(None, _equations, range(5), 4)
    with dask_client(2, processes=False) as client:
        remote = map_sum(client, _equations, range(5), 4)
    np.testing.assert_array_equal(local.G, remote.G)
    np.testing.assert_array_equal(local.b, remote.b)
    assert local.count.tolist() == [2500, 2500]
    # independent reference: the stacked products
    ref = sum(np.einsum("nji,njk->ik", W, W) for W in
              (np.random.default_rng(s).normal(size=(500, 2, 4)) for s in range(5)))
    np.testing.assert_allclose(local.gram, ref, rtol=1e-12)


@pytest.mark.parametrize("workers, scheduler", [(0, None), (1.5, None), (2, "localhost:8786")])
def test_bad_workers_or_scheduler(workers, scheduler):
    with pytest.raises(ConfigError):
        check_workers(workers, scheduler)


def test_unreachable_scheduler_is_a_config_error():
    pytest.importorskip("distributed")
    with pytest.raises(ConfigError, match="cannot reach Dask scheduler"):
        with dask_client(scheduler="tcp://127.0.0.1:9", timeout=1.0):
            pass
