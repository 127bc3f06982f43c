"""OnlineIdentification (ROS-free): samples pushed in arbitrary pieces give the streaming
engine's MRLS estimate on the whole recording; a gap restarts the filters and is reported;
time going back is refused."""
import numpy as np
import pytest

from robot_identification.errors import DataError
from robot_identification.online import OnlineIdentification


@pytest.fixture(scope="module")
def rigid_run():
    from robot_identification.model import load_robot
    from robot_identification.simulation import simulate
    model = load_robot("szabo_3dof")
    return model, simulate(model, duration=3.0)


def push_pieces(online, ds, sizes):
    s = 0
    for m in sizes:
        online.push(ds.t[s:s + m], ds.q[s:s + m], ds.tau[s:s + m])
        s += m
    online.push(ds.t[s:], ds.q[s:], ds.tau[s:])


def test_pieces_equal_the_streamed_recording(rigid_run):
    from robot_identification.streaming import identify_streaming, iter_dataset_chunks
    model, ds = rigid_run
    ref = identify_streaming(model, iter_dataset_chunks(ds, 1000), estimator="mrls")
    online = OnlineIdentification(model, ds.sample_rate)
    rng = np.random.default_rng(1)
    push_pieces(online, ds, rng.integers(1, 300, size=10))
    est = online.estimate()
    assert online.n_input == ds.n_samples and online.gaps == 0
    assert est.settings["flags"] == ref.settings["flags"]
    np.testing.assert_allclose(est.estimate.values, ref.estimate.values, rtol=1e-9,
                               atol=1e-9 * np.abs(ref.estimate.values).max())
    np.testing.assert_allclose(est.estimate.std, ref.estimate.std, rtol=1e-6)
    assert not [d for d in est.diagnostics if d.code == "samples_lost"]


def test_a_gap_restarts_the_filters_and_is_reported(rigid_run):
    model, ds = rigid_run
    keep = np.ones(ds.n_samples, dtype=bool)
    keep[1500:1505] = False                       # five lost messages
    online = OnlineIdentification(model, ds.sample_rate)
    online.push(ds.t[keep], ds.q[keep], ds.tau[keep])
    est = online.estimate()
    assert online.gaps == 1 and "samples_lost" in [d.code for d in est.diagnostics]
    # the window across the gap is dropped: fewer equations, not wrong ones
    full = OnlineIdentification(model, ds.sample_rate)
    full.push(ds.t, ds.q, ds.tau)
    assert online.n_samples < full.n_samples - 5
    ref = full.estimate().estimate
    assert np.all(np.abs(est.estimate.values - ref.values) < 3 * ref.std + 1e-9)


def test_time_going_back_is_refused(rigid_run):
    model, ds = rigid_run
    online = OnlineIdentification(model, ds.sample_rate)
    online.push(ds.t[:100], ds.q[:100], ds.tau[:100])
    with pytest.raises(DataError, match="time order"):
        online.push(ds.t[50:60], ds.q[50:60], ds.tau[50:60])
    with pytest.raises(DataError, match="effort_lag"):
        OnlineIdentification(model, ds.sample_rate, effort_lag=1.0)


def test_effort_lag_across_pieces(rigid_run):
    """lag 0.5: tau_k = (tau_k + tau_k+1) / 2, the held-back sample carried across pieces."""
    model, ds = rigid_run
    lagged = OnlineIdentification(model, ds.sample_rate, effort_lag=0.5)
    push_pieces(lagged, ds, [7, 1, 250, 33])
    shifted = OnlineIdentification(model, ds.sample_rate)
    shifted.push(ds.t[:-1], ds.q[:-1], 0.5 * (ds.tau[:-1] + ds.tau[1:]))
    assert lagged.n_input == shifted.n_input == ds.n_samples - 1
    np.testing.assert_allclose(lagged.estimate().estimate.values,
                               shifted.estimate().estimate.values, rtol=1e-10, atol=1e-12)
