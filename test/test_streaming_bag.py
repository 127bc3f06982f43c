"""Chunked rosbag2 reader equals read_bag (rigid and elastic, with effort lag)."""
import numpy as np
import pytest

from robot_identification.data import Dataset
from robot_identification.errors import DataError
from robot_identification.identification import iter_bag_chunks, iter_chunks

_bag = pytest.importorskip("robot_identification.data._bag")


def _dataset(elastic, N=250, n=2):
    rng = np.random.default_rng(0)
    t = np.arange(N) * 0.002 + 5.0
    kw = {"theta": rng.normal(size=(N, n))} if elastic else {}
    return Dataset(t=t, q=rng.normal(size=(N, n)), tau=rng.normal(size=(N, n)),
                   joint_names=("joint1", "joint2"), true_parameters={"a": 1.0}, **kw)


@pytest.mark.parametrize("elastic", [False, True])
@pytest.mark.parametrize("lag", [0.0, 0.5])
def test_chunked_bag_equals_read_bag(tmp_path, elastic, lag):
    ds = _dataset(elastic)
    _bag.write_bag(ds, tmp_path / "bag")
    ref = _bag.read_bag(tmp_path / "bag", effort_lag=lag)
    parts = list(iter_bag_chunks(tmp_path / "bag", 64, effort_lag=lag))
    assert len(parts) >= 4
    for k in ("t", "q", "tau") + (("theta",) if elastic else ()):
        got = np.concatenate([getattr(p, k) for p in parts])
        np.testing.assert_allclose(got, getattr(ref, k), rtol=1e-9, atol=1e-9, err_msg=k)
    assert parts[0].true_parameters == {"a": 1.0}
    assert (parts[0].theta is not None) == elastic


def test_bag_dispatch_and_errors(tmp_path):
    ds = _dataset(False, N=50)
    _bag.write_bag(ds, tmp_path / "bag")
    assert sum(p.t.shape[0] for p in iter_chunks(tmp_path / "bag", 20)) == 50
    with pytest.raises(DataError, match="does not exist"):
        list(iter_bag_chunks(tmp_path / "missing"))
    with pytest.raises(DataError, match="effort_lag"):
        list(iter_bag_chunks(tmp_path / "bag", effort_lag=1.5))
