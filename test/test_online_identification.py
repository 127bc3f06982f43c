"""OnlineIdentification (ROS-free): samples pushed in arbitrary pieces give the streaming
engine's MRLS estimate on the whole recording; a gap restarts the filters and is reported;
time going back is refused."""
import numpy as np
import pytest

from robot_identification.errors import DataError
from robot_identification.identification import OnlineIdentification

pytestmark = pytest.mark.slow


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
    from robot_identification.streaming import identify_streaming
    from robot_identification.identification import iter_dataset_chunks
    model, ds = rigid_run
    ref = identify_streaming(model, iter_dataset_chunks(ds, 1000), estimator="mrls")
    online = OnlineIdentification(model, ds.sample_rate)
    rng = np.random.default_rng(1)
    push_pieces(online, ds, rng.integers(1, 300, size=10))
    online.finish()                     # the rows held back for the reversal window
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
                               shifted.estimate().estimate.values, rtol=1e-8,
                               atol=1e-12)       # other MRLS blocks: rounding


@pytest.fixture(scope="module")
def arm7_run():
    """A config without an identification section (cutoff_hz and friction_deadband 'auto',
    Coulomb friction, velocity threshold 0); positions and torques only, 60 dB noise."""
    from pathlib import Path

    from robot_identification.data import Dataset
    from robot_identification.model import RobotModel, load_robot_config
    from robot_identification.simulation import add_measurement_noise, simulate
    model = RobotModel(load_robot_config(Path(__file__).resolve().parent / "arm7.yaml"))
    assert model.config.identification.friction_deadband == "auto"
    run = add_measurement_noise(simulate(model, duration=3.0, seed=0), 60.0, seed=1)
    return model, Dataset(t=run.t, q=run.q, tau=run.tau, joint_names=run.joint_names)


def test_automatic_settings_are_the_batch_engines(arm7_run):
    """'auto' resolved on the held-back samples as the batch engine resolves it on the
    recording: same deadband, same estimate; nothing is identified before."""
    from robot_identification.streaming import identify_streaming
    from robot_identification.identification import iter_dataset_chunks
    model, ds = arm7_run
    ref = identify_streaming(model, iter_dataset_chunks(ds, 1000), estimator="mrls")
    online = OnlineIdentification(model, ds.sample_rate, settings_window=10.0)
    push_pieces(online, ds, [500, 1, 999])
    assert online.settings is None and online.held == ds.n_samples and online.n_input == 0
    with pytest.raises(DataError, match="collecting the first 10000 samples"):
        online.estimate()
    online.resolve()                   # the recording ended before the window was full
    online.finish()
    est = online.estimate()
    assert est.settings["friction_deadband"] == ref.settings["friction_deadband"]
    assert all(d > 0 for d in est.settings["friction_deadband"])     # not plain sign(v)
    assert est.settings["auto_samples"] == online.n_input == ds.n_samples
    np.testing.assert_allclose(est.estimate.values, ref.estimate.values, rtol=1e-9,
                               atol=1e-9 * np.abs(ref.estimate.values).max())
    auto = [d for d in est.diagnostics if d.code == "automatic_settings"]
    assert len(auto) == 1 and "friction_deadband" in auto[0].message
    assert "no_velocity_threshold" not in [d.code for d in est.diagnostics]


def test_the_first_window_resolves_and_is_not_lost(arm7_run):
    """With a 1 s window the settings come from the first second (the pushes that fill it);
    the held samples then enter the equations exactly as if those settings had been given."""
    from dataclasses import replace

    from robot_identification.data import Dataset
    from robot_identification.identification import recording_summaries, resolve_settings
    model, ds = arm7_run
    online = OnlineIdentification(model, ds.sample_rate, settings_window=1.0)
    push_pieces(online, ds, [400, 400, 400])
    k = online.auto_samples
    assert k == 1200 and online.n_input == ds.n_samples
    head = Dataset(t=ds.t[:k], q=ds.q[:k], tau=ds.tau[:k], joint_names=ds.joint_names)
    cfg = model.config.identification
    resolved = resolve_settings(model, cfg, recording_summaries(model, [head]))
    assert online.settings.friction_deadband == resolved.friction_deadband
    assert online.settings.stop_velocity == resolved.stop_velocity
    given = OnlineIdentification(model, ds.sample_rate, settings=replace(
        cfg, friction_deadband=resolved.friction_deadband,
        stop_velocity=resolved.stop_velocity))
    assert given.settings is not None
    given.push(ds.t, ds.q, ds.tau)
    ref = given.estimate().estimate.values
    np.testing.assert_allclose(online.estimate().estimate.values, ref, rtol=1e-8,
                               atol=1e-9 * np.abs(ref).max())      # other blocks: rounding


def test_the_batch_engines_diagnostics_travel_with_the_live_estimate(arm7_run):
    """A 1e9 N*m spike in the first window is reported (torque_outliers), a bad estimate on
    simulated data is flagged against the truth (far_from_truth), as by the batch engine."""
    from robot_identification.identification import true_base_values
    from robot_identification.simulation import simulate
    model, ds = arm7_run
    tau = ds.tau.copy()
    tau[500, 2] = 1e9
    online = OnlineIdentification(model, ds.sample_rate, settings_window=1.0)
    online.push(ds.t, ds.q, tau)
    truth = true_base_values(model, online.base, simulate(model, duration=0.01).true_parameters)
    est = online.estimate(true_values=truth)
    codes = [d.code for d in est.diagnostics]
    spike = [d for d in est.diagnostics if d.code == "torque_outliers"]
    assert spike and "j3" in spike[0].message, codes
    assert est.normalised_mean_error() > 0.2 and "far_from_truth" in codes
